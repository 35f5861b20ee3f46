//! The executor boundary the loop calls for each tool call (the registry by default, or a caller's
//! `executeToolCall`): what it gets with a call, what it answers, and how a call is to be run.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{Extra, MediaBlock, ToolCall, ToolResultMessage};
use crate::signal::AbortSignal;

/// What a hook or a queue answers: a value, or (`Err`) the message of a hook that threw.
pub type HookFuture<'a, T> = LocalBoxFuture<'a, Result<T, String>>;

/// How the calls of a batch run: all at once, or one at a time in call order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ExecutionMode {
    /// Every call of the batch at once; `tool_end` in completion order.
    #[default]
    Parallel,
    /// One call at a time, in call order.
    Sequential,
}

/// How one call is to be run, as its executor knows it (the registry: from the tool's registration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallSettings {
    /// `Sequential` makes the whole batch sequential.
    pub execution_mode: ExecutionMode,
    /// The call's own timeout; `None` leaves it to the run's `tool_timeout_ms`.
    pub timeout_ms: Option<u32>,
}

/// Called with the content a running tool reports; the loop turns it into `tool_progress`.
pub type ProgressSink = Rc<dyn Fn(Vec<MediaBlock>)>;
/// The clock for timestamps the loop and the executor write.
pub type Clock = Rc<dyn Fn() -> f64>;

/// A value a host attaches to a call for its tool (the wasm bridge: the call's frozen JS object), which the
/// core passes along and never reads.
pub type HostValue = Rc<dyn std::any::Any>;

/// What every executor gets with a call.
#[derive(Clone)]
pub struct ExecutionContext {
    pub signal: AbortSignal,
    pub progress: ProgressSink,
    pub clock: Clock,
    /// The host's value for this call, handed on to the tool (`ToolCallContext::host`); the loop gives
    /// none, a host's executor may set it before it hands the call on.
    pub host: Option<HostValue>,
}

/// What an executor answers for one call. Lenient on purpose: a caller's executor may leave out the
/// pairing fields, which the loop stamps from the call it executed (pairing is the loop's job).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolReply {
    pub content: Vec<MediaBlock>,
    pub details: Option<Value>,
    pub is_error: bool,
    pub timestamp: Option<f64>,
    pub extra: Extra,
    /// Asks the run to end after this batch (SPEC §7); not part of the result.
    pub terminate: bool,
}

impl ToolReply {
    /// The transcript message answering `call`; `now` stamps it if the reply is not stamped.
    pub fn into_result(mut self, call: &ToolCall, now: impl FnOnce() -> f64) -> ToolResultMessage {
        // Fields a full ToolResultMessage carries are written from the call, not copied.
        for key in ["role", "toolCallId", "toolName"] {
            self.extra.shift_remove(key);
        }
        ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: self.content,
            details: self.details,
            is_error: self.is_error,
            timestamp: self.timestamp.unwrap_or_else(now),
            extra: self.extra,
        }
    }
}

impl From<ToolResultMessage> for ToolReply {
    fn from(r: ToolResultMessage) -> Self {
        ToolReply {
            content: r.content,
            details: r.details,
            is_error: r.is_error,
            timestamp: Some(r.timestamp),
            extra: r.extra,
            terminate: false,
        }
    }
}

/// Runs one tool call. `Err` is an executor that rejected; the loop answers the call with an error result.
pub trait ToolExecutor {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>>;

    /// How `call` is to be run. The default (a caller's own executor): in parallel, with the run's timeout.
    fn settings(&self, call: &ToolCall) -> CallSettings {
        let _ = call;
        CallSettings::default()
    }

    /// Whether `execute` would answer `call` with an error at once, running nothing (an unknown tool,
    /// arguments that fail the schema): no hook sees such a call (SPEC §7). Asked only when a tool hook is
    /// set. The default: every call is the hooks' to see.
    fn refuses(&self, call: &ToolCall) -> bool {
        let _ = call;
        false
    }

    /// Whether `call` waits for a decision before it runs (SPEC §8): `None` when it needs none without
    /// asking (the default: a caller's own executor runs every call), else the answer, which may come
    /// later. An `Err` (a `needsApproval` that threw) counts as `true`.
    fn needs_approval<'a>(&'a self, call: &'a ToolCall) -> Option<HookFuture<'a, bool>> {
        let _ = call;
        None
    }
}
