//! tiny-pi: an agent loop. The model streams, the loop runs the tools it asks for, appends each result
//! paired to its call, and asks again until a row of the decision table ends the run.
//!
//! The core (everything but `wasm`) is plain Rust on `futures`; the `wasm` module is the thin bridge that
//! JavaScript calls.
//!
//! Where to start: [`run_agent_loop`] (one run, SPEC §4), [`LoopControl`] (hooks, queues, timeouts: §7),
//! [`approval`] (pause and resume: §8, with an example), [`Agent`] (a conversation: §9), [`to_jsonl`] /
//! [`parse_jsonl`] (sessions), [`validate_transcript`] and [`repair_transcript`].
//!
//! What a long-running app needs (SPEC part three), each an option of [`LoopControl`] and of
//! [`AgentOptions`]: [`usage`] (`RunResult::usage`, summed from pi-ai's `usage` on every final message, and
//! a [`Budget`] that ends a run with reason `budget`: §11), [`retry`] (a [`RetryPolicy`] that retries a
//! failed response after a wait on the host's [`Timers`], announced by `LoopEvent::Retry`: §12) and
//! [`compaction`] ([`CompactionOptions`]: over a token limit, the loop appends a [`CompactionEntry`], a
//! built-in role, and later requests carry its summary and the messages from its cut on, announced by
//! `LoopEvent::Compaction`: §13). Where each rule runs in the loop: [`agent_loop`].
//!
//! Two things a host provides. Its executor: the futures are `!Send` (`Rc`, `LocalBoxFuture`), so they run
//! on one thread (`futures::executor::LocalPool`, or tokio's `LocalSet`). Its time: tool timeouts and retry
//! waits go through the [`Timers`] in [`LoopControl::timers`], and the default [`NoTimers`] never fires a
//! timeout and waits for no retry. A runtime's timer is one line: [`Sleep::new`]`(tokio::time::sleep(d))`.
//!
//! A check that refuses a value (a tool's registration, a message read from JSON, `LoopControl::check`)
//! answers [`Invalid`], whose text names the field by SPEC's JSON names, as the JS API throws it (an
//! `Agent`'s checks answer [`AgentError::Input`] with that text).

pub mod agent;
pub mod agent_loop;
pub mod approval;
pub mod compaction;
pub mod control;
pub mod estimate;
pub mod event;
mod invalid;
mod js_number;
pub mod message;
pub mod model;
pub mod reading;
pub mod retry;
pub mod schema;
pub mod session;
pub mod shape;
pub mod signal;
pub mod tools;
pub mod trace;
pub mod transcript;
pub mod usage;

#[cfg(all(target_arch = "wasm32", feature = "js"))]
pub mod wasm;

pub use agent::{
    read_input, Agent, AgentAction, AgentEffect, AgentError, AgentOptions, AgentState, ListenerId,
    WeakAgent,
};
pub use agent_loop::{
    run_agent_loop, AgentContext, InputError, LoopOptions, NoObserver, Observed, Observer,
    DEFAULT_MAX_STEPS,
};
pub use approval::{Approval, ApprovalCheck, Approvals, NeedsApproval, PendingCall};
pub use compaction::{CompactionOptions, EstimateTokens, Summarize};
pub use control::{
    AfterToolCall, BeforeToolCall, Block, HookContext, LoopControl, MessageQueue, NoTimers,
    PrepareRequest, RequestPatch, ResultPatch, Sleep, Timers, LONGEST_TIMER_MS,
};
pub use event::{LoopEvent, Queue, RunReason, RunResult};
pub use invalid::Invalid;
pub use message::*;
pub use model::{
    EventGrammar, Model, ModelEvent, ModelRequest, ModelStream, Partial, RecordedRequest,
    ScriptedModel, Sources, StreamEvent,
};
pub use retry::{Failure, RetryPolicy, ShouldRetry};
pub use session::{jsonl_lines, parse_jsonl, parse_jsonl_with_roles, to_jsonl, JsonlError};
pub use signal::{AbortController, AbortSignal, Registration, SignalSource};
pub use tools::{
    check_definitions, CallSettings, Clock, ExecutionContext, ExecutionMode, HookFuture, HostValue,
    ProgressSink, RegistryApprovals, Tool, ToolCallContext, ToolDefinition, ToolExecutor,
    ToolHandler, ToolOutput, ToolRegistry, ToolReply,
};
pub use trace::{
    format_trace, prologue_trace, validate_trace, Owner, TraceKind, TraceRecord, TraceValidation,
};
pub use transcript::{
    open_calls, repair_transcript, validate_transcript, validate_transcript_with, Problem,
    ProblemKind, Repaired, Unanswered, ValidateOptions, Validation,
};
pub use usage::{Budget, Usage};
