//! Every JS function the bridge imports beyond js-sys: `glue.js`'s, declared here, described there.
//!
//! A JS exception must never unwind through wasm frames (it skips their cleanup; enough of them trap the
//! instance). So every import here either cannot throw or is declared `catch`, as js-sys declares every
//! import that can run the caller's code.

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

/// What an `emit*` call answers when the listener does not throw: the promise it returned, to await (none
/// for anything else).
pub type Wait = Option<Promise>;

#[wasm_bindgen(module = "/src/wasm/transport/glue.js")]
extern "C" {
    // ---- convert.rs

    #[wasm_bindgen(js_name = parseFrozen)]
    pub fn parse_frozen_js(text: &str) -> JsValue;
    #[wasm_bindgen(js_name = show)]
    pub fn show_js(value: &JsValue) -> String;
    #[wasm_bindgen(js_name = messageOf)]
    pub fn message_of_js(error: &JsValue) -> String;
    #[wasm_bindgen(js_name = unwritable)]
    pub fn unwritable_js(value: &JsValue) -> Option<String>;
    #[wasm_bindgen(catch, js_name = bigintAt)]
    pub fn bigint_at_js(value: &JsValue) -> Result<String, JsValue>;
    #[wasm_bindgen(js_name = typeError)]
    pub fn type_error_js(message: &str) -> JsValue;
    #[wasm_bindgen(js_name = plainError)]
    pub fn plain_error_js(message: &str) -> JsValue;

    // ---- model.rs

    #[wasm_bindgen(js_name = openStream)]
    pub fn open_stream_js(
        model: &JsValue,
        stream: &Function,
        request: &JsValue,
        signal: &JsValue,
    ) -> JsValue;
    #[wasm_bindgen(js_name = pull)]
    pub fn pull_js(opened: &JsValue, deliver: &Function);
    #[wasm_bindgen(js_name = closeDelivery)]
    pub fn close_delivery_js(source: &JsValue);
    #[wasm_bindgen(js_name = streamResult)]
    pub fn stream_result_js(opened: &JsValue) -> Promise;
    #[wasm_bindgen(catch, js_name = finalOf)]
    pub fn final_of_js(event: &JsValue) -> Result<Option<js_sys::Array>, JsValue>;

    // ---- hooks.rs, approval.rs, tools.rs

    #[wasm_bindgen(js_name = invoke)]
    pub fn invoke_js(
        f: &Function,
        this: &JsValue,
        a: &JsValue,
        b: &JsValue,
        c: &JsValue,
    ) -> Invoked;
    /// What `invoke` answers: `{ value }` or `{ wait }`.
    pub type Invoked;
    #[wasm_bindgen(method, getter)]
    pub fn value(this: &Invoked) -> JsValue;
    #[wasm_bindgen(method, getter)]
    pub fn wait(this: &Invoked) -> Option<Promise>;
    #[wasm_bindgen(js_name = argumentsOf)]
    pub fn arguments_of_js(call: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = hookContext)]
    pub fn hook_context_js(signal: &JsValue, step: u32, messages: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = request)]
    pub fn request_js(
        system_prompt: Option<String>,
        messages: &JsValue,
        tools: &JsValue,
    ) -> JsValue;

    // ---- calls.rs

    #[wasm_bindgen(js_name = callSink)]
    pub fn call_sink_js(deliver: &Function) -> JsValue;
    #[wasm_bindgen(js_name = callTool)]
    pub fn call_tool_js(
        f: &Function,
        this: &JsValue,
        arg: &JsValue,
        call_id: Option<String>,
        signal: &JsValue,
        sink: &JsValue,
        token: u32,
    );

    // ---- events.rs

    #[wasm_bindgen(catch, js_name = emitModelEvent)]
    pub fn emit_model_event_js(f: &Function, event: &JsValue) -> Result<Wait, JsValue>;
    #[wasm_bindgen(catch, js_name = emitAssistant)]
    pub fn emit_assistant_js(f: &Function, message: &JsValue) -> Result<Wait, JsValue>;
    #[wasm_bindgen(catch, js_name = emitToolStart)]
    pub fn emit_tool_start_js(f: &Function, call: &JsValue) -> Result<Wait, JsValue>;
    #[wasm_bindgen(catch, js_name = emitProgress)]
    pub fn emit_progress_js(f: &Function, id: &str, content: &JsValue) -> Result<Wait, JsValue>;
    #[wasm_bindgen(catch, js_name = emitResult)]
    pub fn emit_result_js(f: &Function, skipped: bool, result: &JsValue) -> Result<Wait, JsValue>;
    #[wasm_bindgen(catch, js_name = emitQueued)]
    pub fn emit_queued_js(f: &Function, queued: &JsValue, steering: bool) -> Result<Wait, JsValue>;
    #[wasm_bindgen(catch, js_name = emitRetry)]
    pub fn emit_retry_js(
        f: &Function,
        attempt: u32,
        delay_ms: f64,
        error: &str,
    ) -> Result<Wait, JsValue>;
    #[wasm_bindgen(catch, js_name = emitCompaction)]
    pub fn emit_compaction_js(f: &Function, entry: &JsValue) -> Result<Wait, JsValue>;
    #[wasm_bindgen(catch, js_name = emitTurnEnd)]
    pub fn emit_turn_end_js(f: &Function, reason: &str, steps: u32) -> Result<Wait, JsValue>;

    // ---- the API layer

    #[wasm_bindgen(js_name = currentTurn)]
    pub fn current_turn_js(ending: bool) -> i32;
    #[wasm_bindgen(js_name = isArray)]
    pub fn is_array_js(value: &JsValue) -> bool;
    #[wasm_bindgen(js_name = defineAt)]
    pub fn define_at_js(array: &js_sys::Array, index: u32, value: &JsValue);
    #[wasm_bindgen(js_name = defineAt)]
    pub fn define_key_js(object: &JsValue, key: &str, value: &JsValue);
    #[wasm_bindgen(js_name = prefix)]
    pub fn prefix_js(array: &js_sys::Array, n: u32) -> js_sys::Array;
    #[wasm_bindgen(js_name = isPlainObject)]
    pub fn is_plain_object_js(value: &JsValue) -> bool;
    #[wasm_bindgen(js_name = prototypeSet)]
    pub fn prototype_set_js(value: &JsValue) -> bool;
    #[wasm_bindgen(js_name = readClock)]
    pub fn read_clock_js(clock: &Function) -> Option<f64>;
    #[wasm_bindgen(js_name = iteratorResult)]
    pub fn iterator_result_js(value: &JsValue) -> JsValue;
    #[wasm_bindgen(catch, js_name = jsonLines)]
    pub fn json_lines_js(messages: &JsValue) -> Result<JsValue, JsValue>;
}
