// SPEC §6 through the installed package: every entry point handed malformed values answers an
// Error naming the field (or, for a misbehaving model or tool, the run's own error path), and the
// same WebAssembly instance keeps working: after every case a good run on it must pass.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { readmeRoundTrip, readmeScript } from "../app/round-trip.mjs";
import { loadTinyPi } from "./app-fixture.mjs";
import { assistantMsg, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
let reg; // one registry shared by every case: a bad call must not spoil it
before(async () => {
  tp = await loadTinyPi();
  reg = new tp.ToolRegistry();
  reg.register({ name: "read", parameters: { type: "object", properties: { path: { type: "string" } } }, execute: async () => ({ content: [text("# tiny-pi")] }) });
});

const counts = { reject: 0, run: 0, tool: 0, survive: 0 };
after(() => {
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  console.log(`bad input: ${total} of ${cases.length} cases as specified (${counts.reject} rejected naming the field, ${counts.run} model faults ended as run errors, ` +
    `${counts.tool} tool faults became error results, ${counts.survive} garbage values survived), each followed by a good run`);
});

// --- what a case may do -------------------------------------------------------------------

function assertNamedError(e, field) {
  assert.ok(e instanceof Error, `expected an Error, got ${typeof e}: ${String(e)}`);
  assert.ok(!(e instanceof WebAssembly.RuntimeError), `the instance trapped: ${e.message}`);
  assert.doesNotMatch(e.message, /unreachable|RuntimeError|panicked/i, "a trap, not a validation error");
  assert.match(e.message, field, `the message names the field: ${e.message}`);
}

/** The call throws or rejects with an Error naming the field. */
async function rejects(fn, field) {
  let outcome;
  try {
    outcome = await fn();
  } catch (e) {
    assertNamedError(e, field);
    counts.reject += 1;
    return;
  }
  assert.fail(`expected an Error naming ${field}, got ${JSON.stringify(outcome)?.slice(0, 200)}`);
}

/** A run with a misbehaving model: resolves with reason "error" and `error` set (SPEC §4), or, where `orReject`, rejects naming the field. */
async function runErrors(options, field, { orReject = false } = {}) {
  const events = [];
  let result;
  try {
    result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, tools: reg, onEvent: (e) => events.push(e), ...options });
  } catch (e) {
    if (!orReject) throw e;
    assertNamedError(e, field);
    counts.run += 1;
    return;
  }
  assert.equal(result.reason, "error", JSON.stringify(result));
  assert.equal(typeof result.error, "string");
  assert.match(result.error, field);
  assert.deepEqual(result.messages.map((m) => m.role), ["user"], "nothing appended for the failed step");
  assert.equal(events.filter((e) => e.type === "turn_end").length, 1);
  counts.run += 1;
}

/** A tool that misbehaves: the run goes on, the call gets an isError result that says what was wrong. */
async function toolFails(execute, field) {
  const tools = new tp.ToolRegistry();
  tools.register({ name: "bad", execute });
  const model = new tp.ScriptedModel([assistantMsg([toolCall("b1", "bad")], "toolUse"), assistantMsg([text("ok")], "stop")]);
  const result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model, tools });
  assert.equal(result.reason, "stop");
  const r = result.messages[2];
  assert.deepEqual([r.role, r.toolCallId, r.toolName, r.isError], ["toolResult", "b1", "bad", true]);
  assert.match(r.content.map((c) => c.text).join("\n"), field);
  counts.tool += 1;
}

/** Garbage that a loop may accept or refuse: completes with a valid transcript, or rejects with an Error. */
async function survives(fn) {
  let result;
  try {
    result = await fn();
  } catch (e) {
    assertNamedError(e, /./);
    counts.survive += 1;
    return;
  }
  if (result && Array.isArray(result.messages)) {
    assert.ok(["stop", "length", "error", "aborted", "maxSteps"].includes(result.reason));
  }
  counts.survive += 1;
}

/** A garbage event then a good `done`: an error naming the event, or a normal run whose transcript is intact. */
async function garbageEvent(garbage) {
  let result;
  try {
    result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model: model(() => yields(garbage, { type: "done", reason: "stop", message: okMsg })) });
  } catch (e) {
    assertNamedError(e, /event/);
    counts.run += 1;
    return;
  }
  if (result.reason === "error") assert.match(result.error, /event/);
  else assert.deepEqual([result.reason, result.messages.at(-1)], ["stop", okMsg]);
  counts.survive += 1;
}

/** A hook that misbehaves on a one-call batch: the call is answered with an error result saying what was wrong. */
async function hookFails(hooks, field) {
  const model = new tp.ScriptedModel([assistantMsg([toolCall("h1", "read")], "toolUse"), assistantMsg([text("ok")], "stop")]);
  const result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model, tools: reg, ...hooks });
  assert.equal(result.reason, "stop");
  const r = result.messages[2];
  assert.deepEqual([r.toolCallId, r.isError], ["h1", true]);
  assert.match(r.content[0].text, field);
  counts.tool += 1;
}

/** A queue that misbehaves after a `stop`: the run ends with reason error naming it, nothing appended. */
async function hookRunErrors(hooks, field) {
  const result = await tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model: new tp.ScriptedModel([okMsg]), ...hooks });
  assert.deepEqual([result.reason, result.messages.length], ["error", 2]);
  assert.match(result.error, field);
  counts.run += 1;
}

const revoked = (target = {}) => {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
};

/** A model whose stream is whatever `make` returns. */
const model = (make) => ({ stream: () => make() });
async function* yields(...events) {
  for (const e of events) yield e;
}
const okMsg = assistantMsg([text("fine")], "stop");
const withResult = (it, result) => Object.assign(it, { result });

const loop = (options) => () => tp.runAgentLoop(options);
const ctx = (messages) => ({ messages });
const good = { context: ctx([userMsg("hi")]), model: { stream: () => withResult(yields({ type: "done", reason: "stop", message: okMsg }), async () => okMsg) } };
const withCall = (call) => assistantMsg([call], "toolUse");
const exec = async () => ({ content: [text("x")] });

// --- the cases ------------------------------------------------------------------------------

const cases = [
  // runAgentLoop(options)
  ["runAgentLoop()", () => rejects(() => tp.runAgentLoop(), /options/)],
  ["options null", () => rejects(loop(null), /options/)],
  ["options a number", () => rejects(loop(42), /options/)],
  ["options a string", () => rejects(loop("go"), /options/)],
  ["model missing", () => rejects(loop({ context: good.context }), /model/)],
  ["model null", () => rejects(loop({ ...good, model: null }), /model/)],
  ["model without stream", () => rejects(loop({ ...good, model: {} }), /model\.stream|stream/)],
  ["model.stream not a function", () => rejects(loop({ ...good, model: { stream: 3 } }), /stream is not a function|stream/)],
  ["maxSteps -1", () => rejects(loop({ ...good, maxSteps: -1 }), /maxSteps/)],
  ["maxSteps 1.5", () => rejects(loop({ ...good, maxSteps: 1.5 }), /maxSteps/)],
  ['maxSteps "3"', () => rejects(loop({ ...good, maxSteps: "3" }), /maxSteps/)],
  ["maxSteps NaN", () => rejects(loop({ ...good, maxSteps: NaN }), /maxSteps/)],
  ["maxSteps Infinity", () => rejects(loop({ ...good, maxSteps: Infinity }), /maxSteps/)],
  ["context missing", () => rejects(loop({ model: good.model }), /context/)],
  ["context null", () => rejects(loop({ ...good, context: null }), /context/)],
  ["context.messages missing", () => rejects(loop({ ...good, context: {} }), /messages/)],
  ["context.messages a string", () => rejects(loop({ ...good, context: ctx("hi") }), /messages/)],
  ["context.messages an object", () => rejects(loop({ ...good, context: ctx({ 0: userMsg("hi") }) }), /messages/)],
  ["context.systemPrompt a number", () => rejects(loop({ ...good, context: { ...good.context, systemPrompt: 42 } }), /systemPrompt/)],
  ["a null message", () => rejects(loop({ ...good, context: ctx([null]) }), /messages/)],
  ["a message with a bad role", () => rejects(loop({ ...good, context: ctx([{ role: "robot", content: "beep", timestamp: 1 }]) }), /role/)],
  ["a message without a role", () => rejects(loop({ ...good, context: ctx([{ content: "hi", timestamp: 1 }]) }), /role/)],
  ["a user message with numeric content", () => rejects(loop({ ...good, context: ctx([{ role: "user", content: 42, timestamp: 1 }]) }), /content/)],
  ["an assistant message whose content is not an array", () => rejects(loop({ ...good, context: ctx([userMsg("hi"), { role: "assistant", content: "hi", stopReason: "stop", timestamp: 2 }]) }), /content/)],
  ["a toolCall without id", () => rejects(loop({ ...good, context: ctx([userMsg("hi"), withCall({ type: "toolCall", name: "read", arguments: {} })]) }), /\bid\b/)],
  ["a toolCall with a numeric id", () => rejects(loop({ ...good, context: ctx([userMsg("hi"), withCall({ type: "toolCall", id: 7, name: "read", arguments: {} })]) }), /\bid\b/)],
  ["an assistant message with a bad stopReason", () => rejects(loop({ ...good, context: ctx([userMsg("hi"), assistantMsg([text("x")], "finished")]) }), /stopReason/)],
  ["a toolResult without toolCallId", () => rejects(loop({ ...good, context: ctx([userMsg("hi"), { role: "toolResult", toolName: "read", content: [], isError: false, timestamp: 3 }]) }), /toolCallId/)],
  ["tools a plain object", () => rejects(loop({ ...good, tools: {} }), /tools/)],
  ["tools an array", () => rejects(loop({ ...good, tools: [] }), /tools/)],
  // A look-alike with both definitions() and execute() is a tool source (issue 19); one without execute is not.
  ["tools a look-alike", () => rejects(loop({ ...good, tools: { definitions: () => [] } }), /tools/)],
  ["tools a source whose execute is not a function", () => rejects(loop({ ...good, tools: { definitions: () => [], execute: 1 } }), /options\.tools\.execute/)],
  ["onEvent a number", () => rejects(loop({ ...good, onEvent: 5 }), /onEvent/)],
  ["onEvent an object", () => rejects(loop({ ...good, onEvent: {} }), /onEvent/)],
  ["signal a look-alike", () => rejects(loop({ ...good, signal: { aborted: false, addEventListener() {} } }), /signal/)],
  ["signal a string", () => rejects(loop({ ...good, signal: "abort" }), /signal/)],
  ["executeToolCall a string", () => rejects(loop({ ...good, executeToolCall: "x" }), /executeToolCall/)],
  ["now a number", () => rejects(loop({ ...good, now: 1 }), /now/)],

  // runAgentLoop's SPEC §7 options and registry fields
  ['toolExecution "serial"', () => rejects(loop({ ...good, toolExecution: "serial" }), /^options\.toolExecution must be "parallel" or "sequential" \(got string "serial"\)$/)],
  ["toolExecution a number", () => rejects(loop({ ...good, toolExecution: 1 }), /options\.toolExecution must be/)],
  ["toolTimeoutMs 0", () => rejects(loop({ ...good, toolTimeoutMs: 0 }), /^options\.toolTimeoutMs must be a positive integer number of milliseconds, at most 2147483647 \(got 0\)$/)],
  ["toolTimeoutMs -5", () => rejects(loop({ ...good, toolTimeoutMs: -5 }), /options\.toolTimeoutMs/)],
  ["toolTimeoutMs 1.5", () => rejects(loop({ ...good, toolTimeoutMs: 1.5 }), /options\.toolTimeoutMs/)],
  ["toolTimeoutMs 2^31", () => rejects(loop({ ...good, toolTimeoutMs: 2 ** 31 }), /options\.toolTimeoutMs/)],
  ["toolTimeoutMs NaN", () => rejects(loop({ ...good, toolTimeoutMs: NaN }), /options\.toolTimeoutMs/)],
  ['toolTimeoutMs "100"', () => rejects(loop({ ...good, toolTimeoutMs: "100" }), /options\.toolTimeoutMs .*\(got string "100"\)/)],
  ["beforeToolCall a string", () => rejects(loop({ ...good, beforeToolCall: "block" }), /^options\.beforeToolCall must be a function \(got string\)$/)],
  ["afterToolCall an object", () => rejects(loop({ ...good, afterToolCall: {} }), /^options\.afterToolCall must be a function/)],
  ["prepareRequest a number", () => rejects(loop({ ...good, prepareRequest: 1 }), /^options\.prepareRequest must be a function/)],
  ["getSteeringMessages an array", () => rejects(loop({ ...good, getSteeringMessages: [] }), /^options\.getSteeringMessages must be a function \(got array\)/)],
  ["getFollowUpMessages true", () => rejects(loop({ ...good, getFollowUpMessages: true }), /^options\.getFollowUpMessages must be a function/)],
  ['customRoles "note"', () => rejects(loop({ ...good, customRoles: "note" }), /^options\.customRoles must be an array of role names \(got string\)$/)],
  ["customRoles [42]", () => rejects(loop({ ...good, customRoles: [42] }), /^options\.customRoles\[0\] must be a non-empty string \(got 42\)$/)],
  ['customRoles [""]', () => rejects(loop({ ...good, customRoles: ["note", ""] }), /^options\.customRoles\[1\] must be a non-empty string/)],
  ['customRoles ["user"]', () => rejects(loop({ ...good, customRoles: ["user"] }), /^options\.customRoles\[0\]: "user" is one of SPEC's own roles/)],
  ["a custom role not listed", () => rejects(loop({ ...good, customRoles: ["note"], context: ctx([userMsg("hi"), { role: "memo" }]) }), /options\.context\.messages\[1\]\.role must be one of .* \(got "memo"\)/)],
  ['register with executionMode "serial"', () => rejects(() => reg.register({ name: "x", execute: exec, executionMode: "serial" }), /^tool\.executionMode must be "parallel" or "sequential" \(got string "serial"\)$/)],
  ["register with timeoutMs 0", () => rejects(() => reg.register({ name: "x", execute: exec, timeoutMs: 0 }), /^tool\.timeoutMs must be a positive integer number of milliseconds/)],
  ['register with timeoutMs "5"', () => rejects(() => reg.register({ name: "x", execute: exec, timeoutMs: "5" }), /^tool\.timeoutMs .*\(got string "5"\)/)],
  ["register with timeoutMs Infinity", () => rejects(() => reg.register({ name: "x", execute: exec, timeoutMs: Infinity }), /^tool\.timeoutMs/)],
  // hooks that misbehave: the call or the run answers as SPEC §7 says, never a trap
  ["beforeToolCall returns {block: \"yes\"}", () => hookFails({ beforeToolCall: () => ({ block: "yes" }) }, /^beforeToolCall failed: returned block must be true or false \(got string "yes"\)$/)],
  ["beforeToolCall returns a revoked proxy", () => hookFails({ beforeToolCall: () => revoked() }, /^beforeToolCall failed: /)],
  ["beforeToolCall rejects with a non-Error", () => hookFails({ beforeToolCall: () => Promise.reject(42) }, /^beforeToolCall failed: 42$/)],
  ["afterToolCall returns content with a bad block", () => hookFails({ afterToolCall: () => ({ content: [{ type: "video" }] }) }, /^afterToolCall failed: returned content\[0\]/)],
  ["afterToolCall returns a cyclic details", () => hookFails({ afterToolCall: () => { const d = {}; d.d = d; return { details: d }; } }, /^afterToolCall failed: returned details: /)],
  ["afterToolCall returns a thenable that throws", () => hookFails({ afterToolCall: () => ({ then() { throw new Error("bad then"); } }) }, /^afterToolCall failed: bad then$/)],
  ["prepareRequest returns messages with a BigInt", () => runErrors({ model: new tp.ScriptedModel([okMsg]), prepareRequest: () => ({ messages: [{ role: "user", content: "x", timestamp: 1n }] }) }, /^prepareRequest failed: returned messages\[0\]\.timestamp: .*BigInt/i)],
  ["getFollowUpMessages returns a revoked array", () => hookRunErrors({ getFollowUpMessages: () => revoked([]) }, /^getFollowUpMessages failed: returned messages must be an array/)],

  // ScriptedModel
  ["new ScriptedModel()", () => rejects(() => new tp.ScriptedModel(), /messages/)],
  ["new ScriptedModel(string)", () => rejects(() => new tp.ScriptedModel("x"), /messages/)],
  ["new ScriptedModel([null])", () => rejects(() => new tp.ScriptedModel([null]), /messages/)],
  ["new ScriptedModel([a message whose role is user])", () => rejects(() => new tp.ScriptedModel([{ role: "user", content: [text("hi")], stopReason: "stop", timestamp: 1 }]), /role|assistant/)],
  ["new ScriptedModel([assistant, content a string])", () => rejects(() => new tp.ScriptedModel([{ role: "assistant", content: "x", stopReason: "stop", timestamp: 1 }]), /content/)],
  ["new ScriptedModel([], 5)", () => rejects(() => new tp.ScriptedModel([], 5), /options/)],
  ['new ScriptedModel([], { events: "full" })', () => rejects(() => new tp.ScriptedModel([], { events: "full" }), /options\.events/)],
  ["new ScriptedModel([], { events: {} })", () => rejects(() => new tp.ScriptedModel([], { events: {} }), /options\.events/)],

  // ToolRegistry.register
  ["register()", () => rejects(() => reg.register(), /tool/)],
  ["register(null)", () => rejects(() => reg.register(null), /tool/)],
  ["register without name", () => rejects(() => reg.register({ execute: exec }), /name/)],
  ["register with an empty name", () => rejects(() => reg.register({ name: "", execute: exec }), /name/)],
  ["register with a numeric name", () => rejects(() => reg.register({ name: 42, execute: exec }), /name/)],
  ["register with a name providers reject", () => rejects(() => reg.register({ name: "has space!", execute: exec }), /tool\.name must match/)],
  ["register with a 10,000-character name", () => rejects(() => reg.register({ name: "n".repeat(10_000), execute: exec }), /tool\.name must match/)],
  ["register without execute", () => rejects(() => reg.register({ name: "x" }), /execute/)],
  ["register with execute a string", () => rejects(() => reg.register({ name: "x", execute: "run" }), /execute/)],
  ["register with a numeric description", () => rejects(() => reg.register({ name: "x", description: 42, execute: exec }), /description/)],
  ["register with parameters a string", () => rejects(() => reg.register({ name: "x", parameters: "schema", execute: exec }), /parameters/)],
  ["register with parameters.type a number", () => rejects(() => reg.register({ name: "x", parameters: { type: 5 }, execute: exec }), /parameters|type/)],
  ["register with an unknown parameters.type", () => rejects(() => reg.register({ name: "x", parameters: { type: "banana" }, execute: exec }), /parameters|type/)],
  ["register with parameters.required a string", () => rejects(() => reg.register({ name: "x", parameters: { type: "object", required: "path" }, execute: exec }), /parameters|required/)],

  // ToolRegistry.execute
  ["registry.execute(null)", () => rejects(() => reg.execute(null), /call/)],
  ["registry.execute(call without id)", () => rejects(() => reg.execute({ type: "toolCall", name: "read", arguments: {} }), /\bid\b/)],
  ["registry.execute(call, {signal: string})", () => rejects(() => reg.execute(toolCall("e1", "read"), { signal: "x" }), /signal/)],
  ["registry.execute(call, {reportProgress: 5})", () => rejects(() => reg.execute(toolCall("e1", "read"), { reportProgress: 5 }), /reportProgress/)],

  // validateTranscript and the trace functions
  ["validateTranscript()", () => rejects(() => tp.validateTranscript(), /messages/)],
  ["validateTranscript(string)", () => rejects(() => tp.validateTranscript("garbage"), /messages/)],
  ["validateTranscript({length: 3})", () => rejects(() => tp.validateTranscript({ length: 3 }), /messages/)],
  ["validateTranscript([42])", () => rejects(() => tp.validateTranscript([42]), /messages/)],
  // a BigInt JSON cannot write: the error names where it is, after the app's toJSON (the path JSON.stringify took)
  ["validateTranscript with a BigInt timestamp", () => rejects(() => tp.validateTranscript([userMsg("a"), { ...userMsg("b"), timestamp: 3n }]), /^messages\[1\]\.timestamp: .*BigInt/i)],
  ["a BigInt under a key that is no identifier, and a BigInt object", () => rejects(() => tp.validateTranscript([{ ...userMsg("a"), meta: { "a.b": [0, { "": Object(2n) }] } }]), /^messages\[0\]\.meta\["a\.b"\]\[1\]\[""\]: .*BigInt/i)],
  ["a message's toJSON asked with its key as jsonLines asks it (\"\"), not as an array's element", () => rejects(() => tp.validateTranscript([{ toJSON: (key) => (key === "" ? { ...userMsg("a"), timestamp: 1n } : { ...userMsg("a"), other: 1n }) }]), /^messages\[0\]\.timestamp: .*BigInt/i)],
  ["a BigInt 2,000 levels deep: the path is cut at 200 characters", () => rejects(() => { const root = {}; let at = root; for (let i = 0; i < 2000; i += 1) at = at.a = {}; at.n = 1n; return tp.validateTranscript([{ ...userMsg("a"), deep: root }]); }, /^messages\[0\]\.deep(\.a)+\.?…: .*BigInt/i)],
  ["validateTranscript with a BigInt behind toJSON", () => rejects(() => tp.validateTranscript([{ toJSON: () => ({ ...userMsg("a"), content: [{ type: "text", text: "x", n: [0, 1n] }] }) }]), /^messages\[0\]\.content\[0\]\.n\[1\]: .*BigInt/i)],
  ["validateTranscript([bad role])", () => rejects(() => tp.validateTranscript([{ role: "robot" }]), /role/)],
  ["prologueTrace(null)", () => rejects(() => tp.prologueTrace(null), /messages/)],
  ["formatTrace(string)", () => rejects(() => tp.formatTrace("x"), /records/)],
  ["formatTrace([bad record])", () => rejects(() => tp.formatTrace([{ seq: "1" }]), /records|seq|kind|owner/)],
  ["validateTrace(42)", () => rejects(() => tp.validateTrace(42), /records/)],

  // a model that misbehaves: the run ends with reason error (SPEC §4) or rejects naming the stream
  ["stream() throws", () => runErrors({ model: model(() => { throw new Error("stream exploded"); }) }, /^stream exploded$/)],
  ["the stream throws after start", () => runErrors({ model: model(() => (async function* () { yield { type: "start" }; throw new Error("midway failure"); })()) }, /^midway failure$/)],
  ["result() rejects", () => runErrors({ model: model(() => withResult(yields({ type: "start" }), () => Promise.reject(new Error("result failed")))) }, /^result failed$/)],
  ["the stream ends with no event and no result()", () => runErrors({ model: model(() => yields()) }, /./)],
  ["stream() returns a number", () => runErrors({ model: model(() => 42) }, /stream|iterable/, { orReject: true })],
  ["stream() returns null", () => runErrors({ model: model(() => null) }, /stream|iterable/, { orReject: true })],
  ["stream() returns a plain object", () => runErrors({ model: model(() => ({})) }, /stream|iterable/, { orReject: true })],
  // Each step of opening a stream that can fail, with what the error says.
  ["the stream's iterator method throws", () => runErrors({ model: model(() => ({ [Symbol.asyncIterator]() { throw new Error("no iterator today"); } })) }, /^no iterator today$/)],
  ["a throwing asyncIterator getter, a good sync iterator", async () => {
    const stream = { get [Symbol.asyncIterator]() { throw new Error("getter"); }, *[Symbol.iterator]() { yield { type: "done", reason: "stop", message: okMsg }; } };
    const result = await tp.runAgentLoop({ context: ctx([userMsg("hi")]), model: model(() => stream) });
    assert.deepEqual([result.reason, result.messages.at(-1)], ["stop", okMsg]);
  }],
  ["an asyncIterator getter that runs a whole nested run first, then gives nothing", () => {
    const stream = { get [Symbol.asyncIterator]() { tp.runAgentLoop(good); return undefined; } };
    return runErrors({ model: model(() => stream) }, /must return an async iterable \(got object\)/);
  }],
  ["reading the iterator's next throws", () => runErrors({ model: model(() => ({ [Symbol.asyncIterator]() { return { get next() { throw new Error("next getter"); } }; } })) }, /^next getter$/)],
  ["an async iterator method (it gives a rejected promise)", () => runErrors({ model: model(() => ({ async [Symbol.asyncIterator]() { throw new Error("async iterator"); } })) }, /has no next\(\) method/)],
  ["the iterator has no next()", () => runErrors({ model: model(() => ({ [Symbol.asyncIterator]() { return { next: 5 }; } })) }, /model stream iterator has no next\(\) method/)],
  ["the iterator method returns a number", () => runErrors({ model: model(() => ({ [Symbol.asyncIterator]() { return 5; } })) }, /model stream iterator has no next\(\) method/)],
  ["reading the stream's result throws", () => runErrors({ model: model(() => Object.defineProperty(yields(), "result", { get() { throw new Error("result getter"); } })) }, /^result getter$/)],
  ["result() throws instead of rejecting", () => runErrors({ model: model(() => withResult(yields(), () => { throw new Error("sync result"); })) }, /^sync result$/)],
  // Garbage events before a good `done`: refused naming the event, or passed over (pi-ai adds event types).
  ["the stream yields a number", () => garbageEvent(42)],
  ["the stream yields null", () => garbageEvent(null)],
  ["the stream yields an event with a numeric type", () => garbageEvent({ type: 5 })],
  ["result() resolves a number", () => runErrors({ model: model(() => withResult(yields(), async () => 42)) }, /message|result|assistant/, { orReject: true })],
  ["result() resolves a message whose role is user", () => runErrors({ model: model(() => withResult(yields(), async () => ({ role: "user", content: [text("me")], stopReason: "stop", timestamp: 2 }))) }, /role|assistant/, { orReject: true })],
  ["done carries a garbage message (no result())", () => runErrors({ model: model(() => yields({ type: "done", reason: "stop", message: 42 })) }, /message|assistant/, { orReject: true })],
  ["the final message has a toolCall without id", () => runErrors({ model: model(() => withResult(yields(), async () => withCall({ type: "toolCall", name: "read", arguments: {} }))) }, /\bid\b/, { orReject: true })],

  // a tool that misbehaves: an isError result (the core executor never rejects)
  ["a tool returns a number", () => toolFails(() => 42, /result|content/)],
  ["a tool returns null", () => toolFails(() => null, /result|content/)],
  ["a tool returns undefined", () => toolFails(() => undefined, /result|content/)],
  ["a tool returns content as a string", () => toolFails(() => ({ content: "str" }), /content/)],
  ["a tool returns a BigInt in its details", () => toolFails(() => ({ content: [text("x")], details: { rows: [{ id: 7n }] } }), /^tool "bad" result\.details\.rows\[0\]\.id: .*BigInt/i)],
  ["a tool returns an unknown content block", () => toolFails(() => ({ content: [{ type: "video", url: "x" }] }), /content|type/)],
  ["a tool rejects with a non-Error", () => toolFails(() => Promise.reject(42), /42/)],

  // garbage a loop may accept or refuse, but must not trap on (issue 5)
  ["a cyclic extra field on a message", () => survives(() => { const m = userMsg("hi"); m.self = m; return tp.runAgentLoop({ ...good, context: ctx([m]) }); })],
  ["a function as an extra field", () => survives(() => tp.runAgentLoop({ ...good, context: ctx([{ ...userMsg("hi"), fn() {} }]) }))],
  ["a BigInt in tool arguments", () => survives(() => tp.runAgentLoop({ ...good, context: ctx([userMsg("hi"), withCall(toolCall("z", "read", { n: 10n })), { role: "toolResult", toolCallId: "z", toolName: "read", content: [], isError: false, timestamp: 3 }]) }))],
  ["a __proto__ key in tool arguments", async () => {
    const args = JSON.parse('{"__proto__": {"polluted": true}, "path": "x"}');
    await survives(() => tp.runAgentLoop({ ...good, tools: reg, model: new tp.ScriptedModel([withCall(toolCall("p1", "read", args)), okMsg]) }));
    assert.equal({}.polluted, undefined, "Object.prototype not polluted");
  }],
  ["a 10 MB string", () => survives(() => tp.runAgentLoop({ ...good, context: ctx([userMsg("x".repeat(10_000_000))]) }))],
  ["10,000 content blocks", () => survives(() => tp.runAgentLoop({ ...good, context: ctx([userMsg(Array.from({ length: 10_000 }, (_, i) => text(`b${i}`)))]) }))],
  ["a thenable from onEvent that throws", async () => {
    const result = await tp.runAgentLoop({ ...good, onEvent: () => ({ then() { throw new Error("bad thenable"); } }) });
    assert.equal(result.reason, "stop");
    assert.match(String(result.observerError), /bad thenable/);
    counts.survive += 1;
  }],
  ["executeToolCall resolves a number", () => survives(async () => {
    const result = await tp.runAgentLoop({ ...good, model: new tp.ScriptedModel([withCall(toolCall("q1", "read")), okMsg]), executeToolCall: async () => 42 });
    assert.ok(tp.validateTranscript(result.messages).ok, "the call still has a result");
    assert.equal(result.messages[2].isError, true);
    return result;
  })],
  ["executeToolCall answers with another call's id", () => survives(async () => {
    const result = await tp.runAgentLoop({
      ...good,
      model: new tp.ScriptedModel([withCall(toolCall("q2", "read")), okMsg]),
      executeToolCall: async () => ({ role: "toolResult", toolCallId: "someone-else", toolName: "read", content: [], isError: false, timestamp: 1 }),
    });
    assert.deepEqual(tp.validateTranscript(result.messages), { ok: true, problems: [] }, "the transcript stays paired");
    return result;
  })],
];

/** The good run after each case: the README round trip on the same instance, plus the shared registry. */
async function goodRun() {
  const { problems } = await readmeRoundTrip(tp);
  assert.deepEqual(problems, [], "a good run after the bad input");
  const { input, script } = readmeScript();
  const result = await tp.runAgentLoop({ context: { messages: input }, model: new tp.ScriptedModel(script), tools: reg });
  assert.deepEqual([result.reason, result.steps, result.messages[2].isError], ["stop", 2, false], "the shared registry still works");
}

test("bad input (SPEC §6), each followed by a good run on the same instance", { timeout: 120_000 }, async (t) => {
  await goodRun();
  for (const [name, fn] of cases) {
    await t.test(name, async () => {
      await fn();
      await goodRun();
    });
  }
  t.diagnostic(`${cases.length} bad-input cases`);
});
