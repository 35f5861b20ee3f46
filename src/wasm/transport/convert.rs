//! Values crossing the boundary, and the small reads every module makes of JS values (a field, a type
//! name, an error's message). Everything goes through JSON (one shortcut aside, `tool_output.rs`):
//! `JSON.stringify` rejects cycles and BigInt with a clear error and drops functions, serde_json bounds
//! nesting depth (no stack overflow, so no trap), and one string copy is cheaper than a property-by-property
//! walk.

use std::cell::RefCell;
use std::fmt;

use js_sys::{Function, JsString, Reflect};
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};

use super::glue::{
    encode_into_js, is_array_checked, parse_json_js, set_own, show_js, stringify_js, take_kept_js,
};
use super::protocol::SHORT_TEXT_UNITS;
use crate::message::AgentMessage;
use crate::reading::{from_json, ReadValue};

/// Whether `value` is an array (false for anything that throws when asked).
pub fn is_array(value: &JsValue) -> bool {
    is_array_checked(value).unwrap_or(false)
}

/// An interned name: the address and length of its `&'static str` (a literal's address is stable), and
/// its JS string, made once and kept for the life of the module (a few dozen names).
type Interned = (usize, usize, &'static JsValue);

const KEY_SLOTS: usize = 64;

struct Keys {
    /// Direct-mapped by address, so that a lookup is one comparison (a list scan showed in profiles: there
    /// are several lookups per event)...
    slots: [Option<Interned>; KEY_SLOTS],
    /// ...and the names whose slot was taken.
    others: Vec<Interned>,
}

thread_local! {
    /// Property names as JS strings: a key crossing as UTF-8 on every event would cost more than the event.
    static KEYS: RefCell<Keys> = const {
        RefCell::new(Keys { slots: [None; KEY_SLOTS], others: Vec::new() })
    };
}

/// The JS string for a fixed name, created on first use.
pub fn key(name: &'static str) -> &'static JsValue {
    let (address, len) = (name.as_ptr() as usize, name.len());
    let slot = (address ^ (address >> 6)) % KEY_SLOTS;
    KEYS.with(|keys| {
        let mut keys = keys.borrow_mut();
        let new = || -> &'static JsValue { Box::leak(Box::new(JsValue::from_str(name))) };
        match keys.slots[slot] {
            Some((a, l, js)) if (a, l) == (address, len) => js,
            None => keys.slots[slot].insert((address, len, new())).2,
            Some(_) => match keys
                .others
                .iter()
                .find(|(a, l, _)| (*a, *l) == (address, len))
            {
                Some((.., js)) => js,
                None => {
                    let js = new();
                    keys.others.push((address, len, js));
                    js
                }
            },
        }
    })
}

/// `object[name]` where `object` may be anything JS gave us (a getter may throw).
pub fn get_key(object: &JsValue, name: &'static str) -> Result<JsValue, JsValue> {
    Reflect::get(object, key(name))
}

thread_local! {
    /// Tool names as JS strings (`name_js`).
    static NAMES: RefCell<Vec<(Box<str>, JsValue)>> = const { RefCell::new(Vec::new()) };
}

/// `name` as a JS string, made once: the few tool names of a run cross with every result. (Bounded: a
/// program with very many names starts over.)
pub fn name_js(name: &str) -> JsValue {
    const MAX: usize = 64;
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        if let Some((_, js)) = names.iter().find(|(n, _)| **n == *name) {
            return js.clone();
        }
        if names.len() >= MAX {
            names.clear();
        }
        let js = JsValue::from_str(name);
        names.push((name.into(), js.clone()));
        js
    })
}

/// A `TypeError` with this message, as a value to throw or reject with.
pub fn type_error(message: impl AsRef<str>) -> JsValue {
    js_sys::TypeError::new(message.as_ref()).into()
}

/// Reads `what` (a path like `options.context.messages`) into a Rust value of the shape `shape` (a name in
/// `crate::shape::SHAPES`); the error names the bad field.
pub fn from_js<T: ReadValue>(value: &JsValue, what: &str, shape: &str) -> Result<T, String> {
    from_json_text(&json_text(value, &what)?, &what, shape)
}

/// `from_js` of a value that must be an array; anything else is refused as "`what` must be `expected`".
pub fn array_from_js<T: ReadValue>(
    value: &JsValue,
    what: &str,
    expected: &str,
    shape: &str,
) -> Result<T, String> {
    if !is_array(value) {
        return Err(format!(
            "{what} must be {expected} (got {})",
            type_of(value)
        ));
    }
    from_js(value, what, shape)
}

/// `JSON.stringify(value)`; the error says what `what` is instead. (`what` is written out only for an
/// error: a name made per value read would cost more than a small value.)
pub fn json_text(value: &JsValue, what: &dyn fmt::Display) -> Result<String, String> {
    json_string(value, &stringify_js(value), what)
}

/// `json_text`, given `text`, the JS string `stringify` made of `value` (null if that threw).
fn json_string(value: &JsValue, text: &JsValue, what: &dyn fmt::Display) -> Result<String, String> {
    if text.is_null() {
        return Err(format!("{what}: {}", error_message(&take_kept_js())));
    }
    rust_string(text.unchecked_ref())
        .ok_or_else(|| format!("{what} is missing (got {})", type_of(value)))
}

thread_local! {
    /// The module's `WebAssembly.Memory`, for `encodeInto`.
    static MEMORY: JsValue = wasm_bindgen::memory();
}

/// A JS string as a Rust string; `None` if it is not a string (`JSON.stringify` of a function or
/// `undefined`). A long one is encoded by `TextEncoder.encodeInto` straight into wasm memory.
pub fn rust_string(text: &JsString) -> Option<String> {
    if !text.is_string() {
        return None;
    }
    let units = text.length() as usize;
    if units < SHORT_TEXT_UNITS as usize {
        return text.as_string();
    }
    // UTF-16 to UTF-8 makes at most 3 bytes of each unit (a surrogate pair: 4 bytes of 2 units).
    let capacity = units * 3;
    let mut bytes = Vec::<u8>::with_capacity(capacity);
    // `encodeInto` makes its view of wasm memory itself, in the same JS call that writes it. A view made
    // here first would cross back into wasm as a new JS handle, and storing a handle can grow wasm memory
    // (when the handle table is full), which detaches every view: the text would come out empty.
    let written = MEMORY.with(|memory| {
        encode_into_js(
            text,
            memory,
            bytes.as_mut_ptr() as usize as u32,
            capacity as u32,
        )
    }) as usize;
    // SAFETY: `encodeInto` wrote `written` (at most `capacity`) initialized bytes into the spare capacity.
    unsafe { bytes.set_len(written.min(capacity)) };
    // Well-formed UTF-8 always (`encodeInto` replaces lone surrogates); checked rather than trusted.
    String::from_utf8(bytes).ok()
}

/// The second half of `from_js`, for a caller that already has the JSON text. Never inlined: its error
/// half (surrogate repair, the shape's explanation) copied into each reader made the package larger
/// (bench/RESULTS.md, size steps).
#[inline(never)]
pub fn from_json_text<T: ReadValue>(
    text: &str,
    what: &dyn fmt::Display,
    shape: &str,
) -> Result<T, String> {
    let error = match from_json(text) {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    // Half a surrogate pair (a string cut inside an emoji) cannot be a Rust string: it becomes U+FFFD, as a
    // TextDecoder would make it, instead of refusing the whole value.
    let repaired = replace_lone_surrogates(text);
    if repaired != text {
        if let Ok(value) = from_json(&repaired) {
            return Ok(value);
        }
    }
    // Only a refused value is read again, to find the field that breaks its shape.
    let located = serde_json::from_str(&repaired)
        .ok()
        .and_then(|json| crate::shape::explain(shape, &json, &what.to_string()));
    Err(located.unwrap_or_else(|| format!("{what}: {}", strip_position(&error))))
}

/// `JSON.stringify` writes a lone surrogate as an escape (`\ud83d`); each such escape becomes `\ufffd`.
pub fn replace_lone_surrogates(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let escape = &rest[at..];
        let is_surrogate = escape.as_bytes().get(1) == Some(&b'u')
            && escape
                .get(2..6)
                .and_then(|hex| u16::from_str_radix(hex, 16).ok())
                .is_some_and(|unit| (0xD800..=0xDFFF).contains(&unit));
        let len = if is_surrogate {
            6
        } else {
            escape.chars().take(2).map(char::len_utf8).sum()
        };
        out.push_str(if is_surrogate {
            "\\ufffd"
        } else {
            &escape[..len]
        });
        rest = &escape[len..];
    }
    out.push_str(rest);
    out
}

/// serde_json appends "at line 1 column 93" to its messages; the column of a JSON text the caller never
/// wrote is noise.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

pub fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    parse_json_js(&json_of(value))
}

/// `value` as JSON text, to be parsed in JS (`to_js`, or frozen: `mirror.rs`).
pub fn json_of<T: Serialize + ?Sized>(value: &T) -> String {
    // Serializing our own types cannot fail (string keys only; non-finite numbers become null, which
    // `JSON.parse` reads as null too).
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// The message of a thrown value: `error.message` for errors (and objects with a string `message`), the
/// string itself; else the value as `glue.js`'s `show` writes it: a primitive as `String(value)`, an object as
/// its JSON (cut short). Never the stack.
pub fn error_message(error: &JsValue) -> String {
    if let Some(error) = error.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    if let Some(text) = error.as_string() {
        return text;
    }
    if is_object(error) || error.is_function() {
        if let Ok(message) = get_key(error, "message") {
            if let Some(message) = message.as_string() {
                return message;
            }
        }
    }
    show_js(error)
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

/// `object[key]`, with a getter or proxy that throws reported against the field.
pub fn get(object: &JsValue, name: &'static str, what: &str) -> Result<JsValue, String> {
    get_key(object, name).map_err(|e| format!("{what}: {}", error_message(&e)))
}

pub fn is_object(value: &JsValue) -> bool {
    value.is_object() && !value.is_null()
}

/// `object[key]` when it is a function, `None` when absent; anything else is a `TypeError` text.
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
        .map_err(|v| format!("{what} must be a function (got {})", type_of(&v)))
}

/// Sets `object[name] = value` on a fresh plain object we own (cannot throw).
pub fn set(object: &JsValue, name: &'static str, value: &JsValue) {
    set_own(object, key(name), value);
}

/// A bad value as an error names it: a number as itself, a string quoted, else its type.
pub fn describe(value: &JsValue) -> String {
    match value.as_f64() {
        Some(_) => show_js(value),
        None => value
            .as_string()
            .map(|s| format!("string \"{s}\""))
            .unwrap_or_else(|| type_of(value)),
    }
}

/// An array of messages (`what` names it), each read with `custom_roles` (SPEC §7: a message of such a role
/// is kept verbatim; any other unknown role is an error naming it).
pub fn messages_from_js(
    value: &JsValue,
    what: &str,
    custom_roles: &[String],
) -> Result<Vec<AgentMessage>, String> {
    messages_and_json(value, what, custom_roles).map(|(messages, _)| messages)
}

/// `messages_from_js`, with the JS string of the JSON text they were read from: a JS copy of the caller's
/// messages parsed from it costs no second `JSON.stringify`.
pub fn messages_and_json(
    value: &JsValue,
    what: &str,
    custom_roles: &[String],
) -> Result<(Vec<AgentMessage>, JsValue), String> {
    if !is_array(value) {
        return Err(format!("{what} must be an array (got {})", type_of(value)));
    }
    let json = stringify_js(value);
    let text = json_string(value, &json, &what)?;
    if custom_roles.is_empty() {
        return Ok((from_json_text(&text, &what, "messages")?, json));
    }
    let serde_json::Value::Array(values) = from_json_text(&text, &what, "any")? else {
        return Err(format!("{what} must be an array"));
    };
    let mut messages = Vec::with_capacity(values.len());
    for (index, item) in values.into_iter().enumerate() {
        let own_role = matches!(
            item.get("role").and_then(serde_json::Value::as_str),
            Some("user" | "assistant" | "toolResult")
        );
        match AgentMessage::from_value_with_roles(item, custom_roles) {
            Ok(message) => messages.push(message),
            Err(error) => {
                // A message of SPEC's own roles is read again alone, for the error naming its bad field
                // (as without custom roles); only a refused message comes here.
                let at = format!("{what}[{index}]");
                let item = js_sys::Array::from(value).get(index as u32);
                let own = own_role.then(|| from_js::<AgentMessage>(&item, &at, "message").err());
                return Err(own.flatten().unwrap_or(format!("{at}: {error}")));
            }
        }
    }
    Ok((messages, json))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    /// Storing a JS handle grows wasm memory when the handle table is full, and growing memory detaches
    /// every view of it: a long string read across such a moment once came out empty. One more handle
    /// held before each read walks the table over its growth points.
    #[wasm_bindgen_test]
    fn long_strings_cross_intact_while_the_handle_table_grows() {
        let expected = format!("{}é😀", "x".repeat(100));
        let text = JsString::from(expected.as_str());
        let mut held = Vec::new();
        for i in 0..40_000 {
            held.push(JsValue::from_f64(i as f64));
            let read = rust_string(&text);
            assert!(
                read.as_deref() == Some(expected.as_str()),
                "holding {i} handles, read {read:?}"
            );
        }
    }
}
