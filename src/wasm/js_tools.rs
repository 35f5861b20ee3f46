//! JS tools: a registered tool's `execute(args, {callId, signal, reportProgress})`, and a caller's
//! `executeToolCall(call, {signal, reportProgress})`. Each `reportProgress` closure lives exactly as long
//! as its call.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use js_sys::{Function, Object};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsValue;

use super::convert::{error_message, from_js, set, to_js};
use super::promise::settle;
use super::signal::js_signal;
use crate::message::{MediaBlock, ToolCall};
use crate::signal::AbortSignal;
use crate::tools::{
    ExecutionContext, ProgressSink, ToolCallContext, ToolExecutor, ToolHandler, ToolOutput,
    ToolReply,
};

/// The context object JS code receives, and the closure behind its `reportProgress` (drop it when the
/// call settles).
fn js_context(
    call_id: Option<&str>,
    signal: &AbortSignal,
    progress: ProgressSink,
    what: String,
) -> (JsValue, Closure<dyn FnMut(JsValue) -> Result<(), JsValue>>) {
    let report =
        Closure::<dyn FnMut(JsValue) -> Result<(), JsValue>>::new(move |content: JsValue| {
            let content: Vec<MediaBlock> =
                from_js(&content, &format!("{what} reportProgress(content)"))
                    .map_err(super::convert::type_error)?;
            progress(content);
            Ok(())
        });
    let context: JsValue = Object::new().into();
    if let Some(id) = call_id {
        set(&context, "callId", &JsValue::from_str(id));
    }
    if let Some(signal) = js_signal(signal) {
        set(&context, "signal", signal);
    }
    set(&context, "reportProgress", report.as_ref());
    (context, report)
}

/// Calls `f(this, a, ctx)` and settles what it returns; a throw or rejection becomes its message.
async fn call_settled(
    f: &Function,
    this: &JsValue,
    arg: &JsValue,
    context: &JsValue,
) -> Result<JsValue, String> {
    let returned = f.call2(this, arg, context).map_err(|e| error_message(&e))?;
    settle(returned).await.map_err(|e| error_message(&e))
}

/// A tool registered from JS.
pub struct JsTool {
    pub name: String,
    pub spec: JsValue,
    pub execute: Function,
}

impl ToolHandler for JsTool {
    fn call(
        &self,
        arguments: serde_json::Value,
        context: ToolCallContext,
    ) -> LocalBoxFuture<'static, Result<ToolOutput, String>> {
        let (spec, execute, name) = (self.spec.clone(), self.execute.clone(), self.name.clone());
        Box::pin(async move {
            let what = format!("tool \"{name}\"");
            let (js_context, report) = js_context(
                Some(&context.call_id),
                &context.signal,
                context.progress,
                what.clone(),
            );
            let outcome = call_settled(&execute, &spec, &to_js(&arguments), &js_context).await;
            drop(report);
            from_js::<ToolOutput>(&outcome?, &format!("{what} result"))
        })
    }
}

/// `options.executeToolCall`: replaces the registry for a run.
pub struct JsExecutor(pub Function);

impl ToolExecutor for JsExecutor {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
        Box::pin(async move {
            let (js_context, report) = js_context(
                None,
                &context.signal,
                context.progress,
                "executeToolCall".into(),
            );
            let outcome = call_settled(
                &self.0,
                &JsValue::UNDEFINED,
                &to_js(&call.tagged()),
                &js_context,
            )
            .await;
            drop(report);
            from_js::<ToolReply>(&outcome?, "executeToolCall result")
        })
    }
}

pub fn tool_handler(tool: JsTool) -> Rc<dyn ToolHandler> {
    Rc::new(tool)
}
