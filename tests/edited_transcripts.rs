//! Edited transcripts (SPEC §8, issue 27): a transcript a run or an `Agent` starts from may end with calls
//! that wait for results (a paused run), and nothing else may be wrong with its pairing. A result moved above
//! its call, a result answering no call, a second result for a call, an id used twice in one message, a call
//! left without a result before the last message: each is refused before anything runs (no event, no
//! request, no tool), by `run_agent_loop`, `Agent::new` and `Agent::from_jsonl`, naming the first problem.
//! Then a generated campaign: transcripts written as JSONL, their lines reordered, repeated and dropped;
//! every edited transcript with such a problem is refused and runs nothing, and every accepted one gives
//! no call a second result.
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use proptest::prelude::*;
use serde_json::{json, Value};
use tiny_pi::*;

/// `read`, which records the calls it ran.
fn registry(ran: &Rc<RefCell<Vec<String>>>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    let ran = ran.clone();
    let handler = move |_: Value, ctx: ToolCallContext| {
        ran.borrow_mut().push(ctx.call_id);
        async { Ok(ToolOutput::default()) }
    };
    let definition = ToolDefinition {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object"}),
    };
    registry
        .register(Tool::new(definition, Rc::new(handler)))
        .unwrap();
    registry
}

fn calls(ids: &[&str]) -> AgentMessage {
    let calls = ids.iter().map(|id| call(id, "read", json!({}))).collect();
    AgentMessage::Assistant(assistant(calls, StopReason::ToolUse))
}

fn answer(id: &str) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content: vec![MediaBlock::text(format!("{id} done"))],
        details: None,
        is_error: false,
        timestamp: 3.0,
        extra: Default::default(),
    })
}

/// The result the loop writes for a call of a message that repeats an id: skipped, none of them run.
fn skipped(id: &str) -> AgentMessage {
    let AgentMessage::ToolResult(mut result) = answer(id) else {
        unreachable!()
    };
    result.is_error = true;
    result.details = Some(json!({"skipped": true, "reason": "duplicate-call-id"}));
    AgentMessage::ToolResult(result)
}

/// What starting from a transcript did: the run's outcome, the calls the tool ran, the requests made and
/// the events emitted.
struct Started {
    outcome: Result<RunResult, InputError>,
    ran: Vec<String>,
    requests: usize,
    events: Vec<String>,
}

/// Runs the loop from `messages` (the model would say `done`).
fn start(messages: Vec<AgentMessage>) -> Started {
    let ran = Rc::default();
    let registry = registry(&ran);
    let model = ScriptedModel::new(vec![assistant(vec![text("done")], StopReason::Stop)]);
    let recorder = Recorder::default();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.context.messages = messages;
    let outcome = futures::executor::block_on(run_agent_loop(setup.options()));
    let ran = ran.borrow().clone();
    Started {
        outcome,
        ran,
        requests: model.request_count(),
        events: recorder.lines(),
    }
}

/// The error `run_agent_loop`, `Agent::new` and `Agent::from_jsonl` give for `messages`, after checking that
/// nothing ran; each names the messages its own way.
fn refused(messages: Vec<AgentMessage>) -> (InputError, String, String) {
    let jsonl = to_jsonl(&messages);
    let started = start(messages.clone());
    let error = started.outcome.expect_err("the transcript is refused");
    assert_eq!(
        (started.ran.len(), started.requests, started.events.len()),
        (0, 0, 0),
        "nothing ran: no tool, no request, no event"
    );
    let ran = Rc::default();
    let agent_options = |messages| {
        let mut options =
            AgentOptions::new(ScriptedModel::new(vec![]), registry(&ran), fixed_clock());
        options.messages = messages;
        options
    };
    let new = Agent::new(agent_options(messages)).expect_err("Agent::new refuses it");
    let restored =
        Agent::from_jsonl(&jsonl, agent_options(vec![])).expect_err("Agent::from_jsonl refuses it");
    assert!(ran.borrow().is_empty());
    (error, new.to_string(), restored.to_string())
}

#[test]
fn a_result_moved_above_its_call_is_refused_and_the_call_never_runs_again() {
    // The JSONL: the result line of `c1` moved above its call. The call looked pending and ran again.
    let (error, new, restored) = refused(vec![user("go"), answer("c1"), calls(&["c1"])]);
    assert_eq!(
        error,
        InputError::Pairing {
            problem: Problem {
                kind: ProblemKind::ResultBeforeCall,
                tool_call_id: "c1".into(),
                index: 1
            },
            call_index: Some(2)
        }
    );
    assert_eq!(
        error.to_string(),
        "context.messages[1]: the result of tool call \"c1\" comes before the call (context.messages[2]); \
         a result must follow its call (result_before_call)"
    );
    assert_eq!(
        new,
        "options.messages[1]: the result of tool call \"c1\" comes before the call (options.messages[2]); \
         a result must follow its call (result_before_call)"
    );
    assert_eq!(
        restored,
        "line 2: the result of tool call \"c1\" comes before the call (line 3); a result must follow its \
         call (result_before_call)"
    );
}

#[test]
fn a_result_answering_no_call_is_refused() {
    // Beside a paused batch too: `c2` waits, the orphan does not make the run go on.
    for messages in [
        vec![user("go"), calls(&["c1"]), answer("c1"), answer("zz")],
        vec![user("go"), calls(&["c1", "c2"]), answer("c1"), answer("zz")],
        vec![answer("zz"), user("go")],
    ] {
        let (error, ..) = refused(messages.clone());
        let at = messages.iter().position(|m| *m == answer("zz")).unwrap();
        assert_eq!(
            error.to_string(),
            format!(
                "context.messages[{at}]: the result of tool call \"zz\" answers no call: the assistant \
                 message before it has no call with that id (orphan_result)"
            )
        );
    }
}

#[test]
fn a_second_result_for_a_call_is_refused() {
    for messages in [
        vec![user("go"), calls(&["c1"]), answer("c1"), answer("c1")],
        // `c2` waits: the repeated line must not be taken for a paused batch.
        vec![user("go"), calls(&["c1", "c2"]), answer("c1"), answer("c1")],
        // The whole window repeated after the next message.
        vec![
            user("go"),
            calls(&["c1"]),
            answer("c1"),
            user("again"),
            answer("c1"),
        ],
    ] {
        let last = messages.len() - 1;
        let (error, new, restored) = refused(messages);
        assert_eq!(
            error.to_string(),
            format!(
                "context.messages[{last}]: a second result for tool call \"c1\": each call has exactly one \
                 (duplicate_result)"
            )
        );
        assert!(new.starts_with(&format!("options.messages[{last}]: a second result")));
        assert!(restored.starts_with(&format!("line {}: a second result", last + 1)));
    }
}

#[test]
fn an_id_used_twice_in_one_message_and_answered_is_refused() {
    let (error, ..) = refused(vec![user("go"), calls(&["c1", "c1"]), answer("c1")]);
    assert_eq!(
        error.to_string(),
        "context.messages[1]: tool call id \"c1\" is used by more than one call of this assistant \
         message (duplicate_call_id)"
    );
}

#[test]
fn a_call_without_a_result_before_the_last_message_is_refused() {
    let (error, new, restored) = refused(vec![user("go"), calls(&["c1"]), user("and then")]);
    assert_eq!(
        error.to_string(),
        "context.messages[1]: tool call \"c1\" has no result, and only the calls of the last assistant \
         message may wait for one (a paused run) (missing_result)"
    );
    assert!(new.starts_with("options.messages[1]: tool call \"c1\" has no result"));
    assert!(restored.starts_with("line 2: tool call \"c1\" has no result"));
}

#[test]
fn the_first_problem_is_the_one_named() {
    let (error, ..) = refused(vec![
        user("go"),
        calls(&["a"]),
        answer("a"),
        answer("a"),
        answer("b"),
        calls(&["b"]),
    ]);
    assert_eq!(
        error.pairing_problem().map(|p| (p.kind, p.index)),
        Some((ProblemKind::DuplicateResult, 3))
    );
}

#[test]
fn what_a_run_may_start_from_runs_each_waiting_call_once() {
    // A paused batch with one call answered: only `c2` runs.
    let started = start(vec![user("go"), calls(&["c1", "c2"]), answer("c1")]);
    assert_eq!(started.ran, ["c2"]);
    let result = started.outcome.unwrap();
    assert!(validate_transcript(&result.messages).ok);
    // An id used again by a later message is that message's own call (some providers number their calls per
    // turn): the earlier call keeps its one result, the later one gets its own.
    let started = start(vec![
        user("go"),
        calls(&["c1"]),
        answer("c1"),
        calls(&["c1"]),
    ]);
    assert_eq!(started.ran, ["c1"]);
    assert!(validate_transcript(&started.outcome.unwrap().messages).ok);
    // A message with a repeated id and no result is answered as the decision table answers it: skipped,
    // nothing runs.
    let started = start(vec![user("go"), calls(&["c1", "c1"])]);
    assert!(started.ran.is_empty());
    let result = started.outcome.unwrap();
    assert_eq!(result.reason, RunReason::Error);
    assert!(validate_transcript(&result.messages).ok);
    // So is one the loop had begun to answer so (a transcript saved before its last result): the table
    // decides on the whole message, not on the calls still waiting, so `c2` never runs.
    let saved = vec![user("go"), calls(&["c1", "c2", "c1"]), skipped("c1")];
    let started = start(saved.clone());
    assert!(started.ran.is_empty(), "ran {:?}", started.ran);
    let result = started.outcome.unwrap();
    assert_eq!(result.reason, RunReason::Error);
    let AgentMessage::ToolResult(c2) = &result.messages[3] else {
        panic!("c2 is answered")
    };
    assert_eq!(
        c2.details,
        Some(json!({"skipped": true, "reason": "duplicate-call-id"}))
    );
    assert!(validate_transcript(&result.messages).ok);
    let ran = Rc::default();
    let agent = Agent::from_jsonl(
        &to_jsonl(&saved),
        AgentOptions::new(ScriptedModel::new(vec![]), registry(&ran), fixed_clock()),
    )
    .unwrap();
    let resumed = futures::executor::block_on(agent.resume(Approvals::new())).unwrap();
    assert_eq!((resumed.reason, ran.borrow().len()), (RunReason::Error, 0));
}

// ---------------------------------------------------------------------------------------------------------
// Edited JSONL, generated

/// One turn of a generated conversation: the calls of an assistant message (`None`: a text answer), in which
/// order their results come (a permutation, by sort key), whether a note (a custom-role message) and a user
/// message follow.
#[derive(Debug, Clone)]
struct Turn {
    calls: Option<Vec<(IdKind, bool)>>,
    order: Vec<u8>,
    note: bool,
    user_after: bool,
}

/// A call's id: fresh, or from a pool shared by every message (an id used again by a later message, or twice
/// in one).
#[derive(Debug, Clone, Copy)]
enum IdKind {
    Fresh,
    Pooled(u8),
}

/// An edit of the JSONL's lines.
#[derive(Debug, Clone, Copy)]
enum Edit {
    /// A line moved elsewhere.
    Move(usize, usize),
    /// A line repeated elsewhere.
    Duplicate(usize, usize),
    /// A line dropped.
    Drop(usize),
    Swap(usize, usize),
}

#[derive(Debug, Clone)]
struct EditedPlan {
    turns: Vec<Turn>,
    /// The last assistant message's results cut to this many (a paused run, or one saved mid-batch).
    keep_last: Option<u8>,
    /// The last assistant message repeats an id, and has the loop's skipped results (saved part way with
    /// `keep_last`: none of its calls may run).
    loop_skips_last: bool,
    edits: Vec<Edit>,
    /// A compaction entry's line put in after the edits: (where, its `firstKeptIndex`), each taken modulo a
    /// little more than the message count (so some cut past the entry).
    entry: Option<(usize, usize)>,
}

fn edited_plan() -> impl Strategy<Value = EditedPlan> {
    let id = prop_oneof![
        6 => Just(IdKind::Fresh),
        1 => (0u8..2).prop_map(IdKind::Pooled),
    ];
    let turn = (
        prop::option::weighted(0.85, prop::collection::vec((id, any::<bool>()), 1..4)),
        prop::collection::vec(any::<u8>(), 4),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(calls, order, note, user_after)| Turn {
            calls,
            order,
            note,
            user_after,
        });
    let edit = prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Move(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Duplicate(a, b)),
        any::<usize>().prop_map(Edit::Drop),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
    ];
    (
        prop::collection::vec(turn, 1..5),
        prop::option::weighted(0.4, 0u8..4),
        prop::collection::vec(edit, 0..3),
        prop::option::weighted(0.3, (any::<usize>(), any::<usize>())),
        prop::bool::weighted(0.15),
    )
        .prop_map(
            |(turns, keep_last, edits, entry, loop_skips_last)| EditedPlan {
                turns,
                keep_last,
                loop_skips_last,
                edits,
                entry,
            },
        )
}

fn note(text: &str) -> AgentMessage {
    AgentMessage::from_value_with_roles(
        json!({"role": "note", "text": text, "timestamp": 1}),
        &["note"],
    )
    .unwrap()
}

/// The conversation a plan describes, every call paired (but the last message's, when cut).
fn conversation(plan: &EditedPlan) -> Vec<AgentMessage> {
    let mut messages = vec![user("start")];
    let last = plan.turns.len() - 1;
    for (k, turn) in plan.turns.iter().enumerate() {
        let Some(calls) = &turn.calls else {
            messages.push(AgentMessage::Assistant(assistant(
                vec![text(&format!("answer {k}"))],
                StopReason::Stop,
            )));
            messages.push(user(&format!("question {k}")));
            continue;
        };
        let mut ids: Vec<String> = (calls.iter().enumerate())
            .map(|(i, (id, _))| match id {
                IdKind::Fresh => format!("c{k}-{i}"),
                IdKind::Pooled(p) => format!("p{p}"),
            })
            .collect();
        let mut writes: Vec<bool> = calls.iter().map(|(_, write)| *write).collect();
        // The last message made to repeat its first id, answered as the loop answers it.
        let as_the_loop = plan.loop_skips_last && k == last;
        if as_the_loop {
            ids.push(ids[0].clone());
            writes.push(writes[0]);
        }
        let blocks = (ids.iter().zip(&writes))
            .map(|(id, write)| call(id, if *write { "write" } else { "read" }, json!({})))
            .collect();
        messages.push(AgentMessage::Assistant(assistant(
            blocks,
            StopReason::ToolUse,
        )));
        // One result per distinct id (a repeated id is answered once, as the loop skips it), in the turn's
        // order: plain ones (a message that repeats an id is then refused), or the loop's skipped ones (a run
        // may start from them saved part way, and runs none of the message's calls).
        let mut distinct: Vec<&String> = Vec::new();
        for id in &ids {
            if !distinct.contains(&id) {
                distinct.push(id);
            }
        }
        let mut order: Vec<usize> = (0..distinct.len()).collect();
        order.sort_by_key(|&i| turn.order[i % turn.order.len()]);
        if k == last {
            if let Some(keep) = plan.keep_last {
                order.truncate(usize::from(keep));
            }
        }
        for i in order {
            messages.push(match as_the_loop {
                true => skipped(distinct[i]),
                false => answer(distinct[i]),
            });
        }
        if turn.note {
            messages.push(note("between"));
        }
        if turn.user_after && k != last {
            messages.push(user(&format!("then {k}")));
        }
    }
    messages
}

/// The JSONL of `messages` with `edits` applied to its lines (indexes taken modulo the line count), and a
/// compaction entry's line put in where `entry` says.
fn edited_jsonl(
    messages: &[AgentMessage],
    edits: &[Edit],
    entry: Option<(usize, usize)>,
) -> String {
    let text = to_jsonl(messages);
    let mut lines: Vec<&str> = text.lines().collect();
    for edit in edits {
        let n = lines.len();
        if n == 0 {
            break;
        }
        match *edit {
            Edit::Move(a, b) => {
                let line = lines.remove(a % n);
                lines.insert(b % n, line);
            }
            Edit::Duplicate(a, b) => {
                let line = lines[a % n];
                lines.insert(b % (n + 1), line);
            }
            Edit::Drop(a) => {
                lines.remove(a % n);
            }
            Edit::Swap(a, b) => lines.swap(a % n, b % n),
        }
    }
    let entry = entry.map(|(at, first_kept_index)| {
        let n = lines.len();
        let line = json!({"role": "compaction", "summary": "s", "firstKeptIndex": first_kept_index % (n + 2), "tokensBefore": 1, "timestamp": 1});
        (at % (n + 1), line.to_string())
    });
    let mut lines: Vec<String> = lines.into_iter().map(str::to_string).collect();
    if let Some((at, line)) = entry {
        lines.insert(at, line);
    }
    lines.join("\n")
}

/// The oracle's own rule for compaction entries, independent of `compaction::entry_problem`, for a
/// transcript whose pairing is whole but for `waiting` (the calls of the last assistant message, whose
/// results a run appends at the end): every entry keeps messages from before it, from a user or assistant
/// message or from the entry itself, and no call before its cut is answered at or after it (a request from
/// the cut on would carry the result without its call).
fn entries_cut_where_a_run_could(messages: &[AgentMessage], waiting: &[String]) -> bool {
    // For each result (and each result to come), the index of the assistant message whose call it answers.
    let mut answered_from: Vec<(usize, usize)> = Vec::new();
    let mut last_assistant = None;
    for (index, message) in messages.iter().enumerate() {
        match message {
            AgentMessage::Assistant(_) => last_assistant = Some(index),
            AgentMessage::ToolResult(_) => answered_from.push((index, last_assistant.unwrap())),
            _ => {}
        }
    }
    if let (false, Some(at)) = (waiting.is_empty(), last_assistant) {
        answered_from.push((messages.len(), at));
    }
    messages.iter().enumerate().all(|(index, message)| {
        let AgentMessage::Compaction(entry) = message else {
            return true;
        };
        let k = entry.first_kept_index;
        let starts_well = k == index
            || (k < index
                && matches!(
                    messages[k],
                    AgentMessage::User(_) | AgentMessage::Assistant(_)
                ));
        let separates = (answered_from.iter()).any(|&(result, call)| result >= k && call < k);
        starts_well && !separates
    })
}

/// The oracle's own pairing rule, independent of `validate_transcript`: each assistant message's calls (one
/// per distinct id) have exactly one result each among the results after it and before the next assistant
/// message; every result answers a call of the assistant message before it; an id used twice in one message
/// may only be answered by a skipped result (the loop's). Only the last assistant message's calls may lack
/// results, when nothing but results and notes follow it. The calls that wait, if the transcript is one a
/// run may start from.
fn may_start_from(messages: &[AgentMessage]) -> Option<Vec<String>> {
    // The current assistant message's distinct ids, how many results each has, whether each is repeated.
    let mut window: Vec<(String, usize, bool)> = Vec::new();
    let mut seen_assistant = false;
    let mut user_after = false;
    for message in messages {
        match message {
            AgentMessage::Assistant(a) => {
                if window.iter().any(|(_, n, _)| *n != 1) {
                    return None;
                }
                window.clear();
                for call in a.tool_calls() {
                    match window.iter_mut().find(|(id, ..)| *id == call.id) {
                        Some((.., repeated)) => *repeated = true,
                        None => window.push((call.id.clone(), 0, false)),
                    }
                }
                seen_assistant = true;
                user_after = false;
            }
            AgentMessage::ToolResult(r) => {
                let (_, n, repeated) = window.iter_mut().find(|(id, ..)| *id == r.tool_call_id)?;
                *n += 1;
                let skip = r.details.as_ref().and_then(|d| d.get("skipped")) == Some(&json!(true));
                if *n > 1 || (*repeated && !skip) {
                    return None;
                }
            }
            AgentMessage::User(_) => user_after = true,
            // Entries and notes take no part in pairing.
            AgentMessage::Custom(_) | AgentMessage::Compaction(_) => {}
        }
    }
    let waiting: Vec<String> = (window.into_iter())
        .filter(|(_, n, _)| *n == 0)
        .map(|(id, ..)| id)
        .collect();
    match (seen_assistant && !waiting.is_empty(), user_after) {
        (true, true) => None,
        _ => Some(waiting),
    }
}

/// Whether the last assistant message uses a call id twice.
fn repeats_an_id(messages: &[AgentMessage]) -> bool {
    let last = messages.iter().rev().find_map(|m| match m {
        AgentMessage::Assistant(a) => {
            Some(a.tool_calls().map(|c| c.id.as_str()).collect::<Vec<_>>())
        }
        _ => None,
    });
    last.is_some_and(|ids| (1..ids.len()).any(|i| ids[..i].contains(&ids[i])))
}

/// A transcript in short, for failure messages: `user A[c0-0 c0-1] R(c0-0) note`.
fn summary(messages: &[AgentMessage]) -> String {
    let one = |m: &AgentMessage| match m {
        AgentMessage::User(_) => "user".to_string(),
        AgentMessage::Assistant(a) => {
            let ids: Vec<&str> = a.tool_calls().map(|c| c.id.as_str()).collect();
            format!("A[{}]", ids.join(" "))
        }
        AgentMessage::ToolResult(r) => format!("R({})", r.tool_call_id),
        AgentMessage::Custom(c) => c.role.clone(),
        AgentMessage::Compaction(_) => "compaction".to_string(),
    };
    messages.iter().map(one).collect::<Vec<_>>().join(" ")
}

/// `read` and `write`, which record the calls they ran.
fn two_tools(ran: &Rc<RefCell<Vec<String>>>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for name in ["read", "write"] {
        let ran = ran.clone();
        let handler = move |_: Value, ctx: ToolCallContext| {
            ran.borrow_mut().push(ctx.call_id);
            async { Ok(ToolOutput::default()) }
        };
        let definition = ToolDefinition {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        };
        registry
            .register(Tool::new(definition, Rc::new(handler)))
            .unwrap();
    }
    registry
}

/// Every call of `after` that `before` (its prefix) already had answered got no second result, each call of
/// the run's transcript has exactly one, and the calls that ran are exactly `waiting` (when the last
/// message runs its calls: a `toolUse` with distinct ids).
fn ran_each_waiting_call_once(
    before: &[AgentMessage],
    after: &[AgentMessage],
    waiting: &[String],
    ran: &[String],
) -> Result<(), TestCaseError> {
    prop_assert_eq!(&after[..before.len()], before, "the input is kept");
    let problems = validate_transcript(after).problems;
    prop_assert!(problems.is_empty(), "{:?}", problems);
    let runs = before.iter().rev().find_map(|m| match m {
        AgentMessage::Assistant(a) => Some(a.stop_reason == StopReason::ToolUse),
        _ => None,
    });
    let distinct = {
        let calls: Vec<&ToolCall> = (before.iter().rev())
            .find_map(|m| match m {
                AgentMessage::Assistant(a) => Some(a.tool_calls().collect()),
                _ => None,
            })
            .unwrap_or_default();
        let ids: std::collections::BTreeSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        ids.len() == calls.len()
    };
    let expected: &[String] = match (runs, distinct) {
        (Some(true), true) => waiting,
        _ => &[],
    };
    prop_assert_eq!(ran, expected, "the calls that ran");
    Ok(())
}

#[derive(Default, Debug)]
struct EditedTally {
    cases: usize,
    refused: std::collections::BTreeMap<&'static str, usize>,
    accepted_with_waiting_calls: usize,
    /// Of those, the waiting calls of a message that repeats an id: none may run.
    accepted_waiting_in_a_repeating_message: usize,
    accepted_edited: usize,
    accepted_with_an_entry: usize,
}

/// Transcripts written as JSONL, their lines moved, repeated, dropped and swapped: every one with a pairing
/// problem beyond the waiting calls of its last assistant message is refused (by `run_agent_loop` and
/// `Agent::from_jsonl`) and nothing runs; every one accepted gives no call a second result, and runs exactly
/// the calls that waited.
#[test]
fn an_edited_transcript_is_refused_or_runs_each_waiting_call_once() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    });
    let tally = RefCell::new(EditedTally::default());
    let roles = ["note".to_string()];
    let outcome = runner.run(&edited_plan(), |plan| {
        let jsonl = edited_jsonl(&conversation(&plan), &plan.edits, plan.entry);
        let messages =
            parse_jsonl_with_roles(&jsonl, &roles).expect("every edited line is still a message");
        let paired = may_start_from(&messages);
        let expected =
            (paired.clone()).filter(|waiting| entries_cut_where_a_run_could(&messages, waiting));
        let view = validate_transcript_with(
            &messages,
            ValidateOptions {
                allow_pending: true,
            },
        );
        prop_assert_eq!(
            view.ok,
            paired.is_some(),
            "the validator's paused view agrees: {:?} on {}",
            view.problems,
            summary(&messages)
        );

        // runAgentLoop.
        let ran = Rc::default();
        let registry = two_tools(&ran);
        let model = ScriptedModel::new(vec![assistant(vec![text("done")], StopReason::Stop)]);
        let recorder = Recorder::default();
        let mut setup = Setup::new(&model, &registry, &recorder);
        setup.context.messages = messages.clone();
        setup.control.custom_roles = roles.to_vec();
        let outcome = futures::executor::block_on(run_agent_loop(setup.options()));
        let mut tally = tally.borrow_mut();
        tally.cases += 1;
        match (&expected, outcome) {
            (None, Err(error)) => {
                prop_assert_eq!(error.pairing_problem(), view.problems.first());
                *tally
                    .refused
                    .entry(error.pairing_problem().map_or("entry", |p| p.kind.as_str()))
                    .or_default() += 1;
                prop_assert!(ran.borrow().is_empty(), "a refused transcript ran a tool");
                prop_assert_eq!(model.request_count(), 0);
                prop_assert!(recorder.lines().is_empty(), "a refused run emitted events");
            }
            (Some(waiting), Ok(result)) => {
                tally.accepted_with_waiting_calls += usize::from(!waiting.is_empty());
                tally.accepted_waiting_in_a_repeating_message +=
                    usize::from(!waiting.is_empty() && repeats_an_id(&messages));
                tally.accepted_edited += usize::from(!plan.edits.is_empty());
                tally.accepted_with_an_entry += usize::from(plan.entry.is_some());
                ran_each_waiting_call_once(&messages, &result.messages, waiting, &ran.borrow())?;
                for request in model.requests() {
                    let problems = validate_transcript(&request.messages).problems;
                    prop_assert!(
                        problems.is_empty(),
                        "a request pairs every call: {:?}",
                        problems
                    );
                }
            }
            (None, Ok(_)) => return Err(TestCaseError::fail("a broken transcript was accepted")),
            (Some(_), Err(error)) => {
                return Err(TestCaseError::fail(format!(
                    "a whole transcript was refused: {error}"
                )))
            }
        }

        // Agent.fromJSONL: the same verdict, the problem named by its line; an accepted one resumed runs
        // the waiting calls once.
        let ran = Rc::default();
        let mut options = AgentOptions::new(
            ScriptedModel::new(vec![assistant(vec![text("done")], StopReason::Stop)]),
            two_tools(&ran),
            fixed_clock(),
        );
        options.custom_roles = roles.to_vec();
        match (&expected, Agent::from_jsonl(&jsonl, options)) {
            (None, Err(AgentError::Input(error))) => {
                prop_assert!(error.starts_with("line "), "{}", error);
            }
            (Some(waiting), Ok(agent)) => {
                let result = match agent.state() {
                    AgentState::Paused => {
                        futures::executor::block_on(agent.resume(Approvals::new())).unwrap()
                    }
                    _ => futures::executor::block_on(agent.prompt_text("go on")).unwrap(),
                };
                ran_each_waiting_call_once(&messages, &result.messages, waiting, &ran.borrow())?;
            }
            (_, other) => {
                return Err(TestCaseError::fail(format!(
                    "Agent::from_jsonl disagrees with the run: {:?}",
                    other.err()
                )))
            }
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    let tally = tally.into_inner();
    println!("edited transcripts: {tally:#?}");
    if tally.cases >= 1_000 {
        for kind in [
            "missing_result",
            "result_before_call",
            "orphan_result",
            "duplicate_result",
            "duplicate_call_id",
            "entry",
        ] {
            let n = tally.refused.get(kind).copied().unwrap_or(0);
            assert!(n >= 20, "{kind} refused too rarely: {tally:#?}");
        }
        assert!(
            tally.accepted_with_waiting_calls >= 100
                && tally.accepted_edited >= 100
                && tally.accepted_with_an_entry >= 50,
            "{tally:#?}"
        );
    }
}
