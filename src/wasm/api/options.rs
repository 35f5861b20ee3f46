//! Input checks shared by the exports: each reads one kind of argument JS hands over and answers the value,
//! or the text of a `TypeError` naming the field.

use std::rc::Rc;

use js_sys::Function;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use crate::agent_loop::{AgentContext, DEFAULT_MAX_STEPS};
use crate::compaction::CompactionOptions;
use crate::control::TIMEOUT_MS_RULE;
use crate::message::{check_custom_roles, AgentMessage};
use crate::retry::RetryPolicy;
use crate::signal::AbortSignal;
use crate::tools::ExecutionMode;
use crate::tools::{Clock, ToolDefinition};
use crate::usage::Budget;
use crate::wasm::transport::convert::{
    array_from_js, describe, error_message, expect_object, expect_plain, get, is_object,
    messages_from_js, must_be, optional_function, optional_string, type_of,
};
use crate::wasm::transport::glue::read_clock_js;
use crate::wasm::transport::hooks::{JsEstimateTokens, JsShouldRetry, JsSummarize};
use crate::wasm::transport::signal::JsSignal;

/// `options.context`: the system prompt, and the messages deep-copied (converting is the copy: the caller's
/// array and objects are never touched again), read with the run's custom roles.
pub fn context(context: &JsValue, custom_roles: &[String]) -> Result<AgentContext, String> {
    let expected = "an object with a messages array";
    expect_object(context, "options.context", expected)?;
    let system_prompt = optional_string(context, "systemPrompt", "options.context.systemPrompt")?;
    let messages = get(context, "messages", "options.context.messages")?;
    Ok(AgentContext {
        system_prompt,
        messages: messages_from_js(&messages, "options.context.messages", custom_roles)?,
    })
}

/// `options.model`: the object and its `stream` method.
pub fn model(model: JsValue) -> Result<(JsValue, Function), String> {
    expect_object(&model, "options.model", "an object with a stream() method")?;
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
    let what = "options.tools.definitions()";
    let definitions: Vec<ToolDefinition> =
        array_from_js(&listed, what, "an array of tool definitions")?;
    // Checked as `register` checks a tool: what a source offers reaches the model.
    crate::tools::check_definitions(&definitions, what)?;
    Ok(Some((definitions, execute)))
}

/// An optional `AbortSignal`; `what` names it.
pub fn signal(signal: &JsValue, what: &str) -> Result<AbortSignal, String> {
    if signal.is_null_or_undefined() {
        return Ok(AbortSignal::none());
    }
    let signal = signal
        .dyn_ref::<web_sys::AbortSignal>()
        .ok_or_else(|| must_be(what, "an AbortSignal", type_of(signal)))?;
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

/// A count of steps (`what` names it): a non-negative integer of at most `u32::MAX`, `default` when absent.
pub fn count(value: &JsValue, what: &str, default: u32) -> Result<u32, String> {
    if value.is_undefined() {
        return Ok(default);
    }
    match value.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX) => Ok(n as u32),
        Some(n) if n >= 0.0 && n.fract() == 0.0 => Err(must_be(
            what,
            &format!("at most {}", u32::MAX),
            describe(value),
        )),
        _ => Err(must_be(what, "a non-negative integer", describe(value))),
    }
}

/// `options.now`, falling back to `Date.now()` when absent or when it does not give a finite number.
pub fn clock(now: Option<Function>) -> Clock {
    Rc::new(move || (now.as_ref().and_then(read_clock_js)).unwrap_or_else(js_sys::Date::now))
}

/// `options.toolExecution` or a tool's `executionMode` (`what` names it): `"parallel"` (the default) or
/// `"sequential"`.
pub fn execution_mode(value: &JsValue, what: &str) -> Result<ExecutionMode, String> {
    match value.as_string().as_deref() {
        _ if value.is_null_or_undefined() => Ok(ExecutionMode::Parallel),
        Some("parallel") => Ok(ExecutionMode::Parallel),
        Some("sequential") => Ok(ExecutionMode::Sequential),
        _ => Err(must_be(
            what,
            "\"parallel\" or \"sequential\"",
            describe(value),
        )),
    }
}

/// `options.toolTimeoutMs` or a tool's `timeoutMs` (`what` names it) as a whole number of milliseconds
/// (`None` when absent); which of them are timeouts is the core's rule (`check_timeout_ms`).
pub fn timeout_ms(value: &JsValue, what: &str) -> Result<Option<u32>, String> {
    if value.is_null_or_undefined() {
        return Ok(None);
    }
    match value.as_f64() {
        Some(ms) if ms.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&ms) => {
            Ok(Some(ms as u32))
        }
        _ => Err(must_be(what, TIMEOUT_MS_RULE, describe(value))),
    }
}

/// `options.customRoles`: the roles of the app's own messages (SPEC §7), each a non-empty string that is
/// none of SPEC's roles.
pub fn custom_roles(value: &JsValue) -> Result<Vec<String>, String> {
    const WHAT: &str = "options.customRoles";
    if value.is_null_or_undefined() {
        return Ok(Vec::new());
    }
    let Value::Array(listed) = array_from_js(value, WHAT, "an array of role names")? else {
        return Err(format!("{WHAT} must be an array of role names"));
    };
    let mut roles = Vec::with_capacity(listed.len());
    for (index, role) in listed.into_iter().enumerate() {
        let Value::String(role) = role else {
            let what = format!("{WHAT}[{index}]");
            return Err(must_be(&what, "a non-empty string", role));
        };
        roles.push(role);
    }
    check_custom_roles(&roles, WHAT)?;
    Ok(roles)
}

/// The options of the exports that read a transcript (`validateTranscript`, `repairTranscript`, the JSONL
/// functions): the object (empty when absent) and its `customRoles`.
pub struct TranscriptOptions {
    pub object: JsValue,
    pub custom_roles: Vec<String>,
}

impl TranscriptOptions {
    pub fn read(options: &JsValue) -> Result<TranscriptOptions, String> {
        let object = match options.is_null_or_undefined() {
            true => js_sys::Object::new().into(),
            false if is_object(options) => options.clone(),
            false => return Err(must_be("options", "an object", type_of(options))),
        };
        let roles = get(&object, "customRoles", "options.customRoles")?;
        Ok(TranscriptOptions {
            custom_roles: custom_roles(&roles)?,
            object,
        })
    }

    /// The transcript, custom-role messages read as the options say.
    pub fn messages(&self, messages: &JsValue) -> Result<Vec<AgentMessage>, String> {
        messages_from_js(messages, "messages", &self.custom_roles)
    }
}

/// A number field of an option object (`what` names it), `None` when absent; the core checks its range.
fn number_field(object: &JsValue, name: &'static str, what: &str) -> Result<Option<f64>, String> {
    let value = get(object, name, what)?;
    match value.as_f64() {
        Some(n) => Ok(Some(n)),
        None if value.is_null_or_undefined() => Ok(None),
        None => Err(must_be(what, "a number", describe(&value))),
    }
}

/// An option that must be a plain object when given (`what` names it); `None` when absent.
fn option_object(value: &JsValue, what: &str) -> Result<Option<JsValue>, String> {
    if value.is_null_or_undefined() {
        return Ok(None);
    }
    expect_plain(value, what, "a plain object")?;
    Ok(Some(value.clone()))
}

/// `options.budget` (SPEC §11): `{ maxTokens?, maxCost? }`, each a positive finite number.
pub fn budget(value: &JsValue) -> Result<Option<Budget>, String> {
    const WHAT: &str = "options.budget";
    let Some(object) = option_object(value, WHAT)? else {
        return Ok(None);
    };
    let budget = Budget {
        max_tokens: number_field(&object, "maxTokens", "options.budget.maxTokens")?,
        max_cost: number_field(&object, "maxCost", "options.budget.maxCost")?,
    };
    budget.check(WHAT)?;
    Ok(Some(budget))
}

/// `options.retry` (SPEC §12): `{ maxRetries?, baseDelayMs?, maxDelayMs?, shouldRetry? }`.
pub fn retry(value: &JsValue) -> Result<Option<RetryPolicy>, String> {
    const WHAT: &str = "options.retry";
    let Some(object) = option_object(value, WHAT)? else {
        return Ok(None);
    };
    let defaults = RetryPolicy::default();
    let max_retries = get(&object, "maxRetries", "options.retry.maxRetries")?;
    let policy = RetryPolicy {
        max_retries: count(&max_retries, "options.retry.maxRetries", 0)?,
        base_delay_ms: number_field(&object, "baseDelayMs", "options.retry.baseDelayMs")?
            .unwrap_or(defaults.base_delay_ms),
        max_delay_ms: number_field(&object, "maxDelayMs", "options.retry.maxDelayMs")?
            .unwrap_or(defaults.max_delay_ms),
        should_retry: optional_function(&object, "shouldRetry", "options.retry.shouldRetry")?
            .map(|f| Rc::new(JsShouldRetry(f)) as _),
    };
    policy.check(WHAT)?;
    Ok(Some(policy))
}

/// `options.compaction` (SPEC §13): `{ maxContextTokens, keepRecentTokens?, summarize, estimateTokens? }`.
pub fn compaction(value: &JsValue) -> Result<Option<CompactionOptions>, String> {
    const WHAT: &str = "options.compaction";
    const MAX: &str = "options.compaction.maxContextTokens";
    const KEEP: &str = "options.compaction.keepRecentTokens";
    const SUMMARIZE: &str = "options.compaction.summarize";
    const ESTIMATE: &str = "options.compaction.estimateTokens";
    let Some(object) = option_object(value, WHAT)? else {
        return Ok(None);
    };
    let options = CompactionOptions {
        max_context_tokens: number_field(&object, "maxContextTokens", MAX)?
            .ok_or_else(|| format!("{MAX} is missing"))?,
        keep_recent_tokens: number_field(&object, "keepRecentTokens", KEEP)?,
        summarize: Rc::new(JsSummarize(
            optional_function(&object, "summarize", SUMMARIZE)?
                .ok_or_else(|| format!("{SUMMARIZE} is missing"))?,
        )),
        estimate_tokens: optional_function(&object, "estimateTokens", ESTIMATE)?
            .map(|f| Rc::new(JsEstimateTokens(f)) as _),
    };
    options.check(WHAT)?;
    Ok(Some(options))
}
