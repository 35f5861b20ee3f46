//! The JavaScript bridge: converts at the edge and delegates to the core. No rule of the loop lives here.
//!
//! Every entry point validates what JS hands it and answers a `TypeError` naming the field; nothing here
//! may panic (a trap would poison the instance for every later call).

mod convert;
mod glue;
mod js_model;
mod js_tools;
mod mirror;
mod observer;
mod promise;
mod read;
mod regexp;
mod signal;
mod task;

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function, Object, Promise, Reflect, Symbol};
use serde::Deserialize;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::prelude::*;

use crate::agent_loop::{run_agent_loop, AgentContext, LoopOptions, DEFAULT_MAX_STEPS};
use crate::message::{AgentMessage, AssistantMessage, MediaBlock, ToolCall};
use crate::model::{EventGrammar, Model, ModelRequest, ScriptedStream};
use crate::signal::AbortSignal;
use crate::tools::{Clock, ExecutionContext, Tool, ToolDefinition, ToolExecutor, ToolRegistry};
use crate::trace::TraceRecord;
use convert::{
    array_from_js, from_js, get, is_object, optional_function, set, to_js, type_error, type_of,
};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = include_str!("types.d.ts");

// ---------------------------------------------------------------------------------------------------------
// runAgentLoop

/// Runs the agent loop until the model stops, the output is truncated, an error or abort ends it, or the
/// step limit is reached. Rejects with a `TypeError` naming the field when an option is malformed.
/// (Declared in `types.d.ts`: it is generic over the model's assistant message type.)
#[wasm_bindgen(js_name = runAgentLoop, skip_typescript)]
pub fn run_agent_loop_js(options: JsValue) -> Promise {
    task::spawn_promise(async move {
        let run = RunInput::parse(&options).map_err(type_error)?;
        let executor: &dyn ToolExecutor = match &run.executor {
            Some(executor) => executor,
            None => &run.registry,
        };
        let result = run_agent_loop(LoopOptions {
            context: run.context,
            model: &run.model,
            tools: run.definitions,
            executor,
            signal: run.signal,
            max_steps: run.max_steps,
            observer: &run.observer,
            clock: run.clock,
            control: Default::default(),
        })
        .await
        .map_err(|error| type_error(format!("options.{error}")))?;
        Ok(run_result(&result, &run.mirror))
    })
}

/// `{ reason, messages, steps, error?, observerError? }`, the messages being the objects that already
/// crossed during the run.
fn run_result(result: &crate::event::RunResult, mirror: &mirror::SharedMirror) -> JsValue {
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
    object
}

/// `runAgentLoop`'s options, checked and converted.
struct RunInput {
    context: AgentContext,
    model: js_model::JsModel,
    registry: ToolRegistry,
    /// The registry's definitions, made once for the core and (as JS) for every request.
    definitions: Vec<ToolDefinition>,
    executor: Option<js_tools::JsExecutor>,
    signal: AbortSignal,
    max_steps: u32,
    observer: observer::JsObserver,
    clock: Clock,
    mirror: mirror::SharedMirror,
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
        let executor = optional_function(options, "executeToolCall", "options.executeToolCall")?
            .map(|execute| js_tools::JsExecutor {
                execute,
                this: JsValue::UNDEFINED,
                what: "executeToolCall",
            });
        let definitions = tools.definitions;
        let mirror = mirror::SharedMirror::default();
        let model = js_model::JsModel::new(
            get(options, "model", "options.model")?,
            to_js(&definitions),
            mirror.clone(),
        )?;
        Ok(RunInput {
            context: context_option(&get(options, "context", "options.context")?)?,
            model,
            registry: tools.registry,
            definitions,
            // executeToolCall replaces whatever runs the tools (SPEC §3).
            executor: executor.or(tools.executor),
            signal: signal_option(&get(options, "signal", "options.signal")?, "options.signal")?,
            max_steps: max_steps_option(&get(options, "maxSteps", "options.maxSteps")?)?,
            observer: observer::JsObserver {
                on_event: optional_function(options, "onEvent", "options.onEvent")?,
                mirror: mirror.clone(),
            },
            clock: clock_option(optional_function(options, "now", "options.now")?),
            mirror,
        })
    }
}

fn context_option(context: &JsValue) -> Result<AgentContext, String> {
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
    // Converting is the deep copy: the caller's array and objects are never touched again.
    let messages: Vec<AgentMessage> = array_from_js(
        &messages,
        "options.context.messages",
        "an array",
        "messages",
    )?;
    Ok(AgentContext {
        system_prompt,
        messages,
    })
}

/// `options.tools`: a `ToolRegistry`, or a tool source of the caller's own (any object with
/// `definitions()` and `execute(call, context)`, like the registry's own methods: a conformance runner's
/// tools, say), whose definitions are read once and whose `execute` runs the calls.
struct ToolsInput {
    registry: ToolRegistry,
    definitions: Vec<ToolDefinition>,
    executor: Option<js_tools::JsExecutor>,
}

fn tools_option(tools: &JsValue) -> Result<ToolsInput, String> {
    if tools.is_undefined() || tools.is_null() {
        return Ok(registry_input(ToolRegistry::new()));
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
    if let Some(registry) = optional_function(tools, "__tinyPiRegistry", "options.tools")
        .ok()
        .flatten()
    {
        let handle = registry.call0(tools).map_err(|_| refused())?;
        let handle = RegistryHandle::try_from_js_value(handle).map_err(|_| refused())?;
        // A run works on a snapshot: registering during a run affects the next run, not this one.
        let snapshot = handle.0.try_borrow().map(|r| r.clone());
        return snapshot.map(registry_input).map_err(|_| refused());
    }
    let definitions = optional_function(tools, "definitions", "options.tools.definitions")?;
    let execute = optional_function(tools, "execute", "options.tools.execute")?;
    let (Some(definitions), Some(execute)) = (definitions, execute) else {
        return Err(refused());
    };
    let listed = definitions.call0(tools).map_err(|e| {
        format!(
            "options.tools.definitions() threw: {}",
            convert::error_message(&e)
        )
    })?;
    Ok(ToolsInput {
        registry: ToolRegistry::new(),
        definitions: array_from_js(
            &listed,
            "options.tools.definitions()",
            "an array of tool definitions",
            "toolDefinitions",
        )?,
        executor: Some(js_tools::JsExecutor {
            execute,
            this: tools.clone(),
            what: "options.tools.execute",
        }),
    })
}

fn registry_input(registry: ToolRegistry) -> ToolsInput {
    ToolsInput {
        definitions: registry.definitions(),
        registry,
        executor: None,
    }
}

fn signal_option(signal: &JsValue, what: &str) -> Result<AbortSignal, String> {
    if signal.is_undefined() || signal.is_null() {
        return Ok(AbortSignal::none());
    }
    let signal = signal
        .dyn_ref::<web_sys::AbortSignal>()
        .ok_or_else(|| format!("{what} must be an AbortSignal (got {})", type_of(signal)))?;
    // Something made from AbortSignal.prototype passes instanceof but cannot say whether it is aborted.
    signal::JsSignal::read(signal).map_err(|e| {
        format!(
            "{what} must be an AbortSignal (reading its aborted flag threw: {})",
            convert::error_message(&e)
        )
    })?;
    Ok(AbortSignal::from_source(Rc::new(signal::JsSignal(
        signal.clone(),
    ))))
}

fn max_steps_option(value: &JsValue) -> Result<u32, String> {
    if value.is_undefined() {
        return Ok(DEFAULT_MAX_STEPS);
    }
    match value.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX) => Ok(n as u32),
        _ => Err(format!(
            "options.maxSteps must be a non-negative integer (got {})",
            describe(value)
        )),
    }
}

fn describe(value: &JsValue) -> String {
    match value.as_f64() {
        Some(_) => glue::show_js(value),
        None => value
            .as_string()
            .map(|s| format!("string \"{s}\""))
            .unwrap_or_else(|| type_of(value)),
    }
}

/// `options.now`, falling back to `Date.now()` when absent or when it does not give a finite number.
fn clock_option(now: Option<Function>) -> Clock {
    Rc::new(move || {
        now.as_ref()
            .and_then(glue::read_clock_js)
            .filter(|t| t.is_finite())
            .unwrap_or_else(js_sys::Date::now)
    })
}

// ---------------------------------------------------------------------------------------------------------
// ScriptedModel

/// The offline, deterministic model: replays assistant messages, one per request, and records what each
/// request saw.
#[wasm_bindgen(js_name = ScriptedModel)]
pub struct JsScriptedModel(crate::model::ScriptedModel);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnedRequest {
    #[serde(default)]
    system_prompt: Option<String>,
    messages: Vec<AgentMessage>,
    #[serde(default)]
    tools: Vec<ToolDefinition>,
}

#[wasm_bindgen(js_class = ScriptedModel)]
impl JsScriptedModel {
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "AssistantMessage[]")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ScriptedModelOptions")] options: JsValue,
    ) -> Result<JsScriptedModel, JsValue> {
        let script: Vec<AssistantMessage> = array_from_js(
            &messages,
            "ScriptedModel: messages",
            "an array of assistant messages",
            "assistants",
        )
        .map_err(type_error)?;
        let grammar = grammar_option(&options).map_err(type_error)?;
        Ok(JsScriptedModel(
            crate::model::ScriptedModel::new(script).with_grammar(grammar),
        ))
    }

    /// Replays the next scripted message as a stream of pi-ai events. Throws past the end of the script.
    #[wasm_bindgen(unchecked_return_type = "ModelStream & { result(): Promise<AssistantMessage> }")]
    pub fn stream(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ModelRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ signal?: AbortSignal }")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let request: OwnedRequest =
            from_js(&request, "request", "modelRequest").map_err(type_error)?;
        let signal = match is_object(&options) {
            true => signal_option(
                &get(&options, "signal", "options.signal").map_err(type_error)?,
                "options.signal",
            )
            .map_err(type_error)?,
            false => AbortSignal::none(),
        };
        let borrowed = ModelRequest {
            system_prompt: request.system_prompt.as_deref(),
            messages: &request.messages,
            tools: &request.tools,
        };
        let stream = self
            .0
            .stream(borrowed, &signal)
            .map_err(|e| JsValue::from(js_sys::Error::new(&e)))?;
        let stream: JsValue = JsScriptedStream(stream).into();
        // `for await` asks for [Symbol.asyncIterator]() and expects the iterator: the stream is its own
        // iterator, and Object.prototype.valueOf is a built-in function that returns `this`.
        let identity = get(&Object::new(), "valueOf", "valueOf").map_err(type_error)?;
        let _ = Reflect::set(&stream, &Symbol::async_iterator(), &identity);
        Ok(stream)
    }

    /// What each request saw, in order (copies).
    #[wasm_bindgen(getter, unchecked_return_type = "ModelRequest[]")]
    pub fn requests(&self) -> JsValue {
        to_js(&self.0.requests())
    }
}

/// `{ events?: "compact" | "pi-ai" }`, absent meaning the compact grammar.
fn grammar_option(options: &JsValue) -> Result<EventGrammar, String> {
    if options.is_undefined() || options.is_null() {
        return Ok(EventGrammar::default());
    }
    if !is_object(options) {
        return Err(format!(
            "ScriptedModel: options must be an object (got {})",
            type_of(options)
        ));
    }
    let events = get(options, "events", "ScriptedModel: options.events")?;
    if events.is_undefined() {
        return Ok(EventGrammar::default());
    }
    events
        .as_string()
        .and_then(|name| EventGrammar::parse(&name))
        .ok_or_else(|| {
            format!(
                "ScriptedModel: options.events must be \"compact\" or \"pi-ai\" (got {})",
                describe(&events)
            )
        })
}

/// One scripted response: an async iterator of model events with `result()`.
#[wasm_bindgen(js_name = ScriptedStream, skip_typescript)]
pub struct JsScriptedStream(ScriptedStream);

#[wasm_bindgen(js_class = ScriptedStream)]
impl JsScriptedStream {
    #[allow(clippy::should_implement_trait)] // the JS async-iterator protocol's `next()`
    pub fn next(&mut self) -> Promise {
        let value = self
            .0
            .next_now()
            .map_or(JsValue::UNDEFINED, |event| to_js(&event));
        Promise::resolve(&glue::iterator_result_js(&value))
    }

    pub fn result(&self) -> Promise {
        Promise::resolve(&to_js(&self.0.message().tagged()))
    }
}

// ---------------------------------------------------------------------------------------------------------
// ToolRegistry

/// Tools by name, their definitions for the model, and the core executor.
#[wasm_bindgen(js_name = ToolRegistry)]
pub struct JsToolRegistry(Rc<RefCell<ToolRegistry>>);

/// Lets `runAgentLoop` find the Rust registry behind a JS `ToolRegistry` without consuming it.
#[wasm_bindgen(skip_typescript)]
pub struct RegistryHandle(Rc<RefCell<ToolRegistry>>);

impl Default for JsToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen(js_class = ToolRegistry)]
impl JsToolRegistry {
    #[wasm_bindgen(constructor)]
    pub fn new() -> JsToolRegistry {
        JsToolRegistry(Rc::new(RefCell::new(ToolRegistry::with_patterns(Rc::new(
            regexp::HostPatterns,
        )))))
    }

    /// Adds a tool; throws a `TypeError` naming the bad field.
    pub fn register(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ToolSpec")] tool: JsValue,
    ) -> Result<(), JsValue> {
        let tool = parse_tool(&tool).map_err(type_error)?;
        let mut registry = self
            .0
            .try_borrow_mut()
            .map_err(|_| type_error("ToolRegistry is busy"))?;
        registry.register(tool).map_err(type_error)
    }

    #[wasm_bindgen(unchecked_return_type = "ToolDefinition[]")]
    pub fn definitions(&self) -> JsValue {
        self.0
            .try_borrow()
            .map(|r| to_js(&r.definitions()))
            .unwrap_or_else(|_| Array::new().into())
    }

    /// The core executor: never rejects for a tool's failure (unknown tool, bad arguments, a throwing
    /// `execute` all give an error result). Rejects only when `call` itself is malformed.
    #[wasm_bindgen(unchecked_return_type = "Promise<ToolResultMessage>")]
    pub fn execute(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ToolCall")] call: JsValue,
        #[wasm_bindgen(
            unchecked_param_type = "{ signal?: AbortSignal; reportProgress?: (content: (TextContent | ImageContent)[]) => void }"
        )]
        context: JsValue,
    ) -> Promise {
        let registry = self.0.try_borrow().map(|r| r.clone());
        task::spawn_promise(async move {
            let registry = registry.map_err(|_| type_error("ToolRegistry is busy"))?;
            let call: ToolCall = from_js(&call, "call", "toolCall").map_err(type_error)?;
            let context = execution_context(&context).map_err(type_error)?;
            Ok(glue::tool_result(&registry.execute(&call, context).await))
        })
    }

    #[wasm_bindgen(js_name = "__tinyPiRegistry", skip_typescript)]
    pub fn handle(&self) -> RegistryHandle {
        RegistryHandle(self.0.clone())
    }
}

fn parse_tool(tool: &JsValue) -> Result<Tool, String> {
    if !is_object(tool) {
        return Err(format!(
            "tool must be an object with name, parameters and execute (got {})",
            type_of(tool)
        ));
    }
    let name = get(tool, "name", "tool.name")?
        .as_string()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| "tool.name must be a non-empty string".to_string())?;
    let description = get(tool, "description", "tool.description")?;
    let description = match description.as_string() {
        Some(d) => d,
        None if description.is_undefined() || description.is_null() => String::new(),
        None => {
            return Err(format!(
                "tool.description must be a string (got {})",
                type_of(&description)
            ))
        }
    };
    let parameters = get(tool, "parameters", "tool.parameters")?;
    let parameters = match parameters.is_undefined() {
        true => crate::tools::any_object(),
        false => from_js(&parameters, "tool.parameters", "any")?,
    };
    let execute = optional_function(tool, "execute", "tool.execute")?
        .ok_or_else(|| "tool.execute must be a function".to_string())?;
    let handler = Rc::new(js_tools::JsTool::new(&name, tool.clone(), execute));
    Ok(Tool::new(
        ToolDefinition {
            name,
            description,
            parameters,
        },
        handler,
    ))
}

fn execution_context(context: &JsValue) -> Result<ExecutionContext, String> {
    let (signal, report) = match is_object(context) {
        true => (
            signal_option(&get(context, "signal", "context.signal")?, "context.signal")?,
            optional_function(context, "reportProgress", "context.reportProgress")?,
        ),
        false => (AbortSignal::none(), None),
    };
    Ok(ExecutionContext {
        signal,
        progress: Rc::new(move |content: Vec<MediaBlock>| {
            if let Some(report) = &report {
                let _ = report.call1(&JsValue::UNDEFINED, &to_js(&content));
            }
        }),
        clock: Rc::new(js_sys::Date::now),
    })
}

// ---------------------------------------------------------------------------------------------------------
// Transcript and trace checks

/// Checks the call/result pairing of a transcript.
#[wasm_bindgen(js_name = validateTranscript, unchecked_return_type = "TranscriptValidation")]
pub fn validate_transcript_js(
    #[wasm_bindgen(unchecked_param_type = "AgentMessage[]")] messages: JsValue,
) -> Result<JsValue, JsValue> {
    Ok(to_js(&crate::transcript::validate_transcript(
        &messages_arg(&messages)?,
    )))
}

/// The chapter-00 milestones of a transcript, each with its owner.
#[wasm_bindgen(js_name = prologueTrace, unchecked_return_type = "TraceRecord[]")]
pub fn prologue_trace_js(
    #[wasm_bindgen(unchecked_param_type = "AgentMessage[]")] messages: JsValue,
) -> Result<JsValue, JsValue> {
    Ok(to_js(&crate::trace::prologue_trace(&messages_arg(
        &messages,
    )?)))
}

/// One line per record: `03 assistant_message owner=model detail="stopReason=toolUse name=read" toolCallId=call_1`.
#[wasm_bindgen(js_name = formatTrace)]
pub fn format_trace_js(
    #[wasm_bindgen(unchecked_param_type = "TraceRecord[]")] records: JsValue,
) -> Result<String, JsValue> {
    Ok(crate::trace::format_trace(&records_arg(&records)?))
}

/// Reports a call without a result ("missing paired result") and a result before its call ("result before call").
#[wasm_bindgen(js_name = validateTrace, unchecked_return_type = "TraceValidation")]
pub fn validate_trace_js(
    #[wasm_bindgen(unchecked_param_type = "TraceRecord[]")] records: JsValue,
) -> Result<JsValue, JsValue> {
    Ok(to_js(&crate::trace::validate_trace(&records_arg(
        &records,
    )?)))
}

fn messages_arg(messages: &JsValue) -> Result<Vec<AgentMessage>, JsValue> {
    array_from_js(messages, "messages", "an array", "messages").map_err(type_error)
}

fn records_arg(records: &JsValue) -> Result<Vec<TraceRecord>, JsValue> {
    array_from_js(records, "records", "an array", "traceRecords").map_err(type_error)
}
