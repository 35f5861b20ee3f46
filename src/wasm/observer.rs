//! `onEvent`: each loop event becomes a plain JS object; a model event is wrapped around the very object
//! the model yielded. A returned promise is awaited by the loop.

use js_sys::Function;
use wasm_bindgen::JsValue;

use super::convert::{error_message, key, to_js};
use super::glue::{emit, tool_result, EventFields};
use super::js_model::JsEvent;
use super::mirror::SharedMirror;
use super::promise::settle;
use crate::agent_loop::Observer;
use crate::event::LoopEvent;

pub struct JsObserver {
    pub on_event: Option<Function>,
    pub mirror: SharedMirror,
}

impl JsObserver {
    /// Calls `on_event` with the JS object for `event`. Messages are made (or reused) through the run's
    /// mirror, so the objects an observer sees are the ones later requests and the result hold.
    fn call(&self, on_event: &Function, event: &LoopEvent<'_, JsEvent>) -> Option<JsValue> {
        let kind = key(event.kind());
        match event {
            LoopEvent::ModelEvent { event } => emit(on_event, kind, EventFields::Event(&event.0)),
            LoopEvent::AssistantMessage { message } => {
                let js = self.mirror.borrow_mut().assistant(message);
                emit(on_event, kind, EventFields::Message(&js))
            }
            LoopEvent::ToolStart { call } => {
                let js = self.mirror.borrow().call(call);
                emit(on_event, kind, EventFields::Call(&js))
            }
            LoopEvent::ToolProgress { call_id, content } => {
                let fields = EventFields::Progress {
                    call_id: &JsValue::from_str(call_id),
                    content: &to_js(content),
                };
                emit(on_event, kind, fields)
            }
            LoopEvent::ToolEnd { result } | LoopEvent::ToolSkipped { result } => {
                let js = tool_result(result);
                self.mirror
                    .borrow_mut()
                    .keep_result(&result.tool_call_id, &js);
                emit(on_event, kind, EventFields::Result(&js))
            }
            // No queue is passed from JS yet (the §7 bridge adds the event's own shape with `queue`).
            LoopEvent::QueuedMessage { message, .. } => {
                emit(on_event, kind, EventFields::Message(&to_js(message)))
            }
            LoopEvent::TurnEnd { reason, steps } => {
                let fields = EventFields::TurnEnd {
                    reason: key(reason.as_str()),
                    steps: &JsValue::from(*steps),
                };
                emit(on_event, kind, fields)
            }
        }
    }
}

impl Observer<JsEvent> for JsObserver {
    fn on_event(&self, event: LoopEvent<'_, JsEvent>) -> crate::agent_loop::Observed {
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
