//! How a loop event reaches `onEvent` (or an `Agent`'s listener): a plain JS object, with a model event as
//! the very object the model yielded (untouched, not frozen) and messages, calls and results as the
//! transcript's frozen objects (`objects.rs`, by the index the event names). A promise the listener returns
//! is awaited by the loop; a throw counts as a rejection.

use js_sys::Function;
use wasm_bindgen::{intern, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::convert::{error_message, to_js};
use super::glue::{emit_js, emit_object_js};
use super::model::JsEvent;
use super::objects::SharedObjects;
use crate::agent_loop::{Observed, Observer};
use crate::event::LoopEvent;

/// `onEvent` (or a listener), with the transcript's objects. Without a function, it still keeps each
/// response's object, whose calls the batch answers.
pub struct JsObserver {
    pub on_event: Option<Function>,
    pub objects: SharedObjects,
}

impl Observer<JsEvent> for JsObserver {
    fn on_event(&self, event: LoopEvent<'_, JsEvent>) -> Observed {
        if let LoopEvent::AssistantMessage { message, index } = event {
            let object = self.objects.borrow_mut().answering(index, message);
            return self.call(event.kind(), "message", &object, None);
        }
        let Some(on_event) = &self.on_event else {
            return Ok(None);
        };
        match event {
            LoopEvent::ModelEvent { event: e } => self.call(event.kind(), "event", &e.0, None),
            LoopEvent::AssistantMessage { .. } => Ok(None),
            LoopEvent::ToolStart { call } => {
                let object = self.objects.borrow().call(call);
                self.call(event.kind(), "call", &object, None)
            }
            LoopEvent::ToolProgress { call_id, content } => {
                let content = to_js(content);
                self.call(
                    event.kind(),
                    "callId",
                    &call_id.into(),
                    Some(("content", &content)),
                )
            }
            LoopEvent::ToolEnd { result, index } | LoopEvent::ToolSkipped { result, index } => {
                let object = self.objects.borrow_mut().result(index, result);
                self.call(event.kind(), "result", &object, None)
            }
            LoopEvent::QueuedMessage {
                message,
                queue,
                index,
            } => {
                let object = self.objects.borrow_mut().message(index, message);
                let queue = JsValue::from_str(intern(queue.as_str()));
                self.call(event.kind(), "message", &object, Some(("queue", &queue)))
            }
            LoopEvent::Retry {
                attempt,
                delay_ms,
                error,
            } => {
                // Three fields: made whole here (a retry is rare).
                let retry = to_js(&serde_json::json!({
                    "type": "retry", "attempt": attempt, "delayMs": delay_ms, "error": error,
                }));
                hand(emit_object_js(on_event, &retry))
            }
            LoopEvent::Compaction { entry, index } => {
                let object = self.objects.borrow_mut().compaction(index, entry);
                self.call(event.kind(), "entry", &object, None)
            }
            LoopEvent::TurnEnd { reason, steps } => {
                let reason = JsValue::from_str(intern(reason.as_str()));
                self.call(
                    event.kind(),
                    "reason",
                    &reason,
                    Some(("steps", &steps.into())),
                )
            }
        }
    }
}

impl JsObserver {
    /// Calls the function with `{ type: kind, [key]: value, [key2]: value2 }`: its returned promise (or
    /// thenable) to await; `None` when it returned anything else.
    fn call(
        &self,
        kind: &str,
        key: &str,
        value: &JsValue,
        second: Option<(&str, &JsValue)>,
    ) -> Observed {
        let Some(on_event) = &self.on_event else {
            return Ok(None);
        };
        let none = JsValue::UNDEFINED;
        let (k2, v2) = second.map_or((None, &none), |(k, v)| (Some(k), v));
        hand(emit_js(
            on_event,
            intern(kind),
            intern(key),
            value,
            k2.map(intern),
            v2,
        ))
    }
}

/// What a listener's call gave: what it threw, or the promise it returned, to await.
fn hand(returned: Result<Option<js_sys::Promise>, JsValue>) -> Observed {
    let Some(promise) = returned.map_err(|e| error_message(&e))? else {
        return Ok(None);
    };
    Ok(Some(Box::pin(async move {
        JsFuture::from(promise)
            .await
            .map(drop)
            .map_err(|e| error_message(&e))
    })))
}
