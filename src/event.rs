//! What a run reports while it runs (SPEC §4, `LoopEvent`) and how it ends.

use serde::{Deserialize, Serialize};

use crate::approval::PendingCall;
use crate::message::{
    tagged, AgentMessage, AssistantMessage, MediaBlock, ToolCall, ToolResultMessage,
};

/// One observable step of a run. Borrowed, so emitting an event copies nothing; `E` is the model's own
/// event type, forwarded untouched (the wasm bridge hands JS the very objects the model yielded).
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
    },
    ToolSkipped {
        #[serde(serialize_with = "tagged::tool_result")]
        result: &'a ToolResultMessage,
    },
    /// A message a queue gave (SPEC §7), after it was appended.
    QueuedMessage {
        message: &'a AgentMessage,
        queue: Queue,
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
            LoopEvent::TurnEnd { .. } => "turn_end",
        }
    }
}

/// Why a run ended (`turn_end.reason`, `result.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
        }
    }
}

/// Why a tool call was answered without running (`details.reason` of a skipped result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    Length,
    Error,
    Aborted,
    UnexpectedStop,
    DuplicateCallId,
    /// `beforeToolCall` blocked the call, or threw (SPEC §7).
    Blocked,
    /// The call was denied approval (SPEC §8).
    Denied,
    /// `repair_transcript` answered a call the run never finished (SPEC §8).
    Interrupted,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Length => "length",
            SkipReason::Error => "error",
            SkipReason::Aborted => "aborted",
            SkipReason::UnexpectedStop => "unexpected-stop",
            SkipReason::DuplicateCallId => "duplicate-call-id",
            SkipReason::Blocked => "blocked",
            SkipReason::Denied => "denied",
            SkipReason::Interrupted => "interrupted",
        }
    }

    /// The one sentence a skipped result carries (`Blocked`, `Denied`: when no reason was given).
    pub fn explanation(self) -> &'static str {
        match self {
            SkipReason::Length => "Tool call was not executed because the model response was truncated.",
            SkipReason::Error => "Tool call was not executed because the model response ended with an error.",
            SkipReason::Aborted => "Tool call was not executed because the run was aborted.",
            SkipReason::UnexpectedStop => {
                "Tool call was not executed because the model stopped instead of requesting tool use."
            }
            SkipReason::DuplicateCallId => {
                "Tool call was not executed because its id was used by more than one call in the same message."
            }
            SkipReason::Blocked => "Tool call was blocked.",
            SkipReason::Denied => "Tool call was denied.",
            SkipReason::Interrupted => {
                "Tool call was not executed because the run was interrupted."
            }
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
}
