//! Approvals (SPEC §8): a tool's need for a decision before its calls run, the decisions a run is given,
//! and the calls a paused run waits on. The loop asks for them in its approval gate, the step before phase 1
//! of a batch (`agent_loop`); a run that lacks a decision ends `paused`, and resuming is running again from
//! its transcript with the decisions:
//!
//! ```ignore-wasm32
//! use std::rc::Rc;
//! use serde_json::{json, Value};
//! use tiny_pi::*;
//!
//! // A tool whose calls wait for a decision.
//! let mut tools = ToolRegistry::new();
//! let definition = ToolDefinition {
//!     name: "delete".into(),
//!     description: "Delete a file".into(),
//!     parameters: json!({"type": "object"}),
//! };
//! let handler = |_: Value, _: ToolCallContext| async {
//!     Ok(ToolOutput { content: vec![MediaBlock::text("deleted")], ..ToolOutput::default() })
//! };
//! let mut tool = Tool::new(definition, Rc::new(handler));
//! tool.needs_approval = NeedsApproval::Always;
//! tools.register(tool).unwrap();
//! let model = ScriptedModel::new(vec![
//!     AssistantMessage::new(
//!         vec![AssistantBlock::tool_call("c1", "delete", json!({"path": "a.txt"}))],
//!         StopReason::ToolUse,
//!     ),
//!     AssistantMessage::new(vec![AssistantBlock::text("Deleted.")], StopReason::Stop),
//! ]);
//! let run = |messages: Vec<AgentMessage>, approvals: Approvals, start_steps: u32| {
//!     futures::executor::block_on(run_agent_loop(LoopOptions {
//!         context: AgentContext { system_prompt: None, messages },
//!         model: &model,
//!         tools: tools.definitions(),
//!         executor: &tools,
//!         signal: AbortSignal::none(),
//!         max_steps: DEFAULT_MAX_STEPS,
//!         observer: &NoObserver,
//!         clock: Rc::new(|| 0.0),
//!         control: LoopControl { approvals, start_steps, ..LoopControl::default() },
//!     }))
//! };
//!
//! // The run pauses before anything of the batch happens...
//! let paused = run(vec![AgentMessage::user("Delete a.txt", 0.0)], Approvals::new(), 0).unwrap();
//! assert_eq!(paused.reason, RunReason::Paused);
//! let pending = paused.pending.unwrap();
//! assert_eq!((pending[0].tool_call_id.as_str(), pending[0].needs_approval), ("c1", true));
//!
//! // ...its transcript is all there is to keep (here as JSONL, as across a restart)...
//! let saved = to_jsonl(&paused.messages);
//!
//! // ...and resuming is running again from it, with the decision; steps count on.
//! let messages = parse_jsonl(&saved).unwrap();
//! let done = run(messages, Approvals::new().approve("c1"), paused.steps).unwrap();
//! assert_eq!((done.reason, done.steps), (RunReason::Stop, 2));
//! ```

use std::rc::Rc;

use serde::Serialize;
use serde_json::Value;

use crate::invalid::Invalid;
use crate::message::ToolCall;
use crate::schema::type_name;
use crate::tools::executor::HookFuture;

/// What a tool says about its calls' need for a decision (`needsApproval`). The default: none.
#[derive(Clone, Default)]
pub enum NeedsApproval {
    /// Its calls run without a decision.
    #[default]
    Never,
    /// Every call waits for a decision (`needsApproval: true`).
    Always,
    /// Asked with each call's arguments (`needsApproval: (args) => boolean | Promise<boolean>`).
    Ask(Rc<dyn ApprovalCheck>),
}

impl std::fmt::Debug for NeedsApproval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NeedsApproval::Never => "Never",
            NeedsApproval::Always => "Always",
            NeedsApproval::Ask(_) => "Ask(..)",
        })
    }
}

/// A tool's `needsApproval` function. Its answer may come later (a JS promise); an `Err` (the function
/// threw or rejected) counts as `true`: a call whose need is unknown waits for a decision.
pub trait ApprovalCheck {
    /// Whether a call with these arguments waits for a decision.
    fn needs_approval<'a>(&'a self, arguments: &'a Value) -> HookFuture<'a, bool>;
}

/// A function or closure is a `needsApproval` that answers at once.
impl<F> ApprovalCheck for F
where
    F: Fn(&Value) -> bool,
{
    fn needs_approval<'a>(&'a self, arguments: &'a Value) -> HookFuture<'a, bool> {
        Box::pin(std::future::ready(Ok(self(arguments))))
    }
}

/// What an answer of `needsApproval` means: a failed one fails safe.
pub(crate) fn needed(answer: Result<bool, String>) -> bool {
    answer.unwrap_or(true)
}

/// A decision about one call (`{approve: true}` / `{approve: false, reason?}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// The call runs (through the hooks, as any call of its batch).
    Approve,
    /// The call is answered with a skipped result, reason `denied`: its text is `reason`, or
    /// `Tool call was denied.`
    Deny {
        /// The skipped result's text.
        reason: Option<String>,
    },
}

/// The decisions a run is given (`options.approvals`), by tool call id.
///
/// A call that needs approval waits for a decision; an explicit decision applies to any call, whether its
/// tool needs approval or not: a denial answers the call with a skipped result (reason `denied`) and it never
/// runs. Each decision answers one call: once a batch has used it, a later call with the same id (some
/// providers number their calls per turn) waits for a decision of its own, so that an approval can never let
/// a different call run. A decision is for the first call of the run with its id, in whichever batch it
/// comes (decisions may be given up front): one given for an id that is not pending answers a later call
/// that has it, so give decisions for the `pending` calls only. A decision no call uses is ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approvals(Vec<(String, Approval)>);

impl Approvals {
    /// No decisions.
    pub fn new() -> Self {
        Self::default()
    }

    /// These decisions and an approval of the call `id`.
    pub fn approve(mut self, id: impl Into<String>) -> Self {
        self.insert(id, Approval::Approve);
        self
    }

    /// These decisions and a denial of the call `id`, with the skipped result's text if given.
    pub fn deny(mut self, id: impl Into<String>, reason: Option<&str>) -> Self {
        let reason = reason.map(str::to_owned);
        self.insert(id, Approval::Deny { reason });
        self
    }

    /// Sets the decision about the call `id` (in place of an earlier one).
    pub fn insert(&mut self, id: impl Into<String>, approval: Approval) {
        let id = id.into();
        match self.0.iter_mut().find(|(known, _)| *known == id) {
            Some((_, decision)) => *decision = approval,
            None => self.0.push((id, approval)),
        }
    }

    /// The decision about the call `id`, if there is one.
    pub fn get(&self, id: &str) -> Option<&Approval> {
        self.0.iter().find(|(known, _)| known == id).map(|(_, d)| d)
    }

    /// Takes the decision about the call `id` out: a batch used it.
    pub(crate) fn take(&mut self, id: &str) -> Option<Approval> {
        let at = self.0.iter().position(|(known, _)| known == id)?;
        Some(self.0.remove(at).1)
    }

    /// How many decisions there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads `{ [toolCallId]: {approve: true} | {approve: false, reason?: string} }` (the JS option); errors
    /// name the bad field under `path` (`options.approvals["call_1"].approve must be a boolean (got string)`).
    /// Fields beside `approve` and `reason` are ignored.
    pub fn from_value(value: &Value, path: &str) -> Result<Self, Invalid> {
        let Value::Object(decisions) = value else {
            return Err(Invalid::from(format!(
                "{path} must be an object of decisions by tool call id (got {})",
                type_name(value)
            )));
        };
        let mut approvals = Approvals::new();
        for (id, decision) in decisions {
            let at = format!("{path}[{}]", Value::String(id.clone()));
            let field = |key: &str| decision.get(key).filter(|v| !v.is_null());
            let approve = match (decision.is_object(), field("approve")) {
                (true, Some(Value::Bool(approve))) => *approve,
                (true, Some(other)) => {
                    return Err(Invalid::from(format!(
                        "{at}.approve must be a boolean (got {})",
                        type_name(other)
                    )))
                }
                _ => {
                    return Err(Invalid::from(format!(
                        "{at} must be {{approve: true}} or {{approve: false, reason?: string}} (got {})",
                        match decision.is_object() {
                            true => "an object without approve",
                            false => type_name(decision),
                        }
                    )))
                }
            };
            let approval = match (approve, field("reason")) {
                (true, _) => Approval::Approve,
                (false, None) => Approval::Deny { reason: None },
                (false, Some(Value::String(reason))) => Approval::Deny {
                    reason: Some(reason.clone()),
                },
                (false, Some(other)) => {
                    return Err(Invalid::from(format!(
                        "{at}.reason must be a string (got {})",
                        type_name(other)
                    )))
                }
            };
            approvals.insert(id.clone(), approval);
        }
        Ok(approvals)
    }
}

/// A call of a paused run's last batch (`result.pending`, `agent.pending`): every call of the batch is
/// listed, in call order; `needs_approval` says which wait for a decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCall {
    /// The call's id: the key of its decision in `approvals`.
    pub tool_call_id: String,
    /// The tool it calls.
    pub tool_name: String,
    /// The arguments it was called with.
    pub arguments: Value,
    /// Whether it waits for a decision (the others run when the batch does).
    pub needs_approval: bool,
}

impl PendingCall {
    /// `call`, listed as waiting for a decision or not.
    pub(crate) fn new(call: &ToolCall, needs_approval: bool) -> Self {
        PendingCall {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments: call.arguments_or_empty().clone(),
            needs_approval,
        }
    }
}
