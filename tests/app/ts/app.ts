// A TypeScript app using every export of tiny-pi and tiny-pi/lesson (pi-ai interop is in pi-ai-interop.ts), checked with `tsc --strict --noEmit` against the
// installed package's .d.ts. The @ts-expect-error lines prove the types are precise: if a type were
// loose (any, string instead of a union, optional instead of required), tsc reports the unused directive.
import {
  runAgentLoop,
  ToolRegistry,
  validateTranscript,
  Agent,
  parseJSONL,
  repairTranscript,
  toJSONL,
} from "tiny-pi";
import { formatTrace, prologueTrace, ScriptedModel, validateTrace } from "tiny-pi/lesson";
import type {
  AgentMessage,
  AssistantMessage,
  LoopEvent,
  ModelEvent,
  ModelRequest,
  ToolCall,
  ToolResultMessage,
  TraceRecord,
  Approvals,
  PendingCall,
  SkipReason,
  UserMessage,
  CustomMessage,
  RunResult as RunResultOf,
  CompactionEntry,
  ModelMessage,
  RunUsage,
  RetryFailure,
} from "tiny-pi";

type RunOptions = Parameters<typeof runAgentLoop>[0];
type RunResult = Awaited<ReturnType<typeof runAgentLoop>>;

const readCall: ToolCall = { type: "toolCall", id: "call-1", name: "read", arguments: { path: "README.md" } };
const script: AssistantMessage[] = [
  { role: "assistant", content: [{ type: "text", text: "我先读取项目说明。" }, readCall], stopReason: "toolUse", timestamp: 2 },
  { role: "assistant", content: [{ type: "text", text: "项目名是 tiny-pi。" }], stopReason: "stop", timestamp: 4 },
];
const input: AgentMessage[] = [{ role: "user", content: "请读取 README.md，并告诉我项目名。", timestamp: 1 }];

const tools = new ToolRegistry();
tools.register({
  name: "read",
  description: "Read a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  execute: async (_args, ctx) => {
    const id: string = ctx.callId;
    ctx.reportProgress([{ type: "text", text: `reading for ${id}` }]);
    return { content: [{ type: "text", text: "# tiny-pi" }], details: { bytes: 9 } };
  },
});
const defs: { name: string; description: string }[] = tools.definitions();

// Every LoopEvent variant narrows on `type`; the default branch proves the union is closed.
function describe(e: LoopEvent): string {
  switch (e.type) {
    case "model_event": {
      const ev: ModelEvent = e.event;
      return ev.type;
    }
    case "assistant_message":
      return e.message.stopReason;
    case "tool_start":
      return e.call.name;
    case "tool_progress":
      return `${e.callId}:${e.content.length}`;
    case "tool_end": {
      const r: ToolResultMessage = e.result;
      // @ts-expect-error a tool_end carries a result, not a call
      return r.toolCallId + e.call.id;
    }
    case "tool_skipped":
      return e.result.toolCallId + e.result.details.reason;
    case "queued_message": {
      const queue: "steering" | "followUp" = e.queue;
      const user: UserMessage = e.message;
      return `${queue}:${user.role}`;
    }
    case "retry":
      return `retry ${e.attempt} in ${e.delayMs} ms: ${e.error}`;
    case "compaction": {
      const entry: CompactionEntry = e.entry;
      return `${entry.role}: ${entry.summary} from ${entry.firstKeptIndex} (${entry.tokensBefore} tokens)`;
    }
    case "turn_end":
      return `${e.reason}/${e.steps}`;
    default: {
      const unreachable: never = e;
      return unreachable;
    }
  }
}

const model = new ScriptedModel(script);
const options: RunOptions = {
  context: { systemPrompt: "SYS", messages: input },
  model,
  tools,
  maxSteps: 8,
  signal: new AbortController().signal,
  now: () => Date.now(),
  onEvent: async (e) => {
    describe(e);
  },
  executeToolCall: async (call, ctx) => {
    ctx.reportProgress([{ type: "text", text: "..." }]);
    return { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [], isError: false, timestamp: 3 };
  },
};
const result: RunResult = await runAgentLoop(options);
const reason: "stop" | "length" | "error" | "aborted" | "maxSteps" | "terminated" | "paused" | "budget" = result.reason;
const steps: number = result.steps;
const error: string | undefined = result.error;
const requests: ModelRequest[] = model.requests;
model.free();

for (const m of result.messages) {
  if (m.role === "toolResult") {
    const id: string = m.toolCallId;
    const isError: boolean = m.isError;
  } else if (m.role === "assistant") {
    const calls: ToolCall[] = m.content.filter((b): b is ToolCall => b.type === "toolCall");
  }
}

// @ts-expect-error "toolUse" ends a model response, never a run
if (result.reason === "toolUse") console.log("impossible");

// @ts-expect-error "finished" is not a StopReason
const badStop: AssistantMessage = { role: "assistant", content: [], stopReason: "finished", timestamp: 0 };

// @ts-expect-error a tool call needs an id
const noId: ToolCall = { type: "toolCall", name: "read", arguments: {} };

// @ts-expect-error maxSteps is a number
void runAgentLoop({ context: { messages: input }, model, maxSteps: "3" });

// @ts-expect-error the model is required
void runAgentLoop({ context: { messages: input } });

// @ts-expect-error a ScriptedModel replays assistant messages
new ScriptedModel("hello");

const piAiGrammar = new ScriptedModel(script, { events: "pi-ai" });
piAiGrammar.free();

// @ts-expect-error a ScriptedModel's grammar is "compact" or "pi-ai"
new ScriptedModel(script, { events: "full" });

// @ts-expect-error context.tools is never sent: the model is offered options.tools
void runAgentLoop({ context: { messages: input, tools: defs }, model });

// @ts-expect-error a tool needs an execute function
tools.register({ name: "broken" });

// A tool source written inline is typed from ToolSource: `call` and `context` need no annotation, and a text
// block's `type` stays the literal "text".
void runAgentLoop({
  context: { messages: input },
  model,
  tools: {
    definitions: () => [{ name: "echo", description: "", parameters: { type: "object" } }],
    execute: async (call, context) => {
      context.reportProgress([{ type: "text", text: `running ${call.name}` }]);
      return { content: [{ type: "text", text: call.id }] };
    },
  },
});

// SPEC §7: the loop-control options, each hook typed by its arguments and its answer.
const controlled = await runAgentLoop({
  context: { messages: [...input, { role: "note", text: "from the app" }] },
  model,
  tools,
  toolExecution: "sequential",
  toolTimeoutMs: 30_000,
  customRoles: ["note"],
  beforeToolCall: async (call, ctx) => {
    const aborted: boolean = ctx.signal.aborted;
    const step: number = ctx.step;
    return call.name === "delete" ? { block: true, reason: `not at step ${step}` } : undefined;
  },
  afterToolCall: (_call, result) => (result.isError ? { content: [{ type: "text", text: "failed" }], terminate: true } : undefined),
  prepareRequest: (request, ctx) => ({ systemPrompt: `${request.systemPrompt ?? ""} (${ctx.messages.length} messages)` }),
  getSteeringMessages: () => [],
  getFollowUpMessages: async () => [{ role: "note", text: "queued" }, { role: "user", content: "go on", timestamp: 5 }],
  onEvent: (e) => {
    if (e.type === "queued_message") {
      // Narrowed: a user message or one of the run's custom roles.
      const message = e.message;
      const body: unknown = message.role === "note" ? message.text : message.content;
    }
  },
});
for (const m of controlled.messages) {
  if (m.role === "note") {
    const note: unknown = m.text;
  } else if (m.role === "assistant") {
    const stop: string = m.stopReason;
  }
}
const terminated: boolean = controlled.reason === "terminated";
tools.register({ name: "slow", executionMode: "sequential", timeoutMs: 500, execute: async () => ({ content: [], terminate: true }) });

// @ts-expect-error block is true or false
void runAgentLoop({ context: { messages: input }, model, beforeToolCall: () => ({ block: 1 }) });

// @ts-expect-error isError is a boolean
void runAgentLoop({ context: { messages: input }, model, afterToolCall: () => ({ isError: "yes" }) });

// @ts-expect-error toolExecution is "parallel" or "sequential"
void runAgentLoop({ context: { messages: input }, model, toolExecution: "serial" });

// @ts-expect-error only user and custom-role messages may be queued
void runAgentLoop({ context: { messages: input }, model, getSteeringMessages: () => script });

// @ts-expect-error a message of a role that is not listed in customRoles
void runAgentLoop({ context: { messages: [{ role: "note", text: "x" }] }, model });

// @ts-expect-error a tool's executionMode is "parallel" or "sequential"
tools.register({ name: "odd", executionMode: "serial", execute: async () => ({ content: [] }) });

const check = validateTranscript(result.messages);
for (const p of check.problems) {
  const kind: "missing_result" | "result_before_call" | "orphan_result" | "duplicate_result" | "duplicate_call_id" = p.kind;
  const where: [string, number] = [p.toolCallId, p.index];
}
const records: TraceRecord[] = prologueTrace(result.messages);
const withNotes: TraceRecord[] = prologueTrace([...result.messages, { role: "note", text: "n" }], { customRoles: ["note"] });
const owners: ("user" | "model" | "loop" | "tool")[] = records.map((r) => r.owner);
const text: string = formatTrace(records);
const traceOk: boolean = validateTrace(records).ok;
tools.free();

export { badStop, defs, error, noId, owners, reason, requests, steps, terminated, text, traceOk };

// ---- SPEC §8/§9: approvals, pause and resume, sessions, the Agent ----
const guarded = new ToolRegistry();
guarded.register({
  name: "delete",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  needsApproval: async (args: { path: string }) => args.path.startsWith("/"),
  execute: async () => ({ content: [{ type: "text", text: "deleted" }] }),
});
guarded.register({ name: "archive", needsApproval: true, execute: async () => ({ content: [] }) });

// @ts-expect-error needsApproval is a boolean or a function of the arguments
guarded.register({ name: "bad", needsApproval: "always", execute: async () => ({ content: [] }) });

const paused: RunResult = await runAgentLoop({ context: { messages: input }, model, tools: guarded });
const pending: readonly PendingCall[] | undefined = paused.pending;
let resumedReason: RunResult["reason"] | undefined;
if (paused.reason === "paused" && pending) {
  const decisions: Approvals = { [pending[0].toolCallId]: { approve: true }, other: { approve: false, reason: "Not today." } };
  const needs: boolean = pending[0].needsApproval;
  const resumed = await runAgentLoop({ context: { messages: paused.messages }, model, tools: guarded, approvals: decisions, startSteps: paused.steps });
  resumedReason = needs ? resumed.reason : undefined;
}
const skipReasons: SkipReason[] = ["denied", "interrupted"];

// @ts-expect-error a denial's reason is a string
const badDecision: Approvals = { c1: { approve: false, reason: 3 } };

// @ts-expect-error startSteps is a number
void runAgentLoop({ context: { messages: input }, model, startSteps: "1" });

const view = validateTranscript(paused.messages, { allowPending: true, customRoles: ["note"] });
const waiting: { toolCallId: string; index: number }[] = view.pending ?? [];
const repaired: { messages: AgentMessage[]; repaired: number } = repairTranscript(paused.messages, { now: () => 1 });
const saved: string = toJSONL(repaired.messages);
const restored: (AgentMessage | CustomMessage<"note">)[] = parseJSONL(saved, { customRoles: ["note"] });

// @ts-expect-error parseJSONL reads text
parseJSONL(restored);

const agent = new Agent({ model, tools: guarded, systemPrompt: "Be careful.", maxSteps: 4, messages: restored, now: () => 1, customRoles: ["note"] });
const unsubscribe: () => void = agent.subscribe((e) => {
  // A queued message is a user message or one of the agent's custom roles.
  const seen: string = e.type === "queued_message" ? (e.message.role satisfies "user" | "note") : describe(e);
});
const answer: RunResultOf<AssistantMessage, "note"> = await agent.prompt("hi");
await agent.prompt({ role: "user", content: "hello", timestamp: 1 });
agent.steer({ role: "user", content: "also", timestamp: 2 });
agent.followUp({ role: "note", text: "custom roles may be queued too" });

// @ts-expect-error only user messages and the agent's custom roles may be queued
agent.steer({ role: "memo", text: "not a listed role" });
if (agent.pending) await agent.resume({ [agent.pending[0].toolCallId]: { approve: true } });
agent.abort();
await agent.waitForIdle();
const running: boolean = agent.isRunning;
const conversation: readonly (AgentMessage | CustomMessage<"note">)[] = agent.messages;

// @ts-expect-error messages is a frozen snapshot
agent.messages.push(input[0]);
// A frozen transcript goes on as it is: a run and an agent copy what they are given.
await runAgentLoop({ model, context: { messages: agent.messages }, customRoles: ["note"] });
new Agent({ model, messages: conversation, customRoles: ["note"] }).free();
const dispose: () => void = agent[Symbol.dispose];

// @ts-expect-error the agent's runs have their own onEvent: use subscribe
new Agent({ model, onEvent: () => {} });

// The §7 options pass through to every run, typed as runAgentLoop's; the queues are the agent's own.
const hooked = new Agent({ model, toolExecution: "sequential", beforeToolCall: (call) => (call.name === "delete" ? { block: true } : undefined) });
hooked.reset();

// @ts-expect-error the agent feeds getSteeringMessages itself: use steer
new Agent({ model, getSteeringMessages: () => [] });

const reloaded = Agent.fromJSONL(agent.toJSONL(), { model, tools: guarded });
reloaded.reset();
unsubscribe();
guarded.free();

export { answer, badDecision, conversation, resumedReason, running, skipReasons, waiting };

// ---- SPEC part three: usage and budgets, retries, compaction ----
const compacting = await runAgentLoop({
  context: { messages: input },
  model,
  budget: { maxTokens: 100_000, maxCost: 0.5 },
  retry: {
    maxRetries: 3,
    baseDelayMs: 500,
    maxDelayMs: 10_000,
    shouldRetry: async (failure) => {
      const seen: RetryFailure = failure;
      const stop: string | undefined = failure.message?.stopReason;
      return failure.attempt <= 2 && !failure.error.includes("401");
    },
  },
  compaction: {
    maxContextTokens: 8_000,
    keepRecentTokens: 2_000,
    summarize: async (messages, { signal }) => {
      // A request's messages: never a compaction entry (the previous summary comes as a user message).
      const sent: readonly ModelMessage[] = messages;
      const roles: ("user" | "assistant" | "toolResult")[] = messages.map((m) => m.role);
      return signal.aborted ? "" : `${roles.length} messages`;
    },
    estimateTokens: (message) => JSON.stringify(message).length / 4,
  },
  prepareRequest: (request) => {
    for (const m of request.messages) {
      // @ts-expect-error a request never carries a compaction entry
      if (m.role === "compaction") return;
    }
  },
});
const usage: RunUsage = compacting.usage;
const spent: [number, number, number, number, number, number] = [usage.input, usage.output, usage.cacheRead, usage.cacheWrite, usage.totalTokens, usage.cost];
const retries: number = compacting.retries;
const overBudget: boolean = compacting.reason === "budget";
for (const m of compacting.messages) {
  if (m.role === "compaction") {
    const summary: string = m.summary;
    const kept: number = m.firstKeptIndex;
  }
}
// A transcript holds compaction entries: JSONL and the checks read them without customRoles.
const entry: CompactionEntry = { role: "compaction", summary: "Ada asked about README.md.", firstKeptIndex: 1, tokensBefore: 9_000, timestamp: 3 };
const withEntry: AgentMessage[] = [...input, entry];
const reread: AgentMessage[] = parseJSONL(toJSONL(withEntry));
const entryOk: boolean = validateTranscript(withEntry).ok;

// @ts-expect-error maxTokens is a number
void runAgentLoop({ context: { messages: input }, model, budget: { maxTokens: "1000" } });

// @ts-expect-error shouldRetry answers a boolean
void runAgentLoop({ context: { messages: input }, model, retry: { shouldRetry: () => "yes" } });

// @ts-expect-error summarize answers a string
void runAgentLoop({ context: { messages: input }, model, compaction: { maxContextTokens: 10, summarize: async () => 42 } });

// @ts-expect-error estimateTokens answers at once, not a promise
void runAgentLoop({ context: { messages: input }, model, compaction: { maxContextTokens: 10, summarize: () => "", estimateTokens: async () => 1 } });

// @ts-expect-error compaction needs maxContextTokens
void runAgentLoop({ context: { messages: input }, model, compaction: { summarize: () => "" } });

// @ts-expect-error a compaction entry's summary is a string
const badEntry: CompactionEntry = { role: "compaction", summary: 1, firstKeptIndex: 0, tokensBefore: 0, timestamp: 0 };

// The Agent: part three's options for every run, and the steps of a paused conversation restored from JSONL.
const longLived = Agent.fromJSONL(toJSONL(withEntry), {
  model,
  budget: { maxCost: 1 },
  retry: { maxRetries: 2 },
  compaction: { maxContextTokens: 8_000, summarize: () => "summary" },
  startSteps: 3,
});
const failed = await longLived.prompt("hello");
// A run that ended in an error is retried from the conversation as it is.
const again: RunResultOf = failed.reason === "error" ? await longLived.prompt([]) : failed;

// @ts-expect-error startSteps is a number
new Agent({ model, startSteps: "3" });

export { again, badEntry, entryOk, overBudget, reread, retries, spent };
