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
    let new = Agent::new(agent_options(messages))
        .err()
        .expect("Agent::new refuses it");
    let restored = Agent::from_jsonl(&jsonl, agent_options(vec![]))
        .err()
        .expect("Agent::from_jsonl refuses it");
    assert!(ran.borrow().is_empty());
    (error, new.to_string(), restored.to_string())
}

#[test]
fn a_result_moved_above_its_call_is_refused_and_the_call_never_runs_again() {
    // The JSONL: the result line of `c1` moved above its call. The call looked pending and ran again.
    let (error, new, restored) = refused(vec![user("go"), answer("c1"), calls(&["c1"])]);
    assert_eq!(
        (error.problem.kind, error.problem.index, error.call_index),
        (ProblemKind::ResultBeforeCall, 1, Some(2))
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
        (error.problem.kind, error.problem.index),
        (ProblemKind::DuplicateResult, 3)
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
}
