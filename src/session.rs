//! Sessions as JSON Lines (SPEC §9): a transcript written one message per line, and read back.
//!
//! The round trip is exact: `to_jsonl` gives back the text `parse_jsonl` read, byte for byte, when that text
//! is what `to_jsonl` or JS's `JSON.stringify` wrote of the messages tiny-pi hands out (every message's own
//! fields in SPEC §1's order, its other fields as they came), and `parse_jsonl(&to_jsonl(m))` is `m` (with
//! `parse_jsonl_with_roles` when `m` holds custom-role messages). Numbers
//! are written as JS writes them (`1700000000000`, not `1700000000000.0`; `0.000003`; `1e+21`), so a session
//! moves between a Rust app and a JS one unchanged, and every finite number is read back as the very double
//! it was (serde_json's `float_roundtrip`: a cost such as `0.0036780000000000003`, which pi-ai's price times
//! tokens gives, came back `0.003678` without it).
//!
//! Lines that are empty or only whitespace are skipped (a trailing newline, a blank line an editor left);
//! line numbers count them (`jsonl_lines`).

use std::fmt;

use serde_json::Value;

use crate::js_number::js_number;
use crate::message::AgentMessage;
use crate::reading;

/// A line `parse_jsonl` could not read: its number (1 for the first) and what is wrong, naming the field
/// (`line 3: message.content[0].text must be a string (got number)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonlError {
    /// 1 for the first line; blank lines count.
    pub line: usize,
    /// What is wrong, the field first.
    pub message: String,
}

impl fmt::Display for JsonlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for JsonlError {}

/// `messages` as JSON Lines: one message per line, each line ending with `\n` (`""` for no messages). A
/// number is written as JS writes it, so a float with no fraction (`json!(12.0)`) reads back as the integer
/// `12` (`parse_jsonl`): in JS terms the same message, in Rust's `==` on `serde_json::Value` another one; compare
/// such numbers by value (`as_f64`).
pub fn to_jsonl(messages: &[AgentMessage]) -> String {
    let mut out = String::new();
    for message in messages {
        // A message is always a JSON object (its map keys are strings), so this cannot fail.
        let json = serde_json::to_string(message).unwrap_or_default();
        js_numbers(&json, &mut out);
        out.push('\n');
    }
    out
}

/// Reads JSON Lines written by `to_jsonl` (or by JS, one `JSON.stringify`'d message per line): messages of
/// SPEC's roles, a compaction entry (SPEC §13) among them. An unknown role, a line that is not JSON, or a
/// message of the wrong shape is an error naming the line and the field.
pub fn parse_jsonl(text: &str) -> Result<Vec<AgentMessage>, JsonlError> {
    parse_jsonl_with_roles(text, &[] as &[&str])
}

/// `parse_jsonl`, a message of a role in `custom_roles` kept verbatim (SPEC §7).
pub fn parse_jsonl_with_roles(
    text: &str,
    custom_roles: &[impl AsRef<str>],
) -> Result<Vec<AgentMessage>, JsonlError> {
    let mut messages = Vec::new();
    for (line, json) in jsonl_lines(text) {
        let error = |message| JsonlError { line, message };
        let value: Value = serde_json::from_str(json).map_err(|e| error(not_json(json, &e)))?;
        let message = AgentMessage::read_with_roles(value, custom_roles)
            .map_err(|reader| error(reading::at("message", &reader)))?;
        messages.push(message);
    }
    Ok(messages)
}

/// The lines of `text` that hold a message, with their numbers (1 for the first line): every line but those
/// that are empty or only whitespace. For a host that reads the messages its own way (JS's `JSON.parse`)
/// once `parse_jsonl` has found them good.
pub fn jsonl_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    // A byte order mark (an editor's, on Windows) is not part of the first line's JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    (text.split('\n').enumerate())
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| (index + 1, line))
}

/// "not valid JSON: <what serde_json says> at column N" (its own line number is always 1 here), or what a
/// lone surrogate is.
fn not_json(line: &str, error: &serde_json::Error) -> String {
    if let Some(escape) = crate::reading::lone_surrogate(line) {
        return format!(
            "a string holds a lone surrogate ({escape}), which tiny-pi never changes and cannot keep"
        );
    }
    if crate::reading::too_deep(error) {
        return crate::reading::TOO_DEEP.into();
    }
    let text = error.to_string();
    let what = text
        .rsplit_once(" at line ")
        .map_or(&*text, |(what, _)| what);
    format!("not valid JSON: {what} at column {}", error.column())
}

/// Appends `json` (compact JSON as serde_json writes it) to `out` with each number that is not an integer
/// (serde_json's `1700000000000.0`, `3e-6`) written as JS writes it. Done on the text serde_json wrote, so
/// that no second serializer is built for the messages (the wasm package's size).
fn js_numbers(json: &str, out: &mut String) {
    let bytes = json.as_bytes();
    let (mut at, mut copied, mut in_string) = (0, 0, false);
    while at < bytes.len() {
        match (in_string, bytes[at]) {
            (true, b'\\') => at += 1, // the escaped byte is skipped with it
            (true, b'"') | (false, b'"') => in_string = !in_string,
            (false, b'-' | b'0'..=b'9') => {
                let end = (bytes[at..].iter())
                    .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .map_or(bytes.len(), |length| at + length);
                let number = &json[at..end];
                if number.contains(['.', 'e', 'E']) {
                    out.push_str(&json[copied..at]);
                    out.push_str(&js_number(number));
                    copied = end;
                }
                at = end;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    out.push_str(&json[copied..]);
}
