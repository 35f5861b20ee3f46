//! The fast way in for a model's final message.
//!
//! A model turn ends with one assistant message the loop must read (its stop reason and tool calls decide
//! what happens next). It crosses as JSON, like every value (`convert::from_js`), but is read into a lean
//! shape that skips, without building them, the provider fields (usage, costs, signatures) the loop never
//! looks at. Those stay in the model's own object, which is what the run's observers, later requests and
//! result hold (`mirror.rs`), so nothing is lost.
//!
//! Anything this does not read plainly (a missing or mistyped field, an unknown block, half a surrogate
//! pair) answers `None`, and the caller reads the value through `convert::from_js`, which decides exactly
//! as before and names the bad field.

use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::JsValue;

use crate::message::{
    AssistantBlock, AssistantMessage, Extra, StopReason, TextContent, ThinkingContent, ToolCall,
};

/// `Some` for any value that is there, `null` included (serde's `Option` would read `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Lean {
    role: String,
    content: Vec<LeanBlock>,
    stop_reason: StopReason,
    #[serde(default)]
    error_message: Option<String>,
    #[serde(default, deserialize_with = "present")]
    timestamp: Option<Value>,
}

#[derive(Deserialize)]
struct LeanBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    thinking: Option<String>,
    id: Option<String>,
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Value>,
}

pub fn assistant(message: &JsValue) -> Option<AssistantMessage> {
    let text = js_sys::JSON::stringify(message).ok()?.as_string()?;
    let lean: Lean = serde_json::from_str(&text).ok()?;
    if lean.role != "assistant" {
        return None;
    }
    let timestamp = match lean.timestamp {
        None => 0.0,
        Some(Value::Number(n)) => n.as_f64()?,
        Some(_) => return None,
    };
    Some(AssistantMessage {
        content: lean.content.into_iter().map(block).collect::<Option<_>>()?,
        stop_reason: lean.stop_reason,
        error_message: lean.error_message,
        timestamp,
        extra: Extra::new(),
    })
}

fn block(block: LeanBlock) -> Option<AssistantBlock> {
    Some(match block.kind.as_str() {
        "text" => AssistantBlock::Text(TextContent {
            text: block.text?,
            extra: Extra::new(),
        }),
        "thinking" => AssistantBlock::Thinking(ThinkingContent {
            thinking: block.thinking?,
            extra: Extra::new(),
        }),
        "toolCall" => AssistantBlock::ToolCall(ToolCall {
            id: block.id?,
            name: block.name?,
            arguments: block
                .arguments
                .unwrap_or_else(|| Value::Object(Default::default())),
            extra: Extra::new(),
        }),
        _ => return None,
    })
}
