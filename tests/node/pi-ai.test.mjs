// SPEC §2 interop with the real @mariozechner/pi-ai (0.73.1): a pi-ai EventStream and pi-ai's faux
// provider driven through streamSimple work as tiny-pi model streams, unchanged.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { loadPiAi, loadTinyPi } from "./app-fixture.mjs";
import { label, text, userMsg } from "./helpers.mjs";

let tp;
let ai;
before(async () => {
  [tp, ai] = await Promise.all([loadTinyPi(), loadPiAi()]);
});

const T = { timeout: 20_000 };
// pi-ai messages carry keys whose value is undefined (errorMessage, responseId); they do not exist in JSON.
const json = (v) => JSON.parse(JSON.stringify(v));

function readRegistry(counter) {
  const tools = new tp.ToolRegistry();
  tools.register({
    name: "read",
    description: "Read a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    execute: async ({ path }) => {
      counter.n += 1;
      return { content: [text(path === "README.md" ? "# tiny-pi\nA small agent runtime." : "?")] };
    },
  });
  return tools;
}

const usage = { input: 12, output: 7, cacheRead: 0, cacheWrite: 0, totalTokens: 19, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const meta = { api: "openai-completions", provider: "openai", model: "gpt-test", usage, responseId: "resp-1" };

/** Pushes a message's events into a pi-ai EventStream the way a provider does, with `partial` on each. */
function pushMessage(stream, message, pushed) {
  const push = (e) => {
    pushed.push(e);
    stream.push(e);
  };
  const partial = { ...message, content: [] };
  push({ type: "start", partial: { ...partial } });
  message.content.forEach((block, contentIndex) => {
    if (block.type === "text") {
      partial.content = [...partial.content, { type: "text", text: "" }];
      push({ type: "text_start", contentIndex, partial: { ...partial } });
      for (const delta of [block.text.slice(0, 3), block.text.slice(3)]) {
        partial.content[contentIndex].text += delta;
        push({ type: "text_delta", contentIndex, delta, partial: { ...partial } });
      }
      push({ type: "text_end", contentIndex, content: block.text, partial: { ...partial } });
    } else if (block.type === "toolCall") {
      partial.content = [...partial.content, { ...block, arguments: {} }];
      push({ type: "toolcall_start", contentIndex, partial: { ...partial } });
      push({ type: "toolcall_delta", contentIndex, delta: JSON.stringify(block.arguments), partial: { ...partial } });
      partial.content[contentIndex] = block;
      push({ type: "toolcall_end", contentIndex, toolCall: block, partial: { ...partial } });
    }
  });
  push({ type: "done", reason: message.stopReason, message });
  stream.end(message);
}

test("a pi-ai EventStream is a model stream: onEvent gets the very objects it yielded", T, async () => {
  const readCall = { type: "toolCall", id: "call-1", name: "read", arguments: { path: "README.md" } };
  const script = [
    { role: "assistant", content: [text("我先读取项目说明。"), readCall], stopReason: "toolUse", timestamp: 2, ...meta },
    { role: "assistant", content: [text("项目名是 tiny-pi。")], stopReason: "stop", timestamp: 4, ...meta, responseId: "resp-2" },
  ];
  const pushed = [];
  const streams = [];
  const model = {
    stream(request, options) {
      const stream = ai.createAssistantMessageEventStream();
      streams.push({ request, options, stream });
      const message = script[streams.length - 1];
      // Request 1 is filled before it is returned, request 2 after the loop started iterating.
      if (streams.length === 1) pushMessage(stream, message, pushed);
      else setImmediate(() => pushMessage(stream, message, pushed));
      return stream;
    },
  };
  const counter = { n: 0 };
  const events = [];
  const result = await tp.runAgentLoop({
    context: { systemPrompt: "SYS", messages: [userMsg("请读取 README.md，并告诉我项目名。")] },
    model,
    tools: readRegistry(counter),
    onEvent: (e) => events.push(e),
  });
  assert.equal(result.reason, "stop");
  assert.deepEqual([result.steps, streams.length, counter.n], [2, 2, 1]);
  const forwarded = events.filter((e) => e.type === "model_event").map((e) => e.event);
  assert.equal(forwarded.length, pushed.length, "every pushed event is forwarded once");
  forwarded.forEach((e, i) => assert.ok(e === pushed[i], `event ${i} (${e.type}) is the same object the stream yielded`));
  assert.ok(forwarded.every((e) => "partial" in e || e.type === "done"), "partial fields arrive untouched");
  assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);
  assert.deepEqual(result.messages[1], script[0]);
  assert.deepEqual(result.messages[3], script[1]);
  assert.deepEqual(events.map(label).filter((l) => !l.startsWith("model_event")), ["assistant_message", "tool_start", "tool_end", "assistant_message", "turn_end"]);
  assert.deepEqual(streams[1].request.messages.map((m) => m.role), ["user", "assistant", "toolResult"]);
});

test("pi-ai's faux provider through streamSimple drives a full tool round trip; its messages survive unchanged", T, async () => {
  const faux = ai.registerFauxProvider();
  try {
    let secondContext;
    faux.setResponses([
      ai.fauxAssistantMessage([ai.fauxText("我先读取项目说明。"), ai.fauxToolCall("read", { path: "README.md" }, { id: "call-1" })], { stopReason: "toolUse" }),
      (context) => {
        secondContext = structuredClone(context);
        return ai.fauxAssistantMessage("项目名是 tiny-pi。");
      },
    ]);
    const piStreams = [];
    const pushed = [];
    const model = {
      stream: (req, opts) => {
        const s = ai.streamSimple(faux.getModel(), { systemPrompt: req.systemPrompt, messages: req.messages, tools: req.tools }, { signal: opts.signal });
        // Record what pi-ai pushes (it pushes from a microtask, after we return).
        const push = s.push.bind(s);
        s.push = (e) => {
          pushed.push(e);
          push(e);
        };
        piStreams.push(s);
        return s;
      },
    };
    const counter = { n: 0 };
    const tools = readRegistry(counter);
    const events = [];
    const result = await tp.runAgentLoop({
      context: { systemPrompt: "You read files.", messages: [userMsg("请读取 README.md，并告诉我项目名。")] },
      model,
      tools,
      onEvent: (e) => events.push(e),
    });
    assert.equal(result.reason, "stop", result.error);
    assert.deepEqual([result.steps, faux.state.callCount, counter.n], [2, 2, 1]);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);

    // The messages pi-ai produced, with api/provider/model/usage, are in the transcript as pi-ai made them.
    const finals = await Promise.all(piStreams.map((s) => s.result()));
    for (const [i, final] of [[1, finals[0]], [3, finals[1]]]) {
      assert.equal(final.api, faux.api);
      assert.deepEqual([final.provider, final.model, typeof final.usage.totalTokens], ["faux", "faux-1", "number"]);
      assert.deepEqual(json(result.messages[i]), json(final));
    }
    assert.equal(result.messages[1].content[1].id, "call-1");
    assert.equal(result.messages[2].toolCallId, "call-1");

    // Every event pi-ai pushed reached onEvent as the same object, in order.
    const forwarded = events.filter((e) => e.type === "model_event").map((e) => e.event);
    assert.equal(forwarded.length, pushed.length);
    forwarded.forEach((e, i) => assert.ok(e === pushed[i], `faux event ${i} (${e.type}) forwarded as is`));
    assert.ok(forwarded.some((e) => e.type === "text_start") && forwarded.some((e) => e.type === "toolcall_start"));

    // pi-ai's second request saw the tool result and the registry's definitions.
    assert.deepEqual(secondContext.messages.map((m) => m.role), ["user", "assistant", "toolResult"]);
    assert.deepEqual(secondContext.tools, tools.definitions());
    assert.equal(secondContext.systemPrompt, "You read files.");
  } finally {
    faux.unregister();
  }
});

test("faux provider aborted during its request: the aborted row, no tool runs, no further request", T, async () => {
  const faux = ai.registerFauxProvider();
  try {
    const controller = new AbortController();
    faux.setResponses([
      () => {
        // The abort lands after the request was made and before pi-ai streams a token.
        controller.abort();
        return ai.fauxAssistantMessage([ai.fauxToolCall("read", { path: "README.md" }, { id: "call-1" })], { stopReason: "toolUse" });
      },
      ai.fauxAssistantMessage("never asked"),
    ]);
    const counter = { n: 0 };
    const events = [];
    const result = await tp.runAgentLoop({
      context: { messages: [userMsg("read it")] },
      model: { stream: (req, opts) => ai.streamSimple(faux.getModel(), { messages: req.messages, tools: req.tools }, { signal: opts.signal }) },
      tools: readRegistry(counter),
      signal: controller.signal,
      onEvent: (e) => events.push(e),
    });
    assert.deepEqual([result.reason, result.steps, faux.state.callCount, counter.n], ["aborted", 1, 1, 0]);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant"]);
    assert.equal(result.messages[1].stopReason, "aborted");
    assert.equal(result.messages[1].errorMessage, "Request was aborted");
    assert.deepEqual(events.map(label), ["model_event:error", "assistant_message", "turn_end"]);
  } finally {
    faux.unregister();
  }
});

test("SPEC §7's options drive pi-ai's faux provider: a blocked call, a replaced result, a prepared request, steering; pi-ai takes the frozen request", T, async () => {
  const faux = ai.registerFauxProvider();
  try {
    const contexts = [];
    const seen = (context) => contexts.push(structuredClone(context));
    faux.setResponses([
      (context) => {
        seen(context);
        return ai.fauxAssistantMessage(
          [ai.fauxToolCall("read", { path: "README.md" }, { id: "call-1" }), ai.fauxToolCall("read", { path: "secret.txt" }, { id: "call-2" })],
          { stopReason: "toolUse" },
        );
      },
      (context) => {
        seen(context);
        return ai.fauxAssistantMessage("README read; the secret is not mine to read.");
      },
    ]);
    const counter = { n: 0 };
    const events = [];
    let steered = false;
    const result = await tp.runAgentLoop({
      context: { systemPrompt: "You read files.", messages: [userMsg("读取 README.md 和 secret.txt")] },
      model: { stream: (req, opts) => ai.streamSimple(faux.getModel(), req, opts) },
      tools: readRegistry(counter),
      onEvent: (e) => events.push(e),
      beforeToolCall: (call) => (call.arguments.path === "secret.txt" ? { block: true, reason: "secret.txt is off limits" } : undefined),
      afterToolCall: (_call, result) => ({ content: [text(`${result.content[0].text}\n(checked)`)] }),
      prepareRequest: (request, ctx) => ({ systemPrompt: `${request.systemPrompt} Request ${ctx.step}.` }),
      getSteeringMessages: () => (steered ? [] : ((steered = true), [userMsg("说简短一点")])),
    });
    assert.equal(result.reason, "stop", result.error);
    assert.deepEqual([result.steps, faux.state.callCount, counter.n], [2, 2, 1]);
    assert.deepEqual(result.messages.map((m) => m.role), ["user", "assistant", "toolResult", "toolResult", "user", "assistant"]);
    assert.equal(result.messages[2].content[0].text, "# tiny-pi\nA small agent runtime.\n(checked)");
    assert.deepEqual([result.messages[3].content[0].text, result.messages[3].details], ["secret.txt is off limits", { skipped: true, reason: "blocked" }]);
    assert.deepEqual(events.filter((e) => e.type === "queued_message").map((e) => [e.queue, e.message.content]), [["steering", "说简短一点"]]);
    // What pi-ai's provider was sent: the prepared system prompt, the replaced and blocked results, the steering.
    assert.deepEqual(contexts.map((c) => c.systemPrompt), ["You read files. Request 1.", "You read files. Request 2."]);
    assert.deepEqual(contexts[1].messages.map((m) => m.role), ["user", "assistant", "toolResult", "toolResult", "user"]);
    assert.equal(contexts[1].messages[2].content[0].text, "# tiny-pi\nA small agent runtime.\n(checked)");
    assert.equal(contexts[1].messages[3].content[0].text, "secret.txt is off limits");
    assert.ok(Object.isFrozen(result.messages[1]) && Object.isFrozen(result.messages[1].content[0]), "pi-ai's final message is the loop's own, frozen");
  } finally {
    faux.unregister();
  }
});
