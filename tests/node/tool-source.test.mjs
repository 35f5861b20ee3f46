// options.tools may be a tool source of the caller's own (issue 19: the conformance kit hands every loop an
// object with definitions() and execute(call, context)): its definitions are what each request offers, its
// execute runs the calls with the object as `this`, executeToolCall still replaces it, and bad sources are
// refused with a TypeError naming the field.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { loadTinyPi } from "./app-fixture.mjs";
import { assistantMsg, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPi();
});

const script = () => [assistantMsg([toolCall("c1", "look", { q: "x" })], "toolUse"), assistantMsg([text("done")], "stop")];

function source(log) {
  return {
    definitions() {
      log.push("definitions");
      return [{ name: "look", description: "Look it up", parameters: { type: "object", properties: { q: { type: "string" } } } }];
    },
    async execute(call, context) {
      log.push(`execute ${call.id}`);
      context.reportProgress([text("half")]);
      return { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [text(`found ${call.arguments.q}`)], details: { hits: 1 }, isError: false, timestamp: 7 };
    },
  };
}

test("a tool source: each request offers its definitions, its execute runs the call with itself as this", async () => {
  const log = [];
  const tools = source(log);
  const execute = tools.execute;
  tools.execute = function (call, context) {
    log.push(`this is the source: ${this === tools}`);
    return execute.call(this, call, context);
  };
  const model = new tp.ScriptedModel(script());
  const events = [];
  const result = await tp.runAgentLoop({ context: { messages: [userMsg("look x")] }, model, tools, onEvent: (e) => events.push(e.type) });
  assert.equal(result.reason, "stop");
  assert.deepEqual(log.filter((l) => l.startsWith("this")), ["this is the source: true"]);
  assert.equal(log.filter((l) => l === "definitions").length, 1, "read once per run");
  assert.deepEqual(model.requests.map((r) => r.tools.map((d) => d.name)), [["look"], ["look"]]);
  assert.equal(model.requests[0].tools[0].description, "Look it up");
  assert.deepEqual(result.messages[2], { role: "toolResult", toolCallId: "c1", toolName: "look", content: [text("found x")], details: { hits: 1 }, isError: false, timestamp: 7 });
  assert.ok(events.includes("tool_progress"));
  model.free();
});

test("executeToolCall replaces the source's execute; a rejecting source is an error result", async () => {
  const log = [];
  const tools = source(log);
  const model = new tp.ScriptedModel(script());
  const result = await tp.runAgentLoop({
    context: { messages: [userMsg("look x")] },
    model,
    tools,
    executeToolCall: async (call) => ({ role: "toolResult", toolCallId: call.id, toolName: call.name, content: [text("from executeToolCall")], isError: false, timestamp: 1 }),
  });
  assert.ok(!log.some((l) => l.startsWith("execute")), "the source's execute never ran");
  assert.equal(result.messages[2].content[0].text, "from executeToolCall");
  model.free();

  const failing = { definitions: () => [{ name: "look" }], execute: async () => { throw new Error("index down"); } };
  const model2 = new tp.ScriptedModel(script());
  const r2 = await tp.runAgentLoop({ context: { messages: [userMsg("look x")] }, model: model2, tools: failing });
  assert.equal(r2.messages[2].isError, true);
  assert.match(r2.messages[2].content[0].text, /index down/);
  assert.equal(r2.messages[2].toolCallId, "c1");
  model2.free();
});

test("a bad tool source is a TypeError naming the field, and the next run works", async () => {
  const run = (tools) => tp.runAgentLoop({ context: { messages: [userMsg("hi")] }, model: new tp.ScriptedModel([assistantMsg([text("ok")], "stop")]), tools });
  const cases = [
    [{}, /options\.tools must be a ToolRegistry or an object with definitions\(\) and execute\(call, context\) \(got object\)/],
    [5, /options\.tools must be a ToolRegistry or an object with definitions\(\) and execute/],
    [{ definitions: () => [], execute: 3 }, /options\.tools\.execute must be a function/],
    [{ definitions: () => { throw new Error("boom"); }, execute() {} }, /options\.tools\.definitions\(\) threw: boom/],
    [{ definitions: () => "nope", execute() {} }, /options\.tools\.definitions\(\) must be an array of tool definitions/],
    [{ definitions: () => [{ description: "no name" }], execute() {} }, /options\.tools\.definitions\(\)\[0\]/],
  ];
  for (const [tools, message] of cases) {
    await assert.rejects(run(tools), (err) => err instanceof TypeError && message.test(err.message), String(message));
  }
  const ok = await run({ definitions: () => [], execute() {} });
  assert.equal(ok.reason, "stop");
});
