
// ---- Messages (SPEC §1; pi-ai's shapes, so pi-ai objects can be passed in) ----

export type TextContent = { type: "text"; text: string; textSignature?: string };
export type ThinkingContent = { type: "thinking"; thinking: string; thinkingSignature?: string; redacted?: boolean };
export type ImageContent = { type: "image"; data: string; mimeType: string };
export type ToolCall = { type: "toolCall"; id: string; name: string; arguments: Record<string, unknown>; thoughtSignature?: string };
export type StopReason = "stop" | "length" | "toolUse" | "error" | "aborted";

export interface UserMessage {
  role: "user";
  content: string | (TextContent | ImageContent)[];
  timestamp: number;
}

/** Unknown extra fields (usage, api, provider, model, responseId, ...) survive a run unchanged. */
export interface AssistantMessage {
  role: "assistant";
  content: (TextContent | ThinkingContent | ToolCall)[];
  stopReason: StopReason;
  errorMessage?: string;
  timestamp: number;
}

export interface ToolResultMessage<TDetails = unknown> {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: (TextContent | ImageContent)[];
  details?: TDetails;
  isError: boolean;
  timestamp: number;
}

export type AgentMessage = UserMessage | AssistantMessage | ToolResultMessage;

// ---- The model boundary (SPEC §2) ----

/** A JSON Schema (draft 2020-12; a draft-07 `$schema` is read as draft-07), checked and compiled at
 * `register`. Every assertion of the applicator and validation vocabularies is applied; `pattern` and
 * `patternProperties` use the host's `RegExp` with the `u` flag; `$ref` resolves inside the schema
 * (`$defs`, JSON pointers, `$id`, `$anchor`); `format` and unknown keywords are annotations. `register` throws
 * a `TypeError` naming the keyword for a remote `$ref`, `$dynamicRef`, `unevaluatedProperties`/
 * `unevaluatedItems`, another `$schema`, an invalid pattern or a malformed keyword. */
export type JSONSchema = { [keyword: string]: unknown };

export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JSONSchema;
}

export interface ModelRequest {
  systemPrompt?: string;
  messages: AgentMessage[];
  tools: ToolDefinition[];
}

/** pi-ai's AssistantMessageEvent. `partial` is present on pi-ai's own streams, absent on ScriptedModel's. */
export type ModelEvent =
  | { type: "start"; partial?: AssistantMessage }
  | { type: "text_start"; contentIndex: number; partial?: AssistantMessage }
  | { type: "text_delta"; contentIndex: number; delta: string; partial?: AssistantMessage }
  | { type: "text_end"; contentIndex: number; content: string; partial?: AssistantMessage }
  | { type: "thinking_start"; contentIndex: number; partial?: AssistantMessage }
  | { type: "thinking_delta"; contentIndex: number; delta: string; partial?: AssistantMessage }
  | { type: "thinking_end"; contentIndex: number; content: string; partial?: AssistantMessage }
  | { type: "toolcall_start"; contentIndex: number; partial?: AssistantMessage }
  | { type: "toolcall_delta"; contentIndex: number; delta: string; partial?: AssistantMessage }
  | { type: "toolcall_end"; contentIndex: number; toolCall: ToolCall; partial?: AssistantMessage }
  | { type: "done"; reason: "stop" | "length" | "toolUse"; message: AssistantMessage }
  | { type: "error"; reason: "aborted" | "error"; error: AssistantMessage };

/** Any async iterable of model events; the final message comes from `result()` when present, otherwise
 * from the terminal `done`/`error` event. A pi-ai `EventStream` works unchanged. */
export type ModelStream = (AsyncIterable<ModelEvent> | Iterable<ModelEvent>) & { result?(): Promise<AssistantMessage> };

export interface Model {
  /** Returns the stream itself, synchronously (not a promise of it: an `async stream()` ends the run with an error). */
  stream(request: ModelRequest, options: { signal?: AbortSignal }): ModelStream;
}

// ---- Tools (SPEC §3) ----

export type ToolContent = (TextContent | ImageContent)[];

export interface ToolOutput<TDetails = unknown> {
  content: ToolContent;
  details?: TDetails;
  isError?: boolean;
}

export interface ToolSpec<TArgs = any, TDetails = unknown> {
  name: string;
  description?: string;
  /** JSON Schema of the arguments; defaults to `{ type: "object" }`. */
  parameters?: JSONSchema;
  execute(
    args: TArgs,
    context: { callId: string; signal?: AbortSignal; reportProgress(content: ToolContent): void },
  ): ToolOutput<TDetails> | Promise<ToolOutput<TDetails>>;
}

export type ToolExecutor = (
  call: ToolCall,
  context: { signal?: AbortSignal; reportProgress(content: ToolContent): void },
) => Promise<Partial<ToolResultMessage> & { content: ToolContent }> | (Partial<ToolResultMessage> & { content: ToolContent });

// ---- The loop (SPEC §4) ----

export type SkipReason = "length" | "error" | "aborted" | "unexpected-stop" | "duplicate-call-id";
export type RunReason = "stop" | "length" | "error" | "aborted" | "maxSteps";

/** A result the loop wrote for a call it did not run. */
export type SkippedToolResult = ToolResultMessage<{ skipped: true; reason: SkipReason }> & { isError: true };

export type LoopEvent =
  | { type: "model_event"; event: ModelEvent }
  | { type: "assistant_message"; message: AssistantMessage }
  | { type: "tool_start"; call: ToolCall }
  | { type: "tool_progress"; callId: string; content: ToolContent }
  | { type: "tool_end"; result: ToolResultMessage }
  | { type: "tool_skipped"; result: SkippedToolResult }
  | { type: "turn_end"; reason: RunReason; steps: number };

export interface RunOptions {
  context: { systemPrompt?: string; messages: AgentMessage[]; tools?: unknown };
  model: Model;
  tools?: ToolRegistry;
  executeToolCall?: ToolExecutor;
  signal?: AbortSignal;
  /** Caps model requests; default 32. */
  maxSteps?: number;
  /** A returned promise is awaited before the loop goes on; a throw or rejection never stops the run. */
  onEvent?: (event: LoopEvent) => void | Promise<void>;
  /** Clock for the timestamps the loop writes; default `Date.now`. */
  now?: () => number;
}

export interface RunResult {
  reason: RunReason;
  messages: AgentMessage[];
  /** The number of model requests made. */
  steps: number;
  error?: string;
  /** The first error `onEvent` threw or rejected with. */
  observerError?: string;
}

// ---- Checks (SPEC §5) ----

export type TranscriptProblemKind = "missing_result" | "result_before_call" | "orphan_result" | "duplicate_result" | "duplicate_call_id";
export interface TranscriptValidation {
  ok: boolean;
  problems: { kind: TranscriptProblemKind; toolCallId: string; index: number }[];
}

export type TraceKind = "user_message" | "model_start" | "assistant_message" | "tool_start" | "tool_result";
export type TraceOwner = "user" | "model" | "loop" | "tool";
export interface TraceRecord {
  seq: number;
  kind: TraceKind;
  owner: TraceOwner;
  detail: string;
  toolCallId?: string;
}
export interface TraceValidation {
  ok: boolean;
  problems: { kind: "missing_result" | "result_before_call"; toolCallId: string; seq: number; message: "missing paired result" | "result before call" }[];
}
