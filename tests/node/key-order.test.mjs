// Objects keep their key order through a run of the installed package (issue 17, item 2): a tool's schema
// reaches the model as declared, and arguments, details and fields tiny-pi does not know come back as they
// went in. Every object here has keys that are not sorted, so a sorting map in between would fail it.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { loadTinyPi } from "./app-fixture.mjs";
import { assistantMsg, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPi();
});

const T = { timeout: 20_000 };
const keys = (o) => Object.keys(o);
const schema = {
  type: "object",
  properties: { zeta: { type: "string" }, alpha: { type: "integer", minimum: 0 }, mid: { enum: ["b", "a"] } },
  required: ["zeta", "alpha"],
  additionalProperties: false,
};

test("a round trip keeps the key order of the schema, the arguments, the details and every extra field", T, async () => {
  const tools = new tp.ToolRegistry();
  const seen = [];
  tools.register({
    name: "pick",
    description: "Pick",
    parameters: schema,
    execute: async (args) => {
      seen.push(keys(args));
      return { content: [text("ok")], details: { zulu: 1, alpha: { y: 1, b: 2 } } };
    },
  });
  assert.deepEqual(keys(tools.definitions()[0]), ["name", "description", "parameters"]);
  assert.deepEqual(tools.definitions()[0].parameters, schema);
  assert.deepEqual(keys(tools.definitions()[0].parameters.properties), ["zeta", "alpha", "mid"]);

  const call = { ...toolCall("c1", "pick", { zeta: "z", alpha: 1, mid: "b" }), yy: true, bb: false };
  const first = assistantMsg([call], "toolUse", { usage: { output: 3, input: 2 }, api: "x" });
  const model = new tp.ScriptedModel([first, assistantMsg([text("done")], "stop")]);
  const input = [{ ...userMsg("go"), zz: 1, aa: { d: 1, c: 2 } }];
  const result = await tp.runAgentLoop({ context: { messages: input }, model, tools });
  assert.equal(result.reason, "stop", result.error);

  // The model saw the schema as declared, on every request.
  for (const request of model.requests) {
    assert.deepEqual(keys(request.tools[0].parameters), ["type", "properties", "required", "additionalProperties"]);
    assert.deepEqual(keys(request.tools[0].parameters.properties), ["zeta", "alpha", "mid"]);
    assert.deepEqual(keys(request.tools[0].parameters.properties.alpha), ["type", "minimum"]);
  }
  // The tool got its arguments in the model's order.
  assert.deepEqual(seen, [["zeta", "alpha", "mid"]]);
  // What comes back has every key where it was.
  const [user, assistant, result1] = result.messages;
  assert.deepEqual(keys(user), ["role", "content", "timestamp", "zz", "aa"]);
  assert.deepEqual(keys(user.aa), ["d", "c"]);
  assert.deepEqual(keys(assistant), ["role", "content", "stopReason", "timestamp", "usage", "api"]);
  assert.deepEqual(keys(assistant.usage), ["output", "input"]);
  assert.deepEqual(keys(assistant.content[0]), ["type", "id", "name", "arguments", "yy", "bb"]);
  assert.deepEqual(keys(assistant.content[0].arguments), ["zeta", "alpha", "mid"]);
  assert.deepEqual(keys(result1.details), ["zulu", "alpha"]);
  assert.deepEqual(keys(result1.details.alpha), ["y", "b"]);
  // And the second request's transcript too (the objects crossed into wasm and back).
  const [, seenAssistant, seenResult] = model.requests[1].messages;
  assert.deepEqual(keys(seenAssistant.content[0].arguments), ["zeta", "alpha", "mid"]);
  assert.deepEqual(keys(seenResult.details), ["zulu", "alpha"]);
  model.free();
  tools.free();
});

test("a custom executor's result keeps its own fields' order; the pairing fields come from the call", T, async () => {
  const model = new tp.ScriptedModel([assistantMsg([toolCall("c1", "any")], "toolUse"), assistantMsg([text("done")], "stop")]);
  const executeToolCall = async () => ({ zeta: 1, toolName: "wrong", content: [text("ok")], alpha: 2, details: { z: 1, a: 2 }, isError: false, omega: 3 });
  const result = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, executeToolCall, now: () => 9 });
  const r = result.messages[2];
  assert.equal(r.toolName, "any");
  assert.deepEqual(keys(r.details), ["z", "a"]);
  const extras = keys(r).filter((k) => !["role", "toolCallId", "toolName", "content", "details", "isError", "timestamp"].includes(k));
  assert.deepEqual(extras, ["zeta", "alpha", "omega"]);
  model.free();
});
