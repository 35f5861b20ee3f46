// Small builders and synchronisation helpers shared by the Node tests.

export const text = (t) => ({ type: "text", text: t });
export const toolCall = (id, name, args = {}) => ({ type: "toolCall", id, name, arguments: args });
export const userMsg = (content, timestamp = 1) => ({ role: "user", content, timestamp });
export const assistantMsg = (content, stopReason, extra = {}) => ({ role: "assistant", content, stopReason, timestamp: 2, ...extra });

export const TRUNCATED = "Tool call was not executed because the model response was truncated.";

/** A promise plus the function that settles it: tests release work by hand, never by a timer. */
export function gate() {
  let open, fail;
  const promise = new Promise((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** Resolves when `pred(event)` first holds for an event passed to `push`. */
export function eventLog() {
  const events = [];
  const waiters = [];
  return {
    events,
    push(e) {
      events.push(e);
      for (const w of [...waiters]) {
        if (w.pred(e)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(e);
        }
      }
    },
    when(pred) {
      const hit = events.find(pred);
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve) => waiters.push({ pred, resolve }));
    },
  };
}

/** "model_event:start", "tool_end", ... */
export const label = (e) => (e.type === "model_event" ? `model_event:${e.event.type}` : e.type);

/** Lets every queued microtask and macrotask run a few times; used only to prove that something did NOT happen. */
export async function settle(turns = 20) {
  for (let i = 0; i < turns; i += 1) await new Promise((r) => setImmediate(r));
}

/**
 * A hand-written JS model (not ScriptedModel): each request calls `respond(request, index)` for an
 * assistant message and streams it the way ScriptedModel does. Keeps the request objects it was handed.
 */
export function jsModel(respond, { withResult = true } = {}) {
  const requests = [];
  const seen = [];
  return {
    requests,
    seen,
    stream(request, options) {
      requests.push(request);
      seen.push({ messages: request.messages.map((m) => m.role), options });
      const message = respond(request, requests.length - 1);
      async function* events() {
        yield { type: "start", partial: { ...message, content: [] } };
        for (const [contentIndex, block] of message.content.entries()) {
          if (block.type === "text") yield { type: "text_delta", contentIndex, delta: block.text };
          if (block.type === "toolCall") {
            yield { type: "toolcall_delta", contentIndex, delta: JSON.stringify(block.arguments) };
            yield { type: "toolcall_end", contentIndex, toolCall: block };
          }
        }
        if (message.stopReason === "error" || message.stopReason === "aborted") yield { type: "error", reason: message.stopReason, error: message };
        else yield { type: "done", reason: message.stopReason, message };
      }
      const it = events();
      if (withResult) it.result = async () => message;
      return it;
    },
  };
}
