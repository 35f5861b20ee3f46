//! Approvals, pause and resume (SPEC §8), natively: a batch with a call that needs approval and no decision
//! pauses before anything of it happens; resuming is running again from the paused transcript with the
//! decisions (approve, deny, still missing), counting steps on from `start_steps`; a transcript saved
//! mid-batch is finished the same way; unanswered calls anywhere else are refused; the validator's paused
//! view; `repair_transcript`.
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

mod common;

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use common::control::{lines, Before, Log, Timeline};
use common::*;
use serde_json::{json, Value};
use tiny_pi::*;

/// Yields to the executor once before it is ready: an answer that comes later, as a JS promise's does.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// `write`'s `needsApproval`: a path outside the home folder needs approval; the answer comes later; the
/// path `boom` makes it throw. Counts its asks.
#[derive(Default)]
struct OutsideHome(Cell<usize>);

impl ApprovalCheck for OutsideHome {
    fn needs_approval<'a>(&'a self, arguments: &'a Value) -> HookFuture<'a, bool> {
        self.0.set(self.0.get() + 1);
        let path = arguments["path"].as_str().unwrap_or_default().to_owned();
        Box::pin(async move {
            YieldOnce(false).await;
            match path.as_str() {
                "boom" => Err("policy service down".into()),
                path => Ok(path.starts_with('/')),
            }
        })
    }
}

/// `read` (no approval), `delete` (always), `write` (`OutsideHome`); each records the calls it ran.
fn registry(ran: &Rc<RefCell<Vec<String>>>, check: &Rc<OutsideHome>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    let needs = [
        ("read", NeedsApproval::Never),
        ("delete", NeedsApproval::Always),
        ("write", NeedsApproval::Ask(check.clone())),
    ];
    for (name, needs_approval) in needs {
        let ran = ran.clone();
        let handler = move |args: Value, ctx: ToolCallContext| {
            ran.borrow_mut().push(ctx.call_id);
            async move {
                Ok(ToolOutput {
                    content: vec![MediaBlock::text(format!("{name} {}", args["path"]))],
                    ..ToolOutput::default()
                })
            }
        };
        let mut tool = Tool::new(
            ToolDefinition {
                name: name.into(),
                description: format!("{name} a file"),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            },
            Rc::new(handler),
        );
        tool.needs_approval = needs_approval;
        registry.register(tool).unwrap();
    }
    registry
}

fn on(id: &str, name: &str, path: &str) -> AssistantBlock {
    call(id, name, json!({ "path": path }))
}

fn tool_use(calls: Vec<AssistantBlock>) -> AssistantMessage {
    let mut message = assistant(calls, StopReason::ToolUse);
    message.extra.insert("responseId".into(), json!("r1"));
    message
}

fn done() -> AssistantMessage {
    assistant(vec![text("done")], StopReason::Stop)
}

fn pending(id: &str, name: &str, path: &str, needs_approval: bool) -> PendingCall {
    PendingCall {
        tool_call_id: id.into(),
        tool_name: name.into(),
        arguments: json!({ "path": path }),
        needs_approval,
    }
}

fn text_of(result: &ToolResultMessage) -> &str {
    match result.content.as_slice() {
        [MediaBlock::Text(t)] => &t.text,
        other => panic!("expected one text block, got {other:?}"),
    }
}

fn paused_view(messages: &[AgentMessage]) -> Validation {
    validate_transcript_with(
        messages,
        ValidateOptions {
            allow_pending: true,
        },
    )
}

/// One run of the test tools: the script, the transcript to start from, the decisions and steps so far.
struct World {
    ran: Rc<RefCell<Vec<String>>>,
    check: Rc<OutsideHome>,
    registry: ToolRegistry,
    log: Log,
}

impl World {
    fn new() -> Self {
        let ran = Rc::default();
        let check = Rc::new(OutsideHome::default());
        World {
            registry: registry(&ran, &check),
            ran,
            check,
            log: Log::default(),
        }
    }

    fn ran(&self) -> Vec<String> {
        self.ran.borrow().clone()
    }

    /// Runs `script` from `messages` with `approvals`, `start_steps` and `max_steps`, with a logging
    /// `beforeToolCall` that allows everything.
    fn run(
        &self,
        script: Vec<AssistantMessage>,
        messages: Vec<AgentMessage>,
        approvals: Approvals,
        (start_steps, max_steps): (u32, u32),
    ) -> Result<RunResult, InputError> {
        let model = ScriptedModel::new(script);
        let before = Before::new(&self.log, |_, _| Ok(None));
        let timeline = Timeline(self.log.clone());
        let mut setup = Setup::new(&model, &self.registry, &timeline);
        setup.context.messages = messages;
        setup.max_steps = max_steps;
        setup.control.before_tool_call = Some(&before);
        setup.control.approvals = approvals;
        setup.control.start_steps = start_steps;
        futures::executor::block_on(run_agent_loop(setup.options()))
    }

    /// What the loop did, from the log: hook calls and events other than model events.
    fn did(&self) -> Vec<String> {
        let did = lines(
            &self.log,
            &["before", "tool_", "assistant", "turn_end", "queued"],
        );
        self.log.borrow_mut().clear();
        did
    }
}

fn start() -> Vec<AgentMessage> {
    readme_context().messages
}

/// A `read` result answering the call `id`.
fn answer(id: &str) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content: vec![MediaBlock::text(format!("{id} done"))],
        details: None,
        is_error: false,
        timestamp: 1.0,
        extra: Default::default(),
    })
}

/// A message of the custom role `note`.
fn note() -> AgentMessage {
    AgentMessage::from_value_with_roles(json!({"role": "note", "text": "hi"}), &["note"]).unwrap()
}

/// Runs `batch` from the start without decisions: it must pause.
fn pause_on(world: &World, batch: AssistantMessage) -> RunResult {
    let paused = world
        .run(
            vec![batch],
            start(),
            Approvals::new(),
            (0, DEFAULT_MAX_STEPS),
        )
        .unwrap();
    assert_eq!(paused.reason, RunReason::Paused);
    paused
}

// ---------------------------------------------------------------------------------------------------------
// Pause

#[test]
fn a_batch_with_a_call_that_needs_approval_pauses_before_anything_of_it_happens() {
    let world = World::new();
    let script = vec![
        tool_use(vec![on("a", "read", "x"), on("b", "delete", "y")]),
        done(),
    ];
    let result = world
        .run(script, start(), Approvals::new(), (0, DEFAULT_MAX_STEPS))
        .unwrap();

    assert_eq!((result.reason, result.steps), (RunReason::Paused, 1));
    assert_eq!(
        result.pending,
        Some(vec![
            pending("a", "read", "x", false),
            pending("b", "delete", "y", true)
        ])
    );
    assert_eq!(
        world.ran(),
        Vec::<String>::new(),
        "no call of the batch ran"
    );
    assert_eq!(
        world.did(),
        ["assistant_message:toolUse", "turn_end:paused:1"],
        "no hook, no tool event"
    );
    assert_eq!(
        roles(&result.messages),
        ["user", "assistant"],
        "nothing appended"
    );
    assert_eq!(result.error, None);

    // The strict view: two calls without a result; the paused view: exactly the pending calls.
    let strict = validate_transcript(&result.messages);
    assert!(!strict.ok);
    assert_eq!(
        strict.problems.iter().map(|p| p.kind).collect::<Vec<_>>(),
        [ProblemKind::MissingResult, ProblemKind::MissingResult]
    );
    let view = paused_view(&result.messages);
    assert!(view.ok, "{view:?}");
    let ids: Vec<&str> = view
        .pending
        .iter()
        .map(|p| p.tool_call_id.as_str())
        .collect();
    assert_eq!(ids, ["a", "b"]);
    assert!(view.pending.iter().all(|p| p.index == 1));
}

#[test]
fn the_result_writes_pending_in_specs_shape() {
    let world = World::new();
    let script = vec![tool_use(vec![on("b", "delete", "y")])];
    let result = world
        .run(script, start(), Approvals::new(), (0, DEFAULT_MAX_STEPS))
        .unwrap();
    let written = serde_json::to_value(&result).unwrap();
    assert_eq!(written["reason"], "paused");
    assert_eq!(
        written["pending"],
        json!([{"toolCallId": "b", "toolName": "delete", "arguments": {"path": "y"}, "needsApproval": true}])
    );
    // Any other run writes no `pending`.
    let done = world
        .run(
            vec![done()],
            start(),
            Approvals::new(),
            (0, DEFAULT_MAX_STEPS),
        )
        .unwrap();
    assert!(serde_json::to_value(&done)
        .unwrap()
        .get("pending")
        .is_none());
}

#[test]
fn a_needs_approval_function_is_asked_with_the_arguments_and_may_answer_later_or_throw() {
    let world = World::new();
    let script = vec![tool_use(vec![
        on("home", "write", "notes.txt"),
        on("root", "write", "/etc/hosts"),
        on("boom", "write", "boom"),
    ])];
    let result = world
        .run(script, start(), Approvals::new(), (0, DEFAULT_MAX_STEPS))
        .unwrap();
    assert_eq!(result.reason, RunReason::Paused);
    assert_eq!(
        result.pending.unwrap(),
        [
            pending("home", "write", "notes.txt", false),
            pending("root", "write", "/etc/hosts", true),
            // It threw: the call waits for a decision (failing safe).
            pending("boom", "write", "boom", true),
        ]
    );
    assert_eq!(world.check.0.get(), 3, "asked once per call");
}

#[test]
fn a_call_the_registry_refuses_needs_no_approval_and_gets_its_error_result() {
    let world = World::new();
    // `delete` without a path fails its schema: it runs nothing, so nothing waits for a decision.
    let script = vec![
        tool_use(vec![call("bad", "delete", json!({"file": "y"}))]),
        done(),
    ];
    let result = world
        .run(script, start(), Approvals::new(), (0, DEFAULT_MAX_STEPS))
        .unwrap();
    assert_eq!(result.reason, RunReason::Stop);
    let rs = results(&result.messages);
    assert!(rs[0].is_error);
    assert!(text_of(rs[0]).starts_with("Invalid arguments for tool \"delete\""));
    assert_eq!(world.check.0.get(), 0);
}

#[test]
fn a_decision_given_up_front_lets_the_batch_run_without_a_pause() {
    let world = World::new();
    let script = vec![
        tool_use(vec![on("a", "read", "x"), on("b", "delete", "y")]),
        done(),
    ];
    let approvals = Approvals::new().approve("b");
    let result = world
        .run(script, start(), approvals, (0, DEFAULT_MAX_STEPS))
        .unwrap();
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
    assert_eq!(world.ran(), ["a", "b"]);
    assert!(validate_transcript(&result.messages).ok);
}

// ---------------------------------------------------------------------------------------------------------
// Resume

/// Pauses on `[read a, delete b]`, then resumes with `approvals`: the paused result and the resumed one.
fn pause_then_resume(world: &World, approvals: Approvals) -> (RunResult, RunResult) {
    let batch = tool_use(vec![on("a", "read", "x"), on("b", "delete", "y")]);
    let paused = pause_on(world, batch);
    world.did();
    let resumed = world
        .run(
            vec![done()],
            paused.messages.clone(),
            approvals,
            (paused.steps, DEFAULT_MAX_STEPS),
        )
        .unwrap();
    (paused, resumed)
}

#[test]
fn resuming_with_an_approval_runs_the_batch_as_it_would_have_run() {
    let world = World::new();
    let (_, resumed) = pause_then_resume(&world, Approvals::new().approve("b"));
    assert_eq!((resumed.reason, resumed.steps), (RunReason::Stop, 2));
    assert_eq!(resumed.pending, None);
    assert_eq!(world.ran(), ["a", "b"]);
    assert_eq!(
        world.did(),
        [
            "before:a",
            "before:b",
            "tool_start:a",
            "tool_start:b",
            "tool_end:a",
            "tool_end:b",
            "assistant_message:stop",
            "turn_end:stop:2"
        ],
        "the batch's own events, no second assistant_message for the paused response"
    );

    // The same run with the decision given up front ends with the same transcript.
    let upfront = World::new();
    let script = vec![
        tool_use(vec![on("a", "read", "x"), on("b", "delete", "y")]),
        done(),
    ];
    let whole = upfront
        .run(
            script,
            start(),
            Approvals::new().approve("b"),
            (0, DEFAULT_MAX_STEPS),
        )
        .unwrap();
    assert_eq!(resumed.messages, whole.messages);
    assert_eq!((resumed.reason, resumed.steps), (whole.reason, whole.steps));
}

#[test]
fn a_denied_call_gets_a_skipped_result_with_its_reason_and_no_hook_sees_it() {
    let world = World::new();
    let (_, resumed) = pause_then_resume(&world, Approvals::new().deny("b", Some("Not today.")));
    assert_eq!(resumed.reason, RunReason::Stop);
    assert_eq!(world.ran(), ["a"], "the denied call never runs");
    assert_eq!(
        world.did()[..4],
        ["before:a", "tool_skipped:b", "tool_start:a", "tool_end:a"],
        "phase 1 in call order: the denied call is answered at its turn, never shown to the hook"
    );
    let rs = results(&resumed.messages);
    assert_eq!(rs.len(), 2);
    assert_eq!(
        (rs[0].tool_call_id.as_str(), rs[1].tool_call_id.as_str()),
        ("a", "b")
    );
    assert_eq!(text_of(rs[1]), "Not today.");
    assert_eq!(
        rs[1].details,
        Some(json!({"skipped": true, "reason": "denied"}))
    );
    assert!(rs[1].is_error);

    let world = World::new();
    let (_, resumed) = pause_then_resume(&world, Approvals::new().deny("b", None));
    let rs = results(&resumed.messages);
    assert_eq!(text_of(rs[1]), "Tool call was denied.");
}

#[test]
fn a_call_still_without_a_decision_pauses_again_and_nothing_is_used_up() {
    let world = World::new();
    let batch = tool_use(vec![on("b", "delete", "y"), on("c", "delete", "z")]);
    let paused = pause_on(&world, batch);
    world.did();
    let again = world
        .run(
            vec![done()],
            paused.messages.clone(),
            Approvals::new().approve("b"),
            (paused.steps, DEFAULT_MAX_STEPS),
        )
        .unwrap();
    assert_eq!((again.reason, again.steps), (RunReason::Paused, 1));
    assert_eq!(again.messages, paused.messages, "nothing appended");
    assert_eq!(again.pending, paused.pending);
    assert_eq!(world.did(), ["turn_end:paused:1"], "no event but the end");
    assert_eq!(world.ran(), Vec::<String>::new());

    let finished = world
        .run(
            vec![done()],
            again.messages,
            Approvals::new().approve("b").deny("c", None),
            (again.steps, DEFAULT_MAX_STEPS),
        )
        .unwrap();
    assert_eq!((finished.reason, finished.steps), (RunReason::Stop, 2));
    assert_eq!(world.ran(), ["b"]);
}

#[test]
fn start_steps_count_toward_max_steps() {
    // Paused at the first request with a budget of one: the batch still runs, and no request follows.
    let world = World::new();
    let batch = tool_use(vec![on("b", "delete", "y")]);
    let paused = world
        .run(vec![batch.clone()], start(), Approvals::new(), (0, 1))
        .unwrap();
    assert_eq!((paused.reason, paused.steps), (RunReason::Paused, 1));
    let resumed = world
        .run(
            vec![done()],
            paused.messages.clone(),
            Approvals::new().approve("b"),
            (paused.steps, 1),
        )
        .unwrap();
    assert_eq!((resumed.reason, resumed.steps), (RunReason::MaxSteps, 1));
    assert_eq!(world.ran(), ["b"]);
    assert_eq!(
        roles(&resumed.messages),
        ["user", "assistant", "toolResult"]
    );

    // With a budget of two, one more request, counted on from the paused run's.
    let resumed = world
        .run(
            vec![done()],
            paused.messages,
            Approvals::new().approve("b"),
            (paused.steps, 2),
        )
        .unwrap();
    assert_eq!((resumed.reason, resumed.steps), (RunReason::Stop, 2));

    // A fresh run that starts its count at the limit makes no request.
    let none = world
        .run(vec![done()], start(), Approvals::new(), (3, 3))
        .unwrap();
    assert_eq!((none.reason, none.steps), (RunReason::MaxSteps, 3));
}

#[test]
fn a_decision_answers_one_call_a_later_call_with_the_same_id_waits_for_its_own() {
    let world = World::new();
    // Providers that number calls per turn use `call_0` again for a different call.
    let script = vec![
        tool_use(vec![on("call_0", "delete", "a.txt")]),
        tool_use(vec![on("call_0", "delete", "everything")]),
        done(),
    ];
    let result = world
        .run(
            script,
            start(),
            Approvals::new().approve("call_0"),
            (0, DEFAULT_MAX_STEPS),
        )
        .unwrap();
    assert_eq!((result.reason, result.steps), (RunReason::Paused, 2));
    assert_eq!(world.ran(), ["call_0"], "only the approved call ran");
    assert_eq!(
        result.pending,
        Some(vec![pending("call_0", "delete", "everything", true)])
    );
}

#[test]
fn a_transcript_saved_mid_batch_has_its_unanswered_calls_run_first() {
    // An app saved the transcript after `a`'s result and crashed: `b` and `c` have none.
    let world = World::new();
    let batch = tool_use(vec![
        on("a", "read", "1"),
        on("b", "read", "2"),
        on("c", "read", "3"),
    ]);
    let mut saved = start();
    saved.push(AgentMessage::Assistant(batch));
    saved.push(answer("a"));
    let result = world
        .run(
            vec![done()],
            saved.clone(),
            Approvals::new(),
            (1, DEFAULT_MAX_STEPS),
        )
        .unwrap();
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
    assert_eq!(
        world.ran(),
        ["b", "c"],
        "the answered call is not run again"
    );
    assert_eq!(
        world.did(),
        [
            "before:b",
            "before:c",
            "tool_start:b",
            "tool_start:c",
            "tool_end:b",
            "tool_end:c",
            "assistant_message:stop",
            "turn_end:stop:2"
        ]
    );
    assert_eq!(result.messages[..saved.len()], saved[..]);
    let ids: Vec<&str> = (results(&result.messages).iter())
        .map(|r| r.tool_call_id.as_str())
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert!(validate_transcript(&result.messages).ok);
}

#[test]
fn an_unanswered_message_of_another_row_is_answered_as_that_row_says_without_a_request() {
    for (stop, reason, skip) in [
        (StopReason::Length, RunReason::Length, "length"),
        (StopReason::Error, RunReason::Error, "error"),
        (StopReason::Aborted, RunReason::Aborted, "aborted"),
        (StopReason::Stop, RunReason::Error, "unexpected-stop"),
    ] {
        let world = World::new();
        let mut saved = start();
        saved.push(AgentMessage::Assistant(assistant(
            vec![on("a", "delete", "x"), on("b", "read", "y")],
            stop,
        )));
        let model_would_say = vec![done()];
        let result = world
            .run(
                model_would_say,
                saved,
                Approvals::new(),
                (1, DEFAULT_MAX_STEPS),
            )
            .unwrap();
        assert_eq!((result.reason, result.steps), (reason, 1), "{stop:?}");
        assert_eq!(world.ran(), Vec::<String>::new());
        assert_eq!(
            world.did(),
            [
                "tool_skipped:a",
                "tool_skipped:b",
                &format!("turn_end:{}:1", reason.as_str())
            ]
        );
        for result in results(&result.messages) {
            assert_eq!(
                result.details,
                Some(json!({"skipped": true, "reason": skip}))
            );
        }
    }
}

#[test]
fn unanswered_calls_anywhere_but_in_the_last_assistant_message_are_refused() {
    let world = World::new();
    let mut bad = start();
    bad.push(AgentMessage::Assistant(tool_use(vec![on(
        "a", "read", "x",
    )])));
    bad.push(user("and another thing"));
    let error = world
        .run(
            vec![done()],
            bad.clone(),
            Approvals::new(),
            (0, DEFAULT_MAX_STEPS),
        )
        .unwrap_err();
    assert_eq!(
        error.pairing_problem(),
        Some(&Problem {
            kind: ProblemKind::MissingResult,
            tool_call_id: "a".into(),
            index: 1
        })
    );
    assert_eq!(
        error.to_string(),
        "context.messages[1]: tool call \"a\" has no result, and only the calls of the last assistant \
         message may wait for one (a paused run) (missing_result)"
    );
    assert!(
        world.did().is_empty(),
        "nothing happened, not even turn_end"
    );

    // An earlier message's unanswered call is refused even when the last one is paused.
    bad.pop();
    bad.push(AgentMessage::Assistant(tool_use(vec![on(
        "b", "delete", "y",
    )])));
    let error = world
        .run(vec![done()], bad, Approvals::new(), (0, DEFAULT_MAX_STEPS))
        .unwrap_err();
    assert_eq!(error.pairing_problem().unwrap().tool_call_id, "a");
}

// ---------------------------------------------------------------------------------------------------------
// The validator's paused view, and repair

#[test]
fn the_paused_view_lists_only_the_last_messages_calls_and_only_when_nothing_but_results_follow() {
    let calls = |ids: &[&str]| {
        AgentMessage::Assistant(tool_use(ids.iter().map(|id| on(id, "read", "x")).collect()))
    };
    let pending_of = |messages: &[AgentMessage]| {
        let view = paused_view(messages);
        let problems: Vec<_> = view
            .problems
            .iter()
            .map(|p| (p.kind, p.tool_call_id.clone()))
            .collect();
        let pending: Vec<_> = view
            .pending
            .iter()
            .map(|p| p.tool_call_id.clone())
            .collect();
        (problems, pending)
    };
    use ProblemKind::*;
    // Results of some calls, then a custom-role message: the rest are pending.
    assert_eq!(
        pending_of(&[user("q"), calls(&["a", "b", "c"]), answer("b"), note()]),
        (vec![], vec!["a".to_string(), "c".into()])
    );
    // A user message after them: they are missing.
    assert_eq!(
        pending_of(&[user("q"), calls(&["a"]), user("more")]),
        (vec![(MissingResult, "a".to_string())], vec![])
    );
    // An earlier message's calls are always missing; other problems stay problems.
    assert_eq!(
        pending_of(&[user("q"), calls(&["a"]), calls(&["b"]), answer("x")]),
        (
            vec![(MissingResult, "a".to_string()), (OrphanResult, "x".into())],
            vec!["b".to_string()]
        )
    );
    // The strict view is unchanged: pending is never filled, and not written.
    let strict = validate_transcript(&[user("q"), calls(&["a"])]);
    assert_eq!(strict.pending, []);
    assert_eq!(
        serde_json::to_value(&strict).unwrap(),
        json!({"ok": false, "problems": [{"kind": "missing_result", "toolCallId": "a", "index": 1}]})
    );
    let paused = serde_json::to_value(paused_view(&[user("q"), calls(&["a"])])).unwrap();
    assert_eq!(
        paused,
        json!({"ok": true, "problems": [], "pending": [{"toolCallId": "a", "index": 1}]})
    );
}

#[test]
fn repair_answers_every_unanswered_call_right_after_its_messages_results() {
    let first = AgentMessage::Assistant(tool_use(vec![
        on("a", "read", "1"),
        on("b", "delete", "2"),
        on("c", "read", "3"),
    ]));
    let last = AgentMessage::Assistant(tool_use(vec![on("d", "write", "4")]));
    let messages = vec![
        user("q"),
        first.clone(),
        answer("b"),
        note(),
        user("more"),
        last.clone(),
    ];
    let Repaired {
        messages: out,
        repaired,
    } = repair_transcript(&messages, 99.0);
    assert_eq!(repaired, 3);
    let interrupted = |id: &str, name: &str| {
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: name.into(),
            content: vec![MediaBlock::text(
                "Tool call was not executed because the run was interrupted.",
            )],
            details: Some(json!({"skipped": true, "reason": "interrupted"})),
            is_error: true,
            timestamp: 99.0,
            extra: Default::default(),
        })
    };
    assert_eq!(
        out,
        [
            user("q"),
            first,
            answer("b"),
            interrupted("a", "read"),
            interrupted("c", "read"),
            note(),
            user("more"),
            last,
            interrupted("d", "write"),
        ]
    );
    assert!(validate_transcript(&out).ok);
    assert_eq!(messages.len(), 6, "the input is not changed");

    // A whole transcript comes back as it was.
    let whole = repair_transcript(&out, 100.0);
    assert_eq!((whole.messages, whole.repaired), (out, 0));
}

#[test]
fn a_repaired_paused_transcript_runs_on_like_any_other() {
    let world = World::new();
    let batch = tool_use(vec![on("b", "delete", "y")]);
    let paused = pause_on(&world, batch);
    let repaired = repair_transcript(&paused.messages, 5.0);
    let mut next = repaired.messages;
    next.push(user("never mind, just say hi"));
    let result = world
        .run(vec![done()], next, Approvals::new(), (0, DEFAULT_MAX_STEPS))
        .unwrap();
    assert_eq!(result.reason, RunReason::Stop);
    assert_eq!(world.ran(), Vec::<String>::new());
}

#[test]
fn an_explicit_decision_applies_to_any_call_of_the_batch() {
    // `a` needs no approval: a denial of it still denies it, given up front...
    let world = World::new();
    let script = vec![
        tool_use(vec![on("a", "read", "x"), on("b", "delete", "y")]),
        done(),
    ];
    let approvals = Approvals::new()
        .deny("a", Some("not that file"))
        .approve("b");
    let result = world
        .run(script, start(), approvals, (0, DEFAULT_MAX_STEPS))
        .unwrap();
    assert_eq!(result.reason, RunReason::Stop);
    assert_eq!(world.ran(), ["b"], "the denied call never runs");
    assert_eq!(
        world.did()[..4],
        [
            "assistant_message:toolUse",
            "tool_skipped:a",
            "before:b",
            "tool_start:b"
        ],
        "denied in phase 1, at its turn, no hook seeing it"
    );
    let rs = results(&result.messages);
    assert_eq!(
        (text_of(rs[0]), rs[0].details.clone()),
        (
            "not that file",
            Some(json!({"skipped": true, "reason": "denied"}))
        )
    );
    assert!(validate_transcript(&result.messages).ok);

    // ...and when resuming a paused batch (the issue: `{a: {approve: false}}` still ran `a`).
    let world = World::new();
    let (_, resumed) = pause_then_resume(&world, Approvals::new().deny("a", None).approve("b"));
    assert_eq!(world.ran(), ["b"]);
    let rs = results(&resumed.messages);
    assert_eq!(
        (text_of(rs[0]), rs[0].details.clone()),
        (
            "Tool call was denied.",
            Some(json!({"skipped": true, "reason": "denied"}))
        )
    );

    // A batch with no call that needs approval: a denial still denies, an approval changes nothing, and
    // each is used up by its call (a later call with the same id gets no decision from it).
    let world = World::new();
    let script = vec![
        tool_use(vec![on("a", "read", "x"), on("c", "read", "z")]),
        tool_use(vec![on("a", "read", "again"), on("c", "read", "again")]),
        done(),
    ];
    let approvals = Approvals::new().deny("a", None).approve("c");
    let result = world
        .run(script, start(), approvals, (0, DEFAULT_MAX_STEPS))
        .unwrap();
    assert_eq!(result.reason, RunReason::Stop);
    assert_eq!(world.ran(), ["c", "a", "c"]);
}

#[test]
fn approvals_read_from_json_name_the_bad_field() {
    let read = |value: Value| Approvals::from_value(&value, "options.approvals");
    assert_eq!(
        read(
            json!({"c1": {"approve": true}, "c2": {"approve": false, "reason": "no"}, "c3": {"approve": false, "reason": null}})
        ),
        Ok(Approvals::new()
            .approve("c1")
            .deny("c2", Some("no"))
            .deny("c3", None))
    );
    assert_eq!(read(json!({})), Ok(Approvals::new()));
    for (value, error) in [
        (json!([]), "options.approvals must be an object of decisions by tool call id (got array)"),
        (json!({"c1": true}), "options.approvals[\"c1\"] must be {approve: true} or {approve: false, reason?: string} (got boolean)"),
        (json!({"c1": {}}), "options.approvals[\"c1\"] must be {approve: true} or {approve: false, reason?: string} (got an object without approve)"),
        (json!({"c1": {"approve": "yes"}}), "options.approvals[\"c1\"].approve must be a boolean (got string)"),
        (json!({"c\"1": {"approve": false, "reason": 3}}), "options.approvals[\"c\\\"1\"].reason must be a string (got integer)"),
    ] {
        assert_eq!(read(value), Err(error.into()));
    }
    // A later decision about the same call replaces the earlier one.
    let mut approvals = Approvals::new().approve("c1");
    approvals.insert("c1", Approval::Deny { reason: None });
    assert_eq!(
        (approvals.len(), approvals.get("c1")),
        (1, Some(&Approval::Deny { reason: None }))
    );
}

// ---------------------------------------------------------------------------------------------------------
// A custom executor with a registry

/// An executor of the app's own: runs every call itself, answering `custom <id>`.
struct Custom(RefCell<Vec<String>>);

impl ToolExecutor for Custom {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        _context: ExecutionContext,
    ) -> futures::future::LocalBoxFuture<'a, Result<ToolReply, String>> {
        self.0.borrow_mut().push(call.id.clone());
        Box::pin(async move {
            Ok(ToolReply {
                content: vec![MediaBlock::text(format!("custom {}", call.id))],
                ..ToolReply::default()
            })
        })
    }
}

#[test]
fn a_custom_executor_runs_the_calls_and_the_registry_still_says_which_wait_for_a_decision() {
    let world = World::new();
    let custom = Custom(RefCell::default());
    let executor = RegistryApprovals {
        runner: &custom,
        registry: &world.registry,
    };
    let run = |script: Vec<AssistantMessage>, messages: Vec<AgentMessage>, approvals: Approvals| {
        let model = ScriptedModel::new(script);
        let mut setup = Setup::new(&model, &world.registry, &NoObserver);
        setup.context.messages = messages;
        setup.executor = Some(&executor);
        setup.control.approvals = approvals;
        setup.run()
    };
    let batch = tool_use(vec![on("c1", "delete", "a.txt"), on("c2", "read", "b.txt")]);
    let paused = run(vec![batch], start(), Approvals::new());
    assert_eq!(paused.reason, RunReason::Paused);
    assert_eq!(
        paused.pending.unwrap(),
        vec![
            pending("c1", "delete", "a.txt", true),
            pending("c2", "read", "b.txt", false)
        ]
    );
    assert!(
        custom.0.borrow().is_empty(),
        "nothing ran before the decision"
    );

    let done = run(
        vec![done()],
        paused.messages,
        Approvals::new().approve("c1"),
    );
    assert_eq!(done.reason, RunReason::Stop);
    assert_eq!(
        *custom.0.borrow(),
        ["c1", "c2"],
        "the custom executor ran both"
    );
    assert!(
        world.ran().is_empty(),
        "the registry's own tools ran nothing"
    );
    let texts: Vec<_> = results(&done.messages).into_iter().map(text_of).collect();
    assert_eq!(texts, ["custom c1", "custom c2"]);
}

#[test]
fn an_agent_over_a_custom_executor_still_pauses_on_the_registrys_approvals() {
    let world = World::new();
    let custom = Rc::new(Custom(RefCell::default()));
    let mut options = AgentOptions::new(
        ScriptedModel::new(vec![
            tool_use(vec![on("c1", "delete", "a.txt"), on("c2", "read", "b.txt")]),
            done(),
        ]),
        world.registry.clone(),
        Rc::new(|| 0.0),
    );
    options.executor = Rc::new(RegistryApprovals {
        runner: custom.clone(),
        registry: Rc::new(world.registry.clone()),
    });
    let agent = Agent::new(options).unwrap();

    let paused = futures::executor::block_on(agent.prompt_text("tidy up")).unwrap();
    assert_eq!(paused.reason, RunReason::Paused);
    assert_eq!(
        agent.pending().unwrap(),
        vec![
            pending("c1", "delete", "a.txt", true),
            pending("c2", "read", "b.txt", false)
        ]
    );
    assert!(
        custom.0.borrow().is_empty(),
        "nothing ran before the decision"
    );

    let done =
        futures::executor::block_on(agent.resume(Approvals::new().deny("c1", Some("no")))).unwrap();
    assert_eq!(done.reason, RunReason::Stop);
    assert_eq!(*custom.0.borrow(), ["c2"], "the denied call never ran");
    assert!(
        world.ran().is_empty(),
        "the registry's own tools ran nothing"
    );
    let texts: Vec<_> = results(&done.messages).into_iter().map(text_of).collect();
    assert_eq!(texts.len(), 2);
    assert_eq!(texts[1], "custom c2");
}
