//! The default token estimate of compaction (SPEC §13): `ceil(JSON.stringify(message).length / 4)`.
//!
//! The length is counted, not written: the message's JSON (as `to_jsonl` writes one line of it, numbers laid
//! out as JS lays them out) is walked field by field and measured in UTF-16 code units, as JS measures a
//! string. No text is built and nothing is allocated (a number with a fraction is formatted on the stack,
//! by serde_json's own float writer, to be measured): a run with compaction set estimates each message it
//! appends, and that must stay cheap when compaction never happens. `tests/part_three.rs` holds the count
//! to the written JSON's length.

use serde_json::Value;

use crate::js_number::js_number_length;
use crate::message::{
    AgentMessage, AssistantBlock, AssistantMessage, CompactionEntry, CustomMessage, MediaBlock,
    ToolCall, ToolResultMessage, UserContent, UserMessage,
};

/// `ceil(JSON.stringify(message).length / 4)`.
pub fn default_estimate(message: &AgentMessage) -> f64 {
    json_length(message).div_ceil(4) as f64
}

/// The length of `message`'s JSON text (one `to_jsonl` line without its newline), in UTF-16 code units.
pub fn json_length(message: &AgentMessage) -> usize {
    match message {
        AgentMessage::User(m) => user(m),
        AgentMessage::Assistant(m) => assistant(m),
        AgentMessage::ToolResult(m) => tool_result(m),
        AgentMessage::Compaction(m) => compaction(m),
        AgentMessage::Custom(m) => custom(m),
    }
}

/// Counts one object's fields: `{`, then each `"key":value` after a comma but the first, then `}`.
struct Object(usize);

impl Object {
    fn new() -> Self {
        Object(1)
    }

    /// A field of tiny-pi's own shapes: its key is plain ASCII, written as it is.
    fn field(mut self, key: &'static str, value: usize) -> Self {
        if self.0 > 1 {
            self.0 += 1;
        }
        self.0 += key.len() + 3 + value;
        self
    }

    /// A field of any key.
    fn any_field(mut self, key: &str, value: usize) -> Self {
        if self.0 > 1 {
            self.0 += 1;
        }
        self.0 += string(key) + 1 + value;
        self
    }

    fn maybe(self, key: &'static str, value: Option<usize>) -> Self {
        match value {
            Some(value) => self.field(key, value),
            None => self,
        }
    }

    fn extra(self, extra: &serde_json::Map<String, Value>) -> Self {
        extra.iter().fold(self, |object, (key, value)| {
            object.any_field(key, json(value))
        })
    }

    fn end(self) -> usize {
        self.0 + 1
    }
}

fn user(m: &UserMessage) -> usize {
    let content = match &m.content {
        UserContent::Text(text) => string(text),
        UserContent::Blocks(blocks) => array(blocks.iter().map(media)),
    };
    (Object::new().field("role", string("user")))
        .field("content", content)
        .field("timestamp", number(m.timestamp))
        .extra(&m.extra)
        .end()
}

fn assistant(m: &AssistantMessage) -> usize {
    (Object::new().field("role", string("assistant")))
        .field("content", array(m.content.iter().map(assistant_block)))
        .field("stopReason", string(m.stop_reason.as_str()))
        .maybe("errorMessage", m.error_message.as_deref().map(string))
        .field("timestamp", number(m.timestamp))
        .extra(&m.extra)
        .end()
}

fn tool_result(m: &ToolResultMessage) -> usize {
    (Object::new().field("role", string("toolResult")))
        .field("toolCallId", string(&m.tool_call_id))
        .field("toolName", string(&m.tool_name))
        .field("content", array(m.content.iter().map(media)))
        .maybe("details", m.details.as_ref().map(json))
        .field("isError", boolean(m.is_error))
        .field("timestamp", number(m.timestamp))
        .extra(&m.extra)
        .end()
}

fn compaction(m: &CompactionEntry) -> usize {
    (Object::new().field("role", string("compaction")))
        .field("summary", string(&m.summary))
        .field("firstKeptIndex", digits(m.first_kept_index as u64))
        .maybe("tokensBefore", m.tokens_before.map(number))
        .field("timestamp", number(m.timestamp))
        .extra(&m.extra)
        .end()
}

fn custom(m: &CustomMessage) -> usize {
    (Object::new().field("role", string(&m.role)))
        .extra(&m.fields)
        .end()
}

fn media(block: &MediaBlock) -> usize {
    match block {
        MediaBlock::Text(t) => (Object::new().field("type", string("text")))
            .field("text", string(&t.text))
            .extra(&t.extra)
            .end(),
        MediaBlock::Image(i) => (Object::new().field("type", string("image")))
            .field("data", string(&i.data))
            .field("mimeType", string(&i.mime_type))
            .extra(&i.extra)
            .end(),
    }
}

fn assistant_block(block: &AssistantBlock) -> usize {
    match block {
        AssistantBlock::Text(t) => (Object::new().field("type", string("text")))
            .field("text", string(&t.text))
            .extra(&t.extra)
            .end(),
        AssistantBlock::Thinking(t) => (Object::new().field("type", string("thinking")))
            .field("thinking", string(&t.thinking))
            .extra(&t.extra)
            .end(),
        AssistantBlock::ToolCall(call) => tool_call(call),
    }
}

fn tool_call(call: &ToolCall) -> usize {
    (Object::new().field("type", string("toolCall")))
        .field("id", string(&call.id))
        .field("name", string(&call.name))
        .maybe("arguments", call.arguments.as_ref().map(json))
        .extra(&call.extra)
        .end()
}

/// `[`, the items' lengths with a comma between, `]`.
fn array(items: impl Iterator<Item = usize>) -> usize {
    let (count, sum) = items.fold((0usize, 0usize), |(count, sum), length| {
        (count + 1, sum + length)
    });
    2 + sum + count.saturating_sub(1)
}

fn json(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(b) => boolean(*b),
        Value::Number(n) => match n.as_u64() {
            Some(u) => digits(u),
            None => match n.as_i64() {
                Some(i) => 1 + digits(i.unsigned_abs()),
                None => n.as_f64().map_or(4, number),
            },
        },
        Value::String(text) => string(text),
        Value::Array(items) => array(items.iter().map(json)),
        Value::Object(map) => Object::new().extra(map).end(),
    }
}

fn boolean(b: bool) -> usize {
    if b {
        4
    } else {
        5
    }
}

/// A JSON string: its quotes, and each character as JSON writes it (`\"`, `\n`, `\u0001`), in UTF-16
/// code units (a character beyond the BMP is two).
fn string(text: &str) -> usize {
    // Most strings are printable ASCII with nothing to escape: one unit a byte. (A fold, not `all`: no
    // early exit, so the check runs over whole words.)
    let plain = (text.bytes()).fold(true, |plain, b| {
        plain & (0x20..0x80).contains(&b) & (b != b'"') & (b != b'\\')
    });
    if plain {
        return text.len() + 2;
    }
    let escaped: usize = (text.bytes())
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0A | 0x0C | 0x0D => 2,
            0x00..=0x1F => 6,
            0x20..=0x7F => 1,
            // A continuation byte: its character was counted at its first byte.
            0x80..=0xBF => 0,
            // The first byte of a four-byte character: a surrogate pair in UTF-16.
            0xF0..=0xFF => 2,
            _ => 1,
        })
        .sum();
    escaped + 2
}

/// A number as JS writes it: an integer below 10^21 in full (`1700000000000`, `-0` as `0`); anything
/// else as `js_number` lays it out. Not finite: `null`, as JSON writes it.
fn number(x: f64) -> usize {
    if !x.is_finite() {
        return 4;
    }
    let sign = usize::from(x < 0.0);
    let magnitude = x.abs();
    if magnitude < 1e19 {
        // An integer (a timestamp, a count) is its digits (a cast, not `fract`: a libm call).
        let whole = magnitude as u64;
        if whole as f64 == magnitude {
            return match whole {
                0 => 1,
                _ => sign + digits(whole),
            };
        }
    } else if magnitude < 1e21 && magnitude.fract() == 0.0 {
        return sign + if magnitude < 1e20 { 20 } else { 21 };
    }
    // The shortest digits that read back as `x`, as serde_json writes them (its writer, zmij).
    js_number_length(zmij::Buffer::new().format_finite(x))
}

/// The decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}
