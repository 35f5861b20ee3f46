//! JS tools: a registered tool's `execute(args, {callId, signal, reportProgress})`, and a caller's
//! `executeToolCall(call, {signal, reportProgress})` or tool source's `execute` (the source as `this`),
//! called (through `calls.rs`) and awaited. What they return crosses as JSON, read by the core's readers. A
//! call's `reportProgress` reports until the call settles.
//!
//! A run's calls go through `RunExecutor`, which attaches each call's frozen JS object (the block of its
//! message's object) to the call's `ExecutionContext` (`host`): a registered tool gets its own copy of that
//! call's arguments (what the registry validated), an executor the call object itself.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use js_sys::Function;
use wasm_bindgen::JsValue;

use super::calls::JsCalls;
use super::convert::{error_message, from_js, frozen_js, to_js};
use super::glue::arguments_of_js;
use super::objects::SharedObjects;
use super::signal::handed;
use crate::message::ToolCall;
use crate::signal::{AbortSignal, Registration};
use crate::tools::{
    CallSettings, ExecutionContext, HookFuture, HostValue, ProgressSink, RegistryApprovals,
    ToolCallContext, ToolExecutor, ToolHandler, ToolOutput, ToolRegistry, ToolReply,
};

/// Calls `calls`' function with `arg` and a context of `call_id`, `signal` and a `reportProgress` that
/// reports to `progress` until the call settles (or its future is dropped: a timed-out call); what it
/// resolved with, or the message of what it threw.
async fn call_js(
    calls: &Rc<JsCalls>,
    arg: &JsValue,
    call_id: Option<String>,
    signal: &AbortSignal,
    progress: ProgressSink,
) -> Result<JsValue, String> {
    // A call with a timeout has its own signal: a JS one follows it while the call runs.
    let (signal, held) = handed(signal).unwrap_or((JsValue::UNDEFINED, Registration::none()));
    let outcome = calls.call(arg, call_id, &signal, progress).await;
    drop(held);
    outcome.map_err(|e| error_message(&e))
}

/// The run's JS object of a call, which `RunExecutor` attaches to the call's context.
fn host_object(host: &Option<HostValue>) -> Option<&JsValue> {
    host.as_ref()?.downcast_ref::<JsValue>()
}

/// A tool registered from JS: its `execute`, called with the object given to `register` as `this`.
pub struct JsTool(Rc<JsCalls>);

impl JsTool {
    pub fn new(name: &str, spec: JsValue, execute: Function) -> Self {
        let what = format!("tool \"{name}\"");
        JsTool(JsCalls::new(execute, spec, what.into()))
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
        let arg = match host_object(&context.host) {
            Some(call) => arguments_of_js(call),
            None => to_js(arguments),
        };
        let calls = self.0.clone();
        Box::pin(async move {
            let ToolCallContext {
                call_id,
                signal,
                progress,
                ..
            } = context;
            let output = call_js(&calls, &arg, Some(call_id), &signal, progress).await?;
            from_js(&output, &format!("{} result", calls.what))
        })
    }
}

/// `options.executeToolCall`, or the `execute` method of a tool source that is not a `ToolRegistry`:
/// replaces the registry for a run.
pub struct JsExecutor(Rc<JsCalls>);

impl JsExecutor {
    /// `execute` called with `this` (undefined for `executeToolCall`, the tool source for its `execute`);
    /// errors name it `what`.
    pub fn new(execute: Function, this: JsValue, what: &'static str) -> JsExecutor {
        JsExecutor(JsCalls::new(execute, this, what.into()))
    }
}

impl ToolExecutor for JsExecutor {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
        Box::pin(async move {
            let object = match host_object(&context.host) {
                Some(object) => object.clone(),
                None => frozen_js(&call.tagged()),
            };
            let reply = call_js(&self.0, &object, None, &context.signal, context.progress).await?;
            from_js(&reply, &format!("{} result", self.0.what))
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
    fn approvals(&self) -> RegistryApprovals<&dyn ToolExecutor, &ToolRegistry> {
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
