//! A JS model: `stream(request, {signal})` returning any async iterable (a pi-ai `EventStream` included),
//! with or without `result()`. Events stay JS values: they reach `onEvent` as the objects the model yielded.

use js_sys::{Array, Function};
use wasm_bindgen::{JsCast, JsValue};

use super::convert::{error_message, get, get_key, is_object, key, type_of};
use super::glue::{call_result_js, open_stream_js, take_kept_js};
use super::mirror::SharedMirror;
use super::promise::{settle_with, Pull, Step};
use super::read;
use super::signal::js_signal;
use crate::message::AssistantMessage;
use crate::model::{Model, ModelRequest, ModelStream, StreamEvent};
use crate::signal::AbortSignal;

pub struct JsModel {
    model: JsValue,
    stream: Function,
    tools: JsValue,
    mirror: SharedMirror,
}

impl JsModel {
    pub fn new(model: JsValue, tools: JsValue, mirror: SharedMirror) -> Result<Self, String> {
        if !is_object(&model) {
            return Err(format!(
                "options.model must be an object with a stream() method (got {})",
                type_of(&model)
            ));
        }
        let stream = get(&model, "stream", "options.model.stream")?
            .dyn_into::<Function>()
            .map_err(|_| "options.model.stream is not a function".to_string())?;
        Ok(JsModel {
            model,
            stream,
            tools,
            mirror,
        })
    }
}

impl Model for JsModel {
    type Stream = JsStream;

    fn stream(&self, request: ModelRequest<'_>, signal: &AbortSignal) -> Result<JsStream, String> {
        let signal = js_signal(signal).map_or(JsValue::UNDEFINED, |s| JsValue::from(s.clone()));
        // Each request gets its own arrays; the message objects in them crossed once and are shared.
        let messages = self.mirror.borrow_mut().sync(request.messages);
        let step = open_stream_js(
            &self.model,
            &self.stream,
            request.system_prompt,
            &messages,
            &Array::from(&self.tools),
            &signal,
        );
        let kept = take_kept_js();
        let has_result = match Opened::from(step) {
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

/// How `glue.js`'s `openStream` answered: the stream opened, or the step that failed (in the order of
/// `openStream`'s numbers).
enum Opened {
    Stream,
    StreamWithResult,
    StreamThrew,
    NotIterable,
    IteratorThrew,
    NextUnreadable,
    NoNext,
    ResultUnreadable,
    /// `stream()` gave a promise (it is `async`, say): SPEC's `stream()` is synchronous.
    Promise,
}

impl From<u32> for Opened {
    fn from(step: u32) -> Self {
        match step {
            0 => Opened::Stream,
            1 => Opened::StreamWithResult,
            2 => Opened::StreamThrew,
            3 => Opened::NotIterable,
            4 => Opened::IteratorThrew,
            5 => Opened::NextUnreadable,
            6 => Opened::NoNext,
            7 => Opened::ResultUnreadable,
            _ => Opened::Promise, // 8
        }
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
        let message =
            settle_with(|waiter, id| (!call_result_js(opened, waiter, id)).then(take_kept_js))
                .await
                .map_err(|e| format!("model stream result() failed: {}", error_message(&e)))?;
        let parsed = read::assistant(&message, "model stream result()")?;
        self.mirror.borrow_mut().keep_assistant(&message);
        Ok(parsed)
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
        let parsed = read::assistant(&message, &format!("model event {kind}.{field}"));
        if parsed.is_ok() {
            self.1.borrow_mut().keep_assistant(&message);
        }
        Some(parsed)
    }
}
