//! SPEC §8 in `runAgentLoop`: its options `approvals` and `startSteps` read and checked, the executor a run
//! asks about each call's need for a decision, and the pending calls made as JS (`result.pending`).

use futures::future::LocalBoxFuture;
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::options;
use crate::approval::{Approvals, PendingCall};
use crate::control::{CallSettings, HookFuture};
use crate::message::ToolCall;
use crate::tools::{ExecutionContext, ToolExecutor, ToolRegistry, ToolReply};
use crate::wasm::transport::convert::{from_js, get, json_of, type_of};
use crate::wasm::transport::glue::parse_frozen_js;
use crate::wasm::transport::tools::JsExecutor;

/// `options.approvals` and `options.startSteps`.
pub struct RunApprovals {
    /// The decisions by tool call id; none when absent.
    pub approvals: Approvals,
    /// The steps the runs this one continues made; 0 when absent.
    pub start_steps: u32,
}

impl RunApprovals {
    /// Reads both from `runAgentLoop`'s options; the error names the bad field.
    pub fn read(options: &JsValue) -> Result<RunApprovals, String> {
        let start = get(options, "startSteps", "options.startSteps")?;
        Ok(RunApprovals {
            approvals: approvals(
                &get(options, "approvals", "options.approvals")?,
                "options.approvals",
            )?,
            start_steps: options::count(&start, "options.startSteps", 0)?,
        })
    }
}

/// Decisions by tool call id (`{ [toolCallId]: {approve: true} | {approve: false, reason?} }`; `what` names
/// them), none when absent.
pub fn approvals(value: &JsValue, what: &str) -> Result<Approvals, String> {
    if value.is_null_or_undefined() {
        return Ok(Approvals::new());
    }
    if value.is_function() || value.is_symbol() {
        // No JSON to read: the core's check below never sees it.
        return Err(format!(
            "{what} must be an object of decisions by tool call id (got {})",
            type_of(value)
        ));
    }
    let decisions: Value = from_js(value, what, "any")?;
    Approvals::from_value(&decisions, what)
}

/// What runs a run's calls, asked about their need for a decision by the registry: a custom executor
/// (`executeToolCall`, a tool source's `execute`) runs the calls, but a call to a tool registered with
/// `needsApproval` still waits for a decision (without a custom executor, the registry does all).
pub struct WithApprovals<'a> {
    pub custom: Option<&'a JsExecutor>,
    pub registry: &'a ToolRegistry,
}

impl WithApprovals<'_> {
    fn runner(&self) -> &dyn ToolExecutor {
        match self.custom {
            Some(custom) => custom,
            None => self.registry,
        }
    }
}

impl ToolExecutor for WithApprovals<'_> {
    fn execute<'b>(
        &'b self,
        call: &'b ToolCall,
        context: ExecutionContext,
    ) -> LocalBoxFuture<'b, Result<ToolReply, String>> {
        self.runner().execute(call, context)
    }

    fn settings(&self, call: &ToolCall) -> CallSettings {
        self.runner().settings(call)
    }

    fn refuses(&self, call: &ToolCall) -> bool {
        self.runner().refuses(call)
    }

    fn needs_approval<'b>(&'b self, call: &'b ToolCall) -> Option<HookFuture<'b, bool>> {
        self.registry.needs_approval(call)
    }
}

/// `result.pending`: the calls of a paused run's last batch, as frozen objects in a frozen array.
pub fn pending_js(pending: &[PendingCall]) -> JsValue {
    parse_frozen_js(&json_of(pending))
}
