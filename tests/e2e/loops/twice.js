// Bug: each call runs twice.
const TEXT = {
  length: "Tool call was not executed because the model response was truncated.",
  error: "Tool call was not executed because the model response ended with an error.",
  aborted: "Tool call was not executed because the run was aborted.",
  "unexpected-stop": "Tool call was not executed because the model stopped instead of requesting tool use.",
};
export async function runAgentLoop(options) {
  const messages = structuredClone(options.context.messages);
  const maxSteps = options.maxSteps ?? 32;
  const now = options.now ?? (() => Date.now());
  const emit = (e) => { try { options.onEvent?.(e); } catch {} };
  const finish = (reason, steps) => { emit({ type: "turn_end", reason, steps }); return { reason, messages, steps }; };
  const skipped = (call, reason) => ({
    role: "toolResult", toolCallId: call.id, toolName: call.name,
    content: [{ type: "text", text: TEXT[reason] }], details: { skipped: true, reason }, isError: true, timestamp: now(),
  });
  const exec = options.executeToolCall ?? ((call, ctx) => options.tools.execute(call, ctx));
  for (let steps = 1; steps <= maxSteps; steps += 1) {
    if (options.signal?.aborted) return finish("aborted", steps - 1);
    const stream = options.model.stream(
      { systemPrompt: options.context.systemPrompt, messages, tools: options.tools.definitions() },
      { signal: options.signal },
    );
    for await (const event of stream) emit({ type: "model_event", event });
    const assistant = await stream.result();
    messages.push(assistant);
    emit({ type: "assistant_message", message: assistant });
    const calls = assistant.content.filter((b) => b.type === "toolCall");
    const r = assistant.stopReason;
    if (r === "length" || r === "error" || r === "aborted" || (r === "stop" && calls.length)) {
      const why = r === "stop" ? "unexpected-stop" : r;
      for (const call of calls) { const res = skipped(call, why); messages.push(res); emit({ type: "tool_skipped", result: res }); }
      return finish(r === "stop" ? "error" : r, steps);
    }
    if (r === "stop") return finish("stop", steps);
    if (calls.length === 0) return finish("error", steps);
    for (const call of calls) emit({ type: "tool_start", call });
    const results = await Promise.all(calls.map(async (call) => {
      let result;
      try {
        await exec(call, { signal: options.signal, reportProgress: () => {} });
        result = await exec(call, { signal: options.signal, reportProgress: (content) => emit({ type: "tool_progress", callId: call.id, content }) });
      } catch (e) {
        result = { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [{ type: "text", text: String(e?.message ?? e) }], isError: true, timestamp: now() };
      }
      emit({ type: "tool_end", result });
      return result;
    }));
    messages.push(...results);
    if (options.signal?.aborted) return finish("aborted", steps);
  }
  return finish("maxSteps", maxSteps);
}
