// pi-agent-core's agentLoop (0.73.1) behind a small adapter with SPEC §4's runAgentLoop(options) face, so the
// conformance kit can measure it. The adapter only translates: options -> agentLoopContinue(context, config,
// signal, streamFn), its events -> SPEC's LoopEvents, and a run reason read off the end (pi-agent-core has
// none). It adds no rule of its own: the loop decides what runs, what is appended and when it stops.
import { agentLoopContinue } from "@mariozechner/pi-agent-core";

const PI_MODEL = {
  id: "conformance", name: "conformance", api: "conformance", provider: "conformance", baseUrl: "", reasoning: false,
  input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 1e6, maxTokens: 1e5,
};

export async function runAgentLoop(options) {
  const onEvent = (event) => options.onEvent?.(event);
  const run = options.executeToolCall ?? ((call, context) => options.tools.execute(call, context));
  const definitions = options.tools?.definitions() ?? [];
  const maxSteps = options.maxSteps ?? 32;
  let steps = 0;
  let capped = false;
  let lastCalls = [];

  // pi-agent-core's tools: each call goes to the caller's executor; an error result is thrown, its way of saying so.
  const tools = definitions.map((d) => ({
    name: d.name,
    label: d.name,
    description: d.description,
    parameters: d.parameters,
    async execute(toolCallId, args, signal, onUpdate) {
      const call = lastCalls.find((c) => c.id === toolCallId) ?? { type: "toolCall", id: toolCallId, name: d.name, arguments: args };
      const result = await run(call, { signal, reportProgress: (content) => onUpdate?.({ content, details: undefined }) });
      if (result.isError) throw new Error(result.content.map((b) => b.text ?? "").join("\n"));
      return { content: result.content, details: result.details };
    },
  }));

  // The caller's model as a pi-ai stream function; every model event is forwarded as it passes.
  const streamFn = (_model, context, streamOptions) => {
    steps += 1;
    const stream = options.model.stream({ systemPrompt: context.systemPrompt, messages: context.messages, tools: definitions }, { signal: streamOptions?.signal });
    return {
      async *[Symbol.asyncIterator]() {
        for await (const event of stream) {
          onEvent({ type: "model_event", event });
          yield event;
        }
      },
      result: () => stream.result(),
    };
  };

  const config = {
    model: PI_MODEL,
    convertToLlm: (messages) => messages,
    // pi-agent-core has no step cap; its own hook stops it after the last allowed turn.
    shouldStopAfterTurn: () => {
      capped = steps >= maxSteps;
      return capped;
    },
  };
  const input = structuredClone(options.context.messages);
  const context = { systemPrompt: options.context.systemPrompt, messages: structuredClone(input), tools };
  const stream = agentLoopContinue(context, config, options.signal, streamFn);
  let last;
  for await (const event of stream) {
    if (event.type === "message_end" && event.message.role === "assistant") {
      last = event.message;
      lastCalls = last.content.filter((b) => b.type === "toolCall");
      onEvent({ type: "assistant_message", message: event.message });
    } else if (event.type === "tool_execution_start") {
      onEvent({ type: "tool_start", call: lastCalls.find((c) => c.id === event.toolCallId) });
    } else if (event.type === "tool_execution_update") {
      onEvent({ type: "tool_progress", callId: event.toolCallId, content: event.partialResult.content });
    } else if (event.type === "tool_execution_end") {
      const result = { role: "toolResult", toolCallId: event.toolCallId, toolName: event.toolName, content: event.result.content, isError: event.isError, timestamp: Date.now() };
      if (event.result.details !== undefined) result.details = event.result.details;
      onEvent({ type: "tool_end", result });
    }
  }
  const messages = [...input, ...(await stream.result())];
  // The reason: how the last response ended (toolUse when the cap stopped it).
  const reason = capped && last?.stopReason === "toolUse" ? "maxSteps" : last?.stopReason === "toolUse" ? "stop" : (last?.stopReason ?? "stop");
  onEvent({ type: "turn_end", reason, steps });
  return { reason, messages, steps };
}
