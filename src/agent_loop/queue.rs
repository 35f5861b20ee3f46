//! The steering and follow-up queues (SPEC §7): what they give is appended in order, each message announced
//! by `queued_message`, and the loop makes its next request. They are asked only where `after_batch` and
//! `after_stop` say.

use super::{End, Run};
use crate::control::MessageQueue;
use crate::event::{LoopEvent, Queue};
use crate::message::{AgentMessage, SPEC_ROLES};
use crate::model::Model;

impl<'a, M: Model> Run<'a, M> {
    /// The run's `queue`, if it has one.
    pub(super) fn queue(&self, queue: Queue) -> Option<&'a dyn MessageQueue> {
        match queue {
            Queue::Steering => self.control.steering,
            Queue::FollowUp => self.control.follow_up,
        }
    }

    /// Asks `queue` (the run's `source`) and appends what it gives; how many messages that was. A queue
    /// that throws, or gives a message no queue may hold (only user and custom-role messages may be
    /// queued), ends the run with `error`, and nothing it gave is appended.
    pub(super) async fn take_queued(
        &mut self,
        queue: Queue,
        source: &dyn MessageQueue,
    ) -> Result<usize, End> {
        let messages = source
            .take_messages()
            .await
            .map_err(|message| End::Error(format!("{} failed: {message}", queue.option())))?;
        let custom_roles = &self.control.custom_roles;
        let refused = (messages.iter().enumerate()).find(|(_, m)| !may_queue(m, custom_roles));
        if let Some((index, message)) = refused {
            return Err(End::Error(format!(
                "{} returned a message with role \"{}\" (message {} of {}): only user messages and \
                 messages of a role in customRoles may be queued",
                queue.option(),
                message.role(),
                index + 1,
                messages.len()
            )));
        }
        self.has_custom |= messages
            .iter()
            .any(|m| matches!(m, AgentMessage::Custom(_)));
        let start = self.messages.borrow().len();
        self.messages.borrow_mut().extend(messages);
        let transcript = self.messages.clone();
        let appended = transcript.borrow();
        for (index, message) in appended.iter().enumerate().skip(start) {
            let event = LoopEvent::QueuedMessage {
                message,
                queue,
                index,
            };
            self.emitter.emit(event).await;
        }
        Ok(appended.len() - start)
    }
}

/// Whether `message` may be queued (or prompted to an `Agent`): a user message, or one of a custom role the
/// run lists that is none of SPEC's own. Anything else would break the pairing or be a role no one reads.
pub(crate) fn may_queue(message: &AgentMessage, custom_roles: &[String]) -> bool {
    match message {
        AgentMessage::User(_) => true,
        AgentMessage::Custom(custom) => {
            custom_roles.contains(&custom.role) && !SPEC_ROLES.contains(&custom.role.as_str())
        }
        AgentMessage::Assistant(_) | AgentMessage::ToolResult(_) | AgentMessage::Compaction(_) => {
            false
        }
    }
}
