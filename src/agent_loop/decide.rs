//! The decision table of SPEC §4: what the loop does with one model response.

use super::End;
use crate::event::SkipReason;
use crate::message::{AssistantMessage, StopReason, ToolCall};

/// The run's error for a response that ended with an error and said nothing of it.
pub(super) const MODEL_ERROR: &str = "the model response ended with an error";

/// One row of the decision table.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Decision {
    /// Answer every call as a batch (SPEC §7's three phases), append the results in call order, then go on.
    Execute,
    /// Answer every call with a skipped result (none when there are no calls), then end.
    Skip(SkipReason, End),
    /// The model is done: the run ends with `stop` unless a queue has messages (SPEC §7).
    Done,
    /// Nothing to answer: end.
    Finish(End),
}

/// The decision table, one model response at a time.
pub(super) fn decide(message: &AssistantMessage, calls: &[&ToolCall]) -> Decision {
    use Decision::{Done, Execute, Finish, Skip};
    match (message.stop_reason, calls.is_empty()) {
        (StopReason::Stop, true) => Done,
        (StopReason::Stop, false) => Skip(
            SkipReason::UnexpectedStop,
            End::Error(format!(
                "the model stopped with {} tool call(s) it did not ask to run",
                calls.len()
            )),
        ),
        (StopReason::ToolUse, true) => Finish(End::Error(
            "the model asked for tool use but sent no tool calls".into(),
        )),
        (StopReason::ToolUse, false) => match repeated_id(calls) {
            Some(id) => Skip(
                SkipReason::DuplicateCallId,
                End::Error(format!(
                    "the model used tool call id \"{id}\" more than once in one message"
                )),
            ),
            None => Execute,
        },
        (StopReason::Length, _) => Skip(SkipReason::Length, End::Length),
        (StopReason::Error, _) => Skip(
            SkipReason::Error,
            End::Error(
                message
                    .error_message
                    .clone()
                    .unwrap_or_else(|| MODEL_ERROR.into()),
            ),
        ),
        (StopReason::Aborted, _) => Skip(SkipReason::Aborted, End::Aborted),
    }
}

/// The first id used by an earlier call of the message too. A scan, not a set: a message has a handful of
/// calls, and a set would allocate on every turn.
fn repeated_id<'a>(calls: &[&'a ToolCall]) -> Option<&'a str> {
    (calls.iter().enumerate())
        .find(|(i, call)| calls[..*i].iter().any(|earlier| earlier.id == call.id))
        .map(|(_, call)| call.id.as_str())
}
