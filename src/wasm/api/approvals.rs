//! SPEC §8 in `runAgentLoop`: its options `approvals` and `startSteps` read and checked.

use serde_json::Value;
use wasm_bindgen::JsValue;

use super::options;
use crate::approval::Approvals;
use crate::wasm::transport::convert::{expect_plain, from_js, get};

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
    // A plain object only: a `Map` (or any other class) would read as no decisions at all.
    expect_plain(value, what, "a plain object of decisions by tool call id")?;
    let decisions: Value = from_js(value, what)?;
    Ok(Approvals::from_value(&decisions, what)?)
}
