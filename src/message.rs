//! The canonical transcript (SPEC §1), in pi-ai's JSON shapes.
//!
//! Every struct keeps unknown fields in `extra` so that provider data (usage, api, model, signatures, ...)
//! survives a run unchanged.

use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// Fields a message or block carried that tiny-pi does not interpret; written back verbatim.
pub type Extra = Map<String, Value>;

/// A message or block read on its own (not through its enum) may carry its tag (`role`, `type`). The tag
/// is the enum's to write, so it is checked and not kept as an extra field.
fn take_tag<E: de::Error>(extra: &mut Extra, key: &str, expected: &str) -> Result<(), E> {
    match extra.remove(key) {
        None => Ok(()),
        Some(Value::String(tag)) if tag == expected => Ok(()),
        Some(other) => Err(E::custom(format!(
            "{key}: expected \"{expected}\", got {other}"
        ))),
    }
}

macro_rules! extra_with_tag {
    ($name:ident, $key:literal, $expected:literal) => {
        fn $name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Extra, D::Error> {
            let mut extra = Extra::deserialize(deserializer)?;
            take_tag(&mut extra, $key, $expected)?;
            Ok(extra)
        }
    };
}
extra_with_tag!(user_extra, "role", "user");
extra_with_tag!(assistant_extra, "role", "assistant");
extra_with_tag!(tool_result_extra, "role", "toolResult");
extra_with_tag!(tool_call_extra, "type", "toolCall");
extra_with_tag!(text_extra, "type", "text");
extra_with_tag!(thinking_extra, "type", "thinking");
extra_with_tag!(image_extra, "type", "image");

/// Reads a tagged enum: the tag picks the variant. Buffering through `Value` reuses serde_json's code where
/// `#[serde(tag)]` would add serde's own buffering (measured: 9 KB more wasm, gzipped, for no speed gained).
/// Errors carry no path: a refused value is walked again against `crate::shape` to name the bad field.
fn by_tag<'de, D: Deserializer<'de>>(
    deserializer: D,
    key: &str,
) -> Result<(String, Value), D::Error> {
    let value = Value::deserialize(deserializer)?;
    let tag = match value.get(key) {
        Some(Value::String(tag)) => tag.clone(),
        Some(other) => {
            return Err(de::Error::custom(format!(
                "{key}: expected a string, got {other}"
            )))
        }
        None if value.is_object() => {
            return Err(de::Error::custom(format!("missing field `{key}`")))
        }
        None => {
            return Err(de::Error::custom(format!(
                "expected an object, got {value}"
            )))
        }
    };
    Ok((tag, value))
}

fn variant<T: DeserializeOwned, E: de::Error>(value: Value) -> Result<T, E> {
    T::deserialize(value).map_err(E::custom)
}

fn unknown_tag<E: de::Error>(key: &str, tag: &str, expected: &str) -> E {
    E::custom(format!(
        "{key}: unknown {key} \"{tag}\", expected one of {expected}"
    ))
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (role, value) = by_tag(deserializer, "role")?;
        match role.as_str() {
            "user" => variant(value).map(AgentMessage::User),
            "assistant" => variant(value).map(AgentMessage::Assistant),
            "toolResult" => variant(value).map(AgentMessage::ToolResult),
            other => Err(unknown_tag("role", other, "user, assistant, toolResult")),
        }
    }
}

impl<'de> Deserialize<'de> for AssistantBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (kind, value) = by_tag(deserializer, "type")?;
        match kind.as_str() {
            "text" => variant(value).map(AssistantBlock::Text),
            "thinking" => variant(value).map(AssistantBlock::Thinking),
            "toolCall" => variant(value).map(AssistantBlock::ToolCall),
            other => Err(unknown_tag("type", other, "text, thinking, toolCall")),
        }
    }
}

impl<'de> Deserialize<'de> for MediaBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (kind, value) = by_tag(deserializer, "type")?;
        match kind.as_str() {
            "text" => variant(value).map(MediaBlock::Text),
            "image" => variant(value).map(MediaBlock::Image),
            other => Err(unknown_tag("type", other, "text, image")),
        }
    }
}

impl<'de> Deserialize<'de> for UserContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(UserContent::Text(text)),
            blocks @ Value::Array(_) => variant(blocks).map(UserContent::Blocks),
            other => Err(de::Error::custom(format!(
                "expected a string or an array of text/image blocks, got {}",
                crate::schema::type_name(&other)
            ))),
        }
    }
}

/// A struct serialized on its own with the tag its enum would write, so that it has pi-ai's JSON shape:
/// `{"role": "toolResult", ...}`, `{"type": "toolCall", ...}`.
#[derive(Serialize)]
pub struct WithRole<'a, T> {
    role: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

#[derive(Serialize)]
pub struct WithType<'a, T> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

/// `serialize_with` helpers for fields that hold one message or call.
pub mod tagged {
    use std::borrow::Borrow;

    use serde::{Serialize, Serializer};

    use super::{AssistantMessage, ToolCall, ToolResultMessage};

    pub fn assistant<S: Serializer>(
        m: &impl Borrow<AssistantMessage>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        m.borrow().tagged().serialize(s)
    }

    pub fn tool_result<S: Serializer>(
        m: &impl Borrow<ToolResultMessage>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        m.borrow().tagged().serialize(s)
    }

    pub fn tool_call<S: Serializer>(c: &impl Borrow<ToolCall>, s: S) -> Result<S::Ok, S::Error> {
        c.borrow().tagged().serialize(s)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    pub text: String,
    #[serde(flatten, deserialize_with = "text_extra")]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingContent {
    pub thinking: String,
    #[serde(flatten, deserialize_with = "thinking_extra")]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    pub data: String,
    pub mime_type: String,
    #[serde(flatten, deserialize_with = "image_extra")]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// A JSON object in well-formed calls; kept as any value so a malformed call still reaches
    /// the executor, which answers it with an error result instead of losing it.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    #[serde(flatten, deserialize_with = "tool_call_extra")]
    pub extra: Extra,
}

impl ToolCall {
    /// This call with `"type": "toolCall"`, as it looks on its own.
    pub fn tagged(&self) -> WithType<'_, Self> {
        WithType {
            kind: "toolCall",
            inner: self,
        }
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// A block of user or tool-result content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum MediaBlock {
    Text(TextContent),
    Image(ImageContent),
}

/// A block of assistant content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantBlock {
    Text(TextContent),
    Thinking(ThinkingContent),
    ToolCall(ToolCall),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<MediaBlock>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    pub content: UserContent,
    /// Lenient on input (0 when missing): hand-written messages often leave it out.
    #[serde(default)]
    pub timestamp: f64,
    #[serde(flatten, deserialize_with = "user_extra")]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<AssistantBlock>,
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Lenient on input (0 when missing): hand-written messages often leave it out.
    #[serde(default)]
    pub timestamp: f64,
    #[serde(flatten, deserialize_with = "assistant_extra")]
    pub extra: Extra,
}

impl AssistantMessage {
    /// This message with `"role": "assistant"`, as it looks on its own.
    pub fn tagged(&self) -> WithRole<'_, Self> {
        WithRole {
            role: "assistant",
            inner: self,
        }
    }

    /// A message with no provider fields, handy for scripts and tests.
    pub fn new(content: Vec<AssistantBlock>, stop_reason: StopReason) -> Self {
        AssistantMessage {
            content,
            stop_reason,
            error_message: None,
            timestamp: 0.0,
            extra: Extra::new(),
        }
    }

    /// The tool calls of this message, in content order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            AssistantBlock::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<MediaBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub is_error: bool,
    /// Lenient on input (0 when missing): hand-written messages often leave it out.
    #[serde(default)]
    pub timestamp: f64,
    #[serde(flatten, deserialize_with = "tool_result_extra")]
    pub extra: Extra,
}

impl ToolResultMessage {
    /// This result with `"role": "toolResult"`, as it looks on its own.
    pub fn tagged(&self) -> WithRole<'_, Self> {
        WithRole {
            role: "toolResult",
            inner: self,
        }
    }

    /// An error result answering `call`: the text is kept, nothing else (never a stack).
    pub fn error(call: &ToolCall, text: impl Into<String>, timestamp: f64) -> Self {
        ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: vec![MediaBlock::text(text)],
            details: None,
            is_error: true,
            timestamp,
            extra: Extra::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum AgentMessage {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

impl MediaBlock {
    pub fn text(text: impl Into<String>) -> Self {
        MediaBlock::Text(TextContent {
            text: text.into(),
            extra: Extra::new(),
        })
    }
}

impl AssistantBlock {
    pub fn text(text: impl Into<String>) -> Self {
        AssistantBlock::Text(TextContent {
            text: text.into(),
            extra: Extra::new(),
        })
    }

    pub fn thinking(thinking: impl Into<String>) -> Self {
        AssistantBlock::Thinking(ThinkingContent {
            thinking: thinking.into(),
            extra: Extra::new(),
        })
    }

    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        AssistantBlock::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            extra: Extra::new(),
        })
    }
}

impl AgentMessage {
    pub fn user(text: impl Into<String>, timestamp: f64) -> Self {
        AgentMessage::User(UserMessage {
            content: UserContent::Text(text.into()),
            timestamp,
            extra: Extra::new(),
        })
    }

    pub fn role(&self) -> &'static str {
        match self {
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
        }
    }
}
