//! Usage and budgets (SPEC §11): what a run's responses cost, summed from pi-ai's `usage` on each final
//! assistant message, and the budget that ends a run once it is spent.
//!
//! Usage never causes an error: a field that is missing, or that is not a finite number, counts 0. The
//! budget is looked at only where the loop would otherwise ask the model again: after a batch (the checks
//! are, in order: aborted, terminated, budget, `max_steps`), before the queues are asked after a `stop`
//! (a spent budget: they are not asked, and the run ends with `stop`), and before a retry (SPEC §12: a spent
//! budget makes no retry, and the failed response is handled as part one says).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::invalid::Invalid;
use crate::js_number::{finite_sum, js_display};
use crate::message::AssistantMessage;

/// `result.usage`: tokens and cost summed over every final message the model returned in a run (appended,
/// or dropped by a retry). Zeros when nothing was reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total_tokens: f64,
    /// pi-ai's `usage.cost.total`.
    pub cost: f64,
}

/// `options.budget`: the run ends with reason `budget` once `usage.totalTokens >= max_tokens` or
/// `usage.cost >= max_cost` (each, when set, a positive finite number: `check`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
}

impl Usage {
    /// What `message` reports in its `usage` field (kept in `extra`, as pi-ai writes it): `input`,
    /// `output`, `cacheRead`, `cacheWrite`, `totalTokens` and `cost.total`. Reads in place: nothing is
    /// copied or allocated.
    pub fn of(message: &AssistantMessage) -> Usage {
        let Some(usage) = message.extra.get("usage") else {
            return Usage::default();
        };
        let field = |key: &str| count(usage.get(key));
        Usage {
            input: field("input"),
            output: field("output"),
            cache_read: field("cacheRead"),
            cache_write: field("cacheWrite"),
            total_tokens: field("totalTokens"),
            cost: count(usage.get("cost").and_then(|cost| cost.get("total"))),
        }
    }

    /// Adds `other` field by field; a sum that overflows stays finite (`finite_sum`).
    pub fn add(&mut self, other: Usage) {
        self.input = finite_sum(self.input + other.input);
        self.output = finite_sum(self.output + other.output);
        self.cache_read = finite_sum(self.cache_read + other.cache_read);
        self.cache_write = finite_sum(self.cache_write + other.cache_write);
        self.total_tokens = finite_sum(self.total_tokens + other.total_tokens);
        self.cost = finite_sum(self.cost + other.cost);
    }
}

/// A number as usage counts it: a finite JSON number, else 0.
fn count(value: Option<&Value>) -> f64 {
    value
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite())
        .unwrap_or(0.0)
}

impl Budget {
    /// Whether `usage` has spent this budget.
    pub fn spent(&self, usage: &Usage) -> bool {
        self.max_tokens.is_some_and(|max| usage.total_tokens >= max)
            || self.max_cost.is_some_and(|max| usage.cost >= max)
    }

    /// Each limit that is set must be a positive finite number; the error names the field under `path`
    /// (`options.budget.maxTokens must be a positive number (got -1)`).
    pub fn check(&self, path: &str) -> Result<(), Invalid> {
        positive(self.max_tokens, path, "maxTokens")?;
        positive(self.max_cost, path, "maxCost")
    }
}

/// `Ok` when `value` is absent or a positive finite number; else the error naming `path.field`.
pub(crate) fn positive(value: Option<f64>, path: &str, field: &str) -> Result<(), Invalid> {
    match value {
        Some(x) if !(x.is_finite() && x > 0.0) => Err(Invalid::from(format!(
            "{path}.{field} must be a positive number (got {})",
            js_display(x)
        ))),
        _ => Ok(()),
    }
}

/// `Ok` when `value` is a non-negative finite number; else the error naming `path.field`.
pub(crate) fn non_negative(value: f64, path: &str, field: &str) -> Result<(), Invalid> {
    match value.is_finite() && value >= 0.0 {
        true => Ok(()),
        false => Err(Invalid::from(format!(
            "{path}.{field} must be a non-negative number (got {})",
            js_display(value)
        ))),
    }
}
