//! How a loop event reaches `onEvent` (or an `Agent`'s listener): a plain JS object, with a model event as
//! the very object the model yielded (untouched, not frozen) and messages, calls and results as the
//! transcript's frozen objects (`objects.rs`, by the index the event names). A promise the listener returns
//! is awaited by the loop; a throw counts as a rejection.

use js_sys::Function;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use super::convert::{error_message, to_js};
use super::glue::{
    emit_assistant_js, emit_compaction_js, emit_model_event_js, emit_progress_js, emit_queued_js,
    emit_result_js, emit_retry_js, emit_tool_start_js, emit_turn_end_js, Wait,
};
use super::model::JsEvent;
use super::objects::SharedObjects;
use crate::agent_loop::{Observed, Observer};
use crate::event::{LoopEvent, Queue};

/// `onEvent` (or a listener), with the transcript's objects. Without a function, it still keeps each
/// response's object, whose calls the batch answers.
pub struct JsObserver {
    pub on_event: Option<Function>,
    pub objects: SharedObjects,
}

impl Observer<JsEvent> for JsObserver {
    fn on_event(&self, event: LoopEvent<'_, JsEvent>) -> Observed {
        let Some(f) = &self.on_event else {
            // With no listener, a response's object is still made: it holds the calls the batch answers.
            if let LoopEvent::AssistantMessage { message, index } = event {
                self.objects.borrow_mut().answering(index, message);
            }
            return Ok(None);
        };
        let object = self.object_of(&event);
        let returned = match event {
            LoopEvent::ModelEvent { event } => emit_model_event_js(f, &event.0),
            LoopEvent::AssistantMessage { .. } => emit_assistant_js(f, &object),
            LoopEvent::ToolStart { .. } => emit_tool_start_js(f, &object),
            LoopEvent::ToolProgress { call_id, content } => {
                emit_progress_js(f, call_id, &to_js(content))
            }
            LoopEvent::ToolEnd { .. } => emit_result_js(f, false, &object),
            LoopEvent::ToolSkipped { .. } => emit_result_js(f, true, &object),
            LoopEvent::QueuedMessage { queue, .. } => {
                emit_queued_js(f, &object, queue == Queue::Steering)
            }
            LoopEvent::Retry {
                attempt,
                delay_ms,
                error,
            } => emit_retry_js(f, attempt, delay_ms, error),
            LoopEvent::Compaction { .. } => emit_compaction_js(f, &object),
            LoopEvent::TurnEnd { reason, steps } => emit_turn_end_js(f, reason.as_str(), steps),
        };
        hand(returned)
    }
}

impl JsObserver {
    /// The transcript's object an event carries (undefined for one that carries none), made before the
    /// listener runs: the listener may read the same objects (`agent.messages`) while it runs.
    fn object_of(&self, event: &LoopEvent<'_, JsEvent>) -> JsValue {
        let mut objects = self.objects.borrow_mut();
        match *event {
            LoopEvent::AssistantMessage { message, index } => objects.answering(index, message),
            LoopEvent::ToolStart { call } => objects.call(call),
            LoopEvent::ToolEnd { result, index } | LoopEvent::ToolSkipped { result, index } => {
                objects.result(index, result)
            }
            LoopEvent::QueuedMessage { message, index, .. } => objects.message(index, message),
            LoopEvent::Compaction { entry, index } => objects.compaction(index, entry),
            _ => JsValue::UNDEFINED,
        }
    }
}

/// What a listener's call gave: what it threw, or the promise it returned, to await.
fn hand(returned: Result<Wait, JsValue>) -> Observed {
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
