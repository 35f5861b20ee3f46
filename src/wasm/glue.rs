//! The bridge's JS helpers (`glue.js`) and the one object through which they call back into Rust.

use js_sys::Function;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use serde_json::Value;

use super::convert::{name_js, to_js};
use crate::message::{MediaBlock, ToolResultMessage};

#[wasm_bindgen(module = "/src/wasm/glue.js")]
extern "C" {
    // They never throw, whatever `value` or `next` do.
    #[wasm_bindgen(js_name = settle)]
    pub fn settle_js(value: &JsValue, waiter: &JsValue, id: u32) -> bool;
    #[wasm_bindgen(js_name = pump)]
    pub fn pump_js(opened: &JsValue, waiter: &JsValue, id: u32);

    /// Cannot throw; the number says which step failed (`js_model.rs`, `Opened`).
    #[wasm_bindgen(js_name = openStream)]
    pub fn open_stream_js(
        model: &JsValue,
        stream: &Function,
        system_prompt: Option<&str>,
        messages: &JsValue,
        tools: &JsValue,
        signal: &JsValue,
    ) -> u32;
    /// Cannot throw (see `glue.js`).
    #[wasm_bindgen(js_name = callResult)]
    pub fn call_result_js(opened: &JsValue, waiter: &JsValue, id: u32) -> bool;

    /// `{ value, done: false }`, or `{ done: true }` for an undefined value.
    #[wasm_bindgen(js_name = iteratorResult)]
    pub fn iterator_result_js(value: &JsValue) -> JsValue;

    /// Cannot throw: a throwing `on_event` comes back as a rejected promise.
    #[wasm_bindgen(js_name = emit)]
    fn emit_js(on_event: &Function, shape: u32, kind: &JsValue, a: &JsValue, b: &JsValue) -> bool;
    /// What `emit` (answering `true`), `openStream`, or `callTool` and `callResult` (answering `false`)
    /// left behind; once.
    #[wasm_bindgen(js_name = takeKept)]
    pub fn take_kept_js() -> JsValue;

    /// Cannot throw (see `glue.js`); `undefined` when the block is no longer that call.
    #[wasm_bindgen(js_name = callBlock)]
    pub fn call_block_js(message: &JsValue, index: u32, id: &str) -> JsValue;

    /// `JSON.parse` of text `serde_json` wrote: cannot throw.
    #[wasm_bindgen(js_name = parseJson)]
    pub fn parse_json_js(text: &str) -> JsValue;

    #[wasm_bindgen(js_name = toolResult)]
    #[allow(clippy::too_many_arguments)]
    fn tool_result_js(
        tool_call_id: &str,
        tool_name: &JsValue,
        text: Option<&str>,
        content: &JsValue,
        details: &JsValue,
        empty_details: bool,
        is_error: bool,
        timestamp: f64,
    ) -> JsValue;

    /// Cannot throw (see `glue.js`).
    #[wasm_bindgen(js_name = simpleOutput)]
    pub fn simple_output_js(output: &JsValue) -> u32;
    #[wasm_bindgen(js_name = takeSimpleText)]
    pub fn take_simple_text_js() -> js_sys::JsString;
    /// The same, for a text `simpleOutput` said is short: copied in by wasm-bindgen in the same call.
    #[wasm_bindgen(js_name = takeSimpleText)]
    pub fn take_short_simple_text_js() -> String;
    #[wasm_bindgen(js_name = takeSimpleDetails)]
    pub fn take_simple_details_js() -> js_sys::JsString;

    /// Cannot throw (see `glue.js`); `None` unless the clock gave a number.
    #[wasm_bindgen(js_name = readClock)]
    pub fn read_clock_js(clock: &Function) -> Option<f64>;

    /// `String(value)` for a primitive (see `glue.js`). Cannot throw.
    #[wasm_bindgen(js_name = show)]
    pub fn show_js(value: &JsValue) -> String;

    /// Cannot throw: `text` is a string and `ptr..ptr + capacity` lies in `memory`.
    #[wasm_bindgen(js_name = encodeInto)]
    pub fn encode_into_js(
        text: &js_sys::JsString,
        memory: &JsValue,
        ptr: u32,
        capacity: u32,
    ) -> u32;

    /// Cannot throw (see `glue.js`).
    #[wasm_bindgen(js_name = callTool)]
    #[allow(clippy::too_many_arguments)]
    pub fn call_tool_js(
        f: &Function,
        this: &JsValue,
        arg_json: &str,
        call_id: Option<&str>,
        signal: &JsValue,
        waiter: &JsValue,
        progress_id: f64,
        id: u32,
    ) -> bool;
}

/// Where `glue.js` reports. Not part of the API: exported only because JS reaches Rust only through
/// exports.
#[wasm_bindgen(js_name = __TinyPiWaiter, skip_typescript)]
pub struct Waiter;

thread_local! {
    static WAITER: JsValue = JsValue::from(Waiter);
}

/// Runs `f` with the module's one `Waiter` object.
pub fn with_waiter<R>(f: impl FnOnce(&JsValue) -> R) -> R {
    WAITER.with(f)
}

#[wasm_bindgen(js_class = __TinyPiWaiter)]
impl Waiter {
    pub fn settled(&self, id: u32, ok: bool, value: JsValue) {
        super::promise::settled(id, if ok { Ok(value) } else { Err(value) });
    }

    /// Takes one `next()` outcome; answers whether the pump should pull another one right away.
    pub fn delivered(&self, id: u32, kind: u32, value: JsValue) -> bool {
        super::promise::delivered(id, super::promise::Step::new(kind, value))
    }

    /// A tool's `reportProgress(content)`; throws a `TypeError` for malformed content.
    pub fn progress(&self, id: f64, content: JsValue) -> Result<(), JsValue> {
        super::js_tools::progress(id, content)
    }
}

/// The fields of an event object after its `type`, each shape with its own (`glue.js` writes each shape
/// out as a literal, numbered as `number` says).
pub enum EventFields<'a> {
    /// `{ type, event }`
    Event(&'a JsValue),
    /// `{ type, message }`
    Message(&'a JsValue),
    /// `{ type, call }`
    Call(&'a JsValue),
    /// `{ type, callId, content }`
    Progress {
        call_id: &'a JsValue,
        content: &'a JsValue,
    },
    /// `{ type, result }`
    Result(&'a JsValue),
    /// `{ type, reason, steps }`
    TurnEnd {
        reason: &'a JsValue,
        steps: &'a JsValue,
    },
}

impl<'a> EventFields<'a> {
    /// The shape's number in `glue.js` (`eventObject`) and its one or two values.
    fn number(&self) -> (u32, &'a JsValue, Option<&'a JsValue>) {
        match *self {
            EventFields::Event(event) => (0, event, None),
            EventFields::Message(message) => (1, message, None),
            EventFields::Call(call) => (2, call, None),
            EventFields::Progress { call_id, content } => (3, call_id, Some(content)),
            EventFields::Result(result) => (4, result, None),
            EventFields::TurnEnd { reason, steps } => (5, reason, Some(steps)),
        }
    }
}

/// `on_event({ type: kind, ...fields })`: what it returned if that is an object (a rejected promise if it
/// threw), `None` for anything else.
pub fn emit(on_event: &Function, kind: &JsValue, fields: EventFields<'_>) -> Option<JsValue> {
    let (shape, a, b) = fields.number();
    let none = JsValue::UNDEFINED;
    emit_js(on_event, shape, kind, a, b.unwrap_or(&none)).then(take_kept_js)
}

/// A tool result as a JS object: the same object `to_js(&result.tagged())` would make, built in one call
/// for the usual shape (no extra fields) instead of serialized and parsed again (~2 µs a result).
pub fn tool_result(result: &ToolResultMessage) -> JsValue {
    if !result.extra.is_empty() {
        return to_js(&result.tagged());
    }
    let (text, content) = match result.content.as_slice() {
        [MediaBlock::Text(text)] if text.extra.is_empty() => {
            (Some(&*text.text), JsValue::UNDEFINED)
        }
        content => (None, to_js(content)),
    };
    let (details, empty_details) = match &result.details {
        None => (JsValue::UNDEFINED, false),
        Some(Value::Object(map)) if map.is_empty() => (JsValue::UNDEFINED, true),
        Some(details) => (to_js(details), false),
    };
    tool_result_js(
        &result.tool_call_id,
        &name_js(&result.tool_name),
        text,
        &content,
        &details,
        empty_details,
        result.is_error,
        result.timestamp,
    )
}
