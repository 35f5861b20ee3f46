// The Agent (SPEC §9) through the installed package: a conversation over runAgentLoop whose state table
// (idle / running / paused; what each method does in each) is the core's; steer/followUp feed the run's
// SPEC §7 queues (getSteeringMessages/getFollowUpMessages).
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { loadTinyPiSessions } from "./app-fixture.mjs";
import { assistantMsg, eventLog, gate, jsModel, settle, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPiSessions();
});

const T = { timeout: 20_000 };
const INTERRUPTED = "Tool call was not executed because the run was interrupted.";

const said = (words) => assistantMsg([text(words)], "stop");
const batch = (...calls) => assistantMsg(calls, "toolUse");

/** `delete` needs approval; `wait` runs until its gate opens; `read` just runs. `ran` lists the calls run. */
function registry(ran, gates = {}) {
  const tools = new tp.ToolRegistry();
  tools.register({ name: "delete", needsApproval: true, execute: async (_, { callId }) => (ran.push(callId), { content: [text("deleted")] }) });
  tools.register({
    name: "wait",
    execute: async (_, { callId }) => {
      await gates[callId].promise;
      ran.push(callId);
      return { content: [text("waited")] };
    },
  });
  tools.register({ name: "read", execute: async (_, { callId }) => (ran.push(callId), { content: [text("read")] }) });
  return tools;
}

/** An agent over a scripted model, with a log of its events. */
function agentWith(script, { ran = [], gates = {}, ...options } = {}) {
  const model = new tp.ScriptedModel(script);
  const agent = new tp.Agent({ model, tools: registry(ran, gates), now: () => 500, ...options });
  const log = eventLog();
  agent.subscribe(log.push);
  return { agent, model, log, ran };
}

function deeplyFrozen(value) {
  if (typeof value !== "object" || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(deeplyFrozen);
}

describe("prompt", () => {
  test("a prompt runs; the agent keeps the conversation, and the next prompt goes on from it", T, async () => {
    const { agent, model } = agentWith([said("Hello!"), said("You said hi.")], { systemPrompt: "Be brief." });
    assert.equal(agent.isRunning, false);
    const first = await agent.prompt("hi");
    assert.equal(first.reason, "stop");
    assert.deepEqual(agent.messages.map((m) => m.role), ["user", "assistant"]);
    assert.deepEqual(agent.messages[0], { role: "user", content: "hi", timestamp: 500 }, "a string is a user message, stamped by now");
    const second = await agent.prompt({ role: "user", content: "what did I say?", timestamp: 7 });
    assert.equal(second.messages.length, 4);
    assert.deepEqual(agent.messages, second.messages);
    assert.equal(model.requests[1].messages.length, 3, "the second request saw the whole conversation");
    assert.equal(model.requests[1].systemPrompt, "Be brief.");
    await agent.prompt([userMsg("one"), userMsg("two")]);
    assert.deepEqual(agent.messages.slice(4, 6).map((m) => m.content), ["one", "two"], "an array is appended in order");
  });

  test("messages is a frozen snapshot; the caller's objects are never frozen or changed", T, async () => {
    const start = [userMsg("earlier"), said("noted")];
    const input = userMsg("now");
    const { agent } = agentWith([said("ok")], { messages: start });
    assert.ok(deeplyFrozen(agent.messages));
    const before = agent.messages;
    await agent.prompt(input);
    assert.ok(deeplyFrozen(agent.messages));
    assert.equal(before.length, 2, "an earlier snapshot does not change");
    assert.ok(!Object.isFrozen(start) && !Object.isFrozen(start[0]) && !Object.isFrozen(input));
    assert.deepEqual(input, userMsg("now"));
    assert.throws(() => {
      "use strict";
      agent.messages.push(userMsg("x"));
    }, TypeError);
  });

  test("a prompt while a run is in progress rejects with an Error, and the run goes on", T, async () => {
    const gates = { w1: gate() };
    const { agent, log, ran } = agentWith([batch(toolCall("w1", "wait", {})), said("done")], { gates });
    const running = agent.prompt("go");
    await log.when((e) => e.type === "tool_start");
    assert.equal(agent.isRunning, true);
    await assert.rejects(agent.prompt("again"), (e) => e.constructor === Error && /already in progress/.test(e.message));
    await assert.rejects(agent.resume({}), (e) => e.constructor === Error && /already in progress/.test(e.message));
    assert.throws(() => agent.reset(), (e) => e.constructor === Error && /already in progress/.test(e.message));
    assert.deepEqual(agent.messages.map((m) => m.role), ["user", "assistant"], "the run's conversation as it goes (its input, the response whose call runs), and nothing of the refused prompt");
    gates.w1.open();
    const result = await running;
    assert.equal(result.reason, "stop");
    assert.deepEqual(ran, ["w1"]);
    assert.deepEqual(agent.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);
  });

  test("only user messages and messages of a role in customRoles may be prompted or queued", T, async () => {
    const { agent, model } = agentWith([said("ok")]);
    const only = "only user messages and messages of a role in customRoles may be prompted or queued";
    await assert.rejects(agent.prompt(said("I am the model")), { name: "TypeError", message: `input.role must be "user" (got "assistant"): ${only}` });
    await assert.rejects(agent.prompt([userMsg("fine"), { role: "toolResult", toolCallId: "x", toolName: "y", content: [], isError: false, timestamp: 1 }]), { name: "TypeError", message: `input[1].role must be "user" (got "toolResult"): ${only}` });
    await assert.rejects(agent.prompt({ role: "user", content: 5, timestamp: 1 }), { name: "TypeError", message: /^input\.content must be a string or an array \(got integer\)/ });
    await assert.rejects(agent.prompt(5), { name: "TypeError", message: "input must be a string, a message or an array of messages (got number)" });
    assert.throws(() => agent.steer(said("no")), { name: "TypeError", message: `message.role must be "user" (got "assistant"): ${only}` });
    assert.throws(() => agent.followUp({ role: "note", text: "x" }), { name: "TypeError", message: `message.role must be "user" (got "note"): ${only}` });
    assert.throws(() => agent.followUp(5), { name: "TypeError", message: "message must be a string or one message (got number)" });
    assert.throws(() => agent.steer([userMsg("a")]), { name: "TypeError", message: "message must be a string or one message (got array)" });
    assert.equal(model.requests.length, 0, "nothing ran");
    assert.deepEqual(agent.messages, []);
    const noted = new tp.Agent({ model, customRoles: ["note"] });
    noted.steer({ role: "note", text: "the user is away", timestamp: 1 });
    assert.throws(() => noted.steer({ role: "memo" }), { name: "TypeError", message: `message.role must be "user" or one of customRoles ("note") (got "memo"): ${only}` });
    assert.equal(noted.isRunning, false, "queued while idle: nothing runs");
    const result = await agent.prompt("hi");
    assert.equal(result.reason, "stop", "the agent works after every refusal");
  });

  test("a prompt's string is stamped by the run's clock rule: options.now when it gives a number, else Date.now()", T, async () => {
    const stamped = async (now) => {
      const { agent } = agentWith([said("ok")], { now });
      const before = Date.now();
      const result = await agent.prompt("hi");
      const after = Date.now();
      assert.equal(result.reason, "stop");
      return { timestamp: agent.messages[0].timestamp, before, after };
    };
    assert.equal((await stamped(() => 42)).timestamp, 42);
    // Not a number, a promise, a clock that throws: Date.now() stands in, as it does for the run's own messages.
    for (const now of [() => "later", () => NaN, () => Promise.resolve(7), () => { throw new Error("no clock"); }]) {
      const { timestamp, before, after } = await stamped(now);
      assert.ok(typeof timestamp === "number" && timestamp >= before && timestamp <= after, `${now}: ${timestamp}`);
    }
    // A malformed option is refused when the agent is made, not at its first prompt.
    assert.throws(() => agentWith([said("ok")], { now: 5 }), { name: "TypeError", message: "options.now must be a function (got number)" });
  });

  test("the constructor checks its options and its transcript", () => {
    assert.throws(() => new tp.Agent(), { name: "TypeError", message: "options must be an object with a model (got undefined)" });
    assert.throws(() => new tp.Agent({}), { name: "TypeError", message: "options.model must be an object with a stream() method (got undefined)" });
    const model = new tp.ScriptedModel([]);
    assert.throws(() => new tp.Agent({ model, customRoles: [1] }), { name: "TypeError", message: "options.customRoles[0] must be a non-empty string (got 1)" });
    assert.throws(() => new tp.Agent({ model, messages: "x" }), { name: "TypeError", message: "options.messages must be an array (got string)" });
    const broken = [userMsg("go"), batch(toolCall("c1", "read", {})), userMsg("well?")];
    assert.throws(() => new tp.Agent({ model, messages: broken }), { name: "TypeError", message: /^options\.messages\[1\]: tool call "c1" has no result/ });
  });

  test("waitForIdle resolves once the run has ended, and at once when idle", T, async () => {
    const gates = { w1: gate() };
    const { agent, log } = agentWith([batch(toolCall("w1", "wait", {})), said("done")], { gates });
    await agent.waitForIdle();
    const running = agent.prompt("go");
    await log.when((e) => e.type === "tool_start");
    let idle = false;
    const waiting = agent.waitForIdle().then(() => (idle = true));
    await settle();
    assert.equal(idle, false);
    gates.w1.open();
    await waiting;
    assert.equal(agent.isRunning, false);
    assert.equal((await running).reason, "stop");
  });
});

describe("pause, resume, abort, reset", () => {
  test("a paused run leaves the agent paused; prompt is refused; resume continues it, counting steps on", T, async () => {
    const { agent, ran } = agentWith([batch(toolCall("c1", "delete", { path: "a" }), toolCall("c2", "read", {})), said("done")]);
    const paused = await agent.prompt("clean up");
    assert.equal(paused.reason, "paused");
    assert.equal(agent.isRunning, false);
    assert.deepEqual(agent.pending, paused.pending);
    assert.deepEqual(agent.pending.map((p) => [p.toolCallId, p.needsApproval]), [["c1", true], ["c2", false]]);
    assert.ok(deeplyFrozen(agent.pending));
    await assert.rejects(agent.prompt("hello?"), (e) => e.constructor === Error && /paused/.test(e.message));
    const done = await agent.resume({ c1: { approve: true } });
    assert.equal(done.reason, "stop");
    assert.equal(done.steps, 2, "the resumed run counts on from the paused one");
    assert.deepEqual(ran, ["c1", "c2"]);
    assert.equal(agent.pending, undefined);
    await assert.rejects(agent.resume({}), (e) => e.constructor === Error && /nothing to resume/.test(e.message));
  });

  test("a resume still missing a decision pauses again; one with malformed decisions rejects and stays paused", T, async () => {
    const { agent, ran } = agentWith([batch(toolCall("c1", "delete", {}), toolCall("c2", "delete", {})), said("done")]);
    await agent.prompt("go");
    const again = await agent.resume({ c1: { approve: true } });
    assert.equal(again.reason, "paused");
    assert.deepEqual(agent.pending.map((p) => p.toolCallId), ["c1", "c2"]);
    await assert.rejects(agent.resume({ c2: { approve: "yes" } }), { name: "TypeError", message: /^approvals\["c2"\]\.approve must be a boolean/ });
    assert.deepEqual(agent.pending.map((p) => p.toolCallId), ["c1", "c2"], "still paused on the same calls");
    const done = await agent.resume({ c1: { approve: true }, c2: { approve: false, reason: "keep it" } });
    assert.equal(done.reason, "stop");
    assert.deepEqual(ran, ["c1"]);
    assert.equal(agent.messages[3].content[0].text, "keep it");
  });

  test("abort while paused answers the pending calls with reason interrupted, and the conversation goes on", T, async () => {
    const { agent, model, ran } = agentWith([batch(toolCall("c1", "delete", {}), toolCall("c2", "read", {})), said("As you wish.")]);
    await agent.prompt("go");
    agent.abort();
    assert.equal(agent.pending, undefined);
    assert.equal(agent.isRunning, false);
    const results = agent.messages.slice(2);
    assert.deepEqual(results.map((m) => [m.toolCallId, m.content[0].text, m.details.reason, m.timestamp]), [
      ["c1", INTERRUPTED, "interrupted", 500],
      ["c2", INTERRUPTED, "interrupted", 500],
    ]);
    assert.ok(deeplyFrozen(agent.messages));
    assert.deepEqual(tp.validateTranscript(agent.messages), { ok: true, problems: [] });
    const next = await agent.prompt("never mind");
    assert.equal(next.reason, "stop");
    assert.deepEqual(ran, [], "no pending call ran");
    assert.equal(model.requests[1].messages.length, 5, "the model saw the answered calls");
  });

  test("abort while running aborts the run; abort while idle does nothing", T, async () => {
    const gates = { w1: gate() };
    const { agent, log } = agentWith([batch(toolCall("w1", "wait", {})), said("never")], { gates });
    agent.abort();
    assert.deepEqual(agent.messages, []);
    const running = agent.prompt("go");
    await log.when((e) => e.type === "tool_start");
    agent.abort();
    gates.w1.open();
    const result = await running;
    assert.equal(result.reason, "aborted");
    assert.equal(result.steps, 1);
    assert.equal(agent.isRunning, false);
    assert.deepEqual(agent.messages.map((m) => m.role), ["user", "assistant", "toolResult"]);
  });

  test("abort while the model streams reaches the model: its stream is given a signal the agent aborts", T, async () => {
    let opened;
    const streaming = new Promise((resolve) => (opened = resolve));
    const model = {
      stream(request, { signal } = {}) {
        opened(signal);
        async function* events() {
          yield { type: "start", partial: assistantMsg([], "stop") };
          // As pi-ai does: the request goes on until the signal aborts it.
          if (signal) await new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", resolve)));
          yield { type: "error", reason: "aborted", error: assistantMsg([], "aborted") };
        }
        return events();
      },
    };
    const agent = new tp.Agent({ model, now: () => 500 });
    const running = agent.prompt("count to a million");
    const signal = await streaming;
    assert.ok(signal instanceof AbortSignal, "the stream is given a signal");
    assert.equal(signal.aborted, false);
    agent.abort();
    assert.equal(signal.aborted, true, "the agent's abort aborts it at once");
    const result = await running;
    assert.equal(result.reason, "aborted");
    assert.equal(agent.isRunning, false);
  });

  test("reset forgets the conversation and the pause", T, async () => {
    const { agent, model } = agentWith([batch(toolCall("c1", "delete", {})), said("fresh")]);
    await agent.prompt("go");
    agent.reset();
    assert.deepEqual(agent.messages, []);
    assert.equal(agent.pending, undefined);
    const result = await agent.prompt("hi again");
    assert.equal(result.reason, "stop");
    assert.equal(model.requests[1].messages.length, 1, "nothing of the earlier conversation");
  });

  test("after reset, a JS model is asked with the new conversation, never a request kept from the old one", T, async () => {
    const model = jsModel((_, i) => said(`answer ${i}`));
    const agent = new tp.Agent({ model, tools: registry([]) });
    await agent.prompt("go");
    agent.reset();
    await agent.prompt("hi again");
    assert.deepEqual(model.requests.map((r) => r.messages.map((m) => m.content)), [["go"], ["hi again"]]);
    assert.notEqual(model.requests[1], model.requests[0]);
  });
});

describe("listeners", () => {
  test("a listener may read agent.messages at every event, and sees the transcript as it grows", T, async () => {
    const model = jsModel((_, i) => (i === 0 ? batch(toolCall("r1", "read", {}), toolCall("r2", "read", {})) : said("done")));
    const agent = new tp.Agent({ model, tools: registry([]) });
    const seen = [];
    agent.subscribe((e) => {
      seen.push(`${e.type}:${agent.messages.length}`);
    });
    const result = await agent.prompt("read both");
    assert.equal(result.reason, "stop");
    assert.deepEqual(agent.messages.map((m) => m.role), ["user", "assistant", "toolResult", "toolResult", "assistant"]);
    const at = (type) => seen.filter((s) => s.startsWith(`${type}:`));
    assert.deepEqual(at("assistant_message"), ["assistant_message:2", "assistant_message:5"], "each response is in the transcript when its event comes");
    assert.equal(at("tool_end").length, 2);
    assert.ok(at("model_event").length > 0);
    const lengths = seen.map((s) => Number(s.split(":").at(-1)));
    assert.deepEqual(lengths, [...lengths].sort((a, b) => a - b), "the transcript only grows");
    assert.equal(seen.at(-1), "turn_end:5");
  });

  test("listeners see every event of every run in order, are awaited, and can unsubscribe; a failing one is the run's observerError", T, async () => {
    const model = new tp.ScriptedModel([batch(toolCall("r1", "read", {})), said("one"), said("two")]);
    const agent = new tp.Agent({ model, tools: registry([]) });
    const first = [];
    const second = [];
    const held = gate();
    let holding = true;
    agent.subscribe((e) => {
      first.push(e.type);
      if (e.type === "assistant_message" && holding) {
        holding = false;
        return held.promise;
      }
    });
    const unsubscribe = agent.subscribe((e) => {
      second.push(e.type);
      if (e.type === "tool_end") throw new Error("listener broke");
    });
    const running = agent.prompt("go");
    await settle();
    assert.equal(first.at(-1), "assistant_message", "the loop waits for the listener's promise");
    assert.equal(first.includes("tool_start"), false);
    held.open();
    const result = await running;
    assert.equal(result.observerError, "listener broke");
    assert.deepEqual(first, second, "both listeners got every event, in the same order");
    assert.deepEqual(first.filter((t) => t !== "model_event"), ["assistant_message", "tool_start", "tool_end", "assistant_message", "turn_end"]);
    unsubscribe();
    const heard = second.length;
    await agent.prompt("again");
    assert.equal(second.length, heard, "the unsubscribed listener heard nothing of the second run");
    assert.equal(first.at(-1), "turn_end", "the other one did");
    assert.ok(first.length > heard);
    assert.throws(() => agent.subscribe("nope"), { name: "TypeError", message: "listener must be a function (got string)" });
  });
});

describe("listeners follow the core's rule", () => {
  /** Runs a one-reply agent with `listeners`; the result and the run's own onEvent outcome for the same returns. */
  async function heardBy(...listeners) {
    const agent = new tp.Agent({ model: new tp.ScriptedModel([said("ok")]) });
    for (const listener of listeners) agent.subscribe(listener);
    return agent.prompt("go");
  }

  test("each listener in turn, then what they returned awaited in order; the first error thrown, then rejected", T, async () => {
    const order = [];
    const later = (name) => (e) => {
      order.push(`${name}:${e.type}`);
      if (e.type === "turn_end") return Promise.resolve().then(() => order.push(`${name} settled`));
    };
    await heardBy(later("a"), later("b"));
    assert.deepEqual(order.slice(-4), ["a:turn_end", "b:turn_end", "a settled", "b settled"]);
    const rejects = (e) => (e.type === "turn_end" ? Promise.reject(new Error("rejected first")) : undefined);
    const throws = (e) => {
      if (e.type === "turn_end") throw new Error("thrown second");
    };
    assert.equal((await heardBy(rejects, throws)).observerError, "thrown second");
    assert.equal((await heardBy(rejects, () => {})).observerError, "rejected first");
  });

  test("what is awaited is what onEvent's is: a thenable, not an object whose then getter throws", T, async () => {
    const odd = { get then() { throw new Error("no then"); } };
    const heard = [];
    const result = await heardBy(() => odd, (e) => heard.push(e.type));
    assert.equal(result.observerError, undefined);
    const alone = await tp.runAgentLoop({ model: new tp.ScriptedModel([said("ok")]), context: { messages: [userMsg("go")] }, onEvent: () => odd });
    assert.equal(alone.observerError, undefined, "onEvent alone: the same");
    assert.equal((await heardBy(() => odd)).observerError, undefined, "one listener: the same");
    assert.equal(heard.at(-1), "turn_end");
    const thenable = { then: (resolve) => setTimeout(() => (heard.push("thenable settled"), resolve()), 0) };
    await heardBy((e) => (e.type === "turn_end" ? thenable : undefined), (e) => heard.push(e.type));
    assert.deepEqual(heard.slice(-2), ["turn_end", "thenable settled"], "a thenable is awaited before the run ends");
  });
});

describe("sessions", () => {
  test("toJSONL / fromJSONL: a restored paused conversation is paused on the same calls and resumes", T, async () => {
    const script = [batch(toolCall("c1", "delete", { path: "a" }), toolCall("c2", "read", {})), said("done")];
    const { agent } = agentWith(script);
    await agent.prompt("clean up");
    const saved = agent.toJSONL();
    assert.equal(saved, tp.toJSONL(agent.messages));
    const ran = [];
    const restored = tp.Agent.fromJSONL(saved, { model: new tp.ScriptedModel(script.slice(1)), tools: registry(ran), now: () => 500 });
    assert.deepEqual(restored.messages, agent.messages);
    assert.deepEqual(restored.pending, agent.pending);
    await assert.rejects(restored.prompt("hi"), /paused/);
    const done = await restored.resume({ c1: { approve: true } });
    assert.equal(done.reason, "stop");
    assert.deepEqual(ran, ["c1", "c2"]);

    // The same as the conversation that never stopped.
    const whole = agentWith(script).agent;
    await whole.prompt("clean up");
    await whole.resume({ c1: { approve: true } });
    assert.deepEqual(restored.messages.map(({ timestamp, ...m }) => m), whole.messages.map(({ timestamp, ...m }) => m));
  });

  test("a restored conversation that is whole starts idle; a bad JSONL line or an unanswered call elsewhere is a TypeError", T, async () => {
    const model = new tp.ScriptedModel([said("welcome back")]);
    const idle = tp.Agent.fromJSONL(tp.toJSONL([userMsg("hi"), said("hello")]), { model });
    assert.equal(idle.pending, undefined);
    assert.equal((await idle.prompt("again")).reason, "stop");
    assert.throws(() => tp.Agent.fromJSONL('{"role":"user"}\n', { model }), { name: "TypeError", message: /^line 1: message\.content is missing/ });
    const broken = tp.toJSONL([userMsg("go"), batch(toolCall("c1", "read", {})), userMsg("well?")]);
    assert.throws(() => tp.Agent.fromJSONL(broken, { model }), { name: "TypeError", message: /^line 2: tool call "c1" has no result/ });
  });

  test("a restored paused conversation can be aborted instead, and goes on", T, async () => {
    const saved = tp.toJSONL([userMsg("go"), batch(toolCall("c1", "delete", {}))]);
    const agent = tp.Agent.fromJSONL(saved, { model: new tp.ScriptedModel([said("ok")]), tools: registry([]), now: () => 9 });
    assert.deepEqual(agent.pending.map((p) => [p.toolCallId, p.needsApproval]), [["c1", true]]);
    agent.abort();
    assert.equal(agent.messages[2].details.reason, "interrupted");
    assert.equal((await agent.prompt("and now?")).reason, "stop");
  });
});

describe("queues (steer, followUp)", () => {
  test("steer and followUp while idle wait for the next prompt, which takes them at SPEC §7's points (a string is a user message)", T, async () => {
    const { agent, model } = agentWith([said("first"), said("second"), said("third")]);
    agent.steer("also this");
    agent.followUp(userMsg("and after that"));
    assert.equal(model.requests.length, 0, "nothing runs until a prompt");
    const result = await agent.prompt("hi");
    assert.equal(result.reason, "stop");
    assert.deepEqual(result.messages.map((m) => (m.role === "user" ? m.content : m.content[0].text)), ["hi", "first", "also this", "second", "and after that", "third"]);
  });

  test("steer while running reaches the run after its batch", T, async () => {
    const gates = { w1: gate() };
    const { agent, log } = agentWith([batch(toolCall("w1", "wait", {})), said("done")], { gates });
    const running = agent.prompt("go");
    await log.when((e) => e.type === "tool_start");
    agent.steer(userMsg("stop after this"));
    gates.w1.open();
    const result = await running;
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult", "user", "assistant"]);
    assert.equal(result.messages[3].content, "stop after this");
    assert.ok(log.events.some((e) => e.type === "queued_message" && e.queue === "steering"));
  });

  test("followUp while running is taken when the model would stop", T, async () => {
    const gates = { w1: gate() };
    const { agent, log } = agentWith([batch(toolCall("w1", "wait", {})), said("done"), said("and that too")], { gates });
    const running = agent.prompt("go");
    await log.when((e) => e.type === "tool_start");
    agent.followUp(userMsg("one more thing"));
    gates.w1.open();
    const result = await running;
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant", "user", "assistant"]);
    assert.ok(log.events.some((e) => e.type === "queued_message" && e.queue === "followUp"));
  });

  test("a queued message of a custom role is kept in the transcript and never sent to the model", T, async () => {
    const { agent, model, log } = agentWith([said("first"), said("second"), said("third")], { customRoles: ["note"] });
    const note = { role: "note", text: "the user is away", timestamp: 2 };
    agent.steer(note);
    agent.followUp(userMsg("are you there?"));
    const result = await agent.prompt("hi");
    assert.equal(result.reason, "stop");
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "note", "assistant", "user", "assistant"]);
    assert.deepEqual(result.messages[2], note);
    assert.ok(deeplyFrozen(agent.messages) && !Object.isFrozen(note), "the agent's copy is frozen, the caller's object is not");
    assert.deepEqual(model.requests.map((r) => r.messages.map((m) => m.role).join()), ["user", "user,assistant", "user,assistant,assistant,user"], "the note is never sent");
    assert.deepEqual(log.events.filter((e) => e.type === "queued_message").map((e) => [e.queue, e.message.role]), [["steering", "note"], ["followUp", "user"]]);
    assert.equal(tp.Agent.fromJSONL(agent.toJSONL(), { model, customRoles: ["note"] }).messages[2].role, "note", "and it survives a session");
  });

  test("reset forgets the queued messages", T, async () => {
    const { agent, model } = agentWith([said("only this")]);
    agent.steer(userMsg("forgotten"));
    agent.reset();
    await agent.prompt("hi");
    assert.equal(model.requests.length, 1);
    assert.deepEqual(agent.messages.map((m) => m.role), ["user", "assistant"]);
  });
});
