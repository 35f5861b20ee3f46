//! Reading the transcript's shapes (`crate::message`) and a tool's answers (`crate::tools`) from JSON.
//!
//! Every shape is read the same way: the JSON is parsed once into a `Value`, and each object's known fields
//! are moved out of its map; what is left is `extra`. (serde's derive with `flatten` and internally tagged
//! enums buffers every object again per level: measured slower and more code, bench/RESULTS.md.)
//! Errors carry no path: a refused value is walked again against `crate::shape` to name the bad field.
//!
//! The lean readers at the end read only what SPEC §1 defines, for a host that keeps the original value
//! itself (the wasm bridge keeps the model's JS object); whatever they read, the full readers read the same
//! (`tests/reading.rs`).

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::message::{
    empty_object, AgentMessage, AssistantBlock, AssistantMessage, CustomMessage, Extra,
    ImageContent, MediaBlock, StopReason, TextContent, ThinkingContent, ToolCall,
    ToolResultMessage, UserContent, UserMessage,
};
use crate::schema::type_name;
use crate::tools::{ToolOutput, ToolReply};

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
        // `shift_remove`: the fields left over (the extras) keep their order.
        self.0.shift_remove(key)
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

/// Implements `Deserialize` through `from_value`.
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
deserialize_via_value!(
    ToolOutput,
    ToolReply,
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
    CustomMessage,
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
    /// A message of one of SPEC §1's roles; any other role is an error naming it.
    pub fn from_value(value: Value) -> Result<Self, String> {
        Self::from_value_with_roles(value, &[] as &[&str])
    }

    /// A message of one of SPEC §1's roles or of one of `custom_roles` (SPEC §7 `customRoles`), which is
    /// kept verbatim as a `CustomMessage`. Any other role is an error naming it. SPEC's own roles are
    /// read as themselves even when listed.
    pub fn from_value_with_roles(
        value: Value,
        custom_roles: &[impl AsRef<str>],
    ) -> Result<Self, String> {
        let f = Fields::of(value)?;
        let read: Read<Self> = match f.variant("role")? {
            "user" => |f| UserMessage::from_fields(f).map(AgentMessage::User),
            "assistant" => |f| AssistantMessage::from_fields(f).map(AgentMessage::Assistant),
            "toolResult" => |f| ToolResultMessage::from_fields(f).map(AgentMessage::ToolResult),
            role if custom_roles.iter().any(|r| r.as_ref() == role) => {
                |f| CustomMessage::from_fields(f).map(AgentMessage::Custom)
            }
            other => {
                let mut expected = String::from("user, assistant, toolResult");
                for role in custom_roles {
                    expected.push_str(", ");
                    expected.push_str(role.as_ref());
                }
                return Err(unknown_tag("role", other, &expected));
            }
        };
        read(f)
    }
}

impl CustomMessage {
    /// A message of any role, kept verbatim (whether its role is a custom one is the caller's to check:
    /// `AgentMessage::from_value_with_roles` does).
    pub fn from_value(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        Ok(CustomMessage {
            role: f.string("role")?,
            fields: f.extra(),
        })
    }
}

// ---------------------------------------------------------------------------------------------------------
// A tool's answers.

impl ToolOutput {
    /// The known fields moved out of one parsed value.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let mut f = Fields::of(value)?;
        Ok(ToolOutput {
            content: f
                .array("content", MediaBlock::from_value)?
                .ok_or("missing field `content`")?,
            details: f.optional_value("details"),
            is_error: f.optional_bool("isError")?.unwrap_or(false),
            terminate: f.optional_bool("terminate")?.unwrap_or(false),
        })
    }

    /// Reads a tool's output from JSON text when it is plainly one (see `LeanOutput`), without building a
    /// value per block first; `None` otherwise, and the full reader decides. Whatever this reads, the full
    /// reader reads the same (`tests/reading.rs`).
    pub fn from_json_lean(text: &str) -> Option<ToolOutput> {
        let lean: LeanOutput = serde_json::from_str(text).ok()?;
        if lean.terminate.is_some() {
            return None;
        }
        let is_error = match lean.is_error {
            None => false,
            Some(Value::Bool(b)) => b,
            Some(_) => return None,
        };
        Some(ToolOutput {
            content: lean
                .content
                .into_iter()
                .map(LeanMedia::block)
                .collect::<Option<_>>()?,
            details: lean.details.filter(|d| !d.is_null()),
            is_error,
            terminate: false,
        })
    }
}

/// A tool's output as JSON, read only when plainly `{ content, details?, isError? }` with blocks that carry no
/// field beyond SPEC's: then nothing is skipped, and nothing needs a map of extras. (An output that asks to
/// `terminate` is rare: the full reader reads it.)
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanOutput {
    content: Vec<LeanMedia>,
    #[serde(default, deserialize_with = "present")]
    details: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    is_error: Option<Value>,
    #[serde(default, deserialize_with = "there")]
    terminate: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LeanMedia {
    #[serde(rename = "type")]
    kind: String,
    // `null` is there too: in a block of the other kind it is a field to keep.
    #[serde(default, deserialize_with = "present")]
    text: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    data: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    mime_type: Option<Value>,
}

impl LeanMedia {
    fn block(self) -> Option<MediaBlock> {
        use Value::String as S;
        match (self.kind.as_str(), self.text, self.data, self.mime_type) {
            ("text", Some(S(text)), None, None) => Some(MediaBlock::text(text)),
            ("image", None, Some(S(data)), Some(S(mime_type))) => {
                Some(MediaBlock::Image(ImageContent {
                    data,
                    mime_type,
                    extra: Extra::new(),
                }))
            }
            _ => None,
        }
    }
}

impl ToolReply {
    /// Known fields out of the map, the rest is `extra`.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let mut f = Fields::of(value)?;
        let timestamp = match f.optional_value("timestamp") {
            Some(t) => Some(t.as_f64().ok_or("timestamp: expected a number")?),
            None => None,
        };
        Ok(ToolReply {
            content: f
                .array("content", MediaBlock::from_value)?
                .unwrap_or_default(),
            details: f.optional_value("details"),
            is_error: f.optional_bool("isError")?.unwrap_or(false),
            timestamp,
            terminate: f.optional_bool("terminate")?.unwrap_or(false),
            extra: f.extra(),
        })
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

/// `Some` for a field that is there, whatever its value (not built).
fn there<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<IgnoredAny>, D::Error> {
    IgnoredAny::deserialize(deserializer).map(Some)
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
