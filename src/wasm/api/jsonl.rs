//! Sessions as JSON Lines (SPEC §9): `toJSONL` and `parseJSONL`. The core decides what a good transcript and
//! a good line are (`parse_jsonl`, `jsonl_lines`); JS writes and reads the objects themselves
//! (`JSON.stringify`, `JSON.parse`), which keeps their field order and every number exactly, and costs the
//! package no JSON writer of its own.

use js_sys::{Array, JsString};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::options::TranscriptOptions;
use crate::session::{jsonl_lines, parse_jsonl, JsonlError};
use crate::wasm::transport::convert::{
    error_message, replace_lone_surrogates, rust_string, type_error, type_of,
};
use crate::wasm::transport::glue::{json_lines_js, parse_json_js, take_kept_js};

/// `messages` as JSON Lines: one `JSON.stringify`'d message per line, each ending with `\n`. The messages
/// are checked first, as `runAgentLoop` reads them (`options.customRoles` names the custom roles).
/// (Declared in `types.d.ts`.)
#[wasm_bindgen(js_name = toJSONL, skip_typescript)]
pub fn to_jsonl_js(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let read = || TranscriptOptions::read(&options)?.messages(&messages);
    read().map_err(type_error)?;
    let text = json_lines_js(&messages);
    match text.is_null() {
        // A getter that threw on the second reading (the check read it once).
        true => Err(type_error(format!(
            "messages: {}",
            error_message(&take_kept_js())
        ))),
        false => Ok(text),
    }
}

/// The messages of JSON Lines text (`toJSONL`'s), each a fresh object as `JSON.parse` makes it. Empty and
/// blank lines are skipped; a bad line is a `TypeError` naming its number and the field
/// (`line 3: message.content[0].id: expected string, got integer`). (Declared in `types.d.ts`.)
#[wasm_bindgen(js_name = parseJSONL, skip_typescript)]
pub fn parse_jsonl_js(text: JsValue, options: JsValue) -> Result<Array, JsValue> {
    let read = || -> Result<_, String> {
        let options = TranscriptOptions::read(&options)?;
        let text = text
            .dyn_ref::<JsString>()
            .and_then(rust_string)
            .ok_or_else(|| format!("text must be a string (got {})", type_of(&text)))?;
        check(&text, &options.custom_roles).map_err(|e| e.to_string())?;
        Ok(text)
    };
    let text = read().map_err(type_error)?;
    Ok(jsonl_lines(&text)
        .map(|(_, line)| parse_json_js(line))
        .collect())
}

/// Whether every line of `text` holds a message. A string cut inside a surrogate pair (JS writes the half as
/// an escape, `\ud83d`, which JSON.parse reads) is no reason to refuse a line.
fn check(text: &str, custom_roles: &[String]) -> Result<(), JsonlError> {
    match parse_jsonl(text, custom_roles) {
        Ok(_) => Ok(()),
        Err(error) => {
            let repaired = replace_lone_surrogates(text);
            match repaired != text && parse_jsonl(&repaired, custom_roles).is_ok() {
                true => Ok(()),
                false => Err(error),
            }
        }
    }
}
