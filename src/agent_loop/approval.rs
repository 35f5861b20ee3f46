//! The approval gate (SPEC §8), the step before phase 1 of a batch: each call's need for a decision, asked
//! in call order; a call that needs one and has none pauses the run before anything of the batch happens.

use crate::approval::{needed, Approval, Approvals, PendingCall};
use crate::event::SkipReason;
use crate::message::ToolCall;
use crate::tools::ToolExecutor;

/// What the gate decides about a batch.
pub(super) enum Gate {
    /// The batch runs. For each call, the text of its denial (`Some`) or nothing; empty when no call is
    /// denied.
    Open(Vec<Option<String>>),
    /// A call that needs approval has no decision: the run ends `paused`, waiting on these (every call
    /// of the batch, in call order).
    Pause(Vec<PendingCall>),
}

/// Asks each call's need (one at a time: a JS `needsApproval` may return a promise). When a call that needs
/// approval has no decision, the batch pauses, and nothing is called, run, appended or taken. Otherwise the
/// batch takes its calls' decisions out of `approvals` (each answers one call) and its denied calls are
/// named.
pub(super) async fn approval_gate(
    executor: &dyn ToolExecutor,
    approvals: &mut Approvals,
    calls: &[&ToolCall],
) -> Gate {
    // Filled only once a call needs approval: a batch without one allocates nothing.
    let mut needs: Vec<bool> = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        let Some(answer) = executor.needs_approval(call) else {
            continue;
        };
        if needed(answer.await) {
            needs.resize(calls.len(), false);
            needs[index] = true;
        }
    }
    open_or_pause(needs, approvals, calls)
}

/// The gate's verdict once every need is known (`needs`: each call's, or empty when none needs approval).
/// Kept out of the gate's future: plain code, laid out once. A call that needs approval and has no decision
/// pauses the batch. An explicit decision applies to any call of the batch, whether its tool needs approval
/// or not (a denial denies it), and the call uses it up.
#[inline(never)]
fn open_or_pause(needs: Vec<bool>, approvals: &mut Approvals, calls: &[&ToolCall]) -> Gate {
    let need = |index: usize| needs.get(index).copied().unwrap_or(false);
    let undecided = (calls.iter().enumerate())
        .any(|(index, call)| need(index) && approvals.get(&call.id).is_none());
    if undecided {
        let pending =
            (calls.iter().enumerate()).map(|(index, call)| PendingCall::new(call, need(index)));
        return Gate::Pause(pending.collect());
    }
    if approvals.is_empty() {
        return Gate::Open(Vec::new());
    }
    let denials = calls.iter().map(|call| match approvals.take(&call.id) {
        Some(Approval::Deny { reason }) => {
            Some(reason.unwrap_or_else(|| SkipReason::Denied.explanation().into()))
        }
        Some(Approval::Approve) | None => None,
    });
    Gate::Open(denials.collect())
}
