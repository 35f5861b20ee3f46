//! The JS objects of one run's transcript. Each message crosses the boundary once: the model's final message
//! is kept as the object the model produced, a tool result as the object made for its `tool_end`, and
//! every later request and the run's result reuse those objects. Every message, call or result object the
//! bridge hands to JS is made or found here.

use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

use js_sys::Array;
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::convert::{get_key, key, name_js, to_js};
use super::glue::{call_block_js, tool_result_js};
use crate::message::{
    AgentMessage, AssistantBlock, AssistantMessage, MediaBlock, ToolCall, ToolResultMessage,
};

pub struct Mirror {
    /// JS forms of `messages[..sent.length]`, in transcript order.
    sent: Array,
    /// The model's own object for the final message it just gave, until it joins `sent`.
    assistant: Option<JsValue>,
    /// The call ids of the assistant message just reported, one after another (`CallSlot::id` says where;
    /// the buffer is reused from turn to turn).
    ids: String,
    /// The tool calls of that message, in order.
    calls: Vec<CallSlot>,
}

/// One tool call of the assistant message just reported.
struct CallSlot {
    /// Its id: `Mirror::ids[id]`.
    id: Range<usize>,
    /// Where it sits in the message's `content`.
    index: u32,
    /// The result object made for its `tool_end` / `tool_skipped`, until the result joins `sent`.
    result: Option<JsValue>,
}

pub type SharedMirror = Rc<RefCell<Mirror>>;

impl Default for Mirror {
    fn default() -> Self {
        Mirror {
            sent: Array::new(),
            assistant: None,
            ids: String::new(),
            calls: Vec::new(),
        }
    }
}

impl Mirror {
    /// Keeps the model's object for its final message if it is a well-formed one (it says it is an
    /// assistant message), so it can stand for the parsed message.
    pub fn keep_assistant(&mut self, message: &JsValue) {
        let is_assistant = get_key(message, "role").is_ok_and(|r| r == *key("assistant"));
        self.assistant = is_assistant.then(|| message.clone());
    }

    /// The JS object for the assistant message being reported, made if the model's own is not kept.
    pub fn assistant(&mut self, message: &AssistantMessage) -> JsValue {
        self.ids.clear();
        self.calls.clear();
        for (index, block) in message.content.iter().enumerate() {
            if let AssistantBlock::ToolCall(call) = block {
                let start = self.ids.len();
                self.ids.push_str(&call.id);
                self.calls.push(CallSlot {
                    id: start..self.ids.len(),
                    index: index as u32,
                    result: None,
                });
            }
        }
        self.assistant
            .get_or_insert_with(|| to_js(&message.tagged()))
            .clone()
    }

    /// The slot of the first call with this id.
    fn slot(&mut self, id: &str) -> Option<&mut CallSlot> {
        let ids = &self.ids;
        self.calls
            .iter_mut()
            .find(|slot| ids[slot.id.clone()] == *id)
    }

    /// The JS object for a call of the assistant message just reported: its own block when that still is
    /// the call (a model's object could change under us), else a new one.
    pub fn call(&mut self, call: &ToolCall) -> JsValue {
        let index = self.slot(&call.id).map(|slot| slot.index);
        let block = self
            .assistant
            .as_ref()
            .zip(index)
            .map(|(message, index)| call_block_js(message, index, &call.id))
            .filter(|block| !block.is_undefined());
        block.unwrap_or_else(|| to_js(&call.tagged()))
    }

    /// Keeps the object made for a call's result, for the transcript to reuse.
    pub fn keep_result(&mut self, id: &str, result: &JsValue) {
        if let Some(slot) = self.slot(id) {
            slot.result = Some(result.clone());
        }
    }

    /// The JS form of `messages`, converting only what has not crossed yet.
    /// Each caller gets its own copy of the array (one `slice`, no per-message crossing).
    pub fn sync(&mut self, messages: &[AgentMessage]) -> Array {
        let known = (self.sent.length() as usize).min(messages.len());
        self.sent.set_length(known as u32);
        for message in &messages[known..] {
            let js = match message {
                AgentMessage::Assistant(m) => {
                    self.assistant.take().unwrap_or_else(|| to_js(&m.tagged()))
                }
                AgentMessage::ToolResult(r) => {
                    let kept = self
                        .slot(&r.tool_call_id)
                        .and_then(|slot| slot.result.take());
                    kept.unwrap_or_else(|| tool_result(r))
                }
                AgentMessage::User(_) | AgentMessage::Custom(_) => to_js(message),
            };
            self.sent.push(&js);
        }
        for slot in &mut self.calls {
            slot.result = None;
        }
        self.sent.slice(0, self.sent.length())
    }
}

/// A tool result as a JS object: the same object `to_js(&result.tagged())` would make, built in one call
/// for the usual shape (no extra fields) instead of serialized and parsed again.
pub fn tool_result(result: &ToolResultMessage) -> JsValue {
    if !result.extra.is_empty() {
        return to_js(&result.tagged());
    }
    let (text, content) = match result.content.as_slice() {
        [MediaBlock::Text(text)] if text.extra.is_empty() => {
            (Some(&*text.text), JsValue::UNDEFINED)
        }
        content => (None, to_js(content)),
    };
    let (details, empty_details) = match &result.details {
        None => (JsValue::UNDEFINED, false),
        Some(Value::Object(map)) if map.is_empty() => (JsValue::UNDEFINED, true),
        Some(details) => (to_js(details), false),
    };
    tool_result_js(
        &result.tool_call_id,
        &name_js(&result.tool_name),
        text,
        &content,
        &details,
        empty_details,
        result.is_error,
        result.timestamp,
    )
}
