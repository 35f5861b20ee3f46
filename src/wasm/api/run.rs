//! `runAgentLoop`: its options checked and converted (`Setup`, which `Agent` shares), the core's loop run
//! over the transport's JS model, tools and observer, and the result made from the transcript's objects.

use std::rc::Rc;

use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;

use super::approvals::RunApprovals;
use super::options;
use super::registry::registry_snapshot;
use crate::agent_loop::{run_agent_loop, AgentContext, LoopOptions};
use crate::compaction::CompactionOptions;
use crate::control::LoopControl;
use crate::event::RunResult;
use crate::retry::RetryPolicy;
use crate::signal::AbortSignal;
use crate::tools::{Clock, ExecutionMode, ToolDefinition, ToolRegistry};
use crate::usage::Budget;
use crate::wasm::transport::convert::{
    expect_object, frozen_js, get, is_object, must_be, optional_function, promise, to_js,
    type_error, type_of,
};
use crate::wasm::transport::events::JsObserver;
use crate::wasm::transport::glue::define_key_js;
use crate::wasm::transport::hooks::{Hooks, JsHook};
use crate::wasm::transport::model::{JsModel, Requests};
use crate::wasm::transport::objects::SharedObjects;
use crate::wasm::transport::timers::JsTimers;
use crate::wasm::transport::tools::{JsExecutor, RunExecutor};

/// Runs the agent loop until the model stops, the output is truncated, an error or abort ends it, or the
/// step limit is reached. Rejects with a `TypeError` naming the field when an option is malformed.
/// (Declared in `types.d.ts`: it is generic over the model's assistant message type.)
#[wasm_bindgen(js_name = runAgentLoop, skip_typescript)]
pub fn run_agent_loop_js(options: JsValue) -> Promise {
    // Read now, while the caller's frame is on the stack: a `TypeError` names the caller's line.
    let read = |_entered| RunInput::parse(&options).map_err(type_error);
    let run = match super::enter().and_then(read) {
        Ok(run) => run,
        Err(error) => return Promise::reject(&error),
    };
    promise(async move {
        let RunInput {
            setup,
            context,
            signal,
            observer,
            approval,
        } = run;
        let result = run_agent_loop(LoopOptions {
            context,
            model: &setup.model,
            tools: setup.definitions.clone(),
            executor: &setup.executor,
            signal,
            max_steps: setup.max_steps,
            observer: &observer,
            clock: setup.clock.clone(),
            control: LoopControl {
                approvals: approval.approvals,
                start_steps: approval.start_steps,
                ..setup.control.borrow()
            },
        })
        .await
        .map_err(|error| {
            type_error(error.describe(&|i| format!("options.context.messages[{i}]")))
        })?;
        let messages = setup.objects.borrow_mut().array(&result.messages);
        Ok(run_result(&result, &messages))
    })
}

/// `{ reason, messages, steps, usage, retries, error?, observerError?, pending? }`, `messages` the
/// transcript's objects.
pub fn run_result(result: &RunResult, messages: &js_sys::Array) -> JsValue {
    let object = Object::new();
    let set = |key: &str, value: &JsValue| define_key_js(&object, key, value);
    set("reason", &JsValue::from_str(result.reason.as_str()));
    set("messages", messages);
    set("steps", &JsValue::from(result.steps));
    set("usage", &to_js(&result.usage));
    set("retries", &JsValue::from(result.retries));
    if let Some(error) = &result.error {
        set("error", &JsValue::from_str(error));
    }
    if let Some(error) = &result.observer_error {
        set("observerError", &JsValue::from_str(error));
    }
    if let Some(pending) = &result.pending {
        // The calls of a paused run's last batch, as frozen objects in a frozen array.
        set("pending", &frozen_js(pending));
    }
    object.into()
}

/// `runAgentLoop`'s options, checked and converted.
struct RunInput {
    setup: Setup,
    context: AgentContext,
    signal: AbortSignal,
    observer: JsObserver,
    /// `approvals` and `startSteps` (SPEC §8).
    approval: RunApprovals,
}

impl RunInput {
    fn parse(options: &JsValue) -> Result<RunInput, String> {
        expect_object(options, "options", "an object")?;
        let setup = Setup::read(options)?;
        let context = get(options, "context", "options.context")?;
        let context = options::context(&context, &setup.custom_roles)?;
        setup.objects.borrow_mut().resuming(&context.messages);
        Ok(RunInput {
            context,
            signal: options::signal(&get(options, "signal", "options.signal")?, "options.signal")?,
            observer: JsObserver {
                on_event: optional_function(options, "onEvent", "options.onEvent")?,
                objects: setup.objects.clone(),
            },
            approval: RunApprovals::read(options)?,
            setup,
        })
    }
}

/// What a run and an `Agent` are made of, read from their options (`options` in errors): the model,
/// the tools and how they run, the hooks of SPEC §7, the step limit and the clock, all over one table of the
/// transcript's JS objects.
pub struct Setup {
    pub objects: SharedObjects,
    pub model: JsModel,
    pub definitions: Vec<ToolDefinition>,
    pub executor: RunExecutor,
    pub custom_roles: Vec<String>,
    pub max_steps: u32,
    pub clock: Clock,
    pub control: ControlInput,
}

impl Setup {
    pub fn read(options: &JsValue) -> Result<Setup, String> {
        let tools = tools_option(&get(options, "tools", "options.tools")?, "options.tools")?;
        let custom = optional_function(options, "executeToolCall", "options.executeToolCall")?
            .map(|execute| JsExecutor::new(execute, JsValue::UNDEFINED, "executeToolCall"));
        let objects = SharedObjects::default();
        let definitions = tools.definitions;
        let requests = Requests::new(definitions.clone(), objects.clone());
        let (model, stream) = options::model(get(options, "model", "options.model")?)?;
        let custom_roles =
            options::custom_roles(&get(options, "customRoles", "options.customRoles")?)?;
        let hooks = Hooks::new(requests.clone(), custom_roles.clone());
        Ok(Setup {
            model: JsModel {
                model,
                stream,
                requests,
                streamed: Default::default(),
            },
            executor: RunExecutor {
                registry: tools.registry,
                // executeToolCall replaces whatever runs the tools (SPEC §3).
                custom: custom.or(tools.executor),
                objects: objects.clone(),
            },
            definitions,
            custom_roles,
            max_steps: options::max_steps(&get(options, "maxSteps", "options.maxSteps")?)?,
            clock: options::clock(optional_function(options, "now", "options.now")?),
            control: ControlInput::parse(options, &hooks)?,
            objects,
        })
    }
}

/// SPEC §7's options and part three's, checked and converted: how calls run, the JS hooks and queues, the
/// budget, the retry policy and compaction.
pub struct ControlInput {
    pub tool_execution: ExecutionMode,
    pub tool_timeout_ms: Option<u32>,
    pub before_tool_call: Option<JsHook>,
    pub after_tool_call: Option<JsHook>,
    pub prepare_request: Option<JsHook>,
    pub steering: Option<JsHook>,
    pub follow_up: Option<JsHook>,
    pub hooks: Rc<Hooks>,
    pub budget: Option<Budget>,
    pub retry: Option<RetryPolicy>,
    pub compaction: Option<CompactionOptions>,
}

impl ControlInput {
    fn parse(options: &JsValue, hooks: &Rc<Hooks>) -> Result<ControlInput, String> {
        let hook = |name: &'static str, what: &str| -> Result<Option<JsHook>, String> {
            let function = optional_function(options, name, what)?;
            Ok(function.map(|f| hooks.hook(f)))
        };
        let execution = get(options, "toolExecution", "options.toolExecution")?;
        let timeout = get(options, "toolTimeoutMs", "options.toolTimeoutMs")?;
        Ok(ControlInput {
            tool_execution: options::execution_mode(&execution, "options.toolExecution")?,
            tool_timeout_ms: options::timeout_ms(&timeout, "options.toolTimeoutMs")?,
            before_tool_call: hook("beforeToolCall", "options.beforeToolCall")?,
            after_tool_call: hook("afterToolCall", "options.afterToolCall")?,
            prepare_request: hook("prepareRequest", "options.prepareRequest")?,
            steering: hook("getSteeringMessages", "options.getSteeringMessages")?,
            follow_up: hook("getFollowUpMessages", "options.getFollowUpMessages")?,
            hooks: hooks.clone(),
            budget: options::budget(&get(options, "budget", "options.budget")?)?,
            retry: options::retry(&get(options, "retry", "options.retry")?)?,
            compaction: options::compaction(&get(options, "compaction", "options.compaction")?)?,
        })
    }

    /// The core's `LoopControl` over these (JS timers for the timeouts); SPEC §8's parts the caller adds.
    pub fn borrow(&self) -> LoopControl<'_> {
        LoopControl {
            tool_execution: self.tool_execution,
            tool_timeout_ms: self.tool_timeout_ms,
            before_tool_call: self.before_tool_call.as_ref().map(|h| h as _),
            after_tool_call: self.after_tool_call.as_ref().map(|h| h as _),
            prepare_request: self.prepare_request.as_ref().map(|h| h as _),
            steering: self.steering.as_ref().map(|h| h as _),
            follow_up: self.follow_up.as_ref().map(|h| h as _),
            custom_roles: self.hooks.custom_roles.clone(),
            timers: &JsTimers,
            budget: self.budget,
            retry: self.retry.as_ref(),
            compaction: self.compaction.as_ref(),
            ..LoopControl::default()
        }
    }
}

/// `options.tools`: a `ToolRegistry` (its snapshot), or a tool source of the caller's own, whose definitions
/// are read once and whose `execute` runs the calls with the source as `this`.
struct ToolsInput {
    registry: Rc<ToolRegistry>,
    definitions: Vec<ToolDefinition>,
    executor: Option<JsExecutor>,
}

fn tools_option(tools: &JsValue, what: &str) -> Result<ToolsInput, String> {
    if tools.is_null_or_undefined() {
        return Ok(registry_input(Rc::default()));
    }
    let expected = "a ToolRegistry or an object with definitions() and execute(call, context)";
    let refused = || must_be(what, expected, type_of(tools));
    if !is_object(tools) {
        return Err(refused());
    }
    if let Some(snapshot) = registry_snapshot(tools) {
        let gone = || {
            format!(
                "{what} is not a live ToolRegistry of this entry (freed, in its register(), or made by another \
                 of tiny-pi's entries: take ToolRegistry from the entry whose loop or Agent runs it)"
            )
        };
        return snapshot.map(registry_input).ok_or_else(gone);
    }
    let (definitions, execute) = options::tool_source(tools)?.ok_or_else(refused)?;
    let executor = JsExecutor::new(execute, tools.clone(), "options.tools.execute");
    Ok(ToolsInput {
        registry: Rc::default(),
        definitions,
        executor: Some(executor),
    })
}

fn registry_input(registry: Rc<ToolRegistry>) -> ToolsInput {
    ToolsInput {
        definitions: registry.definitions(),
        registry,
        executor: None,
    }
}
