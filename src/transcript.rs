//! Checks on a transcript's call/result pairing (SPEC §5, invariant 2).
//!
//! A call is answered by one result with its id, after it and before the next assistant message. An id
//! may be used again by a later message (some providers number calls per turn); inside one message a
//! repeated id is a problem unless the loop answered it with a skipped result (it ran none of them).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::message::{AgentMessage, ToolResultMessage};

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Validation {
    pub ok: bool,
    pub problems: Vec<Problem>,
}

/// One call id of the current assistant message, waiting for its result.
struct Open<'a> {
    id: &'a str,
    index: usize,
    repeated: bool,
    results: usize,
}

/// The pairing problems of `messages`, in message order. Custom-role messages (SPEC §7) are not part of the
/// pairing: they are skipped wherever they stand.
pub fn validate_transcript(messages: &[AgentMessage]) -> Validation {
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
            AgentMessage::User(_) | AgentMessage::Custom(_) => {}
        }
    }
    let mut problems = Vec::new();
    let mut window = Window::default();
    for (index, message) in messages.iter().enumerate() {
        match message {
            AgentMessage::Assistant(assistant) => {
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
            AgentMessage::User(_) | AgentMessage::Custom(_) => {}
        }
    }
    window.close(&mut problems);
    Validation {
        ok: problems.is_empty(),
        problems,
    }
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
