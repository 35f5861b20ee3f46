// SPEC §7 (loop control) and §10 (frozen objects) through the installed package: the hooks and queues as JS
// functions, how calls run, real setTimeout-driven timeouts, custom roles, and what a hook, observer or model
// can and cannot change. Each test fails when the bridge breaks its rule (the rules themselves are the
// core's, tested natively in tests/loop_control.rs).
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { loadTinyPi } from "./app-fixture.mjs";
import { assistantMsg, eventLog, gate, jsModel, label, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPi();
});

const T = { timeout: 20_000 };

/** A registry of tools that answer `<name>:<args>`, with a log of the calls they ran. */
function registry(names = ["echo"], { log = [], spec = {} } = {}) {
  const tools = new tp.ToolRegistry();
  for (const name of names) {
    tools.register({
      name,
      parameters: { type: "object" },
      ...spec[name],
      execute: spec[name]?.execute ?? (async (args, ctx) => {
        log.push({ name, args, signal: ctx.signal });
        return { content: [text(`${name}:${JSON.stringify(args)}`)] };
      }),
    });
  }
  return tools;
}

const useTools = (...calls) => assistantMsg(calls, "toolUse");
const stop = (t = "done") => assistantMsg([text(t)], "stop");
const results = (messages) => messages.filter((m) => m.role === "toolResult");
const texts = (messages) => results(messages).map((r) => r.content.map((c) => c.text).join(""));

/** Whether `value` and everything reachable from it is frozen. */
function deeplyFrozen(value) {
  if (typeof value !== "object" || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(deeplyFrozen);
}

describe("beforeToolCall", () => {
  test("blocks by its answer or its throw, in call order, with (call, ctx); a blocked call never runs", T, async () => {
    const calls = [toolCall("a", "echo", { n: 1 }), toolCall("b", "echo", { n: 2 }), toolCall("c", "echo", { n: 3 }), toolCall("d", "echo", { n: 4 })];
    const asked = useTools(...calls);
    const model = new tp.ScriptedModel([asked, stop()]);
    const log = [];
    const seen = [];
    const events = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model,
      tools: registry(["echo"], { log }),
      onEvent: (e) => events.push(e),
      beforeToolCall: async (call, ctx) => {
        seen.push({ call, ctx });
        if (call.id === "a") return { block: true, reason: "not a" };
        if (call.id === "b") return undefined;
        if (call.id === "c") throw new Error("policy service down");
        return { block: false };
      },
    });
    assert.deepEqual(seen.map((s) => s.call.id), ["a", "b", "c", "d"]);
    assert.deepEqual(log.map((l) => l.args.n), [2, 4], "blocked calls never run");
    assert.deepEqual(texts(result.messages), ["not a", 'echo:{"n":2}', "beforeToolCall failed: policy service down", 'echo:{"n":4}']);
    const [a, , c] = results(result.messages);
    assert.deepEqual([a.details, a.isError, c.details, c.isError], [{ skipped: true, reason: "blocked" }, true, { skipped: true, reason: "blocked" }, true]);
    assert.deepEqual(events.map(label).filter((l) => l.startsWith("tool_")), ["tool_skipped", "tool_skipped", "tool_start", "tool_start", "tool_end", "tool_end"]);
    // The hook's arguments: the call as the events carry it, and a frozen context.
    const { call, ctx } = seen[1];
    assert.equal(call, events.find((e) => e.type === "tool_start").call, "the same object tool_start carries");
    assert.deepEqual(call, calls[1]);
    assert.ok(Object.isFrozen(ctx) && deeplyFrozen(call));
    assert.equal(ctx.step, 1);
    assert.ok(ctx.signal instanceof AbortSignal && !ctx.signal.aborted, "a signal, even without the caller's");
    assert.equal(seen[3].ctx.signal, ctx.signal, "one never-aborting signal per run");
    assert.ok(Object.isFrozen(ctx.messages) && deeplyFrozen(ctx.messages));
    assert.deepEqual(ctx.messages.map((m) => m.role), ["user", "assistant"], "the transcript so far");
    assert.equal(ctx.messages[1], result.messages[1], "the transcript's own objects");
    assert.equal(seen[0].ctx.messages, ctx.messages, "one frozen view for the whole batch");
    assert.ok(tp.validateTranscript(result.messages).ok);
  });

  test("an answer of the wrong shape counts as a throw, naming the field; the run and the instance go on", T, async () => {
    const answers = {
      a: { block: "yes" },
      b: { block: true, reason: 42 },
      c: "block",
      d: {},
      e: { block: true, get reason() { throw new Error("getter exploded"); } },
    };
    const ids = Object.keys(answers);
    const model = new tp.ScriptedModel([useTools(...ids.map((id) => toolCall(id, "echo"))), stop()]);
    const log = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model,
      tools: registry(["echo"], { log }),
      beforeToolCall: (call) => answers[call.id],
    });
    assert.equal(result.reason, "stop");
    assert.equal(log.length, 0, "none of them runs");
    assert.deepEqual(texts(result.messages), [
      'beforeToolCall failed: returned block must be true or false (got string "yes")',
      "beforeToolCall failed: returned reason must be a string (got 42)",
      'beforeToolCall failed: returned string "block"; expected nothing or { block: true, reason? }',
      "beforeToolCall failed: returned block must be true or false (got undefined)",
      "beforeToolCall failed: returned reason: getter exploded",
    ]);
  });

  test("is not asked about a call to an unknown tool or with arguments that fail the schema", T, async () => {
    const tools = registry(["echo"], { spec: { echo: { parameters: { type: "object", required: ["n"] } } } });
    const model = new tp.ScriptedModel([useTools(toolCall("u", "nope"), toolCall("bad", "echo", {}), toolCall("ok", "echo", { n: 1 })), stop()]);
    const asked = [];
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, tools, beforeToolCall: (call) => void asked.push(call.id) });
    assert.deepEqual(asked, ["ok"]);
    assert.deepEqual(results(result.messages).map((r) => r.isError), [true, true, false]);
  });

  test("a run that starts with unanswered calls (SPEC §8) shows the hooks and tool_start the transcript's own blocks", T, async () => {
    const calls = [toolCall("a", "echo"), toolCall("b", "echo")];
    const seen = [];
    const events = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go"), useTools(...calls)] },
      model: new tp.ScriptedModel([stop()]),
      tools: registry(),
      onEvent: (e) => events.push(e),
      beforeToolCall: (call) => void seen.push(call),
    });
    assert.equal(result.reason, "stop");
    const blocks = result.messages[1].content;
    assert.deepEqual(seen.map((c) => c.id), ["a", "b"]);
    seen.forEach((call, i) => assert.equal(call, blocks[i], `call ${i} is the transcript's block`));
    events.filter((e) => e.type === "tool_start").forEach((e, i) => assert.equal(e.call, blocks[i]));
  });

  test("gets the caller's signal when the run has one", T, async () => {
    const controller = new AbortController();
    let signal;
    await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([useTools(toolCall("a", "echo")), stop()]),
      tools: registry(),
      signal: controller.signal,
      beforeToolCall: (_call, ctx) => void (signal = ctx.signal),
    });
    assert.equal(signal, controller.signal);
  });
});

describe("afterToolCall", () => {
  test("replaces content, details and isError before tool_end; the result it saw is the one tool_end carries when it changes nothing", T, async () => {
    const model = new tp.ScriptedModel([useTools(toolCall("a", "echo", { n: 1 }), toolCall("b", "echo", { n: 2 }), toolCall("c", "echo", { n: 3 })), stop()]);
    const seen = [];
    const events = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model,
      tools: registry(),
      onEvent: (e) => events.push(e),
      afterToolCall: async (call, result, ctx) => {
        seen.push({ call, result, ctx });
        if (call.id === "a") return { content: [text("redacted")], details: { redacted: true }, isError: true };
        if (call.id === "b") return null;
        throw new Error("audit log full");
      },
    });
    const ends = Object.fromEntries(events.filter((e) => e.type === "tool_end").map((e) => [e.result.toolCallId, e.result]));
    const [a, b, c] = results(result.messages);
    assert.deepEqual([a.content, a.details, a.isError], [[text("redacted")], { redacted: true }, true]);
    assert.deepEqual(ends.a, a, "tool_end carries the replaced values");
    assert.equal(seen[0].result.content[0].text, 'echo:{"n":1}', "the hook saw the tool's result");
    assert.notEqual(ends.a, seen[0].result);
    assert.equal(ends.b, seen[1].result, "unchanged: the very object the hook saw");
    assert.equal(b, seen[1].result, "and the transcript's");
    assert.deepEqual([c.content, c.isError], [[text("afterToolCall failed: audit log full")], true]);
    for (const { call, result, ctx } of seen) {
      assert.ok(deeplyFrozen(call) && deeplyFrozen(result) && Object.isFrozen(ctx));
      assert.equal(result.toolCallId, call.id);
      assert.equal(call, events.find((e) => e.type === "tool_start" && e.call.id === call.id).call, "the call tool_start carries");
      assert.equal(ctx.step, 1);
      assert.deepEqual(ctx.messages.map((m) => m.role), ["user", "assistant"], "a batch's results are not in it yet");
    }
    assert.equal(result.reason, "stop");
  });

  test("an answer of the wrong shape makes an error result naming the field", T, async () => {
    const answers = { a: { isError: "yes" }, b: { content: "text" }, c: { terminate: 1 }, d: 7 };
    const ids = Object.keys(answers);
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([useTools(...ids.map((id) => toolCall(id, "echo"))), stop()]),
      tools: registry(),
      afterToolCall: (call) => answers[call.id],
    });
    assert.equal(result.reason, "stop");
    const got = texts(result.messages);
    assert.equal(got[0], 'afterToolCall failed: returned isError must be a boolean (got string "yes")');
    assert.match(got[1], /^afterToolCall failed: returned content must be an array/);
    assert.equal(got[2], "afterToolCall failed: returned terminate must be a boolean (got 1)");
    assert.equal(got[3], "afterToolCall failed: returned 7; expected nothing or { content?, details?, isError?, terminate? }");
    assert.ok(results(result.messages).every((r) => r.isError));
  });
});

describe("terminate", () => {
  for (const via of ["a tool", "executeToolCall", "afterToolCall"]) {
    test(`from ${via}: the run ends after the batch with reason terminated; terminate is not stored`, T, async () => {
      const model = new tp.ScriptedModel([useTools(toolCall("a", "echo"), toolCall("b", "echo")), stop("never")]);
      const tools = registry(["echo"], {
        spec: { echo: { execute: async (_args, ctx) => ({ content: [text(`ran ${ctx.callId}`)], terminate: via === "a tool" && ctx.callId === "a" }) } },
      });
      const result = await tp.runAgentLoop({
        context: { messages: [userMsg("go")] },
        model,
        tools,
        ...(via === "executeToolCall" ? { executeToolCall: async (call) => ({ content: [text(`ran ${call.id}`)], terminate: call.id === "b" }) } : {}),
        ...(via === "afterToolCall" ? { afterToolCall: (call) => (call.id === "b" ? { terminate: true } : undefined) } : {}),
      });
      assert.deepEqual([result.reason, result.steps, model.requests.length], ["terminated", 1, 1]);
      assert.deepEqual(texts(result.messages), ["ran a", "ran b"], "both calls of the batch are answered");
      assert.ok(results(result.messages).every((r) => !("terminate" in r)));
    });
  }
});

describe("execution modes", () => {
  /** Two tools that wait for their gates; the log says when each starts and ends. */
  function gatedTools(spec = {}) {
    const gates = { a: gate(), b: gate() };
    const log = [];
    const tools = registry(["slow", "fast"], {
      spec: Object.fromEntries(["slow", "fast"].map((name) => [name, { ...spec[name], execute: async (_args, ctx) => {
        log.push(`start:${ctx.callId}`);
        await gates[ctx.callId].promise;
        log.push(`end:${ctx.callId}`);
        return { content: [text(ctx.callId)] };
      } }])),
    });
    return { gates, log, tools };
  }

  for (const how of ["toolExecution: sequential", "a tool registered executionMode: sequential"]) {
    test(`${how}: one call at a time, in call order, each tool_end before the next tool_start`, T, async () => {
      const { gates, log, tools } = gatedTools(how.startsWith("a tool") ? { fast: { executionMode: "sequential" } } : {});
      const model = new tp.ScriptedModel([useTools(toolCall("a", "slow"), toolCall("b", "fast")), stop()]);
      const events = eventLog();
      const run = tp.runAgentLoop({
        context: { messages: [userMsg("go")] },
        model,
        tools,
        onEvent: events.push,
        ...(how.startsWith("toolExecution") ? { toolExecution: "sequential" } : {}),
      });
      await events.when((e) => e.type === "tool_start");
      gates.b.open(); // b may not run before a has ended, whatever its gate says
      gates.a.open();
      const result = await run;
      assert.deepEqual(log, ["start:a", "end:a", "start:b", "end:b"]);
      assert.deepEqual(events.events.map(label).filter((l) => l.startsWith("tool_")), ["tool_start", "tool_end", "tool_start", "tool_end"]);
      assert.deepEqual(texts(result.messages), ["a", "b"]);
    });
  }

  test("the default runs a batch at once", T, async () => {
    const { gates, log, tools } = gatedTools();
    const model = new tp.ScriptedModel([useTools(toolCall("a", "slow"), toolCall("b", "fast")), stop()]);
    const events = eventLog();
    const run = tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, tools, onEvent: events.push, toolExecution: "parallel" });
    await events.when((e) => e.type === "tool_start" && e.call.id === "b");
    gates.b.open();
    await events.when((e) => e.type === "tool_end");
    gates.a.open();
    await run;
    assert.deepEqual(log, ["start:a", "start:b", "end:b", "end:a"]);
  });

  test("a batch runs on while an app's callback for one call awaits: a hook or an observer may wait for a sibling call", T, async () => {
    for (const where of ["afterToolCall", "onEvent"]) {
      const paid = gate();
      const log = [];
      const tools = registry(["fast", "pay"], {
        spec: {
          fast: { execute: () => ({ content: [text("fast")] }) },
          pay: { timeoutMs: 60_000, execute: async () => { log.push("pay ran"); paid.open(); return { content: [text("charged")] }; } },
        },
      });
      // The callback for fast (which answers at once) waits until pay's tool has run: pay runs while it waits.
      const waitForPay = async (id) => { if (id === "fast") { log.push(`${where} waits`); await paid.promise; } };
      const model = new tp.ScriptedModel([useTools(toolCall("f", "fast"), toolCall("p", "pay")), stop()]);
      const result = await tp.runAgentLoop({
        context: { messages: [userMsg("go")] },
        model,
        tools,
        ...(where === "afterToolCall"
          ? { afterToolCall: (call) => waitForPay(call.name) }
          : { onEvent: (e) => e.type === "tool_end" ? waitForPay(e.result.toolName) : undefined }),
      });
      assert.equal(result.reason, "stop", where);
      assert.deepEqual(log.toSorted(), [`${where} waits`, "pay ran"].toSorted(), where);
      assert.deepEqual(texts(result.messages), ["fast", "charged"], where);
    }
  });
});

describe("timeouts (real setTimeout)", () => {
  test("a call that ended in time keeps its result while another call's afterToolCall outlasts its timeout", T, async () => {
    const tools = registry(["fast", "pay"], {
      spec: {
        fast: { execute: () => ({ content: [text("fast")] }) },
        pay: { timeoutMs: 20, execute: async () => ({ content: [text("charged")] }) },
      },
    });
    // fast's hook ends only after a timer set later than pay's 20 ms one: pay's timer has fired by then.
    const outlast = () => new Promise((resolve) => setTimeout(resolve, 40));
    const model = new tp.ScriptedModel([useTools(toolCall("f", "fast"), toolCall("p", "pay")), stop()]);
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model,
      tools,
      afterToolCall: (call) => (call.name === "fast" ? outlast() : undefined),
    });
    assert.deepEqual(texts(result.messages), ["fast", "charged"]);
    assert.equal(results(result.messages)[1].details, undefined, "not answered as timed out");
  });

  /** A tool that settles only when its signal aborts (and then, late, with a result that must be ignored). */
  function hangingTool(name, started, spec = {}) {
    return {
      name,
      ...spec,
      execute: (_args, ctx) =>
        new Promise((resolve) => {
          started.push(ctx);
          ctx.signal.addEventListener("abort", () => {
            ctx.reportProgress([text("too late")]);
            resolve({ content: [text("late answer")] });
          });
        }),
    };
  }

  test("a slow call is answered as timed out, its signal aborts, what it does later is ignored; its sibling is kept", T, async () => {
    const started = [];
    const tools = new tp.ToolRegistry();
    tools.register(hangingTool("hang", started));
    tools.register({ name: "quick", execute: async () => ({ content: [text("quick")] }) });
    const events = [];
    const seenAfter = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([useTools(toolCall("h", "hang"), toolCall("q", "quick")), stop()]),
      tools,
      toolTimeoutMs: 25,
      onEvent: (e) => events.push(e),
      afterToolCall: (call, result, ctx) => void seenAfter.push({ id: call.id, aborted: ctx.signal.aborted }),
    });
    assert.equal(result.reason, "stop");
    const [h, q] = results(result.messages);
    assert.deepEqual([h.content, h.details, h.isError], [[text("Tool call timed out after 25 ms.")], { timedOut: true, timeoutMs: 25 }, true]);
    assert.deepEqual([q.content, q.isError], [[text("quick")], false]);
    assert.ok(started[0].signal instanceof AbortSignal && started[0].signal.aborted, "the call's own signal aborted");
    assert.ok(!events.some((e) => e.type === "tool_progress"), "progress after the timeout is dropped");
    assert.deepEqual(seenAfter.sort((x, y) => x.id.localeCompare(y.id)), [{ id: "h", aborted: true }, { id: "q", aborted: false }]);
  });

  test("a tool's own timeoutMs wins over toolTimeoutMs", T, async () => {
    const started = [];
    const tools = new tp.ToolRegistry();
    tools.register(hangingTool("hang", started, { timeoutMs: 10 }));
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([useTools(toolCall("h", "hang")), stop()]),
      tools,
      toolTimeoutMs: 60_000,
    });
    assert.deepEqual(results(result.messages)[0].details, { timedOut: true, timeoutMs: 10 });
  });

  test("a sequential batch held by a timed-out call that never settles ends when the run is aborted later", T, async () => {
    const ran = [];
    const tools = new tp.ToolRegistry();
    tools.register({
      name: "t",
      executionMode: "sequential",
      timeoutMs: 10,
      execute: (_args, { callId }) => (ran.push(callId), new Promise(() => {})),
    });
    const controller = new AbortController();
    let timedOut;
    const answered = new Promise((resolve) => (timedOut = resolve));
    const events = [];
    const run = tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([useTools(toolCall("a", "t"), toolCall("b", "t")), stop()]),
      tools,
      signal: controller.signal,
      onEvent: (e) => {
        events.push(e.type === "tool_end" || e.type === "tool_skipped" ? `${e.type}:${e.result.toolCallId}` : e.type);
        if (e.type === "tool_end") timedOut();
      },
    });
    await answered;
    // Every microtask has run by the next macrotask: the batch is waiting for `a` to settle, not at a checkpoint.
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(!events.includes("tool_skipped:b"), "b waits for a");
    controller.abort();
    const result = await run;
    assert.equal(result.reason, "aborted");
    assert.deepEqual(ran, ["a"], "b never starts");
    assert.deepEqual(events.filter((e) => e.startsWith("tool_")), ["tool_start", "tool_end:a", "tool_skipped:b"]);
    assert.equal(tp.validateTranscript(result.messages).ok, true);
  });

  test("an abort during a retry's wait ends the run then, not when the wait would have ended", T, async () => {
    const controller = new AbortController();
    let announced;
    const retrying = new Promise((resolve) => (announced = resolve));
    const failed = { role: "assistant", content: [], stopReason: "error", errorMessage: "overloaded", timestamp: 2 };
    const model = jsModel((_request, index) => (index === 0 ? failed : stop()));
    const run = tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model,
      signal: controller.signal,
      retry: { maxRetries: 1, baseDelayMs: 600_000, maxDelayMs: 600_000 },
      onEvent: (e) => e.type === "retry" && announced(),
    });
    await retrying;
    // Every microtask has run by the next macrotask: the loop is waiting on the retry's timer.
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    const result = await run;
    assert.equal(result.reason, "aborted");
    assert.equal(model.requests.length, 1, "the request is not made again");
  });

  test("a retry streams the very request object it retries: after a compaction, and after prepareRequest replaced the messages", T, async () => {
    const failed = { role: "assistant", content: [], stopReason: "error", errorMessage: "503", timestamp: 2 };
    const long = Array.from({ length: 6 }, (_, i) => [userMsg(`u${i} ${"x".repeat(200)}`), assistantMsg([text(`a${i}`)], "stop")]).flat();
    const compacted = jsModel((_request, index) => (index === 0 ? failed : stop()));
    const first = await tp.runAgentLoop({
      context: { messages: [...long, userMsg("go")] },
      model: compacted,
      retry: { maxRetries: 1, baseDelayMs: 0 },
      compaction: { maxContextTokens: 200, summarize: () => "summary" },
    });
    assert.equal(first.retries, 1);
    assert.ok(first.messages.some((m) => m.role === "compaction"), "the request was compacted");
    assert.equal(compacted.requests[0], compacted.requests[1]);

    const patched = jsModel((_request, index) => (index === 0 ? failed : stop()));
    const second = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: patched,
      retry: { maxRetries: 1, baseDelayMs: 0 },
      prepareRequest: (request) => ({ messages: [...request.messages] }),
    });
    assert.equal(second.retries, 1);
    assert.equal(patched.requests[0], patched.requests[1]);
  });

  test("a call that ends in time clears its timer; its signal follows the run's abort", T, async () => {
    const timers = { set: 0, cleared: 0 };
    const [setTimeout_, clearTimeout_] = [globalThis.setTimeout, globalThis.clearTimeout];
    globalThis.setTimeout = (...args) => (timers.set++, setTimeout_(...args));
    globalThis.clearTimeout = (id) => (timers.cleared++, clearTimeout_(id));
    try {
      const controller = new AbortController();
      const started = [];
      const tools = new tp.ToolRegistry();
      tools.register({ name: "quick", execute: async () => ({ content: [text("quick")] }) });
      tools.register(hangingTool("hang", started));
      const events = eventLog();
      const run = tp.runAgentLoop({
        context: { messages: [userMsg("go")] },
        model: new tp.ScriptedModel([useTools(toolCall("q", "quick")), useTools(toolCall("h", "hang")), stop()]),
        tools,
        signal: controller.signal,
        toolTimeoutMs: 60_000,
        onEvent: events.push,
      });
      await events.when((e) => e.type === "tool_start" && e.call.id === "h");
      assert.deepEqual(timers, { set: 2, cleared: 1 }, "q's timer was cleared when q ended");
      assert.notEqual(started[0].signal, controller.signal, "a call with a timeout has its own signal");
      assert.equal(started[0].signal.aborted, false);
      controller.abort();
      const result = await run;
      assert.ok(started[0].signal.aborted, "the run's abort reached the call's own signal");
      assert.deepEqual([result.reason, texts(result.messages)], ["aborted", ["quick", "late answer"]]);
      assert.equal(timers.cleared, 2);
    } finally {
      globalThis.setTimeout = setTimeout_;
      globalThis.clearTimeout = clearTimeout_;
    }
  });
});

describe("prepareRequest", () => {
  test("replaces what the model is sent, never the transcript; sees a frozen request and the upcoming step", T, async () => {
    const model = jsModel((_req, i) => (i === 0 ? useTools(toolCall("a", "echo")) : stop()));
    const seen = [];
    const result = await tp.runAgentLoop({
      context: { systemPrompt: "SYS", messages: [userMsg("go")] },
      model,
      tools: registry(["echo", "other"]),
      prepareRequest: (request, ctx) => {
        seen.push({ request, ctx });
        if (ctx.step === 2) {
          return {
            systemPrompt: "SYS 2",
            messages: [userMsg("only this"), ...request.messages.slice(1)],
            tools: request.tools.filter((t) => t.name === "echo"),
          };
        }
      },
    });
    assert.equal(result.reason, "stop");
    assert.deepEqual(seen.map((s) => s.ctx.step), [1, 2]);
    const [first, second] = model.requests;
    assert.equal(first.systemPrompt, "SYS");
    assert.deepEqual(first.tools.map((t) => t.name), ["echo", "other"]);
    assert.deepEqual([second.systemPrompt, second.messages[0].content, second.tools.map((t) => t.name)], ["SYS 2", "only this", ["echo"]]);
    assert.deepEqual(second.messages.slice(1), result.messages.slice(1, 3));
    assert.ok(deeplyFrozen(second.messages), "what the hook gave crosses fresh, frozen");
    assert.deepEqual(result.messages[0], userMsg("go"), "the transcript is never changed");
    const { request, ctx } = seen[0];
    assert.ok(Object.isFrozen(request) && deeplyFrozen(request.messages) && Object.isFrozen(request.tools));
    assert.equal(request.messages, ctx.messages, "without custom roles, the request's messages are the transcript");
    assert.equal(first.messages, request.messages, "and the model gets that same frozen array");
    assert.equal(request.systemPrompt, "SYS");
  });

  test("a throw, an answer of the wrong shape, messages that break the pairing or that a model is never sent end the run before the request", T, async () => {
    const cases = [
      [() => { throw new Error("no budget"); }, "prepareRequest failed: no budget"],
      [() => ({ systemPrompt: 5 }), "prepareRequest failed: returned systemPrompt must be a string (got 5)"],
      [() => ({ messages: [{ role: "user", content: 5 }] }), /^prepareRequest failed: returned messages\[0\]\.content/],
      [() => ({ tools: {} }), /^prepareRequest failed: returned tools must be an array of tool definitions/],
      [(request) => ({ messages: request.messages.slice(0, 2) }), /^prepareRequest returned messages that break the pairing: missing_result for tool call "a"/],
      [(request) => ({ messages: [...request.messages, { role: "compaction", summary: "s", firstKeptIndex: 0, timestamp: 1 }] }),
        'prepareRequest returned messages[3] with role "compaction": a compaction entry, which is never sent (its summary is)'],
      [(request) => ({ messages: [request.messages[0], { role: "note", text: "n" }, ...request.messages.slice(1)] }),
        'prepareRequest returned messages[1] with role "note": a custom-role message, which is sent only once converted (to a user message, say)'],
    ];
    for (const [hook, error] of cases) {
      const model = jsModel((_req, i) => (i === 0 ? useTools(toolCall("a", "echo")) : stop()));
      const result = await tp.runAgentLoop({
        context: { messages: [userMsg("go")] },
        model,
        tools: registry(),
        customRoles: ["note"],
        prepareRequest: (request, ctx) => (ctx.step === 2 ? hook(request) : undefined),
      });
      assert.equal(result.reason, "error");
      if (typeof error === "string") assert.equal(result.error, error);
      else assert.match(result.error, error);
      assert.deepEqual([result.steps, model.requests.length], [1, 1], "that request is not made");
    }
  });
});

describe("queues", () => {
  test("steering after a batch and follow-up after stop: appended, announced by queued_message, sent next", T, async () => {
    const model = jsModel((_req, i) => [useTools(toolCall("a", "echo")), stop("first"), stop("second")][i]);
    const steering = [[userMsg("steer", 5)], []];
    const followUp = [Promise.resolve([userMsg("more", 6)]), undefined];
    const asked = [];
    const events = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model,
      tools: registry(),
      onEvent: (e) => events.push(e),
      getSteeringMessages: () => (asked.push("steering"), steering.shift() ?? []),
      getFollowUpMessages: () => (asked.push("followUp"), followUp.shift()),
    });
    assert.equal(result.reason, "stop");
    assert.deepEqual(asked, ["steering", "steering", "followUp", "steering", "followUp"]);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult", "user", "assistant", "user", "assistant"]);
    const queued = events.filter((e) => e.type === "queued_message");
    assert.deepEqual(queued.map((e) => [e.queue, e.message.content]), [["steering", "steer"], ["followUp", "more"]]);
    assert.equal(queued[0].message, result.messages[3], "the event's object is the transcript's");
    assert.ok(deeplyFrozen(queued[0].message));
    assert.equal(model.requests[1].messages[3], result.messages[3], "and the next request's");
    assert.deepEqual(model.requests.map((r) => r.messages.length), [1, 4, 6]);
  });

  test("a queue that throws or gives a message it may not end the run with error, nothing of it appended", T, async () => {
    const cases = [
      [() => { throw new Error("queue down"); }, "getFollowUpMessages failed: queue down"],
      [() => [userMsg("ok"), stop("an answer")], /^getFollowUpMessages returned a message with role "assistant" \(message 2 of 2\)/],
      [() => [{ role: "user", content: 5 }], /^getFollowUpMessages failed: returned messages\[0\]\.content/],
      [() => "more please", /^getFollowUpMessages failed: returned messages must be an array \(got string\)/],
    ];
    for (const [queue, error] of cases) {
      const result = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: new tp.ScriptedModel([stop()]), getFollowUpMessages: queue });
      assert.equal(result.reason, "error");
      if (typeof error === "string") assert.equal(result.error, error);
      else assert.match(result.error, error);
      assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant"]);
    }
  });

  test("the caller's queued objects are copied, never frozen", T, async () => {
    const mine = userMsg("steer");
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([stop(), stop()]),
      getSteeringMessages: (() => { let once = [mine]; return () => { const out = once; once = []; return out; }; })(),
    });
    assert.ok(!Object.isFrozen(mine));
    assert.deepEqual(result.messages[2], mine);
    assert.notEqual(result.messages[2], mine);
  });
});

describe("customRoles", () => {
  const note = (t) => ({ role: "note", text: t, level: 1 });

  test("custom messages are kept verbatim and never sent unless prepareRequest puts them back", T, async () => {
    const model = jsModel((_req, i) => [useTools(toolCall("a", "echo")), stop("first"), stop("second")][i]);
    const input = [userMsg("go"), note("from the app")];
    const once = (messages) => () => messages.splice(0);
    const events = [];
    const result = await tp.runAgentLoop({
      context: { messages: input },
      model,
      tools: registry(),
      customRoles: ["note"],
      onEvent: (e) => events.push(e),
      getSteeringMessages: once([note("steered"), userMsg("and a user one")]),
      getFollowUpMessages: once([userMsg("last")]),
      prepareRequest: (request, ctx) => {
        if (ctx.step !== 3) return;
        // Put the notes back, converted, for the last request.
        const notes = ctx.messages.filter((m) => m.role === "note").map((m) => userMsg(`[note] ${m.text}`));
        return { messages: [...request.messages, ...notes] };
      },
    });
    assert.equal(result.reason, "stop", result.error);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "note", "assistant", "toolResult", "note", "user", "assistant", "user", "assistant"]);
    assert.deepEqual([result.messages[1], result.messages[4]], [note("from the app"), note("steered")], "verbatim");
    assert.ok(!Object.isFrozen(input[1]), "the caller's objects are never frozen");
    assert.deepEqual(model.requests[0].messages.map((m) => m.role), ["user"]);
    assert.deepEqual(model.requests[1].messages.map((m) => m.role), ["user", "assistant", "toolResult", "user"]);
    assert.equal(model.requests[1].messages[1], result.messages[2], "the transcript's objects, custom ones left out");
    assert.ok(deeplyFrozen(model.requests[1].messages));
    assert.deepEqual(model.requests[2].messages.slice(-3).map((m) => m.content), ["last", "[note] from the app", "[note] steered"], "put back by prepareRequest");
    assert.deepEqual(events.filter((e) => e.type === "queued_message").map((e) => [e.queue, e.message.role]), [["steering", "note"], ["steering", "user"], ["followUp", "user"]]);
    assert.equal(events.find((e) => e.type === "queued_message").message, result.messages[4]);
    assert.ok(tp.validateTranscript(result.messages.filter((m) => m.role !== "note")).ok);
  });

  test("a role not listed is still refused, naming the roles there are", T, async () => {
    await assert.rejects(
      tp.runAgentLoop({ context: { messages: [userMsg("go"), { role: "memo", text: "x" }] }, model: new tp.ScriptedModel([stop()]), customRoles: ["note"] }),
      (e) => e instanceof TypeError && /options\.context\.messages\[1\]\.role must be one of "user", "assistant", "toolResult", "compaction", "note" \(got "memo"\)/.test(e.message),
    );
    await assert.rejects(
      tp.runAgentLoop({ context: { messages: [userMsg("go"), { role: "user", content: 5 }] }, model: new tp.ScriptedModel([stop()]), customRoles: ["note"] }),
      (e) => e instanceof TypeError && /^options\.context\.messages\[1\]\.content/.test(e.message),
    );
  });
});

describe("frozen objects (SPEC §10)", () => {
  test("every message, call and result handed out is deeply frozen; model events and the caller's objects are not", T, async () => {
    const input = [userMsg("go")];
    const model = jsModel((_req, i) => (i === 0 ? useTools(toolCall("a", "echo", { deep: { list: [1] } })) : stop()));
    const events = [];
    const result = await tp.runAgentLoop({ context: { messages: input }, model, tools: registry(), onEvent: (e) => events.push(e) });
    for (const e of events) {
      const payload = e.message ?? e.call ?? e.result;
      if (payload) assert.ok(deeplyFrozen(payload), `${e.type} carries a frozen object`);
    }
    const modelEvents = events.filter((e) => e.type === "model_event").map((e) => e.event);
    assert.ok(modelEvents.filter((e) => e.type !== "done").every((e) => !Object.isFrozen(e)), "model events pass untouched");
    assert.ok(result.messages.every(deeplyFrozen), "result.messages' messages");
    assert.ok(!Object.isFrozen(result.messages), "the result's array is the caller's");
    for (const request of model.requests) assert.ok(deeplyFrozen(request.messages), "each request's own array and its messages");
    assert.ok(!Object.isFrozen(input) && !Object.isFrozen(input[0]), "the caller's input is copied, never frozen");
  });

  test("an observer can no longer change what the next request sees, nor a model what the caller gets", T, async () => {
    const model = jsModel((request, i) => {
      if (i === 1) {
        // A model that tries to edit the transcript it was sent.
        assert.throws(() => request.messages.push(userMsg("injected")), TypeError);
        assert.throws(() => { request.messages[2].content[0].text = "forged by the model"; }, TypeError);
      }
      return i === 0 ? useTools(toolCall("a", "echo", { n: 1 })) : stop();
    });
    const tries = [];
    const attempt = (what, change) => {
      try {
        change();
        tries.push(`${what}: changed`);
      } catch (error) {
        tries.push(`${what}: ${error.constructor.name}`);
        throw error;
      }
    };
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model,
      tools: registry(),
      onEvent: (e) => {
        if (e.type === "tool_end") attempt("result text", () => { e.result.content[0].text = "forged"; });
        if (e.type === "tool_start") attempt("call arguments", () => { e.call.arguments.n = 99; });
      },
    });
    assert.deepEqual(tries, ["call arguments: TypeError", "result text: TypeError"]);
    assert.match(result.observerError, /read.only|not extensible|Cannot assign/);
    assert.equal(model.requests[1].messages[2].content[0].text, 'echo:{"n":1}');
    assert.deepEqual(model.requests[1].messages[1].content[0].arguments, { n: 1 });
    assert.equal(result.messages[2].content[0].text, 'echo:{"n":1}');
    assert.equal(result.messages.length, 4);
  });

  test("the registry's own execute() answers an object the caller may change", T, async () => {
    const r = await registry().execute(toolCall("x", "echo"), {});
    assert.ok(!Object.isFrozen(r));
  });
});

describe("what crosses once (the bridge's shortcuts keep the rules)", () => {
  test("afterToolCall that changes nothing: each call's result is one object, the hook's, tool_end's and the transcript's", T, async () => {
    const ids = ["a", "b", "c"];
    const seen = [];
    const events = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([useTools(...ids.map((id) => toolCall(id, "echo"))), stop()]),
      tools: registry(),
      onEvent: (e) => events.push(e),
      afterToolCall: (call, result, ctx) => void seen.push({ call, result, ctx }),
    });
    const ends = events.filter((e) => e.type === "tool_end").map((e) => e.result);
    assert.equal(seen.length, 3);
    for (const { call, result: shown } of seen) {
      assert.equal(ends.find((r) => r.toolCallId === call.id), shown, `${call.id}: tool_end carries the object the hook saw`);
      assert.equal(result.messages.find((m) => m.role === "toolResult" && m.toolCallId === call.id), shown, `${call.id}: and the transcript holds it`);
    }
  });

  test("a hook's context.messages read after its batch is still the transcript as it was then", T, async () => {
    const contexts = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([useTools(toolCall("a", "echo")), useTools(toolCall("b", "echo")), stop()]),
      tools: registry(),
      beforeToolCall: (_call, ctx) => void contexts.push(ctx),
      prepareRequest: (_request, ctx) => void contexts.push(ctx),
    });
    assert.equal(result.messages.length, 6);
    // Read only now, when the run has ended: each is the transcript at its hook's time.
    const roles = contexts.map((ctx) => ctx.messages.map((m) => m.role).join(","));
    assert.deepEqual(roles, [
      "user", // request 1
      "user,assistant", // batch 1
      "user,assistant,toolResult", // request 2
      "user,assistant,toolResult,assistant", // batch 2
      "user,assistant,toolResult,assistant,toolResult", // request 3
    ]);
    for (const ctx of contexts) assert.ok(Object.isFrozen(ctx) && deeplyFrozen(ctx.messages));
    for (const [i, m] of contexts[4].messages.entries()) assert.equal(m, result.messages[i], "the transcript's own objects");
  });

  test("late-read contexts with custom roles and steering: each the transcript at its hook's call", T, async () => {
    const note = (t) => ({ role: "note", text: t });
    const contexts = [];
    let steered = false;
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go"), note("input")] },
      model: new tp.ScriptedModel([useTools(toolCall("a", "echo")), useTools(toolCall("b", "echo")), stop()]),
      tools: registry(),
      customRoles: ["note"],
      getSteeringMessages: () => (steered ? [] : ((steered = true), [note("steered"), userMsg("also")])),
      beforeToolCall: (_call, ctx) => void contexts.push(ctx),
      prepareRequest: (_request, ctx) => void contexts.push(ctx),
    });
    assert.equal(result.reason, "stop");
    const roles = contexts.map((ctx) => ctx.messages.map((m) => m.role).join(","));
    assert.deepEqual(roles, [
      "user,note",
      "user,note,assistant",
      "user,note,assistant,toolResult,note,user",
      "user,note,assistant,toolResult,note,user,assistant",
      "user,note,assistant,toolResult,note,user,assistant,toolResult",
    ]);
    for (const [i, m] of contexts[4].messages.entries()) assert.equal(m, result.messages[i], "the transcript's own objects");
  });

  test("a final message JSON.stringify refuses ends the run with its error; a toJSON it calls is read once, as data", T, async () => {
    const run = (message) => tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel(() => message) });
    const base = () => ({ role: "assistant", content: [text("x")], stopReason: "stop", timestamp: 1 });
    const cyclic = base();
    cyclic.raw = { parent: cyclic };
    const cases = [
      [{ ...base(), usage: { cost: 10n } }, /BigInt/],
      [{ ...base(), usage: { toJSON() { throw new Error("no usage today"); } } }, /no usage today/],
      [cyclic, /circular/i],
    ];
    for (const [message, error] of cases) {
      const result = await run(message);
      assert.equal(result.reason, "error", String(error));
      assert.match(result.error, error);
    }
    // A toJSON JSON.stringify calls without complaint: the message is what JSON.parse(JSON.stringify(...))
    // makes of it (SPEC §10), the loop's own frozen copy; the model's object is left as it was.
    const dated = { ...base(), createdAt: new Date(0) };
    const result = await run(dated);
    assert.equal(result.reason, "stop");
    assert.deepEqual(result.messages[1], JSON.parse(JSON.stringify(dated)));
    assert.notEqual(result.messages[1], dated);
    assert.ok(Object.isFrozen(result.messages[1]) && !Object.isFrozen(dated));
    assert.ok(tp.validateTranscript(result.messages).ok, "what the run kept can be checked and sent again");
  });

  test("a hook cannot redefine what later contexts read: the context's prototype is frozen too", T, async () => {
    const contexts = [];
    await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([useTools(toolCall("a", "echo"), toolCall("b", "echo")), stop()]),
      tools: registry(),
      beforeToolCall: (_call, ctx) => {
        contexts.push(ctx);
        if (contexts.length === 1) {
          assert.throws(() => Object.defineProperty(Object.getPrototypeOf(ctx), "messages", { get: () => [] }), TypeError);
        }
      },
    });
    assert.deepEqual(contexts[1].messages.map((m) => m.role), ["user", "assistant"]);
  });

  test("the tool definitions a request offers are frozen: a model cannot change what later requests offer", T, async () => {
    const attempts = [];
    const model = jsModel((request, i) => {
      try {
        request.tools[0].description = "changed by the model";
      } catch (error) {
        attempts.push(error.constructor.name);
      }
      return i === 0 ? useTools(toolCall("a", "echo")) : stop();
    });
    const tools = new tp.ToolRegistry();
    tools.register({ name: "echo", description: "echoes", parameters: { type: "object" }, execute: async () => ({ content: [text("ok")] }) });
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, tools, prepareRequest: (request) => void attempts.push(Object.isFrozen(request.tools[0])) });
    assert.equal(result.reason, "stop");
    assert.deepEqual(attempts, [true, "TypeError", true, "TypeError"]);
    assert.deepEqual(model.requests.map((r) => r.tools[0].description), ["echoes", "echoes"]);
  });

  test("a system prompt prepareRequest replaces for one request is the context's again on the next", T, async () => {
    const model = jsModel((_req, i) => (i < 3 ? useTools(toolCall(`c${i}`, "echo")) : stop()));
    const shown = [];
    await tp.runAgentLoop({
      context: { systemPrompt: "SYS", messages: [userMsg("go")] },
      model,
      tools: registry(),
      prepareRequest: (request, ctx) => {
        shown.push(request.systemPrompt);
        if (ctx.step === 2) return { systemPrompt: "ONE-OFF" };
        if (ctx.step === 3) return { systemPrompt: "" };
      },
    });
    assert.deepEqual(model.requests.map((r) => r.systemPrompt), ["SYS", "ONE-OFF", "", "SYS"]);
    assert.deepEqual(shown, ["SYS", "SYS", "SYS", "SYS"], "the hook is shown the context's prompt");
  });

  test("the model's final message is read from its own enumerable fields only, as JSON.stringify writes them", T, async () => {
    // The final message is read as the JSON JSON.stringify writes of it: a field it would not write
    // (inherited, or not enumerable) is not there.
    const run = (message) => tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model: jsModel(() => message) });
    const hidden = { role: "assistant", content: [text("x")], timestamp: 3 };
    Object.defineProperty(hidden, "stopReason", { value: "stop", enumerable: false });
    const lacking = { role: "assistant", content: [text("x")], timestamp: 4 };
    Object.prototype.stopReason = "stop";
    let inherited;
    try {
      inherited = await run(lacking);
    } finally {
      delete Object.prototype.stopReason;
    }
    for (const result of [await run(hidden), inherited]) {
      assert.equal(result.reason, "error");
      assert.match(result.error, /stopReason/);
    }
    // A well-formed one is read whole, provider fields included, into the loop's own frozen copy.
    const fine = { role: "assistant", content: [text("done")], stopReason: "stop", timestamp: 5, usage: { input: 1 } };
    const result = await run(fine);
    assert.equal(result.reason, "stop");
    assert.deepEqual(result.messages[1], fine);
    assert.ok(Object.isFrozen(result.messages[1].usage));
  });

  test("a tool's arguments: its own copy of its call's, equal to the JSON the core read, whichever way the call was made", T, async () => {
    // The bridge hands a tool a copy of its call object's arguments (not their JSON from wasm): the copy must
    // be what JSON.parse(JSON.stringify(arguments)) makes, and the tool's to change.
    const odd = { n: -0, nan: NaN, inf: -Infinity, skip: undefined, f() {}, list: [undefined, () => 1, 2, -0], deep: { a: [{ b: "c" }] }, 10: "ten", 2: "two" };
    const dated = { when: new Date(0), also: 1 };
    const own = JSON.parse('{"__proto__": {"x": 1}, "y": 2}');
    const calls = [toolCall("plain", "echo", { path: "/a", n: 1 }), toolCall("odd", "echo", odd), toolCall("dated", "echo", dated), toolCall("own", "echo", own)];
    const noArgs = { type: "toolCall", id: "none", name: "echo" };
    const got = {};
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: jsModel((_request, i) => (i === 0 ? useTools(...calls, noArgs) : stop())),
      tools: registry(["echo"], {
        spec: {
          echo: {
            execute: (args, ctx) => {
              got[ctx.callId] = args;
              args.changed = true; // the tool's own copy: no TypeError, and the call is untouched
              return { content: [text("ok")] };
            },
          },
        },
      }),
    });
    assert.equal(result.reason, "stop");
    for (const call of [...calls, noArgs]) {
      const expected = call.arguments === undefined ? {} : JSON.parse(JSON.stringify(call.arguments));
      assert.deepEqual(got[call.id], { ...expected, changed: true }, call.id);
      assert.equal(Object.getPrototypeOf(got[call.id]), Object.prototype, call.id);
    }
    assert.ok(Object.is(got.odd.n, 0), "-0 is written 0");
    assert.ok(Object.hasOwn(got.own, "__proto__") && got.own.x === undefined, "an own __proto__ key stays an own key");
    const asked = result.messages[1].content;
    assert.ok(asked.every((block) => Object.isFrozen(block) && block.arguments?.changed === undefined), "the calls keep their arguments");
  });

  // A final message run once as the model's answer, and what the core read of it: the reason, the error, the
  // steps, the calls handed to the executor and the transcript (the two tests below compare two readings).
  class Message {}
  const observe = async (message) => {
    const seen = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: jsModel((_request, i) => (i === 0 ? message : stop())),
      executeToolCall: (c) => (seen.push(c), { content: [text("ok")] }),
      now: () => 7,
    });
    let messages;
    try {
      messages = JSON.stringify(result.messages);
    } catch (error) {
      messages = `unwritable: ${error.message}`;
    }
    return { reason: result.reason, error: result.error, steps: result.steps, seen: JSON.stringify(seen), messages };
  };

  test("a final message whose content getter starts a run each time it is read: both runs end, nothing traps", T, async () => {
    // Reading the message (to adopt it, to find a call's object for its tool) runs the getter inside the
    // outer run's poll; the nested run sets the mirror scope of its own then.
    const nested = [];
    const content = [text("x"), toolCall("a", "echo", { n: 1 })];
    const message = { role: "assistant", stopReason: "toolUse", timestamp: 2 };
    Object.defineProperty(message, "content", {
      enumerable: true,
      get() {
        try {
          nested.push(tp.runAgentLoop({ context: { messages: [userMsg("nested")] }, model: new tp.ScriptedModel([stop("n")]) }));
        } catch (error) {
          nested.push(Promise.resolve({ reason: `threw ${error}` }));
        }
        return content;
      },
    });
    const seen = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: jsModel((_request, i) => (i === 0 ? message : stop())),
      tools: registry(["echo"], { spec: { echo: { execute: (args) => (seen.push(args), { content: [text("ok")] }) } } }),
    });
    assert.equal(result.reason, "stop");
    assert.deepEqual(seen, [{ n: 1 }]);
    assert.ok(nested.length >= 3, `the getter ran inside the run (${nested.length} times)`);
    for (const run of await Promise.all(nested)) assert.equal(run.reason, "stop");
  });

  test("ToolRegistry.execute called from inside a run's tool, with an id the run also uses, gets its own call's arguments", T, async () => {
    const tools = new tp.ToolRegistry();
    const seen = [];
    tools.register({ name: "inner", parameters: { type: "object" }, execute: (args) => (seen.push(args), { content: [text("inner")] }) });
    const outer = registry(["outer"], {
      spec: {
        outer: {
          // Synchronously inside the run's poll: the same id, other arguments.
          execute: async (args) => {
            const inner = await tools.execute(toolCall("same", "inner", { from: "inside" }));
            const nested = await tp.runAgentLoop({
              context: { messages: [userMsg("nested")] },
              model: new tp.ScriptedModel([useTools(toolCall("same", "inner", { from: "nested run" })), stop()]),
              tools,
            });
            return { content: [text(`${args.from}|${inner.content[0].text}|${nested.reason}`)] };
          },
        },
      },
    });
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([useTools(toolCall("same", "outer", { from: "outside" })), stop()]),
      tools: outer,
    });
    assert.equal(result.messages[2].content[0].text, "outside|inner|stop");
    assert.deepEqual(seen, [{ from: "inside" }, { from: "nested run" }]);
  });

});

describe("a JS tool's calls in flight (one delivery function per tool)", () => {
  test("two runs on one registry tool, settled in the reverse order: each call gets its own outcome and reports", T, async () => {
    const gates = {};
    const tools = new tp.ToolRegistry();
    tools.register({
      name: "wait",
      execute: async (args, ctx) => {
        const g = (gates[args.run] = gate());
        ctx.reportProgress([text(`${args.run} working`)]);
        const answer = await g.promise;
        if (answer instanceof Error) throw answer;
        return { content: [text(answer)] };
      },
    });
    const start = (run) => {
      const events = eventLog();
      const done = tp.runAgentLoop({
        context: { messages: [userMsg(run)] },
        model: new tp.ScriptedModel([useTools(toolCall("c1", "wait", { run })), stop()]),
        tools,
        onEvent: events.push,
      });
      return { events, done };
    };
    const a = start("a");
    const b = start("b");
    await a.events.when((e) => e.type === "tool_progress");
    await b.events.when((e) => e.type === "tool_progress");
    gates.b.open("b answered");
    const rb = await b.done;
    gates.a.open(new Error("a failed"));
    const ra = await a.done;
    assert.deepEqual(texts(ra.messages), ["a failed"]);
    assert.equal(results(ra.messages)[0].isError, true);
    assert.deepEqual(texts(rb.messages), ["b answered"]);
    assert.deepEqual(
      [a, b].map(({ events }) => events.events.filter((e) => e.type === "tool_progress").map((e) => e.content[0].text)),
      [["a working"], ["b working"]],
    );
  });

  test("an executor's call that settles after its run ended, and reports then: ignored, nothing thrown or unhandled", T, async () => {
    const late = gate();
    let report;
    const unhandled = [];
    const onUnhandled = (reason) => unhandled.push(String(reason));
    process.on("unhandledRejection", onUnhandled);
    try {
      const result = await tp.runAgentLoop({
        context: { messages: [userMsg("go")] },
        model: new tp.ScriptedModel([useTools(toolCall("c1", "hang")), stop()]),
        toolTimeoutMs: 20,
        executeToolCall: (_call, ctx) => {
          report = ctx.reportProgress;
          return late.promise;
        },
      });
      assert.deepEqual(results(result.messages)[0].details, { timedOut: true, timeoutMs: 20 });
      // The run is over and its executor gone: its call settles, and reports, now.
      assert.equal(report([text("after the end")]), undefined);
      late.open({ content: [text("too late")] });
      await late.promise;
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  test("a tool that returns at once (no promise) and one that throws at once", T, async () => {
    const tools = new tp.ToolRegistry();
    tools.register({ name: "now", execute: (args) => ({ content: [text(`now:${args.x}`)] }) });
    tools.register({ name: "boom", execute: () => { throw new TypeError("boom at once"); } });
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model: new tp.ScriptedModel([useTools(toolCall("n", "now", { x: 1 }), toolCall("b", "boom")), stop()]),
      tools,
    });
    assert.deepEqual(texts(result.messages), ["now:1", "boom at once"]);
    assert.deepEqual(results(result.messages).map((r) => r.isError), [false, true]);
  });
});
