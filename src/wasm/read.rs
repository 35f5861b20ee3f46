//! The fast way in for a model's final message.
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

pub fn assistant(message: &JsValue) -> Option<AssistantMessage> {
    let text = js_sys::JSON::stringify(message).ok()?.as_string()?;
    AssistantMessage::from_json_lean(&text)
}
