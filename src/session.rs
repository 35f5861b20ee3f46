//! Sessions as JSON Lines (SPEC §9): a transcript written one message per line, and read back.
//!
//! The round trip is exact: `parse_jsonl(&to_jsonl(m))` gives `m` again, and `to_jsonl` gives back the text
//! `parse_jsonl` read, byte for byte, when that text is what `to_jsonl` or JS's `JSON.stringify` wrote of the
//! messages tiny-pi hands out (every message's own fields in SPEC §1's order, its other fields as they
//! came). Numbers are written as JS writes them (`1700000000000`, not `1700000000000.0`; `0.000003`,
//! `1e+21`), so a session moves between a Rust app and a JS one unchanged. Lines that are empty or only
//! whitespace are skipped (a trailing newline, a blank line an editor left), and line numbers count them.

use std::fmt;

use serde_json::Value;

use crate::message::AgentMessage;
use crate::shape;

/// A line `parse_jsonl` could not read: its number (1 for the first) and what is wrong, naming the field
/// (`line 3: content[0].text: expected string, got number`).
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
        let value = serde_json::to_value(message).unwrap_or_default();
        write_js(&value, &mut out);
        out.push('\n');
    }
    out
}

/// Reads JSON Lines written by `to_jsonl` (or by JS, one `JSON.stringify`'d message per line). A message of
/// a role in `custom_roles` is kept verbatim (SPEC §7); any other unknown role, a line that is not JSON, or
/// a message of the wrong shape is an error naming the line and the field.
pub fn parse_jsonl(
    text: &str,
    custom_roles: &[impl AsRef<str>],
) -> Result<Vec<AgentMessage>, JsonlError> {
    let mut messages = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let error = |message| JsonlError {
            line: index + 1,
            message,
        };
        let value: Value = serde_json::from_str(line).map_err(|e| error(not_json(&e)))?;
        let message = AgentMessage::from_value_with_roles(value, custom_roles)
            .map_err(|reader| error(explain(line, reader)))?;
        messages.push(message);
    }
    Ok(messages)
}

/// "not valid JSON: <what serde_json says> at column N" (its own line number is always 1 here).
fn not_json(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let what = text
        .rsplit_once(" at line ")
        .map_or(&*text, |(what, _)| what);
    format!("not valid JSON: {what} at column {}", error.column())
}

/// Why a line that is JSON is not a message: the first field that breaks SPEC §1's shape when the line has
/// one of its roles (the reader's own words carry no path), else the reader's error (an unknown role).
fn explain(line: &str, reader: String) -> String {
    let value: Value = serde_json::from_str(line).unwrap_or_default();
    let known = matches!(
        value.get("role").and_then(Value::as_str),
        Some("user" | "assistant" | "toolResult")
    );
    let path = known
        .then(|| shape::explain("message", &value, "message"))
        .flatten();
    path.unwrap_or(reader)
}

/// Writes `value` as compact JSON, with numbers as JS writes them.
fn write_js(value: &Value, out: &mut String) {
    match value {
        Value::Number(n) if n.is_f64() => out.push_str(&js_number(n.as_f64().unwrap_or(0.0))),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_js(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key).unwrap_or_default());
                out.push(':');
                write_js(item, out);
            }
            out.push('}');
        }
        // null, booleans, integers and strings are written as JS writes them.
        other => out.push_str(&serde_json::to_string(other).unwrap_or_default()),
    }
}

/// `x` as JS's `Number.prototype.toString` writes it (the form `JSON.stringify` uses): the shortest digits
/// that read back as `x` (serde_json's, so no float formatter is added), laid out in JS's way. A finite `x`
/// (JSON has no other).
pub(crate) fn js_number(x: f64) -> String {
    if x == 0.0 {
        return "0".into(); // -0 too, as JS writes it
    }
    let shortest = serde_json::to_string(&x).unwrap_or_default(); // `1700000000000.0`, `3e-6`, `1.5e-7`
    let (sign, body) = match shortest.strip_prefix('-') {
        Some(body) => ("-", body),
        None => ("", &*shortest),
    };
    let (mantissa, exponent) = match body.split_once('e') {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().unwrap_or(0)),
        None => (body, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // x = 0.DIGITS × 10^point, DIGITS without leading or trailing zeros.
    let all = format!("{whole}{fraction}");
    let digits = all.trim_start_matches('0');
    let point = whole.len() as i32 + exponent - (all.len() - digits.len()) as i32;
    let digits = digits.trim_end_matches('0');
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
        let esign = if e >= 0 { "+" } else { "-" };
        format!("{first}{dot}{rest}e{esign}{}", e.abs())
    };
    format!("{sign}{laid_out}")
}
