//! `runAgentLoop`: its options checked and converted, the core's loop run over the transport's JS model,
//! tools and observer, and the result made from the run's mirror.

use std::rc::Rc;

use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;

use super::options;
use super::registry::registry_option;
use crate::agent_loop::{run_agent_loop, AgentContext, LoopOptions};
use crate::event::RunResult;
use crate::signal::AbortSignal;
use crate::tools::{Clock, ToolDefinition, ToolExecutor, ToolRegistry};
use crate::wasm::transport::convert::{
    get, is_object, optional_function, set, to_js, type_error, type_of,
};
use crate::wasm::transport::events::JsObserver;
use crate::wasm::transport::mirror::SharedMirror;
use crate::wasm::transport::model::JsModel;
use crate::wasm::transport::task::spawn_promise;
use crate::wasm::transport::tools::JsExecutor;

/// Runs the agent loop until the model stops, the output is truncated, an error or abort ends it, or the
/// step limit is reached. Rejects with a `TypeError` naming the field when an option is malformed.
#[wasm_bindgen(js_name = runAgentLoop, unchecked_return_type = "Promise<RunResult>")]
pub fn run_agent_loop_js(
    #[wasm_bindgen(unchecked_param_type = "RunOptions")] options: JsValue,
) -> Promise {
    spawn_promise(async move {
        let run = RunInput::parse(&options).map_err(type_error)?;
        let executor: &dyn ToolExecutor = match &run.executor {
            Some(executor) => executor,
            None => &*run.registry,
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
        })
        .await;
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
    object
}

/// `runAgentLoop`'s options, checked and converted.
struct RunInput {
    context: AgentContext,
    model: JsModel,
    registry: Rc<ToolRegistry>,
    /// The registry's definitions, made once for the core and (as JS) for every request.
    definitions: Vec<ToolDefinition>,
    executor: Option<JsExecutor>,
    signal: AbortSignal,
    max_steps: u32,
    observer: JsObserver,
    clock: Clock,
    mirror: SharedMirror,
}

impl RunInput {
    fn parse(options: &JsValue) -> Result<RunInput, String> {
        if !is_object(options) {
            return Err(format!(
                "options must be an object (got {})",
                type_of(options)
            ));
        }
        let registry = registry_option(&get(options, "tools", "options.tools")?)?;
        let definitions = registry.definitions();
        let mirror = SharedMirror::default();
        let (model, stream) = options::model(get(options, "model", "options.model")?)?;
        let model = JsModel::new(model, stream, to_js(&definitions), mirror.clone());
        Ok(RunInput {
            context: options::context(&get(options, "context", "options.context")?)?,
            model,
            registry,
            definitions,
            executor: optional_function(options, "executeToolCall", "options.executeToolCall")?
                .map(JsExecutor),
            signal: options::signal(&get(options, "signal", "options.signal")?, "options.signal")?,
            max_steps: options::max_steps(&get(options, "maxSteps", "options.maxSteps")?)?,
            observer: JsObserver {
                on_event: optional_function(options, "onEvent", "options.onEvent")?,
                mirror: mirror.clone(),
            },
            clock: options::clock(optional_function(options, "now", "options.now")?),
            mirror,
        })
    }
}
