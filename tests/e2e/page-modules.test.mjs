// The playground's pure modules, in Node (no browser): scenario data, the editor's checks, transcript
// parsing, call/result pairing and the links between events and messages.

import { test } from "node:test";
import assert from "node:assert/strict";
import { SCENARIOS, validateDefinition, jsonErrorIndex, parseTranscript } from "../../www/scenarios.js";
import { detectLang } from "../../www/i18n.js";
import { pairCalls, messageKeys, eventKey } from "../../www/views.js";

test("every scenario definition passes the editor's own check, and the ids are unique", () => {
  for (const s of SCENARIOS) assert.deepEqual(validateDefinition(s.def), [], s.id);
  assert.equal(new Set(SCENARIOS.map((s) => s.id)).size, SCENARIOS.length);
});

test("the editor's check names the path of each problem", () => {
  const good = structuredClone(SCENARIOS[0].def);
  const paths = (d) => validateDefinition(d).map((e) => e.path);
  assert.deepEqual(paths([]), ["$"]);
  assert.deepEqual(paths({ ...good, extra: 1 }), ["extra"]);
  assert.deepEqual(paths({ ...good, script: [{ ...good.script[0], stopReason: "done" }] }), ["script[0].stopReason"]);
  assert.deepEqual(paths({ ...good, script: [{ ...good.script[0], content: [{ type: "toolCall", id: "", name: "read", arguments: [] }] }] }), [
    "script[0].content[0].id",
    "script[0].content[0].arguments",
  ]);
  assert.deepEqual(paths({ ...good, tools: { read: { delay: -1, gate: "yes", reject: 3, colour: "red" } } }), [
    "tools.read.colour",
    "tools.read.gate",
    "tools.read.delay",
    "tools.read.reject",
  ]);
  assert.deepEqual(paths({ ...good, maxSteps: 1.5, abort: "later", executor: "mine" }), ["executor", "maxSteps", "abort"]);
  assert.deepEqual(paths({ ...good, messages: [{ role: "system", content: "x" }] }), ["messages[0].role"]);
});

test("jsonErrorIndex finds where JSON.parse gives up, and is null exactly when it parses", () => {
  const cases = {
    "{}": null,
    '{"a":[1,2.5e3,true,null,"x\\"y"]}': null,
    '{"script": [}': 12,
    '{"a":1,}': 7,
    '{"a" 1}': 5,
    "[1, 2": 5,
    '"x" y': 4,
    "-01": 2,
    "": 0,
  };
  for (const [source, at] of Object.entries(cases)) {
    assert.equal(jsonErrorIndex(source), at, source);
    let parses = true;
    try {
      JSON.parse(source);
    } catch {
      parses = false;
    }
    assert.equal(at === null, parses, `agrees with JSON.parse on ${source}`);
  }
});

test("a pasted transcript may be a JSON array or JSONL; a bad line is named", () => {
  const a = { role: "user", content: "hi", timestamp: 1 };
  const b = { role: "assistant", content: [], stopReason: "stop", timestamp: 2 };
  assert.deepEqual(parseTranscript(JSON.stringify([a, b])), [a, b]);
  assert.deepEqual(parseTranscript(`${JSON.stringify(a)}\n\n${JSON.stringify(b)}\n`), [a, b]);
  assert.deepEqual(parseTranscript("  "), []);
  assert.throws(() => parseTranscript(`${JSON.stringify(a)}\n{oops`), (err) => err.line === 2);
  assert.throws(() => parseTranscript('{"role":"user"} x'), (err) => err.line === 1);
});

test("the UI language follows the first Chinese or English preference", () => {
  assert.equal(detectLang(["zh-CN"]), "zh");
  assert.equal(detectLang(["fr-FR", "zh-TW", "en"]), "zh");
  assert.equal(detectLang(["en-US", "zh"]), "en");
  assert.equal(detectLang(["fr"]), "en");
  assert.equal(detectLang([]), "en");
});

const call = (id, name = "read") => ({ type: "toolCall", id, name, arguments: {} });
const result = (id, name = "read") => ({ role: "toolResult", toolCallId: id, toolName: name, content: [], isError: false, timestamp: 0 });
const user = { role: "user", content: "go", timestamp: 0 };
const assistant = (...content) => ({ role: "assistant", content, stopReason: "toolUse", timestamp: 0 });

test("pairing links each call to the first later result with its id; the rest are unpaired or orphans", () => {
  const { calls, orphans } = pairCalls([user, result("early"), assistant(call("a"), call("b"), call("early")), result("b"), result("a"), result("x")]);
  assert.deepEqual(
    calls.map((c) => [c.callId, c.resultIndex]),
    [["a", 4], ["b", 3], ["early", null]],
  );
  assert.deepEqual(orphans.map((o) => [o.callId, o.index]), [["early", 1], ["x", 5]]);
});

test("calls that repeat an id in one message share the one result and are marked", () => {
  const { calls } = pairCalls([user, assistant(call("c"), call("c")), result("c")]);
  assert.deepEqual(calls.map((c) => [c.resultIndex, c.duplicate]), [[2, true], [2, true]]);
  // An id used again by a later message is a new call with its own result.
  const later = pairCalls([user, assistant(call("c")), result("c"), assistant(call("c")), result("c")]).calls;
  assert.deepEqual(later.map((c) => [c.resultIndex, c.duplicate]), [[2, false], [4, false]]);
});

test("an event's key names the message it produced", () => {
  const messages = [user, assistant(call("call-1")), result("call-1"), { ...assistant(), stopReason: "stop" }];
  assert.deepEqual(messageKeys(messages, 1), ["in:0", "a:1", "r:1:call-1", "a:2"]);
  assert.deepEqual(messageKeys(messages, 3), ["in:0", "in:1", "in:2", "a:1"], "imported messages are input");
  assert.equal(eventKey({ type: "model_event", request: 2 }), "a:2");
  assert.equal(eventKey({ type: "assistant_message", request: 1 }), "a:1");
  assert.equal(eventKey({ type: "tool_end", request: 1, callId: "call-1" }), "r:1:call-1");
  assert.equal(eventKey({ type: "turn_end", request: 2 }), null);
});
