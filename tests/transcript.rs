//! validate_transcript (the chapter-00 prologue trace and its check are tests/trace.rs).
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

mod common;

use common::*;
use serde_json::json;
use tiny_pi::*;

fn result_msg(id: &str) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content: vec![MediaBlock::text("ok")],
        details: None,
        is_error: false,
        timestamp: 3.0,
        extra: Default::default(),
    })
}

fn calls(ids: &[&str]) -> AgentMessage {
    AgentMessage::Assistant(assistant(
        ids.iter().map(|id| call(id, "read", json!({}))).collect(),
        StopReason::ToolUse,
    ))
}

fn kinds(messages: &[AgentMessage]) -> Vec<(ProblemKind, String, usize)> {
    validate_transcript(messages)
        .problems
        .into_iter()
        .map(|p| (p.kind, p.tool_call_id, p.index))
        .collect()
}

#[test]
fn a_paired_transcript_is_ok() {
    let v = validate_transcript(&[
        user("q"),
        calls(&["a", "b"]),
        result_msg("b"),
        result_msg("a"),
    ]);
    assert!(v.ok && v.problems.is_empty());
}

#[test]
fn each_problem_kind_is_found_with_its_index() {
    use ProblemKind::*;
    assert_eq!(
        kinds(&[user("q"), calls(&["a"])]),
        [(MissingResult, "a".into(), 1)]
    );
    assert_eq!(
        kinds(&[user("q"), result_msg("a"), calls(&["a"]), result_msg("a")]),
        [(ResultBeforeCall, "a".into(), 1)]
    );
    assert_eq!(
        kinds(&[user("q"), result_msg("z")]),
        [(OrphanResult, "z".into(), 1)]
    );
    assert_eq!(
        kinds(&[user("q"), calls(&["a"]), result_msg("a"), result_msg("a")]),
        [(DuplicateResult, "a".into(), 3)]
    );
    assert_eq!(
        kinds(&[user("q"), calls(&["a", "a"]), result_msg("a")]),
        [(DuplicateCallId, "a".into(), 1)]
    );
}

#[test]
fn a_call_left_open_across_a_request_is_missing_even_if_answered_later() {
    use ProblemKind::*;
    let found = kinds(&[
        user("q"),
        calls(&["a"]),
        calls(&["b"]),
        result_msg("b"),
        result_msg("a"),
    ]);
    assert_eq!(
        found,
        [
            (MissingResult, "a".into(), 1),
            (OrphanResult, "a".into(), 4)
        ]
    );
}

#[test]
fn an_id_reused_by_a_later_message_is_a_new_call() {
    assert!(
        validate_transcript(&[
            user("q"),
            calls(&["call_0"]),
            result_msg("call_0"),
            calls(&["call_0"]),
            result_msg("call_0")
        ])
        .ok
    );
}

/// The pairing check as first written, scanning the transcript again for each result outside its call's
/// window (and the window itself for each call): the reference the indexed check must agree with.
fn validate_transcript_by_scanning(messages: &[AgentMessage]) -> Vec<Problem> {
    struct Open<'a> {
        id: &'a str,
        index: usize,
        repeated: bool,
        results: usize,
    }
    fn close(open: &mut Vec<Open>, problems: &mut Vec<Problem>) {
        for call in open.drain(..).filter(|c| c.results == 0) {
            problems.push(Problem {
                kind: ProblemKind::MissingResult,
                tool_call_id: call.id.into(),
                index: call.index,
            });
        }
    }
    let is_skip = |r: &ToolResultMessage| {
        r.details
            .as_ref()
            .and_then(|d| d.get("skipped"))
            .and_then(|s| s.as_bool())
            == Some(true)
    };
    let mut problems = Vec::new();
    let mut open: Vec<Open> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        match message {
            AgentMessage::Assistant(assistant) => {
                close(&mut open, &mut problems);
                for call in assistant.tool_calls() {
                    match open.iter_mut().find(|c| c.id == call.id) {
                        Some(earlier) => earlier.repeated = true,
                        None => open.push(Open {
                            id: &call.id,
                            index,
                            repeated: false,
                            results: 0,
                        }),
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
                let called_later = messages[index + 1..].iter().any(
                    |m| matches!(m, AgentMessage::Assistant(a) if a.tool_calls().any(|c| c.id == id)),
                );
                let answered_earlier = messages[..index]
                    .iter()
                    .any(|m| matches!(m, AgentMessage::ToolResult(r) if r.tool_call_id == id));
                match open.iter_mut().find(|c| c.id == id) {
                    Some(call) => {
                        call.results += 1;
                        if call.results > 1 {
                            problems.push(problem(ProblemKind::DuplicateResult));
                        } else if call.repeated && !is_skip(result) {
                            problems.push(Problem {
                                index: call.index,
                                ..problem(ProblemKind::DuplicateCallId)
                            });
                        }
                    }
                    None if called_later => problems.push(problem(ProblemKind::ResultBeforeCall)),
                    None if answered_earlier => {
                        problems.push(problem(ProblemKind::DuplicateResult))
                    }
                    None => problems.push(problem(ProblemKind::OrphanResult)),
                }
            }
            AgentMessage::User(_) | AgentMessage::Compaction(_) | AgentMessage::Custom(_) => {}
        }
    }
    close(&mut open, &mut problems);
    let mut found: Vec<_> = problems.into_iter().enumerate().collect();
    found.sort_by_key(|(n, p)| (p.index, *n));
    found.into_iter().map(|(_, p)| p).collect()
}

proptest::proptest! {
    #[test]
    fn the_indexed_pairing_check_agrees_with_scanning(
        shape in proptest::collection::vec((0usize..3, proptest::collection::vec(0usize..4, 0..4), proptest::bool::ANY), 0..30)
    ) {
        // (kind, ids, skipped): a user message, an assistant message calling `ids`, or a result for ids[0].
        const IDS: [&str; 4] = ["a", "b", "c", "d"];
        let messages: Vec<AgentMessage> = shape
            .iter()
            .map(|(kind, ids, skipped)| match kind {
                0 => user("hi"),
                1 => calls(&ids.iter().map(|&i| IDS[i]).collect::<Vec<_>>()),
                _ => {
                    let mut result = result_msg(IDS[ids.first().copied().unwrap_or(0)]);
                    if let (AgentMessage::ToolResult(r), true) = (&mut result, *skipped) {
                        r.details = Some(json!({ "skipped": true }));
                    }
                    result
                }
            })
            .collect();
        proptest::prop_assert_eq!(validate_transcript(&messages).problems, validate_transcript_by_scanning(&messages));
    }
}
