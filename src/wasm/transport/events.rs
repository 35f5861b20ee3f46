//! How an event reaches `onEvent`: each loop event becomes a plain JS object, made and handed over in one
//! `glue.js` call (`emit`, one object literal per `EventShape`); a model event is wrapped around the very
//! object the model yielded (untouched, not frozen), and messages, calls and results are the run's mirror
//! objects (deeply frozen, SPEC §10). A promise
//! `onEvent` returns is awaited by the loop; a throw counts as a rejection.

use js_sys::Function;
use wasm_bindgen::JsValue;

use super::convert::{error_message, key, to_js};
use super::glue::{emit_js, take_kept_js};
use super::mirror::SharedMirror;
use super::model::JsEvent;
use super::protocol::EventShape;
use super::waiter::settle;
use crate::agent_loop::{Observed, Observer};
use crate::event::LoopEvent;

/// `options.onEvent` (absent: events are not made at all), with the run's mirror.
pub struct JsObserver {
    pub on_event: Option<Function>,
    pub mirror: SharedMirror,
}

impl Observer<JsEvent> for JsObserver {
    fn on_event(&self, event: LoopEvent<'_, JsEvent>) -> Observed {
        let Some(on_event) = &self.on_event else {
            return Ok(None);
        };
        let Some(returned) = self.call(on_event, &event) else {
            return Ok(None);
        };
        Ok(Some(Box::pin(async move {
            settle(returned)
                .await
                .map(drop)
                .map_err(|e| error_message(&e))
        })))
    }
}

impl JsObserver {
    /// Calls `on_event` with the JS object for `event`: what it returned if that is an object (a rejected
    /// promise if it threw), `None` for anything else. Messages are made (or reused) through the run's
    /// mirror, so the objects an observer sees are the ones later requests and the result hold.
    fn call(&self, on_event: &Function, event: &LoopEvent<'_, JsEvent>) -> Option<JsValue> {
        let kind = key(event.kind());
        let emit = |shape: EventShape, a: &JsValue, b: &JsValue| {
            emit_js(on_event, shape as u32, kind, a, b).then(take_kept_js)
        };
        let none = &JsValue::UNDEFINED;
        match event {
            LoopEvent::ModelEvent { event } => emit(EventShape::Event, &event.0, none),
            LoopEvent::AssistantMessage { message } => {
                let js = self.mirror.borrow_mut().assistant(message);
                emit(EventShape::Message, &js, none)
            }
            LoopEvent::ToolStart { call } => {
                let js = self.mirror.borrow_mut().call(call);
                emit(EventShape::Call, &js, none)
            }
            LoopEvent::ToolProgress { call_id, content } => emit(
                EventShape::Progress,
                &JsValue::from_str(call_id),
                &to_js(content),
            ),
            LoopEvent::ToolEnd { result } | LoopEvent::ToolSkipped { result } => {
                let js = self.mirror.borrow_mut().result(result);
                emit(EventShape::Result, &js, none)
            }
            LoopEvent::QueuedMessage { message, queue } => {
                let js = self.mirror.borrow_mut().queued(message);
                emit(EventShape::Queued, &js, key(queue.as_str()))
            }
            LoopEvent::TurnEnd { reason, steps } => emit(
                EventShape::TurnEnd,
                key(reason.as_str()),
                &JsValue::from(*steps),
            ),
        }
    }
}
