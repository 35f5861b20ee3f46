//! Reading the transcript's shapes (`crate::message`) and a tool's answers (`crate::tools`) from JSON.
//!
//! Every shape is read the same way: the JSON is parsed once into a `Value`, and each object's known fields
//! are moved out of its map; what is left is `extra`. (serde's derive with `flatten` and internally tagged
//! enums buffers every object again per level: measured slower and more code when it was tried:
//! `git show 1817a52:bench/RESULTS.md`.)
//! `from_json` is that way in for every shape the wasm bridge reads (`ReadValue`).
//!
//! An error names the field by its path from the value read, each level adding its key on the way out (so
//! nothing is spent on paths until there is an error), in one wording per kind of problem:
//! `content[0].text must be a string (got integer)`, `timestamp is missing`,
//! `role must be one of "user", "assistant", "toolResult" (got "system")`. `read_at` puts the caller's
//! name of the value in front: `messages[2].timestamp is missing`.
//!
//! Nothing here asks serde_json for a Rust type (a derived reader, `String`, `Vec`): only for a `Value`. A
//! typed read links serde's "invalid type" messages, and with them
//! Rust's float and string-escape formatting, which weigh more in the wasm module than all the readers.

use serde_json::{Map, Value};

use crate::invalid::Invalid;
use crate::message::{
    AgentMessage, AssistantBlock, AssistantMessage, CompactionEntry, CustomMessage, Extra,
    ImageContent, MediaBlock, StopReason, TextContent, ThinkingContent, ToolCall,
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
/// text that is not JSON, else the reader's (the path from the value: `timestamp is missing`).
pub fn from_json<T: ReadValue>(text: &str) -> Result<T, Invalid> {
    Ok(T::read_value(parse(text)?)?)
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

/// `value` read as `T`, an error naming the field under `path`, the caller's name of the value
/// (`context.messages[2]` gives `context.messages[2].timestamp is missing`).
pub fn read_at<T: ReadValue>(value: Value, path: &str) -> Result<T, Invalid> {
    T::read_value(value).map_err(|error| Invalid::from(at(path, &error)))
}

/// A reader's error (its path from the value read, or none when the value itself is wrong) under `path`.
pub fn at(path: &str, error: &str) -> String {
    if error.starts_with("must ") || error.starts_with("is ") {
        format!("{path} {error}")
    } else if error.starts_with('[') {
        format!("{path}{error}")
    } else {
        format!("{path}.{error}")
    }
}

/// One parser for every shape `from_json` reads (not a copy inlined into each).
#[inline(never)]
fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| match too_deep(&e) {
        true => format!("is {TOO_DEEP}"),
        false => e.to_string(),
    })
}

/// What serde_json's depth limit means for a value: JSON deeper than this is refused where it is read (a
/// value read that deep would be written, then not read back).
pub const TOO_DEEP: &str = "nested more than 128 levels deep (the most tiny-pi reads)";

/// Whether serde_json refused a text for its depth, not its syntax.
pub fn too_deep(error: &serde_json::Error) -> bool {
    error.to_string().starts_with("recursion limit exceeded")
}

impl ReadValue for Value {
    fn read_value(value: Value) -> Result<Self, String> {
        Ok(value)
    }
}

/// Each item read as `T`; an item's error names its index.
impl<T: ReadValue> ReadValue for Vec<T> {
    fn read_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Array(items) => (items.into_iter().enumerate())
                .map(|(i, item)| T::read_value(item).map_err(|e| at(&format!("[{i}]"), &e)))
                .collect(),
            other => Err(mismatch("", "an array", &other)),
        }
    }
}

/// "`key` must be `wanted` (got <the JSON type of `got`>)".
fn mismatch(key: &str, wanted: &str, got: &Value) -> String {
    let gap = if key.is_empty() { "" } else { " " };
    format!("{key}{gap}must be {wanted} (got {})", type_name(got))
}

/// "`key` is missing".
fn missing(key: &str) -> String {
    format!("{key} is missing")
}

/// The fields of one JSON object, taken out one by one; what is left is the `extra`. A shape's reader
/// takes its own fields in the order the shape writes them, so where each stood tells whether the object
/// came in that order (`extra_in_order`).
pub(crate) struct Fields {
    map: Map<String, Value>,
    /// The fields taken, in the order taken, with where each stood in the object as read (the first
    /// `TAKEN` of them: no shape has more).
    taken: [(&'static str, usize); TAKEN],
    count: usize,
}

const TAKEN: usize = 8;

impl Fields {
    pub(crate) fn of(value: Value) -> Result<Self, String> {
        match value {
            Value::Object(map) => Ok(Fields {
                map,
                taken: [("", 0); TAKEN],
                count: 0,
            }),
            other => Err(mismatch("", "an object", &other)),
        }
    }

    fn take(&mut self, key: &'static str) -> Option<Value> {
        // `shift_remove`: the fields left over (the extras) keep their order.
        let now = self.map.keys().position(|k| k == key)?;
        let value = self.map.shift_remove(key)?;
        // Where it stood as read: where it stands now, past every field taken before from ahead of it.
        let mut before: [usize; TAKEN] = [usize::MAX; TAKEN];
        let taken = self.count.min(TAKEN);
        for (slot, (_, at)) in before.iter_mut().zip(&self.taken[..taken]) {
            *slot = *at;
        }
        before[..taken].sort_unstable();
        let at = before[..taken]
            .iter()
            .fold(now, |at, &earlier| at + usize::from(earlier <= at));
        if let Some(slot) = self.taken.get_mut(self.count) {
            *slot = (key, at);
        }
        self.count += 1;
        Some(value)
    }

    pub(crate) fn string(&mut self, key: &'static str) -> Result<String, String> {
        match self.take(key) {
            Some(Value::String(text)) => Ok(text),
            Some(other) => Err(mismatch(key, "a string", &other)),
            None => Err(missing(key)),
        }
    }

    /// A number that must be there (`timestamp`).
    pub(crate) fn number(&mut self, key: &'static str) -> Result<f64, String> {
        match self.take(key) {
            Some(Value::Number(n)) => Ok(n.as_f64().unwrap_or_default()),
            Some(other) => Err(mismatch(key, "a number", &other)),
            None => Err(missing(key)),
        }
    }

    /// Absent and `null` are both `None`.
    pub(crate) fn optional_string(&mut self, key: &'static str) -> Result<Option<String>, String> {
        match self.take(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(mismatch(key, "a string", &other)),
        }
    }

    pub(crate) fn optional_bool(&mut self, key: &'static str) -> Result<Option<bool>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(mismatch(key, "a boolean", &other)),
        }
    }

    /// Whether `key` is there as `null`: a shape's optional own field that is `null` is left among the
    /// rest, so that it is written back as it came (the shape reads it as absent).
    fn null(&self, key: &'static str) -> bool {
        self.map.get(key) == Some(&Value::Null)
    }

    /// Any value but `null`.
    pub(crate) fn optional_value(&mut self, key: &'static str) -> Option<Value> {
        self.take(key).filter(|v| !v.is_null())
    }

    pub(crate) fn array<T>(
        &mut self,
        key: &'static str,
        item: fn(Value) -> Result<T, String>,
    ) -> Result<Option<Vec<T>>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| item(v).map_err(|e| at(&format!("{key}[{i}]"), &e)))
                .collect::<Result<_, _>>()
                .map(Some),
            Some(other) => Err(mismatch(key, "an array", &other)),
        }
    }

    /// The tag of a message or block read on its own may be present; it is the enum's to write, so it
    /// is checked and not kept as an extra field.
    fn tag(&mut self, key: &'static str, expected: &str) -> Result<(), String> {
        match self.take(key) {
            None => Ok(()),
            Some(Value::String(tag)) if tag == expected => Ok(()),
            Some(other) => Err(format!("{key} must be \"{expected}\" (got {other})")),
        }
    }

    /// The tag that picks the variant of a tagged enum (left in the map: the variant checks it).
    fn variant(&self, key: &'static str) -> Result<&str, String> {
        match self.map.get(key) {
            Some(Value::String(tag)) => Ok(tag),
            Some(other) => Err(mismatch(key, "a string", other)),
            None => Err(missing(key)),
        }
    }

    /// What is left, as a shape that moves between shapes keeps it (its order is not theirs).
    pub(crate) fn extra(self) -> Extra {
        Extra::from(self.map)
    }

    /// What is left of a message or block, with the order every field came in when it is not the one
    /// the shape writes (its own fields first, as taken, then the rest).
    pub(crate) fn extra_in_order(self) -> Extra {
        let taken = &self.taken[..self.count.min(TAKEN)];
        let written = self.count <= TAKEN && taken.iter().enumerate().all(|(i, (_, at))| i == *at);
        if written {
            return Extra::from(self.map);
        }
        let mut order: Vec<Option<Box<str>>> = vec![None; taken.len() + self.map.len()];
        for (key, at) in taken {
            if let Some(slot) = order.get_mut(*at) {
                *slot = Some((*key).into());
            }
        }
        let mut rest = self.map.keys();
        for slot in order.iter_mut().filter(|slot| slot.is_none()) {
            *slot = rest.next().map(|key| key.as_str().into());
        }
        let order = order.into_iter().flatten().collect();
        Extra::in_order(self.map, order)
    }
}

/// How a tagged enum reads the object its tag picked a variant for.
type Read<T> = fn(Fields) -> Result<T, String>;

/// "`key` must be one of "a", "b" (got "c")": `expected` are the names, unquoted.
pub(crate) fn unknown_tag(key: &str, tag: &str, expected: &[&str]) -> String {
    let quoted: Vec<String> = expected.iter().map(|name| format!("\"{name}\"")).collect();
    format!(
        "{key} must be one of {} (got {})",
        quoted.join(", "),
        Value::String(tag.into())
    )
}

/// Implements `ReadValue` and `from_value` through the shape's reader (`read`).
macro_rules! read_value {
    ($($ty:ty),*) => {$(
        impl ReadValue for $ty {
            fn read_value(value: Value) -> Result<Self, String> {
                Self::read(value)
            }
        }

        impl $ty {
            /// Reads the shape from a parsed JSON value; the error names the field by its path from `value`.
            pub fn from_value(value: Value) -> Result<Self, Invalid> {
                Self::read(value).map_err(Invalid::from)
            }
        }
    )*};
}

/// Implements `Deserialize` (and `ReadValue`, `from_value`) through the shape's reader (`read`).
macro_rules! deserialize_via_value {
    ($($ty:ty),*) => {$(
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
                Self::read(value).map_err(serde::de::Error::custom)
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
    fn read(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("type", "text")?;
        Ok(TextContent {
            text: f.string("text")?,
            extra: f.extra_in_order(),
        })
    }
}

impl ThinkingContent {
    fn read(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("type", "thinking")?;
        Ok(ThinkingContent {
            thinking: f.string("thinking")?,
            extra: f.extra_in_order(),
        })
    }
}

impl ImageContent {
    fn read(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("type", "image")?;
        Ok(ImageContent {
            data: f.string("data")?,
            mime_type: f.string("mimeType")?,
            extra: f.extra_in_order(),
        })
    }
}

impl ToolCall {
    fn read(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("type", "toolCall")?;
        Ok(ToolCall {
            id: f.string("id")?,
            name: f.string("name")?,
            arguments: f.take("arguments"),
            extra: f.extra_in_order(),
        })
    }
}

impl MediaBlock {
    fn read(value: Value) -> Result<Self, String> {
        let f = Fields::of(value)?;
        let read: Read<Self> = match f.variant("type")? {
            "text" => |f| TextContent::from_fields(f).map(MediaBlock::Text),
            "image" => |f| ImageContent::from_fields(f).map(MediaBlock::Image),
            other => return Err(unknown_tag("type", other, &["text", "image"])),
        };
        read(f)
    }
}

impl AssistantBlock {
    fn read(value: Value) -> Result<Self, String> {
        let f = Fields::of(value)?;
        let read: Read<Self> = match f.variant("type")? {
            "text" => |f| TextContent::from_fields(f).map(AssistantBlock::Text),
            "thinking" => |f| ThinkingContent::from_fields(f).map(AssistantBlock::Thinking),
            "toolCall" => |f| ToolCall::from_fields(f).map(AssistantBlock::ToolCall),
            other => {
                return Err(unknown_tag(
                    "type",
                    other,
                    &["text", "thinking", "toolCall"],
                ))
            }
        };
        read(f)
    }
}

impl UserContent {
    fn read(value: Value) -> Result<Self, String> {
        match value {
            Value::String(text) => Ok(UserContent::Text(text)),
            Value::Array(blocks) => (blocks.into_iter().enumerate())
                .map(|(i, block)| MediaBlock::read(block).map_err(|e| at(&format!("[{i}]"), &e)))
                .collect::<Result<_, _>>()
                .map(UserContent::Blocks),
            other => Err(mismatch("", "a string or an array", &other)),
        }
    }
}

impl UserMessage {
    fn read(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("role", "user")?;
        let content = f.take("content").ok_or_else(|| missing("content"))?;
        Ok(UserMessage {
            content: UserContent::read(content).map_err(|e| at("content", &e))?,
            timestamp: f.number("timestamp")?,
            extra: f.extra_in_order(),
        })
    }
}

impl AssistantMessage {
    /// A message on its own (a model's final message, a script's): its `role` must be there, as in a
    /// transcript, so that the message stored is the one given (a missing one was filled in).
    fn read(value: Value) -> Result<Self, String> {
        let f = Fields::of(value)?;
        f.variant("role")?;
        Self::from_fields(f)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("role", "assistant")?;
        let content = f.array("content", AssistantBlock::read)?;
        let content = content.ok_or_else(|| missing("content"))?;
        let stop_reason = f.string("stopReason")?;
        let stop_reason = StopReason::parse(&stop_reason).ok_or_else(|| {
            let reasons = StopReason::ALL.map(StopReason::as_str);
            unknown_tag("stopReason", &stop_reason, &reasons)
        })?;
        Ok(AssistantMessage {
            content,
            stop_reason,
            error_message: match f.null("errorMessage") {
                true => None,
                false => f.optional_string("errorMessage")?,
            },
            timestamp: f.number("timestamp")?,
            extra: f.extra_in_order(),
        })
    }
}

impl ToolResultMessage {
    fn read(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("role", "toolResult")?;
        Ok(ToolResultMessage {
            tool_call_id: f.string("toolCallId")?,
            tool_name: f.string("toolName")?,
            content: f
                .array("content", MediaBlock::read)?
                .ok_or_else(|| missing("content"))?,
            details: match f.null("details") {
                true => None,
                false => f.optional_value("details"),
            },
            is_error: f
                .optional_bool("isError")?
                .ok_or_else(|| missing("isError"))?,
            timestamp: f.number("timestamp")?,
            extra: f.extra_in_order(),
        })
    }
}

impl AgentMessage {
    /// A message of one of SPEC §1's roles; any other role is an error naming it.
    fn read(value: Value) -> Result<Self, String> {
        Self::read_with_roles(value, &[] as &[&str])
    }

    /// A message of one of SPEC §1's roles or of one of `custom_roles` (SPEC §7 `customRoles`), which is
    /// kept verbatim as a `CustomMessage`. Any other role is an error naming it. SPEC's own roles are
    /// read as themselves even when listed.
    pub fn from_value_with_roles(
        value: Value,
        custom_roles: &[impl AsRef<str>],
    ) -> Result<Self, Invalid> {
        Self::read_with_roles(value, custom_roles).map_err(Invalid::from)
    }

    pub(crate) fn read_with_roles(
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
                let mut expected = vec!["user", "assistant", "toolResult", "compaction"];
                expected.extend(custom_roles.iter().map(AsRef::as_ref));
                return Err(unknown_tag("role", other, &expected));
            }
        };
        read(f)
    }
}

impl CompactionEntry {
    /// `summary` a string and `firstKeptIndex` a non-negative integer (SPEC §13); `timestamp` a number;
    /// `tokensBefore` a number when present (an entry without it is kept without it).
    fn read(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        f.tag("role", "compaction")?;
        let summary = f.string("summary")?;
        let first_kept_index = match f.take("firstKeptIndex") {
            None => return Err(missing("firstKeptIndex")),
            Some(index) => match (index_of(&index), index.as_f64()) {
                (Some(n), _) => n,
                // A whole number past what an index can be here (2^53, or the target's usize).
                (None, Some(x)) if x >= 0.0 && x.fract() == 0.0 => {
                    let most = (usize::MAX as u64).min(1 << 53);
                    return Err(format!(
                        "firstKeptIndex must be at most {most} (got {index})"
                    ));
                }
                _ => return Err(mismatch("firstKeptIndex", "a non-negative integer", &index)),
            },
        };
        let tokens_before = match f.take("tokensBefore") {
            None => None,
            Some(Value::Number(n)) => n.as_f64(),
            Some(other) => return Err(mismatch("tokensBefore", "a number", &other)),
        };
        Ok(CompactionEntry {
            summary,
            first_kept_index,
            tokens_before,
            timestamp: f.number("timestamp")?,
            extra: f.extra_in_order(),
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
    fn read(value: Value) -> Result<Self, String> {
        Self::from_fields(Fields::of(value)?)
    }

    fn from_fields(mut f: Fields) -> Result<Self, String> {
        Ok(CustomMessage {
            role: f.string("role")?,
            fields: f.extra_in_order(),
        })
    }
}

// ---------------------------------------------------------------------------------------------------------
// A tool's answers.

impl ToolOutput {
    /// The known fields moved out of one parsed value.
    fn read(value: Value) -> Result<Self, String> {
        let mut f = Fields::of(value)?;
        Ok(ToolOutput {
            content: f
                .array("content", MediaBlock::read)?
                .ok_or_else(|| missing("content"))?,
            // `null` is a value (`details` is anything): kept as the tool gave it.
            details: f.take("details"),
            is_error: f.optional_bool("isError")?.unwrap_or(false),
            terminate: f.optional_bool("terminate")?.unwrap_or(false),
        })
    }
}

impl ToolReply {
    /// Known fields out of the map, the rest is `extra`.
    fn read(value: Value) -> Result<Self, String> {
        let mut f = Fields::of(value)?;
        let timestamp = match f.optional_value("timestamp") {
            Some(Value::Number(t)) => t.as_f64(),
            Some(other) => return Err(mismatch("timestamp", "a number", &other)),
            None => None,
        };
        Ok(ToolReply {
            content: f
                .array("content", MediaBlock::read)?
                .ok_or_else(|| missing("content"))?,
            // `null` is a value (`details` is anything): kept as the tool gave it.
            details: f.take("details"),
            is_error: f.optional_bool("isError")?.unwrap_or(false),
            timestamp,
            terminate: f.optional_bool("terminate")?.unwrap_or(false),
            extra: f.extra(),
        })
    }
}

/// A string field that may be absent, but not `null` (as serde's derive reads a `String` with a default).
fn string_if_there(f: &mut Fields, key: &'static str) -> Result<Option<String>, String> {
    match f.take(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(mismatch(key, "a string", &other)),
    }
}

impl ToolDefinition {
    /// `name` a string, `description` a string if there, `parameters` any value if there (else
    /// `{ "type": "object" }`); other fields are dropped.
    fn read(value: Value) -> Result<Self, String> {
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
    fn read(value: Value) -> Result<Self, String> {
        let mut f = Fields::of(value)?;
        Ok(RecordedRequest {
            system_prompt: f.optional_string("systemPrompt")?,
            messages: f
                .array("messages", AgentMessage::read)?
                .ok_or_else(|| missing("messages"))?,
            tools: f.array("tools", ToolDefinition::read)?.unwrap_or_default(),
        })
    }
}

impl TraceRecord {
    /// One record of a trace (`format_trace`, `validate_trace`); other fields are dropped.
    fn read(value: Value) -> Result<Self, String> {
        let mut f = Fields::of(value)?;
        let seq = match f.take("seq") {
            None => return Err(missing("seq")),
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
                    &[
                        "user_message",
                        "model_start",
                        "assistant_message",
                        "tool_start",
                        "tool_result",
                    ],
                )
            })?,
            owner: Owner::parse(&owner)
                .ok_or_else(|| unknown_tag("owner", &owner, &["user", "model", "loop", "tool"]))?,
            detail: f.string("detail")?,
            tool_call_id: f.optional_string("toolCallId")?,
        })
    }
}
