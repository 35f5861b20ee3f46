//! Retries (SPEC §12): the policy a run is given, what a failed response is, and how long a retry waits.
//! The loop's step is `agent_loop/retry.rs`.
//!
//! A response *fails* when its final message has `stopReason: "error"` (the error is its `errorMessage`), or
//! when the stream throws or ends without a final message (the error is what it threw, and there is no
//! message). It is retried while fewer than `max_retries` retries were made for this request, the run is not
//! aborted, its budget (SPEC §11) is not spent, and `should_retry` (by default: always) says yes; one that
//! fails (a JS function that throws) means no retry. A retry appends nothing for the failed response (its
//! calls never run and never enter the transcript), emits `retry {attempt, delayMs, error}`, waits on the
//! host's timers (an abort during the wait ends the run at once with `aborted`), and makes the same request
//! again: `prepareRequest` is not asked again, and the request is not counted again in `steps`.

use std::rc::Rc;

use crate::invalid::Invalid;
use crate::message::AssistantMessage;
use crate::signal::AbortSignal;
use crate::tools::executor::HookFuture;
use crate::usage::non_negative;

/// `options.retry`. The default retries nothing (`max_retries: 0`). The waits are the run's `Timers`: with
/// the default `NoTimers` a retry comes at once, so a native host gives its own timers for the delays.
#[derive(Clone)]
pub struct RetryPolicy {
    /// How many retries one request may have.
    pub max_retries: u32,
    /// The wait before the first retry, in ms; each further retry of the same request waits twice as long.
    pub base_delay_ms: f64,
    /// The longest wait, in ms.
    pub max_delay_ms: f64,
    /// Asked before each retry; `None`: always retry.
    pub should_retry: Option<Rc<dyn ShouldRetry>>,
}

/// The numbers, and whether there is a `should_retry`.
impl std::fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_retries", &self.max_retries)
            .field("base_delay_ms", &self.base_delay_ms)
            .field("max_delay_ms", &self.max_delay_ms)
            .field("should_retry", &self.should_retry.is_some())
            .finish()
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 0,
            base_delay_ms: 1000.0,
            max_delay_ms: 30_000.0,
            should_retry: None,
        }
    }
}

/// What `should_retry` is told about a failed response.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Failure<'a> {
    /// The final message's `errorMessage` (or a sentence saying it had none), or what the stream threw.
    pub error: &'a str,
    /// The failed final message; `None` when the stream threw or ended without one.
    pub message: Option<&'a AssistantMessage>,
    /// The number the retry would have: 1 for a request's first.
    pub attempt: u32,
    /// The run's signal: a `should_retry` that waits (on a person, say) can stop waiting when it aborts.
    pub signal: &'a AbortSignal,
}

/// `shouldRetry`: whether to retry a failed response. `Ok(false)` and `Err` (the function threw) both mean
/// no retry.
pub trait ShouldRetry {
    fn should_retry<'a>(&'a self, failure: Failure<'a>) -> HookFuture<'a, bool>;
}

/// A function or closure is a `shouldRetry` that answers at once.
impl<F> ShouldRetry for F
where
    F: Fn(Failure<'_>) -> bool,
{
    fn should_retry<'a>(&'a self, failure: Failure<'a>) -> HookFuture<'a, bool> {
        Box::pin(std::future::ready(Ok(self(failure))))
    }
}

impl RetryPolicy {
    /// The wait before retry `attempt` (1 for the first): `min(max_delay_ms, base_delay_ms × 2^(attempt−1))`.
    pub fn delay_ms(&self, attempt: u32) -> f64 {
        // 2^1023 is the largest finite power: base × it is still 0 for a base of 0, never NaN.
        let doubling = 2f64.powi(attempt.saturating_sub(1).min(1023) as i32);
        (self.base_delay_ms * doubling).min(self.max_delay_ms)
    }

    /// The delays must be non-negative finite numbers; the error names the field under `path`
    /// (`options.retry.baseDelayMs must be a non-negative number (got NaN)`).
    pub fn check(&self, path: &str) -> Result<(), Invalid> {
        non_negative(self.base_delay_ms, path, "baseDelayMs")?;
        non_negative(self.max_delay_ms, path, "maxDelayMs")
    }
}
