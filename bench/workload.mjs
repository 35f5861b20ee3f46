// The scripted workloads every leg runs: N tool turns, then a final stop turn. Each model request gets a fresh
// pi-ai AssistantMessageEventStream, one `partial` message mutated in place, `done` carrying the final message.
// All events are pushed at once when the stream is created, so no leg waits on a timer: what is timed is the loop.
//
// Three workloads, written to differ where an app's setup differs:
// - `full`: 10 text deltas and 3 tool calls a turn, events as pi-ai's providers emit them (start, text_start,
//   every text_delta, text_end, toolcall_start/delta/end per call, done); tools return `details: {}`;
//   pi-agent-core's `convertToLlm` filters the context by role, as its docs show.
// - `compact`: 10 text deltas and 3 calls a turn, a stream that emits only start, the text deltas, toolcall_end
//   per call and done; tools return no `details`; pi-agent-core's `convertToLlm` is the identity.
// - `thinking`: a reasoning model's turn: a thinking block (thinking_start, 10 thinking deltas, thinking_end
//   with a signature), then 40 text deltas, then 1 tool call, all in pi-ai's full grammar; the tool returns
//   1 KB of `details` (JSON.stringify length 1,000-1,100), made fresh per call; `convertToLlm` filters by role.
import { createAssistantMessageEventStream } from "@mariozechner/pi-ai";

export const SYSTEM_PROMPT = "You are a benchmark.";
export const TOOL_NAMES = ["read", "grep", "ls"];

const PATH_SCHEMA = {
  type: "object",
  properties: { path: { type: "string" } },
  required: ["path"],
};

const LLM_ROLES = new Set(["user", "assistant", "toolResult"]);
const byRole = (messages) => messages.filter((m) => LLM_ROLES.has(m.role));

/** ~1 KB of details, as a read or grep tool reports what it looked at (fresh strings for each call). */
export function kilobyteDetails(name, path) {
  return {
    tool: name,
    path,
    bytes: 4096,
    lines: Array.from({ length: 12 }, (_, i) => ({ n: i + 1, text: `fn item_${i}() -> Result<(), Error> { todo!() } // ${path}` })),
  };
}

export const WORKLOADS = {
  full: {
    name: "full",
    describe: "10 text deltas + 3 calls a turn, pi-ai provider events (text_start/end, toolcall_start/delta/end), tools return details: {}, pi's convertToLlm filters by role",
    compact: false, deltas: 10, calls: 3, thinking: 0,
    details: () => ({}),
    convertToLlm: byRole,
  },
  compact: {
    name: "compact",
    describe: "10 text deltas + 3 calls a turn, compact events (start, text_delta, toolcall_end, done), tools return no details, pi's convertToLlm is (m) => m",
    compact: true, deltas: 10, calls: 3, thinking: 0,
    details: () => undefined,
    convertToLlm: (m) => m,
  },
  thinking: {
    name: "thinking",
    describe: "a thinking block (10 deltas) + 40 text deltas + 1 call a turn, pi-ai provider events, the tool returns 1 KB of details, pi's convertToLlm filters by role",
    compact: false, deltas: 40, calls: 1, thinking: 10,
    details: kilobyteDetails,
    convertToLlm: byRole,
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
      const details = workload.details(name, args.path);
      if (details !== undefined) output.details = details;
      return output;
    },
  }));
}

export function userMessage() {
  return { role: "user", content: "Run the benchmark.", timestamp: 1 };
}

/** A turn's shape: the workload's, or the cost split's variant ({ deltas, calls } replaced). */
export const shapeOf = (workload, shape) => ({ deltas: workload.deltas, calls: workload.calls, thinking: workload.thinking, ...shape });

// A Script hands out one fresh stream per request: turns 0..n-1 use tools, turn n stops.
// `shape` changes the turns for the cost split (bench/run.mjs): { deltas, calls } per turn.
export class Script {
  constructor(turns, workload, shape) {
    this.turns = turns;
    this.workload = workload;
    this.shape = shapeOf(workload, shape);
    this.next_ = 0;
  }

  nextStream() {
    const turn = this.next_++;
    const stream = createAssistantMessageEventStream();
    feed(stream, turn, turn < this.turns, this.shape, this.workload.compact);
    return stream;
  }
}

function feed(stream, turn, withTools, { deltas, calls, thinking }, compact) {
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

  if (thinking > 0) {
    const block = { type: "thinking", thinking: "" };
    const contentIndex = partial.content.length;
    partial.content.push(block);
    if (!compact) stream.push({ type: "thinking_start", contentIndex, partial });
    for (let i = 0; i < thinking; i++) {
      const delta = `step ${i} of turn ${turn}; `;
      block.thinking += delta;
      stream.push({ type: "thinking_delta", contentIndex, delta, partial });
    }
    block.thinkingSignature = `sig_${turn}_${"x".repeat(48)}`;
    if (!compact) stream.push({ type: "thinking_end", contentIndex, content: block.thinking, partial });
  }

  const text = { type: "text", text: "" };
  const textIndex = partial.content.length;
  partial.content.push(text);
  if (!compact) stream.push({ type: "text_start", contentIndex: textIndex, partial });
  for (let i = 0; i < deltas; i++) {
    const delta = `t${turn}d${i} `;
    text.text += delta;
    stream.push({ type: "text_delta", contentIndex: textIndex, delta, partial });
  }
  if (!compact) stream.push({ type: "text_end", contentIndex: textIndex, content: text.text, partial });

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

/** Events one run's model produces, to check the loops forwarded every one. */
export function modelEventCount(turns, workload, shape) {
  const { deltas, calls, thinking } = shapeOf(workload, shape);
  const framed = (n) => (n === 0 ? 0 : workload.compact ? n : n + 2); // a block's deltas, with its _start/_end
  const perTurn = 2 + framed(thinking) + (workload.compact ? deltas : deltas + 2); // start, done; the text block always
  return (turns + 1) * perTurn + turns * calls * (workload.compact ? 1 : 3);
}

/** LoopEvents a SPEC loop emits for a run: model events, one assistant_message a request, tool_start and
 * tool_end a call, one turn_end. */
export function loopEventCount(turns, workload, shape) {
  const { calls } = shapeOf(workload, shape);
  return modelEventCount(turns, workload, shape) + (turns + 1) + 2 * calls * turns + 1;
}

/** The transcript every leg must end with, as a comparable shape (roles, blocks, ids, tool result texts and details). */
export function transcriptShape(messages) {
  return messages.map((m) => {
    if (m.role === "toolResult") {
      const text = m.content.map((b) => b.text).join("");
      return `toolResult:${m.toolCallId}:${m.isError ? "error" : "ok"}:${text}:${JSON.stringify(m.details)}`;
    }
    if (m.role === "assistant") {
      const blocks = m.content.map((b) => (b.type === "toolCall" ? `toolCall(${b.id})` : `${b.type}(${(b.text ?? b.thinking).length})`)).join(",");
      return `assistant:${m.stopReason}:${blocks}`;
    }
    return m.role;
  }).join("\n");
}

export function expectedMessageCount(turns, workload, shape) {
  const { calls } = shapeOf(workload, shape);
  return 1 + turns * (1 + calls) + 1;
}
