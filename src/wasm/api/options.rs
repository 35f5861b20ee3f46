//! Input checks shared by the exports: each reads one kind of argument JS hands over and answers the value,
//! or the text of a `TypeError` naming the field.

use std::rc::Rc;

use js_sys::Function;
use serde::de::DeserializeOwned;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use crate::agent_loop::{AgentContext, DEFAULT_MAX_STEPS};
use crate::message::AgentMessage;
use crate::signal::AbortSignal;
use crate::tools::{Clock, ToolDefinition};
use crate::wasm::transport::convert::{
    array_from_js, error_message, from_json_text, get, is_array, is_object, json_text,
    optional_function, type_of,
};
use crate::wasm::transport::glue::{read_clock_js, show_js};
use crate::wasm::transport::signal::JsSignal;

/// `options.context`: the system prompt, and the messages deep-copied (converting is the copy: the caller's
/// array and objects are never touched again).
pub fn context(context: &JsValue) -> Result<AgentContext, String> {
    if !is_object(context) {
        return Err(format!(
            "options.context must be an object with a messages array (got {})",
            type_of(context)
        ));
    }
    let prompt = get(context, "systemPrompt", "options.context.systemPrompt")?;
    let system_prompt = match prompt.as_string() {
        Some(prompt) => Some(prompt),
        None if prompt.is_undefined() || prompt.is_null() => None,
        None => {
            return Err(format!(
                "options.context.systemPrompt must be a string (got {})",
                type_of(&prompt)
            ))
        }
    };
    let messages = get(context, "messages", "options.context.messages")?;
    Ok(AgentContext {
        system_prompt,
        messages: array(&messages, "options.context.messages", "messages")?,
    })
}

/// `options.model`: the object and its `stream` method.
pub fn model(model: JsValue) -> Result<(JsValue, Function), String> {
    if !is_object(&model) {
        return Err(format!(
            "options.model must be an object with a stream() method (got {})",
            type_of(&model)
        ));
    }
    let stream = get(&model, "stream", "options.model.stream")?
        .dyn_into::<Function>()
        .map_err(|_| "options.model.stream is not a function".to_string())?;
    Ok((model, stream))
}

/// A tool source of the caller's own as `options.tools`: any object with `definitions()` and
/// `execute(call, context)`, like a `ToolRegistry`'s own methods (a conformance runner's tools, say). Its
/// definitions, read once, and its `execute`; `None` when it lacks either method.
pub fn tool_source(tools: &JsValue) -> Result<Option<(Vec<ToolDefinition>, Function)>, String> {
    let definitions = optional_function(tools, "definitions", "options.tools.definitions")?;
    let execute = optional_function(tools, "execute", "options.tools.execute")?;
    let (Some(definitions), Some(execute)) = (definitions, execute) else {
        return Ok(None);
    };
    let listed = definitions
        .call0(tools)
        .map_err(|e| format!("options.tools.definitions() threw: {}", error_message(&e)))?;
    let definitions = array_from_js(
        &listed,
        "options.tools.definitions()",
        "an array of tool definitions",
        "toolDefinitions",
    )?;
    Ok(Some((definitions, execute)))
}

/// An array argument read as the shape `shape` (a name in `crate::shape::SHAPES`); `what` names it.
pub fn array<T: DeserializeOwned>(value: &JsValue, what: &str, shape: &str) -> Result<T, String> {
    array_from_js(value, what, "an array", shape)
}

/// The messages of a transcript argument.
pub fn messages(messages: &JsValue) -> Result<Vec<AgentMessage>, String> {
    array(messages, "messages", "messages")
}

/// An optional `AbortSignal`; `what` names it.
pub fn signal(signal: &JsValue, what: &str) -> Result<AbortSignal, String> {
    if signal.is_undefined() || signal.is_null() {
        return Ok(AbortSignal::none());
    }
    let signal = signal
        .dyn_ref::<web_sys::AbortSignal>()
        .ok_or_else(|| format!("{what} must be an AbortSignal (got {})", type_of(signal)))?;
    // Something made from AbortSignal.prototype passes instanceof but cannot say whether it is aborted.
    JsSignal::read(signal).map_err(|e| {
        format!(
            "{what} must be an AbortSignal (reading its aborted flag threw: {})",
            error_message(&e)
        )
    })?;
    Ok(AbortSignal::from_source(Rc::new(JsSignal(signal.clone()))))
}

/// `options.maxSteps`: a non-negative integer, `DEFAULT_MAX_STEPS` when absent.
pub fn max_steps(value: &JsValue) -> Result<u32, String> {
    count(value, "options.maxSteps", DEFAULT_MAX_STEPS)
}

/// A count of steps (`what` names it): a non-negative integer, `default` when absent.
pub fn count(value: &JsValue, what: &str, default: u32) -> Result<u32, String> {
    if value.is_undefined() {
        return Ok(default);
    }
    match value.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX) => Ok(n as u32),
        _ => Err(format!(
            "{what} must be a non-negative integer (got {})",
            describe(value)
        )),
    }
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

/// `options.now`, falling back to `Date.now()` when absent or when it does not give a finite number.
pub fn clock(now: Option<Function>) -> Clock {
    Rc::new(move || {
        now.as_ref()
            .and_then(read_clock_js)
            .filter(|t| t.is_finite())
            .unwrap_or_else(js_sys::Date::now)
    })
}

/// `customRoles` (SPEC §7; `what` names it): the roles of an app's own messages, none when absent.
pub fn custom_roles(value: &JsValue, what: &str) -> Result<Vec<String>, String> {
    if value.is_undefined() || value.is_null() {
        return Ok(Vec::new());
    }
    if !is_array(value) {
        return Err(format!(
            "{what} must be an array of role names (got {})",
            type_of(value)
        ));
    }
    // Read with js-sys, not serde: a list of a few strings needs no JSON reader of its own.
    let roles = js_sys::Array::from(value);
    let role = |index: u32| {
        let role = roles.get(index);
        role.as_string()
            .ok_or_else(|| format!("{what}[{index}] must be a string (got {})", type_of(&role)))
    };
    (0..roles.length()).map(role).collect()
}

/// The messages of a transcript argument (`what` names it) in which a message of a role in `custom_roles`
/// is kept verbatim. A bad message's error names it, and for SPEC's own roles the field that is wrong.
pub fn messages_with_roles(
    value: &JsValue,
    what: &str,
    custom_roles: &[String],
) -> Result<Vec<AgentMessage>, String> {
    if custom_roles.is_empty() {
        return array(value, what, "messages");
    }
    if !is_array(value) {
        return Err(format!("{what} must be an array (got {})", type_of(value)));
    }
    let text = json_text(value, &what)?;
    let Value::Array(values) = from_json_text(&text, &what, "any")? else {
        return Err(format!("{what} must be an array (got {})", type_of(value)));
    };
    let mut messages = Vec::with_capacity(values.len());
    for (index, value) in values.into_iter().enumerate() {
        match AgentMessage::from_value_with_roles(value, custom_roles) {
            Ok(message) => messages.push(message),
            Err(reader) => return Err(explain_message(&text, index, what, reader)),
        }
    }
    Ok(messages)
}

/// Why message `index` of the array `text` did not read: for SPEC's own roles the first field that breaks
/// its shape (read again: only a refused value comes here), else the reader's words (an unknown role).
fn explain_message(text: &str, index: usize, what: &str, reader: String) -> String {
    let at = format!("{what}[{index}]");
    let values: Value = serde_json::from_str(text).unwrap_or_default();
    let value = values.get(index).unwrap_or(&Value::Null);
    let known = matches!(
        value.get("role").and_then(Value::as_str),
        Some("user" | "assistant" | "toolResult")
    );
    let explained = known.then(|| crate::shape::explain("message", value, &at));
    explained.flatten().unwrap_or(format!("{at}: {reader}"))
}

/// The options of the exports that read a transcript (`validateTranscript`, `repairTranscript`, the JSONL
/// functions): the object (empty when absent) and its `customRoles`.
pub struct TranscriptOptions {
    pub object: JsValue,
    pub custom_roles: Vec<String>,
}

impl TranscriptOptions {
    pub fn read(options: &JsValue) -> Result<TranscriptOptions, String> {
        let object = match options.is_undefined() || options.is_null() {
            true => js_sys::Object::new().into(),
            false if is_object(options) => options.clone(),
            false => {
                return Err(format!(
                    "options must be an object (got {})",
                    type_of(options)
                ))
            }
        };
        let roles = get(&object, "customRoles", "options.customRoles")?;
        Ok(TranscriptOptions {
            custom_roles: custom_roles(&roles, "options.customRoles")?,
            object,
        })
    }

    /// The transcript, custom-role messages read as the options say.
    pub fn messages(&self, messages: &JsValue) -> Result<Vec<AgentMessage>, String> {
        messages_with_roles(messages, "messages", &self.custom_roles)
    }
}
