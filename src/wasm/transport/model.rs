//! A JS model: `stream(request, {signal})` returning any async iterable (a pi-ai `EventStream` included),
//! with or without `result()`. The stream is opened in one `glue.js` call (`openStream`, which answers an
//! `Opened` number worded here), its events pulled by `waiter.rs`'s pump, and its final message read here.
//! Events stay JS values: they reach `onEvent` as the objects the model yielded.
//!
//! The final message is the one value of a turn the loop must read (its stop reason and tool calls decide
//! what happens next). The usual one is adopted (frozen in place, SPEC §10) and only its SPEC §1 fields
//! cross, as strings and numbers with no JSON text of the message (`read_parts`; its JS half `adoptParts`);
//! the provider fields the loop never looks at (usage, costs, names) stay in the model's own object, which the
//! run's observers, hooks, later requests and result hold (`mirror.rs`), so nothing is lost. Any other
//! message crosses whole as JSON, like every value (`convert::from_js`), read lean when it can be and else
//! by the full reader, which names the bad field.

use js_sys::{Array, Function};
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::convert::{
    error_message, from_json_text, get, get_key, json_text, key, rust_string, to_js, type_of,
};
use super::glue::{
    adopt_parts_js, call_result_js, open_stream_js, take_kept_js, take_part_numbers_js,
    take_parts_text_js,
};
use super::mirror::SharedMirror;
use super::protocol::{BlockPart, Opened};
use super::signal::js_signal;
use super::waiter::{settle_call, Pull, Step};
use crate::message::{AssistantBlock, AssistantMessage, Extra, StopReason, ToolCall};
use crate::model::{Model, ModelRequest, ModelStream, StreamEvent};
use crate::reading::from_json;
use crate::signal::AbortSignal;

pub struct JsModel {
    model: JsValue,
    stream: Function,
    tools: JsValue,
    mirror: SharedMirror,
}

impl JsModel {
    /// `model` with its `stream` method (read once, by the API layer's check), the run's tool definitions
    /// as JS, and the run's mirror.
    pub fn new(model: JsValue, stream: Function, tools: JsValue, mirror: SharedMirror) -> Self {
        JsModel {
            model,
            stream,
            tools,
            mirror,
        }
    }
}

impl Model for JsModel {
    type Stream = JsStream;

    fn stream(&self, request: ModelRequest<'_>, signal: &AbortSignal) -> Result<JsStream, String> {
        let signal = js_signal(signal).map_or(JsValue::UNDEFINED, |s| JsValue::from(s.clone()));
        // Each request gets its own arrays; the message objects in them crossed once and are shared.
        let (system_prompt, messages, tools) = {
            let mut mirror = self.mirror.borrow_mut();
            let system_prompt = mirror.system_prompt(request.system_prompt);
            let messages = mirror.request_messages(request.messages);
            // The run's definitions, each request its own array of them, unless prepareRequest replaced them.
            let tools = match mirror.take_patched_tools() {
                true => to_js(request.tools),
                false => Array::from(&self.tools).into(),
            };
            (system_prompt, messages, tools)
        };
        let step = open_stream_js(
            &self.model,
            &self.stream,
            &system_prompt,
            &messages,
            &tools,
            &signal,
        );
        let kept = take_kept_js();
        let has_result = match Opened::from_u32(step).map_err(|e| e.to_string())? {
            Opened::Stream => false,
            Opened::StreamWithResult => true,
            Opened::StreamThrew => {
                return Err(format!("model.stream() threw: {}", error_message(&kept)))
            }
            Opened::NotIterable => {
                return Err(format!(
                    "model.stream() must return an async iterable (got {})",
                    type_of(&kept)
                ))
            }
            Opened::Promise => {
                return Err(
                    "model.stream() must return an async iterable, not a promise of one \
                            (is it an async function?)"
                        .into(),
                )
            }
            Opened::IteratorThrew => {
                return Err(format!(
                    "model stream iterator threw: {}",
                    error_message(&kept)
                ))
            }
            Opened::NextUnreadable => {
                return Err(format!("model stream iterator: {}", error_message(&kept)))
            }
            Opened::NoNext => return Err("model stream iterator has no next() method".into()),
            Opened::ResultUnreadable => {
                return Err(format!("model stream: {}", error_message(&kept)))
            }
        };
        Ok(JsStream {
            pull: Pull::new(kept),
            has_result,
            mirror: self.mirror.clone(),
        })
    }
}

pub struct JsStream {
    pull: Pull,
    has_result: bool,
    mirror: SharedMirror,
}

impl ModelStream for JsStream {
    type Event = JsEvent;

    async fn next(&mut self) -> Option<Result<JsEvent, String>> {
        match self.pull.next().await {
            Step::Value(event) => Some(Ok(JsEvent(event, self.mirror.clone()))),
            Step::Done => None,
            Step::Threw(e) => Some(Err(format!("model stream threw: {}", error_message(&e)))),
            Step::NotResult(other) => Some(Err(format!(
                "model stream next() gave {} instead of an iterator result",
                type_of(&other)
            ))),
            Step::Unknown(unknown) => Some(Err(unknown.to_string())),
        }
    }

    fn has_result(&self) -> bool {
        self.has_result
    }

    async fn result(&mut self) -> Result<AssistantMessage, String> {
        if !self.has_result {
            return Err("model stream has no result()".into());
        }
        let opened = self.pull.opened();
        let message = settle_call(|waiter, id| call_result_js(opened, waiter, id))
            .await
            .map_err(|e| format!("model stream result() failed: {}", error_message(&e)))?;
        read_final(&message, &"model stream result()", &self.mirror)
    }
}

/// A model event exactly as JS produced it.
pub struct JsEvent(pub JsValue, SharedMirror);

impl StreamEvent for JsEvent {
    fn final_message(&self) -> Option<Result<AssistantMessage, String>> {
        // Compared in JS: every event is asked, and its type need not be copied into wasm.
        let kind = get_key(&self.0, "type").ok()?;
        let (kind, field) = [("done", "message"), ("error", "error")]
            .into_iter()
            .find(|(name, _)| kind == *key(name))?;
        let message = match get(&self.0, field, "model event") {
            Ok(message) => message,
            Err(e) => return Some(Err(e)),
        };
        Some(read_final(
            &message,
            &format_args!("model event {kind}.{field}"),
            &self.1,
        ))
    }
}

/// The usual final message, adopted and taken apart by `glue.js` (`adoptParts`) with no JSON text of it:
/// its strings cross joined in one text, cut here by their lengths; each block is made as its `BlockPart`
/// says, a call's arguments parsed from their JSON as the lean reader parses them. `None` when it is not of
/// that shape, or the arguments are not JSON the core reads (the whole message's JSON then decides).
fn read_parts(message: &JsValue) -> Option<AssistantMessage> {
    let blocks = adopt_parts_js(message).checked_sub(1)? as usize;
    let numbers = take_part_numbers_js();
    let text = rust_string(&take_parts_text_js())?;
    let (head, rest) = numbers.split_at_checked(2)?;
    let (kinds, lengths) = rest.split_at_checked(blocks)?;
    let mut strings = Cut::new(&text, lengths);
    let stop_reason = StopReason::parse(strings.next()?)?;
    let error_message = match head[1] != 0.0 {
        true => Some(strings.next()?.to_owned()),
        false => None,
    };
    let mut content = Vec::with_capacity(blocks);
    for &kind in kinds {
        let part = BlockPart::from_u32(kind as u32).ok()?;
        let first = strings.next()?.to_owned();
        content.push(match part {
            BlockPart::Text => AssistantBlock::text(first),
            BlockPart::Thinking => AssistantBlock::thinking(first),
            BlockPart::Call => AssistantBlock::ToolCall(ToolCall {
                id: first,
                name: strings.next()?.to_owned(),
                arguments: from_json::<Value>(strings.next()?).ok()?,
                extra: Extra::new(),
            }),
        });
    }
    Some(AssistantMessage {
        content,
        stop_reason,
        error_message,
        timestamp: head[0],
        extra: Extra::new(),
    })
}

/// The strings of a joined text, one after another, each as long as the next of `lengths` says in UTF-16
/// units (JS's lengths). Each string is well formed (`adoptParts` checked), so no cut splits a character.
struct Cut<'a> {
    text: &'a str,
    lengths: std::slice::Iter<'a, f64>,
    /// Every character is one byte and one unit: a length in units is a length in bytes.
    ascii: bool,
}

impl<'a> Cut<'a> {
    fn new(text: &'a str, lengths: &'a [f64]) -> Self {
        Cut {
            text,
            lengths: lengths.iter(),
            ascii: text.is_ascii(),
        }
    }

    fn next(&mut self) -> Option<&'a str> {
        let units = *self.lengths.next()? as usize;
        let bytes = match self.ascii {
            true => units,
            false => {
                let (mut counted, mut bytes) = (0, 0);
                for c in self.text.chars() {
                    if counted == units {
                        break;
                    }
                    counted += c.len_utf16();
                    bytes += c.len_utf8();
                }
                bytes
            }
        };
        let (part, rest) = self.text.split_at_checked(bytes)?;
        self.text = rest;
        Some(part)
    }
}

/// A model's final message, read and kept as the one whose calls are answered next; `what` names it in
/// errors. The usual one is adopted as its parts cross (`read_parts`); anything else crosses whole, and the
/// full reader names what is wrong with it.
fn read_final(
    message: &JsValue,
    what: &dyn std::fmt::Display,
    mirror: &SharedMirror,
) -> Result<AssistantMessage, String> {
    if let Some(parsed) = read_parts(message) {
        mirror.borrow_mut().keep_adopted(message, &parsed);
        return Ok(parsed);
    }
    let text = json_text(message, what)?;
    let parsed = AssistantMessage::from_json_lean(&text)
        .map_or_else(|| from_json_text(&text, what, "assistant"), Ok)?;
    mirror.borrow_mut().keep_assistant(message, &parsed);
    Ok(parsed)
}
