//! Values across the boundary, one way each: JS to Rust as the JSON text `JSON.stringify` writes (read once,
//! again only to name a BigInt in an error; the core's readers decide on that text), Rust to JS as JSON text parsed
//! in JS (frozen when the loop hands it out). And the small reads every module makes of a JS value: a
//! field, a string, a type name, an error's message, and the errors the exports throw.
//!
//! A string is never changed on its way through: one with a lone surrogate (which Rust strings cannot hold)
//! is refused with an error naming where it is (SPEC §10).

use std::fmt;

use js_sys::{Function, JsString, Reflect};
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use super::glue::{
    bigint_at_js, is_array_js, is_plain_object_js, json_lines_js, message_of_js, parse_frozen_js,
    plain_error_js, prototype_set_js, show_js, type_error_js, unwritable_js,
};
use crate::message::AgentMessage;
use crate::reading::{at, from_json, ReadValue};
use crate::Invalid;

/// `object[name]`, with a getter or proxy that throws reported against the field (`what`).
pub fn get(object: &JsValue, name: &'static str, what: &str) -> Result<JsValue, String> {
    Reflect::get(object, &JsValue::from_str(name))
        .map_err(|e| format!("{what}: {}", error_message(&e)))
}

/// Reads `value` (`what` names it, e.g. `options.context.messages`) as `T`, from the JSON `JSON.stringify`
/// writes of it (read once); the error names the bad field.
pub fn from_js<T: ReadValue>(value: &JsValue, what: &str) -> Result<T, String> {
    read_js(value, what, |value| Ok(T::read_value(value)?))
}

/// `from_js` with the core's reader `read` (one that takes more than the value: the run's roles, say). A
/// field JSON wrote differently from the value (`NaN` as `null`) is named as it was.
pub fn read_js<T>(
    value: &JsValue,
    what: &str,
    read: impl FnOnce(Value) -> Result<T, Invalid>,
) -> Result<T, String> {
    let text = json_text(value, what)?;
    from_json(&text)
        .and_then(read)
        .map_err(|error| explain(&text, error.message(), value, what))
}

/// `from_js` of a value that must be an array; anything else is "`what` must be `expected` (got ...)".
pub fn array_from_js<T: ReadValue>(
    value: &JsValue,
    what: &str,
    expected: &str,
) -> Result<T, String> {
    if !is_array(value) {
        return Err(must_be(what, expected, type_of(value)));
    }
    from_js(value, what)
}

/// `JSON.stringify(value)`: what it threw (at the bigint's path, if one), or that there is no JSON (a
/// function, undefined), is the error.
fn json_text(value: &JsValue, what: &str) -> Result<String, String> {
    let text = js_sys::JSON::stringify(value).map_err(|e| unwritten(value, what, &e))?;
    // JSON.stringify writes a lone surrogate as an escape: its text is always well formed.
    text.as_string()
        .ok_or_else(|| must_be(what, "a JSON value", type_of(value)))
}

/// What `JSON.stringify(value)` threw (`error`), at the path of the bigint it met if that was its error: found by
/// a second read, sealed (a `toJSON` there that calls tiny-pi is refused, so a nested read's cost never doubles).
fn unwritten(value: &JsValue, what: &str, error: &JsValue) -> String {
    let message = error_message(error);
    let at = match message.contains("BigInt") {
        true => super::sealed(|| bigint_at_js(value).unwrap_or_default()),
        false => String::new(),
    };
    format!("{what}{at}: {message}")
}

/// `glue.js`'s `jsonLines(messages)`: each message's JSON text on a line of its own; an error names the
/// message JSON could not write (`what[index]`, and the bigint in it).
pub fn json_lines(messages: &JsValue, what: &str) -> Result<String, String> {
    let lines = json_lines_js(messages).map_err(|e| format!("{what}: {}", error_message(&e)))?;
    if let Some(text) = lines.as_string() {
        return Ok(text);
    }
    // [index, the message read, what was thrown]; the index as an integer (printing an f64 would bring Rust's
    // float formatting, ~8 KB gzipped, into the .wasm).
    let failed = lines.unchecked_into::<js_sys::Array>();
    let index = failed.get(0).as_f64().unwrap_or_default() as u32;
    let at = format!("{what}[{index}]");
    Err(unwritten(&failed.get(1), &at, &failed.get(2)))
}

/// What went wrong reading JSON `text` (written from `value`, named `what`): a lone surrogate named as
/// written, else the reader's `error` under `what`, a field JSON wrote as `null` named as it was.
fn explain(text: &str, error: &str, value: &JsValue, what: &str) -> String {
    if let Some(escape) = crate::reading::lone_surrogate(text) {
        return format!(
            "{what}: a string holds a lone surrogate ({escape}), which tiny-pi never changes and cannot keep"
        );
    }
    as_written(at(what, strip_position(error)), value, what)
}

/// An explanation `... (got null)` of a field that JSON wrote as `null` from something else (NaN,
/// Infinity): says what it was. The field is found by its path under `what`.
fn as_written(explained: String, value: &JsValue, what: &str) -> String {
    let Some(rest) = explained.strip_suffix(" (got null)") else {
        return explained;
    };
    let Some(path) = rest.split(' ').next() else {
        return explained;
    };
    match value_at(value, path.strip_prefix(what).unwrap_or(path)).and_then(|v| unwritable_js(&v)) {
        Some(was) => format!("{rest} (got {was})"),
        None => explained,
    }
}

/// The value at a path like `[0].timestamp` or `.content[1].id` under `value`, read again (only on an error).
fn value_at(value: &JsValue, path: &str) -> Option<JsValue> {
    let mut current = value.clone();
    let mut rest = path;
    while !rest.is_empty() {
        let (key, next): (JsValue, &str) = if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inner = &after[..end];
            let key = match inner.parse::<u32>() {
                Ok(index) => JsValue::from(index),
                Err(_) => JsValue::from_str(inner.trim_matches('"')),
            };
            (key, &after[end + 1..])
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            (JsValue::from_str(&after[..end]), &after[end..])
        } else {
            return None;
        };
        current = Reflect::get(&current, &key).ok()?;
        rest = next;
    }
    Some(current)
}

/// serde_json appends "at line 1 column 93" to its messages; the column of a JSON text the caller never
/// wrote is noise.
fn strip_position(message: &str) -> &str {
    message
        .rfind(" at line ")
        .map_or(message, |at| &message[..at])
}

/// `value` as a JS value: JSON text written here, parsed in JS, deeply frozen (every message, call and
/// result the loop hands out, SPEC §10).
pub fn frozen_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    parse_frozen_js(&json_of(value))
}

/// `value` as a JS value of the caller's own (not frozen).
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    js_sys::JSON::parse(&json_of(value)).unwrap_or(JsValue::NULL)
}

/// `value` as JSON text. Serializing the core's own types cannot fail (string keys only).
pub fn json_of<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// A string JS handed over, kept exactly: `None` if `value` is not a string; an error (naming `what`) if it
/// holds a lone surrogate.
pub fn string_of(value: &JsValue, what: &str) -> Result<Option<String>, String> {
    let Some(text) = value.dyn_ref::<JsString>() else {
        return Ok(None);
    };
    if !text.is_valid_utf16() {
        return Err(format!(
            "{what}: the string holds a lone surrogate, which tiny-pi never changes and cannot keep"
        ));
    }
    Ok(text.as_string())
}

/// `object[name]` when it is a string, `None` when absent (undefined or null); `what` names it.
pub fn optional_string(
    object: &JsValue,
    name: &'static str,
    what: &str,
) -> Result<Option<String>, String> {
    let value = get(object, name, what)?;
    match string_of(&value, what)? {
        Some(text) => Ok(Some(text)),
        None if value.is_null_or_undefined() => Ok(None),
        None => Err(must_be(what, "a string", describe(&value))),
    }
}

/// `object[name]` when it is a function, `None` when absent; anything else is an error naming `what`.
pub fn optional_function(
    object: &JsValue,
    name: &'static str,
    what: &str,
) -> Result<Option<Function>, String> {
    let value = get(object, name, what)?;
    if value.is_null_or_undefined() {
        return Ok(None);
    }
    value
        .dyn_into::<Function>()
        .map(Some)
        .map_err(|v| must_be(what, "a function", type_of(&v)))
}

/// An array of messages (`what` names it), each read with `custom_roles` (SPEC §7: a message of such a role
/// is kept verbatim; any other unknown role is an error naming it).
pub fn messages_from_js(
    value: &JsValue,
    what: &str,
    custom_roles: &[String],
) -> Result<Vec<AgentMessage>, String> {
    each_from_js(value, what, |item| {
        AgentMessage::from_value_with_roles(item, custom_roles)
    })
}

/// An array (`what` names it) of values, each read by `read`.
pub fn each_from_js<T>(
    value: &JsValue,
    what: &str,
    read: impl Fn(Value) -> Result<T, Invalid>,
) -> Result<Vec<T>, String> {
    if !is_array(value) {
        return Err(must_be(what, "an array", type_of(value)));
    }
    // Each message read on its own, from its own JSON text (`glue.js`'s `jsonLines`): as deep as the loop
    // read it when it made it (a model's message, a tool's output), so a transcript it stored is never too
    // deep to read back (serde_json's limit of 128 levels counts from the text's root).
    let text = json_lines(value, what)?;
    let mut items = Vec::new();
    for (index, line) in text.split_terminator('\n').enumerate() {
        items.push(from_json(line).and_then(&read).map_err(|error| {
            let element = Reflect::get(value, &JsValue::from(index as u32)).unwrap_or_default();
            explain(line, error.message(), &element, &format!("{what}[{index}]"))
        })?);
    }
    Ok(items)
}

/// Whether `value` is an array (false for anything that throws when asked: a revoked proxy).
pub fn is_array(value: &JsValue) -> bool {
    is_array_js(value)
}

pub fn is_object(value: &JsValue) -> bool {
    value.is_object() && !value.is_null()
}

/// `Ok` for an object (an array too), else "`what` must be `expected` (got its type)".
pub fn expect_object(value: &JsValue, what: &str, expected: &str) -> Result<(), String> {
    match is_object(value) {
        true => Ok(()),
        false => Err(must_be(what, expected, type_of(value))),
    }
}

/// A plain object, else "`what` must be `expected`" (a `Map` or a `Date` would read as no fields at all).
pub fn expect_plain(value: &JsValue, what: &str, expected: &str) -> Result<(), String> {
    if is_plain_object_js(value) {
        return Ok(());
    }
    let object = value.is_object() && !is_array(value);
    // `approvals["__proto__"] = decision` (a model may name a call so) sets the prototype.
    let got = match (object, object && prototype_set_js(value)) {
        (true, true) => format!(
            "an object whose prototype was set, as {what}[\"__proto__\"] = ... does: make it with \
             Object.fromEntries"
        ),
        (true, false) => "an object of another class".into(),
        (false, _) => type_of(value),
    };
    Err(must_be(what, expected, got))
}

/// "`what` must be `expected` (got `got`)": how the exports name a bad argument.
pub fn must_be(what: &str, expected: &str, got: impl fmt::Display) -> String {
    format!("{what} must be {expected} (got {got})")
}

pub fn type_of(value: &JsValue) -> String {
    if value.is_null() {
        return "null".into();
    }
    if is_array(value) {
        return "array".into();
    }
    value
        .js_typeof()
        .as_string()
        .unwrap_or_else(|| "unknown".into())
}

/// A bad value as an error names it: a number as itself (`NaN`, `-1`), a string quoted, else its type.
pub fn describe(value: &JsValue) -> String {
    if value.as_f64().is_some() {
        return show_js(value);
    }
    match value.as_string() {
        Some(text) => format!("string \"{text}\""),
        None => type_of(value),
    }
}

/// The message of a thrown value: `error.message` when it is a string, the string itself; else the value as
/// `glue.js`'s `show` writes it. Never the stack, never a throw, never a lone surrogate (`glue.js`'s
/// `messageOf`).
pub fn error_message(error: &JsValue) -> String {
    message_of_js(error)
}

/// What a call into JS (`glue.js`'s `invoke`) gave, awaited when it is a promise or thenable: the value,
/// or what it threw or rejected with.
pub async fn settle(invoked: super::glue::Invoked) -> Result<JsValue, JsValue> {
    match invoked.wait() {
        Some(promise) => wasm_bindgen_futures::JsFuture::from(promise).await,
        None => Ok(invoked.value()),
    }
}

/// An export's future as the JS promise it returns. Boxed, so that every export shares one copy of
/// wasm-bindgen-futures' driver (unboxed, each future type gets a copy of its own: ~3.7 KB raw for four).
pub fn promise(
    future: impl std::future::Future<Output = Result<JsValue, JsValue>> + 'static,
) -> js_sys::Promise {
    let future: std::pin::Pin<Box<dyn std::future::Future<Output = _>>> = Box::pin(future);
    wasm_bindgen_futures::future_to_promise(future)
}

/// A `TypeError` with this message, its stack starting at the app's line (`glue.js`).
pub fn type_error(message: impl AsRef<str>) -> JsValue {
    type_error_js(message.as_ref())
}

/// An `Error` with this message, its stack starting at the app's line.
pub fn plain_error(message: impl fmt::Display) -> JsValue {
    plain_error_js(&message.to_string())
}
