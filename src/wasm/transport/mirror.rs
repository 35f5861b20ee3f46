//! The JS objects of one run's transcript. Each message crosses the boundary once: the model's final message
//! is kept as the object the model produced, a tool result as the object made for its `afterToolCall` or
//! `tool_end`, a queued message as the object made for its `queued_message`, and every later request,
//! hook context and the run's result reuse those objects. Every message, call or result object the bridge
//! hands to JS is made or found here, and is deeply frozen where it is made or adopted (SPEC §10): what the
//! caller passed in is copied, never frozen; what a model returns becomes the loop's own.
//!
//! A run's future is polled inside its mirror's scope (`InMirror`, as tracing's `Instrument` polls inside a
//! span): a JS tool the registry calls during that poll finds its call's object there (`running_call`), and
//! reads its id and arguments from it instead of their text crossing out of wasm again.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use js_sys::Array;
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use super::convert::{json_of, name_js};
use super::glue::{
    adopt_message_js, call_block_js, frozen_copy_js, parse_frozen_js, tool_result_js,
    transcript_view_js,
};
use crate::message::{
    AgentMessage, AssistantBlock, AssistantMessage, MediaBlock, ToolCall, ToolResultMessage,
};

pub struct Mirror {
    /// JS forms of `messages[..sent.length]`, in transcript order.
    sent: Array,
    /// `sent.length`, kept here: asking JS for it was a crossing per look.
    sent_len: u32,
    /// Where `sent` holds custom-role messages (SPEC §7), which requests leave out.
    custom: Vec<u32>,
    /// A frozen copy of `sent`, handed out (requests, hook contexts) until `sent` changes.
    view: Option<Array>,
    /// What hook contexts read their `messages` from until `sent` changes (`glue.js` `transcriptView`):
    /// the copy is made the first time a hook reads it, or is `view` if that was made first.
    lazy: Option<JsValue>,
    /// The JS object of the model's latest final message, until it joins `sent`.
    assistant: Option<JsValue>,
    /// The same object, kept for its calls' objects while they are answered.
    answering: JsValue,
    /// The call ids of that message, one after another (`CallSlot::id` says where; the buffer is reused
    /// from turn to turn).
    ids: String,
    /// The tool calls of that message, in order.
    calls: Vec<CallSlot>,
    /// The objects made for `queued_message` events, in order, until they join `sent`.
    queued: VecDeque<JsValue>,
    /// What `prepareRequest` replaced in the request about to be made.
    patched: Patched,
    /// The last system prompt that crossed, and its JS string: a run sends the same one with every request.
    system_prompt: Option<(String, JsValue)>,
}

/// One tool call of the model's latest final message.
struct CallSlot {
    /// Its id: `Mirror::ids[id]`.
    id: Range<usize>,
    /// Where it sits in the message's `content`.
    index: u32,
    /// Its object (the block of that message's object), once asked for: `tool_start` and the hooks share it.
    call: Option<JsValue>,
    /// The result object made for it (for `afterToolCall`, `tool_end` or `tool_skipped`), until the result
    /// joins `sent`.
    result: Option<JsValue>,
}

/// The parts of the next request that `prepareRequest` replaced: they are not the transcript's, so they
/// cross fresh.
#[derive(Default, Clone, Copy)]
pub struct Patched {
    pub messages: bool,
    pub tools: bool,
}

pub type SharedMirror = Rc<RefCell<Mirror>>;

impl Default for Mirror {
    fn default() -> Self {
        Mirror {
            sent: Array::new(),
            sent_len: 0,
            custom: Vec::new(),
            view: None,
            lazy: None,
            assistant: None,
            answering: JsValue::UNDEFINED,
            ids: String::new(),
            calls: Vec::new(),
            queued: VecDeque::new(),
            patched: Patched::default(),
            system_prompt: None,
        }
    }
}

impl Mirror {
    /// Takes the model's final message (`model_object`, read as `message`): the model's own object, frozen
    /// in place, if it is a well-formed one that can be frozen; else a frozen copy of what was read. Its
    /// calls are the ones answered next.
    pub fn keep_assistant(&mut self, model_object: &JsValue, message: &AssistantMessage) {
        match adopt_message_js(model_object) {
            true => self.keep_adopted(model_object, message),
            false => self.keep_adopted(&frozen_js(&message.tagged()), message),
        }
    }

    /// Takes the model's final message (`js`, read as `message`) when it is the loop's own already (frozen).
    pub fn keep_adopted(&mut self, js: &JsValue, message: &AssistantMessage) {
        self.answer_calls_of(js, message);
        self.assistant = Some(js.clone());
    }

    /// Makes the calls of `message` (its JS object `js`) the ones answered next.
    fn answer_calls_of(&mut self, js: &JsValue, message: &AssistantMessage) {
        self.ids.clear();
        self.calls.clear();
        for (index, block) in message.content.iter().enumerate() {
            if let AssistantBlock::ToolCall(call) = block {
                let start = self.ids.len();
                self.ids.push_str(&call.id);
                self.calls.push(CallSlot {
                    id: start..self.ids.len(),
                    index: index as u32,
                    call: None,
                    result: None,
                });
            }
        }
        self.answering = js.clone();
    }

    /// The JS object of the assistant message being reported (kept when it was read).
    pub fn assistant(&mut self, message: &AssistantMessage) -> JsValue {
        if self.answering.is_undefined() {
            self.keep_assistant(&JsValue::UNDEFINED, message);
        }
        self.answering.clone()
    }

    /// The slot of the first call with this id.
    fn slot(&mut self, id: &str) -> Option<&mut CallSlot> {
        find_slot(&mut self.calls, &self.ids, id)
    }

    /// The JS object for a call of the message being answered: its block in that message's object, or a
    /// frozen copy of the call (a call the mirror did not see come from the model: a resumed batch's).
    pub fn call(&mut self, call: &ToolCall) -> JsValue {
        self.call_object(&call.id, Some(call))
            .unwrap_or_else(|| frozen_js(&call.tagged()))
    }

    /// The object of the call `id` of the message being answered, found once and kept in its slot: its
    /// block in that message's object, else a frozen copy of `made` (none given: `None`); `None` for any
    /// other id.
    fn call_object(&mut self, id: &str, made: Option<&ToolCall>) -> Option<JsValue> {
        let answering = &self.answering;
        let slot = find_slot(&mut self.calls, &self.ids, id)?;
        if slot.call.is_none() {
            let block = call_block_js(answering, slot.index, id);
            slot.call = match block.is_undefined() {
                false => Some(block),
                true => Some(frozen_js(&made?.tagged())),
            };
        }
        slot.call.clone()
    }

    /// The JS object for a call's result: the one already made for it (by `afterToolCall`, when it left the
    /// result as it was), else a new one, kept for the transcript to reuse.
    pub fn result(&mut self, result: &ToolResultMessage) -> JsValue {
        match self.slot(&result.tool_call_id) {
            // Its id read from the call's object, when that was made: it need not cross again.
            Some(slot) => (slot.result)
                .get_or_insert_with(|| made_result(result, slot.call.as_ref(), true))
                .clone(),
            None => tool_result(result, true),
        }
    }

    /// Drops the result object kept for a call (`afterToolCall` changed the result: `tool_end` makes a new
    /// one).
    pub fn forget_result(&mut self, id: &str) {
        if let Some(slot) = self.slot(id) {
            slot.result = None;
        }
    }

    /// The JS object for a message a queue gave, kept for the transcript to reuse.
    pub fn queued(&mut self, message: &AgentMessage) -> JsValue {
        let js = frozen_js(message);
        self.queued.push_back(js.clone());
        js
    }

    /// A request's system prompt as JS (undefined for none), crossing again only when it changed.
    pub fn system_prompt(&mut self, prompt: Option<&str>) -> JsValue {
        let Some(prompt) = prompt else {
            return JsValue::UNDEFINED;
        };
        match &self.system_prompt {
            Some((text, js)) if text == prompt => js.clone(),
            _ => {
                let js = JsValue::from_str(prompt);
                self.system_prompt = Some((prompt.to_owned(), js.clone()));
                js
            }
        }
    }

    /// Notes what `prepareRequest` replaced in the request about to be made.
    pub fn patch_request(&mut self, patched: Patched) {
        self.patched = patched;
    }

    /// Whether `prepareRequest` replaced the tools of the request about to be made (asked once).
    pub fn take_patched_tools(&mut self) -> bool {
        std::mem::take(&mut self.patched.tools)
    }

    /// The JS form of `messages` (the transcript), its own array, for the caller to keep (a run's result).
    pub fn sync(&mut self, messages: &[AgentMessage]) -> Array {
        self.catch_up(messages);
        self.sent.slice(0, self.sent_len)
    }

    /// The JS form of `messages` (the transcript), as a frozen array shared until the transcript grows:
    /// what every hook of a batch sees as `context.messages`.
    pub fn view(&mut self, messages: &[AgentMessage]) -> Array {
        self.catch_up(messages);
        self.view
            .get_or_insert_with(|| frozen_copy_js(&self.sent))
            .clone()
    }

    /// The transcript as hook contexts see it (`context.messages`): a frozen copy of `messages`, made when a
    /// hook first reads it and shared by every hook until the transcript grows (a batch's hooks see one).
    pub fn hook_view(&mut self, messages: &[AgentMessage]) -> JsValue {
        self.catch_up(messages);
        let (sent, sent_len, view) = (&self.sent, self.sent_len, &self.view);
        (self.lazy)
            .get_or_insert_with(|| {
                let none = JsValue::UNDEFINED;
                let made = view.as_ref().map_or(&none, |v| v.as_ref());
                transcript_view_js(sent, sent_len, made)
            })
            .clone()
    }

    /// A request's messages as JS, frozen: fresh when `prepareRequest` replaced them; else the transcript
    /// without its custom-role messages (SPEC §7), from the objects that crossed. (With custom roles, the
    /// bridge brought the transcript up to date right before the request: `hooks::JsPrepareRequest`.)
    pub fn request_messages(&mut self, messages: &[AgentMessage]) -> Array {
        if std::mem::take(&mut self.patched.messages) {
            return frozen_js(messages).unchecked_into();
        }
        if self.custom.is_empty() {
            return self.view(messages);
        }
        let without = Array::new();
        for (index, js) in self.sent.iter().enumerate() {
            if !self.custom.contains(&(index as u32)) {
                without.push(&js);
            }
        }
        match without.length() as usize == messages.len() {
            true => frozen_copy_js(&without),
            false => frozen_js(messages).unchecked_into(),
        }
    }

    /// Converts the messages that have not crossed yet (each at most once; a transcript only grows).
    pub fn catch_up(&mut self, messages: &[AgentMessage]) {
        let known = (self.sent_len as usize).min(messages.len());
        if known == messages.len() && known == self.sent_len as usize {
            return;
        }

        self.view = None;
        self.lazy = None;
        self.sent.set_length(known as u32);
        self.sent_len = known as u32;
        self.custom.retain(|&index| (index as usize) < known);
        for message in &messages[known..] {
            let js = match message {
                AgentMessage::Assistant(m) => self
                    .assistant
                    .take()
                    .unwrap_or_else(|| frozen_js(&m.tagged())),
                AgentMessage::ToolResult(r) => {
                    let kept = (self.slot(&r.tool_call_id)).and_then(|slot| slot.result.take());
                    kept.unwrap_or_else(|| tool_result(r, true))
                }
                // Past the input, a user or custom-role message is a queued one.
                AgentMessage::User(_) | AgentMessage::Custom(_) => {
                    (self.queued.pop_front()).unwrap_or_else(|| frozen_js(message))
                }
            };
            if let AgentMessage::Custom(_) = message {
                self.custom.push(self.sent_len);
            }
            self.sent.push(&js);
            self.sent_len += 1;
        }
        for slot in &mut self.calls {
            slot.result = None;
        }
    }

    /// Takes the run's input, before anything else: any user or custom-role message past it is a queued one.
    /// When it ends with an assistant message, that message's calls may still wait for results (a paused
    /// run's, SPEC §8): their objects are its blocks.
    pub fn start(&mut self, input: &[AgentMessage]) {
        self.catch_up(input);
        if let Some(AgentMessage::Assistant(last)) = input.last() {
            let js = self.sent.get(self.sent_len - 1);
            self.answer_calls_of(&js, last);
        }
    }
}

thread_local! {
    /// The mirror of the run being polled, if a run is (`InMirror`).
    static POLLING: RefCell<Option<SharedMirror>> = const { RefCell::new(None) };
}

/// A run's future, polled inside its mirror. Each poll restores the scope it found, so a run started from
/// inside another run's tool has its own.
pub struct InMirror<F> {
    mirror: SharedMirror,
    future: Pin<Box<F>>,
}

impl<F: Future> InMirror<F> {
    pub fn new(mirror: SharedMirror, future: F) -> Self {
        InMirror {
            mirror,
            future: Box::pin(future),
        }
    }
}

impl<F: Future> Future for InMirror<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _scope = Scope::enter(Some(this.mirror.clone()));
        this.future.as_mut().poll(cx)
    }
}

/// Outside any run's mirror until dropped: a task that is not a run (`ToolRegistry.execute`), started from
/// inside a run's tool, whose calls are not the run's.
pub struct OutsideRuns {
    _scope: Scope,
}

impl OutsideRuns {
    pub fn enter() -> Self {
        OutsideRuns {
            _scope: Scope::enter(None),
        }
    }
}

/// `POLLING` set until dropped, then what it was. (No borrow of `POLLING` outlives these calls, so setting it
/// cannot fail; `try_*` all the same: a panic here would trap the instance.)
struct Scope(Option<SharedMirror>);

impl Scope {
    fn enter(mirror: Option<SharedMirror>) -> Scope {
        Scope(swap_polling(mirror))
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        swap_polling(self.0.take());
    }
}

/// Sets `POLLING`, answering what it was. (`try_with`: `with` would link a panic for a thread-local read after
/// its thread ended.)
fn swap_polling(mirror: Option<SharedMirror>) -> Option<SharedMirror> {
    let swap = |polling: &RefCell<Option<SharedMirror>>| {
        let mut polling = polling.try_borrow_mut().ok()?;
        std::mem::replace(&mut *polling, mirror)
    };
    POLLING.try_with(swap).ok().flatten()
}

/// The JS object of the call `id` of the run being polled (the one its `tool_start` showed), when a run is
/// being polled and is answering that call; `None` otherwise (the call's id and arguments then cross as text).
pub fn running_call(id: &str) -> Option<JsValue> {
    // The mirror taken out first: finding the call reads the message (JS, perhaps a getter that starts a
    // run of its own, which sets `POLLING`).
    let mirror = POLLING
        .try_with(|polling| polling.try_borrow().ok()?.clone())
        .ok()??;
    let mut mirror = mirror.try_borrow_mut().ok()?;
    mirror.call_object(id, None)
}

/// The slot of the first call with this id (`ids` holds the calls' ids, `CallSlot::id` says where).
fn find_slot<'s>(calls: &'s mut [CallSlot], ids: &str, id: &str) -> Option<&'s mut CallSlot> {
    calls.iter_mut().find(|slot| ids[slot.id.clone()] == *id)
}

/// `value` as a deeply frozen JS value (one JSON text parsed in JS).
pub fn frozen_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    parse_frozen_js(&json_of(value))
}

/// A tool result as a JS object, deeply frozen when `frozen` (one a run hands out): the same object
/// `to_js(&result.tagged())` would make, built in one call for the usual shape (no extra fields) instead of
/// serialized and parsed again.
pub fn tool_result(result: &ToolResultMessage, frozen: bool) -> JsValue {
    made_result(result, None, frozen)
}

/// `tool_result`, its `toolCallId` read from `call` (the JS object of the call it answers) when given.
fn made_result(result: &ToolResultMessage, call: Option<&JsValue>, frozen: bool) -> JsValue {
    if !result.extra.is_empty() {
        return match frozen {
            true => frozen_js(&result.tagged()),
            false => super::convert::to_js(&result.tagged()),
        };
    }
    let (text, content) = match result.content.as_slice() {
        [MediaBlock::Text(text)] if text.extra.is_empty() => {
            (Some(&*text.text), JsValue::UNDEFINED)
        }
        content => (None, super::convert::to_js(content)),
    };
    let (details, empty_details) = match &result.details {
        None => (JsValue::UNDEFINED, false),
        Some(Value::Object(map)) if map.is_empty() => (JsValue::UNDEFINED, true),
        Some(details) => (super::convert::to_js(details), false),
    };
    let (id, call) = match call {
        Some(call) => (None, call),
        None => (Some(&*result.tool_call_id), &JsValue::UNDEFINED),
    };
    tool_result_js(
        id,
        call,
        &name_js(&result.tool_name),
        text,
        &content,
        &details,
        empty_details,
        result.is_error,
        result.timestamp,
        frozen,
    )
}
