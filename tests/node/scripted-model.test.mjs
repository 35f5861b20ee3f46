// `new ScriptedModel(messages, { events: "pi-ai" })` (SPEC §2): offline, it sends what a real pi-ai provider
// sends. The reference is pi-ai's own faux provider streaming the same message in one chunk per block: the two
// event sequences must be equal, `partial` messages included.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { readmeScript } from "../app/round-trip.mjs";
import { loadPiAi, loadTinyPi } from "./app-fixture.mjs";
import { label, userMsg } from "./helpers.mjs";

let tp;
let ai;
before(async () => {
  [tp, ai] = await Promise.all([loadTinyPi(), loadPiAi()]);
});

const T = { timeout: 20_000 };
// Keys whose value is undefined (pi-ai writes `errorMessage: undefined`) do not exist in JSON.
const json = (v) => JSON.parse(JSON.stringify(v));

async function collect(stream) {
  const events = [];
  for await (const e of stream) events.push(e);
  return events;
}

test("the pi-ai grammar is what pi-ai's faux provider streams for the same message, partials included", T, async () => {
  // One chunk per block: a token is 4 characters and the longest text here is under 400.
  const faux = ai.registerFauxProvider({ tokenSize: { min: 100, max: 100 } });
  try {
    const message = ai.fauxAssistantMessage(
      [ai.fauxThinking("Let me look."), ai.fauxText("Reading it."), ai.fauxToolCall("read", { path: "README.md", lines: 3 }, { id: "call-1" })],
      { stopReason: "toolUse", timestamp: 5 },
    );
    faux.setResponses([message]);
    // Each event as it was when pi-ai pushed it: faux keeps mutating the blocks its earlier partials share.
    const fromPi = [];
    const stream = ai.streamSimple(faux.getModel(), { messages: [] });
    const push = stream.push.bind(stream);
    stream.push = (e) => {
      fromPi.push(json(e));
      push(e);
    };
    await collect(stream);
    // What the faux provider sent, usage estimate and all, replayed by a ScriptedModel.
    const sent = fromPi.at(-1).message;
    const model = new tp.ScriptedModel([sent], { events: "pi-ai" });
    const fromScript = json(await collect(model.stream({ messages: [userMsg("hi")], tools: [] }, {})));
    assert.deepEqual(fromScript.map((e) => e.type), [
      "start", "thinking_start", "thinking_delta", "thinking_end", "text_start", "text_delta", "text_end",
      "toolcall_start", "toolcall_delta", "toolcall_end", "done",
    ]);
    assert.deepEqual(fromScript, fromPi);
    model.free();
  } finally {
    faux.unregister();
  }
});

test("the default grammar stays the seeds' compact one; options.events: \"compact\" is the same", T, async () => {
  const { script } = readmeScript();
  const events = async (model) => (await collect(model.stream({ messages: [userMsg("hi")], tools: [] }, {}))).map((e) => e.type);
  const compact = ["start", "text_delta", "toolcall_delta", "toolcall_end", "done"];
  for (const options of [undefined, null, {}, { events: undefined }, { events: "compact" }]) {
    const model = new tp.ScriptedModel(script, options);
    assert.deepEqual(await events(model), compact, JSON.stringify(options));
    model.free();
  }
});

test("a run with the pi-ai grammar: every event reaches onEvent, each with its partial; the transcript is the script", T, async () => {
  const { input, script } = readmeScript();
  const model = new tp.ScriptedModel(script, { events: "pi-ai" });
  const tools = new tp.ToolRegistry();
  tools.register({ name: "read", execute: async () => ({ content: [{ type: "text", text: "# tiny-pi" }] }) });
  const events = [];
  const result = await tp.runAgentLoop({ context: { messages: input }, model, tools, onEvent: (e) => events.push(e) });
  assert.equal(result.reason, "stop");
  assert.deepEqual(json(result.messages[1]), json(script[0]));
  assert.deepEqual(json(result.messages[3]), json(script[1]));
  assert.deepEqual(events.map(label), [
    "model_event:start", "model_event:text_start", "model_event:text_delta", "model_event:text_end",
    "model_event:toolcall_start", "model_event:toolcall_delta", "model_event:toolcall_end", "model_event:done",
    "assistant_message", "tool_start", "tool_end",
    "model_event:start", "model_event:text_start", "model_event:text_delta", "model_event:text_end", "model_event:done",
    "assistant_message", "turn_end",
  ]);
  const modelEvents = events.filter((e) => e.type === "model_event").map((e) => e.event);
  for (const e of modelEvents.filter((x) => x.type !== "done")) {
    assert.equal(e.partial?.role, "assistant", `${e.type} carries the partial message`);
  }
  const textDelta = modelEvents.find((e) => e.type === "text_delta");
  assert.deepEqual(textDelta.partial.content, [{ type: "text", text: "我先读取项目说明。" }]);
  model.free();
  tools.free();
});

test("options that name no grammar are a TypeError naming options.events", T, () => {
  const { script } = readmeScript();
  for (const [options, pattern] of [
    [{ events: "full" }, /^ScriptedModel: options\.events must be "compact" or "pi-ai" \(got string "full"\)$/],
    [{ events: 3 }, /^ScriptedModel: options\.events must be "compact" or "pi-ai" \(got 3\)$/],
    [{ events: null }, /options\.events must be "compact" or "pi-ai" \(got null\)/],
    ["pi-ai", /^ScriptedModel: options must be an object \(got string\)$/],
  ]) {
    assert.throws(() => new tp.ScriptedModel(script, options), (e) => e instanceof TypeError && pattern.test(e.message), JSON.stringify(options));
  }
  // The instance is unharmed.
  new tp.ScriptedModel(script, { events: "pi-ai" }).free();
});
