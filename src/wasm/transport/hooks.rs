//! The JS functions of SPEC §7 as the core's hooks and queues: `beforeToolCall(call, ctx)`,
//! `afterToolCall(call, result, ctx)`, `prepareRequest(request, ctx)`, `getSteeringMessages()` and
//! `getFollowUpMessages()`; and those of part three: `retry.shouldRetry`, `compaction.summarize` and
//! `compaction.estimateTokens`. Each is called with the transcript's frozen objects (`ctx = { signal, step,
//! messages }`, frozen too), a returned promise is awaited, and what it returns is read here: nothing
//! (undefined or null) changes nothing; anything but the shapes SPEC names is an error naming the field,
//! which the core answers as it answers a hook that threw.

use std::cell::OnceCell;
use std::rc::Rc;

use js_sys::Function;
use wasm_bindgen::JsValue;

use super::convert::{
    array_from_js, describe, error_message, from_js, frozen_js, get, is_array, is_object,
    messages_from_js, must_be, optional_string, settle, string_of,
};
use super::glue::{define_key_js, hook_context_js, invoke_js};
use super::model::Requests;
use super::signal::{handed, never};
use crate::compaction::{EstimateTokens, Summarize};
use crate::control::{
    AfterToolCall, BeforeToolCall, Block, HookContext, MessageQueue, PrepareRequest, RequestPatch,
    ResultPatch,
};
use crate::message::{AgentMessage, ToolCall, ToolResultMessage};
use crate::model::ModelRequest;
use crate::retry::{Failure, ShouldRetry};
use crate::signal::AbortSignal;
use crate::signal::Registration;
use crate::tools::HookFuture;

/// What a run's hooks share: how its requests and transcript are shown, its custom roles, and the signal
/// that never aborts (made once, if a hook needs it: the caller gave no signal).
pub struct Hooks {
    pub requests: Requests,
    pub custom_roles: Vec<String>,
    never: OnceCell<JsValue>,
}

/// One of a run's JS hooks or queues.
pub struct JsHook {
    pub function: Function,
    pub hooks: Rc<Hooks>,
}

impl Hooks {
    pub fn new(requests: Requests, custom_roles: Vec<String>) -> Rc<Self> {
        Rc::new(Hooks {
            requests,
            custom_roles,
            never: OnceCell::new(),
        })
    }

    pub fn hook(self: &Rc<Self>, function: Function) -> JsHook {
        JsHook {
            function,
            hooks: self.clone(),
        }
    }
}

impl JsHook {
    /// Calls `function` with `args` (a queue: with none) and, for a hook, the context made of `context`:
    /// what it returned, awaited, or the message of what it threw.
    async fn call(
        &self,
        args: &[&JsValue],
        context: Option<HookContext<'_>>,
    ) -> Result<JsValue, String> {
        let (hooks, none) = (&self.hooks, JsValue::UNDEFINED);
        let (context, held) = match context {
            None => (none.clone(), Registration::none()),
            Some(context) => {
                let (signal, held) = handed(context.signal).unwrap_or_else(|| {
                    (hooks.never.get_or_init(never).clone(), Registration::none())
                });
                let messages = hooks.requests.objects.borrow_mut().view(context.messages);
                (hook_context_js(&signal, context.step, &messages), held)
            }
        };
        // The context goes after the arguments the hook takes: `f(call, ctx)`, `f(call, result, ctx)`.
        let called = match args {
            [a, b] => invoke_js(&self.function, &none, a, b, &context),
            [a] => invoke_js(&self.function, &none, a, &context, &none),
            _ => invoke_js(&self.function, &none, &none, &none, &none),
        };
        let outcome = settle(called).await;
        drop(held);
        outcome.map_err(|e| error_message(&e))
    }
}

impl BeforeToolCall for JsHook {
    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<Block>> {
        Box::pin(async move {
            let call = self.hooks.requests.objects.borrow().call(call);
            let returned = self.call(&[&call], Some(context)).await?;
            read_block(&returned)
        })
    }
}

impl AfterToolCall for JsHook {
    fn after_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        result: &'a ToolResultMessage,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<ResultPatch>> {
        Box::pin(async move {
            let (call, result) = {
                let mut objects = self.hooks.requests.objects.borrow_mut();
                (objects.call(call), objects.shown_result(result))
            };
            let returned = self.call(&[&call, &result], Some(context)).await?;
            read_result_patch(&returned)
        })
    }
}

impl PrepareRequest for JsHook {
    fn prepare_request<'a>(
        &'a self,
        request: ModelRequest<'a>,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<RequestPatch>> {
        Box::pin(async move {
            let shown = self.hooks.requests.js(&request);
            let returned = self.call(&[&shown], Some(context)).await?;
            read_request_patch(&returned, &self.hooks.custom_roles)
        })
    }
}

impl MessageQueue for JsHook {
    fn take_messages(&self) -> HookFuture<'_, Vec<AgentMessage>> {
        Box::pin(async move {
            let returned = self.call(&[], None).await?;
            if returned.is_null_or_undefined() {
                return Ok(Vec::new());
            }
            messages_from_js(&returned, "returned messages", &self.hooks.custom_roles)
        })
    }
}

/// `beforeToolCall`'s answer: nothing, `{ block: true, reason? }` or `{ block: false }`.
fn read_block(returned: &JsValue) -> Result<Option<Block>, String> {
    let Some(answer) = object(returned, "{ block: true, reason? }")? else {
        return Ok(None);
    };
    let block = get(answer, "block", "returned block")?;
    match block.as_bool() {
        Some(true) => Ok(Some(Block {
            reason: optional_string(answer, "reason", "returned reason")?,
        })),
        Some(false) => Ok(None),
        None => Err(must_be("returned block", "true or false", describe(&block))),
    }
}

/// `afterToolCall`'s answer: nothing, or `{ content?, details?, isError?, terminate? }` (an absent, undefined
/// or null field keeps the result's).
fn read_result_patch(returned: &JsValue) -> Result<Option<ResultPatch>, String> {
    let expected = "{ content?, details?, isError?, terminate? }";
    let Some(answer) = object(returned, expected)? else {
        return Ok(None);
    };
    let content = field(answer, "content")?;
    let details = field(answer, "details")?;
    Ok(Some(ResultPatch {
        content: (content.map(|c| from_js(&c, "returned content"))).transpose()?,
        details: (details.map(|d| from_js(&d, "returned details"))).transpose()?,
        is_error: boolean(answer, "isError")?,
        terminate: boolean(answer, "terminate")?,
    }))
}

/// `prepareRequest`'s answer: nothing, or a `Partial<ModelRequest>` (its messages read with the run's custom
/// roles).
fn read_request_patch(
    returned: &JsValue,
    custom_roles: &[String],
) -> Result<Option<RequestPatch>, String> {
    let Some(answer) = object(returned, "{ systemPrompt?, messages?, tools? }")? else {
        return Ok(None);
    };
    let messages = field(answer, "messages")?;
    let tools = field(answer, "tools")?;
    let definitions = "an array of tool definitions";
    Ok(Some(RequestPatch {
        system_prompt: optional_string(answer, "systemPrompt", "returned systemPrompt")?,
        messages: (messages.map(|m| messages_from_js(&m, "returned messages", custom_roles)))
            .transpose()?,
        tools: (tools.map(|t| array_from_js(&t, "returned tools", definitions))).transpose()?,
    }))
}

/// The object a hook returned; `None` for nothing (undefined or null); an error for anything else, an array too.
fn object<'v>(returned: &'v JsValue, expected: &str) -> Result<Option<&'v JsValue>, String> {
    if returned.is_null_or_undefined() {
        return Ok(None);
    }
    if !is_object(returned) || is_array(returned) {
        let got = describe(returned);
        return Err(format!("returned {got}; expected nothing or {expected}"));
    }
    Ok(Some(returned))
}

/// `answer[name]`; `None` when undefined or null.
fn field(answer: &JsValue, name: &'static str) -> Result<Option<JsValue>, String> {
    let value = get(answer, name, &format!("returned {name}"))?;
    Ok((!value.is_null_or_undefined()).then_some(value))
}

/// An optional boolean field.
fn boolean(answer: &JsValue, name: &'static str) -> Result<Option<bool>, String> {
    match field(answer, name)? {
        None => Ok(None),
        Some(value) => (value.as_bool().map(Some))
            .ok_or_else(|| must_be(&format!("returned {name}"), "a boolean", describe(&value))),
    }
}

/// `retry.shouldRetry({ error, message?, attempt }, { signal })` (SPEC §12): a boolean, perhaps a promise of
/// one.
pub struct JsShouldRetry(pub Function);

impl ShouldRetry for JsShouldRetry {
    fn should_retry<'a>(&'a self, failure: Failure<'a>) -> HookFuture<'a, bool> {
        let asked = failure_js(&failure);
        Box::pin(async move {
            let answer = call_with_signal(&self.0, &asked, failure.signal).await?;
            (answer.as_bool())
                .ok_or_else(|| must_be("shouldRetry's answer", "a boolean", describe(&answer)))
        })
    }
}

/// Calls one of part three's hooks as `f(arg, { signal })`, the signal following the run's until it settles:
/// what it returned, awaited, or the message of what it threw.
async fn call_with_signal(
    f: &Function,
    arg: &JsValue,
    signal: &AbortSignal,
) -> Result<JsValue, String> {
    let (signal, held) = handed(signal).unwrap_or_else(|| (never(), Registration::none()));
    let context = js_sys::Object::new();
    define_key_js(&context, "signal", &signal);
    let none = JsValue::UNDEFINED;
    let answer = settle(invoke_js(f, &none, arg, &context, &none)).await;
    drop(held);
    answer.map_err(|e| error_message(&e))
}

/// What `shouldRetry` is shown, frozen: `{ error, message?, attempt }`.
fn failure_js(failure: &Failure<'_>) -> JsValue {
    #[derive(serde::Serialize)]
    struct Shown<'a> {
        error: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<crate::message::WithRole<'a, crate::message::AssistantMessage>>,
        attempt: u32,
    }
    frozen_js(&Shown {
        error: failure.error,
        message: failure.message.map(|m| m.tagged()),
        attempt: failure.attempt,
    })
}

/// `compaction.summarize(messages, { signal })` (SPEC §13): the summary, a string (perhaps a promise of one).
pub struct JsSummarize(pub Function);

impl Summarize for JsSummarize {
    fn summarize<'a>(
        &'a self,
        messages: &'a [AgentMessage],
        signal: &'a AbortSignal,
    ) -> HookFuture<'a, String> {
        Box::pin(async move {
            let shown = frozen_js(messages);
            let answer = call_with_signal(&self.0, &shown, signal).await?;
            let what = "summarize's answer";
            string_of(&answer, what)?.ok_or_else(|| must_be(what, "a string", describe(&answer)))
        })
    }
}

/// `compaction.estimateTokens(message)` (SPEC §13): a number, answered at once.
pub struct JsEstimateTokens(pub Function);

impl EstimateTokens for JsEstimateTokens {
    fn estimate_tokens(&self, message: &AgentMessage) -> Result<f64, String> {
        let shown = frozen_js(message);
        let answer = self
            .0
            .call1(&JsValue::UNDEFINED, &shown)
            .map_err(|e| error_message(&e))?;
        (answer.as_f64())
            .ok_or_else(|| must_be("estimateTokens's answer", "a number", describe(&answer)))
    }
}
