//! The fast way in for a model's final message: read field by field instead of through JSON.
//!
//! A model turn ends with one assistant message the loop must read (its stop reason and tool calls decide
//! what happens next). Through JSON that is a `JSON.stringify`, a copy into wasm and a parse of every
//! provider field (usage, costs, signatures) the loop never looks at. Here only the fields of SPEC §1 are
//! read; the provider fields stay in the model's own object, which is what the run's observers, later
//! requests and result hold (`mirror.rs`), so nothing is lost.
//!
//! Anything unusual (a missing or mistyped field, an unknown block, a getter that throws, a `toJSON`)
//! answers `None`, and the caller reads the value through `convert::from_js`, which decides exactly as
//! before and names the bad field.

use js_sys::{Array, Reflect};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use super::convert::{get_key, is_array, is_object};
use crate::message::{
    AssistantBlock, AssistantMessage, Extra, StopReason, TextContent, ThinkingContent, ToolCall,
};

/// A plain object JSON would read as itself (no `toJSON` to ask first).
fn plain(value: &JsValue) -> Option<()> {
    (is_object(value) && !is_array(value) && get_key(value, "toJSON").ok()?.is_undefined())
        .then_some(())
}

fn string(object: &JsValue, key: &'static str) -> Option<String> {
    get_key(object, key).ok()?.as_string()
}

/// `undefined` and `null` are `None`, as JSON would leave them out or write null.
fn optional_string(object: &JsValue, key: &'static str) -> Option<Option<String>> {
    let value = get_key(object, key).ok()?;
    if value.is_undefined() || value.is_null() {
        return Some(None);
    }
    value.as_string().map(Some)
}

/// A JSON value through `JSON.stringify` (arbitrary data: tool arguments); `undefined` when JSON would
/// leave the field out.
fn json(value: &JsValue) -> Option<Option<Value>> {
    let text = js_sys::JSON::stringify(value).ok()?;
    match text.as_string() {
        Some(text) => serde_json::from_str(&text).ok().map(Some),
        None => Some(None),
    }
}

pub fn assistant(message: &JsValue) -> Option<AssistantMessage> {
    plain(message)?;
    if string(message, "role")? != "assistant" {
        return None;
    }
    let content = get_key(message, "content").ok()?;
    if !is_array(&content) {
        return None;
    }
    let content: &Array = content.unchecked_ref();
    let blocks = (0..content.length())
        .map(|i| block(&Reflect::get_u32(content, i).ok()?))
        .collect::<Option<Vec<_>>>()?;
    let stop_reason = StopReason::parse(&string(message, "stopReason")?)?;
    let error_message = optional_string(message, "errorMessage")?;
    let timestamp = get_key(message, "timestamp").ok()?;
    let timestamp = match timestamp.as_f64() {
        Some(t) if t.is_finite() => t,
        _ if timestamp.is_undefined() => 0.0,
        _ => return None,
    };
    Some(AssistantMessage {
        content: blocks,
        stop_reason,
        error_message,
        timestamp,
        extra: Extra::new(),
    })
}

fn block(block: &JsValue) -> Option<AssistantBlock> {
    plain(block)?;
    Some(match string(block, "type")?.as_str() {
        "text" => AssistantBlock::Text(TextContent {
            text: string(block, "text")?,
            extra: Extra::new(),
        }),
        "thinking" => AssistantBlock::Thinking(ThinkingContent {
            thinking: string(block, "thinking")?,
            extra: Extra::new(),
        }),
        "toolCall" => AssistantBlock::ToolCall(ToolCall {
            id: string(block, "id")?,
            name: string(block, "name")?,
            arguments: json(&get_key(block, "arguments").ok()?)?
                .unwrap_or_else(|| Value::Object(Default::default())),
            extra: Extra::new(),
        }),
        _ => return None,
    })
}
