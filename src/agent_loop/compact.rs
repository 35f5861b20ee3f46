//! The compaction step (SPEC §13), before each request and before `prepareRequest`: the loop sums the
//! estimated tokens of the messages the request would carry and, over `max_context_tokens`, compacts once:
//! it finds the cut, asks `summarize` about what comes before it, appends the entry and emits `compaction`.
//! (What a request carries, and where a cut may be: `crate::compaction`.)
//!
//! Each message is estimated once, when a request first would carry it, and the sum is kept as messages are
//! appended: a turn that does not compact estimates only what the turn added.

use super::{End, Run};
use crate::compaction::{
    default_estimate, find_cut, is_sent, summary_message, CompactionOptions, EstimateTokens,
};
use crate::event::LoopEvent;
use crate::js_number::{finite_sum, js_display};
use crate::message::{AgentMessage, CompactionEntry, Extra};
use crate::model::Model;

/// The estimates a run keeps (empty, and never touched, without compaction).
#[derive(Default)]
pub(super) struct Estimates {
    /// Each transcript message's estimate (0 for a message never sent), by index.
    sent: Vec<f64>,
    /// Where requests start now (the last entry's `first_kept_index`, else 0), and the sum of `sent` from
    /// there on.
    from: usize,
    kept: f64,
    /// The last entry (its index) and its summary message's estimate.
    summary: Option<(usize, f64)>,
}

impl Estimates {
    /// The estimated tokens of the request the transcript makes now: the summary message (after an entry)
    /// and every message sent from the cut on. Estimates the messages appended since the last time.
    fn total(
        &mut self,
        messages: &[AgentMessage],
        last_entry: Option<usize>,
        estimator: Option<&dyn EstimateTokens>,
    ) -> Result<f64, String> {
        for (index, message) in messages.iter().enumerate().skip(self.sent.len()) {
            let tokens = match is_sent(message) {
                true => estimate(estimator, message, || format!("messages[{index}]"))?,
                false => 0.0,
            };
            self.sent.push(tokens);
            if index >= self.from {
                self.kept += tokens;
            }
        }
        let entry = last_entry.and_then(|at| match &messages[at] {
            AgentMessage::Compaction(entry) => Some((at, entry)),
            _ => None,
        });
        let from = entry.map_or(0, |(_, entry)| entry.first_kept_index);
        if from != self.from {
            self.from = from;
            self.kept = self.sent.get(from..).unwrap_or_default().iter().sum();
        }
        let summary = match (entry, self.summary) {
            (None, _) => 0.0,
            (Some((at, _)), Some((known, tokens))) if at == known => tokens,
            (Some((at, entry)), _) => {
                let what = || "the summary message".to_string();
                let tokens = estimate(estimator, &summary_message(entry), what)?;
                self.summary = Some((at, tokens));
                tokens
            }
        };
        Ok(summary + self.kept)
    }
}

/// One message's estimate: the app's `estimate_tokens`, or the default. An error, or an answer that is not a
/// non-negative finite number, names the message (`what`).
fn estimate(
    estimator: Option<&dyn EstimateTokens>,
    message: &AgentMessage,
    what: impl Fn() -> String,
) -> Result<f64, String> {
    let Some(estimator) = estimator else {
        return Ok(default_estimate(message));
    };
    match estimator.estimate_tokens(message) {
        Ok(tokens) if tokens.is_finite() && tokens >= 0.0 => Ok(tokens),
        Ok(tokens) => Err(format!(
            "estimateTokens returned {} for {}: expected a non-negative number",
            js_display(tokens),
            what()
        )),
        Err(error) => Err(format!("estimateTokens failed for {}: {error}", what())),
    }
}

impl<M: Model> Run<'_, M> {
    /// Compacts before a request when its messages estimate more than `max_context_tokens` and there is a
    /// cut. `Err` ends the run before the request: `summarize` or an estimate failed (`error`, nothing
    /// appended), the run was aborted while `summarize` ran (`aborted`, nothing appended), or while the
    /// `compaction` event was observed (`aborted`, the entry appended).
    pub(super) async fn compact(&mut self, options: &CompactionOptions) -> Result<(), End> {
        let failed = |message: String| End::Error(format!("compaction failed: {message}"));
        let estimator = options.estimate_tokens.as_deref();
        let transcript = self.messages.clone();
        let messages = transcript.borrow();
        let total = (self.estimates)
            .total(&messages, self.last_entry, estimator)
            .map_err(failed)?;
        // Not over (a NaN limit never is).
        if total.partial_cmp(&options.max_context_tokens) != Some(std::cmp::Ordering::Greater) {
            return Ok(());
        }
        let previous = self.last_entry.and_then(|at| match &messages[at] {
            AgentMessage::Compaction(entry) => Some(entry),
            _ => None,
        });
        let after = previous.map_or(0, |entry| entry.first_kept_index);
        let keep = options.keep_recent();
        let Some(cut) = find_cut(&messages, after, &self.estimates.sent, keep) else {
            return Ok(());
        };
        // What the request would have carried before the cut.
        let before = (messages.get(after..cut).unwrap_or_default().iter())
            .filter(|m| is_sent(m))
            .cloned();
        let summarized: Vec<AgentMessage> = (previous.map(summary_message).into_iter())
            .chain(before)
            .collect();
        drop(messages);
        let summary = options.summarize.summarize(&summarized, &self.signal).await;
        if self.signal.aborted() {
            return Err(End::Aborted);
        }
        let entry = CompactionEntry {
            summary: summary.map_err(failed)?,
            first_kept_index: cut,
            tokens_before: Some(finite_sum(total)),
            timestamp: (self.clock)(),
            extra: Extra::new(),
        };
        transcript
            .borrow_mut()
            .push(AgentMessage::Compaction(entry));
        let messages = transcript.borrow();
        let index = messages.len() - 1;
        self.last_entry = Some(index);
        let Some(AgentMessage::Compaction(entry)) = messages.last() else {
            unreachable!("the entry was just appended");
        };
        self.emitter
            .emit(LoopEvent::Compaction { entry, index })
            .await;
        // The checkpoint before the request again: `summarize` and the observer were awaited.
        match self.signal.aborted() {
            true => Err(End::Aborted),
            false => Ok(()),
        }
    }
}
