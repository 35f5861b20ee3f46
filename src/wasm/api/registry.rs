//! `ToolRegistry`: tools registered from JS (each checked here, run by `transport/tools.rs`), their
//! definitions for the model, and the core executor.
//!
//! A run works on a snapshot: registering during a run affects the next run, not this one (the registry is
//! an `Rc` that `register` copies only while a run still holds it). `runAgentLoop` finds the registry behind
//! a JS `ToolRegistry` by its number in this module's table of live registries: nothing JS hands over is
//! trusted as a pointer, so a forged or freed registry is a `TypeError`, never a trap.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;

use super::options;
use crate::approval::NeedsApproval;
use crate::message::{MediaBlock, ToolCall};
use crate::signal::AbortSignal;
use crate::tools::{ExecutionContext, Tool, ToolDefinition, ToolRegistry};
use crate::wasm::transport::approval::JsApprovalCheck;
use crate::wasm::transport::convert::{
    expect_object, expect_plain, from_js, get, is_object, must_be, optional_function,
    optional_string, promise, string_of, to_js, type_error, type_of,
};
use crate::wasm::transport::tools::JsTool;

type Shared = Rc<RefCell<Rc<ToolRegistry>>>;

thread_local! {
    /// The live registries by number: what `__tinyPiRegistry()` answers is looked up here.
    static LIVE: RefCell<HashMap<u32, Weak<RefCell<Rc<ToolRegistry>>>>> = RefCell::default();
    static NEXT: Cell<u32> = const { Cell::new(1) };
    /// This module instance's own object, answered with each number: another instance's registry (the
    /// other entry's, `tiny-pi/lesson`'s) answers with its own, and its number is never looked up here.
    static MARK: JsValue = js_sys::Object::new().into();
}

/// Tools by name, their definitions for the model, and the core executor.
#[wasm_bindgen(js_name = ToolRegistry)]
pub struct JsToolRegistry {
    registry: Shared,
    number: u32,
}

impl Default for JsToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for JsToolRegistry {
    fn drop(&mut self) {
        let _ = LIVE.try_with(|live| live.borrow_mut().remove(&self.number));
    }
}

#[wasm_bindgen(js_class = ToolRegistry)]
impl JsToolRegistry {
    #[wasm_bindgen(constructor)]
    pub fn new() -> JsToolRegistry {
        let registry = Rc::new(RefCell::new(Rc::new(ToolRegistry::new())));
        let number = NEXT.with(|next| next.replace(next.get().wrapping_add(1)));
        LIVE.with(|live| live.borrow_mut().insert(number, Rc::downgrade(&registry)));
        JsToolRegistry { registry, number }
    }

    /// Adds a tool; throws a `TypeError` naming the bad field. (Declared in `types.d.ts`: generic over the
    /// tool's `parameters`, from which it types `execute`'s arguments.)
    #[wasm_bindgen(skip_typescript)]
    pub fn register(&self, tool: JsValue) -> Result<(), JsValue> {
        let _entered = super::enter()?;
        let tool = parse_tool(&tool).map_err(type_error)?;
        let mut registry = self
            .registry
            .try_borrow_mut()
            .map_err(|_| type_error("ToolRegistry is busy"))?;
        Rc::make_mut(&mut registry)
            .register(tool)
            .map_err(type_error)
    }

    #[wasm_bindgen(unchecked_return_type = "ToolDefinition[]")]
    pub fn definitions(&self) -> JsValue {
        self.registry
            .try_borrow()
            .map(|r| to_js(&r.definitions()))
            .unwrap_or_else(|_| js_sys::Array::new().into())
    }

    /// The core executor: never rejects for a tool's failure (unknown tool, bad arguments, a throwing
    /// `execute` all give an error result). Rejects only when `call` itself is malformed.
    #[wasm_bindgen(unchecked_return_type = "Promise<ToolResultMessage>")]
    pub fn execute(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ToolCall")] call: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Partial<ExecuteContext>")] context: JsValue,
    ) -> Promise {
        let read = || -> Result<_, String> {
            let registry = self
                .registry
                .try_borrow()
                .map_err(|_| "ToolRegistry is busy")?;
            let call: ToolCall = from_js(&call, "call")?;
            Ok((Rc::clone(&registry), call, execution_context(&context)?))
        };
        let read = super::enter().and_then(|_entered| read().map_err(type_error));
        let (registry, call, context) = match read {
            Ok(read) => read,
            Err(error) => return Promise::reject(&error),
        };
        promise(async move {
            // Not the loop's: the caller's to change (SPEC §10 freezes what a run hands out).
            Ok(to_js(&registry.execute(&call, context).await.tagged()))
        })
    }

    /// This instance's mark and this registry's number in its table of live registries (how
    /// `runAgentLoop` finds it).
    #[wasm_bindgen(js_name = "__tinyPiRegistry", skip_typescript)]
    pub fn number(&self) -> js_sys::Array {
        MARK.with(|mark| js_sys::Array::of2(mark, &self.number.into()))
    }
}

/// The snapshot of the `ToolRegistry` given as `options.tools`: `None` when `tools` is not one (it has no
/// `__tinyPiRegistry` method), `Some(None)` when it only looks like one (its number names no live
/// registry, or it is another instance's) or is busy.
pub fn registry_snapshot(tools: &JsValue) -> Option<Option<Rc<ToolRegistry>>> {
    let method = optional_function(tools, "__tinyPiRegistry", "options.tools")
        .ok()
        .flatten()?;
    let answer = method.call0(tools).unwrap_or_default();
    let part = |at| js_sys::Reflect::get_u32(&answer, at).unwrap_or_default();
    let ours = MARK.with(|mark| part(0) == *mark);
    let number = ours.then(|| part(1).as_f64()).flatten();
    let found = number
        .filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n <= f64::from(u32::MAX))
        .and_then(|n| LIVE.with(|live| live.borrow().get(&(n as u32)).and_then(Weak::upgrade)));
    Some(found.and_then(|shared| shared.try_borrow().ok().map(|r| Rc::clone(&r))))
}

fn parse_tool(tool: &JsValue) -> Result<Tool, String> {
    expect_object(tool, "tool", "an object with name, parameters and execute")?;
    let name = string_of(&get(tool, "name", "tool.name")?, "tool.name")?
        .filter(|n| !n.is_empty())
        .ok_or_else(|| "tool.name must be a non-empty string".to_string())?;
    let description = optional_string(tool, "description", "tool.description")?.unwrap_or_default();
    let parameters = get(tool, "parameters", "tool.parameters")?;
    // A Map or a class's object would be read as JSON writes it: `{}`, a schema that checks nothing.
    if parameters.is_object() {
        expect_plain(&parameters, "tool.parameters", "a JSON Schema object")?;
    }
    let parameters = match parameters.is_undefined() {
        true => no_parameters(tool)?,
        false => from_js(&parameters, "tool.parameters")?,
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

/// A tool without `parameters` takes any object, unless it gives its schema under another library's name (MCP's
/// and the AI SDK's `inputSchema`, Anthropic's `input_schema`): read as none, nothing would check its arguments.
fn no_parameters(tool: &JsValue) -> Result<serde_json::Value, String> {
    for other in ["inputSchema", "input_schema"] {
        if !get(tool, other, &format!("tool.{other}"))?.is_undefined() {
            return Err(format!(
                "tool.{other} is not read: give the tool's JSON Schema as tool.parameters"
            ));
        }
    }
    Ok(crate::tools::any_object())
}

/// `tool.needsApproval` (SPEC §8): a boolean, or a function of the arguments that may answer with a promise.
fn needs_approval(tool: &JsValue, name: &str) -> Result<NeedsApproval, String> {
    let value = get(tool, "needsApproval", "tool.needsApproval")?;
    match value.as_bool() {
        Some(true) => return Ok(NeedsApproval::Always),
        None if !value.is_null_or_undefined() => {}
        _ => return Ok(NeedsApproval::Never),
    }
    let expected = "a boolean or a function of the arguments";
    let check = (value.dyn_into::<Function>())
        .map_err(|value| must_be("tool.needsApproval", expected, type_of(&value)))?;
    let check = JsApprovalCheck::new(name, tool.clone(), check);
    Ok(NeedsApproval::Ask(Rc::new(check)))
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
        host: None,
    })
}
