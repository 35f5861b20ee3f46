//! The retry step (SPEC §12) around `stream_response`: a request's response is streamed, its usage counted
//! (SPEC §11), and a failed one streamed again as the run's `RetryPolicy` says (the rules: `crate::retry`).
//! Without a policy, or when no retry is made, the response goes to the decision table as it came.

use futures::future::{select, Either};

use super::decide::MODEL_ERROR;
use super::request::stream_response;
use super::{Emitter, End};
use crate::control::{LoopControl, Timers, LONGEST_TIMER_MS};
use crate::event::LoopEvent;
use crate::message::{AssistantMessage, StopReason};
use crate::model::{Model, ModelRequest, ModelStream};
use crate::retry::{Failure, RetryPolicy};
use crate::signal::AbortSignal;
use crate::usage::Usage;

/// What answering one request needs of the run: its observer, options and signal, and the usage and
/// retries it counts.
pub(super) struct Attempts<'r, 'a, E> {
    pub emitter: &'r mut Emitter<'a, E>,
    pub control: &'r LoopControl<'a>,
    pub signal: &'r AbortSignal,
    pub usage: &'r mut Usage,
    pub retries: &'r mut u32,
}

impl<E> Attempts<'_, '_, E> {
    /// Streams `request` until a response is not retried: that response, or (a stream that threw, not
    /// retried) the error that ends the run. An abort during a retry's wait ends the run with `aborted`.
    pub async fn respond<M: Model>(
        &mut self,
        model: &M,
        request: ModelRequest<'_>,
    ) -> Result<AssistantMessage, End>
    where
        M::Stream: ModelStream<Event = E>,
    {
        let mut attempt = 0;
        loop {
            let request = ModelRequest { attempt, ..request };
            let response = stream_response(model, request, self.signal, self.emitter).await;
            if let Ok(message) = &response {
                self.usage.add(Usage::of(message));
            }
            let Some(policy) = self.control.retry else {
                return response.map_err(End::Error);
            };
            let delay = match failure(&response) {
                None => None,
                Some((error, message)) => {
                    attempt += 1;
                    let failure = Failure {
                        error,
                        message,
                        attempt,
                        signal: self.signal,
                    };
                    self.retry(policy, failure).await
                }
            };
            let Some(delay_ms) = delay else {
                return response.map_err(End::Error);
            };
            *self.retries += 1;
            wait(self.control.timers, delay_ms, self.signal).await?;
        }
    }

    /// Whether `failure` is retried: while the request has had fewer than `max_retries` retries, the run
    /// is not aborted, its budget is not spent, and `should_retry` (if any) says yes (a throw: no). When it
    /// is, the `retry` event goes out, and the wait before the retry is the answer.
    async fn retry(&mut self, policy: &RetryPolicy, failure: Failure<'_>) -> Option<f64> {
        let spent = (self.control.budget).is_some_and(|budget| budget.spent(self.usage));
        if failure.attempt > policy.max_retries || self.signal.aborted() || spent {
            return None;
        }
        if let Some(hook) = &policy.should_retry {
            if hook.should_retry(failure).await != Ok(true) {
                return None;
            }
        }
        let delay_ms = policy.delay_ms(failure.attempt);
        let event = LoopEvent::Retry {
            attempt: failure.attempt,
            delay_ms,
            error: failure.error,
        };
        self.emitter.emit(event).await;
        Some(delay_ms)
    }
}

/// Why a response failed, and its final message if it had one; `None` when it did not fail.
fn failure(
    response: &Result<AssistantMessage, String>,
) -> Option<(&str, Option<&AssistantMessage>)> {
    match response {
        Ok(message) if message.stop_reason == StopReason::Error => {
            let error = message.error_message.as_deref().unwrap_or(MODEL_ERROR);
            Some((error, Some(message)))
        }
        Ok(_) => None,
        Err(thrown) => Some((thrown, None)),
    }
}

/// Waits `delay_ms` (rounded up to whole ms) on the host's timers, a timer of at most `LONGEST_TIMER_MS`
/// at a time; `Err(aborted)` when the run is aborted before or during the wait.
async fn wait(timers: &dyn Timers, delay_ms: f64, signal: &AbortSignal) -> Result<(), End> {
    let mut left = delay_ms.max(0.0).ceil();
    while !signal.aborted() {
        let ms = left.min(f64::from(LONGEST_TIMER_MS));
        match select(timers.sleep(ms as u32), signal.cancelled()).await {
            Either::Right(_) => return Err(End::Aborted),
            // Timers that never fire (`NoTimers`) do not wait.
            Either::Left((false, _)) => break,
            Either::Left((true, _)) => {}
        }
        left -= ms;
        if left <= 0.0 {
            break;
        }
    }
    match signal.aborted() {
        true => Err(End::Aborted),
        false => Ok(()),
    }
}
