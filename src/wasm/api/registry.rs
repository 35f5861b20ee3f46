//! `ToolRegistry`: tools registered from JS (each checked here, run by `transport/tools.rs`), their
//! definitions for the model, and the core executor.
//!
//! A run works on a snapshot: registering during a run affects the next run, not this one. The registry is
//! kept as a shared snapshot that `register` copies only while a run still holds it, so that starting a run
//! copies no tool.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::prelude::*;

use super::options;
use crate::approval::NeedsApproval;
use crate::message::{MediaBlock, ToolCall};
use crate::signal::AbortSignal;
use crate::tools::{ExecutionContext, Tool, ToolDefinition, ToolRegistry};
use crate::wasm::transport::approval::JsApprovalCheck;
use crate::wasm::transport::convert::{
    from_js, get, is_object, optional_function, to_js, type_error, type_of,
};
use crate::wasm::transport::mirror::{tool_result, OutsideRuns};
use crate::wasm::transport::regexp::HostPatterns;
use crate::wasm::transport::task::spawn_promise;
use crate::wasm::transport::tools::JsTool;

/// Tools by name, their definitions for the model, and the core executor.
#[wasm_bindgen(js_name = ToolRegistry)]
pub struct JsToolRegistry(RefCell<Rc<ToolRegistry>>);

/// Lets `runAgentLoop` find the Rust registry behind a JS `ToolRegistry` without consuming it: the snapshot
/// of the moment it was asked for.
#[wasm_bindgen(skip_typescript)]
pub struct RegistryHandle(Rc<ToolRegistry>);

impl Default for JsToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen(js_class = ToolRegistry)]
impl JsToolRegistry {
    #[wasm_bindgen(constructor)]
    pub fn new() -> JsToolRegistry {
        let registry = ToolRegistry::with_patterns(Rc::new(HostPatterns));
        JsToolRegistry(RefCell::new(Rc::new(registry)))
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
        Rc::make_mut(&mut registry)
            .register(tool)
            .map_err(type_error)
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
        let registry = self.0.try_borrow().map(|r| Rc::clone(&r));
        // Outside any run's mirror, even when called from a run's tool: `call` is the caller's, not the run's.
        // (Only the first poll can be inside a run's: later ones start from JS's microtasks.)
        let _outside = OutsideRuns::enter();
        spawn_promise(async move {
            let registry = registry.map_err(|_| type_error("ToolRegistry is busy"))?;
            let call: ToolCall = from_js(&call, "call", "toolCall").map_err(type_error)?;
            let context = execution_context(&context).map_err(type_error)?;
            // Not the loop's: the caller's to change (SPEC §10 freezes what a run hands out).
            Ok(tool_result(&registry.execute(&call, context).await, false))
        })
    }

    #[wasm_bindgen(js_name = "__tinyPiRegistry", skip_typescript)]
    pub fn handle(&self) -> Result<RegistryHandle, JsValue> {
        let snapshot = self
            .0
            .try_borrow()
            .map_err(|_| type_error("ToolRegistry is busy"))?;
        Ok(RegistryHandle(Rc::clone(&snapshot)))
    }
}

/// The snapshot of a `ToolRegistry` given as `options.tools`: `None` when `tools` is not one (it has no
/// `__tinyPiRegistry` method), `Some(None)` when it only looks like one (or is busy).
pub fn registry_snapshot(tools: &JsValue) -> Option<Option<Rc<ToolRegistry>>> {
    let handle = optional_function(tools, "__tinyPiRegistry", "options.tools")
        .ok()
        .flatten()?;
    let snapshot = handle
        .call0(tools)
        .ok()
        .and_then(|handle| RegistryHandle::try_from_js_value(handle).ok())
        .map(|handle| handle.0);
    Some(snapshot)
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
    let description =
        options::optional_string(tool, "description", "tool.description")?.unwrap_or_default();
    let parameters = get(tool, "parameters", "tool.parameters")?;
    let parameters = match parameters.is_undefined() {
        true => crate::tools::any_object(),
        false => from_js(&parameters, "tool.parameters", "any")?,
    };
    let execute = optional_function(tool, "execute", "tool.execute")?
        .ok_or_else(|| "tool.execute must be a function".to_string())?;
    let handler = Rc::new(JsTool::new(&name, tool.clone(), execute));
    let needs_approval = needs_approval(tool, &name)?;
    let mut registered = Tool::new(
        ToolDefinition {
            name,
            description,
            parameters,
        },
        handler,
    );
    // SPEC §7: how its calls run.
    let mode = get(tool, "executionMode", "tool.executionMode")?;
    registered.execution_mode = options::execution_mode(&mode, "tool.executionMode")?;
    let timeout = get(tool, "timeoutMs", "tool.timeoutMs")?;
    registered.timeout_ms = options::timeout_ms(&timeout, "tool.timeoutMs")?;
    registered.needs_approval = needs_approval;
    Ok(registered)
}

/// `tool.needsApproval` (SPEC §8): a boolean, or a function of the arguments that may answer with a promise.
fn needs_approval(tool: &JsValue, name: &str) -> Result<NeedsApproval, String> {
    let value = get(tool, "needsApproval", "tool.needsApproval")?;
    match value.as_bool() {
        Some(true) => return Ok(NeedsApproval::Always),
        Some(false) => return Ok(NeedsApproval::Never),
        None if value.is_null_or_undefined() => return Ok(NeedsApproval::Never),
        None => {}
    }
    match value.dyn_into::<Function>() {
        Ok(check) => Ok(NeedsApproval::Ask(Rc::new(JsApprovalCheck::new(
            name,
            tool.clone(),
            check,
        )))),
        Err(value) => Err(format!(
            "tool.needsApproval must be a boolean or a function of the arguments (got {})",
            type_of(&value)
        )),
    }
}

/// `execute`'s context: its signal, and `reportProgress` called with each report's content.
fn execution_context(context: &JsValue) -> Result<ExecutionContext, String> {
    let (signal, report) = match is_object(context) {
        true => (
            options::signal(&get(context, "signal", "context.signal")?, "context.signal")?,
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
