//! Every JS function the bridge imports beyond js-sys: `glue.js`'s (its sections are named after the modules
//! that call them), two built-ins imported without js-sys's exception trap, and `RegExp` imported with the
//! `catch` js-sys's lacks. Declarations only: what they do is in `glue.js`, what they answer is read by
//! their callers.
//!
//! A JS exception must never unwind through wasm frames: it skips their cleanup (a borrow stays taken, the
//! shadow stack pointer stays lowered) and a few thousand of them trap the instance. So every import here
//! either cannot throw or catches inside itself (`glue.js` does for every call into caller code), and
//! every js-sys import that can run caller code is one js-sys declares with `catch`.

use js_sys::{Array, Function, JsString};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

#[wasm_bindgen(module = "/src/wasm/transport/glue.js")]
extern "C" {
    // ---- waiter.rs

    /// Starts awaiting `value` if it is a promise or thenable (the outcome goes to `waiter.settled(id, ..)`);
    /// answers whether it does. Cannot throw.
    #[wasm_bindgen(js_name = settle)]
    pub fn settle_js(value: &JsValue, waiter: &JsValue, id: u32) -> bool;
    /// Pulls an opened stream's `next()` results into `waiter.delivered(id, kind, value)` for as long as
    /// that answers `true`. Cannot throw.
    #[wasm_bindgen(js_name = pump)]
    pub fn pump_js(opened: &JsValue, waiter: &JsValue, id: u32);
    /// What the last call that answered "left behind" left, once (see `glue.js`).
    #[wasm_bindgen(js_name = takeKept)]
    pub fn take_kept_js() -> JsValue;

    // ---- convert.rs

    /// `JSON.stringify(value)`, or `null` with what it threw left for `take_kept_js`. Cannot throw.
    #[wasm_bindgen(js_name = stringify)]
    pub fn stringify_js(value: &JsValue) -> JsValue;
    /// `JSON.parse` of text `serde_json` wrote: cannot throw.
    #[wasm_bindgen(js_name = parseJson)]
    pub fn parse_json_js(text: &str) -> JsValue;
    /// Cannot throw: `text` is a string and `ptr..ptr + capacity` lies in `memory`.
    #[wasm_bindgen(js_name = encodeInto)]
    pub fn encode_into_js(text: &JsString, memory: &JsValue, ptr: u32, capacity: u32) -> u32;
    /// A value that is not an `Error` as text: `String(value)` for a primitive, JSON (cut short) for an
    /// object. Cannot throw.
    #[wasm_bindgen(js_name = show)]
    pub fn show_js(value: &JsValue) -> String;

    // ---- signal.rs

    /// `new AbortController()`. Cannot throw.
    #[wasm_bindgen(js_name = newController)]
    pub fn new_controller_js() -> JsValue;
    /// `controller.abort()`. Cannot throw.
    #[wasm_bindgen(js_name = abortController)]
    pub fn abort_controller_js(controller: &JsValue);
    /// Adds (`on`) or removes `listener` as an abort listener of `signal`. Cannot throw.
    #[wasm_bindgen(js_name = listenAbort)]
    pub fn listen_abort_js(signal: &JsValue, listener: &JsValue, on: bool);

    // ---- model.rs

    /// Calls `model.stream(..)` and opens its iterator; answers an `Opened` number, what it made or threw
    /// left for `take_kept_js`. Cannot throw.
    #[wasm_bindgen(js_name = openStream)]
    pub fn open_stream_js(
        model: &JsValue,
        stream: &Function,
        system_prompt: &JsValue,
        messages: &JsValue,
        tools: &JsValue,
        signal: &JsValue,
    ) -> u32;
    /// Calls an opened stream's `result()` and settles it under `id`; `false`: nothing to await, the value
    /// left for `take_kept_js`. Cannot throw.
    #[wasm_bindgen(js_name = callResult)]
    pub fn call_result_js(opened: &JsValue, waiter: &JsValue, id: u32) -> bool;

    /// A plain final message adopted (frozen in place) and taken apart for the two calls below: the
    /// number of its blocks plus 1; 0 for any other (read all of it). Cannot throw.
    #[wasm_bindgen(js_name = adoptParts)]
    pub fn adopt_parts_js(message: &JsValue) -> u32;
    /// Its numbers: `[timestamp, has an error message, each block's BlockPart..., each string's length]`.
    #[wasm_bindgen(js_name = takePartNumbers)]
    pub fn take_part_numbers_js() -> Vec<f64>;
    /// Its strings, joined.
    #[wasm_bindgen(js_name = takePartsText)]
    pub fn take_parts_text_js() -> JsString;

    // ---- tools.rs

    /// Calls a tool and settles what it returns under `id`, as `call_result_js` does. Cannot throw.
    #[wasm_bindgen(js_name = callTool)]
    #[allow(clippy::too_many_arguments)]
    pub fn call_tool_js(
        f: &Function,
        this: &JsValue,
        call: &JsValue,
        arg_json: Option<&str>,
        call_id: Option<&str>,
        signal: &JsValue,
        progress: &JsValue,
        route: f64,
        waiter: &JsValue,
        id: u32,
    ) -> bool;

    // ---- approval.rs

    /// Calls a tool's `needsApproval` with its arguments (parsed from `arg_json`) and settles the answer
    /// under `id`, as `call_tool_js` does. Cannot throw.
    #[wasm_bindgen(js_name = callCheck)]
    pub fn call_check_js(
        f: &Function,
        this: &JsValue,
        arg_json: &str,
        waiter: &JsValue,
        id: u32,
    ) -> bool;

    // ---- tool_output.rs

    /// 0, or `OutputBit`s with the parts kept for the `take_simple_*` calls. Cannot throw.
    #[wasm_bindgen(js_name = simpleOutput)]
    pub fn simple_output_js(output: &JsValue) -> u32;
    #[wasm_bindgen(js_name = takeSimpleText)]
    pub fn take_simple_text_js() -> JsString;
    /// The same, for a text `simpleOutput` said is short: copied in by wasm-bindgen in the same call.
    #[wasm_bindgen(js_name = takeSimpleText)]
    pub fn take_short_simple_text_js() -> String;
    #[wasm_bindgen(js_name = takeSimpleDetails)]
    pub fn take_simple_details_js() -> JsString;

    // ---- mirror.rs

    /// `message.content[index]` if it is still the call `id`, else `undefined`. Cannot throw.
    #[wasm_bindgen(js_name = callBlock)]
    pub fn call_block_js(message: &JsValue, index: u32, id: &str) -> JsValue;
    /// A tool result object, its one text block made from `text` when given, its `toolCallId` that of
    /// `call` when no id is given; deeply frozen if `frozen`.
    #[wasm_bindgen(js_name = toolResult)]
    #[allow(clippy::too_many_arguments)]
    pub fn tool_result_js(
        tool_call_id: Option<&str>,
        call: &JsValue,
        tool_name: &JsValue,
        text: Option<&str>,
        content: &JsValue,
        details: &JsValue,
        empty_details: bool,
        is_error: bool,
        timestamp: f64,
        frozen: bool,
    ) -> JsValue;
    /// `JSON.parse` of text `serde_json` wrote, deeply frozen. Cannot throw.
    #[wasm_bindgen(js_name = parseFrozen)]
    pub fn parse_frozen_js(text: &str) -> JsValue;
    /// `parseFrozen` of a JS string (JSON text `JSON.stringify` wrote). Cannot throw.
    #[wasm_bindgen(js_name = parseFrozen)]
    pub fn parse_frozen_json_js(text: &JsValue) -> JsValue;
    /// A frozen copy of an array we own. Cannot throw.
    #[wasm_bindgen(js_name = frozenCopy)]
    pub fn frozen_copy_js(array: &JsValue) -> Array;
    /// Freezes a model's final message in place, deeply; `false` if it is no assistant message or cannot be
    /// frozen. Cannot throw.
    #[wasm_bindgen(js_name = adoptMessage)]
    pub fn adopt_message_js(message: &JsValue) -> bool;

    // ---- events.rs

    /// `on_event(event)` with the event literal of `shape`; answers whether it returned an object (left for
    /// `take_kept_js`). Cannot throw: a throw comes back as a rejected promise.
    #[wasm_bindgen(js_name = emit)]
    pub fn emit_js(
        on_event: &Function,
        shape: u32,
        kind: &JsValue,
        a: &JsValue,
        b: &JsValue,
    ) -> bool;

    // ---- hooks.rs

    /// Calls a hook with `arity` arguments (0, 2 or 3, the last its context `{ signal, step, messages }`)
    /// and settles what it returns under `id`, as `call_tool_js` does. Cannot throw.
    #[wasm_bindgen(js_name = callHook)]
    #[allow(clippy::too_many_arguments)]
    pub fn call_hook_js(
        f: &Function,
        arity: u32,
        a: &JsValue,
        b: &JsValue,
        signal: &JsValue,
        step: u32,
        messages: &JsValue,
        waiter: &JsValue,
        id: u32,
    ) -> bool;
    /// What hook contexts read `messages` from: `sent[..length]`, frozen when first read (`made`, if
    /// given, is that copy already). Cannot throw.
    #[wasm_bindgen(js_name = transcriptView)]
    pub fn transcript_view_js(sent: &Array, length: u32, made: &JsValue) -> JsValue;
    /// `{ systemPrompt, messages, tools }`, frozen. Cannot throw.
    #[wasm_bindgen(js_name = frozenRequest)]
    pub fn frozen_request_js(
        system_prompt: &JsValue,
        messages: &JsValue,
        tools: &JsValue,
    ) -> JsValue;

    // ---- for the API layer

    /// `None` unless the clock gave a number. Cannot throw.
    #[wasm_bindgen(js_name = readClock)]
    pub fn read_clock_js(clock: &Function) -> Option<f64>;
    /// `{ value, done: false }`, or `{ done: true }` for an undefined value.
    #[wasm_bindgen(js_name = iteratorResult)]
    pub fn iterator_result_js(value: &JsValue) -> JsValue;
    /// The messages as JSON Lines (`JSON.stringify` of each); `null` if that threw, with what it threw left
    /// for `take_kept_js`. Cannot throw.
    #[wasm_bindgen(js_name = jsonLines)]
    pub fn json_lines_js(messages: &JsValue) -> JsValue;
}

#[wasm_bindgen]
extern "C" {
    /// `Reflect.set` without an exception trap: only for fresh plain objects we own, where it cannot throw.
    #[wasm_bindgen(js_namespace = Reflect, js_name = set)]
    pub fn set_own(target: &JsValue, key: &JsValue, value: &JsValue) -> bool;

    /// `Array.isArray`, which throws for a revoked proxy.
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    pub fn is_array_checked(value: &JsValue) -> Result<bool, JsValue>;

    // ---- regexp.rs

    /// The host's `RegExp`, for schema `pattern`s.
    #[wasm_bindgen(js_name = RegExp)]
    pub type HostRegExp;

    /// `new RegExp(pattern, flags)`: an invalid pattern's SyntaxError comes back as `Err`, never as an
    /// exception unwinding through wasm.
    #[wasm_bindgen(constructor, js_class = "RegExp", catch)]
    pub fn new(pattern: &str, flags: &str) -> Result<HostRegExp, JsValue>;

    /// Caught too: a match that exhausts the host's stack throws a RangeError.
    #[wasm_bindgen(method, js_class = "RegExp", catch)]
    pub fn test(this: &HostRegExp, text: &str) -> Result<bool, JsValue>;
}
