//! What a run reports while it runs (SPEC §4, `LoopEvent`) and how it ends.

use serde::{Deserialize, Serialize};

use crate::approval::PendingCall;
pub use crate::message::SkipReason;
use crate::message::{
    tagged, AgentMessage, AssistantMessage, CompactionEntry, MediaBlock, ToolCall,
    ToolResultMessage,
};
use crate::usage::Usage;

/// One observable step of a run. Borrowed, so emitting an event copies nothing; `E` is the model's own
/// event type, forwarded untouched (the wasm bridge hands JS the very objects the model yielded).
///
/// Every message the run appends is announced by exactly one event, which says where it goes in the
/// transcript (`index`, never serialized): `assistant_message`, `queued_message` and `compaction` once it is
/// appended,
/// `tool_end` and `tool_skipped` for the place the result takes when its batch is appended. A host that
/// keeps its own form of each message (the wasm bridge's frozen JS objects) keeps it by that index.
#[derive(Debug, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum LoopEvent<'a, E> {
    ModelEvent {
        event: &'a E,
    },
    AssistantMessage {
        #[serde(serialize_with = "tagged::assistant")]
        message: &'a AssistantMessage,
        #[serde(skip)]
        index: usize,
    },
    ToolStart {
        #[serde(serialize_with = "tagged::tool_call")]
        call: &'a ToolCall,
    },
    ToolProgress {
        call_id: &'a str,
        content: &'a [MediaBlock],
    },
    ToolEnd {
        #[serde(serialize_with = "tagged::tool_result")]
        result: &'a ToolResultMessage,
        #[serde(skip)]
        index: usize,
    },
    ToolSkipped {
        #[serde(serialize_with = "tagged::tool_result")]
        result: &'a ToolResultMessage,
        #[serde(skip)]
        index: usize,
    },
    /// A message a queue gave (SPEC §7), after it was appended.
    QueuedMessage {
        message: &'a AgentMessage,
        queue: Queue,
        #[serde(skip)]
        index: usize,
    },
    /// A failed response will be retried (SPEC §12), after a wait of `delay_ms`: the `attempt`-th retry of
    /// this request (1 for the first), and why the response failed.
    Retry {
        attempt: u32,
        delay_ms: f64,
        error: &'a str,
    },
    /// A compaction entry (SPEC §13), after it was appended.
    Compaction {
        #[serde(serialize_with = "tagged::compaction")]
        entry: &'a CompactionEntry,
        #[serde(skip)]
        index: usize,
    },
    TurnEnd {
        reason: RunReason,
        steps: u32,
    },
}

// By hand: a derive would ask `E: Copy`, and an event only borrows its `E`.
impl<E> Clone for LoopEvent<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for LoopEvent<'_, E> {}

impl<E> LoopEvent<'_, E> {
    /// The event's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            LoopEvent::ModelEvent { .. } => "model_event",
            LoopEvent::AssistantMessage { .. } => "assistant_message",
            LoopEvent::ToolStart { .. } => "tool_start",
            LoopEvent::ToolProgress { .. } => "tool_progress",
            LoopEvent::ToolEnd { .. } => "tool_end",
            LoopEvent::ToolSkipped { .. } => "tool_skipped",
            LoopEvent::QueuedMessage { .. } => "queued_message",
            LoopEvent::Retry { .. } => "retry",
            LoopEvent::Compaction { .. } => "compaction",
            LoopEvent::TurnEnd { .. } => "turn_end",
        }
    }
}

/// Why a run ended (`turn_end.reason`, `result.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum RunReason {
    Stop,
    Length,
    Error,
    Aborted,
    MaxSteps,
    /// A call of the last batch asked to terminate (SPEC §7).
    Terminated,
    /// A call of the last batch waits for a decision (SPEC §8): `RunResult::pending` lists the batch.
    Paused,
    /// The run's usage reached its budget (SPEC §11).
    Budget,
}

impl RunReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RunReason::Stop => "stop",
            RunReason::Length => "length",
            RunReason::Error => "error",
            RunReason::Aborted => "aborted",
            RunReason::MaxSteps => "maxSteps",
            RunReason::Terminated => "terminated",
            RunReason::Paused => "paused",
            RunReason::Budget => "budget",
        }
    }
}

/// Which queue a queued message came from (`queued_message.queue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Queue {
    /// `getSteeringMessages`.
    Steering,
    /// `getFollowUpMessages`.
    FollowUp,
}

impl Queue {
    /// The name `queued_message.queue` carries.
    pub fn as_str(self) -> &'static str {
        match self {
            Queue::Steering => "steering",
            Queue::FollowUp => "followUp",
        }
    }

    /// The option that asks this queue, as errors name it.
    pub fn option(self) -> &'static str {
        match self {
            Queue::Steering => "getSteeringMessages",
            Queue::FollowUp => "getFollowUpMessages",
        }
    }
}

/// What `run_agent_loop` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub reason: RunReason,
    pub messages: Vec<crate::message::AgentMessage>,
    pub steps: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The first error an observer threw; the run went on regardless.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observer_error: Option<String>,
    /// For a `paused` run (SPEC §8): every call of the last message, in call order; `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<Vec<PendingCall>>,
    /// SPEC §11: tokens and cost summed over every final message the model returned in this run (appended,
    /// or dropped by a retry). Always present; zeros when nothing was reported.
    pub usage: Usage,
    /// SPEC §12: the retries this run made (each announced by a `retry` event).
    pub retries: u32,
}
