//! `ScriptedModel`: the core's offline, deterministic model as a JS object whose `stream()` returns an async
//! iterator of pi-ai events with `result()`, in the compact grammar or pi-ai's full one.

use js_sys::{Object, Promise, Reflect, Symbol};
use wasm_bindgen::prelude::*;

use super::options;
use crate::message::AssistantMessage;
use crate::model::{EventGrammar, Model, ModelRequest, RecordedRequest, ScriptedStream};
use crate::signal::AbortSignal;
use crate::wasm::transport::convert::{
    array_from_js, describe, expect_object, from_js, get, is_object, must_be, to_js, type_error,
};
use crate::wasm::transport::glue::iterator_result_js;

/// The offline, deterministic model: replays assistant messages, one per request, and records what each
/// request saw.
#[wasm_bindgen(js_name = ScriptedModel)]
pub struct JsScriptedModel(crate::model::ScriptedModel);

#[wasm_bindgen(js_class = ScriptedModel)]
impl JsScriptedModel {
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "AssistantMessage[]")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ScriptedModelOptions")] options: JsValue,
    ) -> Result<JsScriptedModel, JsValue> {
        let _entered = super::enter()?;
        let script: Vec<AssistantMessage> = array_from_js(
            &messages,
            "ScriptedModel: messages",
            "an array of assistant messages",
        )
        .map_err(type_error)?;
        let grammar = grammar_option(&options).map_err(type_error)?;
        Ok(JsScriptedModel(
            crate::model::ScriptedModel::new(script).with_grammar(grammar),
        ))
    }

    /// Replays the next scripted message as a stream of pi-ai events. Throws past the end of the script.
    #[wasm_bindgen(unchecked_return_type = "ModelStream & { result(): Promise<AssistantMessage> }")]
    pub fn stream(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ModelRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ signal?: AbortSignal }")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let _entered = super::enter()?;
        let request: RecordedRequest = from_js(&request, "request").map_err(type_error)?;
        let signal = match is_object(&options) {
            true => get(&options, "signal", "options.signal")
                .and_then(|signal| options::signal(&signal, "options.signal"))
                .map_err(type_error)?,
            false => AbortSignal::none(),
        };
        let borrowed = ModelRequest {
            system_prompt: request.system_prompt.as_deref(),
            messages: &request.messages,
            tools: &request.tools,
            sources: crate::model::Sources::Other,
            attempt: 0,
        };
        let stream = self
            .0
            .stream(borrowed, &signal)
            .map_err(|e| JsValue::from(js_sys::Error::new(&e)))?;
        let stream: JsValue = JsScriptedStream(stream).into();
        // `for await` asks for [Symbol.asyncIterator]() and expects the iterator: the stream is its own
        // iterator, and Object.prototype.valueOf is a built-in function that returns `this`.
        let identity = get(&Object::new(), "valueOf", "valueOf").map_err(type_error)?;
        let _ = Reflect::set(&stream, &Symbol::async_iterator(), &identity);
        Ok(stream)
    }

    /// What each request saw, in order (copies).
    #[wasm_bindgen(getter, unchecked_return_type = "ModelRequest[]")]
    pub fn requests(&self) -> JsValue {
        to_js(&self.0.requests())
    }
}

/// `{ events?: "compact" | "pi-ai" }`, absent meaning the compact grammar.
fn grammar_option(options: &JsValue) -> Result<EventGrammar, String> {
    const EVENTS: &str = "ScriptedModel: options.events";
    if options.is_null_or_undefined() {
        return Ok(EventGrammar::default());
    }
    expect_object(options, "ScriptedModel: options", "an object")?;
    let events = get(options, "events", EVENTS)?;
    if events.is_undefined() {
        return Ok(EventGrammar::default());
    }
    events
        .as_string()
        .and_then(|name| EventGrammar::parse(&name))
        .ok_or_else(|| must_be(EVENTS, "\"compact\" or \"pi-ai\"", describe(&events)))
}

/// One scripted response: an async iterator of model events with `result()`.
#[wasm_bindgen(js_name = ScriptedStream, skip_typescript)]
pub struct JsScriptedStream(ScriptedStream);

#[wasm_bindgen(js_class = ScriptedStream)]
impl JsScriptedStream {
    #[allow(clippy::should_implement_trait)] // the JS async-iterator protocol's `next()`
    pub fn next(&mut self) -> Promise {
        let value = self
            .0
            .next_now()
            .map_or(JsValue::UNDEFINED, |event| to_js(&event));
        Promise::resolve(&iterator_result_js(&value))
    }

    pub fn result(&self) -> Promise {
        Promise::resolve(&to_js(&self.0.message().tagged()))
    }
}
