//! Sessions as JSON Lines (SPEC §9): `toJSONL` and `parseJSONL`. The core decides what a good transcript and
//! a good line are (`parse_jsonl_with_roles`, `jsonl_lines`); JS writes and reads the objects themselves
//! (`JSON.stringify`, `JSON.parse`), which keeps their field order and every number exactly, and costs the
//! package no JSON writer of its own.

use js_sys::Array;
use wasm_bindgen::prelude::*;

use super::options::TranscriptOptions;
use crate::session::{jsonl_lines, parse_jsonl_with_roles};
use crate::wasm::transport::convert::{json_lines, must_be, string_of, type_error, type_of};

/// `messages` as JSON Lines: one `JSON.stringify`'d message per line, each ending with `\n`. Each message
/// is read once, as that JSON, and the lines are checked as `parseJSONL` reads them (`options.customRoles`
/// names the custom roles). (Declared in `types.d.ts`.)
#[wasm_bindgen(js_name = toJSONL, skip_typescript)]
pub fn to_jsonl_js(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let _entered = super::enter()?;
    let write = || -> Result<String, String> {
        let options = TranscriptOptions::read(&options)?;
        if !crate::wasm::transport::convert::is_array(&messages) {
            return Err(must_be("messages", "an array", type_of(&messages)));
        }
        let text = json_lines(&messages, "messages")?;
        // One message per line, none blank: line n holds messages[n - 1].
        parse_jsonl_with_roles(&text, &options.custom_roles).map_err(|e| {
            let at = format!("messages[{}]", e.line - 1);
            match e.message.strip_prefix("message") {
                Some(rest) if rest.starts_with(['.', '[']) => format!("{at}{rest}"),
                _ => format!("{at}: {}", e.message),
            }
        })?;
        Ok(text)
    };
    write().map(JsValue::from).map_err(type_error)
}

/// The messages of JSON Lines text (`toJSONL`'s), each a fresh object as `JSON.parse` makes it. Empty and
/// blank lines are skipped; a bad line is a `TypeError` that names its number and the field
/// (`line 3: message.content[0].id must be a string (got number)`). (Declared in `types.d.ts`.)
#[wasm_bindgen(js_name = parseJSONL, skip_typescript)]
pub fn parse_jsonl_js(text: JsValue, options: JsValue) -> Result<Array, JsValue> {
    let _entered = super::enter()?;
    let read = || -> Result<_, String> {
        let options = TranscriptOptions::read(&options)?;
        let text =
            string_of(&text, "text")?.ok_or_else(|| must_be("text", "a string", type_of(&text)))?;
        parse_jsonl_with_roles(&text, &options.custom_roles).map_err(|e| e.to_string())?;
        Ok(text)
    };
    let text = read().map_err(type_error)?;
    Ok(jsonl_lines(&text)
        .map(|(_, line)| js_sys::JSON::parse(line).unwrap_or(JsValue::NULL))
        .collect())
}
