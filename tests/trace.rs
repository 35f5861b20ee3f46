//! The chapter-00 prologue trace and its check (SPEC §5): seven milestones for the README round trip, no
//! milestone the transcript does not show (no `tool_start` for a result that answers no call before it, no record
//! for a compaction entry or a custom-role message), and `validate_trace` naming each problem as
//! `validate_transcript` names it, with chapter 00's words for its two kinds.
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

mod common;

use common::*;
use serde_json::json;
use tiny_pi::trace::{call_ids, trace_wording, TraceProblem};
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

fn skipped_msg(id: &str) -> AgentMessage {
    let AgentMessage::ToolResult(mut result) = result_msg(id) else {
        unreachable!()
    };
    result.details = Some(json!({ "skipped": true, "reason": "length" }));
    result.is_error = true;
    AgentMessage::ToolResult(result)
}

fn calls(ids: &[&str]) -> AgentMessage {
    AgentMessage::Assistant(assistant(
        ids.iter().map(|id| call(id, "read", json!({}))).collect(),
        StopReason::ToolUse,
    ))
}

/// `kind toolCallId` per record, as a short picture of a trace.
fn picture(records: &[TraceRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r.kind.as_str(),
                r.tool_call_id.as_deref().unwrap_or("")
            )
            .trim_end()
            .to_owned()
        })
        .collect()
}

/// `(kind, toolCallId, seq, message)` of each problem validate_trace finds.
fn trace_problems(records: &[TraceRecord]) -> Vec<(ProblemKind, String, usize, String)> {
    validate_trace(records)
        .problems
        .into_iter()
        .map(|p| (p.kind, p.tool_call_id, p.seq, p.message))
        .collect()
}

fn readme_transcript() -> Vec<AgentMessage> {
    let model = ScriptedModel::new(vec![
        assistant(
            vec![
                text("我先读取项目说明。"),
                call("call_1", "read", json!({"path": "README.md"})),
            ],
            StopReason::ToolUse,
        ),
        assistant(
            vec![text("这是一个用于学习 Agent 内核的 TypeScript 项目。")],
            StopReason::Stop,
        ),
    ]);
    let registry = readme_registry();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.context.messages = vec![user("读取 README.md，并概括项目")];
    setup.run().messages
}

#[test]
fn the_readme_round_trip_traces_to_seven_milestones() {
    let records = prologue_trace(&readme_transcript());
    let owners: Vec<&str> = records.iter().map(|r| r.owner.as_str()).collect();
    assert_eq!(
        owners,
        ["user", "model", "model", "loop", "tool", "model", "model"]
    );
    let text = format_trace(&records);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "01 user_message owner=user detail=\"读取 README.md，并概括项目\""
    );
    assert_eq!(lines[1], "02 model_start owner=model detail=\"turn=1\"");
    assert_eq!(lines[2], "03 assistant_message owner=model detail=\"stopReason=toolUse name=read\" toolCallId=call_1");
    assert_eq!(
        lines[3],
        "04 tool_start owner=loop detail=\"name=read\" toolCallId=call_1"
    );
    assert_eq!(
        lines[4],
        "05 tool_result owner=tool detail=\"# tiny-pi\" toolCallId=call_1"
    );
    assert_eq!(lines[5], "06 model_start owner=model detail=\"turn=2\"");
    assert_eq!(
        lines[6],
        "07 assistant_message owner=model detail=\"stopReason=stop\""
    );
    assert!(validate_trace(&records).problems.is_empty());
}

#[test]
fn the_trace_validator_reports_a_missing_result_and_a_result_before_its_call() {
    let mut records = prologue_trace(&readme_transcript());
    let mut dangling = records.clone();
    dangling.retain(|r| r.kind != TraceKind::ToolResult);
    let problems = validate_trace(&dangling).problems;
    assert_eq!(problems.len(), 1);
    assert_eq!(
        (
            problems[0].message.as_str(),
            problems[0].tool_call_id.as_str()
        ),
        ("missing paired result", "call_1")
    );

    let result = records.remove(4);
    records.insert(1, result);
    let problems = validate_trace(&records).problems;
    assert_eq!(
        problems
            .iter()
            .map(|p| p.message.as_str())
            .collect::<Vec<_>>(),
        ["result before call", "missing paired result"]
    );
}

#[test]
fn no_tool_start_for_a_result_that_answers_no_call_before_it() {
    // An orphan, a result before its call, a second result: each keeps its tool_result record, and nobody
    // started it. The result that answers its call keeps its tool_start; a skipped one never had one.
    let messages = [
        user("q"),
        result_msg("early"),
        calls(&["early", "a", "b"]),
        result_msg("early"),
        result_msg("a"),
        skipped_msg("b"),
        result_msg("a"),
        result_msg("x"),
    ];
    assert_eq!(
        picture(&prologue_trace(&messages)),
        [
            "user_message",
            "tool_result early",
            "model_start",
            "assistant_message early,a,b",
            "tool_start early",
            "tool_result early",
            "tool_start a",
            "tool_result a",
            "tool_result b",
            "tool_result a",
            "tool_result x",
        ]
    );
    // The records are numbered in order, with nothing skipped.
    let records = prologue_trace(&messages);
    assert!(records.iter().enumerate().all(|(i, r)| r.seq == i + 1));
}

#[test]
fn compaction_entries_and_custom_messages_make_no_record() {
    let entry = AgentMessage::from_value(json!({
        "role": "compaction", "summary": "read README.md", "firstKeptIndex": 3, "tokensBefore": 900, "timestamp": 4
    }))
    .unwrap();
    let note =
        AgentMessage::from_value_with_roles(json!({"role": "note", "timestamp": 5}), &["note"])
            .unwrap();
    let plain = [user("q"), calls(&["a"]), result_msg("a"), user("next")];
    let mut with = plain.to_vec();
    with.insert(3, entry.clone());
    with.insert(1, note);
    with.push(entry);
    assert_eq!(prologue_trace(&with), prologue_trace(&plain));
    assert!(validate_trace(&prologue_trace(&with)).ok);
}

#[test]
fn each_pairing_problem_has_the_transcripts_kind_and_one_wording() {
    use ProblemKind::*;
    let cases: [(Vec<AgentMessage>, ProblemKind, &str, usize, &str); 5] = [
        (
            vec![user("q"), calls(&["a"])],
            MissingResult,
            "a",
            3,
            "missing paired result",
        ),
        (
            vec![user("q"), result_msg("a"), calls(&["a"]), result_msg("a")],
            ResultBeforeCall,
            "a",
            2,
            "result before call",
        ),
        (
            vec![user("q"), result_msg("z")],
            OrphanResult,
            "z",
            2,
            "result without a call",
        ),
        (
            vec![user("q"), calls(&["a"]), result_msg("a"), result_msg("a")],
            DuplicateResult,
            "a",
            6,
            "more than one result for a call",
        ),
        (
            vec![user("q"), calls(&["a", "a"]), result_msg("a")],
            DuplicateCallId,
            "a",
            3,
            "repeated call id",
        ),
    ];
    for (messages, kind, id, seq, words) in cases {
        let transcript: Vec<(ProblemKind, String)> = validate_transcript(&messages)
            .problems
            .into_iter()
            .map(|p| (p.kind, p.tool_call_id))
            .collect();
        assert_eq!(transcript, [(kind, id.to_owned())]);
        let found = trace_problems(&prologue_trace(&messages));
        assert_eq!(
            found,
            [(kind, id.to_owned(), seq, words.to_owned())],
            "{kind:?}"
        );
        assert_eq!(trace_wording(kind), words);
    }
    // In JSON, the kind has validateTranscript's name.
    let json = serde_json::to_value(validate_trace(&prologue_trace(&[
        user("q"),
        result_msg("z"),
    ])))
    .unwrap();
    assert_eq!(
        json,
        json!({"ok": false, "problems": [{"kind": "orphan_result", "toolCallId": "z", "seq": 2, "message": "result without a call"}]})
    );
}

#[test]
fn a_hand_made_trace_is_read_as_the_transcript_it_stands_for() {
    // Records the way an app could write them: a skipped result is the loop's, and answers a repeated id without a
    // problem (the loop ran none of them); a tool's result for a repeated id is a repeated call id; a tool_result
    // with no id, a model_start and a tool_start take no part.
    let record = |kind: TraceKind, owner: Owner, id: Option<&str>| TraceRecord {
        seq: 0,
        kind,
        owner,
        detail: String::new(),
        tool_call_id: id.map(str::to_owned),
    };
    let numbered = |records: Vec<TraceRecord>| -> Vec<TraceRecord> {
        records
            .into_iter()
            .enumerate()
            .map(|(i, r)| TraceRecord { seq: i + 1, ..r })
            .collect()
    };
    use TraceKind::*;
    let skipped = numbered(vec![
        record(UserMessage, Owner::User, None),
        record(ModelStart, Owner::Model, None),
        record(AssistantMessage, Owner::Model, Some("b,b")),
        record(ToolResult, Owner::Loop, Some("b")),
        record(ToolResult, Owner::Tool, None),
    ]);
    assert!(
        validate_trace(&skipped).ok,
        "{:?}",
        validate_trace(&skipped)
    );
    let ran = numbered(vec![
        record(AssistantMessage, Owner::Model, Some("b,b")),
        record(ToolStart, Owner::Loop, Some("b")),
        record(ToolResult, Owner::Tool, Some("b")),
    ]);
    assert_eq!(
        trace_problems(&ran),
        [(
            ProblemKind::DuplicateCallId,
            "b".into(),
            1,
            "repeated call id".into()
        )]
    );
    // A result that comes after the next assistant message answers nothing: the call is missing one.
    let late = numbered(vec![
        record(AssistantMessage, Owner::Model, Some("a")),
        record(AssistantMessage, Owner::Model, None),
        record(ToolResult, Owner::Tool, Some("a")),
    ]);
    assert_eq!(
        trace_problems(&late),
        [
            (
                ProblemKind::MissingResult,
                "a".into(),
                1,
                "missing paired result".into()
            ),
            (
                ProblemKind::OrphanResult,
                "a".into(),
                3,
                "result without a call".into()
            ),
        ]
    );
}

/// Where each message's record is in `prologue_trace(messages)` (the assistant_message record of an assistant
/// message, the tool_result record of a result), found by walking the messages beside the records.
fn record_of_message(messages: &[AgentMessage], records: &[TraceRecord]) -> Vec<Option<usize>> {
    let mut at = 0;
    messages
        .iter()
        .map(|m| {
            let wanted = match m {
                AgentMessage::User(_) => TraceKind::UserMessage,
                AgentMessage::Assistant(_) => TraceKind::AssistantMessage,
                AgentMessage::ToolResult(_) => TraceKind::ToolResult,
                _ => return None,
            };
            while records[at].kind != wanted {
                at += 1;
            }
            at += 1;
            Some(records[at - 1].seq)
        })
        .collect()
}

proptest::proptest! {
    #[test]
    fn the_trace_of_any_transcript_has_its_problems_and_no_invented_start(
        shape in proptest::collection::vec((0usize..5, proptest::collection::vec(0usize..4, 0..4), proptest::bool::ANY), 0..30)
    ) {
        // (kind, ids, skipped): a user message, an assistant message calling `ids`, a result for ids[0] (skipped or
        // not), a compaction entry, a custom-role message.
        // Ids with the trace's separator, its escape and a newline in them, beside plain ones.
        const IDS: [&str; 4] = ["a", "b,c", "d\\", "e\nf"];
        let messages: Vec<AgentMessage> = shape
            .iter()
            .map(|(kind, ids, skipped)| match kind {
                0 => user("hi"),
                1 => calls(&ids.iter().map(|&i| IDS[i]).collect::<Vec<_>>()),
                2 => {
                    let id = IDS[ids.first().copied().unwrap_or(0)];
                    if *skipped { skipped_msg(id) } else { result_msg(id) }
                }
                3 => AgentMessage::from_value(json!({"role": "compaction", "summary": "s", "firstKeptIndex": 0, "tokensBefore": 1, "timestamp": 1})).unwrap(),
                _ => AgentMessage::from_value_with_roles(json!({"role": "note", "timestamp": 1}), &["note"]).unwrap(),
            })
            .collect();
        let records = prologue_trace(&messages);
        // The trace's problems are the transcript's, each at its message's record, in chapter 00's words.
        let seq = record_of_message(&messages, &records);
        let expected: Vec<TraceProblem> = validate_transcript(&messages)
            .problems
            .into_iter()
            .map(|p| TraceProblem { kind: p.kind, seq: seq[p.index].unwrap(), message: trace_wording(p.kind).into(), tool_call_id: p.tool_call_id })
            .collect();
        proptest::prop_assert_eq!(validate_trace(&records).problems, expected);
        // Each assistant message's record gives back its ids whole, and each record formats as one line.
        for (m, at) in messages.iter().zip(&seq) {
            if let (AgentMessage::Assistant(a), Some(at)) = (m, at) {
                let ids: Vec<String> = a.tool_calls().map(|c| c.id.clone()).collect();
                proptest::prop_assert_eq!(call_ids(&records[at - 1]), ids);
            }
        }
        proptest::prop_assert_eq!(format_trace(&records).lines().count(), records.len());
        // Every tool_start stands right before its tool result, which answers a call of the last assistant message
        // before it that no earlier result answered (an oracle written apart from validate_transcript).
        for (i, r) in records.iter().enumerate().filter(|(_, r)| r.kind == TraceKind::ToolStart) {
            let id = r.tool_call_id.as_deref().unwrap();
            proptest::prop_assert_eq!(records[i + 1].kind, TraceKind::ToolResult);
            proptest::prop_assert_eq!(records[i + 1].tool_call_id.as_deref(), Some(id));
            let call = records[..i].iter().rposition(|r| r.kind == TraceKind::AssistantMessage);
            proptest::prop_assert!(call.is_some(), "a start with no call before it");
            let call = call.unwrap();
            proptest::prop_assert!(call_ids(&records[call]).iter().any(|c| c == id));
            let answered = records[call..i].iter().any(|r| r.kind == TraceKind::ToolResult && r.tool_call_id.as_deref() == Some(id));
            proptest::prop_assert!(!answered, "a second start for {}", id);
        }
        // And every result that does answer such a call, run by a tool, has its start.
        let starts = records.iter().filter(|r| r.kind == TraceKind::ToolStart).count();
        let mut answering = 0;
        let mut open: Vec<&str> = Vec::new();
        for m in &messages {
            match m {
                AgentMessage::Assistant(a) => open = a.tool_calls().map(|c| c.id.as_str()).collect(),
                AgentMessage::ToolResult(r) if open.contains(&r.tool_call_id.as_str()) => {
                    open.retain(|&c| c != r.tool_call_id);
                    if r.details.is_none() {
                        answering += 1;
                    }
                }
                _ => {}
            }
        }
        proptest::prop_assert_eq!(starts, answering);
    }
}

#[test]
fn odd_call_ids_are_kept_whole_and_each_record_stays_one_line() {
    let messages = vec![
        user("go"),
        calls(&["a,b", "c\\", "d\ne", "plain"]),
        result_msg("a,b"),
    ];
    let records = prologue_trace(&messages);
    assert_eq!(
        records[2].tool_call_id.as_deref(),
        Some("a\\,b,c\\\\,d\ne,plain"),
        "a comma or backslash in an id is escaped in the message's record"
    );
    assert_eq!(call_ids(&records[2]), ["a,b", "c\\", "d\ne", "plain"]);
    assert_eq!(
        format_trace(&records[2..]).lines().collect::<Vec<_>>(),
        [
            "03 assistant_message owner=model detail=\"stopReason=toolUse name=read,read,read,read\" toolCallId=\"a\\\\,b,c\\\\\\\\,d\\ne,plain\"",
            "04 tool_start owner=loop detail=\"name=read\" toolCallId=a,b",
            "05 tool_result owner=tool detail=\"ok\" toolCallId=a,b",
        ]
    );
    let problems = trace_problems(&records);
    assert_eq!(
        problems.iter().map(|p| p.1.as_str()).collect::<Vec<_>>(),
        ["c\\", "d\ne", "plain"],
        "the three calls without a result, each named whole"
    );
}

#[test]
fn a_backslash_escapes_only_a_comma_or_a_backslash() {
    let record = |ids: &str| TraceRecord {
        seq: 1,
        kind: TraceKind::AssistantMessage,
        owner: Owner::Model,
        detail: String::new(),
        tool_call_id: Some(ids.into()),
    };
    for (written, ids) in [
        ("a\\b", vec!["a\\b"]),
        ("c1\\", vec!["c1\\"]),
        ("\\c1", vec!["\\c1"]),
        ("a\\,b,c\\\\", vec!["a,b", "c\\"]),
        ("a\\\\,b", vec!["a\\", "b"]),
    ] {
        assert_eq!(call_ids(&record(written)), ids, "{written}");
    }
}
