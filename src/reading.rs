//! Reading the transcript's shapes (`crate::message`) and a tool's answers (`crate::tools`) from JSON.
//!
//! Every shape is read the same way: the JSON is parsed once into a `Value`, and each object's known fields
//! are moved out of its map; what is left is `extra`. (serde's derive with `flatten` and internally tagged
//! enums buffers every object again per level: measured slower and more code, bench/RESULTS.md.)
//! Errors carry no path: a refused value is walked again against `crate::shape` to name the bad field.
//! `from_json` is that way in for every shape the wasm bridge reads (`ReadValue`).
//!
//! Nothing here asks serde_json for a Rust type (a derived reader, `String`, `Vec`): only for a `Value`. A
//! typed read links serde's "invalid type" messages, and with them
//! Rust's float and string-escape formatting, which weigh more in the wasm module than all the readers.

use serde_json::Value;

use crate::message::{
    empty_object, AgentMessage, AssistantBlock, AssistantMessage, CompactionEntry, CustomMessage,
    Extra, ImageContent, MediaBlock, StopReason, TextContent, ThinkingContent, ToolCall,
    ToolResultMessage, UserContent, UserMessage,
};
use crate::model::RecordedRequest;
use crate::schema::type_name;
use crate::tools::{any_object, ToolDefinition, ToolOutput, ToolReply};
use crate::trace::{Owner, TraceKind, TraceRecord};

/// A shape read from a parsed JSON value by the full readers: how `from_json` reads it.
pub trait ReadValue: Sized {
    fn read_value(value: Value) -> Result<Self, String>;
}

/// `text` parsed once into a `Value`, then read as `T`; the error is serde_json's (with its position) for
/// text that is not JSON, else the reader's.
pub fn from_json<T: ReadValue>(text: &str) -> Result<T, String> {
    T::read_value(parse(text)?)
}

/// The first lone surrogate escape in JSON text, as written (`\ud800`), if there is one. JSON text can hold
/// half a surrogate pair (JS's `JSON.stringify` writes one as such an escape); a Rust string cannot, and
/// the loop never changes a string (SPEC §10), so such a text is refused, naming it.
pub fn lone_surrogate(text: &str) -> Option<&str> {
    let unit = |at: usize| {
        let hex = text.get(at + 2..at + 6)?;
        (text.as_bytes().get(at + 1) == Some(&b'u'))
            .then(|| u16::from_str_radix(hex, 16).ok())
            .flatten()
    };
    let mut at = 0;
    while let Some(found) = text[at..].find('\\') {
        let start = at + found;
        match unit(start) {
            Some(0xD800..=0xDBFF) => {
                let low = (text.as_bytes().get(start + 6) == Some(&b'\\'))
                    .then(|| unit(start + 6))
                    .flatten();
                if !matches!(low, Some(0xDC00..=0xDFFF)) {
                    return text.get(start..start + 6);
                }
                at = start + 12;
            }
            Some(0xDC00..=0xDFFF) => return text.get(start..start + 6),
            _ => at = start + 2,
        }
    }
    None
}

/// One parser for every shape `from_json` reads (not a copy inlined into each).
#[inline(never)]
fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

impl ReadValue for Value {
    fn read_value(value: Value) -> Result<Self, String> {
        Ok(value)
    }
}

/// Each item read as `T`; an item's error is the array's.
impl<T: ReadValue> ReadValue for Vec<T> {
    fn read_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Array(items) => items.into_iter().map(T::read_value).collect(),
            other => Err(format!("expected an array, got {}", type_name(&other))),
        }
    }
}

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

/// Implements `ReadValue` through `from_value`.
macro_rules! read_value {
    ($($ty:ty),*) => {$(
        impl ReadValue for $ty {
            fn read_value(value: Value) -> Result<Self, String> {
                Self::from_value(value)
            }
        }
    )*};
}

/// Implements `Deserialize` (and `ReadValue`) through `from_value`.
macro_rules! deserialize_via_value {
    ($($ty:ty),*) => {$(
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
                Self::from_value(value).map_err(serde::de::Error::custom)
            }
        }
    )*
    read_value!($($ty),*);
    };
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
    CompactionEntry,
    CustomMessage,
    AgentMessage
);
// serde's derive reads these natively (the readers below read them as it does).
read_value!(ToolDefinition, TraceRecord, RecordedRequest);

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
            "compaction" => |f| CompactionEntry::from_fields(f).map(AgentMessage::Compaction),
            role if custom_roles.iter().any(|r| r.as_ref() == role) => {
                |f| CustomMessage::from_fields(f).map(AgentMessage::Custom)
            }
            other => {
                let mut expected = String::from("user, assistant, toolResult, compaction");
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

impl CompactionEntry {
    /// `summary` a string and `firstKeptIndex` a non-negative integer (SPEC §13); `tokensBefore` and
    /// `timestamp` numbers, 0 when missing.
    pub fn from_value(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("role", "compaction")?;
        let summary = f.string("summary")?;
        let first_kept_index = match f.take("firstKeptIndex") {
            None => return Err("missing field `firstKeptIndex`".into()),
            Some(index) => match index_of(&index) {
                Some(n) => n,
                None => {
                    return Err(format!(
                        "firstKeptIndex: expected a non-negative integer, got {index}"
                    ))
                }
            },
        };
        Ok(CompactionEntry {
            summary,
            first_kept_index,
            tokens_before: f.optional_number("tokensBefore")?.unwrap_or(0.0),
            timestamp: f.optional_number("timestamp")?.unwrap_or(0.0),
            extra: f.extra(),
        })
    }
}

/// A JSON number that is a non-negative integer (`3`, or `3.0` as a host may hand it over), as an index.
fn index_of(value: &Value) -> Option<usize> {
    let n = value.as_u64().or_else(|| {
        let x = value.as_f64()?;
        (x >= 0.0 && x.fract() == 0.0 && x <= 9_007_199_254_740_992.0).then_some(x as u64)
    })?;
    usize::try_from(n).ok()
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

/// A string field that may be absent, but not `null` (as serde's derive reads a `String` with a default).
fn string_if_there(f: &mut Fields, key: &str) -> Result<Option<String>, String> {
    match f.take(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(mismatch(key, "a string", &other)),
    }
}

impl ToolDefinition {
    /// `name` a string, `description` a string if there, `parameters` any value if there (else
    /// `{ "type": "object" }`); other fields are dropped.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let mut f = Fields::of(value)?;
        Ok(ToolDefinition {
            name: f.string("name")?,
            description: string_if_there(&mut f, "description")?.unwrap_or_default(),
            parameters: f.take("parameters").unwrap_or_else(any_object),
        })
    }
}

impl RecordedRequest {
    /// A model request as JSON (`systemPrompt`, `messages`, `tools`), owned; other fields are dropped.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let mut f = Fields::of(value)?;
        Ok(RecordedRequest {
            system_prompt: f.optional_string("systemPrompt")?,
            messages: f
                .array("messages", AgentMessage::from_value)?
                .ok_or("missing field `messages`")?,
            tools: f
                .array("tools", ToolDefinition::from_value)?
                .unwrap_or_default(),
        })
    }
}

impl TraceRecord {
    /// One record of a trace (`format_trace`, `validate_trace`); other fields are dropped.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let mut f = Fields::of(value)?;
        let seq = match f.take("seq") {
            None => return Err("missing field `seq`".into()),
            Some(seq) => match seq.as_u64().map(usize::try_from) {
                Some(Ok(n)) => n,
                _ => return Err(mismatch("seq", "a non-negative integer", &seq)),
            },
        };
        let kind = f.string("kind")?;
        let owner = f.string("owner")?;
        Ok(TraceRecord {
            seq,
            kind: TraceKind::parse(&kind).ok_or_else(|| {
                unknown_tag(
                    "kind",
                    &kind,
                    "user_message, model_start, assistant_message, tool_start, tool_result",
                )
            })?,
            owner: Owner::parse(&owner)
                .ok_or_else(|| unknown_tag("owner", &owner, "user, model, loop, tool"))?,
            detail: f.string("detail")?,
            tool_call_id: f.optional_string("toolCallId")?,
        })
    }
}

// ---------------------------------------------------------------------------------------------------------
