//! A JS model: `stream(request, {signal})` returning any async iterable (a pi-ai `EventStream` included),
//! with or without `result()`. Events stay JS values: they reach `onEvent` as the objects the model yielded.

use std::cell::RefCell;

use js_sys::{Array, Function, Object, Promise, Reflect, Symbol};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::convert::{error_message, from_js, get, is_object, set, to_js, type_of};
use super::signal::js_signal;
use crate::message::{AgentMessage, AssistantMessage};
use crate::model::{Model, ModelRequest, ModelStream, StreamEvent};
use crate::signal::AbortSignal;

pub struct JsModel {
    model: JsValue,
    stream: Function,
    /// The transcript only grows during a run: each message is converted once and reused by every later
    /// request (each request still gets its own array).
    sent: RefCell<Vec<JsValue>>,
    tools: JsValue,
}

impl JsModel {
    pub fn new(model: JsValue, tools: JsValue) -> Result<Self, String> {
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
            sent: RefCell::new(Vec::new()),
            tools,
        })
    }

    fn request(&self, request: &ModelRequest<'_>) -> JsValue {
        let mut sent = self.sent.borrow_mut();
        let known = sent.len().min(request.messages.len());
        sent.truncate(known);
        sent.extend(
            request.messages[known..]
                .iter()
                .map(|m: &AgentMessage| to_js(m)),
        );
        let messages: Array = sent.iter().collect();
        let object: JsValue = Object::new().into();
        if let Some(prompt) = request.system_prompt {
            set(&object, "systemPrompt", &JsValue::from_str(prompt));
        }
        set(&object, "messages", &messages);
        set(&object, "tools", &Array::from(&self.tools).into());
        object
    }
}

impl Model for JsModel {
    type Stream = JsStream;

    fn stream(&self, request: ModelRequest<'_>, signal: &AbortSignal) -> Result<JsStream, String> {
        let options: JsValue = Object::new().into();
        if let Some(signal) = js_signal(signal) {
            set(&options, "signal", signal);
        }
        let returned = self
            .stream
            .call2(&self.model, &self.request(&request), &options)
            .map_err(|e| format!("model.stream() threw: {}", error_message(&e)))?;
        JsStream::new(returned)
    }
}

pub struct JsStream {
    stream: JsValue,
    iterator: JsValue,
    next: Function,
    result: Option<Function>,
}

impl JsStream {
    fn new(stream: JsValue) -> Result<Self, String> {
        let not_iterable = || {
            format!(
                "model.stream() must return an async iterable (got {})",
                type_of(&stream)
            )
        };
        if !is_object(&stream) {
            return Err(not_iterable());
        }
        let method = [Symbol::async_iterator(), Symbol::iterator()]
            .into_iter()
            .find_map(|symbol| {
                Reflect::get(&stream, &symbol)
                    .ok()?
                    .dyn_into::<Function>()
                    .ok()
            })
            .ok_or_else(not_iterable)?;
        let iterator = method
            .call0(&stream)
            .map_err(|e| format!("model stream iterator threw: {}", error_message(&e)))?;
        let next = get(&iterator, "next", "model stream iterator")?
            .dyn_into::<Function>()
            .map_err(|_| "model stream iterator has no next() method".to_string())?;
        let result = get(&stream, "result", "model stream")?
            .dyn_into::<Function>()
            .ok();
        Ok(JsStream {
            stream,
            iterator,
            next,
            result,
        })
    }
}

/// Awaits a value that may or may not be a promise.
pub async fn settle(value: JsValue) -> Result<JsValue, JsValue> {
    if value.is_instance_of::<Promise>() {
        JsFuture::from(value.unchecked_into::<Promise>()).await
    } else if is_object(&value)
        && Reflect::get(&value, &"then".into()).is_ok_and(|t| t.is_function())
    {
        JsFuture::from(Promise::resolve(&value)).await
    } else {
        Ok(value)
    }
}

impl ModelStream for JsStream {
    type Event = JsEvent;

    async fn next(&mut self) -> Option<Result<JsEvent, String>> {
        let step = match self.next.call0(&self.iterator) {
            Ok(step) => settle(step).await,
            Err(e) => Err(e),
        };
        let step = match step {
            Ok(step) if is_object(&step) => step,
            Ok(other) => {
                return Some(Err(format!(
                    "model stream next() gave {} instead of an iterator result",
                    type_of(&other)
                )))
            }
            Err(e) => return Some(Err(format!("model stream threw: {}", error_message(&e)))),
        };
        if Reflect::get(&step, &"done".into()).is_ok_and(|d| d.is_truthy()) {
            return None;
        }
        Some(
            Reflect::get(&step, &"value".into())
                .map(JsEvent)
                .map_err(|e| error_message(&e)),
        )
    }

    fn has_result(&self) -> bool {
        self.result.is_some()
    }

    async fn result(&mut self) -> Result<AssistantMessage, String> {
        let Some(result) = &self.result else {
            return Err("model stream has no result()".into());
        };
        let message = match result.call0(&self.stream) {
            Ok(promise) => settle(promise).await,
            Err(e) => Err(e),
        }
        .map_err(|e| format!("model stream result() failed: {}", error_message(&e)))?;
        from_js(&message, "model stream result()")
    }
}

/// A model event exactly as JS produced it.
pub struct JsEvent(pub JsValue);

impl StreamEvent for JsEvent {
    fn final_message(&self) -> Option<Result<AssistantMessage, String>> {
        let kind = Reflect::get(&self.0, &"type".into()).ok()?.as_string()?;
        let field = match kind.as_str() {
            "done" => "message",
            "error" => "error",
            _ => return None,
        };
        let what = format!("model event {kind}.{field}");
        Some(get(&self.0, field, &what).and_then(|m| from_js(&m, &what)))
    }
}
