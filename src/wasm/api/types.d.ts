
// The types `register` reads a tool's arguments from (`ToolArguments`). json-schema-to-ts is a dependency of
// this package, for its types only. TypeBox is an optional peer: an app that writes TypeBox schemas has it (pi-ai
// depends on it, and re-exports its `Type`), and TypeBox 1.x's schema types do not carry their static type, so
// only TypeBox's own `Static` reads them. An app without TypeBox has no TypeBox schema to read: the import below
// then resolves to nothing (the directive keeps `tsc` quiet about it) and no JSON Schema goes through it.
import type { FromSchema, JSONSchema as SchemaLiteral } from "json-schema-to-ts";
// @ts-ignore: TypeBox is an optional peer dependency (see above).
import type { Static as TypeBoxStatic } from "typebox";

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

/** A compaction entry (SPEC §13): the loop appends one when a request would carry more than
 * `compaction.maxContextTokens`. Nothing is removed from the transcript: the entry records the cut. Requests
 * after it carry `summary` (as a user message, `The conversation so far, summarised:\n\n<summary>`) and the
 * messages from `firstKeptIndex` on; the entry itself is never sent. It takes no part in pairing, and goes
 * through `toJSONL`/`parseJSONL`, `validateTranscript` and `context.messages` without `customRoles`; unknown
 * extra fields survive, as on any message. */
export interface CompactionEntry {
  role: "compaction";
  /** What `compaction.summarize` answered for the messages before the cut. */
  summary: string;
  /** The transcript index of the first message requests still carry (a user or assistant message). */
  firstKeptIndex: number;
  /** The estimated tokens of the request the entry shortened, before the cut (every entry the loop appends
   * has it; one handed in without it is kept without it). */
  tokensBefore?: number;
  timestamp: number;
}

/** A message as a model is sent it (a request's `messages`): a user message, an assistant message or a tool
 * result, the shapes of pi-ai's `Message`. `A` is the run's assistant message type (see `AgentMessage`). */
export type ModelMessage<A extends AssistantMessage = AssistantMessage> = UserMessage | A | ToolResultMessage;

/** A message of the transcript: what a model is sent, and the compaction entries the loop appends. `A` is the
 * run's assistant message type: tiny-pi's own by default, or one with more required fields, such as pi-ai's
 * `AssistantMessage` (api, provider, model, usage) when the model is a pi-ai stream. */
export type AgentMessage<A extends AssistantMessage = AssistantMessage> = ModelMessage<A> | CompactionEntry;

/** A message of one of the run's `customRoles` `R` (SPEC §7): kept in the transcript verbatim, never sent to
 * the model unless `prepareRequest` puts it back (converted). No such message without custom roles. */
export type CustomMessage<R extends string = never> = [R] extends [never] ? never : { role: Uninferred<R>; [field: string]: unknown };
/** `T`, not inferred from here: a run's assistant messages are its model's, its custom roles what `customRoles`
 * lists. */
type Uninferred<T> = [T][T extends unknown ? 0 : never];
/** A transcript an app gives a run or an Agent: `A` is taken from the model, never from these messages (plain
 * literals in a variable would infer it otherwise). */
type InputMessage<A extends AssistantMessage, R extends string> = UserMessage | Uninferred<A> | ToolResultMessage | CompactionEntry | CustomMessage<R>;

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
  /** The request's own array; it and its messages are frozen (typed mutable so that pi-ai takes it). After
   * a compaction: the summary as a user message, then the messages from the entry's `firstKeptIndex` on. */
  messages: ModelMessage<A>[];
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
  /** Ends the run after this batch (reason `"terminated"`); never stored in the result. */
  terminate?: boolean;
}

/** How the calls of a batch run: all at once (the default), or one at a time in call order. */
export type ExecutionMode = "parallel" | "sequential";

/** What a tool's `parameters` may be: a JSON Schema object, written as a literal (or `as const`), or a TypeBox
 * schema (`Type.Object(...)`, as pi-ai re-exports it). */
export type ToolParameters = JSONSchema | object;

/**
 * The arguments `execute` gets for a tool whose `parameters` has the type `S`, read by the packages that
 * do it well rather than by hand:
 * - a TypeBox 1.x schema (what pi-ai re-exports as `Type`; its types carry `"~kind"`): TypeBox's own
 *   `Static<S>`;
 * - a JSON Schema whose type TypeScript can read (written inline in `register`, or `as const`):
 *   json-schema-to-ts's `FromSchema<S>` (so `{ properties: { path: { type: "string" } }, required: ["path"] }`
 *   gives `{ path: string; [x: string]: unknown }`: JSON Schema allows other properties unless
 *   `additionalProperties: false`);
 * - no `parameters`, or a schema typed only as an object (`JSONSchema`, or a variable whose literal types
 *   were widened): `Record<string, unknown>`.
 */
export type ToolArguments<S> = [S] extends [never]
  ? Record<string, unknown>
  : S extends { readonly "~kind": string }
    ? TypeBoxStatic<S>
    : string extends keyof S
      ? Record<string, unknown>
      : S extends SchemaLiteral
        ? FromSchema<S>
        : Record<string, unknown>;

/** The properties an annotation of `execute`'s arguments and `parameters` both name, where neither type holds the
 * other: an annotation may narrow or widen what the schema gives, never contradict it. Arguments typed as the
 * schema's (a wrapper generic over it included), or a schema that says nothing of them (`Record<string, unknown>`),
 * agree. */
type Contradicted<TArgs, Args> = {
  [K in keyof TArgs & keyof Args]-?: [TArgs[K]] extends [Args[K]] ? never : [Args[K]] extends [TArgs[K]] ? never : K;
}[keyof TArgs & keyof Args];
type Agrees<TArgs, Args> = [TArgs] extends [Args]
  ? unknown
  : Record<string, unknown> extends Args
    ? unknown
    : [Contradicted<TArgs, Args>] extends [never]
      ? unknown
      : { execute: { "its arguments' annotation contradicts parameters at": Contradicted<TArgs, Args> } };

export interface ToolSpec<TArgs = any, TDetails = unknown, TParameters extends ToolParameters = JSONSchema> {
  /** Unique in the registry, and what every provider accepts: `^[a-zA-Z0-9_-]{1,64}$` (checked by `register`). */
  name: string;
  description?: string;
  /** JSON Schema of the arguments; defaults to `{ type: "object" }`. `register` types `execute`'s arguments
   * from it (`ToolArguments`). */
  parameters?: TParameters;
  /** `"sequential"`: every batch with a call to this tool runs one call at a time. */
  executionMode?: ExecutionMode;
  /** Its calls time out after this many milliseconds (a positive integer, at most 2^31 - 1), before the
   * run's `toolTimeoutMs`. */
  timeoutMs?: number;
  execute(
    args: TArgs,
    context: ExecuteContext & { callId: string },
  ): ToolOutput<TDetails> | Promise<ToolOutput<TDetails>>;
}

/** Tools by name, their definitions for the model, and the core executor (its other members are declared
 * with the class). */
export interface ToolRegistry {
  /** Adds a tool; throws a `TypeError` naming the bad field. `execute`'s arguments are typed from `parameters`
   * (`ToolArguments`: a JSON Schema literal through json-schema-to-ts, a TypeBox schema through TypeBox's
   * `Static`, `Record<string, unknown>` without one); an annotation of `execute`'s (or `needsApproval`'s)
   * arguments, or a `ToolSpec<Args>` passed whole, decides instead; an annotation beside a schema literal may
   * narrow or widen a property's type, not contradict it. */
  register<const S extends ToolParameters = never, TArgs = ToolArguments<S>, TDetails = unknown>(
    tool: ToolSpec<TArgs, TDetails, S> & Agrees<TArgs, ToolArguments<S>>,
  ): void;
}

/** What a call is run with beside the call: its signal, and where its progress goes (`tool_progress`). The
 * registry's `execute` takes either part or none. */
export type ExecuteContext = { signal?: AbortSignal; reportProgress(content: ToolContent): void };

export type ToolExecutor = (call: ToolCall, context: ExecuteContext) => Promise<ToolReply> | ToolReply;

/** What a `ToolExecutor` answers: a result, perhaps without the fields the loop writes from the call;
 * `terminate: true` ends the run after this batch. */
export type ToolReply = Partial<ToolResultMessage> & { content: ToolContent; terminate?: boolean };

/** Tools of the caller's own, shaped like the registry's methods: what a run offers the model and how it
 * runs a call (a conformance runner's scripted tools, say). `execute` is called with the object as `this`. */
export interface ToolSource {
  definitions(): ToolDefinition[];
  execute: ToolExecutor;
}

// ---- The loop (SPEC §4) ----

export type SkipReason = "length" | "error" | "aborted" | "unexpected-stop" | "duplicate-call-id" | "blocked" | "denied" | "interrupted";
export type RunReason = "stop" | "length" | "error" | "aborted" | "maxSteps" | "terminated" | "paused" | "budget";

/** A result the loop wrote for a call it did not run. */
export type SkippedToolResult = ToolResultMessage<{ skipped: true; reason: SkipReason }> & {
  isError: true;
  details: { skipped: true; reason: SkipReason };
};

/** Messages, calls and results the loop hands out are frozen, deeply (`Object.isFrozen`); model events are
 * the model's own objects, untouched. */
export type LoopEvent<A extends AssistantMessage = AssistantMessage, R extends string = never> =
  | { type: "model_event"; event: ModelEvent<A> }
  | { type: "assistant_message"; message: A }
  | { type: "tool_start"; call: ToolCall }
  | { type: "tool_progress"; callId: string; content: ToolContent }
  | { type: "tool_end"; result: ToolResultMessage }
  | { type: "tool_skipped"; result: SkippedToolResult }
  | { type: "queued_message"; message: QueuedMessage<R>; queue: "steering" | "followUp" }
  /** A failed response will be asked again (SPEC §12) after `delayMs`: the `attempt`-th retry of this
   * request (1 for the first), and why the response failed. */
  | { type: "retry"; attempt: number; delayMs: number; error: string }
  /** A compaction entry was appended (SPEC §13), before the request it shortens. */
  | { type: "compaction"; entry: CompactionEntry }
  | { type: "turn_end"; reason: RunReason; steps: number };

// ---- Loop control (SPEC §7) ----

/** What the steering and follow-up queues may give: user messages and messages of the run's custom roles. */
export type QueuedMessage<R extends string = never> = UserMessage | CustomMessage<R>;

/** What every hook gets beside its subject. */
export interface HookContext<A extends AssistantMessage = AssistantMessage, R extends string = never> {
  /** The call's own signal for tool hooks (it also aborts when the call times out); the run's for
   * `prepareRequest`. Always a signal: one that never aborts when the run has none. */
  signal: AbortSignal;
  /** For tool hooks, the number of the request whose response is being answered (1 for the first); for
   * `prepareRequest`, the number the request about to be made will have. */
  step: number;
  /** The transcript so far (frozen), custom-role messages and compaction entries included; a batch's results
   * are not in it yet.
   * A getter: the copy is made when a hook first reads it (so `{ ...ctx }` and `Object.keys(ctx)` leave it
   * out), and stays the transcript as it was at the hook's call however late it is read. */
  readonly messages: readonly (AgentMessage<A> | CustomMessage<R>)[];
}

/** `beforeToolCall`'s answer: block the call (a skipped result, reason `"blocked"`, its text `reason` or
 * `Tool call was blocked.`), or let it run (nothing, or `{ block: false }`). */
export type BeforeToolCallResult = { block: true; reason?: string } | { block: false } | void | undefined | null;

/** `afterToolCall`'s answer: nothing, or the fields of the result to replace (absent, `undefined` and `null`
 * ones are kept, as pi-agent-core's `??` keeps them), and whether the run ends after this batch (`terminate`). */
export type AfterToolCallResult = { content?: ToolContent; details?: unknown; isError?: boolean; terminate?: boolean } | void | undefined | null;

/** `prepareRequest`'s answer: nothing, or the fields of the request to replace. Replaced `messages` must
 * still pair every tool call with one result after it and hold no compaction entry and no unconverted
 * custom-role message, or the run ends with reason `"error"`. */
export type PrepareRequestResult<A extends AssistantMessage = AssistantMessage> = Partial<ModelRequest<A>> | void | undefined | null;

/** SPEC §7's options of `runAgentLoop`, each optional; a hook or queue may return a promise, which is awaited.
 * A hook that throws or returns anything else than its answer's shape counts as failed (the `TypeError`
 * names the field). */
export interface LoopControlOptions<A extends AssistantMessage = AssistantMessage, R extends string = never> {
  /** `"sequential"`: every batch runs one call at a time (as does a batch with a call to a tool registered
   * `executionMode: "sequential"`). Default `"parallel"`. */
  toolExecution?: ExecutionMode;
  /** Each call times out after this many milliseconds (a positive integer, at most 2^31 - 1) unless its
   * tool has its own `timeoutMs`: it is answered `Tool call timed out after N ms.` (`details.timedOut`),
   * and the signal it got aborts. */
  toolTimeoutMs?: number;
  /** Asked before each call runs, in call order (not for a call to an unknown tool or with arguments that
   * fail the schema). A throw blocks the call too (`beforeToolCall failed: <message>`). */
  beforeToolCall?: (call: ToolCall, ctx: HookContext<A, R>) => BeforeToolCallResult | Promise<BeforeToolCallResult>;
  /** Asked as each executed call ends, before its `tool_end`, with its result. A throw makes the result an
   * error result (`afterToolCall failed: <message>`). */
  afterToolCall?: (call: ToolCall, result: ToolResultMessage, ctx: HookContext<A, R>) => AfterToolCallResult | Promise<AfterToolCallResult>;
  /** Asked before every model request with the request the loop built; the transcript is never changed. A
   * throw ends the run with reason `"error"` before the request. */
  prepareRequest?: (request: ModelRequest<A>, ctx: HookContext<A, R>) => PrepareRequestResult<A> | Promise<PrepareRequestResult<A>>;
  /** Asked after a batch when the loop is about to make another request, and after a `stop` answer: what it
   * gives is appended (each announced by `queued_message`) and the loop goes on. */
  getSteeringMessages?: () => readonly QueuedMessage<R>[] | void | Promise<readonly QueuedMessage<R>[] | void>;
  /** Asked after a `stop` answer when steering gave nothing: what it gives is appended and the loop goes on;
   * nothing ends the run with `"stop"`. */
  getFollowUpMessages?: () => readonly QueuedMessage<R>[] | void | Promise<readonly QueuedMessage<R>[] | void>;
  /** The roles of your own messages (not `user`, `assistant` or `toolResult`): kept in the transcript,
   * ignored by the pairing rules, never sent unless `prepareRequest` puts them back. Write them inline or
   * `as const`: from a `string[]`, `R` is `string`, and a message no longer narrows by its `role`. */
  customRoles?: readonly R[];
}

export interface RunOptions<A extends AssistantMessage = AssistantMessage, R extends string = never> extends LoopControlOptions<A, R> {
  context: {
    systemPrompt?: string;
    /** Copied at the start; the caller's array and objects are never changed (nor frozen). */
    messages: readonly InputMessage<A, R>[];
    /** Not read: every request carries the definitions of `options.tools`, the registry that runs them.
     * Typed `undefined` so that tools left here (a pi-ai `Context`'s, say), which the model would never see,
     * do not compile. */
    tools?: undefined;
  };
  model: Model<A>;
  /** The tools the model is offered (`definitions()`) and, unless `executeToolCall` is given, runs them:
   * a `ToolRegistry` (which is a `ToolSource`), or any `ToolSource` (its `definitions()` is read once per
   * run). Typed as the one, so that a source written here inline is typed from it. */
  tools?: ToolSource;
  /** Runs every tool call instead of `tools` (which still says what the model is offered); may reject, which
   * answers the call with an error result. Delegate to the registry with `tools.execute(call, context)`. */
  executeToolCall?: ToolExecutor;
  signal?: AbortSignal;
  /** Caps model requests; default 32. */
  maxSteps?: number;
  /** A returned promise is awaited before the loop goes on; a throw or rejection never stops the run. */
  onEvent?: (event: LoopEvent<A, R>) => void | Promise<void>;
  /** Clock for the timestamps the loop writes; default `Date.now`. */
  now?: () => number;
}

/** What a run answers: `RunFields`, and what its `reason` decides (`error` with reason `error`, `pending`
 * with reason `paused`, and only then), so that testing the reason narrows them. */
export type RunResult<A extends AssistantMessage = AssistantMessage, R extends string = never> = RunFields<A, R> &
  (
    | { reason: "error"; error: string; pending?: never }
    | { reason: "paused"; error?: never; pending: readonly PendingCall[] }
    | { reason: Exclude<RunReason, "error" | "paused">; error?: never; pending?: never }
  );

/** The fields of every `RunResult`, whatever its reason. */
export interface RunFields<A extends AssistantMessage = AssistantMessage, R extends string = never> {
  reason: RunReason;
  /** Your array; the messages in it are frozen. */
  messages: (AgentMessage<A> | CustomMessage<R>)[];
  /** The number of model requests made. */
  steps: number;
  /** With reason `error` (and only then): what ended the run. */
  error?: string;
  /** The first error `onEvent` threw or rejected with. */
  observerError?: string;
}

/**
 * Runs the agent loop until the model stops, the output is truncated, an error or abort ends it, or the
 * step limit is reached. Rejects with a `TypeError` naming the field when an option is malformed.
 * `A` is the model's assistant message type, taken from `options.model`; `R` the custom roles, taken from
 * `options.customRoles` (the first signature: a run without custom roles has no custom messages).
 */
export function runAgentLoop<A extends AssistantMessage = AssistantMessage, R extends string = never>(
  options: RunOptions<A, R> & { customRoles: readonly R[] },
): Promise<RunResult<A, R>>;
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
  /** The call the record is about. An `assistant_message` record lists its calls' ids separated by `,`, with a
   * `,` or `\` inside an id written `\,` or `\\` (any other `\` stands for itself). */
  toolCallId?: string;
}
/** How a trace names each kind of problem (chapter 00's words for the first two). */
export type TraceProblemWording = "missing paired result" | "result before call" | "result without a call" | "more than one result for a call" | "repeated call id";
export interface TraceValidation {
  ok: boolean;
  /** `validateTranscript`'s problems for the transcript the trace stands for, each at its message's record. */
  problems: { kind: TranscriptProblemKind; toolCallId: string; seq: number; message: TraceProblemWording }[];
}

// ---- Approvals, pause and resume (SPEC §8) ----

/** Approve a call, or deny it: it is answered with a skipped result, reason `denied`, whose text is `reason`
 * (default `Tool call was denied.`). */
export type Approval = { approve: true } | { approve: false; reason?: string };

/** Decisions by tool call id (`options.approvals`, `agent.resume`); only calls that need approval read them. */
export type Approvals = { [toolCallId: string]: Approval };

/** A call of a paused run's last batch, in call order; `needsApproval` says which wait for a decision. */
export interface PendingCall {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly needsApproval: boolean;
}

export interface ToolSpec<TArgs = any, TDetails = unknown, TParameters extends ToolParameters = JSONSchema> {
  /** A call waits for a decision: `true`, or a function of the arguments (a throw, a rejection or a
   * non-boolean answer counts as `true`). Without one the run pauses (reason `paused`) before anything of
   * the batch runs. Asked whatever runs the calls, `executeToolCall` included. */
  needsApproval?: boolean | ((args: TArgs) => boolean | Promise<boolean>);
}

export interface RunOptions<A extends AssistantMessage = AssistantMessage, R extends string = never> {
  /** Decisions about calls that need approval. A transcript that ends with unanswered calls (a paused
   * run's) has that batch finished first, with these decisions. */
  approvals?: Approvals;
  /** The steps already made (a paused run's `steps`): `maxSteps` spans them, `steps` counts on. Default 0. */
  startSteps?: number;
}

export interface RunFields<A extends AssistantMessage = AssistantMessage, R extends string = never> {
  /** With reason `paused` (and only then): the calls of the last message, frozen. Run again from `messages`
   * with `approvals` (and `startSteps: steps`) to go on. */
  pending?: readonly PendingCall[];
}

// ---- Usage and budgets, retries, compaction (SPEC §11, §12, §13) ----

/** `result.usage`: pi-ai's `usage` summed over every final assistant message the model returned in the run
 * (appended, or dropped by a retry); `cost` is the sum of `usage.cost.total`. A missing field, or one that is
 * not a finite number, counts 0: all zeros when the model reports nothing. (pi-ai's own `Usage` has `cost` as
 * an object: this is a run's total.) */
export interface RunUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  cost: number;
}

/** `options.budget`: each a positive finite number. Once `usage.totalTokens >= maxTokens` or
 * `usage.cost >= maxCost`, the run ends with reason `"budget"` where it would otherwise ask the model again
 * (after a batch: aborted, terminated, budget, `maxSteps`, in that order); a `stop` answer still ends it with
 * `"stop"`, and a spent budget asks no queue and makes no retry (a failed response not retried ends the run with
 * `"error"`, as without a budget). */
export interface Budget {
  maxTokens?: number;
  maxCost?: number;
}

/** What `retry.shouldRetry` is shown (frozen): why the response failed (its `errorMessage`, or what the
 * stream threw), the final message when there was one (`stopReason: "error"`), and the number the retry would
 * have (1 for the first). */
export interface RetryFailure<A extends AssistantMessage = AssistantMessage> {
  readonly error: string;
  readonly message?: A;
  readonly attempt: number;
}

/** `options.retry`: a failed response (`stopReason: "error"`, or a stream that threw or ended without a final
 * message) is asked again, the same request, while fewer than `maxRetries` retries were made for it and
 * `shouldRetry` answers `true`. Its calls never run and nothing of it is appended; a `retry` event, then a wait
 * of `min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1))` ms on the host's timers (an abort ends the wait and
 * the run, `"aborted"`). A retried request is not counted again in `steps`. */
export interface RetryOptions<A extends AssistantMessage = AssistantMessage> {
  /** A non-negative integer; default 0 (no retry). */
  maxRetries?: number;
  /** Default 1000. */
  baseDelayMs?: number;
  /** Default 30000. */
  maxDelayMs?: number;
  /** Default: always. A throw, a rejection or an answer that is not a boolean means no retry. The run waits for
   * its answer, aborted or not: one that waits (on a person, say) stops when `context.signal` aborts. */
  shouldRetry?: (failure: RetryFailure<A>, context: { signal: AbortSignal }) => boolean | Promise<boolean>;
}

/** `options.compaction`: before each request (before `prepareRequest`) the loop sums `estimateTokens` over the
 * messages it would send; over `maxContextTokens`, it cuts at a user or assistant message (never between a call
 * and its result), has the messages before the cut summarised, appends a `CompactionEntry` (event `compaction`)
 * and sends the summary and the messages from the cut on. A `summarize` that throws or answers no string ends
 * the run with reason `"error"`, `compaction failed: <message>`, before the request. */
export interface CompactionOptions<A extends AssistantMessage = AssistantMessage> {
  /** A positive finite number. */
  maxContextTokens: number;
  /** What the messages kept after the cut may estimate at most; default `maxContextTokens / 2`. */
  keepRecentTokens?: number;
  /** The summary of `messages` (frozen): what the request would have carried before the cut, the previous
   * summary first (as a user message). `signal` is the run's. */
  summarize: (messages: readonly ModelMessage<A>[], context: { signal: AbortSignal }) => string | Promise<string>;
  /** A message's tokens, answered at once (not a promise); default `Math.ceil(JSON.stringify(message).length / 4)`. */
  estimateTokens?: (message: ModelMessage<A>) => number;
}

export interface RunOptions<A extends AssistantMessage = AssistantMessage, R extends string = never> {
  /** Ends the run (reason `"budget"`) once its usage reaches a limit. */
  budget?: Budget;
  /** Asks the model again after a failed response. */
  retry?: RetryOptions<A>;
  /** Shortens long requests with a summary. */
  compaction?: CompactionOptions<A>;
}

export interface RunFields<A extends AssistantMessage = AssistantMessage, R extends string = never> {
  /** What the model reported using in this run (zeros when nothing). */
  usage: RunUsage;
  /** How many retries the run made (0 when none). */
  retries: number;
}

// ---- Transcript checks and repair (SPEC §5, §8) ----

/** A message of any transcript the checks read: an app's custom-role messages included. */
export type TranscriptMessage = AgentMessage<any> | CustomMessage<string>;

export interface TranscriptOptions<R extends string = string> {
  /** Roles of the app's own messages (SPEC §7), read verbatim and left out of the pairing. */
  customRoles?: readonly R[];
}

export interface ValidateTranscriptOptions extends TranscriptOptions {
  /** The paused view: the last assistant message's unanswered calls are `pending`, not `missing_result`. */
  allowPending?: boolean;
}

export interface TranscriptValidation {
  /** With `allowPending` (then always present): the calls that wait, in call order. */
  pending?: { toolCallId: string; index: number }[];
}

/** Checks the call/result pairing of a transcript (`ok` when every call has exactly one result after it).
 * Throws a `TypeError` naming the field of a malformed message. */
export function validateTranscript(messages: readonly (AgentMessage<any> | CustomMessage<string>)[], options?: ValidateTranscriptOptions): TranscriptValidation;

/** A copy of `messages` in which each call without a result gets a skipped one, reason `interrupted`
 * (`repaired` counts them), stamped by `options.now` (default `Date.now`). */
export function repairTranscript<A extends AssistantMessage = AssistantMessage, R extends string = never>(
  messages: readonly (AgentMessage<A> | CustomMessage<R>)[],
  options?: TranscriptOptions<R> & { now?: () => number },
): { messages: (AgentMessage<A> | CustomMessage<R>)[]; repaired: number };

// ---- Sessions (SPEC §9) ----

/** One `JSON.stringify`'d message per line, each ended by `\n`, after checking the messages as a run would. */
export function toJSONL(messages: readonly (AgentMessage<any> | CustomMessage<string>)[], options?: TranscriptOptions): string;

/** The messages of JSON Lines text, each as `JSON.parse` makes it (exact). Blank lines are skipped; a bad
 * line is a `TypeError` naming its number and the field. */
export function parseJSONL<A extends AssistantMessage = AssistantMessage, R extends string = never>(
  text: string,
  options?: TranscriptOptions<R>,
): (AgentMessage<A> | CustomMessage<R>)[];

// ---- The Agent (SPEC §9) ----

/** What may be prompted or queued: a user message, or one of a role in `customRoles`. */
export type AgentInput<R extends string = never> = QueuedMessage<R>;

/** `runAgentLoop`'s options but those the agent gives each run itself. `budget` is per run (each run's usage
 * starts at zero); `retry` and `compaction` apply to every run, and compaction entries stay in the
 * conversation. */
export interface AgentOptions<A extends AssistantMessage = AssistantMessage, R extends string = never>
  extends Omit<RunOptions<A, R>, "context" | "signal" | "onEvent" | "approvals" | "startSteps" | "getSteeringMessages" | "getFollowUpMessages"> {
  systemPrompt?: string;
  /** The conversation to start from (copied); paused when its last message has unanswered calls. */
  messages?: readonly InputMessage<A, R>[];
  /** For a conversation that starts paused: the steps its paused run had made (that run's `result.steps`,
   * saved beside the JSONL, which holds messages only), so that `resume` counts on from them and `maxSteps`
   * spans the whole run. Default 0; an agent that starts idle ignores it (each `prompt` is a run of its own,
   * counted from 0). */
  startSteps?: number;
}

/** A conversation over `runAgentLoop`: the same rules, its transcript kept between runs. */
export declare class Agent<A extends AssistantMessage = AssistantMessage, R extends string = never> {
  /** Throws a `TypeError` naming a malformed option, or an unanswered call not in the last message. */
  constructor(options: AgentOptions<A, R>);
  /** An agent over `toJSONL`'s text; paused when its last message has unanswered calls. */
  static fromJSONL<A extends AssistantMessage = AssistantMessage, R extends string = never>(text: string, options: AgentOptions<A, R>): Agent<A, R>;
  /** The conversation, frozen: during a run, with its input and what it has appended yet. */
  readonly messages: readonly (AgentMessage<A> | CustomMessage<R>)[];
  readonly isRunning: boolean;
  /** When paused: the calls of the last message. */
  readonly pending: readonly PendingCall[] | undefined;
  /** Appends the input (a string is a user message, stamped as the run stamps its own: `now`, else `Date.now()`)
   * and runs. Rejects with an `Error` while running or paused. `prompt([])` appends nothing and asks the model
   * again from the conversation as it is: how a conversation whose run ended in an error is retried. */
  prompt(input: string | AgentInput<R> | AgentInput<R>[]): Promise<RunResult<A, R>>;
  /** Goes on from a pause with these decisions; steps count on. A call still undecided pauses again. */
  resume(approvals: Approvals): Promise<RunResult<A, R>>;
  /** For the run's `getSteeringMessages` (taken after a tool batch); idle: the next run's. A string is a user
   * message. */
  steer(message: string | AgentInput<R>): void;
  /** For the run's `getFollowUpMessages` (taken when the model would stop); idle: the next run's. */
  followUp(message: string | AgentInput<R>): void;
  /** Running: aborts the run. Paused: answers the pending calls, reason `interrupted`. Idle: nothing. */
  abort(): void;
  waitForIdle(): Promise<void>;
  /** Every event of every run, awaited as `onEvent`'s; answers the function that unsubscribes. */
  subscribe(listener: (event: LoopEvent<A, R>) => void | Promise<void>): () => void;
  /** Forgets the conversation, the queues and the pause. Throws while running. */
  reset(): void;
  toJSONL(): string;
  /** Frees the agent's memory in the wasm instance now (a later call is a `TypeError` saying so); otherwise it is
   * freed when the object is garbage-collected. */
  free(): void;
  [Symbol.dispose](): void;
}
