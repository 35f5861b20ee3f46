//! The fast way in for a model's final message and a tool's output.
//!
//! A model turn ends with one assistant message the loop must read (its stop reason and tool calls decide
//! what happens next). It crosses as JSON, like every value (`convert::from_js`), but is read lean first
//! (`AssistantMessage::from_json_lean`): the provider fields the loop never looks at (usage, costs,
//! signatures) are skipped, not built. They stay in the model's own object, which is what the run's
//! observers, later requests and result hold (`mirror.rs`), so nothing is lost. A tool's output of the
//! usual shape (one text block) is taken apart without JSON at all (`simple_output`); other outputs are
//! read lean when there is nothing to skip (`ToolOutput::from_json_lean`). Anything else is read from the
//! same JSON text by the full reader, which decides exactly as `from_js` does and names the bad field.

use std::fmt;

use wasm_bindgen::JsValue;

use serde_json::Value;

use super::convert::{from_json_text, json_text, rust_string};
use super::glue::{
    simple_output_js, take_short_simple_text_js, take_simple_details_js, take_simple_text_js,
};
use crate::message::{AssistantMessage, MediaBlock};
use crate::tools::ToolOutput;

/// A model's final message; `what` names it in errors.
pub fn assistant(message: &JsValue, what: &str) -> Result<AssistantMessage, String> {
    let text = json_text(message, &what)?;
    AssistantMessage::from_json_lean(&text)
        .map_or_else(|| from_json_text(&text, &what, "assistant"), Ok)
}

/// What `tool`'s `execute` returned (errors name it "<tool> result").
pub fn tool_output(output: &JsValue, tool: &str) -> Result<ToolOutput, String> {
    let what = ResultOf(tool);
    if let Some(output) = simple_output(output, &what) {
        return Ok(output);
    }
    let text = json_text(output, &what)?;
    ToolOutput::from_json_lean(&text).map_or_else(|| from_json_text(&text, &what, "toolOutput"), Ok)
}

/// `{ content: [{ type: "text", text }], details?: {...}, isError?: boolean }`, taken apart by `glue.js`
/// (`simpleOutput`) without the whole output's JSON text: the output the JSON path would read from it, or
/// `None` for any other value. (Node tests check the two paths agree.)
fn simple_output(output: &JsValue, what: &dyn fmt::Display) -> Option<ToolOutput> {
    let shape = simple_output_js(output);
    if shape == NOT_SIMPLE {
        return None;
    }
    let text = if shape & SHORT_TEXT != 0 {
        take_short_simple_text_js()
    } else {
        rust_string(&take_simple_text_js())?
    };
    let details = match shape & (EMPTY_DETAILS | DETAILS_JSON) {
        EMPTY_DETAILS => Some(Value::Object(Default::default())),
        // Read as the full reader reads the same text inside the output (half a surrogate pair included).
        DETAILS_JSON => {
            Some(from_json_text(&rust_string(&take_simple_details_js())?, what, "any").ok()?)
        }
        _ => None,
    };
    Some(ToolOutput {
        content: vec![MediaBlock::text(text)],
        details,
        is_error: shape & IS_ERROR != 0,
        // `simpleOutput` answers 0 for an output with a `terminate` key: the JSON path reads it.
        terminate: false,
    })
}

// What `simpleOutput` answers (`glue.js`): 0 for any other value, else 1 with these bits.
const NOT_SIMPLE: u32 = 0;
/// `details: {}`.
const EMPTY_DETAILS: u32 = 2;
/// `isError: true`.
const IS_ERROR: u32 = 4;
/// Other details, their JSON text kept for `takeSimpleDetails`.
const DETAILS_JSON: u32 = 8;
/// A text shorter than 64 UTF-16 units, for wasm-bindgen's own string return.
const SHORT_TEXT: u32 = 16;

/// "<tool> result", written out only if an error needs it.
struct ResultOf<'a>(&'a str);

impl fmt::Display for ResultOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} result", self.0)
    }
}
