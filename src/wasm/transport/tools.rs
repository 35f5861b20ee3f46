//! JS tools: a registered tool's `execute(args, {callId, signal, reportProgress})`, and a caller's
//! `executeToolCall(call, {signal, reportProgress})` or tool source's `execute` (same arguments, the source
//! as `this`), each called in one `glue.js` call (`callTool`) and awaited. A call's `reportProgress` reports
//! until the call settles. What a tool returns is read by `tool_output.rs`.
//!
//! A registered tool called by a run gets its arguments from the run's object of its call
//! (`mirror::running_call`): `glue.js` copies them as JSON would, so neither they nor the call's id cross
//! out of wasm as text. Anywhere else (`ToolRegistry.execute`, an executor) they cross as JSON text.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use js_sys::Function;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use super::convert::{error_message, from_js, json_of, type_error};
use super::glue::call_tool_js;
use super::mirror::running_call;
use super::signal;
use super::tool_output;
use super::waiter::settle_call;
use crate::message::{MediaBlock, ToolCall};
use crate::signal::AbortSignal;
use crate::tools::{
    ExecutionContext, ProgressSink, ToolCallContext, ToolExecutor, ToolHandler, ToolOutput,
    ToolReply,
};

/// Where each call's `reportProgress` reports: `glue.js` makes the function, which reports to the module's
/// one `ProgressRoutes` object under the route its call was given, so a tool call makes no wasm-bindgen
/// closure. A call that has ended is gone from the table; a late report is ignored. Not part of the API:
/// exported only because JS reaches Rust only through exports.
#[wasm_bindgen(js_name = __TinyPiProgress, skip_typescript)]
pub struct ProgressRoutes;

/// The routes of the calls in flight: the sink, and the call's name for errors.
#[derive(Default)]
struct Routes {
    sinks: RefCell<Vec<(f64, ProgressSink, Rc<str>)>>,
    next: Cell<f64>,
}

thread_local! {
    static ROUTES: Routes = Routes::default();
    static REPORT_TO: JsValue = JsValue::from(ProgressRoutes);
}

#[wasm_bindgen(js_class = __TinyPiProgress)]
impl ProgressRoutes {
    /// A tool's `reportProgress(content)`; throws a `TypeError` for malformed content.
    pub fn report(&self, route: f64, content: JsValue) -> Result<(), JsValue> {
        let found = ROUTES.with(|routes| {
            routes
                .sinks
                .borrow()
                .iter()
                .find(|(r, ..)| *r == route)
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
}

/// A call's entry in `ROUTES`; dropping it (the call settled) ends its reports.
struct Route(f64);

impl Route {
    fn new(progress: ProgressSink, what: Rc<str>) -> Route {
        ROUTES.with(|routes| {
            let route = routes.next.get();
            routes.next.set(route + 1.0);
            routes.sinks.borrow_mut().push((route, progress, what));
            Route(route)
        })
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        let _ = ROUTES.try_with(|routes| {
            if let Ok(mut sinks) = routes.sinks.try_borrow_mut() {
                sinks.retain(|(r, ..)| *r != self.0);
            }
        });
    }
}

/// What a JS tool or executor is called with.
enum Arg {
    /// The run's object of the tool's call: `glue.js` reads its id and hands the tool a copy of its
    /// arguments, so neither crosses out of wasm again.
    Call(JsValue),
    /// The JSON text of the argument, parsed in JS, and the call's id for the context (none for an
    /// executor, which is handed the whole call).
    Json(String, Option<String>),
}

/// Calls `f(this, arg, context)` and settles what it returns; a throw or rejection becomes its message.
/// The context's `reportProgress` reports to `progress` until the call has settled. (One call into
/// `glue.js` reads or parses `arg`, makes the context, calls and starts the await.)
async fn call_js(
    f: &Function,
    this: &JsValue,
    arg: Arg,
    signal: &AbortSignal,
    progress: ProgressSink,
    what: Rc<str>,
) -> Result<JsValue, String> {
    let route = Route::new(progress, what);
    // A call with a timeout has its own signal: a JS one follows it while the call runs.
    let handed = signal::handed(signal);
    let signal = handed
        .as_ref()
        .map_or(JsValue::UNDEFINED, |(s, _)| s.clone());
    let (call, json, call_id) = match &arg {
        Arg::Call(call) => (call, None, None),
        Arg::Json(json, call_id) => (&JsValue::UNDEFINED, Some(&**json), call_id.as_deref()),
    };
    let outcome = settle_call(|waiter, id| {
        REPORT_TO.with(|routes| {
            call_tool_js(
                f, this, call, json, call_id, &signal, routes, route.0, waiter, id,
            )
        })
    })
    .await;
    drop((route, handed));
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
        // Found (or written out) now, so the future keeps no copy of the arguments.
        let arg = match running_call(&context.call_id) {
            Some(call) => Arg::Call(call),
            None => Arg::Json(json_of(arguments), Some(context.call_id)),
        };
        Box::pin(async move {
            let outcome = call_js(
                &tool.execute,
                &tool.spec,
                arg,
                &context.signal,
                context.progress,
                tool.what.clone(),
            )
            .await;
            tool_output::read(&outcome?, &tool.what)
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
                Arg::Json(json_of(&call.tagged()), None),
                &context.signal,
                context.progress,
                self.what.into(),
            )
            .await;
            tool_output::read_reply(&outcome?, self.what)
        })
    }
}
