//! The canonical transcript (SPEC §1), in pi-ai's JSON shapes.
//!
//! Every struct keeps unknown fields in `extra` so that provider data (usage, api, model, signatures, ...)
//! survives a run unchanged.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::schema::type_name;

/// Fields a message or block carried that tiny-pi does not interpret; written back verbatim.
pub type Extra = Map<String, Value>;

// ---------------------------------------------------------------------------------------------------------
// Reading. Every shape is read the same way: the JSON is parsed once into a `Value`, and each object's
// known fields are moved out of its map; what is left is `extra`. (serde's derive with `flatten` and
// internally tagged enums buffers every object again per level: measured 3x slower and more code.)
// Errors carry no path: a refused value is walked again against `crate::shape` to name the bad field.

/// "`key`: expected `wanted`, got <the JSON type of `got`>".
fn mismatch(key: &str, wanted: &str, got: &Value) -> String {
    format!("{key}: expected {wanted}, got {}", type_name(got))
}

/// The fields of one JSON object, taken out one by one; what is left is the `extra`.
pub(crate) struct Fields(Extra);

impl Fields {
    pub(crate) fn of(value: Value) -> Result<Self, String> {
        match value {
            Value::Object(map) => Ok(Fields(map)),
            other => Err(format!("expected an object, got {}", type_name(&other))),
        }
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key)
    }

    pub(crate) fn string(&mut self, key: &str) -> Result<String, String> {
        match self.take(key) {
            Some(Value::String(text)) => Ok(text),
            Some(other) => Err(mismatch(key, "a string", &other)),
            None => Err(format!("missing field `{key}`")),
        }
    }

    /// Absent and `null` are both `None`.
    pub(crate) fn optional_string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(mismatch(key, "a string", &other)),
        }
    }

    pub(crate) fn optional_number(&mut self, key: &str) -> Result<Option<f64>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(other) => Err(mismatch(key, "a number", &other)),
        }
    }

    pub(crate) fn optional_bool(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(mismatch(key, "a boolean", &other)),
        }
    }

    /// Any value but `null`.
    pub(crate) fn optional_value(&mut self, key: &str) -> Option<Value> {
        self.take(key).filter(|v| !v.is_null())
    }

    pub(crate) fn array<T>(
        &mut self,
        key: &str,
        item: fn(Value) -> Result<T, String>,
    ) -> Result<Option<Vec<T>>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| item(v).map_err(|e| format!("{key}[{i}]: {e}")))
                .collect::<Result<_, _>>()
                .map(Some),
            Some(other) => Err(mismatch(key, "an array", &other)),
        }
    }

    /// The tag of a message or block read on its own may be present; it is the enum's to write, so it
    /// is checked and not kept as an extra field.
    fn tag(&mut self, key: &str, expected: &str) -> Result<(), String> {
        match self.take(key) {
            None => Ok(()),
            Some(Value::String(tag)) if tag == expected => Ok(()),
            Some(other) => Err(format!("{key}: expected \"{expected}\", got {other}")),
        }
    }

    /// The tag that picks the variant of a tagged enum (left in the map: the variant checks it).
    fn variant(&self, key: &str) -> Result<&str, String> {
        match self.0.get(key) {
            Some(Value::String(tag)) => Ok(tag),
            Some(other) => Err(mismatch(key, "a string", other)),
            None => Err(format!("missing field `{key}`")),
        }
    }

    pub(crate) fn extra(self) -> Extra {
        self.0
    }
}

/// How a tagged enum reads the object its tag picked a variant for.
type Read<T> = fn(Fields) -> Result<T, String>;

fn unknown_tag(key: &str, tag: &str, expected: &str) -> String {
    format!("{key}: unknown {key} \"{tag}\", expected one of {expected}")
}

/// Implements `Deserialize` through `from_value` (also for `crate::tools`' replies and outputs).
macro_rules! deserialize_via_value {
    ($($ty:ty),*) => {$(
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
                Self::from_value(value).map_err(serde::de::Error::custom)
            }
        }
    )*};
}
pub(crate) use deserialize_via_value;
deserialize_via_value!(
    TextContent,
    ThinkingContent,
    ImageContent,
    ToolCall,
    MediaBlock,
    AssistantBlock,
    UserContent,
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    AgentMessage
);

impl TextContent {
    pub fn from_value(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("type", "text")?;
        Ok(TextContent {
            text: f.string("text")?,
            extra: f.extra(),
        })
    }
}

impl ThinkingContent {
    pub fn from_value(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("type", "thinking")?;
        Ok(ThinkingContent {
            thinking: f.string("thinking")?,
            extra: f.extra(),
        })
    }
}

impl ImageContent {
    pub fn from_value(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("type", "image")?;
        Ok(ImageContent {
            data: f.string("data")?,
            mime_type: f.string("mimeType")?,
            extra: f.extra(),
        })
    }
}

impl ToolCall {
    pub fn from_value(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("type", "toolCall")?;
        Ok(ToolCall {
            id: f.string("id")?,
            name: f.string("name")?,
            arguments: f.take("arguments").unwrap_or_else(empty_object),
            extra: f.extra(),
        })
    }
}

impl MediaBlock {
    pub fn from_value(value: Value) -> Result<Self, String> {
        let f = Fields::of(value)?;
        let read: Read<Self> = match f.variant("type")? {
            "text" => |f| TextContent::from_fields(f).map(MediaBlock::Text),
            "image" => |f| ImageContent::from_fields(f).map(MediaBlock::Image),
            other => return Err(unknown_tag("type", other, "text, image")),
        };
        read(f)
    }
}

impl AssistantBlock {
    pub fn from_value(value: Value) -> Result<Self, String> {
        let f = Fields::of(value)?;
        let read: Read<Self> = match f.variant("type")? {
            "text" => |f| TextContent::from_fields(f).map(AssistantBlock::Text),
            "thinking" => |f| ThinkingContent::from_fields(f).map(AssistantBlock::Thinking),
            "toolCall" => |f| ToolCall::from_fields(f).map(AssistantBlock::ToolCall),
            other => return Err(unknown_tag("type", other, "text, thinking, toolCall")),
        };
        read(f)
    }
}

impl UserContent {
    pub fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::String(text) => Ok(UserContent::Text(text)),
            Value::Array(blocks) => blocks
                .into_iter()
                .map(MediaBlock::from_value)
                .collect::<Result<_, _>>()
                .map(UserContent::Blocks),
            other => Err(format!(
                "expected a string or an array of text/image blocks, got {}",
                type_name(&other)
            )),
        }
    }
}

impl UserMessage {
    pub fn from_value(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("role", "user")?;
        let content = f.take("content").ok_or("missing field `content`")?;
        Ok(UserMessage {
            content: UserContent::from_value(content).map_err(|e| format!("content: {e}"))?,
            timestamp: f.optional_number("timestamp")?.unwrap_or(0.0),
            extra: f.extra(),
        })
    }
}

impl AssistantMessage {
    pub fn from_value(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("role", "assistant")?;
        let content = f.array("content", AssistantBlock::from_value)?;
        let stop_reason = StopReason::from_str(&f.string("stopReason")?)?;
        Ok(AssistantMessage {
            content: content.ok_or("missing field `content`")?,
            stop_reason,
            error_message: f.optional_string("errorMessage")?,
            timestamp: f.optional_number("timestamp")?.unwrap_or(0.0),
            extra: f.extra(),
        })
    }
}

impl ToolResultMessage {
    pub fn from_value(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("role", "toolResult")?;
        Ok(ToolResultMessage {
            tool_call_id: f.string("toolCallId")?,
            tool_name: f.string("toolName")?,
            content: f
                .array("content", MediaBlock::from_value)?
                .ok_or("missing field `content`")?,
            details: f.optional_value("details"),
            is_error: f
                .optional_bool("isError")?
                .ok_or("missing field `isError`")?,
            timestamp: f.optional_number("timestamp")?.unwrap_or(0.0),
            extra: f.extra(),
        })
    }
}

impl AgentMessage {
    pub fn from_value(value: Value) -> Result<Self, String> {
        let f = Fields::of(value)?;
        let read: Read<Self> = match f.variant("role")? {
            "user" => |f| UserMessage::from_fields(f).map(AgentMessage::User),
            "assistant" => |f| AssistantMessage::from_fields(f).map(AgentMessage::Assistant),
            "toolResult" => |f| ToolResultMessage::from_fields(f).map(AgentMessage::ToolResult),
            other => return Err(unknown_tag("role", other, "user, assistant, toolResult")),
        };
        read(f)
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

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextContent {
    pub text: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThinkingContent {
    pub thinking: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    pub data: String,
    pub mime_type: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// A JSON object in well-formed calls; kept as any value so a malformed call still reaches
    /// the executor, which answers it with an error result instead of losing it.
    pub arguments: Value,
    #[serde(flatten)]
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
    pub const ALL: [StopReason; 5] = [
        StopReason::Stop,
        StopReason::Length,
        StopReason::ToolUse,
        StopReason::Error,
        StopReason::Aborted,
    ];

    /// The stop reason named `text` in pi-ai's JSON.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text)
    }

    fn from_str(text: &str) -> Result<Self, String> {
        Self::parse(text).ok_or_else(|| {
                format!("stopReason: unknown stop reason \"{text}\", expected one of stop, length, toolUse, error, aborted")
            })
    }

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

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserMessage {
    pub content: UserContent,
    /// Lenient on input (0 when missing): hand-written messages often leave it out.
    pub timestamp: f64,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<AssistantBlock>,
    pub stop_reason: StopReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Lenient on input (0 when missing): hand-written messages often leave it out.
    pub timestamp: f64,
    #[serde(flatten)]
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

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<MediaBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub is_error: bool,
    /// Lenient on input (0 when missing): hand-written messages often leave it out.
    pub timestamp: f64,
    #[serde(flatten)]
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

// ---------------------------------------------------------------------------------------------------------
// Reading lean: only what SPEC §1 defines, for a host that keeps the original message itself.

/// `Some` for any value that is there, `null` included (serde's `Option` reads `null` as absent).
pub(crate) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// An assistant message as JSON, with every field it does not name skipped unbuilt.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanMessage {
    role: String,
    content: Vec<LeanBlock>,
    stop_reason: StopReason,
    #[serde(default)]
    error_message: Option<String>,
    #[serde(default, deserialize_with = "present")]
    timestamp: Option<Value>,
}

/// Any assistant block: the fields of all three kinds, the kind picking which must be there.
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

impl LeanBlock {
    fn block(self) -> Option<AssistantBlock> {
        Some(match self.kind.as_str() {
            "text" => AssistantBlock::Text(TextContent {
                text: self.text?,
                extra: Extra::new(),
            }),
            "thinking" => AssistantBlock::Thinking(ThinkingContent {
                thinking: self.thinking?,
                extra: Extra::new(),
            }),
            "toolCall" => AssistantBlock::ToolCall(ToolCall {
                id: self.id?,
                name: self.name?,
                arguments: self.arguments.unwrap_or_else(empty_object),
                extra: Extra::new(),
            }),
            _ => return None,
        })
    }
}

impl AssistantMessage {
    /// Reads an assistant message from JSON text, skipping (without building them) the fields SPEC §1
    /// does not define: `extra` stays empty, in the message and in every block. For a host that keeps the
    /// original message itself (the wasm bridge keeps the model's JS object) and needs only what the loop
    /// decides on. `None` when the text is not plainly such a message (a missing or mistyped field, an
    /// unknown block, no `"role": "assistant"`, half a surrogate pair): the full reader then decides.
    /// Whatever this reads, the full reader reads the same, extras aside (`tests/reading.rs`).
    pub fn from_json_lean(text: &str) -> Option<AssistantMessage> {
        let lean: LeanMessage = serde_json::from_str(text).ok()?;
        if lean.role != "assistant" {
            return None;
        }
        let timestamp = match lean.timestamp {
            None => 0.0,
            Some(Value::Number(n)) => n.as_f64()?,
            Some(_) => return None,
        };
        Some(AssistantMessage {
            content: lean
                .content
                .into_iter()
                .map(LeanBlock::block)
                .collect::<Option<_>>()?,
            stop_reason: lean.stop_reason,
            error_message: lean.error_message,
            timestamp,
            extra: Extra::new(),
        })
    }
}
