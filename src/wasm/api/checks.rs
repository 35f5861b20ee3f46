//! The transcript and trace checks of SPEC §5 (chapter 00), the paused view and repair of SPEC §8: arguments
//! read, the core's check run, its answer written back.

use wasm_bindgen::prelude::*;

use super::options;
use crate::trace::TraceRecord;
use crate::transcript::{repair_transcript, validate_transcript_with, ValidateOptions};
use crate::wasm::transport::convert::{get, optional_function, to_js, type_error, type_of};

/// Checks the call/result pairing of a transcript; with `allowPending`, in the paused view (SPEC §8), whose
/// `pending` lists the calls of the last message that wait for a result. (Declared in `types.d.ts`: its
/// options are optional.)
#[wasm_bindgen(js_name = validateTranscript, skip_typescript)]
pub fn validate_transcript_js(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let read = || -> Result<_, String> {
        let options = options::TranscriptOptions::read(&options)?;
        let allow = get(&options.object, "allowPending", "options.allowPending")?;
        let allow_pending = match allow.as_bool() {
            Some(allow) => allow,
            None if allow.is_null_or_undefined() => false,
            None => {
                return Err(format!(
                    "options.allowPending must be a boolean (got {})",
                    type_of(&allow)
                ))
            }
        };
        Ok((options.messages(&messages)?, allow_pending))
    };
    let (messages, allow_pending) = read().map_err(type_error)?;
    let view = ValidateOptions { allow_pending };
    let validation = to_js(&validate_transcript_with(&messages, view));
    if allow_pending && get(&validation, "pending", "pending").is_ok_and(|p| p.is_undefined()) {
        // The paused view always says what waits, if nothing does (serde leaves an empty list out).
        let _ = js_sys::Reflect::set(&validation, &"pending".into(), &js_sys::Array::new());
    }
    Ok(validation)
}

/// The chapter-00 milestones of a transcript, each with its owner.
#[wasm_bindgen(js_name = prologueTrace, unchecked_return_type = "TraceRecord[]")]
pub fn prologue_trace_js(
    #[wasm_bindgen(unchecked_param_type = "AgentMessage[]")] messages: JsValue,
) -> Result<JsValue, JsValue> {
    let messages = options::messages(&messages).map_err(type_error)?;
    Ok(to_js(&crate::trace::prologue_trace(&messages)))
}

/// One line per record: `03 assistant_message owner=model detail="stopReason=toolUse name=read" toolCallId=call_1`.
#[wasm_bindgen(js_name = formatTrace)]
pub fn format_trace_js(
    #[wasm_bindgen(unchecked_param_type = "TraceRecord[]")] records: JsValue,
) -> Result<String, JsValue> {
    Ok(crate::trace::format_trace(&records_arg(&records)?))
}

/// Reports the trace's pairing problems with `validateTranscript`'s kinds (a call without a result is
/// "missing paired result", a result before its call "result before call").
#[wasm_bindgen(js_name = validateTrace, unchecked_return_type = "TraceValidation")]
pub fn validate_trace_js(
    #[wasm_bindgen(unchecked_param_type = "TraceRecord[]")] records: JsValue,
) -> Result<JsValue, JsValue> {
    Ok(to_js(&crate::trace::validate_trace(&records_arg(
        &records,
    )?)))
}

fn records_arg(records: &JsValue) -> Result<Vec<TraceRecord>, JsValue> {
    options::array(records, "records").map_err(type_error)
}

/// A copy of `messages` in which every call without a result is answered by a skipped result, reason
/// `interrupted` (SPEC §8), stamped by `options.now` (default `Date.now`): `{ messages, repaired }`.
/// (Declared in `types.d.ts`.)
#[wasm_bindgen(js_name = repairTranscript, skip_typescript)]
pub fn repair_transcript_js(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let read = || -> Result<_, String> {
        let options = options::TranscriptOptions::read(&options)?;
        let now = optional_function(&options.object, "now", "options.now")?;
        Ok((options.messages(&messages)?, options::clock(now)))
    };
    let (messages, clock) = read().map_err(type_error)?;
    Ok(to_js(&repair_transcript(&messages, clock())))
}
