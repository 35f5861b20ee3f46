// The floor: SPEC §4 by hand in plain JS, with nothing beyond the contract (no schema validation,
// no hooks, no steering). Awaits only what the contract forces: the model stream, onEvent's promise when
// it returns one, the tools. Whatever tiny-pi costs above this is what its bridge and core add.
//
// `copies: true` adds what SPEC §10 and issue 26's read-once rule cost in any implementation, in plain JS: the
// model's final message and each tool's output read once as data (`JSON.stringify`, then `JSON.parse`), each
// tool given its own copy of the arguments, and every message the loop hands out deeply frozen.

const SKIP_TEXT = {
  length: "Tool call was not executed because the model response was truncated.",
  error: "Tool call was not executed because the model response ended with an error.",
  aborted: "Tool call was not executed because the run was aborted.",
  "unexpected-stop": "Tool call was not executed because the model stopped without asking for tools.",
  "duplicate-call-id": "Tool call was not executed because its id was used more than once.",
};

// A minimal stand-in for ToolRegistry: name -> tool, results wrapped as ToolResultMessage.
export class FloorTools {
  constructor() {
    this.tools = new Map();
    this.defs = [];
  }

  register(tool) {
    this.tools.set(tool.name, tool);
    this.defs.push({ name: tool.name, description: tool.description ?? "", parameters: tool.parameters ?? { type: "object" } });
  }

  definitions() {
    return this.defs;
  }

  async execute(call, ctx = {}, now = Date.now) {
    const tool = this.tools.get(call.name);
    try {
      if (!tool) throw new Error(`Tool ${call.name} not found`);
      const args = ctx.copies ? readOnce(call.arguments) : call.arguments;
      let out = await tool.execute(args, { callId: call.id, signal: ctx.signal, reportProgress: ctx.reportProgress ?? (() => {}) });
      if (ctx.copies) out = readOnce(out);
      return { role: "toolResult", toolCallId: call.id, toolName: call.name, content: out.content, details: out.details, isError: !!out.isError, timestamp: now() };
    } catch (err) {
      return errorResult(call, err, now);
    }
  }
}

/** `value` read once as data: what `JSON.stringify` writes of it, parsed. */
function readOnce(value) {
  return JSON.parse(JSON.stringify(value));
}

/** Freezes `value` and everything in it (plain JSON data). */
function deepFreeze(value) {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze(value[key]);
  }
  return value;
}

function errorResult(call, err, now) {
  const text = err instanceof Error ? err.message : String(err);
  return { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [{ type: "text", text }], isError: true, timestamp: now() };
}

function skipped(call, reason, now) {
  return { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [{ type: "text", text: SKIP_TEXT[reason] }],
    details: { skipped: true, reason }, isError: true, timestamp: now() };
}

export async function floorLoop({ context, model, tools, executeToolCall, signal, maxSteps = 32, onEvent, now = Date.now, copies = false }) {
  const messages = structuredClone(context.messages);
  if (copies) messages.forEach(deepFreeze);
  const handed = copies ? deepFreeze : (message) => message;
  const defs = tools ? tools.definitions() : [];
  let steps = 0;
  let observerError;

  // Calls onEvent; returns a promise only when onEvent returned one, so a sync observer costs no await.
  const observe = (err) => { observerError ??= err instanceof Error ? err.message : String(err); };
  const emit = (event) => {
    if (!onEvent) return undefined;
    try {
      const r = onEvent(event);
      if (r && typeof r.then === "function") return r.then(undefined, observe);
    } catch (err) {
      observe(err);
    }
    return undefined;
  };
  const finish = async (reason, error) => {
    const p = emit({ type: "turn_end", reason, steps });
    if (p) await p;
    const out = { reason, messages, steps };
    if (error !== undefined) out.error = error;
    if (observerError !== undefined) out.observerError = observerError;
    return out;
  };
  const appendSkipped = async (calls, reason) => {
    for (const call of calls) {
      const result = handed(skipped(call, reason, now));
      messages.push(result);
      const p = emit({ type: "tool_skipped", result });
      if (p) await p;
    }
  };
  const run = (call) => {
    const reportProgress = (content) => { emit({ type: "tool_progress", callId: call.id, content }); };
    if (executeToolCall) {
      return Promise.resolve()
        .then(() => executeToolCall(call, { signal, reportProgress }))
        .catch((err) => errorResult(call, err, now));
    }
    if (!tools) return Promise.resolve(errorResult(call, new Error(`Tool ${call.name} not found`), now));
    return tools.execute(call, { signal, reportProgress, copies }, now).then(handed);
  };

  for (;;) {
    if (signal?.aborted) return finish("aborted");
    if (steps >= maxSteps) return finish("maxSteps");
    steps++;

    let final;
    try {
      const request = { systemPrompt: context.systemPrompt, messages: messages.slice(), tools: defs };
      if (copies) Object.freeze(request.messages);
      const stream = model.stream(request, { signal });
      for await (const event of stream) {
        const p = emit({ type: "model_event", event });
        if (p) await p;
        if (event.type === "done") final = event.message;
        else if (event.type === "error") final = event.error;
      }
      if (typeof stream.result === "function") final = await stream.result();
    } catch (err) {
      return finish("error", err instanceof Error ? err.message : String(err));
    }
    if (!final) return finish("error", "model stream ended without a final message");
    if (copies) final = deepFreeze(readOnce(final));

    messages.push(final);
    let p = emit({ type: "assistant_message", message: final });
    if (p) await p;

    const calls = final.content.filter((b) => b.type === "toolCall");
    switch (final.stopReason) {
      case "stop":
        if (calls.length === 0) return finish("stop");
        await appendSkipped(calls, "unexpected-stop");
        return finish("error", "model stopped with tool calls");
      case "length":
      case "error":
      case "aborted":
        await appendSkipped(calls, final.stopReason);
        return finish(final.stopReason, final.errorMessage);
      case "toolUse": {
        if (calls.length === 0) return finish("error", "toolUse without tool calls");
        const ids = new Set(calls.map((c) => c.id));
        if (ids.size !== calls.length) {
          const seen = new Set();
          await appendSkipped(calls.filter((c) => !seen.has(c.id) && seen.add(c.id)), "duplicate-call-id");
          return finish("error", "duplicate tool call id");
        }
        for (const call of calls) {
          p = emit({ type: "tool_start", call });
          if (p) await p;
        }
        const results = await Promise.all(calls.map(async (call) => {
          const result = await run(call);
          const q = emit({ type: "tool_end", result });
          if (q) await q;
          return result;
        }));
        for (const r of results) messages.push(r);
        if (signal?.aborted) return finish("aborted");
        if (steps >= maxSteps) return finish("maxSteps");
        break;
      }
      default:
        return finish("error", `unknown stopReason ${final.stopReason}`);
    }
  }
}
