//! One model request (SPEC §2, §7, §13): the messages it carries, `prepareRequest` and what it may return,
//! and the streamed response.

use std::borrow::Cow;

use super::{Emitter, End};
use crate::compaction::{self, Picked};
use crate::control::{HookContext, PrepareRequest, RequestPatch};
use crate::event::LoopEvent;
use crate::message::{AgentMessage, AssistantMessage};
use crate::model::{Model, ModelRequest, ModelStream, StreamEvent};
use crate::signal::AbortSignal;
use crate::transcript::validate_transcript;

/// The messages a request carries: the transcript without its custom-role messages and, after a compaction
/// entry (`last_entry`), the entry's summary and the messages from its cut on (SPEC §13); and where each
/// comes from in the transcript. Borrowed when there are neither, so a run without custom roles or
/// compactions copies nothing.
pub(super) fn request_messages(
    messages: &[AgentMessage],
    has_custom: bool,
    last_entry: Option<usize>,
) -> (Cow<'_, [AgentMessage]>, Picked) {
    compaction::view(messages, has_custom, last_entry)
}

/// Shows the request the loop built to `prepareRequest`. Its patch, if it has one whose `messages` still
/// pair every call with one result after it; else (or if it threw) the error that ends the run.
pub(super) async fn prepare_request(
    hook: &dyn PrepareRequest,
    request: ModelRequest<'_>,
    context: HookContext<'_>,
) -> Result<Option<RequestPatch>, End> {
    let patch = hook
        .prepare_request(request, context)
        .await
        .map_err(|message| End::Error(format!("prepareRequest failed: {message}")))?;
    let messages = patch.as_ref().and_then(|p| p.messages.as_deref());
    if let Some(problem) = messages.and_then(never_sent) {
        return Err(End::Error(problem));
    }
    if let Some(problem) = messages.and_then(|m| validate_transcript(m).problems.into_iter().next())
    {
        return Err(End::Error(format!(
            "prepareRequest returned messages that break the pairing: {} for tool call \"{}\" at messages[{}]",
            problem.kind.as_str(),
            problem.tool_call_id,
            problem.index
        )));
    }
    Ok(patch)
}

/// The first message of a patched request that a model is never sent (SPEC §7, §13): a compaction entry,
/// or a custom-role message `prepareRequest` put back without converting it to a user message.
fn never_sent(messages: &[AgentMessage]) -> Option<String> {
    let (index, message) = messages
        .iter()
        .enumerate()
        .find(|(_, m)| matches!(m, AgentMessage::Compaction(_) | AgentMessage::Custom(_)))?;
    let what = match message {
        AgentMessage::Compaction(_) => "a compaction entry, which is never sent (its summary is)",
        _ => "a custom-role message, which is sent only once converted (to a user message, say)",
    };
    Some(format!(
        "prepareRequest returned messages[{index}] with role \"{}\": {what}",
        message.role()
    ))
}

/// Streams one response: every event goes to the observer, then the final message is taken from
/// `result()` or, without one, from the terminal event. A stream that throws or ends without a final
/// message is an error and appends nothing.
pub(super) async fn stream_response<M: Model>(
    model: &M,
    request: ModelRequest<'_>,
    signal: &AbortSignal,
    emitter: &mut Emitter<'_, <M::Stream as ModelStream>::Event>,
) -> Result<AssistantMessage, String> {
    let mut stream = model.stream(request, signal)?;
    let from_result = stream.has_result();
    let mut terminal = None;
    while let Some(event) = stream.next().await {
        let event = event?;
        if !from_result {
            terminal = event.final_message().or(terminal);
        }
        emitter.emit(LoopEvent::ModelEvent { event: &event }).await;
    }
    if from_result {
        stream.result().await
    } else {
        terminal.unwrap_or_else(|| Err("the model stream ended without a final message".into()))
    }
}
