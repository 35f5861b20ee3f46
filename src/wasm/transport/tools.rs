//! JS tools: a registered tool's `execute(args, {callId, signal, reportProgress})`, and a caller's
//! `executeToolCall(call, {signal, reportProgress})` or tool source's `execute` (the source as `this`),
//! called and awaited. What they return crosses as JSON, read by the core's readers. A call's
//! `reportProgress` reports until the call settles.
//!
//! A run's calls go through `RunExecutor`, which attaches each call's frozen JS object (the block of its
//! message's object) to the call's `ExecutionContext` (`host`): a registered tool gets its own copy of that
//! call's arguments (what the registry validated), an executor the call object itself.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use js_sys::Function;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use super::convert::{
    error_message, from_json_text, frozen_js, json_text, settle, to_js, type_error,
};
use super::glue::{arguments_of_js, end_reports_js, invoke_js, tool_context_js};
use super::objects::SharedObjects;
use super::signal::handed;
use crate::message::{MediaBlock, ToolCall};
use crate::signal::AbortSignal;
use crate::tools::{
    CallSettings, ExecutionContext, HookFuture, ProgressSink, RegistryApprovals, ToolCallContext,
    ToolExecutor, ToolHandler, ToolOutput, ToolRegistry, ToolReply,
};

/// Calls `f.call(this, arg, context)` with a context of `call_id`, `signal` and a `reportProgress` that
/// reports to `progress` until the call settles (or its future is dropped: a timed-out call); what it
/// resolved with, or the message of what it threw.
async fn call_js(
    f: &Function,
    this: &JsValue,
    arg: &JsValue,
    call_id: Option<String>,
    signal: &AbortSignal,
    progress: ProgressSink,
    what: Rc<str>,
) -> Result<JsValue, String> {
    let report =
        Closure::<dyn FnMut(JsValue) -> Result<(), JsValue>>::new(move |content: JsValue| {
            let what = format!("{what} reportProgress(content)");
            let content: Vec<MediaBlock> =
                super::convert::from_js(&content, &what).map_err(type_error)?;
            progress(content);
            Ok(())
        });
    // A call with a timeout has its own signal: a JS one follows it while the call runs.
    let handed = handed(signal);
    let signal = handed
        .as_ref()
        .map_or(JsValue::UNDEFINED, |(s, _)| s.clone());
    let context = tool_context_js(call_id, &signal, report.as_ref().unchecked_ref());
    let reports = Reports {
        context,
        _report: report,
    };
    let none = JsValue::UNDEFINED;
    let outcome = settle(invoke_js(f, this, arg, &reports.context, &none)).await;
    drop(handed);
    outcome.map_err(|e| error_message(&e))
}

/// A call's reports, open until dropped: later ones are ignored (SPEC §7), never a call of a dropped closure.
struct Reports {
    context: JsValue,
    /// What the context's `reportProgress` calls; dropped after the context stops calling it.
    _report: Closure<dyn FnMut(JsValue) -> Result<(), JsValue>>,
}

impl Drop for Reports {
    fn drop(&mut self) {
        end_reports_js(&self.context);
    }
}

/// A tool registered from JS.
pub struct JsTool {
    /// `tool "name"`, as errors and progress reports name it.
    what: Rc<str>,
    /// The object given to `register`, `this` for `execute`.
    spec: JsValue,
    execute: Function,
}

impl JsTool {
    pub fn new(name: &str, spec: JsValue, execute: Function) -> Self {
        JsTool {
            what: format!("tool \"{name}\"").into(),
            spec,
            execute,
        }
    }
}

impl ToolHandler for JsTool {
    fn call(
        &self,
        arguments: &serde_json::Value,
        context: ToolCallContext,
    ) -> LocalBoxFuture<'static, Result<ToolOutput, String>> {
        // Made now, so the future keeps no borrow of the arguments: a copy of the run's call object's
        // arguments, or (outside a run) of the validated arguments themselves.
        let arg = match context
            .host
            .as_ref()
            .and_then(|h| h.downcast_ref::<JsValue>())
        {
            Some(call) => arguments_of_js(call),
            None => to_js(arguments),
        };
        let (execute, spec, what) = (self.execute.clone(), self.spec.clone(), self.what.clone());
        Box::pin(async move {
            let ToolCallContext {
                call_id,
                signal,
                progress,
                ..
            } = context;
            let output = call_js(
                &execute,
                &spec,
                &arg,
                Some(call_id),
                &signal,
                progress,
                what.clone(),
            )
            .await?;
            let what = format!("{what} result");
            from_json_text(&json_text(&output, &what)?, &output, &what)
        })
    }
}

/// `options.executeToolCall`, or the `execute` method of a tool source that is not a `ToolRegistry`:
/// replaces the registry for a run.
pub struct JsExecutor {
    pub execute: Function,
    /// `this` of the call: undefined for `executeToolCall`, the tool source for its `execute`.
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
            let object = match context
                .host
                .as_ref()
                .and_then(|h| h.downcast_ref::<JsValue>())
            {
                Some(object) => object.clone(),
                None => frozen_js(&call.tagged()),
            };
            let what: Rc<str> = self.what.into();
            let reply = call_js(
                &self.execute,
                &self.this,
                &object,
                None,
                &context.signal,
                context.progress,
                what,
            )
            .await?;
            let what = format!("{} result", self.what);
            from_json_text(&json_text(&reply, &what)?, &reply, &what)
        })
    }
}

/// What runs a run's calls: the caller's executor if it gave one, else the registry; the registry is asked
/// which calls wait for a decision either way (SPEC §8). Each call is handed on with its frozen JS object.
pub struct RunExecutor {
    pub registry: Rc<ToolRegistry>,
    pub custom: Option<JsExecutor>,
    pub objects: SharedObjects,
}

impl RunExecutor {
    /// The core's rule of SPEC §8 over this run's executor and registry.
    fn approvals(&self) -> RegistryApprovals<'_> {
        RegistryApprovals {
            runner: match &self.custom {
                Some(custom) => custom,
                None => &*self.registry,
            },
            registry: &self.registry,
        }
    }
}

impl ToolExecutor for RunExecutor {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        mut context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
        let object = self.objects.borrow().call(call);
        context.host = Some(Rc::new(object));
        Box::pin(async move { self.approvals().execute(call, context).await })
    }

    fn settings(&self, call: &ToolCall) -> CallSettings {
        self.approvals().settings(call)
    }

    fn refuses(&self, call: &ToolCall) -> bool {
        self.approvals().refuses(call)
    }

    fn needs_approval<'a>(&'a self, call: &'a ToolCall) -> Option<HookFuture<'a, bool>> {
        self.registry.needs_approval(call)
    }
}
