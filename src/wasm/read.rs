//! The fast way in for a model's final message and a tool's output.
//!
//! A model turn ends with one assistant message the loop must read (its stop reason and tool calls decide
//! what happens next). It crosses as JSON, like every value (`convert::from_js`), but is read lean
//! (`AssistantMessage::from_json_lean`): the provider fields the loop never looks at (usage, costs,
//! signatures) are skipped, not built. They stay in the model's own object, which is what the run's
//! observers, later requests and result hold (`mirror.rs`), so nothing is lost. Anything not plainly an
//! assistant message answers `None`, and the caller reads it through `convert::from_js`, which decides
//! exactly as before and names the bad field.

use wasm_bindgen::JsValue;

use crate::message::AssistantMessage;
use crate::tools::ToolOutput;

fn json(value: &JsValue) -> Option<String> {
    js_sys::JSON::stringify(value).ok()?.as_string()
}

pub fn assistant(message: &JsValue) -> Option<AssistantMessage> {
    AssistantMessage::from_json_lean(&json(message)?)
}

/// A tool's output, when plainly one (`ToolOutput::from_json_lean`); nothing of it is skipped.
pub fn tool_output(output: &JsValue) -> Option<ToolOutput> {
    ToolOutput::from_json_lean(&json(output)?)
}
