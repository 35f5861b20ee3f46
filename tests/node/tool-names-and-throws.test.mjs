// Issue 17, item 5, through the installed package: a tool name providers reject fails at `register` with a
// TypeError naming the rule, and a thrown value that is not an Error reads as its JSON (or its
// Object.prototype.toString tag when it has none), cut to 200 characters.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { loadTinyPi } from "./app-fixture.mjs";
import { assistantMsg, text, toolCall, userMsg } from "./helpers.mjs";

let tp;
before(async () => {
  tp = await loadTinyPi();
});

const T = { timeout: 20_000 };
const execute = async () => ({ content: [text("ok")] });

test("register refuses a name outside ^[a-zA-Z0-9_-]{1,64}$ with a TypeError; the registry stays usable", T, async () => {
  const tools = new tp.ToolRegistry();
  for (const [name, got] of [
    ["has space!", '"has space!"'],
    ["read.file", '"read.file"'],
    ["读取", '"读取"'],
    ["a".repeat(65), "65 characters"],
  ]) {
    assert.throws(
      () => tools.register({ name, execute }),
      (e) => e instanceof TypeError && e.message === `tool.name must match ^[a-zA-Z0-9_-]{1,64}$ (got ${got})`,
      name,
    );
  }
  for (const name of ["read_file", "read-file", "Read2", "a".repeat(64)]) tools.register({ name, execute });
  assert.deepEqual(tools.definitions().map((d) => d.name.length), [9, 9, 5, 64]);
  tools.free();
});

test("a schema under another library's name (MCP's and the AI SDK's inputSchema, Anthropic's input_schema) is a TypeError pointing to parameters, not a tool whose arguments nothing checks", T, () => {
  const tools = new tp.ToolRegistry();
  const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
  for (const key of ["inputSchema", "input_schema"]) {
    assert.throws(() => tools.register({ name: "read", [key]: schema, execute }), {
      name: "TypeError",
      message: `tool.${key} is not read: give the tool's JSON Schema as tool.parameters`,
    });
  }
  tools.register({ name: "read", parameters: schema, inputSchema: schema, execute });
  assert.deepEqual(tools.definitions()[0].parameters, schema, "parameters given: the other name is left alone");
  tools.free();
});

test("a thrown object reads as its JSON, else its tag, at most 200 characters; an Error-like object by its message", T, async () => {
  const cycle = { name: "loop" };
  cycle.self = cycle;
  const long = { text: "x".repeat(500) };
  // An emoji straddling the cut is not split into half a surrogate pair.
  const emoji = { t: `${"y".repeat(193)}😀😀` };
  const thrown = [
    { code: 42, why: "disk" },
    [1, "two"],
    cycle,
    { big: 1n },
    { toJSON() { throw new Error("no JSON"); } },
    function named() {},
    Object.create(null),
    long,
    emoji,
    { message: "like an error" },
    { message: 7 },
  ];
  const expected = [
    '{"code":42,"why":"disk"}',
    '[1,"two"]',
    "[object Object]",
    "[object Object]",
    "[object Object]",
    "[object Function]",
    "{}",
    `${JSON.stringify(long).slice(0, 200)}…`,
    `{"t":"${"y".repeat(193)}…`,
    "like an error",
    '{"message":7}',
  ];
  const calls = thrown.map((_, i) => toolCall(`t${i}`, "any"));
  const model = new tp.ScriptedModel([assistantMsg(calls, "toolUse"), assistantMsg([text("ok")], "stop")]);
  const executeToolCall = async (call) => {
    throw thrown[Number(call.id.slice(1))];
  };
  const result = await tp.runAgentLoop({ context: { messages: [userMsg("go")] }, model, executeToolCall });
  assert.equal(result.reason, "stop");
  const texts = result.messages.slice(2, 2 + thrown.length).map((m) => [m.isError, m.content.map((c) => c.text).join("\n")]);
  assert.deepEqual(texts, expected.map((t) => [true, t]));
  model.free();
});

test("a registry tool that throws an object: the same text in its error result", T, async () => {
  const tools = new tp.ToolRegistry();
  tools.register({ name: "fails", execute: () => { throw { status: 503, retry: false }; } });
  const result = await tools.execute(toolCall("f1", "fails"), {});
  assert.deepEqual([result.isError, result.content], [true, [text('{"status":503,"retry":false}')]]);
  tools.free();
});
