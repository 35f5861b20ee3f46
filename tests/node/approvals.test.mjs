// SPEC §8 through the installed package: a tool's needsApproval pauses a run before anything of its batch
// happens; resuming is running again from the paused transcript with `approvals` (and `startSteps`); the
// paused view of validateTranscript, and repairTranscript.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { loadTinyPiSessions } from "./app-fixture.mjs";
import { assistantMsg, label, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPiSessions();
});

const T = { timeout: 20_000 };
const DENIED = "Tool call was denied.";
const INTERRUPTED = "Tool call was not executed because the run was interrupted.";

const batch = (...calls) => assistantMsg(calls, "toolUse");
const said = (words) => assistantMsg([text(words)], "stop");
const del = (id, path = "a.txt") => toolCall(id, "delete", { path });
const read = (id, path = "b.txt") => toolCall(id, "read", { path });
const start = () => [userMsg("clean up")];

/** `delete` needs approval (unless told otherwise), `read` does not; `ran` lists the ids of the calls that ran. */
function registry(ran, { deleteNeeds = true } = {}) {
  const tools = new tp.ToolRegistry();
  tools.register({
    name: "delete",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    needsApproval: deleteNeeds,
    execute: async ({ path }, { callId }) => {
      ran.push(callId);
      return { content: [text(`deleted ${path}`)] };
    },
  });
  tools.register({
    name: "read",
    execute: async ({ path }, { callId }) => {
      ran.push(callId);
      return { content: [text(`read ${path}`)] };
    },
  });
  return tools;
}

/** One run over a scripted model, its events kept; `now` is fixed so that transcripts compare whole. */
async function run({ messages, script, tools, ...options }) {
  const events = [];
  const result = await tp.runAgentLoop({
    context: { messages },
    model: new tp.ScriptedModel(script),
    tools,
    now: () => 1000,
    onEvent: (e) => {
      events.push(e);
    },
    ...options,
  });
  return { result, events, labels: events.map(label) };
}

const texts = (messages) => messages.filter((m) => m.role === "toolResult").map((m) => [m.toolCallId, m.content[0].text]);

function deeplyFrozen(value) {
  if (typeof value !== "object" || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(deeplyFrozen);
}

describe("pause", () => {
  test("a batch with a call that needs approval pauses before anything of it happens", T, async () => {
    const ran = [];
    const { result, events, labels } = await run({ messages: start(), script: [batch(del("c1"), read("c2"))], tools: registry(ran) });
    assert.equal(result.reason, "paused");
    assert.equal(result.steps, 1);
    assert.deepEqual(ran, [], "no call of the batch ran, not even the one that needs no approval");
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant"], "nothing was appended for the batch");
    assert.deepEqual(result.pending, [
      { toolCallId: "c1", toolName: "delete", arguments: { path: "a.txt" }, needsApproval: true },
      { toolCallId: "c2", toolName: "read", arguments: { path: "b.txt" }, needsApproval: false },
    ]);
    assert.ok(deeplyFrozen(result.pending), "result.pending is frozen, deeply");
    assert.deepEqual(labels.slice(-2), ["assistant_message", "turn_end"]);
    assert.ok(!labels.includes("tool_start") && !labels.includes("tool_skipped"));
    assert.deepEqual(events.at(-1), { type: "turn_end", reason: "paused", steps: 1 });
  });

  test("a paused transcript is pending in the paused view, missing its results in the strict one", T, async () => {
    const { result } = await run({ messages: start(), script: [batch(del("c1"), read("c2"))], tools: registry([]) });
    assert.deepEqual(tp.validateTranscript(result.messages, { allowPending: true }), {
      ok: true,
      problems: [],
      pending: [{ toolCallId: "c1", index: 1 }, { toolCallId: "c2", index: 1 }],
    });
    assert.deepEqual(tp.validateTranscript(result.messages).problems.map((p) => [p.kind, p.toolCallId]), [["missing_result", "c1"], ["missing_result", "c2"]]);
    // The paused view says what waits even when nothing does.
    assert.deepEqual(tp.validateTranscript(start(), { allowPending: true }), { ok: true, problems: [], pending: [] });
    // Only the last message's calls may wait: a user message after them makes them missing.
    const later = [...result.messages, userMsg("and then?")];
    assert.deepEqual(tp.validateTranscript(later, { allowPending: true }).problems.map((p) => p.kind), ["missing_result", "missing_result"]);
  });

  test("a run that ends any other way has no pending", T, async () => {
    const { result } = await run({ messages: start(), script: [batch(read("c1")), said("done")], tools: registry([]) });
    assert.equal(result.reason, "stop");
    assert.equal("pending" in result, false);
  });

  test("needsApproval as a function: asked in call order with a copy of the arguments and the tool as this; a promise is awaited; a throw, a rejection or a non-boolean answer fails safe", T, async () => {
    const seen = [];
    const tools = new tp.ToolRegistry();
    tools.register({
      name: "write",
      needsApproval(args) {
        seen.push([this.name, args.mode]);
        args.mode = "changed"; // the function's own copy: the transcript keeps the model's arguments
        switch (seen.at(-1)[1]) {
          case "throw":
            throw new Error("cannot tell");
          case "reject":
            return Promise.reject(new Error("cannot tell later"));
          case "string":
            return "yes";
          case "later-no":
            return new Promise((resolve) => setImmediate(() => resolve(false)));
          case "later-yes":
            return Promise.resolve(true);
          default:
            return seen.at(-1)[1] === "ask";
        }
      },
      execute: async () => ({ content: [text("written")] }),
    });
    const modes = ["no", "ask", "throw", "reject", "string", "later-no", "later-yes"];
    const calls = modes.map((mode, i) => toolCall(`w${i}`, "write", { mode }));
    const { result } = await run({ messages: start(), script: [batch(...calls)], tools });
    assert.equal(result.reason, "paused");
    assert.deepEqual(seen, modes.map((mode) => ["write", mode]), "asked once per call, in call order, with the tool as this");
    assert.deepEqual(result.pending.map((p) => [p.toolCallId, p.needsApproval]), [
      ["w0", false],
      ["w1", true],
      ["w2", true],
      ["w3", true],
      ["w4", true],
      ["w5", false],
      ["w6", true],
    ]);
    assert.deepEqual(result.messages[1].content.map((c) => c.arguments.mode), modes);
  });

  test("needsApproval: false, or a function answering false for every call, never pauses", T, async () => {
    const ran = [];
    const { result } = await run({ messages: start(), script: [batch(del("c1")), said("done")], tools: registry(ran, { deleteNeeds: false }) });
    assert.equal(result.reason, "stop");
    assert.deepEqual(ran, ["c1"]);
  });

  test("a call the registry refuses (unknown tool, bad arguments) needs no approval and gets its error result", T, async () => {
    const ran = [];
    const bad = toolCall("c1", "delete", { path: 42 });
    const { result } = await run({ messages: start(), script: [batch(bad, toolCall("c2", "nope", {})), said("done")], tools: registry(ran) });
    assert.equal(result.reason, "stop");
    assert.deepEqual(ran, []);
    assert.ok(result.messages.slice(2, 4).every((m) => m.isError));
  });

  test("register refuses a needsApproval that is neither a boolean nor a function", () => {
    const tools = new tp.ToolRegistry();
    for (const [value, got] of [["yes", "string"], [1, "number"], [{}, "object"]]) {
      assert.throws(
        () => tools.register({ name: "t", needsApproval: value, execute: () => ({ content: [] }) }),
        { name: "TypeError", message: `tool.needsApproval must be a boolean or a function of the arguments (got ${got})` },
      );
    }
    tools.register({ name: "t", needsApproval: undefined, execute: () => ({ content: [] }) });
    assert.deepEqual(tools.definitions().map((d) => d.name), ["t"]);
  });
});

describe("resume", () => {
  /** Pauses on [delete c1, read c2], then resumes with `approvals` and the paused run's steps. */
  async function pauseThenResume(approvals, { script = [said("done")], ...options } = {}) {
    const ran = [];
    const tools = registry(ran);
    const paused = await run({ messages: start(), script: [batch(del("c1"), read("c2"))], tools });
    const resumed = await run({ messages: paused.result.messages, script, tools, approvals, startSteps: paused.result.steps, ...options });
    return { paused, resumed, ran };
  }

  test("approved: the batch runs as it would have, first, with no second assistant_message, and the run goes on", T, async () => {
    const { resumed, ran } = await pauseThenResume({ c1: { approve: true } });
    assert.equal(resumed.result.reason, "stop");
    assert.equal(resumed.result.steps, 2, "steps count on from startSteps");
    assert.deepEqual(ran, ["c1", "c2"]);
    assert.deepEqual(resumed.labels.slice(0, 4), ["tool_start", "tool_start", "tool_end", "tool_end"]);
    assert.equal(resumed.labels.filter((l) => l === "assistant_message").length, 1, "only the new response is announced");
    assert.deepEqual(texts(resumed.result.messages), [["c1", "deleted a.txt"], ["c2", "read b.txt"]]);

    // The same as the run given its decision up front.
    const upFront = await run({ messages: start(), script: [batch(del("c1"), read("c2")), said("done")], tools: registry([]), approvals: { c1: { approve: true } } });
    assert.deepEqual(resumed.result.messages, upFront.result.messages);
    assert.equal(resumed.result.steps, upFront.result.steps);
  });

  test("denied: a skipped result with the reason (or the default text), announced by tool_skipped; the rest of the batch runs", T, async () => {
    for (const [decision, shown] of [[{ approve: false, reason: "Not on a Friday." }, "Not on a Friday."], [{ approve: false }, DENIED]]) {
      const { resumed, ran } = await pauseThenResume({ c1: decision });
      assert.equal(resumed.result.reason, "stop");
      assert.deepEqual(ran, ["c2"], "the denied call never ran");
      const [denied, other] = resumed.result.messages.slice(2, 4);
      assert.deepEqual(denied, {
        role: "toolResult",
        toolCallId: "c1",
        toolName: "delete",
        content: [text(shown)],
        details: { skipped: true, reason: "denied" },
        isError: true,
        timestamp: 1000,
      });
      assert.equal(other.content[0].text, "read b.txt");
      const skipped = resumed.events.filter((e) => e.type === "tool_skipped");
      assert.deepEqual(skipped.map((e) => e.result.toolCallId), ["c1"]);
    }
  });

  test("a call still without a decision pauses again, before anything happens, and nothing is made or counted", T, async () => {
    const ran = [];
    const tools = registry(ran);
    const paused = await run({ messages: start(), script: [batch(del("c1"), del("c2", "b.txt"), read("c3"))], tools });
    const again = await run({ messages: paused.result.messages, script: [said("done")], tools, approvals: { c1: { approve: true } }, startSteps: 1 });
    assert.equal(again.result.reason, "paused");
    assert.equal(again.result.steps, 1, "no request was made");
    assert.deepEqual(again.result.messages, paused.result.messages);
    assert.deepEqual(again.result.pending.map((p) => [p.toolCallId, p.needsApproval]), [["c1", true], ["c2", true], ["c3", false]]);
    assert.deepEqual(again.labels, ["turn_end"]);
    assert.deepEqual(ran, []);
    const done = await run({ messages: again.result.messages, script: [said("done")], tools, approvals: { c1: { approve: true }, c2: { approve: false } }, startSteps: 1 });
    assert.equal(done.result.reason, "stop");
    assert.deepEqual(ran, ["c1", "c3"]);
  });

  test("startSteps counts toward maxSteps, so maxSteps spans the paused run and the resumed one", T, async () => {
    const script = [batch(read("c5")), said("done")];
    const spanned = await pauseThenResume({ c1: { approve: true } }, { script, maxSteps: 2 });
    assert.equal(spanned.resumed.result.reason, "maxSteps");
    assert.equal(spanned.resumed.result.steps, 2);
    assert.deepEqual(spanned.ran, ["c1", "c2", "c5"], "the last allowed round still ran");
    const fresh = await pauseThenResume({ c1: { approve: true } }, { script, maxSteps: 2, startSteps: 0 });
    assert.equal(fresh.resumed.result.reason, "stop", "from 0, two more requests fit");
    assert.equal(fresh.resumed.result.steps, 2);
  });

  test("a transcript saved mid-batch has its unanswered calls run first, results after the ones it has", T, async () => {
    const ran = [];
    const tools = registry(ran);
    const saved = [...start(), batch(read("c1"), read("c2", "c.txt"), read("c3", "d.txt")), { role: "toolResult", toolCallId: "c1", toolName: "read", content: [text("read b.txt")], isError: false, timestamp: 5 }];
    const { result, labels } = await run({ messages: saved, script: [said("done")], tools });
    assert.equal(result.reason, "stop");
    assert.deepEqual(ran, ["c2", "c3"], "only the unanswered calls ran");
    assert.deepEqual(texts(result.messages), [["c1", "read b.txt"], ["c2", "read c.txt"], ["c3", "read d.txt"]]);
    assert.deepEqual(labels.slice(0, 4), ["tool_start", "tool_start", "tool_end", "tool_end"]);
    assert.ok(tp.validateTranscript(result.messages).ok);

    // With a call that needs approval among them, only the unanswered calls are pending.
    const mixed = [...start(), batch(read("c1"), del("c2")), saved[2]];
    const paused = await run({ messages: mixed, script: [], tools });
    assert.equal(paused.result.reason, "paused");
    assert.equal(paused.result.steps, 0);
    assert.deepEqual(paused.result.pending.map((p) => p.toolCallId), ["c2"]);
  });

  test("unanswered calls anywhere but in the last assistant message are a TypeError naming the first", T, async () => {
    const broken = [...start(), batch(read("c1")), userMsg("well?")];
    await assert.rejects(
      tp.runAgentLoop({ context: { messages: broken }, model: new tp.ScriptedModel([]), tools: registry([]) }),
      (e) => e instanceof TypeError && /context\.messages\[1\]: tool call "c1" has no result/.test(e.message),
    );
  });

  test("a custom executeToolCall does not bypass approval when tools is a registry", T, async () => {
    const ran = [];
    const executed = [];
    const tools = registry(ran);
    const executeToolCall = async (call) => {
      executed.push(call.id);
      return { content: [text(`custom ${call.name}`)] };
    };
    const paused = await run({ messages: start(), script: [batch(del("c1"), read("c2"))], tools, executeToolCall });
    assert.equal(paused.result.reason, "paused");
    assert.deepEqual(executed, []);
    const resumed = await run({ messages: paused.result.messages, script: [said("done")], tools, executeToolCall, approvals: { c1: { approve: true } } });
    assert.equal(resumed.result.reason, "stop");
    assert.deepEqual(executed, ["c1", "c2"], "the custom executor ran the approved batch");
    assert.deepEqual(ran, [], "and the registry did not");
  });

  test("with SPEC §7's hooks: a pause calls none; the resumed batch is a normal batch to them (not a denied call), its calls the transcript's own frozen blocks", T, async () => {
    const seen = [];
    const hooks = {
      beforeToolCall: (call, ctx) => {
        seen.push(`before ${call.id} step ${ctx.step} frozen ${Object.isFrozen(call.arguments)}`);
      },
      afterToolCall: (call, result) => {
        seen.push(`after ${call.id}`);
        return call.id === "c2" ? { details: { audited: true } } : undefined;
      },
      prepareRequest: (_request, ctx) => {
        seen.push(`request ${ctx.step}`);
      },
    };
    const ran = [];
    const tools = registry(ran);
    const script = [batch(del("c1"), read("c2"), del("c3"))];
    const paused = await run({ messages: start(), script, tools, ...hooks });
    assert.equal(paused.result.reason, "paused");
    assert.deepEqual(seen, ["request 1"], "nothing of the paused batch reached a hook");
    seen.length = 0;
    const resumed = await run({ messages: paused.result.messages, script: [said("done")], tools, ...hooks, approvals: { c1: { approve: true }, c3: { approve: false } }, startSteps: 1 });
    assert.equal(resumed.result.reason, "stop");
    assert.deepEqual(ran, ["c1", "c2"]);
    assert.deepEqual(seen, ["before c1 step 1 frozen true", "before c2 step 1 frozen true", "after c1", "after c2", "request 2"], "the denied call is answered before phase 1");
    const starts = resumed.events.filter((e) => e.type === "tool_start").map((e) => e.call);
    assert.deepEqual(starts.map((c) => c.id), ["c1", "c2"]);
    assert.equal(starts[0], resumed.result.messages[1].content[0], "tool_start carries the transcript's own block");
    assert.deepEqual(resumed.result.messages.slice(2, 5).map((m) => [m.toolCallId, m.details ?? null]), [["c1", null], ["c2", { audited: true }], ["c3", { skipped: true, reason: "denied" }]]);
  });

  test("bad approvals or startSteps are a TypeError naming the field, and the next run works", T, async () => {
    const bad = [
      ["yes", /^options\.approvals must be a plain object of decisions by tool call id \(got string\)$/],
      [() => {}, /^options\.approvals must be a plain object of decisions by tool call id \(got function\)$/],
      [[], /^options\.approvals must be a plain object of decisions by tool call id \(got array\)$/],
      [new Map([["c1", { approve: true }]]), /^options\.approvals must be a plain object of decisions by tool call id \(got an object of another class\)$/],
      [{ c1: true }, /^options\.approvals\["c1"\] must be \{approve: true\} or \{approve: false, reason\?: string\} \(got boolean\)$/],
      [{ c1: {} }, /^options\.approvals\["c1"\] must be .* \(got an object without approve\)$/],
      [{ c1: { approve: "yes" } }, /^options\.approvals\["c1"\]\.approve must be a boolean \(got string\)$/],
      [{ c1: { approve: false, reason: 3 } }, /^options\.approvals\["c1"\]\.reason must be a string \(got integer\)$/],
    ];
    for (const [approvals, message] of bad) {
      await assert.rejects(run({ messages: start(), script: [said("x")], tools: registry([]), approvals }), (e) => e instanceof TypeError && message.test(e.message), String(approvals));
    }
    for (const [startSteps, got] of [[-1, "-1"], [1.5, "1.5"], ["2", 'string "2"']]) {
      await assert.rejects(run({ messages: start(), script: [said("x")], tools: registry([]), startSteps }), { name: "TypeError", message: `options.startSteps must be a non-negative integer (got ${got})` });
    }
    // A whole number past the largest count names the bound, not a rule it meets (found by a third attack).
    for (const [startSteps, got] of [[2 ** 32, "4294967296"], [2 ** 53, "9007199254740992"]]) {
      await assert.rejects(run({ messages: start(), script: [said("x")], tools: registry([]), startSteps }), { name: "TypeError", message: `options.startSteps must be at most 4294967295 (got ${got})` });
    }
    const { result } = await run({ messages: start(), script: [said("fine")], tools: registry([]) });
    assert.equal(result.reason, "stop");
  });
});

describe("repairTranscript", () => {
  test("answers every unanswered call with a skipped result, reason interrupted, right after its message's results", T, async () => {
    const r1 = { role: "toolResult", toolCallId: "c1", toolName: "read", content: [text("read b.txt")], isError: false, timestamp: 5 };
    const input = [...start(), batch(read("c1"), del("c2"), del("c3")), r1];
    const before = JSON.stringify(input);
    const { messages, repaired } = tp.repairTranscript(input, { now: () => 77 });
    assert.equal(repaired, 2);
    assert.equal(JSON.stringify(input), before, "the caller's transcript is untouched");
    assert.deepEqual(messages.slice(0, 3), input);
    assert.deepEqual(messages.slice(3), ["c2", "c3"].map((id) => ({
      role: "toolResult",
      toolCallId: id,
      toolName: "delete",
      content: [text(INTERRUPTED)],
      details: { skipped: true, reason: "interrupted" },
      isError: true,
      timestamp: 77,
    })));
    assert.deepEqual(tp.validateTranscript(messages), { ok: true, problems: [] });
  });

  test("a repaired paused run goes on like any other, with nothing run; a whole transcript needs no repair", T, async () => {
    const ran = [];
    const tools = registry(ran);
    const paused = await run({ messages: start(), script: [batch(del("c1"), read("c2"))], tools });
    const t0 = Date.now();
    const { messages, repaired } = tp.repairTranscript(paused.result.messages);
    assert.equal(repaired, 2);
    assert.ok(messages[2].timestamp >= t0 && messages[2].timestamp <= Date.now(), "Date.now() by default");
    const resumed = await run({ messages, script: [said("ok, I will not")], tools });
    assert.equal(resumed.result.reason, "stop");
    assert.deepEqual(resumed.labels.slice(0, 1), ["model_event:start"], "nothing is left to answer first");
    assert.deepEqual(ran, []);
    const whole = tp.repairTranscript(resumed.result.messages);
    assert.deepEqual(whole, { messages: resumed.result.messages, repaired: 0 });
  });
});

describe("validateTranscript and repairTranscript options", () => {
  const note = { role: "note", text: "the user is away", timestamp: 3 };

  test("customRoles: the app's own messages are read verbatim and left out of the pairing", () => {
    const messages = [...start(), note, batch(read("c1")), note, { role: "toolResult", toolCallId: "c1", toolName: "read", content: [text("r")], isError: false, timestamp: 4 }];
    assert.deepEqual(tp.validateTranscript(messages, { customRoles: ["note"] }), { ok: true, problems: [] });
    assert.throws(() => tp.validateTranscript(messages), (e) => e instanceof TypeError && /messages\[1\].*role.*"note"/.test(e.message));
    const { messages: repaired, repaired: count } = tp.repairTranscript(messages.slice(0, 4), { customRoles: ["note"], now: () => 1 });
    assert.equal(count, 1);
    assert.deepEqual(repaired.map((m) => m.role), ["user", "note", "assistant", "toolResult", "note"]);
    assert.deepEqual(repaired[1], note, "kept as it was");
  });

  test("a malformed message names its field, with or without customRoles", () => {
    const bad = [...start(), { role: "assistant", content: [{ type: "toolCall", id: 7, name: "read", arguments: {} }], stopReason: "toolUse", timestamp: 1 }];
    for (const options of [undefined, { customRoles: ["note"] }]) {
      assert.throws(() => tp.validateTranscript(bad, options), { name: "TypeError", message: /^messages\[1\]\.content\[0\]\.id must be a string \(got integer\)/ });
      assert.throws(() => tp.repairTranscript(bad, options), { name: "TypeError", message: /^messages\[1\]\.content\[0\]\.id/ });
    }
  });

  test("bad options are a TypeError naming the field", () => {
    const cases = [
      [() => tp.validateTranscript([], "x"), /^options must be an object \(got string\)$/],
      [() => tp.validateTranscript([], { allowPending: "yes" }), /^options\.allowPending must be a boolean \(got string\)$/],
      [() => tp.validateTranscript([], { customRoles: "note" }), /^options\.customRoles must be an array of role names \(got string\)$/],
      [() => tp.validateTranscript([], { customRoles: ["note", 3] }), /^options\.customRoles\[1\] must be a non-empty string \(got 3\)$/],
      [() => tp.repairTranscript([], { now: 5 }), /^options\.now must be a function \(got number\)$/],
      [() => tp.repairTranscript("x"), /^messages must be an array \(got string\)$/],
    ];
    for (const [call, message] of cases) assert.throws(call, { name: "TypeError", message });
  });
});
