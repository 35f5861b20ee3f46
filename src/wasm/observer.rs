//! `onEvent`: each loop event becomes a plain JS object; a model event is wrapped around the very object
//! the model yielded. A returned promise is awaited by the loop.

use futures::future::LocalBoxFuture;
use js_sys::{Function, Object};
use wasm_bindgen::JsValue;

use super::convert::{error_message, set, to_js};
use super::js_model::{settle, JsEvent};
use crate::agent_loop::Observer;
use crate::event::LoopEvent;

pub struct JsObserver(pub Option<Function>);

fn js_event(event: &LoopEvent<'_, JsEvent>) -> JsValue {
    let object: JsValue = Object::new().into();
    set(&object, "type", &JsValue::from_str(event.kind()));
    match event {
        LoopEvent::ModelEvent { event } => set(&object, "event", &event.0),
        LoopEvent::AssistantMessage { message } => {
            set(&object, "message", &to_js(&message.tagged()))
        }
        LoopEvent::ToolStart { call } => set(&object, "call", &to_js(&call.tagged())),
        LoopEvent::ToolProgress { call_id, content } => {
            set(&object, "callId", &JsValue::from_str(call_id));
            set(&object, "content", &to_js(content));
        }
        LoopEvent::ToolEnd { result } | LoopEvent::ToolSkipped { result } => {
            set(&object, "result", &to_js(&result.tagged()))
        }
        LoopEvent::TurnEnd { reason, steps } => {
            set(&object, "reason", &to_js(reason));
            set(&object, "steps", &JsValue::from(*steps));
        }
    }
    object
}

impl Observer<JsEvent> for JsObserver {
    fn on_event(
        &self,
        event: LoopEvent<'_, JsEvent>,
    ) -> Result<Option<LocalBoxFuture<'static, Result<(), String>>>, String> {
        let Some(on_event) = &self.0 else {
            return Ok(None);
        };
        let returned = on_event
            .call1(&JsValue::UNDEFINED, &js_event(&event))
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
