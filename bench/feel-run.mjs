// One small run, the same for both loops, for `feel.mjs`: a user message, a model turn that calls one tool,
// the tool's answer, a model turn that stops. The model is a plain async iterable with `result()` (no pi-ai
// import), so what a page or process loads for it is the loop library alone.
// Runs in Node and in the browser (Vite bundles it into feel.mjs's pages).

const USAGE = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const SCHEMA = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };

function assistant(content, stopReason, timestamp) {
  return { role: "assistant", content, api: "feel", provider: "feel", model: "feel", usage: USAGE, stopReason, timestamp };
}

/** The two responses of a run, made fresh (`id` keeps concurrent runs' calls apart). */
function script(id) {
  const call = { type: "toolCall", id: `call_${id}`, name: "read", arguments: { path: "README.md" } };
  return [
    assistant([{ type: "text", text: "Reading it." }, call], "toolUse", 2),
    assistant([{ type: "text", text: "It is tiny." }], "stop", 4),
  ];
}

/** A model stream of `message`: start, one text delta, a toolcall_end per call, done; and `result()`. */
function stream(message) {
  const events = [{ type: "start", partial: message }];
  message.content.forEach((block, contentIndex) => {
    if (block.type === "text") events.push({ type: "text_delta", contentIndex, delta: block.text, partial: message });
    if (block.type === "toolCall") events.push({ type: "toolcall_end", contentIndex, toolCall: block, partial: message });
  });
  events.push({ type: "done", reason: message.stopReason, message });
  return {
    async *[Symbol.asyncIterator]() {
      yield* events;
    },
    result: async () => message,
  };
}

const user = () => ({ role: "user", content: "What is in README.md?", timestamp: 1 });

/** The tool's body: answers at once, or once `gate` resolves (runs kept in flight). */
async function read(path, gate) {
  if (gate) await gate;
  return { content: [{ type: "text", text: `${path}: tiny` }] };
}

/** tiny-pi's loop: `lib` is what `import "tiny-pi"` gives. Answers the transcript's length. */
export function tinySetup(lib, { gate, onTool } = {}) {
  const tools = new lib.ToolRegistry();
  tools.register({ name: "read", description: "Read a file", parameters: SCHEMA, execute: ({ path }) => (onTool?.(), read(path, gate)) });
  return async (id = 0) => {
    const responses = script(id);
    let turn = 0;
    const result = await lib.runAgentLoop({
      context: { systemPrompt: "You are terse.", messages: [user()] },
      model: { stream: () => stream(responses[turn++]) },
      tools,
      onEvent: () => {},
    });
    if (result.reason !== "stop") throw new Error(`tiny-pi run ended with ${result.reason}: ${result.error}`);
    return result.messages.length;
  };
}

/** pi-agent-core's loop: `lib` is what `import "@mariozechner/pi-agent-core"` gives. */
export function piSetup(lib, { gate, onTool } = {}) {
  const tools = [{ name: "read", label: "read", description: "Read a file", parameters: SCHEMA, execute: (_id, { path }) => (onTool?.(), read(path, gate)) }];
  const model = { id: "feel", name: "feel", api: "feel", provider: "feel", baseUrl: "", reasoning: false, input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1e6, maxTokens: 1e5 };
  const config = { model, convertToLlm: (messages) => messages };
  return async (id = 0) => {
    const responses = script(id);
    let turn = 0;
    const events = lib.agentLoop([user()], { systemPrompt: "You are terse.", messages: [], tools }, config, undefined, () => stream(responses[turn++]));
    for await (const _ of events);
    const messages = await events.result();
    if (messages.at(-1)?.stopReason !== "stop") throw new Error("pi-agent-core run did not stop");
    return messages.length;
  };
}
