//! How what a JS tool returns is read: a registered tool's output (`{ content, details?, isError? }`) and a
//! caller's `executeToolCall` (or tool source's `execute`) reply. Each is read the first way that applies, and every way reads the same
//! value the same (Node tests and `tests/reading.rs` check it):
//!
//! 1. The usual output, one text block with perhaps plain `details` and a boolean `isError`, is taken apart
//!    by `glue.js` (`simpleOutput`) without a JSON text of the whole output (`simple`).
//! 2. Any other output crosses as JSON (`JSON.stringify`) and is read lean when it carries nothing to skip
//!    (`ToolOutput::from_json_lean` in `crate::reading`).
//! 3. Else the full reader reads the same text, decides exactly as `convert::from_js` does, and names the
//!    bad field (`crate::shape`'s `toolOutput` / `toolReply`).

use std::fmt;

use serde_json::Value;
use wasm_bindgen::JsValue;

use super::convert::{from_json_text, json_text, rust_string};
use super::glue::{
    simple_output_js, take_short_simple_text_js, take_simple_details_js, take_simple_text_js,
};
use super::protocol::{OutputBit, OutputBits};
use crate::message::MediaBlock;
use crate::tools::{ToolOutput, ToolReply};

/// What `tool`'s `execute` returned (errors name it "<tool> result").
pub fn read(output: &JsValue, tool: &str) -> Result<ToolOutput, String> {
    let what = ResultOf(tool);
    if let Some(output) = simple(output, &what)? {
        return Ok(output);
    }
    let text = json_text(output, &what)?;
    ToolOutput::from_json_lean(&text).map_or_else(|| from_json_text(&text, &what, "toolOutput"), Ok)
}

/// What `options.executeToolCall` (or a tool source's `execute`; `executor` names which) resolved with.
pub fn read_reply(reply: &JsValue, executor: &str) -> Result<ToolReply, String> {
    let what = ResultOf(executor);
    from_json_text(&json_text(reply, &what)?, &what, "toolReply")
}

/// `{ content: [{ type: "text", text }], details?: {...}, isError?: boolean }`, taken apart by `glue.js`:
/// the output the JSON path would read from it, or `None` for any other value.
fn simple(output: &JsValue, what: &dyn fmt::Display) -> Result<Option<ToolOutput>, String> {
    let bits = match simple_output_js(output) {
        0 => return Ok(None),
        bits => OutputBit::set(bits).map_err(|e| format!("{what}: {e}"))?,
    };
    Ok(simple_parts(bits, what))
}

/// The parts `simpleOutput` kept, taken as its bits say; `None` (the JSON path decides) for a text or
/// details that do not read as the JSON path would read them.
fn simple_parts(bits: OutputBits, what: &dyn fmt::Display) -> Option<ToolOutput> {
    let text = if bits.has(OutputBit::ShortText) {
        take_short_simple_text_js()
    } else {
        rust_string(&take_simple_text_js())?
    };
    let details = if bits.has(OutputBit::EmptyDetails) {
        Some(Value::Object(Default::default()))
    } else if bits.has(OutputBit::DetailsJson) {
        // Read as the full reader reads the same text inside the output (half a surrogate pair included).
        Some(from_json_text(&rust_string(&take_simple_details_js())?, what, "any").ok()?)
    } else {
        None
    };
    Some(ToolOutput {
        content: vec![MediaBlock::text(text)],
        details,
        is_error: bits.has(OutputBit::IsError),
        // `simpleOutput` answers 0 for an output with a `terminate` key: the JSON path reads it.
        terminate: false,
    })
}

/// "<tool> result", written out only if an error needs it.
struct ResultOf<'a>(&'a str);

impl fmt::Display for ResultOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} result", self.0)
    }
}
