//! The properties every run must have, checked against what the model, the executor and the observer
//! recorded. The oracle rebuilds the transcript and the event sequence from the model's responses and the
//! decision table of SPEC §4, independently of the loop's own code.

use std::collections::HashSet;

use serde_json::json;
use tiny_pi::*;

use super::plan::{registry_accepts, ExecutorKind, RunPlan};
use super::world::{Entry, Ev, Finished, RequestLog};

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
}

fn row(message: &AssistantMessage) -> Row {
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    let distinct = calls.iter().map(|c| &c.id).collect::<HashSet<_>>().len();
    match message.stop_reason {
        StopReason::Stop if calls.is_empty() => Row::Finish(RunReason::Stop),
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
/// assistant message, and every result answers a call of the assistant message before it.
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
            AgentMessage::User(_) | AgentMessage::Custom(_) => {}
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

/// Checks one finished run against its plan. `Err` names the first property that failed.
pub fn check(plan: &RunPlan, finished: &Finished) -> Result<(), String> {
    let world = &finished.world;
    let result = &finished.result;
    let requests = world.requests.borrow();
    let events = world.events.borrow();
    let executions = world.executions.borrow();
    let timeline = world.timeline.borrow();
    let trace = || labels(&events);
    let definitions = super::plan::definitions();

    // steps and maxSteps.
    ensure!(
        result.steps as usize == requests.len(),
        "steps {} but the model saw {} requests",
        result.steps,
        requests.len()
    );
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

    // Walk the requests, rebuilding the transcript and matching the events one by one.
    let mut transcript = plan.input.clone();
    let mut at = 0usize; // next event to match
    let mut executed = 0usize; // executions matched so far
    let mut end: Option<(RunReason, Option<String>)> = None; // set once a row ends the run
    let next = |at: &mut usize, what: &str| -> Result<Ev, String> {
        let event = events.get(*at).cloned().ok_or_else(|| {
            format!(
                "event {at} missing: expected {what}; events {:?}",
                labels(&events)
            )
        })?;
        *at += 1;
        Ok(event)
    };
    for (k, request) in requests.iter().enumerate() {
        let RequestLog {
            system_prompt,
            messages,
            tools,
            signal_aborted,
            emitted,
            delivered,
            thrown,
        } = request;
        ensure!(
            end.is_none(),
            "request {k} was made after the run should have ended with {end:?}"
        );
        ensure!(
            !signal_aborted,
            "request {k} was made with the signal already aborted"
        );
        ensure!(
            *system_prompt == plan.system_prompt,
            "request {k}: system prompt {system_prompt:?}"
        );
        ensure!(
            *tools == definitions,
            "request {k}: tools are not this run's definitions"
        );
        ensure!(
            *messages == transcript,
            "request {k} saw {:#?}\nexpected {:#?}",
            messages,
            transcript
        );
        if let Some(problem) = pairing_problem(messages) {
            return Err(format!("invariant 2 broken before request {k}: {problem}"));
        }
        let problems = validate_transcript(messages).problems;
        ensure!(
            problems.is_empty(),
            "validate_transcript before request {k}: {problems:?}"
        );

        for (i, event) in emitted.iter().enumerate() {
            let got = next(&mut at, "a model event")?;
            ensure!(
                got == Ev::Model(event.clone()),
                "request {k}: model event {i} forwarded as {}, events {:?}",
                got.label(),
                trace()
            );
        }
        let Some(message) = delivered else {
            // A stream that threw or ended without a final message: error, nothing appended.
            let cause = thrown.clone();
            end = Some((RunReason::Error, cause));
            continue;
        };
        let got = next(&mut at, "assistant_message")?;
        ensure!(
            got == Ev::Assistant(message.clone()),
            "request {k}: expected assistant_message, got {}; events {:?}",
            got.label(),
            trace()
        );
        transcript.push(AgentMessage::Assistant(message.clone()));
        let calls: Vec<&ToolCall> = message.tool_calls().collect();

        match row(message) {
            Row::Execute => {
                for call in &calls {
                    let got = next(&mut at, "tool_start")?;
                    ensure!(
                        got == Ev::ToolStart((*call).clone()),
                        "request {k}: expected tool_start:{}, got {}; events {:?}",
                        call.id,
                        got.label(),
                        trace()
                    );
                }
                let last_start = at - 1;
                // The batch: progress and ends in completion order until every call has ended.
                let mut ended: Vec<Option<ToolResultMessage>> = vec![None; calls.len()];
                let mut progress = vec![0usize; calls.len()];
                while ended.iter().any(Option::is_none) {
                    let got = next(&mut at, "tool_progress or tool_end")?;
                    match &got {
                        Ev::Progress(id, content) => {
                            let i = calls
                                .iter()
                                .position(|c| c.id == *id)
                                .ok_or(format!("progress for {id}, not in the batch"))?;
                            let late = *content == vec![MediaBlock::text(format!("{id} late"))];
                            ensure!(
                                ended[i].is_none(),
                                "tool_progress:{id} after its tool_end; events {:?}",
                                trace()
                            );
                            // Progress a finished tool reports before the loop announced its end may go out.
                            progress[i] += usize::from(!late);
                        }
                        Ev::ToolEnd(r) => {
                            let i = calls.iter().position(|c| c.id == r.tool_call_id).ok_or(
                                format!("tool_end for {}, not in the batch", r.tool_call_id),
                            )?;
                            ensure!(
                                ended[i].is_none(),
                                "two tool_end for {}; events {:?}",
                                r.tool_call_id,
                                trace()
                            );
                            ended[i] = Some(r.clone());
                        }
                        other => {
                            return Err(format!(
                                "request {k}: {} inside a tool batch; events {:?}",
                                other.label(),
                                trace()
                            ))
                        }
                    }
                }
                // Exactly these calls ran, each once, after every tool_start of the batch.
                ensure!(
                    executions.len() >= executed + calls.len(),
                    "request {k}: {} executions for {} calls",
                    executions.len() - executed,
                    calls.len()
                );
                for (i, call) in calls.iter().enumerate() {
                    let execution = &executions[executed + i];
                    ensure!(
                        execution.call == **call,
                        "request {k}: execution {} ran {:?}, expected {:?}",
                        executed + i,
                        execution.call.id,
                        call.id
                    );
                    let start = timeline
                        .iter()
                        .position(|e| *e == Entry::ExecStart(executed + i))
                        .unwrap();
                    let tool_start = timeline
                        .iter()
                        .position(|e| *e == Entry::Event(last_start))
                        .unwrap();
                    ensure!(
                        start > tool_start,
                        "call {} started executing before the batch's last tool_start",
                        call.id
                    );
                    ensure!(
                        progress[i] == execution.progress_sent,
                        "call {}: {} progress reports, {} tool_progress events",
                        call.id,
                        execution.progress_sent,
                        progress[i]
                    );
                    let reply = execution.reply.as_ref().ok_or(format!(
                        "call {} ended but its execution never finished",
                        call.id
                    ))?;
                    let result = ended[i].clone().unwrap();
                    ensure!(
                        result.tool_call_id == call.id && result.tool_name == call.name,
                        "result for {} is paired to {}/{}",
                        call.id,
                        result.tool_call_id,
                        result.tool_name
                    );
                    let expected = expected_result(call, reply, result.timestamp);
                    ensure!(
                        result == expected,
                        "call {}: result {:?}, expected {:?}",
                        call.id,
                        result,
                        expected
                    );
                    if plan.executor == ExecutorKind::Registry {
                        let accepted = registry_accepts(call);
                        ensure!(
                            execution.handler_ran == accepted,
                            "call {} ({}, {}): handler ran = {}",
                            call.id,
                            call.name,
                            call.arguments,
                            execution.handler_ran
                        );
                        if !accepted {
                            ensure!(
                                result.is_error,
                                "call {} should be an error result: {:?}",
                                call.id,
                                result
                            );
                            let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned();
                            let known = definitions.iter().any(|d| d.name == call.name);
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
                    }
                    if let Err(message) = reply {
                        ensure!(
                            result.is_error
                                && result.content == vec![MediaBlock::text(message.clone())],
                            "a rejection must become an error result with its message"
                        );
                    }
                    transcript.push(AgentMessage::ToolResult(result));
                }
                executed += calls.len();
            }
            Row::Skip(reason, run_reason) => {
                let mut answered = HashSet::new();
                for call in calls.iter().filter(|c| answered.insert(c.id.clone())) {
                    let got = next(&mut at, "tool_skipped")?;
                    let Ev::Skipped(result) = got else {
                        return Err(format!(
                            "request {k}: expected tool_skipped:{}, got {}; events {:?}",
                            call.id,
                            got.label(),
                            trace()
                        ));
                    };
                    let expected = ToolResultMessage {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        content: vec![MediaBlock::text(reason.explanation())],
                        details: Some(json!({"skipped": true, "reason": reason.as_str()})),
                        is_error: true,
                        timestamp: result.timestamp,
                        extra: Default::default(),
                    };
                    ensure!(
                        result == expected,
                        "request {k}: skipped {:?}, expected {:?}",
                        result,
                        expected
                    );
                    transcript.push(AgentMessage::ToolResult(result));
                }
                let error = (message.stop_reason == StopReason::Error)
                    .then(|| message.error_message.clone())
                    .flatten();
                end = Some((run_reason, error));
            }
            Row::Finish(run_reason) => end = Some((run_reason, None)),
        }
    }
    ensure!(
        executed == executions.len(),
        "{} executions, but only {executed} calls were in executing rows",
        executions.len()
    );

    // turn_end: once, last, matching the result.
    let got = next(&mut at, "turn_end")?;
    ensure!(
        got == Ev::TurnEnd(result.reason, result.steps),
        "expected turn_end:{:?}:{}, got {}; events {:?}",
        result.reason,
        result.steps,
        got.label(),
        trace()
    );
    ensure!(at == events.len(), "events after turn_end: {:?}", trace());

    // The transcript: invariants 1 and 2, and the validator.
    ensure!(
        result.messages == transcript,
        "final messages {:#?}\nexpected {:#?}",
        result.messages,
        transcript
    );
    let ids: Vec<&serde_json::Value> = result.messages[plan.input.len()..]
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
    if let Some(problem) = pairing_problem(&result.messages) {
        return Err(format!("invariant 2 broken at the end: {problem}"));
    }
    let problems = validate_transcript(&result.messages).problems;
    ensure!(
        problems.is_empty(),
        "validate_transcript at the end: {problems:?}"
    );

    // The reason: the last row's, or the checkpoint rules.
    let aborted = world.aborted_at_end.get().ok_or("no turn_end recorded")?;
    let (reason, error) = match end {
        Some(end) => end,
        None if aborted => (RunReason::Aborted, None),
        None => {
            ensure!(
                result.steps == plan.max_steps(),
                "the run stopped after an executed batch without abort or maxSteps (steps {})",
                result.steps
            );
            (RunReason::MaxSteps, None)
        }
    };
    ensure!(
        result.reason == reason,
        "reason {:?}, expected {:?}; events {:?}",
        result.reason,
        reason,
        trace()
    );
    ensure!(
        result.error.is_some() == (reason == RunReason::Error),
        "error {:?} with reason {:?}",
        result.error,
        reason
    );
    if let (Some(cause), Some(error)) = (error, &result.error) {
        ensure!(
            error.contains(&cause),
            "error {error:?} lost its cause {cause:?}"
        );
    }
    let first = world.observer_errors.borrow().first().cloned();
    ensure!(
        result.observer_error == first,
        "observerError {:?}, first observer error was {:?}",
        result.observer_error,
        first
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
}

impl Tally {
    pub fn add(&mut self, finished: &Finished) {
        let world = &finished.world;
        let result = &finished.result;
        self.runs += 1;
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
