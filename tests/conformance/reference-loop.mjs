// A plain JS agent loop written from chapter 07 (the seeds' "把 Agent Loop 写成可验证的状态迁移"), as a learner
// would write it: the decision table, skipped results, a concurrent batch appended in call order, the two signal
// checks and maxSteps. It is the conformance kit's independent reference (tiny-pi's own loop is Rust), and
// `createLoop(bugs)` breaks one rule at a time, so the tests can show each broken rule reported as its case.

const SKIP_TEXT = {
  length: "Tool call was not executed because the model response was truncated.",
  error: "Tool call was not executed because the model response ended with an error.",
  aborted: "Tool call was not executed because the run was aborted.",
  "unexpected-stop": "Tool call was not executed because the model stopped without asking for tools.",
  "duplicate-call-id": "Tool call was not executed because its id appears more than once.",
};

/** The bugs one can switch on; each breaks one rule of the chapter. */
export const BUGS = [
  "lengthRunsTools", // the chapter's own "故意把它弄坏": length + calls takes the toolUse path
  "sequentialBatch", // awaits each call before starting the next
  "completionOrder", // appends results in the order they finish
  "errorLeavesCallsOpen", // error + calls: no skipped results
  "stopWithCallsIsStop", // stop + calls ends with stop, calls unanswered
  "noCheckAfterBatch", // no signal check after a batch
  "noCheckBeforeRequest", // no signal check before a request
  "maxStepsFabricates", // makes up a final answer when maxSteps is reached
  "rejectionEscapes", // Promise.all without per-call catch
  "progressWithoutId", // tool_progress without the call's id
  "duplicateIdsRun", // a repeated id runs like any call
  "noCallsContinues", // toolUse without calls asks the model again
  "batchNotAwaited", // the batch is started but not awaited: the next request goes before its results
  "resultAppendedTwice", // each result appended when it ends and again with the batch
  "callRunTwice", // each call run a second time once the run has resolved (a retry nobody awaits)
];

export function createLoop(bugs = {}) {
  return async function runAgentLoop(options) {
    const messages = structuredClone(options.context.messages);
    const maxSteps = options.maxSteps ?? 32;
    const now = options.now ?? Date.now;
    const emit = (event) => {
      try {
        options.onEvent?.(event);
      } catch {
        // an observer cannot stop the run
      }
    };
    const finish = (reason, steps) => {
      emit({ type: "turn_end", reason, steps });
      return { reason, messages, steps };
    };
    const executeToolCall = options.executeToolCall ?? ((call, context) => options.tools.execute(call, context));
    const skip = (call, reason) => {
      const result = {
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: "text", text: SKIP_TEXT[reason] }],
        details: { skipped: true, reason },
        isError: true,
        timestamp: now(),
      };
      messages.push(result);
      emit({ type: "tool_skipped", result });
    };
    const runOne = async (call) => {
      let result;
      try {
        result = await executeToolCall(call, {
          signal: options.signal,
          reportProgress: (content) => emit(bugs.progressWithoutId ? { type: "tool_progress", content } : { type: "tool_progress", callId: call.id, content }),
        });
      } catch (err) {
        if (bugs.rejectionEscapes) throw err;
        result = { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [{ type: "text", text: err?.message ?? String(err) }], isError: true, timestamp: now() };
      }
      emit({ type: "tool_end", result });
      if (bugs.resultAppendedTwice) messages.push(result);
      return result;
    };
    const runBatch = async (calls) => {
      for (const call of calls) emit({ type: "tool_start", call });
      if (bugs.sequentialBatch) {
        for (const call of calls) messages.push(await runOne(call));
        return;
      }
      if (bugs.completionOrder) {
        await Promise.all(calls.map(async (call) => messages.push(await runOne(call))));
        return;
      }
      messages.push(...(await Promise.all(calls.map(runOne))));
    };

    for (let steps = 1; steps <= maxSteps; steps += 1) {
      if (options.signal?.aborted && !bugs.noCheckBeforeRequest) return finish("aborted", steps - 1);
      let assistant;
      try {
        const stream = options.model.stream(
          { systemPrompt: options.context.systemPrompt, messages: [...messages], tools: options.tools?.definitions() ?? [] },
          { signal: options.signal },
        );
        for await (const event of stream) emit({ type: "model_event", event });
        assistant = await stream.result();
      } catch (err) {
        const result = finish("error", steps);
        return { ...result, error: err?.message ?? String(err) };
      }
      messages.push(assistant);
      emit({ type: "assistant_message", message: assistant });
      const calls = assistant.content.filter((block) => block.type === "toolCall");

      switch (assistant.stopReason) {
        case "stop":
          if (calls.length === 0 || bugs.stopWithCallsIsStop) return finish("stop", steps);
          calls.forEach((call) => skip(call, "unexpected-stop"));
          return finish("error", steps);
        case "length":
          if (bugs.lengthRunsTools) {
            await runBatch(calls);
            return finish("length", steps);
          }
          calls.forEach((call) => skip(call, "length"));
          return finish("length", steps);
        case "error":
        case "aborted":
          if (!bugs.errorLeavesCallsOpen || assistant.stopReason === "aborted") calls.forEach((call) => skip(call, assistant.stopReason));
          return finish(assistant.stopReason, steps);
        case "toolUse": {
          if (calls.length === 0) {
            if (bugs.noCallsContinues) continue;
            return finish("error", steps);
          }
          const ids = calls.map((call) => call.id);
          if (new Set(ids).size < ids.length && !bugs.duplicateIdsRun) {
            for (const id of new Set(ids)) skip(calls.find((call) => call.id === id), "duplicate-call-id");
            return finish("error", steps);
          }
          if (bugs.batchNotAwaited) runBatch(calls);
          else await runBatch(calls);
          if (bugs.callRunTwice) setTimeout(() => calls.forEach((call) => Promise.resolve(executeToolCall(call, { signal: options.signal, reportProgress: () => {} })).catch(() => {})), 0);
          if (options.signal?.aborted && !bugs.noCheckAfterBatch) return finish("aborted", steps);
          break;
        }
        default:
          return finish("error", steps);
      }
    }
    if (bugs.maxStepsFabricates) messages.push({ role: "assistant", content: [{ type: "text", text: "(out of steps)" }], stopReason: "stop", timestamp: now() });
    return finish("maxSteps", maxSteps);
  };
}

export const runAgentLoop = createLoop();
