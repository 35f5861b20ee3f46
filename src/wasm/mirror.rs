//! The JS side of one run's transcript. Each message crosses the boundary once: the model's final message
//! is kept as the object the model produced, a tool result as the object made for its `tool_end`, and
//! every later request and the run's result reuse those objects.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Array;
use wasm_bindgen::JsValue;

use super::convert::{get_key, key, to_js};
use super::glue::{call_block_js, tool_result};
use crate::message::{AgentMessage, AssistantBlock, AssistantMessage, ToolCall};

pub struct Mirror {
    /// JS forms of `messages[..sent.length]`, in transcript order.
    sent: Array,
    /// The model's own object for the final message it just gave, until it joins `sent`.
    assistant: Option<JsValue>,
    /// Results already made into JS objects (for `tool_end` / `tool_skipped`), by call id.
    results: Vec<(String, JsValue)>,
    /// Where each tool call of the assistant message sits in its `content`, by call id.
    calls: Vec<(String, u32)>,
}

pub type SharedMirror = Rc<RefCell<Mirror>>;

impl Default for Mirror {
    fn default() -> Self {
        Mirror {
            sent: Array::new(),
            assistant: None,
            results: Vec::new(),
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
        self.calls.clear();
        for (index, block) in message.content.iter().enumerate() {
            if let AssistantBlock::ToolCall(call) = block {
                self.calls.push((call.id.clone(), index as u32));
            }
        }
        self.assistant
            .get_or_insert_with(|| to_js(&message.tagged()))
            .clone()
    }

    /// The JS object for a call of the assistant message just reported: its own block when that still is
    /// the call (a model's object could change under us), else a new one.
    pub fn call(&self, call: &ToolCall) -> JsValue {
        let block = self
            .assistant
            .as_ref()
            .zip(self.calls.iter().find(|(id, _)| *id == call.id))
            .map(|(message, (_, index))| call_block_js(message, *index, &call.id))
            .filter(|block| !block.is_undefined());
        block.unwrap_or_else(|| to_js(&call.tagged()))
    }

    pub fn keep_result(&mut self, id: &str, result: &JsValue) {
        self.results.push((id.to_owned(), result.clone()));
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
                AgentMessage::ToolResult(r) => match self
                    .results
                    .iter()
                    .position(|(id, _)| *id == r.tool_call_id)
                {
                    Some(i) => self.results.swap_remove(i).1,
                    None => tool_result(r),
                },
                AgentMessage::User(_) | AgentMessage::Custom(_) => to_js(message),
            };
            self.sent.push(&js);
        }
        self.results.clear();
        self.sent.slice(0, self.sent.length())
    }
}
