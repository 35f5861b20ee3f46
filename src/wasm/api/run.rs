//! `runAgentLoop`: its options checked and converted, the core's loop run over the transport's JS model,
//! tools and observer, and the result made from the run's mirror.

use std::rc::Rc;

use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;

use super::approvals::{pending_js, RunApprovals};
use super::options;
use super::registry::registry_snapshot;
use crate::agent_loop::{run_agent_loop, AgentContext, LoopOptions};
use crate::control::LoopControl;
use crate::event::RunResult;
use crate::signal::AbortSignal;
use crate::tools::{Clock, ExecutionMode, RegistryApprovals, ToolDefinition, ToolRegistry};
use crate::wasm::transport::convert::{
    get, is_object, optional_function, set, type_error, type_of,
};
use crate::wasm::transport::events::JsObserver;
use crate::wasm::transport::hooks::{Hooks, JsHook, JsPrepareRequest};
use crate::wasm::transport::mirror::{frozen_js, InMirror, SharedMirror};
use crate::wasm::transport::model::JsModel;
use crate::wasm::transport::task::spawn_promise;
use crate::wasm::transport::timers::JsTimers;
use crate::wasm::transport::tools::JsExecutor;

/// Runs the agent loop until the model stops, the output is truncated, an error or abort ends it, or the
/// step limit is reached. Rejects with a `TypeError` naming the field when an option is malformed.
/// (Declared in `types.d.ts`: it is generic over the model's assistant message type.)
#[wasm_bindgen(js_name = runAgentLoop, skip_typescript)]
pub fn run_agent_loop_js(options: JsValue) -> Promise {
    spawn_promise(async move {
        let run = RunInput::parse(&options).map_err(type_error)?;
        let executor = RegistryApprovals {
            runner: match &run.executor {
                Some(custom) => custom,
                None => &*run.registry,
            },
            registry: &run.registry,
        };
        run.mirror.borrow_mut().start(&run.context.messages);
        // Polled in its mirror: a JS tool finds its call's object there (`mirror::running_call`).
        let polled = InMirror::new(
            run.mirror.clone(),
            run_agent_loop(LoopOptions {
                context: run.context,
                model: &run.model,
                tools: run.definitions,
                executor: &executor,
                signal: run.signal,
                max_steps: run.max_steps,
                observer: &run.observer,
                clock: run.clock,
                control: LoopControl {
                    approvals: run.approval.approvals,
                    start_steps: run.approval.start_steps,
                    ..run.control.borrow()
                },
            }),
        );
        let result = polled
            .await
            .map_err(|error| type_error(format!("options.{error}")))?;
        Ok(run_result(&result, &run.mirror))
    })
}

/// `{ reason, messages, steps, error?, observerError? }`, the messages being the objects that already
/// crossed during the run.
fn run_result(result: &RunResult, mirror: &SharedMirror) -> JsValue {
    let object: JsValue = Object::new().into();
    set(
        &object,
        "reason",
        &JsValue::from_str(result.reason.as_str()),
    );
    set(
        &object,
        "messages",
        &mirror.borrow_mut().sync(&result.messages),
    );
    set(&object, "steps", &JsValue::from(result.steps));
    if let Some(error) = &result.error {
        set(&object, "error", &JsValue::from_str(error));
    }
    if let Some(error) = &result.observer_error {
        set(&object, "observerError", &JsValue::from_str(error));
    }
    if let Some(pending) = &result.pending {
        set(&object, "pending", &pending_js(pending));
    }
    object
}

/// `runAgentLoop`'s options, checked and converted.
struct RunInput {
    context: AgentContext,
    model: JsModel,
    registry: Rc<ToolRegistry>,
    /// The tools' definitions, made once for the core and (as JS) for every request.
    definitions: Vec<ToolDefinition>,
    executor: Option<JsExecutor>,
    signal: AbortSignal,
    max_steps: u32,
    observer: JsObserver,
    clock: Clock,
    mirror: SharedMirror,
    control: ControlInput,
    /// `approvals` and `startSteps` (SPEC §8).
    approval: RunApprovals,
}

impl RunInput {
    fn parse(options: &JsValue) -> Result<RunInput, String> {
        if !is_object(options) {
            return Err(format!(
                "options must be an object (got {})",
                type_of(options)
            ));
        }
        let tools = tools_option(&get(options, "tools", "options.tools")?)?;
        let execute_tool_call =
            optional_function(options, "executeToolCall", "options.executeToolCall")?.map(
                |execute| JsExecutor {
                    execute,
                    this: JsValue::UNDEFINED,
                    what: "executeToolCall",
                },
            );
        let definitions = tools.definitions;
        // Frozen, deeply: every request shares these objects, so a model or `prepareRequest` that could
        // change one would change what every later request offers.
        let definitions_js = frozen_js(&definitions);
        let mirror = SharedMirror::default();
        let (model, stream) = options::model(get(options, "model", "options.model")?)?;
        let model = JsModel::new(model, stream, definitions_js.clone(), mirror.clone());
        let custom_roles =
            options::custom_roles(&get(options, "customRoles", "options.customRoles")?)?;
        let context =
            options::context(&get(options, "context", "options.context")?, &custom_roles)?;
        let hooks = Hooks::new(mirror.clone(), custom_roles, definitions_js);
        Ok(RunInput {
            context,
            model,
            registry: tools.registry,
            definitions,
            // executeToolCall replaces whatever runs the tools (SPEC §3).
            executor: execute_tool_call.or(tools.executor),
            signal: options::signal(&get(options, "signal", "options.signal")?, "options.signal")?,
            max_steps: options::max_steps(&get(options, "maxSteps", "options.maxSteps")?)?,
            observer: JsObserver {
                on_event: optional_function(options, "onEvent", "options.onEvent")?,
                mirror: mirror.clone(),
            },
            clock: options::clock(optional_function(options, "now", "options.now")?),
            mirror,
            control: ControlInput::parse(options, hooks)?,
            approval: RunApprovals::read(options)?,
        })
    }
}

/// SPEC §7's options of a run, checked and converted: how calls run, the JS hooks and queues, the custom
/// roles.
struct ControlInput {
    tool_execution: ExecutionMode,
    tool_timeout_ms: Option<u32>,
    before_tool_call: Option<JsHook>,
    after_tool_call: Option<JsHook>,
    prepare_request: Option<JsPrepareRequest>,
    steering: Option<JsHook>,
    follow_up: Option<JsHook>,
    /// The custom roles are theirs (read first, with the context, by `RunInput::parse`).
    hooks: Rc<Hooks>,
}

impl ControlInput {
    fn parse(options: &JsValue, hooks: Rc<Hooks>) -> Result<ControlInput, String> {
        let hook = |name: &'static str, what: &str| -> Result<Option<JsHook>, String> {
            Ok(optional_function(options, name, what)?.map(|f| hooks.hook(f)))
        };
        let prepare = optional_function(options, "prepareRequest", "options.prepareRequest")?;
        // Without a hook of its own, a run with custom roles still has the bridge look at each request.
        let prepare_request = (prepare.is_some() || !hooks.custom_roles().is_empty())
            .then(|| hooks.prepare_request(prepare));
        Ok(ControlInput {
            tool_execution: options::execution_mode(
                &get(options, "toolExecution", "options.toolExecution")?,
                "options.toolExecution",
            )?,
            tool_timeout_ms: options::timeout_ms(
                &get(options, "toolTimeoutMs", "options.toolTimeoutMs")?,
                "options.toolTimeoutMs",
            )?,
            before_tool_call: hook("beforeToolCall", "options.beforeToolCall")?,
            after_tool_call: hook("afterToolCall", "options.afterToolCall")?,
            prepare_request,
            steering: hook("getSteeringMessages", "options.getSteeringMessages")?,
            follow_up: hook("getFollowUpMessages", "options.getFollowUpMessages")?,
            hooks,
        })
    }

    /// The core's `LoopControl` over these (JS timers for the timeouts); SPEC §8's parts the caller adds.
    fn borrow(&self) -> LoopControl<'_> {
        LoopControl {
            tool_execution: self.tool_execution,
            tool_timeout_ms: self.tool_timeout_ms,
            before_tool_call: self.before_tool_call.as_ref().map(|h| h as _),
            after_tool_call: self.after_tool_call.as_ref().map(|h| h as _),
            prepare_request: self.prepare_request.as_ref().map(|h| h as _),
            steering: self.steering.as_ref().map(|h| h as _),
            follow_up: self.follow_up.as_ref().map(|h| h as _),
            custom_roles: self.hooks.custom_roles().to_vec(),
            timers: &JsTimers,
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

fn tools_option(tools: &JsValue) -> Result<ToolsInput, String> {
    if tools.is_null_or_undefined() {
        return Ok(registry_input(Rc::default()));
    }
    let refused = || {
        format!(
            "options.tools must be a ToolRegistry or an object with definitions() and execute(call, context) (got {})",
            type_of(tools)
        )
    };
    if !is_object(tools) {
        return Err(refused());
    }
    if let Some(snapshot) = registry_snapshot(tools) {
        return snapshot.map(registry_input).ok_or_else(refused);
    }
    let (definitions, execute) = options::tool_source(tools)?.ok_or_else(refused)?;
    Ok(ToolsInput {
        registry: Rc::default(),
        definitions,
        executor: Some(JsExecutor {
            execute,
            this: tools.clone(),
            what: "options.tools.execute",
        }),
    })
}

fn registry_input(registry: Rc<ToolRegistry>) -> ToolsInput {
    ToolsInput {
        definitions: registry.definitions(),
        registry,
        executor: None,
    }
}
