// The agent loop as an app sees it: the built package installed by path into a fresh Node project
// (see app-fixture.mjs), checked against SPEC §4 and the course timelines (seeds 000/001).
import assert from "node:assert/strict";
import path from "node:path";
import { before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { EXPECTED_EVENTS, readmeRoundTrip, readmeScript } from "../app/round-trip.mjs";
import { fixtureDir, importFromApp, loadTinyPi } from "./app-fixture.mjs";
import { TRUNCATED, assistantMsg, eventLog, gate, jsModel, label, settle, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPi();
});

// Every test gets a deadline so a loop that hangs fails instead of stalling the run.
const T = { timeout: 20_000 };

function echoRegistry(counter = { n: 0 }, names = ["echo"]) {
  const tools = new tp.ToolRegistry();
  for (const name of names) {
    tools.register({
      name,
      description: `${name} tool`,
      parameters: { type: "object" },
      execute: async (args) => {
        counter.n += 1;
        return { content: [text(`${name}:${JSON.stringify(args)}`)] };
      },
    });
  }
  return tools;
}

function readRegistry(counter = { n: 0 }) {
  const { readme } = readmeScript();
  const tools = new tp.ToolRegistry();
  tools.register({
    name: "read",
    description: "Read a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    execute: async () => {
      counter.n += 1;
      return { content: [text(readme)] };
    },
  });
  return tools;
}

test("the app resolves tiny-pi to the copy npm installed into it", T, () => {
  const installed = pathToFileURL(path.join(fixtureDir, "node_modules", "tiny-pi") + path.sep).href;
  assert.ok(tp.resolved.startsWith(installed), `tiny-pi resolved to ${tp.resolved}`);
  assert.ok(tp.lessonResolved.startsWith(installed), `tiny-pi/lesson resolved to ${tp.lessonResolved}`);
  for (const name of ["runAgentLoop", "validateTranscript", "prologueTrace", "formatTrace", "validateTrace"]) {
    assert.equal(typeof tp[name], "function", name);
  }
});

test("the lesson exports are in tiny-pi/lesson only (an app that never imports it never loads them), beside all of tiny-pi's", T, async () => {
  const { main, lesson } = await importFromApp("tiny-pi-entries.mjs", `export * as main from "tiny-pi";\nexport * as lesson from "tiny-pi/lesson";\n`);
  for (const name of ["ScriptedModel", "prologueTrace", "formatTrace", "validateTrace"]) {
    assert.equal(name in main, false, `tiny-pi exports ${name}`);
    assert.equal(typeof lesson[name], "function", `tiny-pi/lesson's ${name}`);
  }
  for (const name of Object.keys(main)) assert.equal(typeof lesson[name], typeof main[name], `tiny-pi/lesson's ${name}`);
});

describe("README round trip (seed timeline)", () => {
  test("the shared app scenario reports no problem", T, async () => {
    const { problems, summary } = await readmeRoundTrip(tp);
    assert.deepEqual(problems, []);
    assert.deepEqual(summary, {
      events: EXPECTED_EVENTS,
      reason: "stop",
      steps: 2,
      requests: 2,
      executions: 1,
      roles: "user,assistant,toolResult,assistant",
    });
  });

  test("13 events with the seed's payloads, 2 requests, 1 execution, input untouched", T, async () => {
    const { input, script, readCall, readme } = readmeScript();
    const before = structuredClone(input);
    const model = new tp.ScriptedModel(script);
    const counter = { n: 0 };
    const tools = readRegistry(counter);
    const events = [];
    const result = await tp.runAgentLoop({
      context: { systemPrompt: "SYS", messages: input },
      model,
      tools,
      onEvent: (e) => events.push(e),
    });
    assert.deepEqual(events.map(label), EXPECTED_EVENTS);
    const [start, td, tcd, tce, done, am1, ts, te, , td2, done2, am2, end] = events;
    assert.equal(start.event.type, "start");
    assert.deepEqual([td.event.contentIndex, td.event.delta], [0, "我先读取项目说明。"]);
    assert.equal(tcd.event.contentIndex, 1);
    assert.deepEqual(JSON.parse(tcd.event.delta), { path: "README.md" });
    assert.equal(done.event.reason, "toolUse");
    assert.deepEqual(am1.message, script[0]);
    assert.equal(te.result.toolCallId, "call-1");
    assert.equal(td2.event.delta, "项目名是 tiny-pi。");
    assert.equal(done2.event.reason, "stop");
    assert.deepEqual(am2.message, script[1]);
    assert.deepEqual(end, { type: "turn_end", reason: "stop", steps: 2 });

    assert.equal(result.reason, "stop");
    assert.equal(result.steps, 2);
    assert.equal(result.error, undefined);
    assert.equal(result.observerError, undefined);
    assert.equal(model.requests.length, 2);
    assert.equal(counter.n, 1);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);
    assert.deepEqual(result.messages[0], before[0]);
    assert.deepEqual(result.messages[1], script[0]);
    const { timestamp, ...toolResult } = result.messages[2];
    assert.equal(typeof timestamp, "number");
    assert.deepEqual(toolResult, { role: "toolResult", toolCallId: "call-1", toolName: "read", content: [text(readme)], isError: false });
    assert.deepEqual(result.messages[3], script[1]);
    assert.deepEqual(input, before, "caller's context.messages unchanged");
    // What each request saw (ScriptedModel keeps copies).
    assert.deepEqual(model.requests.map((r) => r.messages.map((m) => m.role)), [["user"], ["user", "assistant", "toolResult"]]);
    assert.deepEqual(model.requests[1].messages[2], result.messages[2]);
    assert.ok(tp.validateTranscript(result.messages).ok);
    // Event payloads have the SPEC §1 shapes: a ToolCall has its type, a result its role.
    assert.deepEqual(tce.event.toolCall, readCall, "toolcall_end.toolCall is a ToolCall");
    assert.deepEqual(ts.call, readCall, "tool_start.call is a ToolCall");
    assert.deepEqual(te.result, result.messages[2], "tool_end.result is the appended ToolResultMessage");
  });

  test("plain stop: one request, [user, assistant], reason stop", T, async () => {
    const answer = assistantMsg([text("hello")], "stop");
    const model = new tp.ScriptedModel([answer]);
    const events = [];
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model, onEvent: (e) => events.push(e) });
    assert.deepEqual(events.map(label), ["model_event:start", "model_event:text_delta", "model_event:done", "assistant_message", "turn_end"]);
    assert.deepEqual(result.messages, [userMsg("hi"), answer]);
    assert.deepEqual([result.reason, result.steps, model.requests.length], ["stop", 1, 1]);
    assert.deepEqual(events.at(-1), { type: "turn_end", reason: "stop", steps: 1 });
  });
});

describe("decision table: rows that execute nothing", () => {
  const rows = [
    { name: "length + calls", stopReason: "length", ids: ["c1", "c2"], reason: "length", skip: "length" },
    { name: "error + calls", stopReason: "error", ids: ["c1", "c2"], reason: "error", skip: "error", extra: { errorMessage: "provider exploded" } },
    { name: "aborted + calls", stopReason: "aborted", ids: ["c1", "c2"], reason: "aborted", skip: "aborted" },
    { name: "stop + calls", stopReason: "stop", ids: ["c1", "c2"], reason: "error", skip: "unexpected-stop" },
    { name: "toolUse without calls", stopReason: "toolUse", ids: [], reason: "error", skip: null },
    { name: "toolUse with a repeated id", stopReason: "toolUse", ids: ["dup", "dup", "c3"], reason: "error", skip: "duplicate-call-id" },
  ];
  for (const row of rows) {
    for (const via of ["registry", "executeToolCall"]) {
      test(`${row.name} (${via}): 0 executions, skipped results, reason ${row.reason}`, T, async () => {
        const calls = row.ids.map((id, i) => toolCall(id, "echo", { n: i }));
        const answer = assistantMsg([text("about to act"), ...calls], row.stopReason, row.extra);
        // A second scripted message proves the loop does not ask again.
        const model = new tp.ScriptedModel([answer, assistantMsg([text("again")], "stop")]);
        const counter = { n: 0 };
        const tools = echoRegistry(counter);
        const executeToolCall = async (call) => {
          counter.n += 1;
          return { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [text("ran")], isError: false, timestamp: 9 };
        };
        const events = [];
        const result = await tp.runAgentLoop({
          context: { messages: [userMsg("go")] },
          model,
          tools,
          ...(via === "executeToolCall" ? { executeToolCall } : {}),
          now: () => 123,
          onEvent: (e) => events.push(e),
        });
        assert.equal(counter.n, 0, "no tool may run");
        assert.equal(result.reason, row.reason);
        assert.equal(result.steps, 1);
        assert.equal(model.requests.length, 1);
        const distinct = [...new Set(row.ids)];
        const expectedSkips = row.skip ? distinct : [];
        assert.deepEqual(result.messages.slice(0, 2), [userMsg("go"), answer]);
        const skipped = result.messages.slice(2);
        assert.equal(skipped.length, expectedSkips.length, "one skipped result per distinct call id");
        skipped.forEach((r, i) => {
          assert.equal(r.role, "toolResult");
          assert.equal(r.toolCallId, expectedSkips[i]);
          assert.equal(r.toolName, "echo");
          assert.equal(r.isError, true);
          assert.deepEqual(r.details, { skipped: true, reason: row.skip });
          assert.equal(r.timestamp, 123, "skipped results use the now() clock");
          assert.equal(r.content.length, 1);
          assert.equal(r.content[0].type, "text");
          if (row.skip === "length") assert.equal(r.content[0].text, TRUNCATED);
          else assert.ok(r.content[0].text.length > 0 && r.content[0].text !== TRUNCATED, `own explanation for ${row.skip}: ${r.content[0].text}`);
        });
        const labels = events.map(label);
        const afterModel = labels.slice(labels.indexOf("assistant_message"));
        assert.deepEqual(afterModel, ["assistant_message", ...expectedSkips.map(() => "tool_skipped"), "turn_end"]);
        assert.equal(labels.filter((l) => l === "assistant_message").length, 1);
        assert.ok(!labels.includes("tool_start") && !labels.includes("tool_end"));
        assert.equal(labels.at(-3 - expectedSkips.length), row.stopReason === "error" || row.stopReason === "aborted" ? "model_event:error" : "model_event:done");
        assert.deepEqual(events.at(-1), { type: "turn_end", reason: row.reason, steps: 1 });
        // The loop's own transcript is always valid: a repeated id answered by the loop's skip is paired.
        assert.deepEqual(tp.validateTranscript(result.messages), { ok: true, problems: [] });
        if (row.skip === "duplicate-call-id") {
          // The same repeat answered by a real result is what the validator flags.
          const executed = result.messages.map((m) => (m.role === "toolResult" ? { ...m, details: undefined, isError: false } : m));
          const check = tp.validateTranscript(executed);
          assert.deepEqual(check.problems.map((p) => [p.kind, p.toolCallId]), [["duplicate_call_id", "dup"]]);
        }
        // Each tool_skipped event carries the very result appended to the transcript.
        assert.deepEqual(events.filter((e) => e.type === "tool_skipped").map((e) => e.result), skipped, "tool_skipped.result is the appended ToolResultMessage");
      });
    }
  }
});

describe("tool batches", () => {
  test("slow and fast run at once: tool_end in completion order, results in call order", T, async () => {
    const slowGate = gate();
    const fastGate = gate();
    const started = { slow: gate(), fast: gate() };
    const tools = new tp.ToolRegistry();
    for (const [name, g] of [["slow", slowGate], ["fast", fastGate]]) {
      tools.register({
        name,
        parameters: { type: "object" },
        execute: async (_args, ctx) => {
          started[name].open();
          ctx.reportProgress([text(`${name} working`)]);
          await g.promise;
          return { content: [text(`${name} done`)], details: { name } };
        },
      });
    }
    const calls = [toolCall("slow-call", "slow"), toolCall("fast-call", "fast")];
    const model = new tp.ScriptedModel([assistantMsg(calls, "toolUse"), assistantMsg([text("both done")], "stop")]);
    const log = eventLog();
    const run = tp.runAgentLoop({ context: { messages: [userMsg("run both")] }, model, tools, onEvent: log.push });
    // Both executions must be in flight at once: neither gate is open yet.
    await Promise.all([started.slow.promise, started.fast.promise]);
    fastGate.open();
    await log.when((e) => e.type === "tool_end" && e.result.toolCallId === "fast-call");
    assert.ok(!log.events.some((e) => e.type === "tool_end" && e.result.toolCallId === "slow-call"));
    slowGate.open();
    const result = await run;

    const toolEvents = log.events.filter((e) => e.type.startsWith("tool_"));
    const starts = toolEvents.filter((e) => e.type === "tool_start");
    assert.deepEqual(starts.map((e) => e.call.id), ["slow-call", "fast-call"]);
    assert.ok(toolEvents.indexOf(starts[1]) < toolEvents.findIndex((e) => e.type === "tool_end"), "every tool_start comes before any tool_end");
    assert.deepEqual(toolEvents.filter((e) => e.type === "tool_end").map((e) => e.result.toolCallId), ["fast-call", "slow-call"]);
    const progress = toolEvents.filter((e) => e.type === "tool_progress");
    assert.deepEqual(progress.map((e) => [e.callId, e.content]).sort(), [
      ["fast-call", [text("fast working")]],
      ["slow-call", [text("slow working")]],
    ]);
    assert.deepEqual(result.messages.filter((m) => m.role === "toolResult").map((m) => [m.toolCallId, m.content[0].text, m.details]), [
      ["slow-call", "slow done", { name: "slow" }],
      ["fast-call", "fast done", { name: "fast" }],
    ]);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult", "toolResult", "assistant"]);
    assert.equal(result.reason, "stop");
    assert.deepEqual(model.requests[1].messages.slice(2).map((m) => m.toolCallId), ["slow-call", "fast-call"]);
  });

  test("an executor that rejects becomes an error result (message kept, no stack); the batch still completes", T, async () => {
    const calls = [toolCall("boom-1", "boom"), toolCall("ok-1", "ok"), toolCall("str-1", "str")];
    const model = new tp.ScriptedModel([assistantMsg(calls, "toolUse"), assistantMsg([text("recovered")], "stop")]);
    const okGate = gate();
    const thrown = new Error("disk on fire: secret-path");
    const executeToolCall = async (call, ctx) => {
      assert.equal(typeof ctx.reportProgress, "function");
      if (call.name === "boom") throw thrown;
      if (call.name === "str") throw "plain string rejection";
      await okGate.promise;
      return { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [text("fine")], isError: false, timestamp: 5 };
    };
    const log = eventLog();
    const run = tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, executeToolCall, onEvent: log.push, now: () => 77 });
    // The rejections must not end the batch early: the ok call is still pending here.
    await log.when((e) => e.type === "tool_end" && e.result.toolCallId === "boom-1");
    await log.when((e) => e.type === "tool_end" && e.result.toolCallId === "str-1");
    okGate.open();
    const result = await run;
    assert.equal(result.reason, "stop");
    const [boom, ok, str] = result.messages.slice(2, 5);
    assert.deepEqual([boom.toolCallId, boom.toolName, boom.isError, boom.role], ["boom-1", "boom", true, "toolResult"]);
    const boomText = boom.content.map((c) => c.text).join("\n");
    assert.match(boomText, /disk on fire: secret-path/);
    assert.doesNotMatch(boomText, /\n\s+at /, "no stack trace in the result");
    assert.ok(!boomText.includes(thrown.stack.split("\n")[1].trim()), "no stack frame in the result");
    assert.equal(boom.timestamp, 77, "the loop's own results use now()");
    assert.deepEqual(ok, { role: "toolResult", toolCallId: "ok-1", toolName: "ok", content: [text("fine")], isError: false, timestamp: 5 });
    assert.deepEqual([str.toolCallId, str.isError], ["str-1", true]);
    assert.match(str.content.map((c) => c.text).join("\n"), /plain string rejection/);
    assert.ok(tp.validateTranscript(result.messages).ok);
  });

  test("a thrown primitive reads as String(value) in the error result; a thrown function as its tag", T, async () => {
    const unprintable = () => {};
    unprintable.toString = () => {
      throw new Error("no string for you");
    };
    const thrown = [42, 1e21, null, undefined, true, Symbol("odd"), unprintable];
    const expected = [...thrown.slice(0, -1).map(String), "[object Function]"];
    const calls = thrown.map((_, i) => toolCall(`p${i}`, "prim"));
    const model = new tp.ScriptedModel([assistantMsg(calls, "toolUse"), assistantMsg([text("ok")], "stop")]);
    const executeToolCall = async (call) => {
      throw thrown[Number(call.id.slice(1))];
    };
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, executeToolCall });
    const texts = result.messages.slice(2, 2 + thrown.length).map((m) => [m.isError, m.content.map((c) => c.text).join("\n")]);
    assert.deepEqual(texts, expected.map((t) => [true, t]));
    assert.equal(result.reason, "stop");
  });

  test("a registry tool that throws: error result with the message, no stack; unknown tool and bad arguments too", T, async () => {
    const tools = new tp.ToolRegistry();
    tools.register({ name: "thrower", execute: () => { throw new Error("tool broke"); } });
    tools.register({
      name: "typed",
      parameters: { type: "object", properties: { count: { type: "integer", minimum: 1 } }, required: ["count"] },
      execute: () => ({ content: [text("never")] }),
    });
    const calls = [toolCall("t1", "thrower"), toolCall("t2", "nosuch"), toolCall("t3", "typed", { count: "three" })];
    const model = new tp.ScriptedModel([assistantMsg(calls, "toolUse"), assistantMsg([text("ok")], "stop")]);
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, tools, now: () => 55 });
    assert.equal(result.reason, "stop");
    const [thrower, unknown, typed] = result.messages.slice(2, 5);
    for (const [r, id, name] of [[thrower, "t1", "thrower"], [unknown, "t2", "nosuch"], [typed, "t3", "typed"]]) {
      assert.deepEqual([r.role, r.toolCallId, r.toolName, r.isError, r.timestamp], ["toolResult", id, name, true, 55]);
    }
    const msg = (r) => r.content.map((c) => c.text).join("\n");
    assert.match(msg(thrower), /tool broke/);
    assert.doesNotMatch(msg(thrower), /\n\s+at /);
    assert.match(msg(unknown), /nosuch/);
    assert.match(msg(typed), /count/, "the schema error names the failing path");
  });
});

describe("boundaries: abort and maxSteps", () => {
  test("aborted before start: no request, steps 0, messages = input", T, async () => {
    const controller = new AbortController();
    controller.abort();
    const model = new tp.ScriptedModel([assistantMsg([text("never")], "stop")]);
    const events = [];
    const input = [userMsg("hi")];
    const result = await tp.runAgentLoop({ context: { messages: input }, model, signal: controller.signal, onEvent: (e) => events.push(e) });
    assert.deepEqual([result.reason, result.steps], ["aborted", 0]);
    assert.deepEqual(result.messages, input);
    assert.equal(model.requests.length, 0);
    assert.deepEqual(events, [{ type: "turn_end", reason: "aborted", steps: 0 }]);
  });

  test("aborted during a tool: the tool is awaited, its result kept, reason aborted, no further request", T, async () => {
    const controller = new AbortController();
    const started = gate();
    const release = gate();
    let sawAbort;
    const tools = new tp.ToolRegistry();
    tools.register({
      name: "stubborn",
      execute: async (_args, ctx) => {
        assert.ok(ctx.signal instanceof AbortSignal, "the tool gets an AbortSignal");
        assert.equal(ctx.callId, "s1");
        started.open();
        await release.promise; // ignores the signal on purpose
        sawAbort = ctx.signal.aborted;
        return { content: [text("finished anyway")] };
      },
    });
    const model = jsModel((_req, i) => (i === 0 ? assistantMsg([toolCall("s1", "stubborn")], "toolUse") : assistantMsg([text("too late")], "stop")));
    const events = [];
    const run = tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, tools, signal: controller.signal, onEvent: (e) => events.push(e) });
    await started.promise;
    controller.abort();
    release.open();
    const result = await run;
    assert.equal(sawAbort, true, "the signal passed to the tool is aborted");
    assert.ok(model.seen[0].options.signal instanceof AbortSignal && model.seen[0].options.signal.aborted, "the model got the signal too");
    assert.deepEqual([result.reason, result.steps, model.requests.length], ["aborted", 1, 1]);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult"]);
    assert.deepEqual([result.messages[2].isError, result.messages[2].content], [false, [text("finished anyway")]]);
    assert.deepEqual(events.map(label).slice(-3), ["tool_start", "tool_end", "turn_end"]);
    assert.deepEqual(events.at(-1), { type: "turn_end", reason: "aborted", steps: 1 });
  });

  test("maxSteps 1: the toolUse round still executes, then reason maxSteps, nothing fabricated", T, async () => {
    const { input, script } = readmeScript();
    const model = new tp.ScriptedModel(script);
    const counter = { n: 0 };
    const events = [];
    const result = await tp.runAgentLoop({ context: { messages: input }, model, tools: readRegistry(counter), maxSteps: 1, onEvent: (e) => events.push(e) });
    assert.deepEqual([result.reason, result.steps, model.requests.length, counter.n], ["maxSteps", 1, 1, 1]);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult"]);
    assert.deepEqual(events.at(-1), { type: "turn_end", reason: "maxSteps", steps: 1 });
    assert.ok(tp.validateTranscript(result.messages).ok);
  });

  test("maxSteps defaults to 32: a model that always asks for a tool gets 32 requests", T, async () => {
    const model = jsModel((_req, i) => assistantMsg([toolCall(`call-${i}`, "echo", { i })], "toolUse"));
    const counter = { n: 0 };
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("loop forever")] }, model, tools: echoRegistry(counter) });
    assert.deepEqual([result.reason, result.steps, model.requests.length, counter.n], ["maxSteps", 32, 32, 32]);
    assert.equal(result.messages.length, 1 + 32 * 2);
    assert.ok(tp.validateTranscript(result.messages).ok);
  });
});

describe("observers", () => {
  test("a promise returned by onEvent is awaited before the loop goes on", T, async () => {
    const { input, script } = readmeScript();
    const hold = gate();
    let held = false;
    let released = false;
    let toolRanAfterRelease;
    const tools = new tp.ToolRegistry();
    tools.register({ name: "read", execute: () => { toolRanAfterRelease = released; return { content: [text("r")] }; } });
    const log = eventLog();
    const run = tp.runAgentLoop({
      context: { messages: input },
      model: new tp.ScriptedModel(script),
      tools,
      onEvent: (e) => {
        log.push(e);
        if (e.type === "assistant_message" && !held) {
          held = true;
          return hold.promise;
        }
      },
    });
    await log.when((e) => e.type === "assistant_message");
    await settle();
    assert.equal(log.events.length, 6, "no event after the one whose promise is pending");
    assert.equal(toolRanAfterRelease, undefined, "the tool did not start while the observer held the loop");
    released = true;
    hold.open();
    const result = await run;
    assert.equal(toolRanAfterRelease, true);
    assert.equal(result.reason, "stop");
    assert.deepEqual(log.events.map(label), EXPECTED_EVENTS);
  });

  test("onEvent that throws or rejects cannot stop the run; the first error is reported as observerError", T, async () => {
    const { input, script } = readmeScript();
    const events = [];
    const result = await tp.runAgentLoop({
      context: { messages: input },
      model: new tp.ScriptedModel(script),
      tools: readRegistry(),
      onEvent: (e) => {
        events.push(e);
        if (e.type === "tool_start") throw new Error("observer broke first");
        if (e.type === "tool_end") return Promise.reject(new Error("observer broke second"));
      },
    });
    assert.equal(result.reason, "stop");
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);
    assert.deepEqual(events.map(label), EXPECTED_EVENTS);
    assert.match(String(result.observerError), /observer broke first/);
    assert.doesNotMatch(String(result.observerError), /second/);
  });

  test("now() stamps the results the loop writes; model and caller timestamps are kept", T, async () => {
    const { input, script } = readmeScript();
    let ticks = 0;
    const result = await tp.runAgentLoop({
      context: { messages: input },
      model: new tp.ScriptedModel(script),
      tools: readRegistry(),
      now: () => 1000 + ++ticks,
    });
    assert.ok(ticks >= 1, "now() was called");
    assert.ok(result.messages[2].timestamp > 1000 && result.messages[2].timestamp <= 1000 + ticks, `tool result timestamp ${result.messages[2].timestamp}`);
    assert.deepEqual(result.messages.map((m) => m.timestamp).filter((_, i) => i !== 2), [1, 2, 4]);
  });
});

describe("a promise where SPEC wants a value", () => {
  /** Runs `fn`, then answers the rejections the host reported as unhandled meanwhile. */
  async function unhandledDuring(fn) {
    const unhandled = [];
    const onUnhandled = (reason) => unhandled.push(String(reason));
    process.on("unhandledRejection", onUnhandled);
    try {
      await fn();
      // Node reports an unhandled rejection once the microtasks have run: a macrotask later, it is in.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      return unhandled;
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  }

  test("now() that throws, rejects or gives a non-number: Date.now() stamps the result, no rejection unhandled", T, async () => {
    const clocks = [
      () => { throw new Error("clock threw"); },
      async () => { throw new Error("clock rejected"); },
      () => Promise.reject(new Error("clock gave a rejected promise")),
      () => "12",
      () => NaN,
      () => ({ then() { throw new Error("then threw"); } }),
    ];
    const unhandled = await unhandledDuring(async () => {
      for (const now of clocks) {
        const { input, script } = readmeScript();
        const before = Date.now();
        const result = await tp.runAgentLoop({ context: { messages: input }, model: new tp.ScriptedModel(script), tools: readRegistry(), now });
        assert.equal(result.reason, "stop", String(now));
        const stamp = result.messages[2].timestamp;
        assert.ok(stamp >= before && stamp <= Date.now(), `${now}: timestamp ${stamp} is Date.now()`);
      }
    });
    assert.deepEqual(unhandled, []);
  });

  test("an async stream(): the run ends with an error that says so, and its rejection is not left unhandled", T, async () => {
    const { script } = readmeScript();
    const streams = [
      async () => { throw new Error("no API key"); },
      async () => new tp.ScriptedModel(script).stream({ messages: [] }, {}),
    ];
    const unhandled = await unhandledDuring(async () => {
      for (const stream of streams) {
        const result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model: { stream } });
        assert.equal(result.reason, "error");
        assert.match(result.error, /model\.stream\(\) must return an async iterable, not a promise of one \(is it an async function\?\)/);
        assert.deepEqual(result.messages.map((m) => m.role), ["user"]);
      }
    });
    assert.deepEqual(unhandled, []);
  });
});

describe("the model boundary", () => {
  test("request.tools = registry definitions (never context.tools), systemPrompt each time, own messages array", T, async () => {
    const { input, script } = readmeScript();
    const tools = readRegistry();
    const model = jsModel((_req, i) => script[i]);
    const stale = [{ name: "stale", description: "must not be forwarded", parameters: {} }];
    const result = await tp.runAgentLoop({ context: { systemPrompt: "SYS", messages: input, tools: stale }, model, tools });
    assert.equal(result.reason, "stop");
    assert.equal(model.requests.length, 2);
    const defs = tools.definitions();
    assert.deepEqual(defs, [{
      name: "read",
      description: "Read a file",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    }]);
    for (const r of model.requests) {
      assert.equal(r.systemPrompt, "SYS");
      assert.deepEqual(r.tools, defs);
    }
    assert.notEqual(model.requests[0].messages, model.requests[1].messages);
    assert.equal(model.requests[0].messages.length, 1, "a later append did not change what request 1 saw");
    assert.equal(model.requests[1].messages.length, 3);
    assert.notEqual(model.requests[0].messages, input, "the caller's array is not handed to the model");
  });

  test("without a registry the model is offered no tools, and a stale context.tools is still not forwarded", T, async () => {
    const model = jsModel(() => assistantMsg([text("hi")], "stop"));
    await tp.runAgentLoop({ context: { messages: [userMsg("hi")], tools: [{ name: "stale" }] }, model });
    assert.deepEqual(model.requests[0].tools, []);
  });

  test("the model stream is pulled one event at a time: no next() while onEvent holds an event", T, async () => {
    const final = assistantMsg([text("hi")], "stop");
    const script = [{ type: "start", partial: final }, { type: "text_delta", delta: "hi", partial: final }, { type: "done", reason: "stop", message: final }];
    let nexts = 0;
    const stream = {
      [Symbol.asyncIterator]() {
        let i = 0;
        return { next: async () => { nexts += 1; return i < script.length ? { value: script[i++], done: false } : { value: undefined, done: true }; } };
      },
    };
    const hold = gate();
    const log = eventLog();
    const run = tp.runAgentLoop({
      context: { messages: [userMsg("q")] },
      model: { stream: () => stream },
      onEvent: (e) => {
        log.push(e);
        if (e.type === "model_event" && e.event.type === "start") return hold.promise;
      },
    });
    await log.when((e) => e.type === "model_event");
    await settle();
    assert.equal(nexts, 1, "only the event being observed was pulled");
    hold.open();
    const result = await run;
    assert.equal(result.reason, "stop");
    assert.equal(nexts, script.length + 1, "each event and the end pulled exactly once");
    assert.deepEqual(log.events.filter((e) => e.type === "model_event").map((e) => e.event), script, "the model's own objects, in order");
  });

  test("a stream without result(): the final message comes from the done event", T, async () => {
    const answer = assistantMsg([text("from done")], "stop");
    const model = jsModel(() => answer, { withResult: false });
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model });
    assert.deepEqual([result.reason, result.messages.at(-1)], ["stop", answer]);
  });

  test("an observer cannot change the transcript (SPEC §10): the change throws a TypeError, kept as observerError; tool_start.call is the transcript's own block", T, async () => {
    const calls = [toolCall("k1", "echo", { n: 1 }), toolCall("k2", "echo", { n: 2 }), toolCall("k3", "echo", { n: 3 })];
    const asked = assistantMsg([text("three calls"), ...calls], "toolUse");
    const model = jsModel((_, i) => (i === 0 ? asked : assistantMsg([text("done")], "stop")));
    const starts = [];
    let thrown;
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("go")] },
      model,
      tools: echoRegistry(),
      onEvent: (e) => {
        // After the message is reported, the observer tries to replace k2's block (with k2's id left on it).
        if (e.type === "assistant_message" && e.message.stopReason === "toolUse") {
          try {
            e.message.content[2] = { ...text("not a call any more"), id: "k2" };
          } catch (error) {
            thrown = error;
            throw error;
          }
        }
        if (e.type === "tool_start") starts.push(e.call);
      },
    });
    assert.equal(result.reason, "stop");
    assert.ok(thrown instanceof TypeError, `a TypeError in strict code, got ${thrown}`);
    assert.equal(result.observerError, thrown.message);
    // The message was read once, as data: the transcript holds the loop's own frozen copy, the model's object
    // is the model's.
    const kept = result.messages[1];
    assert.deepEqual(kept, asked);
    assert.notEqual(kept, asked);
    assert.ok(Object.isFrozen(kept) && Object.isFrozen(kept.content[2].arguments) && !Object.isFrozen(asked));
    starts.forEach((call, i) => assert.equal(call, kept.content[i + 1], `tool_start.call ${i} is the transcript's own block`));
    assert.deepEqual(result.messages.slice(2, 5).map((m) => m.toolCallId), ["k1", "k2", "k3"]);
  });

  test("unknown fields on messages (usage, api, provider, model, responseId, ...) survive", T, async () => {
    const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0.1, output: 0.2, cacheRead: 0, cacheWrite: 0, total: 0.3 } };
    const extra = { api: "openai-responses", provider: "openai", model: "gpt-x", responseId: "resp_1", usage, custom: { nested: [1, "two", null] } };
    const input = [
      { ...userMsg([text("look"), { type: "image", data: "aGk=", mimeType: "image/png" }]), note: "kept" },
      assistantMsg([{ type: "thinking", thinking: "hmm", thinkingSignature: "sig" }, toolCall("h1", "echo", { a: 1 })], "toolUse", extra),
      { role: "toolResult", toolCallId: "h1", toolName: "echo", content: [text("ok")], details: { any: ["thing"] }, isError: false, timestamp: 3, trace: "t" },
      userMsg("and now?", 4),
    ];
    const answer = assistantMsg([text("done")], "stop", { ...extra, responseId: "resp_2" });
    const events = [];
    const result = await tp.runAgentLoop({ context: { messages: input }, model: new tp.ScriptedModel([answer]), onEvent: (e) => events.push(e) });
    assert.deepEqual(result.messages, [...input, answer]);
    assert.deepEqual(events.find((e) => e.type === "assistant_message").message, answer);
  });

  test("long and non-ASCII text crosses into the loop intact: arguments, results, error messages", T, async () => {
    // Texts of every length up to 90 code points, with multi-byte characters at every position inside them.
    const pieces = ["第三章：工具调用", "😀🚀", "é", "x".repeat(40), "λ→∞", "你好，世界！".repeat(30)];
    const texts = [];
    const chars = [...pieces.join("")]; // whole code points: a cut emoji would be a lone surrogate
    for (let n = 1; n <= 90; n += 1) texts.push(chars.slice(0, n).join(""));
    texts.push("x".repeat(62) + "😀", "x".repeat(63) + "é", "😀".repeat(100));
    const args = { texts, nested: { 路径: "/源/文件.rs", emoji: "👩‍💻" } };
    const seen = [];
    const tools = new tp.ToolRegistry();
    tools.register({
      name: "echo",
      description: "echo",
      parameters: { type: "object" },
      execute: async (received) => {
        seen.push(received);
        return { content: received.texts.map((t) => text(t)), details: { whole: "前".repeat(70) + "😀" } };
      },
    });
    const model = jsModel((_, i) =>
      i === 0
        ? assistantMsg([text(pieces.join("")), toolCall("c1", "echo", args)], "toolUse")
        : assistantMsg([], "error", { errorMessage: "出错了：" + "😀".repeat(50) }),
    );
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model, tools });
    assert.deepEqual(seen, [args]);
    const toolResult = result.messages.find((m) => m.role === "toolResult");
    assert.deepEqual(toolResult.content.map((b) => b.text), texts);
    assert.equal(toolResult.details.whole, "前".repeat(70) + "😀");
    assert.equal(result.reason, "error");
    assert.equal(result.error, "出错了：" + "😀".repeat(50));
  });

  test("a lone surrogate is never changed: a tool's output with one is an error result naming it, the model's message a model error", T, async () => {
    // Half an emoji (what `text.slice(0, n)` makes of "😀") is kept exactly or refused (SPEC §10), never
    // replaced by U+FFFD.
    const half = "前" + "😀".slice(0, 1);
    const tools = new tp.ToolRegistry();
    tools.register({ name: "echo", parameters: { type: "object" }, execute: async () => ({ content: [text("ok")], details: { half } }) });
    const model = jsModel((_, i) => (i === 0 ? assistantMsg([toolCall("c1", "echo", {})], "toolUse") : assistantMsg([text(half)], "stop")));
    const result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model, tools });
    const [answer] = result.messages.filter((m) => m.role === "toolResult");
    assert.equal(answer.isError, true);
    assert.match(answer.content[0].text, /^tool "echo" result: a string holds a lone surrogate \(\\ud83d\)/);
    assert.equal(result.reason, "error");
    assert.match(result.error, /lone surrogate \(\\ud83d\)/);
    assert.equal(result.messages.length, 3, "the refused message is not appended");
    // The caller's own text: a TypeError, and nothing runs.
    await assert.rejects(tp.runAgentLoop({ context: { messages: [userMsg(half)] }, model }), (e) => e instanceof TypeError && /options\.context\.messages\[0\]: a string holds a lone surrogate/.test(e.message));
  });

  test("a tool's output is read once, as the JSON JSON.stringify writes of it", T, async () => {
    // Whatever a tool returns (getters, toJSON, odd prototypes, values JSON cannot write), the run reads
    // what JSON.parse(JSON.stringify(output)) makes of it, once: the same result as for that plain data.
    const { rng } = await import("./garbage-gen.mjs");
    const r = rng(20261130);
    const texts = ["ok", "", "第三章 😀", "x".repeat(70) + "é", "a\u0000b\"\\"];
    const simple = () => ({ content: [{ type: "text", text: r.pick(texts) }] });
    const mutations = [
      (o) => { o.details = { nested: { list: [1, "two", null, 1e21], deep: { x: true } } }; },
      (o) => { o.details = { inner: { toJSON: (key) => `key:${key}` } }; },
      (o) => { o.details = { skip: undefined, f: () => 1, n: NaN }; },
      (o) => { o.details = { big: 1n }; },
      (o) => { const d = { a: 1 }; d.self = d; o.details = d; },
      (o) => { o.isError = "yes"; },
      (o) => { o.content[0] = Object.assign(Object.create(null), o.content[0]); },
      (o) => { o.content[0].toJSON = () => ({ type: "text", text: "from toJSON" }); },
      (o) => { o.toJSON = () => ({ content: [{ type: "text", text: "from toJSON" }] }); },
      (o) => { o.details = new Map(); },
      (o) => { Object.defineProperty(o, "hidden", { value: 1n, enumerable: false }); },
    ];
    const runWith = async (output) => {
      const tools = new tp.ToolRegistry();
      tools.register({ name: "echo", parameters: { type: "object" }, execute: async () => output });
      const model = jsModel((_, i) => (i === 0 ? assistantMsg([toolCall("c1", "echo")], "toolUse") : assistantMsg([text("done")], "stop")));
      const result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model, tools, now: () => 7 });
      return { reason: result.reason, error: result.error, result: result.messages[2] };
    };
    for (let i = 0; i < 60; i += 1) {
      const out = simple();
      r.pick(mutations)(out);
      let data;
      try {
        data = JSON.parse(JSON.stringify(out));
      } catch {
        data = undefined;
      }
      const got = await runWith(out);
      if (data === undefined) {
        assert.equal(got.result.isError, true, `case ${i}: an output JSON cannot write is an error result`);
        continue;
      }
      assert.deepEqual(got, await runWith(data), `case ${i}`);
    }
  });

  test("a ScriptedModel asked past its script: reason error, nothing appended for that step, no hang", T, async () => {
    const { input, script } = readmeScript();
    const events = [];
    const result = await tp.runAgentLoop({ context: { messages: input }, model: new tp.ScriptedModel([script[0]]), tools: readRegistry(), onEvent: (e) => events.push(e) });
    assert.equal(result.reason, "error");
    assert.equal(typeof result.error, "string");
    assert.ok(result.error.length > 0);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult"]);
    assert.equal(events.filter((e) => e.type === "turn_end").length, 1);
    assert.equal(events.at(-1).type, "turn_end");
    assert.equal(events.at(-1).reason, "error");
  });
});

describe("cancellation and independence (issue 5, item 3)", () => {
  /** A tool that honours the signal: it settles only when the run is aborted. */
  function waitingRegistry(started) {
    const tools = new tp.ToolRegistry();
    tools.register({
      name: "wait",
      execute: (_args, ctx) => {
        started?.();
        return new Promise((_resolve, reject) => {
          if (ctx.signal.aborted) reject(new Error("cancelled by signal"));
          ctx.signal.addEventListener("abort", () => reject(new Error("cancelled by signal")), { once: true });
        });
      },
    });
    return tools;
  }

  test("a tool that honours the signal ends the run promptly: aborted, its error result kept", T, async () => {
    const controller = new AbortController();
    const started = gate();
    const model = new tp.ScriptedModel([assistantMsg([toolCall("w1", "wait")], "toolUse"), assistantMsg([text("never")], "stop")]);
    const run = tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, tools: waitingRegistry(started.open), signal: controller.signal });
    await started.promise;
    controller.abort();
    const result = await run;
    assert.deepEqual([result.reason, result.steps, model.requests.length], ["aborted", 1, 1]);
    assert.deepEqual([result.messages[2].toolCallId, result.messages[2].isError], ["w1", true]);
    assert.match(result.messages[2].content[0].text, /cancelled by signal/);
  });

  test("a model that honours the signal: abort during the stream gives the aborted row", T, async () => {
    const controller = new AbortController();
    const model = {
      requests: 0,
      stream(_request, { signal }) {
        model.requests += 1;
        const aborted = { role: "assistant", content: [text("partial")], stopReason: "aborted", errorMessage: "Request was aborted", timestamp: 2 };
        return (async function* () {
          yield { type: "start", partial: { ...aborted, content: [] } };
          await new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", resolve, { once: true })));
          yield { type: "error", reason: "aborted", error: aborted };
        })();
      },
    };
    const log = eventLog();
    const run = tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, signal: controller.signal, onEvent: log.push });
    await log.when((e) => e.type === "model_event");
    controller.abort();
    const result = await run;
    assert.deepEqual([result.reason, result.steps, model.requests], ["aborted", 1, 1]);
    assert.deepEqual(result.messages.map((m) => [m.role, m.stopReason]), [["user", undefined], ["assistant", "aborted"]]);
    assert.deepEqual(log.events.map(label), ["model_event:start", "model_event:error", "assistant_message", "turn_end"]);
  });

  test("runs sharing one AbortController all end aborted, each with its own paired transcript", T, async () => {
    const controller = new AbortController();
    const n = 5;
    let startedCount = 0;
    const allStarted = gate();
    const runs = Array.from({ length: n }, (_, i) => {
      const model = new tp.ScriptedModel([assistantMsg([toolCall(`w-${i}`, "wait")], "toolUse"), assistantMsg([text("never")], "stop")]);
      const tools = waitingRegistry(() => {
        if (++startedCount === n) allStarted.open();
      });
      return tp.runAgentLoop({ context: { messages: [userMsg(`run ${i}`)] }, model, tools, signal: controller.signal }).then((r) => ({ r, model }));
    });
    await allStarted.promise;
    controller.abort();
    const results = await Promise.all(runs);
    results.forEach(({ r, model }, i) => {
      assert.deepEqual([r.reason, r.steps, model.requests.length], ["aborted", 1, 1]);
      assert.deepEqual(r.messages.map((m) => m.role), ["user", "assistant", "toolResult"]);
      assert.equal(r.messages[0].content, `run ${i}`);
      assert.deepEqual([r.messages[2].toolCallId, r.messages[2].isError], [`w-${i}`, true]);
      assert.ok(tp.validateTranscript(r.messages).ok);
    });
  });

  test("runs started in a loop with no await between them stay independent", T, async () => {
    const n = 20;
    const gates = Array.from({ length: n }, () => gate());
    const starts = Array.from({ length: n }, () => gate());
    const perRunEvents = Array.from({ length: n }, () => []);
    const runs = [];
    for (let i = 0; i < n; i += 1) {
      const tools = new tp.ToolRegistry();
      tools.register({
        name: "echo",
        execute: async (args) => {
          starts[i].open();
          await gates[i].promise;
          return { content: [text(`echo ${args.run}`)] };
        },
      });
      const model = new tp.ScriptedModel([
        assistantMsg([toolCall(`c-${i}`, "echo", { run: i })], "toolUse"),
        assistantMsg([text(`answer ${i}`)], "stop"),
      ]);
      runs.push(tp.runAgentLoop({ context: { messages: [userMsg(`q ${i}`)] }, model, tools, onEvent: (e) => perRunEvents[i].push(e) }));
    }
    await Promise.all(starts.map((s) => s.promise));
    // Release in reverse order so completion order differs from start order.
    for (let i = n - 1; i >= 0; i -= 1) gates[i].open();
    const results = await Promise.all(runs);
    results.forEach((r, i) => {
      assert.equal(r.reason, "stop");
      assert.deepEqual(r.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);
      assert.equal(r.messages[0].content, `q ${i}`);
      assert.deepEqual([r.messages[2].toolCallId, r.messages[2].content[0].text], [`c-${i}`, `echo ${i}`]);
      assert.equal(r.messages[3].content[0].text, `answer ${i}`);
      assert.deepEqual(perRunEvents[i].map(label), [
        "model_event:start", "model_event:toolcall_delta", "model_event:toolcall_end", "model_event:done", "assistant_message",
        "tool_start", "tool_end", "model_event:start", "model_event:text_delta", "model_event:done", "assistant_message", "turn_end",
      ]);
      assert.ok(perRunEvents[i].filter((e) => e.type === "tool_start").every((e) => e.call.id === `c-${i}`), "each run's observer sees only its own calls");
      assert.equal(perRunEvents[i].filter((e) => e.type === "turn_end").length, 1);
    });
  });
});
