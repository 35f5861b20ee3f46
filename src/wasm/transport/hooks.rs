//! The JS functions of SPEC §7 as the core's hooks and queues: `beforeToolCall(call, ctx)`,
//! `afterToolCall(call, result, ctx)`, `prepareRequest(request, ctx)`, `getSteeringMessages()` and
//! `getFollowUpMessages()`. Each is called in one `glue.js` call (`callHook`) with the run's frozen objects
//! (`ctx = { signal, step, messages }`, `messages` the transcript's objects as the mirror holds them), a
//! returned promise is awaited through `waiter.rs`, and what it returns is read here: nothing (undefined
//! or null) changes nothing; anything but the shapes SPEC names is an error naming the field, which the
//! core answers as it answers a hook that threw.

use std::cell::OnceCell;
use std::rc::Rc;

use js_sys::Function;
use wasm_bindgen::JsValue;

use super::convert::{
    array_from_js, describe, error_message, from_js, get_key, is_object, messages_from_js,
};
use super::glue::{call_hook_js, frozen_copy_js, frozen_request_js, new_controller_js};
use super::mirror::{Patched, SharedMirror};
use super::signal::handed;
use super::waiter::settle_call;
use crate::control::{
    AfterToolCall, BeforeToolCall, Block, HookContext, MessageQueue, PrepareRequest, RequestPatch,
    ResultPatch,
};
use crate::message::{AgentMessage, ToolCall, ToolResultMessage};
use crate::model::ModelRequest;
use crate::signal::{AbortSignal, Registration};
use crate::tools::HookFuture;

/// What a run's hooks share: its mirror, its custom roles, its tool definitions as JS, and the signal that
/// never aborts (made once, if a hook needs it: the caller gave no signal).
pub struct Hooks {
    mirror: SharedMirror,
    custom_roles: Vec<String>,
    definitions: JsValue,
    /// The definitions as `prepareRequest` is shown them: one frozen array for the run (nothing can change it).
    shown_tools: OnceCell<JsValue>,
    never: OnceCell<JsValue>,
}

/// One of a run's JS hooks or queues.
pub struct JsHook {
    function: Function,
    hooks: Rc<Hooks>,
}

/// `prepareRequest`, or, without one, the bridge's own look at each request of a run with custom roles:
/// either way the transcript's objects are brought up to date right before the request, which the model's
/// request is then made from (`Mirror::request_messages` leaves the custom-role messages out).
pub struct JsPrepareRequest {
    function: Option<Function>,
    hooks: Rc<Hooks>,
}

impl Hooks {
    pub fn new(mirror: SharedMirror, custom_roles: Vec<String>, definitions: JsValue) -> Rc<Self> {
        Rc::new(Hooks {
            mirror,
            custom_roles,
            definitions,
            shown_tools: OnceCell::new(),
            never: OnceCell::new(),
        })
    }

    /// The run's custom roles: a returned message of one of them is read as a custom message.
    pub fn custom_roles(&self) -> &[String] {
        &self.custom_roles
    }

    pub fn hook(self: &Rc<Self>, function: Function) -> JsHook {
        JsHook {
            function,
            hooks: self.clone(),
        }
    }

    pub fn prepare_request(self: &Rc<Self>, function: Option<Function>) -> JsPrepareRequest {
        JsPrepareRequest {
            function,
            hooks: self.clone(),
        }
    }

    /// The JS signal a hook gets, and what keeps it following `signal` while the hook runs.
    fn signal(&self, signal: &AbortSignal) -> (JsValue, Registration) {
        handed(signal).unwrap_or_else(|| {
            let never = self
                .never
                .get_or_init(|| get_key(&new_controller_js(), "signal").unwrap_or_default());
            (never.clone(), Registration::none())
        })
    }

    /// Calls `function` with `args` (none for a queue; else the subject, and the result for
    /// `afterToolCall`) and the context made of `context`; what it returned, awaited, or what it threw.
    async fn call(
        &self,
        function: &Function,
        args: &[&JsValue],
        context: Option<HookContext<'_>>,
    ) -> Result<JsValue, String> {
        let none = JsValue::UNDEFINED;
        let (arity, signal, held, step, messages) = match context {
            None => (0, none.clone(), Registration::none(), 0, none.clone()),
            Some(context) => {
                let (signal, held) = self.signal(context.signal);
                let messages = self.mirror.borrow_mut().hook_view(context.messages);
                let arity = args.len() as u32 + 1;
                (arity, signal, held, context.step, messages)
            }
        };
        let (a, b) = (args.first().copied(), args.get(1).copied());
        let (a, b) = (a.unwrap_or(&none), b.unwrap_or(&none));
        let outcome = settle_call(|waiter, id| {
            call_hook_js(function, arity, a, b, &signal, step, &messages, waiter, id)
        })
        .await;
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
            let call = self.hooks.mirror.borrow_mut().call(call);
            let returned = self
                .hooks
                .call(&self.function, &[&call], Some(context))
                .await?;
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
            let (call_js, result_js) = {
                let mut mirror = self.hooks.mirror.borrow_mut();
                // Up to date first: catching up later would drop the result object made here, and
                // `tool_end` would make another.
                mirror.catch_up(context.messages);
                (mirror.call(call), mirror.result(result))
            };
            let args = [&call_js, &result_js];
            let returned = self.hooks.call(&self.function, &args, Some(context)).await;
            let patch = returned.and_then(|returned| read_result_patch(&returned));
            // A result the patch (or an error result) replaces gets its own object at its `tool_end`.
            let kept = match &patch {
                Ok(None) => true,
                Ok(Some(p)) => !p.changes_result(),
                Err(_) => false,
            };
            if !kept {
                self.hooks
                    .mirror
                    .borrow_mut()
                    .forget_result(&result.tool_call_id);
            }
            patch
        })
    }
}

impl PrepareRequest for JsPrepareRequest {
    fn prepare_request<'a>(
        &'a self,
        request: ModelRequest<'a>,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<RequestPatch>> {
        Box::pin(async move {
            let hooks = &self.hooks;
            let Some(function) = &self.function else {
                hooks.mirror.borrow_mut().catch_up(context.messages);
                return Ok(None);
            };
            let (system_prompt, messages) = {
                let mut mirror = hooks.mirror.borrow_mut();
                mirror.catch_up(context.messages);
                let system_prompt = mirror.system_prompt(request.system_prompt);
                (system_prompt, mirror.request_messages(request.messages))
            };
            let tools =
                (hooks.shown_tools).get_or_init(|| frozen_copy_js(&hooks.definitions).into());
            let shown = frozen_request_js(&system_prompt, &messages, tools);
            let returned = hooks.call(function, &[&shown], Some(context)).await?;
            let patch = read_request_patch(&returned, &hooks.custom_roles)?;
            if let Some(patch) = &patch {
                hooks.mirror.borrow_mut().patch_request(Patched {
                    messages: patch.messages.is_some(),
                    tools: patch.tools.is_some(),
                });
            }
            Ok(patch)
        })
    }
}

impl MessageQueue for JsHook {
    fn take_messages(&self) -> HookFuture<'_, Vec<AgentMessage>> {
        Box::pin(async move {
            let returned = self.hooks.call(&self.function, &[], None).await?;
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
    let block = get_key(answer, "block").map_err(|e| threw("block", &e))?;
    match block.as_bool() {
        Some(true) => Ok(Some(Block {
            reason: string(answer, "reason")?,
        })),
        Some(false) => Ok(None),
        None => Err(format!(
            "returned block must be true or false (got {})",
            describe(&block)
        )),
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
        content: (content.map(|c| from_js(&c, "returned content", "mediaBlocks"))).transpose()?,
        details: (details.map(|d| from_js(&d, "returned details", "any"))).transpose()?,
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
        system_prompt: string(answer, "systemPrompt")?,
        messages: (messages.map(|m| messages_from_js(&m, "returned messages", custom_roles)))
            .transpose()?,
        tools: (tools.map(|t| array_from_js(&t, "returned tools", definitions, "toolDefinitions")))
            .transpose()?,
    }))
}

/// The object a hook returned; `None` for nothing (undefined or null); an error for anything else.
fn object<'v>(returned: &'v JsValue, expected: &str) -> Result<Option<&'v JsValue>, String> {
    if returned.is_null_or_undefined() {
        return Ok(None);
    }
    if !is_object(returned) {
        return Err(format!(
            "returned {}; expected nothing or {expected}",
            describe(returned)
        ));
    }
    Ok(Some(returned))
}

/// `answer[name]`; `None` when undefined or null.
fn field(answer: &JsValue, name: &'static str) -> Result<Option<JsValue>, String> {
    let value = get_key(answer, name).map_err(|e| threw(name, &e))?;
    Ok((!value.is_null_or_undefined()).then_some(value))
}

/// An optional string field.
fn string(answer: &JsValue, name: &'static str) -> Result<Option<String>, String> {
    match field(answer, name)? {
        None => Ok(None),
        Some(value) => (value.as_string().map(Some)).ok_or_else(|| {
            format!(
                "returned {name} must be a string (got {})",
                describe(&value)
            )
        }),
    }
}

/// An optional boolean field.
fn boolean(answer: &JsValue, name: &'static str) -> Result<Option<bool>, String> {
    match field(answer, name)? {
        None => Ok(None),
        Some(value) => (value.as_bool().map(Some)).ok_or_else(|| {
            format!(
                "returned {name} must be a boolean (got {})",
                describe(&value)
            )
        }),
    }
}

/// A getter of the returned object that threw.
fn threw(name: &str, error: &JsValue) -> String {
    format!("returned {name}: {}", error_message(error))
}
