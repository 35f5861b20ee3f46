//! The properties every run must have, checked against what the model, the executor, the hooks, the queues,
//! the timers and the observer recorded. The oracle rebuilds the transcript and the event sequence from the
//! model's responses, the decision table of SPEC §4 and the rules of §7 and §8, independently of the loop's
//! own code: it walks the run's timeline one loop action at a time (an event, a request, a hook call, a queue
//! ask) and checks each against what the rules allow at that point, given what the loop knew there (the
//! signal had aborted or not, a timer had fired or not, a hook had answered this or that).
//!
//! Part three: the oracle sums the usage each delivered message reports (its own reading), stops where a
//! budget says, follows each failed response through the retry policy (a retried response's calls never
//! run and nothing of it is appended: the walk would meet its events), and before each request estimates
//! the request (its own view of the transcript, its own measure of the JSON) and finds the cut by brute
//! force: a compaction never separates a call from its result, and the request after it carries the
//! summary and the kept messages.

use std::cell::Ref;
use std::collections::HashSet;

use serde_json::json;
use tiny_pi::*;

use super::plan::{has_path, registry_accepts, ExecutorKind, NeedPlan, RetryPlan, RunPlan, NOTE};
use super::world::{
    orphan, AfterLog, AskLog, BeforeLog, Entry, Ev, Execution, Finished, PrepareLog, RequestLog,
    RetryAskLog, SourcesLog, SummarizeLog, TimerLog, World,
};

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// What the decision table says about one final message.
#[derive(Debug, Clone, PartialEq)]
enum Row {
    Execute,
    Skip(SkipReason, RunReason),
    Finish(RunReason),
    /// `stop` with no calls: the queues may go on.
    Done,
}

fn row(message: &AssistantMessage) -> Row {
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    let distinct = calls.iter().map(|c| &c.id).collect::<HashSet<_>>().len();
    match message.stop_reason {
        StopReason::Stop if calls.is_empty() => Row::Done,
        StopReason::Stop => Row::Skip(SkipReason::UnexpectedStop, RunReason::Error),
        StopReason::ToolUse if calls.is_empty() => Row::Finish(RunReason::Error),
        StopReason::ToolUse if distinct < calls.len() => {
            Row::Skip(SkipReason::DuplicateCallId, RunReason::Error)
        }
        StopReason::ToolUse => Row::Execute,
        StopReason::Length => Row::Skip(SkipReason::Length, RunReason::Length),
        StopReason::Error => Row::Skip(SkipReason::Error, RunReason::Error),
        StopReason::Aborted => Row::Skip(SkipReason::Aborted, RunReason::Aborted),
    }
}

/// Invariant 2, checked independently of `validate_transcript`: every call of an assistant message has
/// exactly one result with its id (one per distinct id) among the messages after it and before the next
/// assistant message, and every result answers a call of the assistant message before it. Custom-role
/// messages are not part of the pairing.
pub fn pairing_problem(messages: &[AgentMessage]) -> Option<String> {
    let mut open: Option<(usize, Vec<String>, Vec<usize>)> = None;
    let close = |open: &Option<(usize, Vec<String>, Vec<usize>)>| -> Option<String> {
        let (at, ids, answers) = open.as_ref()?;
        ids.iter()
            .zip(answers)
            .find(|(_, n)| **n != 1)
            .map(|(id, n)| format!("call {id} of message {at} has {n} results"))
    };
    for (index, message) in messages.iter().enumerate() {
        match message {
            AgentMessage::Assistant(a) => {
                if let Some(problem) = close(&open) {
                    return Some(problem);
                }
                let mut ids: Vec<String> = Vec::new();
                for call in a.tool_calls() {
                    if !ids.contains(&call.id) {
                        ids.push(call.id.clone());
                    }
                }
                let answers = vec![0; ids.len()];
                open = Some((index, ids, answers));
            }
            AgentMessage::ToolResult(r) => {
                let found = open.as_mut().and_then(|(_, ids, answers)| {
                    let at = ids.iter().position(|id| *id == r.tool_call_id)?;
                    answers[at] += 1;
                    Some(())
                });
                if found.is_none() {
                    return Some(format!(
                        "result {index} ({}) answers no call of the message before it",
                        r.tool_call_id
                    ));
                }
            }
            AgentMessage::User(_) | AgentMessage::Compaction(_) | AgentMessage::Custom(_) => {}
        }
    }
    close(&open)
}

fn labels(events: &[Ev]) -> Vec<String> {
    events.iter().map(Ev::label).collect()
}

/// The result the loop must append for an executed call, given what the executor answered.
fn expected_result(
    call: &ToolCall,
    reply: &Result<ToolReply, String>,
    now: f64,
) -> ToolResultMessage {
    match reply {
        Ok(reply) => reply.clone().into_result(call, || now),
        Err(message) => ToolResultMessage::error(call, message.clone(), now),
    }
}

/// An error result, as SPEC writes one: one text block, `isError`, no details.
fn error_result(call: &ToolCall, text: String, now: f64) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![MediaBlock::text(text)],
        details: None,
        is_error: true,
        timestamp: now,
        extra: Default::default(),
    }
}

/// A skipped result with `reason` and `text`.
fn skipped_result(call: &ToolCall, reason: &str, text: &str, now: f64) -> ToolResultMessage {
    ToolResultMessage {
        details: Some(json!({"skipped": true, "reason": reason})),
        ..error_result(call, text.into(), now)
    }
}

/// What the run's `error` must say.
#[derive(Debug, Clone, PartialEq)]
enum Cause {
    /// Anything (a row of the table with its own wording).
    Any,
    /// It names this (a model's thrown error, its `errorMessage`).
    Contains(String),
    /// Exactly this (SPEC §7's texts).
    Exactly(String),
}

/// How the oracle expects the run to end.
type Ending = (RunReason, Cause);

/// Where the oracle is in the run: the timeline position, the transcript so far, the steps made, and how
/// far each log has been matched.
struct Walk<'f> {
    plan: &'f RunPlan,
    world: &'f World,
    events: Ref<'f, Vec<Ev>>,
    timeline: Ref<'f, Vec<Entry>>,
    requests: Ref<'f, Vec<RequestLog>>,
    executions: Ref<'f, Vec<Execution>>,
    befores: Ref<'f, Vec<BeforeLog>>,
    afters: Ref<'f, Vec<AfterLog>>,
    prepares: Ref<'f, Vec<PrepareLog>>,
    asks: Ref<'f, Vec<AskLog>>,
    summaries: Ref<'f, Vec<SummarizeLog>>,
    retry_asks: Ref<'f, Vec<RetryAskLog>>,
    /// Model requests matched so far (steps, and the retried ones).
    requests_made: usize,
    /// Whether `prepareRequest` replaced the messages of the request being made.
    patched_messages: bool,
    /// SPEC §11 and §12, as the oracle counts them.
    usage: Usage,
    retries: u32,
    timers: Ref<'f, Vec<TimerLog>>,
    /// The next timeline position to look at.
    at: usize,
    /// Where the run's signal aborted.
    abort_at: Option<usize>,
    transcript: Vec<AgentMessage>,
    steps: u32,
    /// Executions matched so far.
    executed: usize,
    /// SPEC §8: the decisions the run was given, and the ids whose decision a batch has used.
    approvals: Approvals,
    used: HashSet<String>,
    /// The calls a paused run waits on.
    pending: Option<Vec<PendingCall>>,
}

impl Walk<'_> {
    fn trace(&self) -> Vec<String> {
        labels(&self.events)
    }

    /// The loop's next action (skipping what tools, timers and the driver did), not consumed.
    fn peek(&self) -> Option<(usize, Entry)> {
        (self.at..self.timeline.len())
            .map(|p| (p, self.timeline[p]))
            .find(|(_, e)| e.is_action())
    }

    /// The loop's next action, consumed.
    fn next(&mut self, what: &str) -> Result<(usize, Entry), String> {
        let (position, entry) = self.peek().ok_or_else(|| {
            format!(
                "the run ended where {what} was expected; events {:?}",
                self.trace()
            )
        })?;
        self.at = position + 1;
        Ok((position, entry))
    }

    /// Whether the run's signal had aborted when the loop did the action at `position` (the loop checks
    /// right before it acts, with nothing awaited in between).
    fn aborted_before(&self, position: usize) -> bool {
        self.abort_at.is_some_and(|a| a < position)
    }

    /// Where the loop's next action is (the end of the timeline if there is none).
    fn next_position(&self) -> usize {
        self.peek().map_or(self.timeline.len(), |(p, _)| p)
    }

    /// The next action must be an event: it and its timeline position.
    fn event(&mut self, what: &str) -> Result<(usize, Ev), String> {
        match self.next(what)? {
            (position, Entry::Event(n)) => Ok((position, self.events[n].clone())),
            (_, other) => Err(format!(
                "expected {what}, the loop did {other:?}; events {:?}",
                self.trace()
            )),
        }
    }

    fn position_of(&self, entry: Entry) -> Option<usize> {
        self.timeline.iter().position(|e| *e == entry)
    }

    /// Walks the whole run; how it must end.
    fn run(&mut self) -> Result<Ending, String> {
        let max_steps = self.plan.max_steps();
        loop {
            // The checkpoint before a request: aborted, then max_steps.
            if self.aborted_before(self.next_position()) {
                return Ok((RunReason::Aborted, Cause::Any));
            }
            if self.steps >= max_steps {
                return Ok((RunReason::MaxSteps, Cause::Any));
            }
            if let Some(ending) = self.compact()? {
                return Ok(ending);
            }
            let request = match self.prepare()? {
                Ok(request) => request,
                Err(ending) => return Ok(ending),
            };
            let message = match self.response(request)? {
                Ok(message) => message,
                Err(ending) => return Ok(ending),
            };
            let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
            match row(&message) {
                Row::Execute => {
                    let Some(denials) = self.gate(&calls)? else {
                        return Ok((RunReason::Paused, Cause::Any));
                    };
                    let terminated = self.batch(&calls, denials)?;
                    // After a batch: aborted, terminated, max_steps; then the steering queue.
                    if self.aborted_before(self.next_position()) {
                        return Ok((RunReason::Aborted, Cause::Any));
                    }
                    if terminated {
                        return Ok((RunReason::Terminated, Cause::Any));
                    }
                    if self.budget_spent() {
                        return Ok((RunReason::Budget, Cause::Any));
                    }
                    if self.steps >= max_steps {
                        return Ok((RunReason::MaxSteps, Cause::Any));
                    }
                    if let Asked::Ended(ending) = self.ask(Queue::Steering)? {
                        return Ok(ending);
                    }
                }
                Row::Skip(reason, run_reason) => {
                    self.skip(&calls, reason)?;
                    let cause = match (&message.error_message, message.stop_reason) {
                        (Some(error), StopReason::Error) => Cause::Contains(error.clone()),
                        _ => Cause::Any,
                    };
                    return Ok((run_reason, cause));
                }
                Row::Finish(reason) => return Ok((reason, Cause::Any)),
                Row::Done => {
                    let mut appended = false;
                    for queue in [Queue::Steering, Queue::FollowUp] {
                        if self.aborted_before(self.next_position())
                            || self.steps >= max_steps
                            || self.budget_spent()
                        {
                            break;
                        }
                        match self.ask(queue)? {
                            Asked::Nothing => {}
                            Asked::Appended => {
                                appended = true;
                                break;
                            }
                            Asked::Ended(ending) => return Ok(ending),
                        }
                    }
                    if !appended {
                        return Ok((RunReason::Stop, Cause::Any));
                    }
                }
            }
        }
    }

    /// The request the loop builds (custom messages left out), shown to `prepareRequest` if the run has
    /// it, as the hook leaves it; or how the run ends instead.
    #[allow(clippy::type_complexity)]
    fn prepare(&mut self) -> Result<Result<RecordedRequest, Ending>, String> {
        let built = RecordedRequest {
            system_prompt: self.plan.system_prompt.clone(),
            messages: self.view(),
            tools: super::plan::definitions(),
        };
        self.patched_messages = false;
        if self.plan.control.prepare.is_none() {
            return Ok(Ok(built));
        }
        let (_, entry) = self.next("prepareRequest")?;
        let Entry::Prepare(n) = entry else {
            return Err(format!(
                "expected prepareRequest, the loop did {entry:?}; events {:?}",
                self.trace()
            ));
        };
        let log = self.prepares[n].clone();
        ensure!(
            log.step == self.steps + 1,
            "prepareRequest was told step {}, the request will be {}",
            log.step,
            self.steps + 1
        );
        ensure!(
            log.context == self.transcript,
            "prepareRequest's context is not the transcript"
        );
        ensure!(
            (&log.system_prompt, &log.request, &log.tools)
                == (&built.system_prompt, &built.messages, &built.tools),
            "prepareRequest was shown {:?}, not the request the loop builds {:?}",
            log.request,
            built.messages
        );
        let patch = match log.answer {
            Err(message) => {
                let error = format!("prepareRequest failed: {message}");
                return Ok(Err((RunReason::Error, Cause::Exactly(error))));
            }
            Ok(None) => return Ok(self.after_prepare(built)),
            Ok(Some(patch)) => patch,
        };
        if let Some(messages) = &patch.messages {
            let unsent = messages.iter().enumerate().find_map(|(i, m)| match m {
                AgentMessage::Compaction(_) => Some((i, "compaction", "a compaction entry, which is never sent (its summary is)")),
                AgentMessage::Custom(c) => Some((i, c.role.as_str(), "a custom-role message, which is sent only once converted (to a user message, say)")),
                _ => None,
            });
            if let Some((index, role, what)) = unsent {
                let error = format!(
                    "prepareRequest returned messages[{index}] with role \"{role}\": {what}"
                );
                return Ok(Err((RunReason::Error, Cause::Exactly(error))));
            }
            let broken = pairing_problem(messages);
            if messages.last() == Some(&orphan()) {
                ensure!(broken.is_some(), "the oracle missed an orphan result");
                let error = format!(
                    "prepareRequest returned messages that break the pairing: orphan_result for tool call \"orphan\" at messages[{}]",
                    messages.len() - 1
                );
                return Ok(Err((RunReason::Error, Cause::Exactly(error))));
            }
            ensure!(broken.is_none(), "a valid patch breaks pairing: {broken:?}");
        }
        self.patched_messages = patch.messages.is_some();
        let patched = RecordedRequest {
            system_prompt: patch.system_prompt.or(built.system_prompt),
            messages: patch.messages.unwrap_or(built.messages),
            tools: patch.tools.unwrap_or(built.tools),
        };
        Ok(self.after_prepare(patched))
    }

    /// An abort while `prepareRequest` ran ends the run before the request.
    fn after_prepare(&self, request: RecordedRequest) -> Result<RecordedRequest, Ending> {
        match self.aborted_before(self.next_position()) {
            true => Err((RunReason::Aborted, Cause::Any)),
            false => Ok(request),
        }
    }

    /// The request, its events and its final message (appended); or how a failed stream ends the run. A
    /// failed response the retry policy retries is followed by the same request again.
    fn response(
        &mut self,
        expected: RecordedRequest,
    ) -> Result<Result<AssistantMessage, Ending>, String> {
        let mut attempt = 0;
        loop {
            let (delivered, thrown) = self.request(&expected, attempt == 0)?;
            if let Some(message) = &delivered {
                self.usage.add(reported(message));
            }
            let failure = match &delivered {
                None => Some((
                    (thrown.clone())
                        .unwrap_or("the model stream ended without a final message".into()),
                    None,
                )),
                Some(m) if m.stop_reason == StopReason::Error => Some((
                    (m.error_message.clone())
                        .unwrap_or("the model response ended with an error".into()),
                    Some(m.clone()),
                )),
                Some(_) => None,
            };
            if let (Some(plan), Some((error, message))) = (self.plan.control.retry.clone(), failure)
            {
                attempt += 1;
                match self.retried(&plan, error, message, attempt)? {
                    Retried::No => {}
                    Retried::Again => continue,
                    Retried::Ended(ending) => return Ok(Err(ending)),
                }
            }
            let Some(message) = delivered else {
                // A stream that threw or ended without a final message: error, nothing appended.
                let cause = thrown.map_or(Cause::Any, Cause::Contains);
                return Ok(Err((RunReason::Error, cause)));
            };
            let (_, got) = self.event("assistant_message")?;
            ensure!(
                got == Ev::Assistant(message.clone()),
                "expected assistant_message, got {}; events {:?}",
                got.label(),
                self.trace()
            );
            self.transcript
                .push(AgentMessage::Assistant(message.clone()));
            return Ok(Ok(message));
        }
    }

    /// Whether a failed response is retried (SPEC §12): not past `max_retries`, not once aborted or over
    /// budget, `shouldRetry` saying yes; then the `retry` event, and the wait on one timer of the delay
    /// (an abort during it ends the run).
    fn retried(
        &mut self,
        plan: &RetryPlan,
        error: String,
        message: Option<AssistantMessage>,
        attempt: u32,
    ) -> Result<Retried, String> {
        if attempt > plan.max_retries
            || self.aborted_before(self.next_position())
            || self.budget_spent()
        {
            return Ok(Retried::No);
        }
        if plan.should.is_some() {
            let (_, entry) = self.next("shouldRetry")?;
            let Entry::ShouldRetry(n) = entry else {
                return Err(format!(
                    "expected shouldRetry, the loop did {entry:?}; events {:?}",
                    self.trace()
                ));
            };
            let log = self.retry_asks[n].clone();
            ensure!(
                (&log.error, &log.message, log.attempt) == (&error, &message, attempt),
                "shouldRetry was shown {:?} (attempt {}), expected {error:?} (attempt {attempt})",
                log.error,
                log.attempt
            );
            if log.answer != Ok(true) {
                return Ok(Retried::No);
            }
        }
        let delay = (plan.base_delay_ms * 2f64.powi(attempt as i32 - 1)).min(plan.max_delay_ms);
        let (position, got) = self.event("retry")?;
        ensure!(
            got == Ev::Retry(attempt, delay, error.clone()),
            "expected retry:{attempt}:{delay} ({error}), got {}; events {:?}",
            got.label(),
            self.trace()
        );
        self.retries += 1;
        let next = self.next_position();
        let waits: Vec<usize> = (self.timeline[position..next].iter())
            .filter_map(|e| match e {
                Entry::TimerSet(t) => Some(*t),
                _ => None,
            })
            .collect();
        ensure!(
            waits.len() <= 1,
            "more than one timer for one wait: {waits:?}"
        );
        if let Some(&t) = waits.first() {
            ensure!(
                f64::from(self.timers[t].ms) == delay.ceil(),
                "the wait's timer is {} ms, the delay {delay}",
                self.timers[t].ms
            );
        }
        if self.aborted_before(next) {
            return Ok(Retried::Ended((RunReason::Aborted, Cause::Any)));
        }
        let fired = waits
            .first()
            .and_then(|&t| self.position_of(Entry::TimerFired(t)));
        ensure!(
            fired.is_some_and(|f| f < next),
            "the request was made again before its wait was over"
        );
        Ok(Retried::Again)
    }

    /// A request's `sources` say truly where its messages come from in the transcript (a host reuses its
    /// own form of each): the whole transcript, picked messages, the last entry's summary and picked ones;
    /// or (`Other`) messages `prepareRequest` replaced.
    fn sources_hold(
        &self,
        k: usize,
        messages: &[AgentMessage],
        sources: &SourcesLog,
    ) -> Result<(), String> {
        let picked = |at: &[usize], sent: &[AgentMessage]| {
            at.len() == sent.len()
                && (at.iter().zip(sent)).all(|(&i, m)| self.transcript.get(i) == Some(m))
        };
        let last_entry = (self.transcript.iter()).rev().find_map(|m| match m {
            AgentMessage::Compaction(entry) => Some(entry),
            _ => None,
        });
        let holds = match sources {
            SourcesLog::Transcript => messages == self.transcript,
            SourcesLog::Picked(at) => picked(at, messages),
            SourcesLog::Summarized(at) => {
                last_entry.is_some_and(|entry| messages.first() == Some(&summary_message(entry)))
                    && picked(at, &messages[1..])
            }
            SourcesLog::Other => self.patched_messages,
        };
        ensure!(
            holds,
            "request {k}: its sources {sources:?} do not say where its messages come from"
        );
        Ok(())
    }

    /// Whether the budget is spent by the usage so far.
    fn budget_spent(&self) -> bool {
        self.plan.control.budget.is_some_and(|b| {
            b.max_tokens.is_some_and(|m| self.usage.total_tokens >= m)
                || b.max_cost.is_some_and(|m| self.usage.cost >= m)
        })
    }

    /// What a request built from the transcript carries (SPEC §13): after a compaction entry its summary
    /// and the messages from its cut on; never a custom-role message or an entry.
    fn view(&self) -> Vec<AgentMessage> {
        let sent =
            |m: &&AgentMessage| !matches!(m, AgentMessage::Custom(_) | AgentMessage::Compaction(_));
        let last = (self.transcript.iter()).rev().find_map(|m| match m {
            AgentMessage::Compaction(entry) => Some(entry),
            _ => None,
        });
        match last {
            None => self.transcript.iter().filter(sent).cloned().collect(),
            Some(entry) => std::iter::once(summary_message(entry))
                .chain(
                    self.transcript[entry.first_kept_index..]
                        .iter()
                        .filter(sent)
                        .cloned(),
                )
                .collect(),
        }
    }

    /// Whether a cut at `k` keeps every call with its result: no result from `k` on answers a call of a
    /// message before `k`.
    fn keeps_pairs(&self, k: usize) -> bool {
        (self.transcript.iter().enumerate().skip(k)).all(|(r, m)| {
            let AgentMessage::ToolResult(_) = m else {
                return true;
            };
            let owner = (self.transcript[..r].iter())
                .rposition(|m| matches!(m, AgentMessage::Assistant(_)));
            owner.map_or(true, |o| o >= k)
        })
    }

    /// SPEC §13 before a request: over `maxContextTokens`, the cut (by brute force), `summarize` shown what
    /// comes before it, and the entry appended and announced; or how a failed compaction ends the run.
    fn compact(&mut self) -> Result<Option<Ending>, String> {
        let Some(plan) = self.plan.control.compaction.clone() else {
            return Ok(None);
        };
        let sent =
            |m: &&AgentMessage| !matches!(m, AgentMessage::Custom(_) | AgentMessage::Compaction(_));
        // Each message's estimate, 0 for those never sent.
        let estimates: Vec<f64> = (self.transcript.iter())
            .map(|m| match sent(&m) {
                true => plan.estimate.of(m),
                false => 0.0,
            })
            .collect();
        let previous = (self.transcript.iter()).rev().find_map(|m| match m {
            AgentMessage::Compaction(entry) => Some(entry.clone()),
            _ => None,
        });
        let after = previous.as_ref().map_or(0, |e| e.first_kept_index);
        let summary = (previous.as_ref()).map_or(0.0, |e| plan.estimate.of(&summary_message(e)));
        let total = summary + estimates[after..].iter().sum::<f64>();
        if total <= plan.max_context_tokens {
            return Ok(None);
        }
        let keep = (plan.keep_recent_tokens).unwrap_or(plan.max_context_tokens / 2.0);
        let candidates: Vec<usize> = (after + 1..self.transcript.len())
            .filter(|&k| {
                matches!(
                    self.transcript[k],
                    AgentMessage::User(_) | AgentMessage::Assistant(_)
                ) && self.keeps_pairs(k)
            })
            .collect();
        let Some(&largest) = candidates.last() else {
            return Ok(None);
        };
        let from = |k: usize| -> f64 { estimates[k..].iter().sum() };
        let cut = (candidates.iter().copied())
            .find(|&k| from(k) <= keep)
            .unwrap_or(largest);
        let (_, entry) = self.next("summarize")?;
        let Entry::Summarize(n) = entry else {
            return Err(format!(
                "expected summarize ({total} tokens over {}), the loop did {entry:?}; events {:?}",
                plan.max_context_tokens,
                self.trace()
            ));
        };
        let log = self.summaries[n].clone();
        let expected: Vec<AgentMessage> = (previous.iter().map(summary_message))
            .chain(self.transcript[after..cut].iter().filter(sent).cloned())
            .collect();
        ensure!(
            log.messages == expected,
            "summarize was given {:#?}\nexpected (a cut at {cut}) {:#?}",
            log.messages,
            expected
        );
        if self.aborted_before(self.next_position()) {
            return Ok(Some((RunReason::Aborted, Cause::Any)));
        }
        let summary = match log.answer {
            Err(message) => {
                let error = format!("compaction failed: {message}");
                return Ok(Some((RunReason::Error, Cause::Exactly(error))));
            }
            Ok(summary) => summary,
        };
        let (_, got) = self.event("compaction")?;
        let Ev::Compaction(entry) = got else {
            return Err(format!(
                "expected compaction, got {}; events {:?}",
                got.label(),
                self.trace()
            ));
        };
        ensure!(
            (
                &entry.summary,
                entry.first_kept_index,
                entry.tokens_before,
                entry.extra.is_empty()
            ) == (&summary, cut, Some(total), true),
            "compaction entry {entry:?}, expected {summary:?} cut at {cut} of {total} tokens"
        );
        self.transcript.push(AgentMessage::Compaction(entry));
        let view = self.view();
        if let Some(problem) = pairing_problem(&view) {
            return Err(format!(
                "the request after a cut at {cut} breaks the pairing: {problem}"
            ));
        }
        ensure!(
            view[1..]
                == self.transcript[cut..]
                    .iter()
                    .filter(sent)
                    .cloned()
                    .collect::<Vec<_>>(),
            "the request after the cut at {cut} does not carry the kept messages"
        );
        // Aborted while the event was observed: no request.
        match self.aborted_before(self.next_position()) {
            true => Ok(Some((RunReason::Aborted, Cause::Any))),
            false => Ok(None),
        }
    }

    /// One model request, matched: its number, what it carried, its events; what the model delivered
    /// and what it threw. `counted`: a new step (not a retry of the last).
    #[allow(clippy::type_complexity)]
    fn request(
        &mut self,
        expected: &RecordedRequest,
        counted: bool,
    ) -> Result<(Option<AssistantMessage>, Option<String>), String> {
        let k = self.requests_made;
        let (position, entry) = self.next("a model request")?;
        ensure!(
            entry == Entry::Request(k),
            "expected request {k}, the loop did {entry:?}; events {:?}",
            self.trace()
        );
        ensure!(
            !self.aborted_before(position),
            "request {k} was made after the run was aborted"
        );
        self.requests_made += 1;
        if counted {
            self.steps += 1;
        }
        let request = self.requests[k].clone();
        let RequestLog {
            system_prompt,
            messages,
            tools,
            signal_aborted,
            emitted,
            delivered,
            thrown,
            sources,
        } = request;
        ensure!(
            !signal_aborted,
            "request {k} was made with the signal already aborted"
        );
        ensure!(
            system_prompt == expected.system_prompt,
            "request {k}: system prompt {system_prompt:?}, expected {:?}",
            expected.system_prompt
        );
        ensure!(
            tools == expected.tools,
            "request {k}: tools are not this run's definitions (or the patch's)"
        );
        ensure!(
            messages == expected.messages,
            "request {k} saw {:#?}\nexpected {:#?}",
            messages,
            expected.messages
        );
        ensure!(
            !(messages.iter())
                .any(|m| matches!(m, AgentMessage::Custom(_) | AgentMessage::Compaction(_))),
            "request {k} carries a custom-role message or a compaction entry"
        );
        if let Some(problem) = pairing_problem(&messages) {
            return Err(format!("request {k} breaks the pairing: {problem}"));
        }
        self.sources_hold(k, &messages, &sources)?;
        if let Some(problem) = pairing_problem(&self.transcript) {
            return Err(format!("invariant 2 broken before request {k}: {problem}"));
        }
        let problems = validate_transcript(&self.transcript).problems;
        ensure!(
            problems.is_empty(),
            "validate_transcript before request {k}: {problems:?}"
        );

        for (i, event) in emitted.iter().enumerate() {
            let (_, got) = self.event("a model event")?;
            ensure!(
                got == Ev::Model(event.clone()),
                "request {k}: model event {i} forwarded as {}, events {:?}",
                got.label(),
                self.trace()
            );
        }
        Ok((delivered, thrown))
    }

    /// A row that runs nothing: each distinct id answered by a skipped result, announced by `tool_skipped`.
    fn skip(&mut self, calls: &[ToolCall], reason: SkipReason) -> Result<(), String> {
        let mut answered = HashSet::new();
        for call in calls.iter().filter(|c| answered.insert(c.id.clone())) {
            let result = self.skipped(call, reason.as_str(), reason.explanation())?;
            self.transcript.push(AgentMessage::ToolResult(result));
        }
        Ok(())
    }

    /// The next action must be `call`'s `tool_skipped` with `reason` and `text`: its result.
    fn skipped(
        &mut self,
        call: &ToolCall,
        reason: &str,
        text: &str,
    ) -> Result<ToolResultMessage, String> {
        let (_, got) = self.event("tool_skipped")?;
        let Ev::Skipped(result) = got else {
            return Err(format!(
                "expected tool_skipped:{} ({reason}), got {}; events {:?}",
                call.id,
                got.label(),
                self.trace()
            ));
        };
        let expected = skipped_result(call, reason, text, result.timestamp);
        ensure!(
            result == expected,
            "skipped {result:?}, expected {expected:?}"
        );
        Ok(result)
    }

    /// SPEC §8's gate, before phase 1: each call's need, asked in call order (a function only for calls its
    /// executor would run); a call that needs approval and has no decision pauses the run, and nothing else
    /// happens; otherwise the batch uses up its calls' decisions. `None` when paused, else each call's
    /// denial text (a decision applies to any call, whether it needs approval or not).
    #[allow(clippy::type_complexity)]
    fn gate(&mut self, calls: &[ToolCall]) -> Result<Option<Vec<Option<String>>>, String> {
        let Some(approval) = self.plan.control.approval.clone() else {
            return Ok(Some(vec![None; calls.len()]));
        };
        let registry = self.plan.executor == ExecutorKind::Registry;
        let mut needs = Vec::new();
        for call in calls {
            let runs = !registry || registry_accepts(call);
            let need = match (approval.need_of(&call.name), runs) {
                (NeedPlan::Never, _) | (_, false) => false,
                (NeedPlan::Always, true) => true,
                (NeedPlan::ByPath { throws, .. }, true) => {
                    let (_, entry) = self.next("needsApproval")?;
                    let Entry::Need(n) = entry else {
                        return Err(format!(
                            "expected needsApproval for {}, the loop did {entry:?}; events {:?}",
                            call.id,
                            self.trace()
                        ));
                    };
                    let log = self.world.needs.borrow()[n].clone();
                    ensure!(
                        (log.tool, &log.arguments)
                            == (call.name.as_str(), call.arguments_or_empty()),
                        "needsApproval asked about {} {}, expected {} {}",
                        log.tool,
                        log.arguments,
                        call.name,
                        call.arguments_or_empty()
                    );
                    let planned = match throws {
                        true => Err(format!("needsApproval of {} failed", call.name)),
                        false => Ok(has_path(call.arguments_or_empty())),
                    };
                    ensure!(
                        log.answer == planned,
                        "needsApproval answered {:?}",
                        log.answer
                    );
                    // A function that throws fails safe: the call needs approval.
                    log.answer.unwrap_or(true)
                }
            };
            needs.push(need);
        }
        let decided =
            |walk: &Self, id: &String| walk.approvals.get(id).is_some() && !walk.used.contains(id);
        if (calls.iter().zip(&needs)).any(|(call, &need)| need && !decided(self, &call.id)) {
            let pending = (calls.iter().zip(needs)).map(|(call, needs_approval)| PendingCall {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                arguments: call.arguments_or_empty().clone(),
                needs_approval,
            });
            self.pending = Some(pending.collect());
            return Ok(None);
        }
        // A decision applies to any call of the batch, whether it needs approval or not, and is used up.
        let mut denials = Vec::new();
        for call in calls {
            let decision = decided(self, &call.id)
                .then(|| self.approvals.get(&call.id).cloned())
                .flatten();
            if decision.is_some() {
                self.used.insert(call.id.clone());
            }
            denials.push(match decision {
                Some(Approval::Deny { reason }) => {
                    Some(reason.unwrap_or_else(|| "Tool call was denied.".into()))
                }
                _ => None,
            });
        }
        Ok(Some(denials))
    }

    /// A batch (SPEC §7): phase 1 in call order, phase 2 parallel or sequential, each executed call
    /// finished before its `tool_end`; the results appended in call order. Whether a call asked to
    /// terminate.
    fn batch(&mut self, calls: &[ToolCall], denials: Vec<Option<String>>) -> Result<bool, String> {
        let control = &self.plan.control;
        let registry = self.plan.executor == ExecutorKind::Registry;
        let settings: Vec<(ExecutionMode, Option<u32>)> = (calls.iter())
            .map(|c| match registry {
                true => control.tool_settings(&c.name),
                false => (ExecutionMode::Parallel, None),
            })
            .collect();
        let timeouts: Vec<Option<u32>> = (settings.iter())
            .map(|(_, own)| own.or(control.tool_timeout_ms))
            .collect();
        let sequential = control.mode == ExecutionMode::Sequential
            || settings
                .iter()
                .any(|(m, _)| *m == ExecutionMode::Sequential);
        let hooks = control.before.is_some() || control.after.is_some();
        // The registry refuses unknown tools and bad arguments outright: no hook sees those calls.
        let hooked: Vec<bool> = (calls.iter())
            .map(|c| hooks && (!registry || registry_accepts(c)))
            .collect();
        let mut batch = Batch {
            calls,
            timeouts,
            hooked,
            answered: vec![None; calls.len()],
            progress: vec![0; calls.len()],
            terminated: false,
        };
        self.prepare_calls(&mut batch, denials)?;
        let runnable: Vec<usize> = (0..calls.len())
            .filter(|&i| batch.answered[i].is_none())
            .collect();
        match sequential {
            false => self.parallel(&mut batch, &runnable)?,
            true => self.sequential(&mut batch, &runnable)?,
        }
        for result in batch.answered {
            let result = result.ok_or("a call of the batch was never answered")?;
            self.transcript.push(AgentMessage::ToolResult(result));
        }
        Ok(batch.terminated)
    }

    /// Phase 1, in call order: a denied call's `tool_skipped` (SPEC §8) at its turn, no hook seeing it;
    /// `beforeToolCall` for each other call the hooks see, a blocked call's `tool_skipped` right after its
    /// hook.
    fn prepare_calls(
        &mut self,
        batch: &mut Batch<'_>,
        denials: Vec<Option<String>>,
    ) -> Result<(), String> {
        for (i, call) in batch.calls.iter().enumerate() {
            if let Some(text) = &denials[i] {
                batch.answered[i] = Some(self.skipped(call, "denied", text)?);
                continue;
            }
            if self.plan.control.before.is_none() || !batch.hooked[i] {
                continue;
            }
            let (_, entry) = self.next("beforeToolCall")?;
            let Entry::Before(n) = entry else {
                return Err(format!(
                    "expected beforeToolCall for {}, the loop did {entry:?}; events {:?}",
                    call.id,
                    self.trace()
                ));
            };
            let log = self.befores[n].clone();
            ensure!(
                log.call == *call,
                "beforeToolCall saw {}, expected {}",
                log.call.id,
                call.id
            );
            ensure!(
                (log.step, log.messages) == (self.steps, self.transcript.len()),
                "beforeToolCall for {}: step {} with {} messages, expected {} with {}",
                call.id,
                log.step,
                log.messages,
                self.steps,
                self.transcript.len()
            );
            // No timer runs yet: the call's signal is the run's, or a fresh child of it.
            ensure!(
                log.signal_aborted == log.run_aborted,
                "beforeToolCall for {}: its signal says aborted {}, the run's {}",
                call.id,
                log.signal_aborted,
                log.run_aborted
            );
            let text = match log.answer {
                Ok(None) => continue,
                Ok(Some(Block { reason })) => {
                    reason.unwrap_or_else(|| "Tool call was blocked.".into())
                }
                Err(message) => format!("beforeToolCall failed: {message}"),
            };
            batch.answered[i] = Some(self.skipped(call, "blocked", &text)?);
        }
        Ok(())
    }

    /// Phase 2, parallel: a `tool_start` per call that runs, in call order; one execution each, all begun
    /// after the last `tool_start`; then progress, `afterToolCall` and `tool_end` in completion order.
    fn parallel(&mut self, batch: &mut Batch<'_>, runnable: &[usize]) -> Result<(), String> {
        let mut last_start = 0;
        for &i in runnable {
            let (position, got) = self.event("tool_start")?;
            ensure!(
                got == Ev::ToolStart(batch.calls[i].clone()),
                "expected tool_start:{}, got {}; events {:?}",
                batch.calls[i].id,
                got.label(),
                self.trace()
            );
            last_start = position;
        }
        let first = self.executed;
        ensure!(
            self.executions.len() >= first + runnable.len(),
            "{} executions for {} calls to run",
            self.executions.len() - first,
            runnable.len()
        );
        for (j, &i) in runnable.iter().enumerate() {
            self.execution_of(first + j, &batch.calls[i], last_start)?;
        }
        // SPEC §4: the executions run concurrently. Each has begun before the loop awaits any app callback
        // of the batch (an observer of its events, an `afterToolCall`), which may take long, or wait for a
        // sibling call.
        let callback = (last_start + 1..self.timeline.len())
            .find(|&p| matches!(self.timeline[p], Entry::Event(_) | Entry::After(_)));
        for (j, &i) in runnable.iter().enumerate() {
            let began = self.position_of(Entry::Began(first + j));
            ensure!(
                began.is_some_and(|b| callback.map_or(true, |c| b < c)),
                "call {} had not begun when the loop awaited {:?}; events {:?}",
                batch.calls[i].id,
                callback.map(|c| self.timeline[c]),
                self.trace()
            );
        }
        self.executed += runnable.len();
        let mut ended = vec![false; batch.calls.len()];
        let execution = |i: usize| first + runnable.iter().position(|&r| r == i).unwrap();
        while runnable.iter().any(|&i| !ended[i]) {
            let (_, entry) = self.next("tool_progress, afterToolCall or tool_end")?;
            let (i, after) = match entry {
                Entry::Event(n) => match self.events[n].clone() {
                    Ev::Progress(id, content) => {
                        let i = batch.running(&id, runnable, &ended)?;
                        batch.progress[i] += usize::from(!is_late(&id, &content));
                        continue;
                    }
                    Ev::ToolEnd(result) => {
                        let i = batch.running(&result.tool_call_id, runnable, &ended)?;
                        self.finish_call(batch, i, execution(i), None, result)?;
                        ended[i] = true;
                        continue;
                    }
                    other => {
                        return Err(format!(
                            "{} inside a tool batch; events {:?}",
                            other.label(),
                            self.trace()
                        ))
                    }
                },
                Entry::After(n) => {
                    let id = self.afters[n].call.id.clone();
                    (batch.running(&id, runnable, &ended)?, n)
                }
                other => {
                    return Err(format!(
                        "the loop did {other:?} inside a tool batch; events {:?}",
                        self.trace()
                    ))
                }
            };
            let result = self.tool_end(&batch.calls[i])?;
            self.finish_call(batch, i, execution(i), Some(after), result)?;
            ended[i] = true;
        }
        for (j, &i) in runnable.iter().enumerate() {
            self.check_progress(batch, i, first + j)?;
        }
        Ok(())
    }

    /// Phase 2, sequential: in call order, a call not yet started once the run is aborted is skipped
    /// (reason `aborted`); any other has its `tool_start`, its one execution, its progress and its
    /// `tool_end` before the next call begins, and a call that timed out has settled before the loop does
    /// anything more (the next call, or what follows the batch), unless the run was aborted first.
    fn sequential(&mut self, batch: &mut Batch<'_>, runnable: &[usize]) -> Result<(), String> {
        for &i in runnable {
            let call = &batch.calls[i];
            if self.aborted_before(self.next_position()) {
                let text = SkipReason::Aborted.explanation();
                batch.answered[i] = Some(self.skipped(call, "aborted", text)?);
                continue;
            }
            let (start, got) = self.event("tool_start")?;
            ensure!(
                got == Ev::ToolStart(call.clone()),
                "expected tool_start:{}, got {}; events {:?}",
                call.id,
                got.label(),
                self.trace()
            );
            let e = self.executed;
            ensure!(e < self.executions.len(), "call {} never ran", call.id);
            self.execution_of(e, call, start)?;
            self.executed += 1;
            loop {
                let (_, entry) = self.next("tool_progress, afterToolCall or tool_end")?;
                match entry {
                    Entry::Event(n) => match self.events[n].clone() {
                        Ev::Progress(id, content) if id == call.id => {
                            batch.progress[i] += usize::from(!is_late(&id, &content));
                        }
                        Ev::ToolEnd(result) if result.tool_call_id == call.id => {
                            self.finish_call(batch, i, e, None, result)?;
                            break;
                        }
                        other => {
                            return Err(format!(
                                "{} while {} runs alone; events {:?}",
                                other.label(),
                                call.id,
                                self.trace()
                            ))
                        }
                    },
                    Entry::After(n) if self.afters[n].call.id == call.id => {
                        let result = self.tool_end(call)?;
                        self.finish_call(batch, i, e, Some(n), result)?;
                        break;
                    }
                    other => {
                        return Err(format!(
                            "the loop did {other:?} while {} runs alone; events {:?}",
                            call.id,
                            self.trace()
                        ))
                    }
                }
            }
            self.check_progress(batch, i, e)?;
            let next = self.next_position();
            let settled = self.position_of(Entry::ExecEnd(e));
            ensure!(
                settled.is_some_and(|at| at < next) || self.aborted_before(next),
                "call {} timed out and still ran when the loop went on; events {:?}",
                call.id,
                self.trace()
            );
        }
        Ok(())
    }

    /// `executions[e]` ran `call`, and began after the action at `after`.
    fn execution_of(&self, e: usize, call: &ToolCall, after: usize) -> Result<(), String> {
        ensure!(
            self.executions[e].call == *call,
            "execution {e} ran {:?}, expected {:?}",
            self.executions[e].call.id,
            call.id
        );
        let start = self.position_of(Entry::ExecStart(e)).unwrap();
        ensure!(
            start > after,
            "call {} began executing before its tool_start",
            call.id
        );
        Ok(())
    }

    /// The next action must be `call`'s `tool_end` (right after its `afterToolCall`).
    fn tool_end(&mut self, call: &ToolCall) -> Result<ToolResultMessage, String> {
        let (_, got) = self.event("tool_end after afterToolCall")?;
        match got {
            Ev::ToolEnd(result) if result.tool_call_id == call.id => Ok(result),
            other => Err(format!(
                "afterToolCall for {} was not followed by its tool_end but by {}; events {:?}",
                call.id,
                other.label(),
                self.trace()
            )),
        }
    }

    /// Phase 3 for call `i` (execution `e`): the result its `tool_end` carries is the executor's reply
    /// (or its rejection, or the timeout), then `afterToolCall`'s answer if the hooks see the call.
    fn finish_call(
        &self,
        batch: &mut Batch<'_>,
        i: usize,
        e: usize,
        after: Option<usize>,
        got: ToolResultMessage,
    ) -> Result<(), String> {
        let call = &batch.calls[i];
        let execution = &self.executions[e];
        // The timer set right before the execution began to run is the call's: it starts with the call.
        let start = self.position_of(Entry::Began(e)).unwrap();
        let timer = match start.checked_sub(1).map(|p| self.timeline[p]) {
            Some(Entry::TimerSet(t)) => Some(t),
            _ => None,
        };
        let ms = timer.map(|t| self.timers[t].ms);
        ensure!(
            ms == batch.timeouts[i],
            "call {}: timer of {ms:?} ms, its timeout is {:?}",
            call.id,
            batch.timeouts[i]
        );
        let fired = timer.is_some_and(|t| self.position_of(Entry::TimerFired(t)).is_some());
        let after_log = after.map(|n| self.afters[n].clone());
        let now = after_log
            .as_ref()
            .map_or(got.timestamp, |l| l.result.timestamp);
        let (base, mut terminate) = match (&execution.reply, fired) {
            (Some(reply), false) => (
                expected_result(call, reply, now),
                reply.as_ref().is_ok_and(|r| r.terminate),
            ),
            (None, true) => {
                let ms = ms.unwrap();
                let result = ToolResultMessage {
                    details: Some(json!({"timedOut": true, "timeoutMs": ms})),
                    ..error_result(call, format!("Tool call timed out after {ms} ms."), now)
                };
                (result, false)
            }
            // Settled after its timer fired (a sequential batch waits for it): ignored.
            (Some(_), true)
                if self.position_of(Entry::ExecEnd(e))
                    > timer.and_then(|t| self.position_of(Entry::TimerFired(t))) =>
            {
                let ms = ms.unwrap();
                let result = ToolResultMessage {
                    details: Some(json!({"timedOut": true, "timeoutMs": ms})),
                    ..error_result(call, format!("Tool call timed out after {ms} ms."), now)
                };
                (result, false)
            }
            (Some(_), true) => {
                return Err(format!(
                    "call {} replied before its timer fired but was answered as timed out",
                    call.id
                ))
            }
            (None, false) => {
                return Err(format!(
                    "call {} ended but its execution never finished",
                    call.id
                ))
            }
        };
        if fired {
            ensure!(
                execution.signal.aborted(),
                "call {} timed out but its signal did not abort",
                call.id
            );
        }
        if timer.is_none() && self.abort_at.is_none() {
            ensure!(
                !execution.signal.aborted(),
                "call {}'s signal aborted with the run's never aborting",
                call.id
            );
        }
        if let (Some(reply), false) = (&execution.reply, fired) {
            self.registry_rules(call, execution, reply, &base)?;
        }
        let expected = match after_log {
            None => {
                ensure!(
                    !(self.plan.control.after.is_some() && batch.hooked[i]),
                    "call {} ended without afterToolCall",
                    call.id
                );
                base
            }
            Some(log) => {
                ensure!(
                    self.plan.control.after.is_some() && batch.hooked[i],
                    "afterToolCall saw {}, which no hook may see",
                    call.id
                );
                ensure!(
                    (log.step, log.messages) == (self.steps, self.transcript.len()),
                    "afterToolCall for {}: step {} with {} messages",
                    call.id,
                    log.step,
                    log.messages
                );
                ensure!(
                    log.result == base,
                    "afterToolCall for {} saw {:?}, expected {:?}",
                    call.id,
                    log.result,
                    base
                );
                ensure!(
                    log.signal_aborted == (log.run_aborted || fired),
                    "afterToolCall for {}: its signal says aborted {} (run {}, timed out {fired})",
                    call.id,
                    log.signal_aborted,
                    log.run_aborted
                );
                match log.answer {
                    Ok(None) => base,
                    Ok(Some(patch)) => {
                        let mut result = base;
                        if let Some(content) = patch.content {
                            result.content = content;
                        }
                        if let Some(details) = patch.details {
                            result.details = Some(details);
                        }
                        if let Some(is_error) = patch.is_error {
                            result.is_error = is_error;
                        }
                        terminate = patch.terminate.unwrap_or(terminate);
                        result
                    }
                    Err(message) => {
                        error_result(call, format!("afterToolCall failed: {message}"), now)
                    }
                }
            }
        };
        ensure!(
            got == expected,
            "call {}: tool_end carries {:?}, expected {:?}",
            call.id,
            got,
            expected
        );
        batch.terminated |= terminate;
        batch.answered[i] = Some(got);
        Ok(())
    }

    /// What the registry must have done with a call it answered.
    fn registry_rules(
        &self,
        call: &ToolCall,
        execution: &Execution,
        reply: &Result<ToolReply, String>,
        result: &ToolResultMessage,
    ) -> Result<(), String> {
        if let Err(message) = reply {
            ensure!(
                result.is_error && result.content == vec![MediaBlock::text(message.clone())],
                "a rejection must become an error result with its message"
            );
        }
        if self.plan.executor != ExecutorKind::Registry {
            return Ok(());
        }
        let accepted = registry_accepts(call);
        ensure!(
            execution.handler_ran == accepted,
            "call {} ({}, {}): handler ran = {}",
            call.id,
            call.name,
            call.arguments_or_empty(),
            execution.handler_ran
        );
        if !accepted {
            ensure!(
                result.is_error,
                "call {} should be an error result: {result:?}",
                call.id
            );
            let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let known = super::plan::definitions()
                .iter()
                .any(|d| d.name == call.name);
            let expected_start = if known {
                format!("Invalid arguments for tool \"{}\": arguments", call.name)
            } else {
                format!("Tool \"{}\" not found", call.name)
            };
            ensure!(
                text.starts_with(&expected_start),
                "call {}: error text {text:?}",
                call.id
            );
        }
        Ok(())
    }

    /// Call `i`'s `tool_progress` events are the reports its tool made while it ran (a timed-out call's
    /// later reports are dropped; so are reports through a sink kept past the call's end).
    fn check_progress(&self, batch: &Batch<'_>, i: usize, e: usize) -> Result<(), String> {
        let fired = (self.timer_of(e))
            .and_then(|fired| self.position_of(fired))
            .unwrap_or(usize::MAX);
        let sent = (self.timeline.iter().enumerate())
            .filter(|(p, entry)| **entry == Entry::ProgressSent(e) && *p < fired)
            .count();
        ensure!(
            batch.progress[i] == sent,
            "call {}: {} progress reports while it ran, {} tool_progress events",
            batch.calls[i].id,
            sent,
            batch.progress[i]
        );
        Ok(())
    }

    /// `TimerFired` of the timer set for execution `e`, if it had one (set as it began to run).
    fn timer_of(&self, e: usize) -> Option<Entry> {
        let start = self.position_of(Entry::Began(e))?;
        match self.timeline[start.checked_sub(1)?] {
            Entry::TimerSet(t) => Some(Entry::TimerFired(t)),
            _ => None,
        }
    }

    /// Asks `queue` if the run has it: what it gave is appended, each announced by `queued_message`; a
    /// throw or a message no queue may hold ends the run.
    fn ask(&mut self, queue: Queue) -> Result<Asked, String> {
        let (configured, option) = match queue {
            Queue::Steering => (self.plan.control.steering.is_some(), "getSteeringMessages"),
            Queue::FollowUp => (self.plan.control.follow_up.is_some(), "getFollowUpMessages"),
        };
        if !configured {
            return Ok(Asked::Nothing);
        }
        let (_, entry) = self.next(option)?;
        let Entry::Ask(n) = entry else {
            return Err(format!(
                "expected {option}, the loop did {entry:?}; events {:?}",
                self.trace()
            ));
        };
        let log = self.asks[n].clone();
        ensure!(
            log.queue == queue,
            "asked {:?}, expected {queue:?}",
            log.queue
        );
        let messages = match log.answer {
            Err(message) => {
                let error = format!("{option} failed: {message}");
                return Ok(Asked::Ended((RunReason::Error, Cause::Exactly(error))));
            }
            Ok(messages) => messages,
        };
        let custom_roles = self.plan.control.custom_roles;
        let refused = messages.iter().position(|m| match m {
            AgentMessage::User(_) => false,
            AgentMessage::Custom(c) => !(custom_roles && c.role == NOTE),
            _ => true,
        });
        if let Some(j) = refused {
            let error = format!(
                "{option} returned a message with role \"{}\" (message {} of {}): only user messages and \
                 messages of a role in customRoles may be queued",
                messages[j].role(),
                j + 1,
                messages.len()
            );
            return Ok(Asked::Ended((RunReason::Error, Cause::Exactly(error))));
        }
        for message in &messages {
            let (_, got) = self.event("queued_message")?;
            ensure!(
                got == Ev::Queued(message.clone(), queue),
                "expected queued_message {:?}, got {}; events {:?}",
                message,
                got.label(),
                self.trace()
            );
            self.transcript.push(message.clone());
        }
        Ok(match messages.is_empty() {
            true => Asked::Nothing,
            false => Asked::Appended,
        })
    }
}

/// What the retry policy did with a failed response.
enum Retried {
    No,
    Again,
    Ended(Ending),
}

/// The user message that stands for the messages before an entry's cut, as SPEC §13 writes it.
fn summary_message(entry: &CompactionEntry) -> AgentMessage {
    AgentMessage::User(UserMessage {
        content: UserContent::Blocks(vec![MediaBlock::text(format!(
            "The conversation so far, summarised:\n\n{}",
            entry.summary
        ))]),
        timestamp: entry.timestamp,
        extra: Default::default(),
    })
}

/// The usage `message` reports, read here: each field a finite number, else 0.
fn reported(message: &AssistantMessage) -> Usage {
    let usage = message.extra.get("usage");
    let number = |value: Option<&serde_json::Value>| match value {
        Some(serde_json::Value::Number(n)) => n.as_f64().filter(|x| x.is_finite()).unwrap_or(0.0),
        _ => 0.0,
    };
    let field = |key: &str| number(usage.and_then(|u| u.get(key)));
    Usage {
        input: field("input"),
        output: field("output"),
        cache_read: field("cacheRead"),
        cache_write: field("cacheWrite"),
        total_tokens: field("totalTokens"),
        cost: number(
            usage
                .and_then(|u| u.get("cost"))
                .and_then(|c| c.get("total")),
        ),
    }
}

/// What asking a queue did.
enum Asked {
    /// It is not the run's, or gave nothing.
    Nothing,
    Appended,
    Ended(Ending),
}

/// A batch as the oracle follows it.
struct Batch<'c> {
    calls: &'c [ToolCall],
    timeouts: Vec<Option<u32>>,
    hooked: Vec<bool>,
    answered: Vec<Option<ToolResultMessage>>,
    /// `tool_progress` events per call (late ones not counted).
    progress: Vec<usize>,
    terminated: bool,
}

impl Batch<'_> {
    /// The call with `id` among those running and not yet ended.
    fn running(&self, id: &str, runnable: &[usize], ended: &[bool]) -> Result<usize, String> {
        let i = (runnable.iter().copied())
            .find(|&i| self.calls[i].id == id)
            .ok_or(format!("{id} is not a running call of the batch"))?;
        ensure!(!ended[i], "{id} was heard from after its tool_end");
        Ok(i)
    }
}

/// Progress a tool reports through a sink it kept past its end (the driver sends it).
fn is_late(id: &str, content: &[MediaBlock]) -> bool {
    content == [MediaBlock::text(format!("{id} late"))]
}

/// Checks one finished run against its plan. `Err` names the first property that failed.
pub fn check(plan: &RunPlan, finished: &Finished) -> Result<(), String> {
    let world = &*finished.world;
    let result = &finished.result;
    let timeline = world.timeline.borrow();
    let abort_at = timeline.iter().position(|e| *e == Entry::Abort);
    drop(timeline);
    let mut walk = Walk {
        plan,
        world,
        events: world.events.borrow(),
        timeline: world.timeline.borrow(),
        requests: world.requests.borrow(),
        executions: world.executions.borrow(),
        befores: world.befores.borrow(),
        afters: world.afters.borrow(),
        prepares: world.prepares.borrow(),
        asks: world.asks.borrow(),
        summaries: world.summaries.borrow(),
        retry_asks: world.retry_asks.borrow(),
        requests_made: 0,
        patched_messages: false,
        usage: Usage::default(),
        retries: 0,
        timers: world.timers.borrow(),
        at: 0,
        abort_at,
        transcript: plan.input.clone(),
        steps: 0,
        executed: 0,
        approvals: plan.approvals(),
        used: HashSet::new(),
        pending: None,
    };

    ensure!(
        result.steps <= plan.max_steps(),
        "steps {} exceed maxSteps {}",
        result.steps,
        plan.max_steps()
    );
    ensure!(
        result.messages.starts_with(&plan.input),
        "the result does not start with the caller's input"
    );

    let (reason, cause) = walk.run()?;
    walk.end(result, reason, cause)?;
    check_announced(plan, world, result)
}

/// Every message the run appended was announced by one event, with the index it took in the transcript.
fn check_announced(plan: &RunPlan, world: &World, result: &RunResult) -> Result<(), String> {
    let mut announced = world.appended.borrow().clone();
    announced.sort_by_key(|(index, _)| *index);
    let indices: Vec<usize> = announced.iter().map(|(index, _)| *index).collect();
    let expected: Vec<usize> = (plan.input.len()..result.messages.len()).collect();
    ensure!(
        indices == expected,
        "the events announced indices {indices:?}, but the run appended {expected:?}"
    );
    for (index, message) in &announced {
        ensure!(
            result.messages[*index] == *message,
            "the event for index {index} announced {message:#?}, but the transcript holds {:#?}",
            result.messages[*index]
        );
    }
    Ok(())
}

impl Walk<'_> {
    /// `turn_end`, last; nothing the loop did after it; the result as the walk rebuilt it.
    fn end(&mut self, result: &RunResult, reason: RunReason, cause: Cause) -> Result<(), String> {
        let (_, got) = self.event("turn_end")?;
        ensure!(
            got == Ev::TurnEnd(reason, self.steps),
            "expected turn_end:{reason:?}:{}, got {}; events {:?}",
            self.steps,
            got.label(),
            self.trace()
        );
        ensure!(
            self.peek().is_none(),
            "the loop acted after turn_end: {:?}",
            self.peek()
        );
        ensure!(
            self.executed == self.executions.len(),
            "{} executions, but only {} calls were run by batches",
            self.executions.len(),
            self.executed
        );
        for (t, timer) in self.timers.iter().enumerate() {
            let fired = self.position_of(Entry::TimerFired(t)).is_some();
            let cleared = self.position_of(Entry::TimerCleared(t)).is_some();
            ensure!(
                fired != cleared,
                "timer {t} ({} ms): fired {fired}, cleared {cleared} by the end of the run",
                timer.ms
            );
        }

        // The transcript: invariants 1 and 2, and the validator.
        ensure!(
            result.messages == self.transcript,
            "final messages {:#?}\nexpected {:#?}",
            result.messages,
            self.transcript
        );
        let ids: Vec<&serde_json::Value> = result.messages[self.plan.input.len()..]
            .iter()
            .filter_map(|m| match m {
                AgentMessage::Assistant(a) => a.extra.get("responseId"),
                _ => None,
            })
            .collect();
        ensure!(
            ids.iter().collect::<HashSet<_>>().len() == ids.len(),
            "an assistant message was appended twice: {ids:?}"
        );
        // A paused run is the only one that ends with unanswered calls: those of its last message.
        let whole = match reason {
            RunReason::Paused => {
                ensure!(
                    matches!(result.messages.last(), Some(AgentMessage::Assistant(_))),
                    "a paused run appended something after the message it pauses on"
                );
                &result.messages[..result.messages.len() - 1]
            }
            _ => &result.messages[..],
        };
        if let Some(problem) = pairing_problem(whole) {
            return Err(format!("invariant 2 broken at the end: {problem}"));
        }
        ensure!(
            result.pending == self.pending,
            "pending {:?}, expected {:?}",
            result.pending,
            self.pending
        );
        validator_view(result)?;

        ensure!(
            result.reason == reason,
            "reason {:?}, expected {:?}; events {:?}",
            result.reason,
            reason,
            self.trace()
        );
        ensure!(
            result.error.is_some() == (reason == RunReason::Error),
            "error {:?} with reason {:?}",
            result.error,
            reason
        );
        match (cause, &result.error) {
            (Cause::Contains(cause), Some(error)) => ensure!(
                error.contains(&cause),
                "error {error:?} lost its cause {cause:?}"
            ),
            (Cause::Exactly(cause), error) => ensure!(
                error.as_ref() == Some(&cause),
                "error {error:?}, expected {cause:?}"
            ),
            _ => {}
        }
        ensure!(
            self.requests_made == self.requests.len(),
            "the model saw {} requests, the walk matched {}",
            self.requests.len(),
            self.requests_made
        );
        ensure!(
            (result.usage, result.retries) == (self.usage, self.retries),
            "usage {:?} and {} retries, expected {:?} and {}",
            result.usage,
            result.retries,
            self.usage,
            self.retries
        );
        let first = self.world.observer_errors.borrow().first().cloned();
        ensure!(
            result.observer_error == first,
            "observerError {:?}, first observer error was {:?}",
            result.observer_error,
            first
        );
        Ok(())
    }
}

/// `validate_transcript` of a run's messages: ok, or (reason `paused`) exactly the pending calls missing a
/// result; in the paused view, ok with exactly the pending calls pending.
pub fn validator_view(result: &RunResult) -> Result<(), String> {
    let pending: Vec<&str> = (result.pending.iter().flatten())
        .map(|c| c.tool_call_id.as_str())
        .collect();
    ensure!(
        (result.reason == RunReason::Paused) == result.pending.is_some(),
        "reason {:?} with pending {:?}",
        result.reason,
        result.pending
    );
    let strict = validate_transcript(&result.messages);
    let missing: Vec<&str> = (strict.problems.iter())
        .map(|p| match p.kind {
            ProblemKind::MissingResult => p.tool_call_id.as_str(),
            _ => "(another problem)",
        })
        .collect();
    ensure!(
        missing == pending && strict.ok == pending.is_empty(),
        "validate_transcript of a {:?} run: {:?}, pending {pending:?}",
        result.reason,
        strict.problems
    );
    let view = ValidateOptions {
        allow_pending: true,
    };
    let paused = validate_transcript_with(&result.messages, view);
    let listed: Vec<&str> = (paused.pending.iter())
        .map(|p| p.tool_call_id.as_str())
        .collect();
    ensure!(
        paused.ok && listed == pending,
        "the paused view of a {:?} run: {:?}, pending {listed:?}, expected {pending:?}",
        result.reason,
        paused.problems
    );
    Ok(())
}

/// What the generated runs covered: printed after each campaign, and held to minimums so that a
/// generator change cannot silently stop reaching a row of the table or a timing.
#[derive(Debug, Default)]
pub struct Tally {
    pub runs: usize,
    pub reasons: std::collections::BTreeMap<String, usize>,
    pub rows: std::collections::BTreeMap<String, usize>,
    pub requests: usize,
    /// How many runs made 0, 1, 2, ... requests.
    pub steps: std::collections::BTreeMap<u32, usize>,
    pub batches: usize,
    pub executed_calls: usize,
    /// Batches whose `tool_end`s came in another order than the calls.
    pub reordered_batches: usize,
    pub failed_streams: usize,
    pub aborted_runs: usize,
    /// Aborted runs whose last step executed a batch (the abort landed during or right after it).
    pub aborted_after_batch: usize,
    pub aborted_before_first_request: usize,
    pub max_steps_runs: usize,
    pub observer_errors: usize,
    pub progress_events: usize,
    pub gates_opened: usize,
    /// Streams and tools that saw the run's signal abort (so the loop passed the real signal on).
    pub honoured_aborts: usize,
    /// Progress reported by tools after they finished (the loop must drop it).
    pub late_progress_calls: usize,
    /// SPEC §7: hook calls, and what they did.
    pub before_calls: usize,
    pub blocked_calls: usize,
    pub after_calls: usize,
    pub after_patches: usize,
    pub hook_throws: usize,
    pub prepare_calls: usize,
    pub prepare_refusals: usize,
    pub patched_requests: usize,
    pub queue_asks: usize,
    pub queued_messages: usize,
    pub queue_refusals: usize,
    pub timers_set: usize,
    pub timeouts: usize,
    /// Calls that settled after their timer fired (a sequential batch waited for them).
    pub late_settles: usize,
    /// Runs whose batches ran one call at a time.
    pub sequential_runs: usize,
    /// Calls of a sequential batch skipped because the run was aborted before they began.
    pub aborted_skips: usize,
    /// Follow-up messages that went in after a `stop`.
    pub follow_ups: usize,
    /// Runs whose result holds a custom-role message.
    pub custom_runs: usize,
    /// SPEC §8: runs with tools that need approval, `needsApproval` functions asked (and those that threw),
    /// calls denied, and (resumed campaigns) the times a run was resumed.
    pub approval_runs: usize,
    pub need_asks: usize,
    pub need_throws: usize,
    pub denied_calls: usize,
    pub resumes: usize,
    /// Part three: retries made (and those whose wait an abort ended), `shouldRetry` asks, retried
    /// responses that asked for calls, compactions (and those after an entry, the loop's or the input's),
    /// `summarize` calls that failed, runs whose usage reported tokens.
    pub retries: usize,
    pub retry_waits_aborted: usize,
    pub should_retry_asks: usize,
    pub dropped_calls: usize,
    pub compactions: usize,
    pub compactions_after_an_entry: usize,
    pub summarize_calls: usize,
    pub summarize_failures: usize,
    pub runs_with_usage: usize,
}

impl Tally {
    pub fn add(&mut self, plan: &RunPlan, finished: &Finished) {
        let world = &finished.world;
        let result = &finished.result;
        self.runs += 1;
        self.add_control(plan, finished);
        *self
            .reasons
            .entry(format!("{:?}", result.reason))
            .or_default() += 1;
        let requests = world.requests.borrow();
        self.requests += requests.len();
        *self.steps.entry(result.steps).or_default() += 1;
        let mut last_executed = false;
        for request in requests.iter() {
            let name = match &request.delivered {
                None => {
                    self.failed_streams += 1;
                    "stream failed".to_string()
                }
                Some(m) => match row(m) {
                    Row::Execute => "toolUse: execute".into(),
                    Row::Skip(reason, _) => format!("skip: {}", reason.as_str()),
                    Row::Finish(reason) => {
                        format!("{}: finish {:?}", m.stop_reason.as_str(), reason)
                    }
                    Row::Done => "stop: finish Stop".into(),
                },
            };
            last_executed = name == "toolUse: execute";
            *self.rows.entry(name).or_default() += 1;
        }
        let events = world.events.borrow();
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        for event in events.iter() {
            match event {
                Ev::ToolStart(c) => starts.push(c.id.clone()),
                Ev::ToolEnd(r) => {
                    ends.push(r.tool_call_id.clone());
                    if ends.len() == starts.len() {
                        self.batches += 1;
                        self.executed_calls += ends.len();
                        self.reordered_batches += usize::from(ends != starts);
                        starts.clear();
                        ends.clear();
                    }
                }
                Ev::Progress(..) => self.progress_events += 1,
                _ => {}
            }
        }
        if result.reason == RunReason::Aborted {
            self.aborted_runs += 1;
            self.aborted_after_batch += usize::from(last_executed);
            self.aborted_before_first_request += usize::from(requests.is_empty());
        }
        self.max_steps_runs += usize::from(result.reason == RunReason::MaxSteps);
        self.observer_errors += usize::from(result.observer_error.is_some());
        self.gates_opened += world.stalls.get();
        self.honoured_aborts += world.honoured_aborts.get();
        self.late_progress_calls += world.late_progress_calls.get();
    }
}

impl Tally {
    fn add_control(&mut self, plan: &RunPlan, finished: &Finished) {
        let world = &finished.world;
        let befores = world.befores.borrow();
        let afters = world.afters.borrow();
        let prepares = world.prepares.borrow();
        let asks = world.asks.borrow();
        self.before_calls += befores.len();
        self.blocked_calls += befores
            .iter()
            .filter(|b| !matches!(b.answer, Ok(None)))
            .count();
        self.after_calls += afters.len();
        self.after_patches += afters
            .iter()
            .filter(|a| matches!(a.answer, Ok(Some(_))))
            .count();
        self.hook_throws += befores.iter().filter(|b| b.answer.is_err()).count()
            + afters.iter().filter(|a| a.answer.is_err()).count();
        self.prepare_calls += prepares.len();
        let refused = |p: &&PrepareLog| match &p.answer {
            Err(_) => true,
            Ok(patch) => patch
                .as_ref()
                .and_then(|p| p.messages.as_ref())
                .is_some_and(|m| m.last() == Some(&orphan())),
        };
        self.prepare_refusals += prepares.iter().filter(refused).count();
        self.patched_requests += prepares
            .iter()
            .filter(|p| matches!(p.answer, Ok(Some(_))))
            .count();
        self.queue_asks += asks.len();
        let events = world.events.borrow();
        self.queued_messages += events
            .iter()
            .filter(|e| matches!(e, Ev::Queued(..)))
            .count();
        let error = finished.result.error.as_deref().unwrap_or_default();
        self.queue_refusals +=
            usize::from(error.contains("may be queued") || error.contains("Messages failed"));
        self.follow_ups += events
            .iter()
            .filter(|e| matches!(e, Ev::Queued(_, Queue::FollowUp)))
            .count();
        let timeline = world.timeline.borrow();
        self.timers_set += timeline
            .iter()
            .filter(|e| matches!(e, Entry::TimerSet(_)))
            .count();
        self.timeouts += timeline
            .iter()
            .filter(|e| matches!(e, Entry::TimerFired(_)))
            .count();
        let fired_at = |t: usize| timeline.iter().position(|e| *e == Entry::TimerFired(t));
        self.late_settles += (timeline.iter().enumerate())
            .filter(|(at, e)| match e {
                // The timer set right before an execution began to run is its own.
                Entry::Began(n) => {
                    let ended = timeline.iter().position(|e| *e == Entry::ExecEnd(*n));
                    let timer = at.checked_sub(1).and_then(|p| match timeline[p] {
                        Entry::TimerSet(t) => fired_at(t),
                        _ => None,
                    });
                    matches!((timer, ended), (Some(fired), Some(ended)) if ended > fired)
                }
                _ => false,
            })
            .count();
        self.sequential_runs += usize::from(
            plan.control.mode == ExecutionMode::Sequential
                || (plan.executor == ExecutorKind::Registry
                    && plan
                        .control
                        .tools
                        .iter()
                        .any(|(m, _)| *m == ExecutionMode::Sequential)),
        );
        self.approval_runs += usize::from(plan.control.approval.is_some());
        let needs = world.needs.borrow();
        self.need_asks += needs.len();
        self.need_throws += needs.iter().filter(|n| n.answer.is_err()).count();
        self.denied_calls += (events.iter())
            .filter(|e| matches!(e, Ev::Skipped(r) if r.details == Some(json!({"skipped": true, "reason": "denied"}))))
            .count();
        self.resumes += finished.runs.len() - 1;
        self.add_part_three(plan, finished);
        let messages = &finished.result.messages;
        self.aborted_skips += messages
            .iter()
            .enumerate()
            .filter(|(i, m)| {
                let AgentMessage::ToolResult(r) = m else {
                    return false;
                };
                // A skip of reason `aborted` answering a `toolUse` message: a call not started once aborted.
                let asked = messages[..*i].iter().rev().find_map(|m| match m {
                    AgentMessage::Assistant(a) => Some(a.stop_reason),
                    _ => None,
                });
                asked == Some(StopReason::ToolUse)
                    && r.details == Some(json!({"skipped": true, "reason": "aborted"}))
            })
            .count();
        self.custom_runs += usize::from(
            messages
                .iter()
                .any(|m| matches!(m, AgentMessage::Custom(_))),
        );
    }
}

impl Tally {
    fn add_part_three(&mut self, plan: &RunPlan, finished: &Finished) {
        let world = &finished.world;
        let events = world.events.borrow();
        let retries = events.iter().filter(|e| matches!(e, Ev::Retry(..))).count();
        self.retries += retries;
        let result = &finished.result;
        self.retry_waits_aborted += usize::from(
            result.reason == RunReason::Aborted
                && (events.iter().rev().nth(1)).is_some_and(|e| matches!(e, Ev::Retry(..))),
        );
        self.should_retry_asks += world.retry_asks.borrow().len();
        // A retried response: a delivered message never appended (each carries its own responseId).
        let appended: HashSet<&serde_json::Value> = (result.messages.iter())
            .filter_map(|m| match m {
                AgentMessage::Assistant(a) => a.extra.get("responseId"),
                _ => None,
            })
            .collect();
        let requests = world.requests.borrow();
        self.dropped_calls += (requests.iter())
            .filter_map(|r| r.delivered.as_ref())
            .filter(|m| !appended.contains(m.extra.get("responseId").unwrap_or(&json!(null))))
            .map(|m| m.tool_calls().count())
            .sum::<usize>();
        let entries: Vec<usize> = (events.iter())
            .filter_map(|e| match e {
                Ev::Compaction(entry) => Some(entry.first_kept_index),
                _ => None,
            })
            .collect();
        self.compactions += entries.len();
        let input_entry = (plan.input.iter()).any(|m| matches!(m, AgentMessage::Compaction(_)));
        self.compactions_after_an_entry += entries.len().saturating_sub(usize::from(!input_entry));
        let summaries = world.summaries.borrow();
        self.summarize_calls += summaries.len();
        self.summarize_failures += summaries.iter().filter(|s| s.answer.is_err()).count();
        self.runs_with_usage += usize::from(result.usage.total_tokens > 0.0);
    }
}
