//! The JS objects of a transcript: each message, call and result the loop hands to JS is made once, from
//! the core's own data (deeply frozen, SPEC §10), and handed out again wherever the same message appears
//! (events, requests, hook contexts, the result). They are kept by the message's index in the transcript,
//! which the core's events and requests name (`LoopEvent`'s `index`, `ModelRequest::sources`); a message
//! the bridge has not been shown yet is made when first asked for.
//!
//! One `Objects` serves one transcript as it grows: a run's, or an `Agent`'s conversation across its runs
//! (which clears it when its transcript changes other than by growing).

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Array;
use wasm_bindgen::{JsCast, JsValue};

use super::convert::frozen_js;
use super::glue::{define_at_js, prefix_js};
use crate::message::{
    AgentMessage, AssistantBlock, AssistantMessage, CompactionEntry, ToolCall, ToolResultMessage,
};

#[derive(Default)]
pub struct Objects {
    /// The object of each message by its index, once made (a hole until then).
    made: Array,
    /// Which indices of `made` hold an object.
    filled: Vec<bool>,
    /// The calls of the assistant message whose calls are being answered, each with its object (the block
    /// of that message's object), for the events, hooks and tools that show or get a call.
    calls: Vec<(ToolCall, JsValue)>,
    /// A frozen array of the first `.1` objects, shared until the transcript grows (hook contexts).
    view: Option<(Array, usize)>,
    /// Results shown to `afterToolCall`, each with its object: `tool_end` hands out the same object when
    /// the hook left the result as it was.
    shown: Vec<(ToolResultMessage, JsValue)>,
}

pub type SharedObjects = Rc<RefCell<Objects>>;

impl Objects {
    /// The object for `message`, at `index` of the transcript: made now unless it was.
    pub fn message(&mut self, index: usize, message: &AgentMessage) -> JsValue {
        self.made_or(index, |_| frozen_js(message))
    }

    /// The object at `index` if one is made; else the one `make` makes now, kept there.
    fn made_or(&mut self, index: usize, make: impl FnOnce(&mut Self) -> JsValue) -> JsValue {
        if self.filled.get(index) == Some(&true) {
            return self.made.get(index as u32);
        }
        let made = make(self);
        if index >= self.filled.len() {
            self.filled.resize(index + 1, false);
        }
        self.filled[index] = true;
        define_at_js(&self.made, index as u32, &made);
        made
    }

    /// The object for the assistant message at `index` whose calls are answered next (the model's latest
    /// response, or the last message of a transcript a run resumes): its calls' objects are its blocks.
    pub fn answering(&mut self, index: usize, message: &AssistantMessage) -> JsValue {
        let made = self.made_or(index, |_| frozen_js(&message.tagged()));
        self.calls.clear();
        self.shown.clear();
        let content = js_sys::Reflect::get(&made, &JsValue::from_str("content"))
            .map(JsCast::unchecked_into::<Array>)
            .unwrap_or_default();
        for (at, block) in message.content.iter().enumerate() {
            if let AssistantBlock::ToolCall(call) = block {
                self.calls.push((call.clone(), content.get(at as u32)));
            }
        }
        made
    }

    /// The object of a call of the message being answered (the block of its message's object); a frozen
    /// copy of `call` for a call no such object holds as it is (compared whole: an object always holds
    /// exactly the call's data).
    pub fn call(&self, call: &ToolCall) -> JsValue {
        match self.calls.iter().find(|(known, _)| known == call) {
            Some((_, object)) => object.clone(),
            None => frozen_js(&call.tagged()),
        }
    }

    /// The object for a result at `index` of the transcript (where the batch will append it): the one
    /// `afterToolCall` was shown if it holds exactly this result.
    pub fn result(&mut self, index: usize, result: &ToolResultMessage) -> JsValue {
        self.made_or(index, |objects| {
            match objects.shown.iter().position(|(shown, _)| shown == result) {
                Some(at) => objects.shown.swap_remove(at).1,
                None => frozen_js(&result.tagged()),
            }
        })
    }

    /// The object for a compaction entry at `index` of the transcript.
    pub fn compaction(&mut self, index: usize, entry: &CompactionEntry) -> JsValue {
        self.message(index, &AgentMessage::Compaction(entry.clone()))
    }

    /// The object for a result shown to `afterToolCall`, kept for its `tool_end`.
    pub fn shown_result(&mut self, result: &ToolResultMessage) -> JsValue {
        let made = frozen_js(&result.tagged());
        self.shown.push((result.clone(), made.clone()));
        made
    }

    /// Makes the object of a transcript's last assistant message the one whose calls are answered next (a
    /// run that resumes a batch: SPEC §8; results of it may follow it already).
    pub fn resuming(&mut self, messages: &[AgentMessage]) {
        let last = messages
            .iter()
            .enumerate()
            .rev()
            .find_map(|(index, m)| match m {
                AgentMessage::Assistant(message) => Some((index, message)),
                _ => None,
            });
        if let Some((index, message)) = last {
            self.answering(index, message);
        }
    }

    /// The objects of `messages` (the transcript, or the first part of it), in a new array, made if not yet.
    pub fn array(&mut self, messages: &[AgentMessage]) -> Array {
        for (index, message) in messages.iter().enumerate() {
            if self.filled.get(index) != Some(&true) {
                self.message(index, message);
            }
        }
        prefix_js(&self.made, messages.len() as u32)
    }

    /// The objects of `messages` (a prefix of the transcript) as a frozen array, shared by every look until
    /// the transcript grows.
    pub fn view(&mut self, messages: &[AgentMessage]) -> Array {
        if let Some((view, length)) = &self.view {
            if *length == messages.len() {
                return view.clone();
            }
        }
        let view = self.array(messages);
        js_sys::Object::freeze(&view);
        self.view = Some((view.clone(), messages.len()));
        view
    }

    /// Forgets every object: the transcript changed other than by growing.
    pub fn clear(&mut self) {
        *self = Objects::default();
    }
}
