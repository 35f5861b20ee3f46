//! JS tools: a registered tool's `execute(args, {callId, signal, reportProgress})`, and a caller's
//! `executeToolCall(call, {signal, reportProgress})`. A call's `reportProgress` reports until the call
//! settles.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use js_sys::Function;
use wasm_bindgen::JsValue;

use super::convert::{error_message, from_js, type_error};
use super::glue::{call_tool_js, take_kept_js};
use super::promise::settle_with;
use super::read;
use super::signal::js_signal;
use crate::message::{MediaBlock, ToolCall};
use crate::signal::AbortSignal;
use crate::tools::{
    ExecutionContext, ProgressSink, ToolCallContext, ToolExecutor, ToolHandler, ToolOutput,
    ToolReply,
};

/// Where each call's `reportProgress` goes, by the id its context was made with (`glue.js` makes the
/// function, so a tool call makes no wasm-bindgen closure). A call that has ended is gone from the list; a
/// late report is ignored.
#[derive(Default)]
struct Progress {
    sinks: RefCell<Vec<(f64, ProgressSink, Rc<str>)>>,
    next_id: Cell<f64>,
}

thread_local! {
    static PROGRESS: Progress = Progress::default();
}

pub fn progress(id: f64, content: JsValue) -> Result<(), JsValue> {
    let found = PROGRESS.with(|p| {
        p.sinks
            .borrow()
            .iter()
            .find(|(i, ..)| *i == id)
            .map(|(_, sink, what)| (sink.clone(), what.clone()))
    });
    let Some((sink, what)) = found else {
        return Ok(());
    };
    let content: Vec<MediaBlock> = from_js(
        &content,
        &format!("{what} reportProgress(content)"),
        "mediaBlocks",
    )
    .map_err(type_error)?;
    sink(content);
    Ok(())
}

/// A call's registration with `PROGRESS`; dropping it (the call settled) ends its reports.
struct ProgressRoute(f64);

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        let _ = PROGRESS.try_with(|p| {
            if let Ok(mut sinks) = p.sinks.try_borrow_mut() {
                sinks.retain(|(i, ..)| *i != self.0);
            }
        });
    }
}

/// Registers `progress` for a call's `reportProgress`; keep the route until the call settles.
fn progress_route(progress: ProgressSink, what: Rc<str>) -> ProgressRoute {
    PROGRESS.with(|p| {
        let id = p.next_id.get();
        p.next_id.set(id + 1.0);
        p.sinks.borrow_mut().push((id, progress, what));
        ProgressRoute(id)
    })
}

/// `value` as the JSON text `call_js` hands to `glue.js`.
fn json_arg(value: &impl serde::Serialize) -> String {
    // Serializing our own types cannot fail (string keys only; non-finite numbers become null).
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// Calls `f(this, arg, context)` and settles what it returns; a throw or rejection becomes its message.
/// The context's `reportProgress` reports to `progress` until the call has settled. (One call into
/// `glue.js` parses `arg` from its JSON text, makes the context, calls and starts the await.)
async fn call_js(
    f: &Function,
    this: &JsValue,
    arg: String,
    call_id: Option<&str>,
    signal: &AbortSignal,
    progress: ProgressSink,
    what: Rc<str>,
) -> Result<JsValue, String> {
    let route = progress_route(progress, what);
    let signal = js_signal(signal).map_or(JsValue::UNDEFINED, |s| JsValue::from(s.clone()));
    let outcome = settle_with(|waiter, id| {
        let pending = call_tool_js(f, this, &arg, call_id, &signal, waiter, route.0, id);
        (!pending).then(take_kept_js)
    })
    .await;
    drop(route);
    outcome.map_err(|e| error_message(&e))
}

/// A tool registered from JS. Its parts are shared by its calls (one `Rc` per call, where each cloned
/// `JsValue` would take a table slot).
pub struct JsTool(Rc<JsToolParts>);

struct JsToolParts {
    /// `tool "name"`, as errors and progress reports name it (made once, not per call).
    what: Rc<str>,
    /// The object given to `register`, `this` for `execute`.
    spec: JsValue,
    execute: Function,
}

impl JsTool {
    pub fn new(name: &str, spec: JsValue, execute: Function) -> Self {
        JsTool(Rc::new(JsToolParts {
            what: format!("tool \"{name}\"").into(),
            spec,
            execute,
        }))
    }
}

impl ToolHandler for JsTool {
    fn call(
        &self,
        arguments: &serde_json::Value,
        context: ToolCallContext,
    ) -> LocalBoxFuture<'static, Result<ToolOutput, String>> {
        let tool = self.0.clone();
        // Written out now, so the future keeps the text and not a copy of the arguments.
        let arguments = json_arg(arguments);
        Box::pin(async move {
            let outcome = call_js(
                &tool.execute,
                &tool.spec,
                arguments,
                Some(&context.call_id),
                &context.signal,
                context.progress,
                tool.what.clone(),
            )
            .await;
            read::tool_output(&outcome?, &tool.what)
        })
    }
}

/// `options.executeToolCall`, or the `execute` method of a tools object that is not a `ToolRegistry`:
/// replaces the registry for a run.
pub struct JsExecutor {
    pub execute: Function,
    /// `this` of the call: undefined for `executeToolCall`, the tools object for its `execute`.
    pub this: JsValue,
    /// How errors name it.
    pub what: &'static str,
}

impl ToolExecutor for JsExecutor {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
        Box::pin(async move {
            let outcome = call_js(
                &self.execute,
                &self.this,
                json_arg(&call.tagged()),
                None,
                &context.signal,
                context.progress,
                self.what.into(),
            )
            .await;
            from_js::<ToolReply>(&outcome?, &format!("{} result", self.what), "toolReply")
        })
    }
}
