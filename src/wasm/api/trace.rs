//! The trace checks of SPEC §5 (chapter 00), in the lesson entry (`tiny-pi/lesson`): arguments read, the
//! core's check run, its answer written back.

use wasm_bindgen::prelude::*;

use super::options;
use crate::trace::TraceRecord;
use crate::wasm::transport::convert::{array_from_js, to_js, type_error};

/// The chapter-00 milestones of a transcript, each with its owner; with `customRoles`, messages of those roles
/// are read and make no record, as compaction entries make none.
#[wasm_bindgen(js_name = prologueTrace, unchecked_return_type = "TraceRecord[]")]
pub fn prologue_trace_js(
    #[wasm_bindgen(unchecked_param_type = "readonly TranscriptMessage[]")] messages: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "TranscriptOptions")] options: Option<JsValue>,
) -> Result<JsValue, JsValue> {
    let _entered = super::enter()?;
    let read = |options: &JsValue| options::TranscriptOptions::read(options)?.messages(&messages);
    let messages = read(&options.unwrap_or_default()).map_err(type_error)?;
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
    let _entered = super::enter()?;
    array_from_js(records, "records", "an array").map_err(type_error)
}
