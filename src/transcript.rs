//! Checks on a transcript's call/result pairing (SPEC §5, invariant 2), the paused view of one (SPEC §8),
//! what a run may start from (`open_calls`), and its repair.
//!
//! A call is answered by one result with its id, after it and before the next assistant message. An id
//! may be used again by a later message (some providers number calls per turn); inside one message a
//! repeated id is a problem unless the loop answered it with a skipped result (it ran none of them).
//!
//! A paused run's transcript ends with calls that wait for a result: the calls of its last assistant message
//! (nothing but their results, custom-role messages and compaction entries after it: no user message). The
//! strict view reports them as `missing_result`, as chapter 00 teaches; the paused view (`allow_pending`)
//! lists them as `pending`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::compaction::{entry_problem, EntryProblem};
use crate::event::SkipReason;
use crate::invalid::Invalid;
use crate::message::{
    AgentMessage, AssistantMessage, CompactionEntry, ToolResultMessage, SPEC_ROLES,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    MissingResult,
    ResultBeforeCall,
    OrphanResult,
    DuplicateResult,
    DuplicateCallId,
}

impl ProblemKind {
    /// The name a problem's `kind` carries in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::MissingResult => "missing_result",
            ProblemKind::ResultBeforeCall => "result_before_call",
            ProblemKind::OrphanResult => "orphan_result",
            ProblemKind::DuplicateResult => "duplicate_result",
            ProblemKind::DuplicateCallId => "duplicate_call_id",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    pub kind: ProblemKind,
    pub tool_call_id: String,
    /// The message the problem is about: the assistant message for a call, the result message for a result.
    pub index: usize,
}

/// What `validate_transcript` found: `ok` when there is no problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Validation {
    /// No problem (pending calls, in the paused view, are not problems).
    pub ok: bool,
    /// In message order.
    pub problems: Vec<Problem>,
    /// With `allow_pending`: the calls of the last assistant message that wait for a result, one per
    /// distinct id in call order; they are not problems. Always empty in the strict view (and then not
    /// written in JSON).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<Unanswered>,
}

/// A call that waits for its result (`validation.pending`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unanswered {
    /// The call's id.
    pub tool_call_id: String,
    /// The assistant message that holds the call.
    pub index: usize,
}

/// How `validate_transcript_with` reads a transcript.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValidateOptions {
    /// The paused view (SPEC §8): calls of the last assistant message without a result, with no user
    /// message after it (results, custom-role messages and compaction entries may be), are `pending`, not
    /// `missing_result`. Off by default: a transcript with unanswered calls is not one a model may be sent.
    pub allow_pending: bool,
}

/// Why a run (or an `Agent`) does not start from a transcript (SPEC §8): a pairing problem beyond the calls
/// of its last assistant message that wait for results, or a compaction entry whose cut no run could make
/// (SPEC §13). Any edit that could make a call run a second time (a result moved above its call, a result
/// line repeated or left without its call) is such a problem, and so is an entry that would send a result
/// without its call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputError {
    /// The first pairing problem, as `validate_transcript_with` (the paused view) reports it; for
    /// `result_before_call`, the index of the assistant message with the call.
    Pairing {
        problem: Problem,
        call_index: Option<usize>,
    },
    /// The first compaction entry whose cut no run could make (`compaction::entry_problem`).
    Entry(EntryProblem),
    /// A custom-role message (built as `AgentMessage::Custom`, not read with the run's roles) whose role the
    /// run's `custom_roles` do not list, or that is one of SPEC's own (`check_roles`).
    Role { index: usize, role: String },
    /// An option out of SPEC's range (`LoopControl::check`): a budget, a retry delay, a compaction limit or
    /// a custom role; the text names the field.
    Options(Invalid),
}

impl InputError {
    /// The pairing problem that refused the transcript, if that is what refused it.
    pub fn pairing_problem(&self) -> Option<&Problem> {
        match self {
            InputError::Pairing { problem, .. } => Some(problem),
            InputError::Entry(_) | InputError::Role { .. } | InputError::Options(_) => None,
        }
    }

    /// The error, naming each message by `name(index)` (`context.messages[3]`, `line 4`): where the problem
    /// is, what it is in words, and for a pairing problem its `kind` as `validateTranscript` names it.
    pub fn describe(&self, name: &dyn Fn(usize) -> String) -> String {
        let (problem, call_index) = match self {
            InputError::Pairing {
                problem,
                call_index,
            } => (problem, call_index),
            InputError::Entry(entry) => return entry.describe(name),
            InputError::Options(error) => return error.to_string(),
            InputError::Role { index, role } => {
                let role = Value::String(role.clone());
                let why = match SPEC_ROLES.iter().any(|own| role == *own) {
                    true => "is one of SPEC's own roles, not a custom one",
                    false => "is not one of the run's custom roles (customRoles)",
                };
                return format!("{}: role {role} {why}", name(*index));
            }
        };
        let Problem {
            kind,
            tool_call_id: id,
            index,
        } = problem;
        let id = Value::String(id.clone());
        let what = match kind {
            ProblemKind::MissingResult => format!(
                "tool call {id} has no result, and only the calls of the last assistant message may \
                 wait for one (a paused run)"
            ),
            ProblemKind::ResultBeforeCall => format!(
                "the result of tool call {id} comes before the call ({}); a result must follow its call",
                call_index.map_or_else(|| "later".into(), name)
            ),
            ProblemKind::OrphanResult => format!(
                "the result of tool call {id} answers no call: the assistant message before it has no \
                 call with that id"
            ),
            ProblemKind::DuplicateResult => {
                format!("a second result for tool call {id}: each call has exactly one")
            }
            ProblemKind::DuplicateCallId => format!(
                "tool call id {id} is used by more than one call of this assistant message"
            ),
        };
        format!("{}: {what} ({})", name(*index), kind.as_str())
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe(&|index| format!("context.messages[{index}]")))
    }
}

impl std::error::Error for InputError {}

/// What a run may start from (SPEC §8): the calls of the last assistant message that wait for results (a
/// paused run's batch, or a transcript saved mid-batch), one per distinct id in call order; none when the
/// transcript ends otherwise. Any other pairing problem refuses the transcript, the first one named: these
/// calls, and only these, are what the run answers before its first request, so a call that has a result
/// (before, after or beside it) is never taken for one that waits, and never runs again.
pub fn open_calls(messages: &[AgentMessage]) -> Result<Vec<Unanswered>, InputError> {
    let view = ValidateOptions {
        allow_pending: true,
    };
    let validation = validate_transcript_with(messages, view);
    let Some(problem) = validation.problems.into_iter().next() else {
        return Ok(validation.pending);
    };
    let call_index = (problem.kind == ProblemKind::ResultBeforeCall)
        .then(|| {
            (problem.index..messages.len()).find(|&at| match &messages[at] {
                AgentMessage::Assistant(message) => message
                    .tool_calls()
                    .any(|call| call.id == problem.tool_call_id),
                _ => false,
            })
        })
        .flatten();
    Err(InputError::Pairing {
        problem,
        call_index,
    })
}

/// Every custom-role message of `messages` has a role `custom_roles` list, none of SPEC's own (SPEC §7): a
/// message read with the run's roles always has; one a Rust host built by hand may not.
pub fn check_roles(messages: &[AgentMessage], custom_roles: &[String]) -> Result<(), InputError> {
    let stray = messages.iter().enumerate().find_map(|(index, m)| match m {
        AgentMessage::Custom(c)
            if SPEC_ROLES.contains(&c.role.as_str()) || !custom_roles.contains(&c.role) =>
        {
            Some(InputError::Role {
                index,
                role: c.role.clone(),
            })
        }
        _ => None,
    });
    stray.map_or(Ok(()), Err)
}

/// What a run (or an `Agent`) may start from: `open_calls`, once the transcript's compaction entries are
/// checked too (`compaction::entry_problem`, which counts the results the run will append for those calls).
pub fn check_start(messages: &[AgentMessage]) -> Result<Vec<Unanswered>, InputError> {
    let open = open_calls(messages)?;
    match entry_problem(messages) {
        Some(entry) => Err(InputError::Entry(entry)),
        None => Ok(open),
    }
}

/// `messages` with every call that has no result answered (`repair_transcript`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repaired {
    /// The transcript, every call answered.
    pub messages: Vec<AgentMessage>,
    /// How many results were added (0: the transcript was whole).
    pub repaired: usize,
}

/// One call id of the current assistant message, waiting for its result.
struct Open<'a> {
    id: &'a str,
    index: usize,
    repeated: bool,
    results: usize,
}

/// The pairing problems of `messages`, in message order (the strict view: a call without a result is a
/// `missing_result` wherever it stands). Custom-role messages (SPEC §7) and compaction entries (§13) are not
/// part of the pairing: they are skipped wherever they stand.
pub fn validate_transcript(messages: &[AgentMessage]) -> Validation {
    validate_transcript_with(messages, ValidateOptions::default())
}

/// `validate_transcript`, in the view `options` asks for.
pub fn validate_transcript_with(messages: &[AgentMessage], options: ValidateOptions) -> Validation {
    // Where each id is last called and first answered, found once: a result outside its call's window is
    // then placed without scanning the transcript again (a long one with many stray results froze the page).
    let mut last_call: BTreeMap<&str, usize> = BTreeMap::new();
    let mut first_result: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, message) in messages.iter().enumerate() {
        match message {
            AgentMessage::Assistant(assistant) => {
                for call in assistant.tool_calls() {
                    last_call.insert(&call.id, index);
                }
            }
            AgentMessage::ToolResult(result) => {
                first_result.entry(&result.tool_call_id).or_insert(index);
            }
            AgentMessage::User(_) | AgentMessage::Compaction(_) | AgentMessage::Custom(_) => {}
        }
    }
    let mut problems = Vec::new();
    let mut window = Window::default();
    // Whether a user message came after the last assistant message: then its calls are not pending.
    let mut user_after = false;
    for (index, message) in messages.iter().enumerate() {
        match message {
            AgentMessage::Assistant(assistant) => {
                user_after = false;
                window.close(&mut problems);
                for call in assistant.tool_calls() {
                    match window.ids.get(call.id.as_str()) {
                        Some(&earlier) => window.open[earlier].repeated = true,
                        None => {
                            window.ids.insert(&call.id, window.open.len());
                            window.open.push(Open {
                                id: &call.id,
                                index,
                                repeated: false,
                                results: 0,
                            });
                        }
                    }
                }
            }
            AgentMessage::ToolResult(result) => {
                let id = result.tool_call_id.as_str();
                let problem = |kind| Problem {
                    kind,
                    tool_call_id: id.into(),
                    index,
                };
                match window.ids.get(id).map(|&k| &mut window.open[k]) {
                    Some(call) => {
                        call.results += 1;
                        if call.results > 1 {
                            window
                                .at_results
                                .push(problem(ProblemKind::DuplicateResult));
                        } else if call.repeated && !is_skip(result) {
                            window.at_call.push(Problem {
                                index: call.index,
                                ..problem(ProblemKind::DuplicateCallId)
                            });
                        }
                    }
                    None if last_call.get(id).is_some_and(|&call| call > index) => window
                        .at_results
                        .push(problem(ProblemKind::ResultBeforeCall)),
                    None if first_result.get(id).is_some_and(|&first| first < index) => window
                        .at_results
                        .push(problem(ProblemKind::DuplicateResult)),
                    None => window.at_results.push(problem(ProblemKind::OrphanResult)),
                }
            }
            AgentMessage::User(_) => user_after = true,
            AgentMessage::Compaction(_) | AgentMessage::Custom(_) => {}
        }
    }
    let mut pending = Vec::new();
    if options.allow_pending && !user_after {
        window.pend(&mut pending);
    }
    window.close(&mut problems);
    Validation {
        ok: problems.is_empty(),
        problems,
        pending,
    }
}

/// A copy of `messages` in which every call without a result (as `validate_transcript` finds them) is
/// answered by a skipped result, reason `interrupted`, stamped `now`: for an app that will not run them
/// (SPEC §8). Each goes right after the existing results of its call's message, in call order.
pub fn repair_transcript(messages: &[AgentMessage], now: f64) -> Repaired {
    let missing = validate_transcript(messages).problems.into_iter();
    let missing = missing.filter(|p| p.kind == ProblemKind::MissingResult);
    // Where each result goes (an index of `messages` it goes before), in transcript order: the problems
    // come in message order, and one message's in call order.
    let mut inserts: Vec<(usize, ToolResultMessage)> = Vec::new();
    for problem in missing {
        let AgentMessage::Assistant(message) = &messages[problem.index] else {
            continue;
        };
        let Some(call) = message.tool_calls().find(|c| c.id == problem.tool_call_id) else {
            continue;
        };
        inserts.push((
            after_results(messages, problem.index, message),
            ToolResultMessage::skipped(call, SkipReason::Interrupted, now),
        ));
    }
    let repaired = inserts.len();
    // A compaction entry's cut names a message by its index: it moves with the message, past the results
    // put in before it.
    let places: Vec<usize> = inserts.iter().map(|(at, _)| *at).collect();
    let moved = |index: usize| index + places.partition_point(|&at| at <= index);
    let mut inserts = inserts.into_iter().peekable();
    let mut out = Vec::with_capacity(messages.len() + repaired);
    for (index, message) in messages.iter().enumerate() {
        while let Some((_, result)) = inserts.next_if(|(at, _)| *at == index) {
            out.push(AgentMessage::ToolResult(result));
        }
        out.push(match message {
            AgentMessage::Compaction(entry) => AgentMessage::Compaction(CompactionEntry {
                first_kept_index: moved(entry.first_kept_index),
                ..entry.clone()
            }),
            other => other.clone(),
        });
    }
    out.extend(inserts.map(|(_, result)| AgentMessage::ToolResult(result)));
    Repaired {
        messages: out,
        repaired,
    }
}

/// The index right after the last result, before the next assistant message, that answers a call of
/// `message`, the assistant message at `at` (right after the message when there is none).
fn after_results(messages: &[AgentMessage], at: usize, message: &AssistantMessage) -> usize {
    let window = messages[at + 1..]
        .iter()
        .take_while(|m| !matches!(m, AgentMessage::Assistant(_)));
    let answers = |m: &AgentMessage| match m {
        AgentMessage::ToolResult(r) => message.tool_calls().any(|c| c.id == r.tool_call_id),
        _ => false,
    };
    window
        .enumerate()
        .filter(|(_, m)| answers(m))
        .last()
        .map_or(at + 1, |(offset, _)| at + 1 + offset + 1)
}

/// The current assistant message's calls and the results up to the next one. Its problems are held
/// apart so that they come out in message order without a sort: those about the message itself (its
/// index is the window's first), then those about its results, each in the order found.
#[derive(Default)]
struct Window<'a> {
    /// The message's calls in call order...
    open: Vec<Open<'a>>,
    /// ...and where each id sits among them.
    ids: BTreeMap<&'a str, usize>,
    at_call: Vec<Problem>,
    at_results: Vec<Problem>,
}

impl Window<'_> {
    /// Moves the calls still without a result to `pending` (the paused view of the last window).
    fn pend(&mut self, pending: &mut Vec<Unanswered>) {
        for call in self.open.iter().filter(|c| c.results == 0) {
            pending.push(Unanswered {
                tool_call_id: call.id.into(),
                index: call.index,
            });
        }
        self.open.retain(|c| c.results > 0);
    }

    /// Ends the window: calls still without a result are missing one.
    fn close(&mut self, problems: &mut Vec<Problem>) {
        for call in self.open.drain(..).filter(|c| c.results == 0) {
            self.at_call.push(Problem {
                kind: ProblemKind::MissingResult,
                tool_call_id: call.id.into(),
                index: call.index,
            });
        }
        self.ids.clear();
        problems.append(&mut self.at_call);
        problems.append(&mut self.at_results);
    }
}

/// A result the loop wrote for a call it did not run (`details.skipped`).
fn is_skip(result: &ToolResultMessage) -> bool {
    result
        .details
        .as_ref()
        .and_then(|d| d.get("skipped"))
        .and_then(|s| s.as_bool())
        == Some(true)
}
