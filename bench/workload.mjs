// The scripted workloads every leg runs: N tool turns (10 text deltas + 3 tool calls each), then a final stop.
// Each model request gets a fresh pi-ai AssistantMessageEventStream, one `partial` message mutated in place,
// `done` carrying the final message. All events are pushed at once when the stream is created, so no leg
// waits on a timer: what is timed is the loop.
//
// Two workloads, written to differ where an app's setup differs:
// - `full`: events as pi-ai's providers emit them (start, text_start, every text_delta, text_end, and
//   toolcall_start/delta/end per call, done); tools return `details: {}`; pi-agent-core's `convertToLlm`
//   filters the context by role, as its docs show.
// - `compact`: a stream that emits only start, the text deltas, toolcall_end per call and done; tools return
//   no `details`; pi-agent-core's `convertToLlm` is the identity.
import { createAssistantMessageEventStream } from "@mariozechner/pi-ai";

export const TEXT_DELTAS = 10;
export const CALLS_PER_TURN = 3;
export const SYSTEM_PROMPT = "You are a benchmark.";
export const TOOL_NAMES = ["read", "grep", "ls"];

const PATH_SCHEMA = {
  type: "object",
  properties: { path: { type: "string" } },
  required: ["path"],
};

const LLM_ROLES = new Set(["user", "assistant", "toolResult"]);

export const WORKLOADS = {
  full: {
    name: "full",
    describe: "pi-ai provider events (text_start/end, toolcall_start/delta/end), tools return details: {}, pi's convertToLlm filters by role",
    compact: false,
    details: () => ({}),
    convertToLlm: (messages) => messages.filter((m) => LLM_ROLES.has(m.role)),
  },
  compact: {
    name: "compact",
    describe: "compact events (start, text_delta, toolcall_end, done), tools return no details, pi's convertToLlm is (m) => m",
    compact: true,
    details: () => undefined,
    convertToLlm: (m) => m,
  },
};

/** Tool bodies shared by every leg: small, resolve at once; with `details` as the workload says. */
export function toolSpecs(workload) {
  return TOOL_NAMES.map((name) => ({
    name,
    description: `${name} a path`,
    parameters: PATH_SCHEMA,
    run: (args) => {
      const output = { content: [{ type: "text", text: `${name} ${args.path}: ok` }] };
      const details = workload.details();
      if (details !== undefined) output.details = details;
      return output;
    },
  }));
}

export function userMessage() {
  return { role: "user", content: "Run the benchmark.", timestamp: 1 };
}

// A Script hands out one fresh stream per request: turns 0..n-1 use tools, turn n stops.
// `shape` changes the turns for the cost split (bench/run.mjs): { deltas, calls } per turn.
export class Script {
  constructor(turns, workload, shape = { deltas: TEXT_DELTAS, calls: CALLS_PER_TURN }) {
    this.turns = turns;
    this.workload = workload;
    this.shape = shape;
    this.next_ = 0;
  }

  nextStream() {
    const turn = this.next_++;
    const stream = createAssistantMessageEventStream();
    feed(stream, turn, turn < this.turns, this.shape, this.workload.compact);
    return stream;
  }
}

function feed(stream, turn, withTools, { deltas, calls }, compact) {
  const partial = {
    role: "assistant",
    content: [],
    api: "bench",
    provider: "bench",
    model: "bench-model",
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: withTools ? "toolUse" : "stop",
    timestamp: 1000 + turn,
  };
  stream.push({ type: "start", partial });

  const text = { type: "text", text: "" };
  partial.content.push(text);
  if (!compact) stream.push({ type: "text_start", contentIndex: 0, partial });
  for (let i = 0; i < deltas; i++) {
    const delta = `t${turn}d${i} `;
    text.text += delta;
    stream.push({ type: "text_delta", contentIndex: 0, delta, partial });
  }
  if (!compact) stream.push({ type: "text_end", contentIndex: 0, content: text.text, partial });

  if (withTools) {
    for (let c = 0; c < calls; c++) {
      const contentIndex = partial.content.length;
      const call = { type: "toolCall", id: `call_${turn}_${c}`, name: TOOL_NAMES[c % TOOL_NAMES.length], arguments: {} };
      partial.content.push(call);
      if (!compact) stream.push({ type: "toolcall_start", contentIndex, partial });
      const json = `{"path":"/src/file_${turn}_${c}.rs"}`;
      call.arguments = { path: `/src/file_${turn}_${c}.rs` };
      if (!compact) stream.push({ type: "toolcall_delta", contentIndex, delta: json, partial });
      stream.push({ type: "toolcall_end", contentIndex, toolCall: call, partial });
    }
  }
  stream.push({ type: "done", reason: partial.stopReason, message: partial });
}

// Events one run's model produces, to check the loops forwarded every one.
export function modelEventCount(turns, workload) {
  const text = workload.compact ? 1 + TEXT_DELTAS + 1 : 1 + 1 + TEXT_DELTAS + 1 + 1; // start, (text_start), deltas, (text_end), done
  const perCall = workload.compact ? 1 : 3;
  return turns * (text + perCall * CALLS_PER_TURN) + text;
}

// The transcript every leg must end with, as a comparable shape (roles, ids, tool result texts and details).
export function transcriptShape(messages) {
  return messages.map((m) => {
    if (m.role === "toolResult") {
      const text = m.content.map((b) => b.text).join("");
      return `toolResult:${m.toolCallId}:${m.isError ? "error" : "ok"}:${text}:${JSON.stringify(m.details)}`;
    }
    if (m.role === "assistant") {
      const calls = m.content.filter((b) => b.type === "toolCall").map((b) => b.id).join(",");
      return `assistant:${m.stopReason}:${calls}`;
    }
    return m.role;
  }).join("\n");
}

export function expectedMessageCount(turns) {
  return 1 + turns * (1 + CALLS_PER_TURN) + 1;
}
