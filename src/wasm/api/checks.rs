//! The transcript check of SPEC §5 (chapter 00), the paused view and repair of SPEC §8: arguments read, the
//! core's check run, its answer written back. (The trace checks are the lesson entry's: `api/trace.rs`.)

use wasm_bindgen::prelude::*;

use super::options;
use crate::transcript::{repair_transcript, validate_transcript_with, ValidateOptions};
use crate::wasm::transport::convert::{
    get, must_be, optional_function, to_js, type_error, type_of,
};
use crate::wasm::transport::glue::define_key_js;

/// Checks the call/result pairing of a transcript; with `allowPending`, in the paused view (SPEC §8), whose
/// `pending` lists the calls of the last message that wait for a result. (Declared in `types.d.ts`: its
/// options are optional.)
#[wasm_bindgen(js_name = validateTranscript, skip_typescript)]
pub fn validate_transcript_js(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let _entered = super::enter()?;
    let read = || -> Result<_, String> {
        let options = options::TranscriptOptions::read(&options)?;
        let what = "options.allowPending";
        let allow = get(&options.object, "allowPending", what)?;
        let allow_pending = match allow.as_bool() {
            Some(allow) => allow,
            None if allow.is_null_or_undefined() => false,
            None => return Err(must_be(what, "a boolean", type_of(&allow))),
        };
        Ok((options.messages(&messages)?, allow_pending))
    };
    let (messages, allow_pending) = read().map_err(type_error)?;
    let view = ValidateOptions { allow_pending };
    let validation = to_js(&validate_transcript_with(&messages, view));
    if allow_pending && get(&validation, "pending", "pending").is_ok_and(|p| p.is_undefined()) {
        // The paused view always says what waits, if nothing does (serde leaves an empty list out).
        define_key_js(&validation, "pending", &js_sys::Array::new());
    }
    Ok(validation)
}

/// A copy of `messages` in which every call without a result is answered by a skipped result, reason
/// `interrupted` (SPEC §8), stamped by `options.now` (default `Date.now`): `{ messages, repaired }`.
/// (Declared in `types.d.ts`.)
#[wasm_bindgen(js_name = repairTranscript, skip_typescript)]
pub fn repair_transcript_js(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let _entered = super::enter()?;
    let read = || -> Result<_, String> {
        let options = options::TranscriptOptions::read(&options)?;
        let now = optional_function(&options.object, "now", "options.now")?;
        Ok((options.messages(&messages)?, options::clock(now)))
    };
    let (messages, clock) = read().map_err(type_error)?;
    Ok(to_js(&repair_transcript(&messages, clock())))
}
