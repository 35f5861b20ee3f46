//! The tool registry (SPEC §3): tools registered with their schemas, and the core executor that never
//! fails. A tool may also be registered to run alone or with its own timeout, ask the run to end after its
//! batch (SPEC §7), and have its calls wait for a decision (SPEC §8), which a caller's own executor still
//! asks the registry about (`RegistryApprovals`).

use std::any::Any;
use std::ops::Deref;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use serde::Serialize;
use serde_json::Value;

use super::definition::ToolDefinition;
use super::executor::{
    CallSettings, ExecutionContext, ExecutionMode, HookFuture, HostValue, ProgressSink,
    ToolExecutor, ToolReply,
};
use crate::approval::NeedsApproval;
use crate::control::check_timeout_ms;
use crate::invalid::Invalid;
use crate::message::{Extra, MediaBlock, ToolCall, ToolResultMessage};
use crate::schema::Schema;
use crate::signal::AbortSignal;

/// What a tool's `execute` returns. Other fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    pub content: Vec<MediaBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub is_error: bool,
    /// Asks the run to end after this batch (reason `terminated`). A control signal for the loop, never
    /// stored in the result.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub terminate: bool,
}

/// What a tool's `execute` gets beside its arguments.
#[derive(Clone)]
pub struct ToolCallContext {
    pub call_id: String,
    pub signal: AbortSignal,
    pub progress: ProgressSink,
    /// The host's value for the call (`ExecutionContext::host`).
    pub host: Option<HostValue>,
}

/// A tool's implementation. `Err` is a tool that threw: its message becomes an error result.
///
/// The arguments are lent: they stay in the assistant message that holds the call, and a handler that
/// only reads or forwards them (the JS bridge writes them out as JSON) need not copy them. A closure
/// handler gets its own copy.
pub trait ToolHandler {
    fn call(
        &self,
        arguments: &Value,
        context: ToolCallContext,
    ) -> LocalBoxFuture<'static, Result<ToolOutput, String>>;
}

impl<F, Fut> ToolHandler for F
where
    F: Fn(Value, ToolCallContext) -> Fut,
    Fut: std::future::Future<Output = Result<ToolOutput, String>> + 'static,
{
    fn call(
        &self,
        arguments: &Value,
        context: ToolCallContext,
    ) -> LocalBoxFuture<'static, Result<ToolOutput, String>> {
        Box::pin(self(arguments.clone(), context))
    }
}

#[derive(Clone)]
pub struct Tool {
    pub definition: ToolDefinition,
    pub handler: Rc<dyn ToolHandler>,
    /// `executionMode`: `Sequential` makes every batch with a call to this tool run one call at a time.
    pub execution_mode: ExecutionMode,
    /// `timeoutMs`: this tool's calls time out after so many milliseconds (before the run's own timeout).
    pub timeout_ms: Option<u32>,
    /// `needsApproval`: whether its calls wait for a decision before they run (SPEC §8).
    pub needs_approval: NeedsApproval,
}

impl Tool {
    /// A tool run in parallel with its batch, with the run's timeout, without approval.
    pub fn new(definition: ToolDefinition, handler: Rc<dyn ToolHandler>) -> Self {
        Tool {
            definition,
            handler,
            execution_mode: ExecutionMode::Parallel,
            timeout_ms: None,
            needs_approval: NeedsApproval::Never,
        }
    }
}

/// Cheap to clone (handlers and compiled schemas are shared): a run works on a snapshot.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    /// Each tool with its `parameters`, compiled at `register`.
    tools: Vec<(Tool, Rc<Schema>)>,
    /// Whether a tool has an execution mode or timeout of its own (else `settings` needs no lookup).
    any_settings: bool,
    /// Whether a tool may need approval (else `needs_approval` needs no lookup).
    any_approval: bool,
}

/// The registered tools, in order.
impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|(tool, _)| tool))
            .finish()
    }
}

/// A tool's definition and settings (its handler is a function).
impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.definition.name)
            .field("execution_mode", &self.execution_mode)
            .field("timeout_ms", &self.timeout_ms)
            .field("needs_approval", &self.needs_approval)
            .finish_non_exhaustive()
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. Its name must be one providers accept and not registered yet, and its parameters a
    /// schema the validator can apply (compiled now); the error names the field (`tool.name`,
    /// `tool.parameters.properties.path.pattern`).
    pub fn register(&mut self, tool: Tool) -> Result<(), Invalid> {
        let name = &tool.definition.name;
        tool.definition.check_name("tool")?;
        if self.get(name).is_some() {
            return Err(Invalid::from(format!(
                "tool.name must be unique (got \"{name}\", already registered)"
            )));
        }
        check_timeout_ms(tool.timeout_ms, "tool.timeoutMs")?;
        let parameters = tool.definition.compile("tool")?;
        self.any_settings |=
            tool.execution_mode != ExecutionMode::Parallel || tool.timeout_ms.is_some();
        self.any_approval |= !matches!(tool.needs_approval, NeedsApproval::Never);
        self.tools.push((tool, Rc::new(parameters)));
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.entry(name).map(|(tool, _)| tool)
    }

    fn entry(&self, name: &str) -> Option<&(Tool, Rc<Schema>)> {
        self.tools.iter().find(|(t, _)| t.definition.name == name)
    }

    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|(t, _)| t.definition.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The core executor (chapter 06): never fails. An unknown tool, arguments that fail the schema and a
    /// tool that throws all become an error result paired to the call.
    pub async fn execute(&self, call: &ToolCall, context: ExecutionContext) -> ToolResultMessage {
        let clock = context.clock.clone();
        self.reply(call, context)
            .await
            .into_result(call, || clock())
    }

    /// `execute` without the pairing fields, which the loop writes from the call (so they are not copied
    /// twice). Stamped with the clock when the tool has finished.
    async fn reply(&self, call: &ToolCall, context: ExecutionContext) -> ToolReply {
        let ExecutionContext {
            signal,
            progress,
            clock,
            host,
        } = context;
        let tool_context = ToolCallContext {
            call_id: call.id.clone(),
            signal,
            progress,
            host,
        };
        let output = self
            .run(call, tool_context)
            .await
            .unwrap_or_else(|message| ToolOutput {
                content: vec![MediaBlock::text(message)],
                is_error: true,
                ..ToolOutput::default()
            });
        ToolReply {
            content: output.content,
            details: output.details,
            is_error: output.is_error,
            timestamp: Some(clock()),
            extra: Extra::new(),
            terminate: output.terminate,
        }
    }

    /// The tool's output, or why there is none: no such tool, arguments that fail its schema, or the
    /// tool's own failure. A handler that panics (where panics unwind: natively) has thrown (SPEC §3): its
    /// call is answered with the panic's message, and the run goes on.
    async fn run(&self, call: &ToolCall, context: ToolCallContext) -> Result<ToolOutput, String> {
        let tool = self.check(call)?;
        let start = AssertUnwindSafe(|| tool.handler.call(call.arguments_or_empty(), context));
        let running = std::panic::catch_unwind(start).map_err(panicked)?;
        AssertUnwindSafe(running)
            .catch_unwind()
            .await
            .map_err(panicked)?
    }

    /// The tool that will run `call`, or why none will: no such tool, or arguments that fail its schema.
    fn check(&self, call: &ToolCall) -> Result<&Tool, String> {
        let (tool, parameters) = self
            .entry(&call.name)
            .ok_or_else(|| format!("Tool \"{}\" not found", call.name))?;
        parameters
            .validate(call.arguments_or_empty(), "arguments")
            .map_err(|problem| {
                format!("Invalid arguments for tool \"{}\": {problem}", call.name)
            })?;
        Ok(tool)
    }
}

impl ToolExecutor for ToolRegistry {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
        Box::pin(async move { Ok(self.reply(call, context).await) })
    }

    /// The registration of the tool `call` names (a call to an unknown tool: the defaults).
    fn settings(&self, call: &ToolCall) -> CallSettings {
        if !self.any_settings {
            return CallSettings::default();
        }
        self.get(&call.name)
            .map_or_else(CallSettings::default, |tool| CallSettings {
                execution_mode: tool.execution_mode,
                timeout_ms: tool.timeout_ms,
            })
    }

    fn refuses(&self, call: &ToolCall) -> bool {
        self.check(call).is_err()
    }

    /// The registration's `needsApproval`. A call the registry refuses (an unknown tool, arguments that
    /// fail the schema) needs none: it runs nothing, and is answered with its error result.
    fn needs_approval<'a>(&'a self, call: &'a ToolCall) -> Option<HookFuture<'a, bool>> {
        if !self.any_approval {
            return None;
        }
        let tool = self.get(&call.name)?;
        if matches!(tool.needs_approval, NeedsApproval::Never) || self.check(call).is_err() {
            return None;
        }
        match &tool.needs_approval {
            NeedsApproval::Never => None,
            NeedsApproval::Always => Some(Box::pin(async { Ok(true) })),
            NeedsApproval::Ask(check) => Some(check.needs_approval(call.arguments_or_empty())),
        }
    }
}

/// Runs a run's calls with `runner` and asks `registry` which of them wait for a decision: a custom executor
/// (a JS app's `executeToolCall` or tool source) runs the calls, but a call to a tool registered with
/// `needsApproval` still waits for one (SPEC §8). With the registry as the runner, it is the registry alone.
/// Either part is borrowed (`&runner`, `&registry`, for one run) or shared (`Rc`s, for an `Agent`'s
/// `executor`).
pub struct RegistryApprovals<R, G> {
    pub runner: R,
    pub registry: G,
}

impl<R, G> ToolExecutor for RegistryApprovals<R, G>
where
    R: Deref,
    R::Target: ToolExecutor,
    G: Deref<Target = ToolRegistry>,
{
    fn execute<'b>(
        &'b self,
        call: &'b ToolCall,
        context: ExecutionContext,
    ) -> LocalBoxFuture<'b, Result<ToolReply, String>> {
        self.runner.execute(call, context)
    }

    fn settings(&self, call: &ToolCall) -> CallSettings {
        self.runner.settings(call)
    }

    fn refuses(&self, call: &ToolCall) -> bool {
        self.runner.refuses(call)
    }

    fn needs_approval<'b>(&'b self, call: &'b ToolCall) -> Option<HookFuture<'b, bool>> {
        self.registry.needs_approval(call)
    }
}

/// A handler's panic as the text of its error result: `panicked: ` and its message.
fn panicked(payload: Box<dyn Any + Send>) -> String {
    let message = (payload.downcast_ref::<&str>().copied())
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
    format!(
        "panicked: {}",
        message.unwrap_or("(a value that is not text)")
    )
}
