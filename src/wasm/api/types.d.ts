
// ---- Messages (SPEC §1; pi-ai's shapes, so pi-ai objects can be passed in) ----
// Several names are pi-ai's too (AssistantMessage, ToolCall, Model, ...), for the same JSON; a module that
// uses both imports one side under another name: `import type { Model as PiModel } from "@mariozechner/pi-ai"`.

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

/** A message of the transcript. `A` is the run's assistant message type: tiny-pi's own by default, or one
 * with more required fields, such as pi-ai's `AssistantMessage` (api, provider, model, usage) when the model
 * is a pi-ai stream. */
export type AgentMessage<A extends AssistantMessage = AssistantMessage> = UserMessage | A | ToolResultMessage;

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

/** What the model is sent. With `A` = pi-ai's `AssistantMessage` it is a pi-ai `Context`, so pi-ai's
 * `streamSimple(piModel, request, options)` takes it as it is. */
export interface ModelRequest<A extends AssistantMessage = AssistantMessage> {
  systemPrompt?: string;
  messages: AgentMessage<A>[];
  tools: ToolDefinition[];
}

/** pi-ai's AssistantMessageEvent. `partial` is on pi-ai's own streams and on a ScriptedModel's with
 * `events: "pi-ai"`; the compact grammar leaves it out. */
export type ModelEvent<A extends AssistantMessage = AssistantMessage> =
  | { type: "start"; partial?: A }
  | { type: "text_start"; contentIndex: number; partial?: A }
  | { type: "text_delta"; contentIndex: number; delta: string; partial?: A }
  | { type: "text_end"; contentIndex: number; content: string; partial?: A }
  | { type: "thinking_start"; contentIndex: number; partial?: A }
  | { type: "thinking_delta"; contentIndex: number; delta: string; partial?: A }
  | { type: "thinking_end"; contentIndex: number; content: string; partial?: A }
  | { type: "toolcall_start"; contentIndex: number; partial?: A }
  | { type: "toolcall_delta"; contentIndex: number; delta: string; partial?: A }
  | { type: "toolcall_end"; contentIndex: number; toolCall: ToolCall; partial?: A }
  | { type: "done"; reason: "stop" | "length" | "toolUse"; message: A }
  | { type: "error"; reason: "aborted" | "error"; error: A };

/** Any async iterable of model events; the final message comes from `result()` when present, otherwise
 * from the terminal `done`/`error` event. A pi-ai `EventStream` works unchanged. */
export type ModelStream<A extends AssistantMessage = AssistantMessage> = (AsyncIterable<ModelEvent<A>> | Iterable<ModelEvent<A>>) & {
  result?(): Promise<A>;
};

/** A model: anything with `stream()`. `A` is the assistant message type it produces (pi-ai's
 * `AssistantMessage` for a pi-ai model: `const model: Model<PiAssistantMessage> = { stream: ... }`). */
export interface Model<A extends AssistantMessage = AssistantMessage> {
  /** Returns the stream itself, synchronously (not a promise of it: an `async stream()` ends the run with an error). */
  stream(request: ModelRequest<A>, options: { signal?: AbortSignal }): ModelStream<A>;
}

/** The second argument of `new ScriptedModel(messages, options)`. */
export interface ScriptedModelOptions {
  /** `"compact"` (the default): `start`, one delta per block (and `toolcall_end`), then `done`/`error`.
   * `"pi-ai"`: pi-ai's full grammar, `*_start`/`*_delta`/`*_end` per block, each with the `partial` message,
   * as a pi-ai provider streams it. */
  events?: "compact" | "pi-ai";
}

// ---- Tools (SPEC §3) ----

export type ToolContent = (TextContent | ImageContent)[];

export interface ToolOutput<TDetails = unknown> {
  content: ToolContent;
  details?: TDetails;
  isError?: boolean;
}

export interface ToolSpec<TArgs = any, TDetails = unknown> {
  /** Unique in the registry, and what every provider accepts: `^[a-zA-Z0-9_-]{1,64}$` (checked by `register`). */
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

/** Tools of the caller's own, shaped like the registry's methods: what a run offers the model and how it
 * runs a call (a conformance runner's scripted tools, say). `execute` is called with the object as `this`. */
export interface ToolSource {
  definitions(): ToolDefinition[];
  execute: ToolExecutor;
}

// ---- The loop (SPEC §4) ----

export type SkipReason = "length" | "error" | "aborted" | "unexpected-stop" | "duplicate-call-id";
export type RunReason = "stop" | "length" | "error" | "aborted" | "maxSteps";

/** A result the loop wrote for a call it did not run. */
export type SkippedToolResult = ToolResultMessage<{ skipped: true; reason: SkipReason }> & { isError: true };

export type LoopEvent<A extends AssistantMessage = AssistantMessage> =
  | { type: "model_event"; event: ModelEvent<A> }
  | { type: "assistant_message"; message: A }
  | { type: "tool_start"; call: ToolCall }
  | { type: "tool_progress"; callId: string; content: ToolContent }
  | { type: "tool_end"; result: ToolResultMessage }
  | { type: "tool_skipped"; result: SkippedToolResult }
  | { type: "turn_end"; reason: RunReason; steps: number };

export interface RunOptions<A extends AssistantMessage = AssistantMessage> {
  context: {
    systemPrompt?: string;
    /** Copied at the start; the caller's array and objects are never changed. */
    messages: AgentMessage<A>[];
    /** Not read: every request carries the definitions of `options.tools`, the registry that runs them.
     * Typed `undefined` so that tools left here (a pi-ai `Context`'s, say), which the model would never see,
     * do not compile. */
    tools?: undefined;
  };
  model: Model<A>;
  /** The tools the model is offered (`definitions()`) and, unless `executeToolCall` is given, runs them:
   * a `ToolRegistry`, or any `ToolSource` (its `definitions()` is read once per run). */
  tools?: ToolRegistry | ToolSource;
  /** Runs every tool call instead of `tools` (which still says what the model is offered); may reject, which
   * answers the call with an error result. Delegate to the registry with `tools.execute(call, context)`. */
  executeToolCall?: ToolExecutor;
  signal?: AbortSignal;
  /** Caps model requests; default 32. */
  maxSteps?: number;
  /** A returned promise is awaited before the loop goes on; a throw or rejection never stops the run. */
  onEvent?: (event: LoopEvent<A>) => void | Promise<void>;
  /** Clock for the timestamps the loop writes; default `Date.now`. */
  now?: () => number;
}

export interface RunResult<A extends AssistantMessage = AssistantMessage> {
  reason: RunReason;
  messages: AgentMessage<A>[];
  /** The number of model requests made. */
  steps: number;
  error?: string;
  /** The first error `onEvent` threw or rejected with. */
  observerError?: string;
}

/**
 * Runs the agent loop until the model stops, the output is truncated, an error or abort ends it, or the
 * step limit is reached. Rejects with a `TypeError` naming the field when an option is malformed.
 * `A` is the model's assistant message type, taken from `options.model`.
 */
export function runAgentLoop<A extends AssistantMessage = AssistantMessage>(options: RunOptions<A>): Promise<RunResult<A>>;

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
