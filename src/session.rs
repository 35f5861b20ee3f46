//! Sessions as JSON Lines (SPEC §9): a transcript written one message per line, and read back.
//!
//! The round trip is exact: `to_jsonl` gives back the text `parse_jsonl` read, byte for byte, when that text
//! is what `to_jsonl` or JS's `JSON.stringify` wrote of the messages tiny-pi hands out (every message's own
//! fields in SPEC §1's order, its other fields as they came), and `parse_jsonl(&to_jsonl(m))` is `m`. Numbers
//! are written as JS writes them (`1700000000000`, not `1700000000000.0`; `0.000003`; `1e+21`), so a session
//! moves between a Rust app and a JS one unchanged. (One limit, serde_json's: a number with 17 significant
//! digits, such as `0.30000000000000004`, may be read back one unit in the last place off, and then written
//! so; so may an integer past 10^19 that JS writes in full. Integers up to 2^53, and numbers of up to 15
//! significant digits below 10^19, every timestamp and cost a provider writes, read back exactly. serde_json's
//! exact float reader is left out because of its size in the wasm package (bench/RESULTS.md); a JS host reads
//! and writes the objects with `JSON.parse` and `JSON.stringify`, which are exact.)
//!
//! Lines that are empty or only whitespace are skipped (a trailing newline, a blank line an editor left);
//! line numbers count them (`jsonl_lines`).

use std::fmt;

use serde_json::Value;

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

/// `messages` as JSON Lines: one message per line, each line ending with `\n` (`""` for no messages).
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

/// Reads JSON Lines written by `to_jsonl` (or by JS, one `JSON.stringify`'d message per line). A compaction
/// entry (SPEC §13) is a built-in role, read without `custom_roles`; a message of a role in `custom_roles` is
/// kept verbatim (SPEC §7); any other unknown role, a line that is not JSON, or a message of the wrong shape
/// is an error naming the line and the field.
pub fn parse_jsonl(
    text: &str,
    custom_roles: &[impl AsRef<str>],
) -> Result<Vec<AgentMessage>, JsonlError> {
    let mut messages = Vec::new();
    for (line, json) in jsonl_lines(text) {
        let error = |message| JsonlError { line, message };
        let value: Value = serde_json::from_str(json).map_err(|e| error(not_json(json, &e)))?;
        let message = AgentMessage::from_value_with_roles(value, custom_roles)
            .map_err(|reader| error(reading::at("message", &reader)))?;
        messages.push(message);
    }
    Ok(messages)
}

/// The lines of `text` that hold a message, with their numbers (1 for the first line): every line but those
/// that are empty or only whitespace. For a host that reads the messages its own way (JS's `JSON.parse`)
/// once `parse_jsonl` has found them good.
pub fn jsonl_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
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

/// A number that serde_json wrote (the shortest digits that read back as it: `1700000000000.0`, `3e-6`,
/// `1.5e-7`, `-0.0`), laid out as JS's `Number.prototype.toString` lays it out (the form `JSON.stringify`
/// uses): `1700000000000`, `0.000003`, `1.5e-7`, `0`; `1e+21` from 21 digits on.
pub(crate) fn js_number(number: &str) -> String {
    let (sign, body) = match number.strip_prefix('-') {
        Some(body) => ("-", body),
        None => ("", number),
    };
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().unwrap_or(0)),
        None => (body, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The number is 0.DIGITS × 10^point, DIGITS without leading or trailing zeros.
    let all = format!("{whole}{fraction}");
    let digits = all.trim_start_matches('0');
    let point = whole.len() as i32 + exponent - (all.len() - digits.len()) as i32;
    let digits = digits.trim_end_matches('0');
    if digits.is_empty() {
        return "0".into(); // -0 too, as JS writes it
    }
    let k = digits.len() as i32;
    let zeros = |n: i32| "0".repeat(n.max(0) as usize);
    let laid_out = if k <= point && point <= 21 {
        format!("{digits}{}", zeros(point - k))
    } else if 0 < point && point <= 21 {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    } else if -6 < point && point <= 0 {
        format!("0.{}{digits}", zeros(-point))
    } else {
        let e = point - 1;
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let e_sign = if e >= 0 { "+" } else { "-" };
        format!("{first}{dot}{rest}e{e_sign}{}", e.abs())
    };
    format!("{sign}{laid_out}")
}

/// The length of `js_number(number)`, counted without writing it (the default estimate of compaction
/// measures numbers so, `crate::estimate`).
pub(crate) fn js_number_length(number: &str) -> usize {
    let (sign, body) = match number.strip_prefix('-') {
        Some(body) => (1, body),
        None => (0, number),
    };
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().unwrap_or(0)),
        None => (body, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let count = whole.len() + fraction.len();
    let zero = |b: &u8| *b == b'0';
    let leading = whole
        .bytes()
        .chain(fraction.bytes())
        .take_while(zero)
        .count();
    if leading == count {
        return 1; // "0", -0 too
    }
    let trailing = (fraction.bytes().rev().chain(whole.bytes().rev()))
        .take_while(zero)
        .count();
    let k = (count - leading - trailing) as i32;
    let point = whole.len() as i32 + exponent - leading as i32;
    let laid_out = if k <= point && point <= 21 {
        point
    } else if 0 < point && point <= 21 {
        k + 1
    } else if -6 < point && point <= 0 {
        2 - point + k
    } else {
        let e = (point - 1).unsigned_abs();
        let e_digits = e.checked_ilog10().map_or(1, |log| log as i32 + 1);
        k + i32::from(k > 1) + 2 + e_digits
    };
    sign + laid_out as usize
}
