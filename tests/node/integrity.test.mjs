// Issue 27 through the installed package: each finding of trying to break the package as an app, or an
// attacker feeding it, could. Every test here failed on the build before its fix (run it with
// TINY_PI_PKG=<an older pkg/> to see).
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { importFromApp, loadTinyPiSessions } from "./app-fixture.mjs";
import { assistantMsg, gate, jsModel, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPiSessions();
});

const T = { timeout: 20_000 };

/** A registry whose tools record each call they run. */
function recording(ran, { needsApproval = false } = {}) {
  const tools = new tp.ToolRegistry();
  for (const name of ["read", "write"]) {
    tools.register({
      name,
      parameters: { type: "object" },
      needsApproval: name === "write" && needsApproval,
      execute: async (_args, { callId }) => (ran.push(callId), { content: [text(`${name} ran`)] }),
    });
  }
  return tools;
}

const result = (id, name = "read") => ({ role: "toolResult", toolCallId: id, toolName: name, content: [text("done")], isError: false, timestamp: 3 });
const asks = (...calls) => assistantMsg(calls, "toolUse");
const stop = () => assistantMsg([text("ok")], "stop");

describe("edited transcripts (SPEC §8): refused before anything runs, nothing runs twice", () => {
  // A transcript of a finished batch, then edited as a hand might edit its JSONL.
  const finished = () => [userMsg("go"), asks(toolCall("c1", "read")), result("c1"), stop()];
  const edits = [
    ["a result line moved above its call", (m) => [m[0], m[2], m[1], m[3]], /^options\.context\.messages\[1\]: the result of tool call "c1" comes before the call/],
    ["an orphan result", (m) => [...m, result("ghost")], /^options\.context\.messages\[4\]: .*"ghost".*\(orphan_result\)/],
    ["a repeated call id with one result", (m) => [m[0], asks(toolCall("c1", "read"), toolCall("c1", "read")), m[2], m[3]], /duplicate_call_id/],
  ];
  for (const [name, edit, error] of edits) {
    test(`${name}: runAgentLoop, new Agent and Agent.fromJSONL refuse it naming the problem; no tool runs, no request is made`, T, async () => {
      const edited = edit(finished());
      const ran = [];
      const model = jsModel(() => stop());
      await assert.rejects(tp.runAgentLoop({ context: { messages: edited }, model, tools: recording(ran) }), (e) => e instanceof TypeError && error.test(e.message));
      assert.throws(() => new tp.Agent({ model, tools: recording(ran), messages: edited }), (e) => e instanceof TypeError && /problem|result|call/.test(e.message) && /^options\.messages\[/.test(e.message));
      const jsonl = edited.map((m) => JSON.stringify(m)).join("\n");
      assert.throws(() => tp.Agent.fromJSONL(jsonl, { model, tools: recording(ran) }), (e) => e instanceof TypeError && /^line \d+: /.test(e.message));
      assert.deepEqual(ran, []);
      assert.equal(model.requests.length, 0);
    });
  }
});

describe("approvals (SPEC §8 amended)", () => {
  test("an explicit denial denies a call whose tool needs no approval", T, async () => {
    const ran = [];
    const paused = [userMsg("go"), asks(toolCall("c1", "read"), toolCall("c2", "write"))];
    const out = await tp.runAgentLoop({
      context: { messages: paused },
      model: jsModel(() => stop()),
      tools: recording(ran, { needsApproval: true }),
      approvals: { c1: { approve: false, reason: "not that file" }, c2: { approve: true } },
    });
    assert.equal(out.reason, "stop");
    assert.deepEqual(ran, ["c2"]);
    const denied = out.messages.find((m) => m.toolCallId === "c1");
    assert.deepEqual([denied.content[0].text, denied.details], ["not that file", { skipped: true, reason: "denied" }]);
  });

  test("approvals must be a plain object: a Map is a TypeError naming options.approvals", T, async () => {
    const ran = [];
    const paused = [userMsg("go"), asks(toolCall("c1", "write"))];
    await assert.rejects(
      tp.runAgentLoop({ context: { messages: paused }, model: jsModel(() => stop()), tools: recording(ran, { needsApproval: true }), approvals: new Map([["c1", { approve: true }]]) }),
      { name: "TypeError", message: /^options\.approvals must be a plain object/ },
    );
    assert.deepEqual(ran, []);
  });
});

describe("strings are kept exactly or refused, never changed (SPEC §10)", () => {
  test("a call id with a lone surrogate is a model error: nothing appended, no tool runs", T, async () => {
    const ran = [];
    const out = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel(() => asks(toolCall("c\uD800", "read"))), tools: recording(ran) });
    assert.equal(out.reason, "error");
    assert.match(out.error, /lone surrogate \(\\ud800\)/);
    assert.equal(out.messages.length, 1);
    assert.deepEqual(ran, []);
  });

  test("the caller's text with a lone surrogate is a TypeError, not a text quietly changed to U+FFFD", T, async () => {
    await assert.rejects(tp.runAgentLoop({ context: { messages: [userMsg("half \uDC00")] }, model: jsModel(() => stop()) }), (e) => e instanceof TypeError && /lone surrogate/.test(e.message));
  });

  test("an error message with a lone surrogate is refused in the result's text, not changed to U+FFFD", T, async () => {
    const tools = new tp.ToolRegistry();
    tools.register({ name: "read", execute: () => Promise.reject(new Error("half \uD83D")) });
    const out = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel((_r, i) => (i === 0 ? asks(toolCall("c1", "read")) : stop())), tools });
    const [stored] = out.messages.filter((m) => m.role === "toolResult");
    assert.equal(stored.isError, true);
    assert.match(stored.content[0].text, /^\(an error whose message holds a lone surrogate, which tiny-pi never changes and cannot keep\)$/);
  });
});

describe("a thrown value's message is read once, whatever it is or does", () => {
  const odd = [
    ["message undefined", () => Object.assign(new Error("x"), { message: undefined }), /^\{\}$/],
    ["message a number", () => Object.assign(new Error("x"), { message: 42 }), /^\{\}$/],
    ["a message getter that throws", () => Object.defineProperty(new Error("x"), "message", { get() { throw new Error("no"); } }), /^\{\}$/],
    ["a message getter that answers differently each time", () => { let n = 0; return { get message() { n += 1; return n === 1 ? "first" : 7; } }; }, /^first$/],
    ["a proxy whose every trap throws", () => new Proxy({}, { get() { throw new Error("trap"); }, ownKeys() { throw new Error("trap"); }, getPrototypeOf() { throw new Error("trap"); } }), /.+/],
  ];
  for (const [name, make, shown] of odd) {
    test(`a tool that throws an error with ${name}: an error result, and the run and the next one settle`, T, async () => {
      const tools = new tp.ToolRegistry();
      tools.register({ name: "read", execute: () => { throw make(); } });
      const out = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel((_r, i) => (i === 0 ? asks(toolCall("c1", "read")) : stop())), tools });
      assert.equal(out.reason, "stop");
      const [stored] = out.messages.filter((m) => m.role === "toolResult");
      assert.equal(stored.isError, true);
      assert.match(stored.content[0].text, shown);
      assert.equal(tp.validateTranscript(out.messages).ok, true);
    });
  }

  test("an onEvent that throws an error with message undefined cannot stop the run; an Agent goes idle", T, async () => {
    const thrower = () => { throw Object.assign(new Error("x"), { message: undefined }); };
    const out = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel(() => stop()), onEvent: thrower });
    assert.equal(out.reason, "stop");
    const agent = new tp.Agent({ model: jsModel(() => stop()) });
    agent.subscribe(thrower);
    await agent.prompt("go");
    assert.equal(agent.isRunning, false);
    await agent.prompt("again");
    assert.equal(agent.messages.length, 4);
  });
});

describe("a transcript the loop stored can always be read back (serde_json's 128 levels count from each message)", () => {
  const nested = (depth) => { let value = 0; for (let i = 0; i < depth; i += 1) value = [value]; return value; };
  test("a result whose details are as deep as a result can be: validateTranscript, the next run and an Agent read it", T, async () => {
    const tools = new tp.ToolRegistry();
    tools.register({ name: "read", execute: () => ({ content: [text("deep")], details: nested(126) }) });
    const model = () => jsModel((_r, i) => (i === 0 ? asks(toolCall("c1", "read")) : stop()));
    const out = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: model(), tools });
    const [stored] = out.messages.filter((m) => m.role === "toolResult");
    assert.equal(stored.isError, false, "the result was kept");
    assert.deepEqual(tp.validateTranscript(out.messages), { ok: true, problems: [] });
    const next = await tp.runAgentLoop({ context: { messages: out.messages }, model: jsModel(() => stop()), tools });
    assert.equal(next.reason, "stop");
    assert.equal(new tp.Agent({ model: model(), tools, messages: out.messages }).messages.length, 4);
  });

  test("one level deeper is refused where it is made, naming the tool's result", T, async () => {
    const tools = new tp.ToolRegistry();
    tools.register({ name: "read", execute: () => ({ content: [text("deep")], details: nested(128) }) });
    const out = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel((_r, i) => (i === 0 ? asks(toolCall("c1", "read")) : stop())), tools });
    const [stored] = out.messages.filter((m) => m.role === "toolResult");
    assert.equal(stored.isError, true);
    assert.equal(tp.validateTranscript(out.messages).ok, true);
  });

  test("an element JSON has no text for is named as it was", () => {
    assert.throws(() => tp.validateTranscript([userMsg("go"), undefined]), (e) => e instanceof TypeError && /^messages\[1\] .*\(got undefined\)/.test(e.message));
  });
});

describe("the request handed to model.stream (SPEC §10 amended)", () => {
  test("is deeply frozen, its tools too", T, async () => {
    const seen = [];
    const tools = new tp.ToolRegistry();
    tools.register({ name: "read", parameters: { type: "object", properties: { path: { type: "string" } } }, execute: () => ({ content: [text("x")] }) });
    await tp.runAgentLoop({ context: { systemPrompt: "s", messages: [userMsg("go")] }, model: jsModel((request) => (seen.push(request), stop())), tools });
    const [request] = seen;
    const deeplyFrozen = (v) => typeof v !== "object" || v === null || (Object.isFrozen(v) && Object.values(v).every(deeplyFrozen));
    assert.ok(Object.isFrozen(request) && deeplyFrozen(request.messages) && deeplyFrozen(request.tools));
    assert.throws(() => {
      "use strict";
      request.tools[0].parameters.properties.path.type = "number";
    }, TypeError);
  });
});

describe("arguments cannot stall the loop", () => {
  test("a pattern that backtracks in a backtracking engine runs in linear time: ^(a+)+$ on 31 characters answers at once", { timeout: 10_000 }, async () => {
    // The host's RegExp took 48.9 s here; the test's timeout is what fails a backtracking engine.
    const tools = new tp.ToolRegistry();
    tools.register({ name: "find", parameters: { type: "object", properties: { q: { type: "string", pattern: "^(a+)+$" } } }, execute: () => ({ content: [text("found")] }) });
    const answer = await tools.execute(toolCall("c1", "find", { q: `${"a".repeat(30)}!` }));
    assert.equal(answer.isError, true);
    assert.match(answer.content[0].text, /arguments\.q must match/);
  });

  test("a pattern the linear engine cannot run with ECMA-262's meaning is refused at register, naming the keyword's path", () => {
    const tools = new tp.ToolRegistry();
    assert.throws(() => tools.register({ name: "look", parameters: { type: "object", properties: { q: { type: "string", pattern: "(?<=a)b" } } }, execute: () => ({ content: [] }) }), {
      name: "TypeError",
      message: /^tool\.parameters\.properties\.q\.pattern is not supported \(a lookbehind/,
    });
  });
});

describe("sequential batches with timeouts: two calls of a sequential tool never overlap", () => {
  test("the next call starts only once a timed-out call has settled; its late answer is ignored", T, async () => {
    const order = [];
    const w1 = gate();
    const tools = new tp.ToolRegistry();
    tools.register({
      name: "write",
      executionMode: "sequential",
      timeoutMs: 20,
      // Ignores its signal: settles only when the test lets it.
      execute: async (_args, { callId }) => {
        order.push(`${callId} start`);
        if (callId === "w1") await w1.promise;
        order.push(`${callId} end`);
        return { content: [text(`${callId} wrote`)] };
      },
    });
    const out = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: jsModel((_, i) => (i === 0 ? asks(toolCall("w1", "write"), toolCall("w2", "write")) : stop())),
      tools,
      onEvent: (e) => {
        // w1 timed out: w2 must not have started, and w1 is let go only now.
        if (e.type === "tool_end" && e.result.toolCallId === "w1") {
          order.push("w1 timed out");
          w1.open();
        }
      },
    });
    assert.equal(out.reason, "stop");
    assert.deepEqual(order, ["w1 start", "w1 timed out", "w1 end", "w2 start", "w2 end"]);
    assert.equal(out.messages[2].details.timedOut, true, "w1's late answer is ignored");
  });
});

describe("no object an app can build traps the instance", () => {
  test("a forged registry handle (a freed registry's) is a TypeError, and the next run works", T, async () => {
    const real = new tp.ToolRegistry();
    const handle = real.__tinyPiRegistry();
    real.free();
    const forged = { __tinyPiRegistry: () => handle };
    for (const tools of [real, forged, { __tinyPiRegistry: () => 987654 }, { __tinyPiRegistry: () => ({ __wbg_ptr: 8 }) }]) {
      await assert.rejects(tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel(() => stop()), tools }), { name: "TypeError", message: "options.tools is not a live ToolRegistry of this entry (freed, in its register(), or made by another of tiny-pi's entries: take ToolRegistry from the entry whose loop or Agent runs it)" });
    }
    const good = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: new tp.ScriptedModel([stop()]), tools: new tp.ToolRegistry() });
    assert.equal(good.reason, "stop");
  });
});

describe("a custom tool source's definitions are checked as register checks a tool", () => {
  const source = (definitions) => ({ definitions: () => definitions, execute: async () => ({ content: [text("x")] }) });
  const cases = [
    [[{ name: "bad name!", description: "", parameters: { type: "object" } }], /^options\.tools\.definitions\(\)\[0\]\.name must match/],
    [[{ name: "read", description: "", parameters: { type: "object" } }, { name: "read", description: "", parameters: { type: "object" } }], /^options\.tools\.definitions\(\)\[1\]\.name must be unique/],
    [[{ name: "read", description: "", parameters: "x" }], /^options\.tools\.definitions\(\)\[0\]\.parameters/],
  ];
  for (const [definitions, error] of cases) {
    test(`${JSON.stringify(definitions).slice(0, 70)}… is a TypeError naming the field`, T, async () => {
      const model = jsModel(() => stop());
      await assert.rejects(tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, tools: source(definitions) }), (e) => e instanceof TypeError && error.test(e.message));
      assert.equal(model.requests.length, 0, "nothing reached the model");
    });
  }
});

describe("errors say one thing one way", () => {
  const run = (message) => tp.runAgentLoop({ context: { messages: [message] }, model: jsModel(() => stop()) });
  test("a timestamp that is a string, null, NaN or missing: one wording, the path kept, NaN named NaN", T, async () => {
    const cases = [
      [{ role: "user", content: "x", timestamp: "1" }, "options.context.messages[0].timestamp must be a number (got string)"],
      [{ role: "user", content: "x", timestamp: null }, "options.context.messages[0].timestamp must be a number (got null)"],
      [{ role: "user", content: "x", timestamp: NaN }, "options.context.messages[0].timestamp must be a number (got NaN)"],
      [{ role: "user", content: "x" }, "options.context.messages[0].timestamp is missing"],
    ];
    for (const [message, error] of cases) await assert.rejects(run(message), { name: "TypeError", message: error });
  });

  test("Agent options are checked when the agent is made", () => {
    const model = new tp.ScriptedModel([]);
    assert.throws(() => new tp.Agent({ model, toolTimeoutMs: 0 }), { name: "TypeError", message: /^options\.toolTimeoutMs must be a positive integer/ });
    assert.throws(() => new tp.Agent({ model, budget: { maxTokens: -1 } }), { name: "TypeError", message: /^options\.budget\.maxTokens must be a positive number/ });
  });

  test("a budget, retry or compaction that is a Map, a Date or an array is refused, not read as no limit", T, async () => {
    const model = jsModel(() => stop());
    for (const field of ["budget", "retry", "compaction"]) {
      for (const [value, got] of [[new Map([["maxTokens", 100]]), "an object of another class"], [new Date(), "an object of another class"], [[], "array"]]) {
        const error = { name: "TypeError", message: `options.${field} must be a plain object (got ${got})` };
        await assert.rejects(tp.runAgentLoop({ context: { messages: [] }, model, [field]: value }), error);
        assert.throws(() => new tp.Agent({ model, [field]: value }), error);
      }
    }
    const plain = await tp.runAgentLoop({ context: { messages: [] }, model, budget: Object.assign(Object.create(null), { maxTokens: 100 }) });
    assert.equal(plain.reason, "stop", "an object of no prototype is a plain object");
    // Another realm's plain object (an iframe's, a vm context's) is a plain object; its Map is not.
    const { runInNewContext } = await import("node:vm");
    const tools = new tp.ToolRegistry();
    tools.register({ name: "t", execute: () => ({ content: [text("ok")] }) });
    const spending = jsModel((_, i) => assistantMsg([toolCall(`c${i}`, "t")], "toolUse", { usage: { totalTokens: 500 } }));
    const other = await tp.runAgentLoop({ context: { messages: [] }, model: spending, tools, budget: runInNewContext("({ maxTokens: 100 })") });
    assert.deepEqual([other.reason, other.steps], ["budget", 1], "the budget was read");
    await assert.rejects(tp.runAgentLoop({ context: { messages: [] }, model, budget: runInNewContext("new Map()") }), {
      name: "TypeError",
      message: "options.budget must be a plain object (got an object of another class)",
    });
  });
});

describe("readable errors (issue 26, item 8)", () => {
  const frames = (error) => error.stack.split("\n").filter((line) => /^\s*at /.test(line));
  test("a TypeError the package throws or rejects with starts its stack at the app's line, with no wasm frame", T, async () => {
    const here = new URL(import.meta.url).pathname;
    const thrown = [];
    try {
      new tp.ToolRegistry().register({ name: "" });
    } catch (error) {
      thrown.push(error);
    }
    try {
      await tp.runAgentLoop({ context: { messages: "not an array" }, model: jsModel(() => stop()) });
    } catch (error) {
      thrown.push(error);
    }
    try {
      new tp.Agent({ model: jsModel(() => stop()), maxSteps: -1 });
    } catch (error) {
      thrown.push(error);
    }
    assert.equal(thrown.length, 3);
    for (const error of thrown) {
      assert.ok(error instanceof TypeError, String(error));
      const [first] = frames(error);
      assert.ok(first?.includes(here), `the first frame is the app's: ${error.stack}`);
      assert.ok(!/wasm/.test(error.stack), `no wasm frame: ${error.stack}`);
    }
  });

  test("an Agent's refusal (a prompt while it runs, a resume while not paused) rejects with the app's line first", T, async () => {
    const here = new URL(import.meta.url).pathname;
    const open = gate();
    const model = { stream: () => (async function* () { await open.promise; yield { type: "done", reason: "stop", message: stop() }; })() };
    const agent = new tp.Agent({ model });
    const running = agent.prompt("go");
    const refused = await Promise.allSettled([agent.prompt("again"), agent.resume({})]);
    open.open();
    assert.equal((await running).reason, "stop");
    for (const { status, reason: error } of refused) {
      assert.equal(status, "rejected");
      assert.ok(error instanceof Error && !(error instanceof TypeError), String(error));
      const [first] = frames(error);
      assert.ok(first?.includes(here), `the first frame is the app's: ${error.stack}`);
    }
  });
  test("making its error leaves the app's Error.stackTraceLimit as it was, and honours 0 (stacks off)", T, () => {
    const before = Error.stackTraceLimit;
    try {
      for (const limit of [10, 3, 0]) {
        Error.stackTraceLimit = limit;
        assert.throws(() => new tp.ToolRegistry().register({ name: "" }), (error) => {
          assert.ok(error instanceof TypeError);
          assert.equal(Error.stackTraceLimit, limit, "the limit is restored");
          const frames = error.stack.split("\n").filter((line) => /^\s*at /.test(line));
          if (limit === 0) assert.equal(frames.length, 0, `no frames with stacks off: ${error.stack}`);
          else assert.ok(frames[0]?.includes(new URL(import.meta.url).pathname), `the app's line first: ${error.stack}`);
          return true;
        });
      }
    } finally {
      Error.stackTraceLimit = before;
    }
  });
});

describe("a freed object", () => {
  test("used again (a method, a second free()) is a TypeError saying so, from the app's line; new objects work", T, async () => {
    const here = new URL(import.meta.url).pathname;
    const freedRegistry = new tp.ToolRegistry();
    freedRegistry.free();
    const agent = new tp.Agent({ model: jsModel(() => stop()) });
    agent.free();
    const model = new tp.ScriptedModel([]);
    model.free();
    const uses = [
      () => freedRegistry.register({ name: "x", execute: () => ({ content: [] }) }),
      () => freedRegistry.definitions(),
      () => freedRegistry.free(),
      () => agent.prompt("hi"),
      () => agent.messages,
      () => agent.subscribe(() => {}),
      () => model.stream({ messages: [] }),
    ];
    for (const use of uses) {
      assert.throws(use, (error) => {
        assert.ok(error instanceof TypeError, String(error));
        assert.match(error.message, /^this tiny-pi object \(an Agent, a ToolRegistry or a ScriptedModel\) was used after its free\(\) was called/);
        assert.ok(error.stack.split("\n").find((line) => /^\s*at /.test(line))?.includes(here), `the app's line first: ${error.stack}`);
        return true;
      }, String(use));
    }
    const tools = new tp.ToolRegistry();
    tools.register({ name: "echo", execute: () => ({ content: [text("ok")] }) });
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel((_r, i) => (i === 0 ? asks(toolCall("a", "echo")) : stop())), tools });
    assert.deepEqual([result.reason, result.messages.length], ["stop", 4]);
  });
});

describe("the seventh attack (2026-12-07)", () => {
  test("an Agent freed while it runs still answers its prompt with the whole transcript", T, async () => {
    let agent;
    const tools = new tp.ToolRegistry();
    tools.register({ name: "echo", execute: () => (agent.free(), { content: [text("ok")] }) });
    agent = new tp.Agent({ model: jsModel((_r, i) => (i === 0 ? asks(toolCall("c1", "echo")) : stop())), tools });
    const result = await agent.prompt("go");
    assert.deepEqual([result.reason, result.steps, result.messages.map((m) => m.role)], ["stop", 2, ["user", "assistant", "toolResult", "assistant"]]);
  });

  test("a hook answering an array (the new content or messages alone) is an error, never taken for no change", T, async () => {
    const tools = new tp.ToolRegistry();
    tools.register({ name: "read", execute: () => ({ content: [text("SECRET")] }) });
    const model = () => jsModel((_r, i) => (i === 0 ? asks(toolCall("c1", "read")) : stop()));
    const after = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: model(), tools, afterToolCall: () => [text("[redacted]")] });
    const [result] = after.messages.filter((m) => m.role === "toolResult");
    assert.deepEqual([result.isError, result.content[0].text], [true, "afterToolCall failed: returned array; expected nothing or { content?, details?, isError?, terminate? }"]);
    const prepared = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: model(), tools, prepareRequest: (request) => request.messages.filter((m) => m.role === "user") });
    assert.deepEqual([prepared.reason, prepared.steps, prepared.error], ["error", 0, "prepareRequest failed: returned array; expected nothing or { systemPrompt?, messages?, tools? }"]);
  });

  test("JSON deeper than serde_json reads is refused saying so, wherever it comes in", T, async () => {
    const nest = (n) => { const root = {}; let o = root; for (let i = 0; i < n; i += 1) o = o.a = {}; return root; };
    const deep = "nested more than 128 levels deep (the most tiny-pi reads)";
    await assert.rejects(tp.runAgentLoop({ context: { messages: [userMsg("go"), { ...userMsg("x"), meta: nest(130) }] }, model: jsModel(() => stop()) }),
      { name: "TypeError", message: `options.context.messages[1] is ${deep}` });
    assert.throws(() => tp.toJSONL([{ ...userMsg("x"), meta: nest(130) }]), { name: "TypeError", message: `messages[0]: ${deep}` });
    const run = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel(() => asks({ ...toolCall("c1", "read"), arguments: nest(130) })) });
    assert.deepEqual([run.reason, run.error, run.messages.length], ["error", `model stream result() is ${deep}`, 1]);
  });

  test("a custom executor's reply without content is an error result, as a tool's is", T, async () => {
    const model = () => jsModel((_r, i) => (i === 0 ? asks(toolCall("c1", "t")) : stop()));
    const run = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: model(), executeToolCall: async () => ({ details: { x: 1 } }) });
    const [result] = run.messages.filter((m) => m.role === "toolResult");
    assert.equal(result.isError, true);
    assert.match(result.content[0].text, /content is missing/);
  });
});

describe("the eighth attack (2026-12-07)", () => {
  test("a call id \"__proto__\" is approved with decisions made on Object.create(null); {} set so is told how", T, async () => {
    const tools = new tp.ToolRegistry();
    const ran = [];
    tools.register({ name: "rm", needsApproval: true, execute: () => (ran.push("rm"), { content: [text("done")] }) });
    const model = () => jsModel((_r, i) => (i === 0 ? asks(toolCall("__proto__", "rm")) : stop()));
    const paused = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: model(), tools });
    assert.deepEqual([paused.reason, paused.pending.map((p) => p.toolCallId)], ["paused", ["__proto__"]]);
    const assigned = {};
    assigned[paused.pending[0].toolCallId] = { approve: true };
    await assert.rejects(tp.runAgentLoop({ context: { messages: paused.messages }, model: model(), tools, approvals: assigned }), {
      name: "TypeError",
      message: 'options.approvals must be a plain object of decisions by tool call id (got an object whose prototype was set, as options.approvals["__proto__"] = ... does: make it with Object.fromEntries)',
    });
    assert.deepEqual(ran, []);
    for (const approvals of [Object.assign(Object.create(null), { ["__proto__"]: { approve: true } }), Object.fromEntries([["__proto__", { approve: true }]])]) {
      const resumed = await tp.runAgentLoop({ context: { messages: paused.messages }, model: jsModel(() => stop()), tools, approvals });
      assert.deepEqual([resumed.reason, resumed.messages.map((m) => m.role)], ["stop", ["user", "assistant", "toolResult", "assistant"]]);
    }
    assert.deepEqual(ran, ["rm", "rm"], "once a run: each resumed run answered the call once");
  });
});

describe("the ninth attack (2026-12-07)", () => {
  test("a ToolRegistry of the other entry is refused, both ways, for a run and an Agent: it never runs the other entry's tool of that name", T, async () => {
    const lesson = await importFromApp("tiny-pi-lesson-entry.mjs", `export { Agent, runAgentLoop, ToolRegistry } from "tiny-pi/lesson";\n`);
    const ran = [];
    const registry = (entry, who) => {
      const tools = new entry.ToolRegistry();
      tools.register({ name: "x", execute: () => (ran.push(who), { content: [text(who)] }) });
      return tools;
    };
    const [app, lessons] = [registry(tp, "app"), registry(lesson, "lesson")];
    const message = /^options\.tools is not a live ToolRegistry of this entry \(freed, in its register\(\), or made by another of tiny-pi's entries: take ToolRegistry from the entry whose loop or Agent runs it\)$/;
    const model = () => jsModel((_r, i) => (i === 0 ? asks(toolCall("c1", "x")) : stop()));
    for (const [entry, tools] of [[lesson, app], [tp, lessons]]) {
      await assert.rejects(entry.runAgentLoop({ context: { messages: [userMsg("go")] }, model: model(), tools }), { name: "TypeError", message });
      assert.throws(() => new entry.Agent({ model: model(), tools }), { name: "TypeError", message });
    }
    assert.deepEqual(ran, []);
    for (const [entry, tools, who] of [[tp, app, "app"], [lesson, lessons, "lesson"]]) {
      const run = await entry.runAgentLoop({ context: { messages: [userMsg("go")] }, model: model(), tools });
      assert.equal(run.reason, "stop");
      assert.equal(ran.at(-1), who, "each entry runs its own registry's tool");
    }
  });

  test("a resume whose signal is already aborted answers its batch as a batch after an abort: once each, the tools told, no request", T, async () => {
    const seen = [];
    const tools = new tp.ToolRegistry();
    for (const name of ["read", "write"]) {
      tools.register({ name, needsApproval: name === "write", execute: (_a, { callId, signal }) => (seen.push([callId, signal.aborted]), { content: [text("ran")] }) });
    }
    const model = () => jsModel((_r, i) => (i === 0 ? asks(toolCall("c1", "write"), toolCall("c2", "read")) : stop()));
    const paused = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: model(), tools });
    assert.equal(paused.reason, "paused");
    const decisions = Object.fromEntries([["c1", { approve: true }]]);
    const again = model();
    const resumed = await tp.runAgentLoop({ context: { messages: paused.messages }, model: again, tools, approvals: decisions, signal: AbortSignal.abort() });
    assert.deepEqual([resumed.reason, resumed.steps, again.requests.length], ["aborted", 0, 0], "no request after the batch");
    assert.deepEqual(seen, [["c1", true], ["c2", true]], "each call ran once, its signal already aborted");
    assert.deepEqual(resumed.messages.filter((m) => m.role === "toolResult").map((r) => r.toolCallId), ["c1", "c2"]);
    assert.equal(tp.validateTranscript(resumed.messages).ok, true);
    const sequential = await tp.runAgentLoop({ context: { messages: paused.messages }, model: model(), tools, approvals: decisions, signal: AbortSignal.abort(), toolExecution: "sequential" });
    assert.deepEqual(sequential.messages.filter((m) => m.role === "toolResult").map((r) => r.details?.reason), ["aborted", "aborted"], "one at a time: none starts once aborted");
    assert.equal(seen.length, 2);
  });

  test("runAgentLoop's own options given to an Agent are named with what an Agent takes instead, never ignored", T, () => {
    const model = jsModel(() => stop());
    const cases = [
      ["context", { messages: [] }, "give the conversation as options.messages"],
      ["signal", AbortSignal.abort(), "abort its run with agent.abort()"],
      ["onEvent", () => {}, "listen with agent.subscribe(listener)"],
      ["approvals", {}, "decide with agent.resume(approvals)"],
      ["getSteeringMessages", () => [], "queue with agent.steer(message)"],
      ["getFollowUpMessages", () => [], "queue with agent.followUp(message)"],
    ];
    for (const [key, value, instead] of cases) {
      const message = `options.${key} is runAgentLoop's, not an Agent option: ${instead}`;
      assert.throws(() => new tp.Agent({ model, [key]: value }), { name: "TypeError", message });
      assert.throws(() => tp.Agent.fromJSONL("", { model, [key]: value }), { name: "TypeError", message });
    }
    assert.equal(new tp.Agent({ model, signal: undefined }).isRunning, false, "undefined is no option given");
  });
});

describe("the tenth attack (2026-12-07)", () => {
  test("a setter an app put on Array.prototype, or an Array[Symbol.species], re-entering the Agent, never runs inside the bridge's work: no panic, each run ends", T, async () => {
    const thrown = [];
    const ran = [];
    let agent;
    const indices = ["0", "1", "2", "3"];
    for (const i of indices) {
      Object.defineProperty(Array.prototype, i, {
        configurable: true,
        set(value) {
          Object.defineProperty(this, i, { value, writable: true, enumerable: true, configurable: true });
          try {
            agent?.messages;
          } catch (error) {
            thrown.push(error.message);
          }
        },
      });
    }
    const species = Object.getOwnPropertyDescriptor(Array, Symbol.species);
    Object.defineProperty(Array, Symbol.species, {
      configurable: true,
      get() {
        try {
          agent?.messages;
        } catch (error) {
          thrown.push(error.message);
        }
        return Array;
      },
    });
    let prompted, compacted;
    try {
      const model = () => jsModel((_r, n) => (n === 0 ? asks(toolCall("c1", "read")) : stop()));
      agent = new tp.Agent({ model: model(), tools: recording(ran) });
      prompted = await agent.prompt([userMsg("a"), userMsg("b"), userMsg("c")]);
      const long = [userMsg("x".repeat(400)), asks(toolCall("c0", "read")), result("c0"), userMsg("go")];
      const summarize = () => "earlier: a read";
      compacted = await tp.runAgentLoop({ context: { messages: long }, model: model(), tools: recording(ran), compaction: { maxContextTokens: 60, keepRecentTokens: 1, summarize } });
    } finally {
      for (const i of indices) delete Array.prototype[i];
      Object.defineProperty(Array, Symbol.species, species);
    }
    assert.deepEqual(thrown, [], "agent.messages never refused inside a setter");
    assert.deepEqual([prompted.reason, agent.isRunning, ran], ["stop", false, ["c1", "c1"]]);
    assert.equal(compacted.reason, "stop");
    assert.ok(compacted.messages.some((m) => m.role === "compaction"), "the run compacted: its request held the summary");
  });

  test("a stream that throws fails with the thrown error's message as it is (SPEC §12): shouldRetry can match it", T, async () => {
    const asked = [];
    let n = 0;
    const model = {
      stream(request, options) {
        n += 1;
        if (n === 1) throw new Error("ECONNRESET");
        if (n === 2) return (async function* () { throw new Error("ETIMEDOUT"); })();
        return jsModel(() => stop()).stream(request, options);
      },
    };
    const shouldRetry = ({ error }) => (asked.push(error), error === "ECONNRESET" || error === "ETIMEDOUT");
    const r = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, retry: { maxRetries: 2, baseDelayMs: 0, shouldRetry } });
    assert.deepEqual([r.reason, r.retries, asked], ["stop", 2, ["ECONNRESET", "ETIMEDOUT"]]);
    const failed = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: { stream: () => { throw new Error("down"); } } });
    assert.deepEqual([failed.reason, failed.error], ["error", "down"]);
  });

  test("shouldRetry is given the run's signal: one that waits on a person stops when the run aborts, and the run ends", T, async () => {
    const controller = new AbortController();
    const asked = gate();
    const shouldRetry = (_failure, { signal }) => {
      asked.open(signal);
      return new Promise((resolve) => signal.addEventListener("abort", () => resolve(false)));
    };
    const model = { stream: () => { throw new Error("overloaded"); } };
    const running = tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, signal: controller.signal, retry: { maxRetries: 3, shouldRetry } });
    const signal = await asked.promise;
    assert.ok(signal instanceof AbortSignal && !signal.aborted);
    controller.abort();
    const r = await running;
    assert.deepEqual([r.reason, r.error, r.retries, signal.aborted], ["error", "overloaded", 0, true]);
  });
});

describe("the third and fourth attacks (2026-12-07): compaction entries, and data kept as it came", () => {
  const entry = (firstKeptIndex, extra = {}) => ({ role: "compaction", summary: "s", firstKeptIndex, tokensBefore: 1, timestamp: 3, ...extra });

  test("an entry after a waiting batch's message must keep it: refused before anything runs, as new Agent refuses it", T, async () => {
    for (const [messages, problem] of [
      // Keeps nothing before it: the waiting call's result would be sent without its call.
      [[userMsg("go"), asks(toolCall("a", "read")), entry(2)], /^options\.context\.messages\[2\]\.firstKeptIndex: 2 keeps nothing from before the entry/],
      // Cuts at a result: the run used to end with "error" and the waiting call b unanswered.
      [[userMsg("go"), asks(toolCall("a", "read"), toolCall("b", "read")), result("a"), entry(2)], /^options\.context\.messages\[3\]\.firstKeptIndex: 2 is not a user or assistant message$/],
    ]) {
      const ran = [];
      const model = jsModel(() => stop());
      await assert.rejects(tp.runAgentLoop({ context: { messages }, model, tools: recording(ran) }), (e) => e instanceof TypeError && problem.test(e.message));
      assert.deepEqual([ran, model.requests.length], [[], 0], "nothing ran");
      assert.throws(() => new tp.Agent({ model, tools: recording(ran), messages }), TypeError);
    }
    // Kept, the waiting call runs once and every request pairs its calls.
    const ran = [];
    const model = jsModel(() => stop());
    const r = await tp.runAgentLoop({ context: { messages: [userMsg("go"), asks(toolCall("a", "read")), entry(1)] }, model, tools: recording(ran) });
    assert.deepEqual([r.reason, ran], ["stop", ["a"]]);
    assert.equal(tp.validateTranscript(model.requests[0].messages).ok, true);
  });

  test("an entry without tokensBefore, and every field's order, come back as they went in", T, async () => {
    const { tokensBefore: _, ...bare } = entry(0);
    const said = { role: "assistant", content: [{ name: "read", type: "toolCall", arguments: { b: 1, a: 2 }, id: "c1" }], api: "openai-responses", provider: "openai", model: "m", usage: { input: 1, output: 2 }, stopReason: "toolUse", timestamp: 2 };
    const first = { content: "go", role: "user", timestamp: 1 };
    const model = jsModel((_request, n) => (n === 0 ? said : stop()));
    const r = await tp.runAgentLoop({ context: { messages: [first, bare] }, model, tools: recording([]) });
    assert.equal(r.reason, "stop");
    for (const [stored, given] of [[r.messages[0], first], [r.messages[1], bare], [r.messages[2], said]]) {
      assert.equal(JSON.stringify(stored), JSON.stringify(given));
    }
    const text = tp.toJSONL([first, bare, said, result("c1")]);
    const agent = tp.Agent.fromJSONL(text, { model: jsModel(() => stop()) });
    assert.equal(agent.toJSONL(), text, "a restored session saves as it was");
  });

  test("every number is stored as the double the model wrote: a pi-ai cost of 17 digits among them", T, async () => {
    // serde_json's default reader was one unit in the last place off for about one such number in ten.
    const numbers = [3e-6 * 1226, 0.1 * 76 + 0.2, 0.9959804182077745, 1796620053.6453207, 1.7615903788337623e52, 5e-324];
    const said = { ...stop(), usage: { cost: { total: numbers[0] }, numbers }, timestamp: numbers[3] };
    const r = await tp.runAgentLoop({ context: { messages: [userMsg("go", numbers[2])] }, model: jsModel(() => said), tools: recording([]) });
    assert.deepEqual(r.messages[1].usage, said.usage);
    assert.deepEqual([r.messages[0].timestamp, r.messages[1].timestamp], [numbers[2], numbers[3]]);
    assert.equal(r.usage.cost, numbers[0]);
    const text = tp.toJSONL(r.messages);
    assert.equal(tp.Agent.fromJSONL(text, { model: jsModel(() => stop()) }).toJSONL(), text);
  });

  test("a fifth: a tool's details: null is kept in the result it stores and hands out", T, async () => {
    const tools = new tp.ToolRegistry();
    tools.register({ name: "read", parameters: { type: "object" }, execute: async () => ({ content: [text("ok")], details: null }) });
    const ended = [];
    const r = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel((_q, n) => (n === 0 ? asks(toolCall("c1", "read")) : stop())), tools, onEvent: (e) => { if (e.type === "tool_end") ended.push(e.result); } });
    assert.equal(r.reason, "stop");
    for (const stored of [r.messages[2], ended[0]]) assert.ok("details" in stored && stored.details === null);
  });

  test("a fifth: a call that came without arguments is stored without, and its tool gets {}", T, async () => {
    const got = [];
    const tools = new tp.ToolRegistry();
    tools.register({ name: "read", parameters: { type: "object" }, execute: async (args) => (got.push(args), { content: [text("ok")] }) });
    const bare = { type: "toolCall", id: "c1", name: "read" };
    const r = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel((_q, n) => (n === 0 ? asks(bare) : stop())), tools });
    assert.equal(r.reason, "stop");
    assert.deepEqual([JSON.stringify(r.messages[1].content[0]), got], [JSON.stringify(bare), [{}]]);
  });

  test("a sixth: a model's final message without role ends the run as a model error, nothing appended", T, async () => {
    const { role: _, ...bare } = stop();
    const r = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel(() => bare), tools: recording([]) });
    assert.equal(r.reason, "error");
    assert.match(r.error, /role is missing/);
    assert.deepEqual(r.messages.map((m) => m.role), ["user"]);
  });

  test("a fourth: null where an optional field may be is kept; repairTranscript moves an entry's cut with its message", T, async () => {
    const failed = { role: "assistant", content: [], stopReason: "stop", errorMessage: null, timestamp: 2 };
    const nulled = { ...result("c0"), details: null };
    const text = tp.toJSONL([userMsg("go"), asks(toolCall("c0", "read")), nulled, failed]);
    assert.equal(tp.Agent.fromJSONL(text, { model: jsModel(() => stop()) }).toJSONL(), text);
    const messages = [userMsg("a"), asks(toolCall("x", "read")), userMsg("b"), asks(toolCall("y", "read")), result("y"), userMsg("keep"), entry(5)];
    const repaired = tp.repairTranscript(messages);
    const moved = repaired.messages.find((m) => m.role === "compaction");
    assert.equal(repaired.messages[moved.firstKeptIndex].content, "keep");
    const r = await tp.runAgentLoop({ context: { messages: repaired.messages }, model: jsModel(() => stop()), tools: recording([]) });
    assert.equal(r.reason, "stop");
  });
});

describe("the thirteenth attack (2026-12-07)", () => {
  test("a read-only or getter-only property an app put on Object.prototype (step, signal, reportProgress, closed, pending) does not stop the bridge: the run ends, its call answered, each context has its own fields", T, async () => {
    const names = ["step", "signal", "reportProgress", "closed", "callId", "messages", "pending"];
    for (const name of names) {
      // `pending` reads as absent, so the bridge's paused view makes its own (an empty list).
      Object.defineProperty(Object.prototype, name, { configurable: true, get: () => (name === "pending" ? undefined : true) });
    }
    let run, retried, validation;
    const progress = [];
    const retrySignals = [];
    try {
      const tools = new tp.ToolRegistry();
      tools.register({
        name: "read",
        execute: async (_args, { callId, signal, reportProgress }) => {
          reportProgress([text(`reading for ${callId}`)]);
          return { content: [text(`read ${signal instanceof AbortSignal}`)] };
        },
      });
      const model = () => jsModel((_r, n) => (n === 0 ? asks(toolCall("c1", "read")) : stop()));
      const seen = [];
      const beforeToolCall = (_call, context) => void seen.push(context.step);
      run = await tp.runAgentLoop({
        context: { messages: [userMsg("go")] },
        model: model(),
        tools,
        signal: new AbortController().signal,
        beforeToolCall,
        onEvent: (e) => void (e.type === "tool_progress" && progress.push(e.content[0].text)),
      });
      assert.deepEqual(seen, [1], "the hook's context has its own step");
      const failing = jsModel((_r, n) => (n === 0 ? assistantMsg([], "error") : stop()));
      const shouldRetry = (_failure, context) => (retrySignals.push(context.signal instanceof AbortSignal), true);
      retried = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: failing, signal: new AbortController().signal, retry: { maxRetries: 1, baseDelayMs: 0, shouldRetry } });
      validation = tp.validateTranscript([userMsg("go")], { allowPending: true });
    } finally {
      for (const name of names) delete Object.prototype[name];
    }
    assert.equal(run.reason, "stop");
    assert.deepEqual(progress, ["reading for c1"]);
    assert.equal(run.messages[2].content[0].text, "read true", "the tool got the run's signal");
    assert.ok(tp.validateTranscript(run.messages).ok);
    assert.deepEqual([retried.reason, retried.retries, retrySignals], ["stop", 1, [true]], "shouldRetry's context has its own signal");
    assert.deepEqual(Object.getOwnPropertyDescriptor(validation, "pending")?.value, [], "the paused view's own pending");
  });

  test("an app's getter, toJSON or now that calls the package inside itself is refused 16 levels deep with an Error, and the instance goes on (~300 deep, the wasm stack ran out: the instance trapped for every later call)", T, async () => {
    /** Calls `call(again)` and `again` inside it until the package refuses: how deep it went, how often refused. */
    const recurse = async (call) => {
      let depth = 0;
      let deepest = 0;
      const errors = [];
      const settled = [];
      const again = () => {
        deepest = Math.max(deepest, ++depth);
        try {
          const out = call(again);
          if (out instanceof Promise) settled.push(out.catch((error) => void errors.push(error.message)));
        } catch (error) {
          errors.push(error.message);
        }
        depth -= 1;
      };
      again();
      await Promise.all(settled);
      return { deepest, refused: errors.filter((m) => m.startsWith("tiny-pi was called from inside itself 16 levels deep")).length };
    };
    const model = () => jsModel(() => stop());
    const agent = new tp.Agent({ model: model() });
    let clock = null;
    const clocked = new tp.Agent({ model: model(), now: () => (clock?.(), 5) });
    const cases = {
      "Agent.prompt, a getter of its input": (again) => agent.prompt({ role: "user", get content() { again(); return "go"; }, timestamp: 1 }),
      "runAgentLoop, a getter of its context": (again) => tp.runAgentLoop({ model: model(), get context() { again(); return { messages: [userMsg("go")] }; } }),
      "validateTranscript, a message's toJSON": (again) => tp.validateTranscript([{ toJSON() { again(); return userMsg("go"); } }]),
      "ToolRegistry.register, a getter of the tool's name": (again) => new tp.ToolRegistry().register({ get name() { again(); return "read"; }, execute: () => ({ content: [] }) }),
      "Agent.steer, the agent's now": (again) => ((clock = again), clocked.steer("go")),
    };
    // A tool's reportProgress, while its call runs.
    const [running, release] = [gate(), gate()];
    const tools = new tp.ToolRegistry();
    tools.register({ name: "read", execute: async (_args, { reportProgress }) => (running.open(reportProgress), await release.promise, { content: [text("read")] }) });
    const progressed = tp.runAgentLoop({ model: jsModel((_r, n) => (n === 0 ? asks(toolCall("c1", "read")) : stop())), tools, context: { messages: [userMsg("go")] } });
    const report = await running.promise;
    cases["reportProgress, a getter of the content it reports"] = (again) => report([{ type: "text", get text() { again(); return "p"; } }]);
    for (const [name, call] of Object.entries(cases)) assert.deepEqual(await recurse(call), { deepest: 17, refused: 1 }, name);
    release.open();
    assert.equal((await progressed).reason, "stop");
    clock = null;
    assert.equal(tp.validateTranscript([{ toJSON: () => (tp.validateTranscript([userMsg("inner")]), userMsg("go")) }]).ok, true, "two levels are nothing");
    assert.equal((await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: model() })).reason, "stop");
    assert.deepEqual([(await agent.prompt("again")).reason, (await clocked.prompt("again")).reason], ["stop", "stop"]);
  });

  test("a BigInt's path is found by reading the value again, sealed: a toJSON that calls the package there is refused at once, so 16 nested levels cost 2 reads each, not 2^16 (the second read nested again at every level)", T, () => {
    let reads = 0;
    const refusals = new Set();
    const message = {
      toJSON() {
        reads += 1;
        try {
          tp.validateTranscript([message]);
        } catch (error) {
          if (!error.message.startsWith("messages")) refusals.add(error.message);
        }
        return { ...userMsg("go"), n: [1, 2n] };
      },
    };
    assert.throws(() => tp.validateTranscript([message]), { name: "TypeError", message: /^messages\[0\]\.n\[1\]: .*BigInt/ });
    assert.ok(reads <= 2 * 17, `${reads} reads of toJSON for 17 levels`);
    assert.deepEqual([...refusals].sort(), ["tiny-pi was called from inside itself 16 levels deep (a getter, toJSON, proxy or now that calls tiny-pi while it reads them): refused before the wasm stack runs out", "tiny-pi was called while it read a value again to name the field in an error: refused"]);
    const { Map } = globalThis;
    globalThis.Map = function () {
      throw new Error("an app's Map that throws");
    };
    try {
      assert.throws(() => tp.validateTranscript([{ ...userMsg("go"), n: 1n }]), { name: "TypeError", message: /^messages\[0\]: .*BigInt/ });
    } finally {
      globalThis.Map = Map;
    }
    assert.equal(tp.validateTranscript([userMsg("go")]).ok, true, "a second read that fails leaves nothing sealed");
    reads = 0;
    const refusing = { toJSON: () => (reads++, tp.validateTranscript([refusing]), userMsg("go")) };
    assert.throws(() => tp.validateTranscript([refusing]), { message: /^(messages\[0\]: )+tiny-pi was called from inside itself 16 levels deep/ });
    assert.equal(reads, 16, "an error without a BigInt is not read again: one read a level, the 17th call refused before it reads");
    assert.equal(tp.validateTranscript([userMsg("go")]).ok, true, "the same turn: nothing left sealed");
  });

  test("an app's Error.prepareStackTrace that throws: the package's TypeError is made all the same, and nothing is left behind (it escaped through wasm, and 16 of them refused every later call)", T, () => {
    const saved = Error.prepareStackTrace;
    Error.prepareStackTrace = () => {
      throw new Error("the app's prepareStackTrace failed");
    };
    try {
      for (let i = 0; i < 20; i += 1) assert.throws(() => tp.validateTranscript(42), { name: "TypeError", message: "messages must be an array (got number)" });
    } finally {
      Error.prepareStackTrace = saved;
    }
    assert.equal(tp.validateTranscript([userMsg("go")]).ok, true, "the same turn: nothing counted");
  });

  test("a host's stack overflow that unwinds through the package mid-call leaves no count behind past the turn: the next turn's calls are not refused as nested", T, async () => {
    const probe = () => {
      try {
        probe();
      } catch {}
      try {
        tp.validateTranscript([userMsg("a")]);
      } catch {}
    };
    probe();
    probe();
    await null;
    assert.equal(tp.validateTranscript([userMsg("go")]).ok, true);
    assert.equal((await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel(() => stop()) })).reason, "stop");
  });

  test("a tool's parameters must be a plain object: a Map (read as {}, a schema that checks nothing) is a TypeError naming tool.parameters", () => {
    const tools = new tp.ToolRegistry();
    const execute = async () => ({ content: [] });
    for (const [parameters, got] of [[new Map([["type", "object"]]), "an object of another class"], [["type"], "array"]]) {
      assert.throws(() => tools.register({ name: "read", parameters, execute }), {
        name: "TypeError",
        message: `tool.parameters must be a JSON Schema object (got ${got})`,
      });
    }
    tools.register({ name: "read", parameters: { type: "object", properties: { path: { type: "string" } } }, execute });
    tools.register({ name: "free", parameters: Object.assign(Object.create(null), { type: "object" }), execute });
    assert.deepEqual(tools.definitions().map((d) => d.name), ["read", "free"]);
  });
});
