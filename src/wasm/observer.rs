//! `onEvent`: each loop event becomes a plain JS object; a model event is wrapped around the very object
//! the model yielded. A returned promise is awaited by the loop.

use js_sys::{Function, Object};
use wasm_bindgen::JsValue;

use super::convert::{error_message, set, to_js, with_key};
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
    /// The JS object for an event. Messages are made (or reused) through the run's mirror, so the objects
    /// an observer sees are the ones later requests and the result hold.
    fn js_event(&self, event: &LoopEvent<'_, JsEvent>) -> JsValue {
        let object: JsValue = Object::new().into();
        with_key(event.kind(), |kind| set(&object, "type", kind));
        match event {
            LoopEvent::ModelEvent { event } => set(&object, "event", &event.0),
            LoopEvent::AssistantMessage { message } => set(
                &object,
                "message",
                &self.mirror.borrow_mut().assistant(message),
            ),
            LoopEvent::ToolStart { call } => set(&object, "call", &to_js(&call.tagged())),
            LoopEvent::ToolProgress { call_id, content } => {
                set(&object, "callId", &JsValue::from_str(call_id));
                set(&object, "content", &to_js(content));
            }
            LoopEvent::ToolEnd { result } | LoopEvent::ToolSkipped { result } => {
                let js = to_js(&result.tagged());
                self.mirror
                    .borrow_mut()
                    .keep_result(&result.tool_call_id, &js);
                set(&object, "result", &js);
            }
            LoopEvent::TurnEnd { reason, steps } => {
                with_key(reason.as_str(), |r| set(&object, "reason", r));
                set(&object, "steps", &JsValue::from(*steps));
            }
        }
        object
    }
}

impl Observer<JsEvent> for JsObserver {
    fn on_event(&self, event: LoopEvent<'_, JsEvent>) -> crate::agent_loop::Observed {
        let Some(on_event) = &self.on_event else {
            return Ok(None);
        };
        let returned = on_event
            .call1(&JsValue::UNDEFINED, &self.js_event(&event))
            .map_err(|e| error_message(&e))?;
        if !returned.is_object() {
            return Ok(None);
        }
        Ok(Some(Box::pin(async move {
            settle(returned)
                .await
                .map(drop)
                .map_err(|e| error_message(&e))
        })))
    }
}
