//! Loop control (SPEC §7), natively: the three phases of a batch (`beforeToolCall`, parallel or sequential
//! execution, `afterToolCall`), `terminate`, per-call timeouts on a manual clock, `prepareRequest`, custom
//! roles, and the steering and follow-up queues.
//!
//! Also the examples of how a Rust app passes hooks: implement `BeforeToolCall`, `AfterToolCall`,
//! `PrepareRequest`, `MessageQueue` or `Timers` (here through the logging wrappers of
//! `tests/common/control.rs`), or pass a plain closure that answers at once (the last two tests), and lend
//! them to `LoopOptions::control`.
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

mod common;

use std::rc::Rc;

use common::control::*;
use common::*;
use futures::future::LocalBoxFuture;
use serde_json::json;
use tiny_pi::*;

fn read(id: &str) -> AssistantBlock {
    call(id, "read", json!({"path": id}))
}

fn tool_use(calls: Vec<AssistantBlock>) -> AssistantMessage {
    assistant(calls, StopReason::ToolUse)
}

fn done() -> AssistantMessage {
    assistant(vec![text("done")], StopReason::Stop)
}

fn text_of(result: &ToolResultMessage) -> String {
    match result.content.as_slice() {
        [MediaBlock::Text(t)] => t.text.clone(),
        other => panic!("expected one text block, got {other:?}"),
    }
}

fn ids(results: &[&ToolResultMessage]) -> Vec<String> {
    results.iter().map(|r| r.tool_call_id.clone()).collect()
}

fn blocked(text: &str) -> (String, Option<serde_json::Value>) {
    (
        text.into(),
        Some(json!({"skipped": true, "reason": "blocked"})),
    )
}

// ---------------------------------------------------------------------------------------------------------
// Phase 1: beforeToolCall

#[test]
fn before_tool_call_blocks_calls_of_a_parallel_batch_in_call_order() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![
        tool_use(vec![read("a"), read("b"), read("c")]),
        done(),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let before = Before::new(&log, |call, seen| {
        assert_eq!(
            (seen.step, seen.messages),
            (1, 2),
            "the request answered, and the transcript so far"
        );
        match call.id.as_str() {
            "a" => Ok(Some(Block {
                reason: Some("not a".into()),
            })),
            "b" => Ok(None),
            _ => Err("policy service down".into()),
        }
    });
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.before_tool_call = Some(&before);
    let result = setup.run();

    assert_eq!(*gates.started.borrow(), ["b"], "blocked calls never run");
    assert_eq!(
        lines(&log, &["before", "tool_"]),
        [
            "before:a",
            "tool_skipped:a",
            "before:b",
            "before:c",
            "tool_skipped:c",
            "tool_start:b",
            "tool_end:b"
        ]
    );
    let rs = results(&result.messages);
    assert_eq!(ids(&rs), ["a", "b", "c"], "appended at their calls' places");
    assert_eq!((text_of(rs[0]), rs[0].details.clone()), blocked("not a"));
    assert!(rs[0].is_error && rs[2].is_error && !rs[1].is_error);
    assert_eq!(text_of(rs[1]), "read ok");
    assert_eq!(
        (text_of(rs[2]), rs[2].details.clone()),
        blocked("beforeToolCall failed: policy service down")
    );
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
    assert!(validate_transcript(&result.messages).ok);
}

#[test]
fn before_tool_call_blocks_in_a_sequential_batch_and_the_rest_run_one_at_a_time() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![
        tool_use(vec![read("a"), read("b"), read("c")]),
        done(),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("b");
    gates.gate("c");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let before = Before::new(&log, |call, _| Ok((call.id == "a").then(Block::default)));
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.before_tool_call = Some(&before);
    setup.control.tool_execution = ExecutionMode::Sequential;
    let mut run = Driver::new(setup.options());

    run.stall();
    assert_eq!(*gates.started.borrow(), ["b"], "c waits for b");
    gates.release("b", Ok("b done"));
    run.stall();
    assert_eq!(*gates.started.borrow(), ["b", "c"]);
    gates.release("c", Ok("c done"));
    let result = run.result();

    assert_eq!(
        lines(&log, &["before", "tool_"]),
        [
            "before:a",
            "tool_skipped:a",
            "before:b",
            "before:c",
            "tool_start:b",
            "tool_end:b",
            "tool_start:c",
            "tool_end:c"
        ],
        "every hook first (phase 1), then each call's start and end before the next start"
    );
    let rs = results(&result.messages);
    assert_eq!(ids(&rs), ["a", "b", "c"]);
    assert_eq!(
        (text_of(rs[0]), rs[0].details.clone()),
        blocked("Tool call was blocked.")
    );
    assert_eq!(result.reason, RunReason::Stop);
}

#[test]
fn calls_the_registry_refuses_skip_the_hooks_and_run_as_in_part_one() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![
        tool_use(vec![
            call("unknown", "nope", json!({})),
            call("bad", "read", json!({"path": 7})),
            read("good"),
        ]),
        done(),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let before = Before::new(&log, |_, _| Ok(None));
    let after = After::new(&log, |_, _, _| Ok(None));
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.before_tool_call = Some(&before);
    setup.control.after_tool_call = Some(&after);
    let result = setup.run();

    assert_eq!(
        lines(&log, &["before", "after", "tool_start"]),
        [
            "before:good",
            "tool_start:unknown",
            "tool_start:bad",
            "tool_start:good",
            "after:good"
        ]
    );
    let rs = results(&result.messages);
    assert_eq!(text_of(rs[0]), "Tool \"nope\" not found");
    assert!(text_of(rs[1]).starts_with("Invalid arguments for tool \"read\""));
    assert_eq!(text_of(rs[2]), "read ok");

    // A caller's own executor cannot say: every call is the hooks' to see.
    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![call("x", "nope", json!({}))]), done()]);
    let tools = GatedTools::default();
    let before = Before::new(&log, |_, _| Ok(None));
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.executor = Some(&tools);
    setup.control.before_tool_call = Some(&before);
    setup.run();
    assert_eq!(lines(&log, &["before"]), ["before:x"]);
}

// ---------------------------------------------------------------------------------------------------------
// Phase 3: afterToolCall

#[test]
fn after_tool_call_replaces_the_result_before_its_tool_end() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![
        tool_use(vec![read("a"), read("b"), read("c")]),
        done(),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let after = After::new(&log, |call, result, seen| {
        assert_eq!((seen.step, seen.messages), (1, 2));
        assert_eq!(
            text_of(result),
            "read ok",
            "the hook sees the tool's result"
        );
        match call.id.as_str() {
            "a" => Ok(Some(ResultPatch {
                content: Some(vec![MediaBlock::text("redacted")]),
                details: Some(json!({"redacted": true})),
                is_error: Some(true),
                terminate: None,
            })),
            "b" => Ok(None),
            _ => Err("audit log full".into()),
        }
    });
    let ends = Rc::new(std::cell::RefCell::new(Vec::new()));
    struct Ends(Log, Rc<std::cell::RefCell<Vec<ToolResultMessage>>>);
    impl Observer<ModelEvent> for Ends {
        fn on_event(&self, event: LoopEvent<'_, ModelEvent>) -> Observed {
            if let LoopEvent::ToolEnd { result, .. } = &event {
                self.1.borrow_mut().push((*result).clone());
            }
            Timeline(self.0.clone()).on_event(event)
        }
    }
    let observer = Ends(log.clone(), ends.clone());
    let mut setup = Setup::new(&model, &registry, &observer);
    setup.control.after_tool_call = Some(&after);
    let result = setup.run();

    assert_eq!(
        lines(&log, &["after", "tool_end"]),
        [
            "after:a",
            "tool_end:a",
            "after:b",
            "tool_end:b",
            "after:c",
            "tool_end:c"
        ]
    );
    let rs = results(&result.messages);
    assert_eq!(
        (text_of(rs[0]), rs[0].details.clone(), rs[0].is_error),
        (
            "redacted".to_string(),
            Some(json!({"redacted": true})),
            true
        )
    );
    assert_eq!((text_of(rs[1]), rs[1].is_error), ("read ok".into(), false));
    assert_eq!(
        (text_of(rs[2]), rs[2].is_error),
        ("afterToolCall failed: audit log full".into(), true)
    );
    let ends = ends.borrow();
    assert_eq!(
        ends.iter().collect::<Vec<_>>(),
        rs,
        "tool_end carries what is appended"
    );
}

// ---------------------------------------------------------------------------------------------------------
// Execution modes

#[test]
fn a_tool_registered_sequential_makes_its_whole_batch_sequential() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![
        tool_use(vec![read("a"), call("w", "write", json!({"path": "w"}))]),
        done(),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    let write = Spec {
        mode: ExecutionMode::Sequential,
        ..spec("write")
    };
    let registry = gated_registry(&gates, &kept, &[spec("read"), write]);
    let timeline = Timeline(log.clone());
    let mut run = Driver::new(Setup::new(&model, &registry, &timeline).options());
    run.stall();
    assert_eq!(*gates.started.borrow(), ["a"], "w waits for a");
    assert_eq!(lines(&log, &["tool_"]), ["tool_start:a"]);
    gates.release("a", Ok("a done"));
    assert_eq!(run.result().reason, RunReason::Stop);
    assert_eq!(
        lines(&log, &["tool_"]),
        ["tool_start:a", "tool_end:a", "tool_start:w", "tool_end:w"]
    );
}

#[test]
fn a_sequential_batch_aborted_midway_skips_the_calls_not_yet_started() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![read("a"), read("b")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let controller = AbortController::new();
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.signal = controller.signal();
    setup.control.tool_execution = ExecutionMode::Sequential;
    let mut run = Driver::new(setup.options());
    run.stall();
    controller.abort();
    run.stall();
    assert!(!run.finished(), "the running call is waited for");
    gates.release("a", Ok("a done"));
    let result = run.result();

    assert_eq!(*gates.started.borrow(), ["a"], "b never starts");
    assert_eq!(
        lines(&log, &["tool_", "turn_end"]),
        [
            "tool_start:a",
            "tool_end:a",
            "tool_skipped:b",
            "turn_end:aborted:1"
        ]
    );
    let rs = results(&result.messages);
    assert_eq!(text_of(rs[0]), "a done");
    assert_eq!(
        rs[1].details,
        Some(json!({"skipped": true, "reason": "aborted"}))
    );
    assert!(validate_transcript(&result.messages).ok);
}

// ---------------------------------------------------------------------------------------------------------
// Timeouts

#[test]
fn a_timeout_answers_the_slow_call_and_keeps_its_fast_sibling() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![
        tool_use(vec![
            call("slow", "slow", json!({"path": "s"})),
            call("fast", "fast", json!({"path": "f"})),
        ]),
        done(),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("slow");
    gates.gate("fast");
    let slow = Spec {
        timeout_ms: Some(50),
        ..spec("slow")
    };
    let registry = gated_registry(&gates, &kept, &[slow, spec("fast")]);
    let clock = ManualClock::default();
    let seen_by_after = Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = seen_by_after.clone();
    let after = After::new(&log, move |call, result, context| {
        seen.borrow_mut()
            .push((call.id.clone(), result.details.clone(), context.aborted));
        Ok(None)
    });
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.tool_timeout_ms = Some(1000);
    setup.control.timers = &clock;
    setup.control.after_tool_call = Some(&after);
    let mut run = Driver::new(setup.options());

    run.stall();
    assert_eq!(*gates.started.borrow(), ["slow", "fast"]);
    assert_eq!(
        clock.asked(),
        [50, 1000],
        "a tool's own timeout wins over the run's"
    );
    (kept.sinks.borrow()["slow"])(vec![MediaBlock::text("working")]);
    gates.release("fast", Ok("fast done"));
    run.stall();
    assert_eq!(clock.pending(), 1, "the finished call's timer is cleared");
    clock.advance(49);
    run.stall();
    assert!(!kept.signals.borrow()["slow"].aborted());
    assert_eq!(lines(&log, &["tool_end"]), ["tool_end:fast"]);
    clock.advance(1);
    // Reported after the timer fired, before the loop has seen it: ignored too.
    (kept.sinks.borrow()["slow"])(vec![MediaBlock::text("just too late")]);
    run.stall();
    assert!(
        kept.signals.borrow()["slow"].aborted(),
        "the call's own signal aborts"
    );
    assert!(
        !kept.signals.borrow()["fast"].aborted(),
        "and only that call's"
    );
    // Whatever the slow tool does now is ignored.
    (kept.sinks.borrow()["slow"])(vec![MediaBlock::text("too late")]);
    gates.release("slow", Ok("slow done, too late"));
    let result = run.result();

    assert_eq!(
        lines(&log, &["tool_", "after"]),
        [
            "tool_start:slow",
            "tool_start:fast",
            "tool_progress:slow",
            "after:fast",
            "tool_end:fast",
            "after:slow",
            "tool_end:slow"
        ],
        "tool_end in completion order; no progress after the timeout"
    );
    let rs = results(&result.messages);
    assert_eq!(ids(&rs), ["slow", "fast"]);
    assert_eq!(
        (
            text_of(rs[0]).as_str(),
            rs[0].is_error,
            rs[0].details.clone()
        ),
        (
            "Tool call timed out after 50 ms.",
            true,
            Some(json!({"timedOut": true, "timeoutMs": 50}))
        )
    );
    assert_eq!(
        (text_of(rs[1]).as_str(), rs[1].is_error),
        ("fast done", false)
    );
    assert_eq!(
        seen_by_after.borrow()[1],
        (
            "slow".to_string(),
            Some(json!({"timedOut": true, "timeoutMs": 50})),
            true
        ),
        "afterToolCall sees the timed-out result, with the call's aborted signal"
    );
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
    assert_eq!(clock.pending(), 0);
}

/// An app's callback that waits on a gate the test opens: `afterToolCall` for one call, or an observer on
/// the first event `describe` writes as `on` (both log into the timeline as the others do).
struct Waiting {
    log: Log,
    on: String,
    gate: std::cell::RefCell<Option<futures::channel::oneshot::Receiver<()>>>,
}

impl Waiting {
    fn new(log: &Log, on: &str) -> (Self, futures::channel::oneshot::Sender<()>) {
        let (open, gate) = common::control::gate();
        (Waiting::on(log, on, gate), open)
    }

    /// Waiting on `gate`, which something other than the test opens.
    fn on(log: &Log, on: &str, gate: futures::channel::oneshot::Receiver<()>) -> Self {
        Waiting {
            log: log.clone(),
            on: on.into(),
            gate: std::cell::RefCell::new(Some(gate)),
        }
    }

    /// The gate to await, the first time `what` is the one waited on.
    fn gate_for(&self, what: &str) -> Option<futures::channel::oneshot::Receiver<()>> {
        (what == self.on)
            .then(|| self.gate.borrow_mut().take())
            .flatten()
    }
}

impl AfterToolCall for Waiting {
    fn after_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        _result: &'a ToolResultMessage,
        _context: HookContext<'a>,
    ) -> HookFuture<'a, Option<ResultPatch>> {
        self.log.borrow_mut().push(format!("after:{}", call.id));
        let gate = self.gate_for(&call.id);
        Box::pin(async move {
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            Ok(None)
        })
    }
}

impl Observer<ModelEvent> for Waiting {
    fn on_event(&self, event: LoopEvent<'_, ModelEvent>) -> Observed {
        let line = describe(&event);
        self.log.borrow_mut().push(line.clone());
        Ok(self.gate_for(&line).map(|gate| {
            Box::pin(async move {
                let _ = gate.await;
                Ok(())
            }) as LocalBoxFuture<'static, Result<(), String>>
        }))
    }
}

/// SPEC §4: the calls of a parallel batch run concurrently. While the app's `afterToolCall` for a call that
/// answered at once still runs, its siblings have started, one of them finishes in time, and that is its
/// answer: not "timed out" for a call that never ran, nor for one whose timer fired while the loop waited.
#[test]
fn every_call_of_a_parallel_batch_runs_while_a_hook_awaits_another_calls_end() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![
        tool_use(vec![
            call("fast", "fast", json!({"path": "f"})),
            call("pay", "pay", json!({"path": "p"})),
            call("other", "other", json!({"path": "o"})),
        ]),
        done(),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("pay");
    gates.gate("other");
    let pay = Spec {
        timeout_ms: Some(50),
        ..spec("pay")
    };
    let registry = gated_registry(&gates, &kept, &[spec("fast"), pay, spec("other")]);
    let clock = ManualClock::default();
    let (after, open) = Waiting::new(&log, "fast");
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.timers = &clock;
    setup.control.after_tool_call = Some(&after);
    let mut run = Driver::new(setup.options());

    run.stall();
    assert_eq!(lines(&log, &["after"]), ["after:fast"]);
    assert_eq!(
        *gates.started.borrow(),
        ["fast", "pay", "other"],
        "every call started, though fast's afterToolCall has not answered"
    );
    clock.advance(20);
    gates.release("pay", Ok("charged, receipt 123"));
    run.stall();
    assert_eq!(
        clock.pending(),
        0,
        "pay finished in time: its timer is cleared"
    );
    clock.advance(100);
    assert!(!kept.signals.borrow()["pay"].aborted());
    open.send(()).unwrap();
    gates.release("other", Ok("other done"));
    let result = run.result();

    assert_eq!(
        lines(&log, &["tool_end", "after"]),
        [
            "after:fast",
            "tool_end:fast",
            "after:pay",
            "tool_end:pay",
            "after:other",
            "tool_end:other"
        ],
        "tool_end in the order the calls finished"
    );
    let rs = results(&result.messages);
    assert_eq!(ids(&rs), ["fast", "pay", "other"]);
    assert_eq!(
        (text_of(rs[1]).as_str(), rs[1].is_error),
        ("charged, receipt 123", false)
    );
    assert_eq!(gates.executions(), 3, "each call ran once");
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
}

/// A call that finished in time is answered by its tool even when an observer kept the loop busy past its
/// timeout (here the observer of its own progress): its result is not dropped for "timed out".
#[test]
fn a_call_that_finished_while_an_observer_waited_is_not_answered_timed_out() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let clock = ManualClock::default();
    let (observer, open) = Waiting::new(&log, "tool_progress:a");
    let mut setup = Setup::new(&model, &registry, &observer);
    setup.control.tool_timeout_ms = Some(50);
    setup.control.timers = &clock;
    let mut run = Driver::new(setup.options());

    run.stall();
    (kept.sinks.borrow()["a"])(vec![MediaBlock::text("charging")]);
    run.stall();
    clock.advance(26);
    gates.release("a", Ok("charged, receipt 123"));
    run.stall();
    clock.advance(100);
    open.send(()).unwrap();
    let result = run.result();

    let rs = results(&result.messages);
    assert_eq!(
        (text_of(rs[0]).as_str(), rs[0].is_error),
        ("charged, receipt 123", false)
    );
    assert!(!kept.signals.borrow()["a"].aborted());
    assert_eq!(
        lines(&log, &["tool_"]),
        ["tool_start:a", "tool_progress:a", "tool_end:a"]
    );
}

/// The registry, telling `ended` once the execution of call `id` has ended.
struct Telling<'a> {
    registry: &'a ToolRegistry,
    id: &'static str,
    ended: std::cell::RefCell<Option<futures::channel::oneshot::Sender<()>>>,
}

impl ToolExecutor for Telling<'_> {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
        let ended = (call.id == self.id)
            .then(|| self.ended.borrow_mut().take())
            .flatten();
        Box::pin(async move {
            let reply = ToolExecutor::execute(self.registry, call, context).await;
            if let Some(ended) = ended {
                let _ = ended.send(());
            }
            reply
        })
    }
}

/// A hook may wait for another call of its batch to have run: that call runs meanwhile (it is polled while
/// the hook waits), so the batch ends.
#[test]
fn an_after_tool_call_that_waits_for_a_sibling_call_does_not_hold_the_batch() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![read("a"), read("b")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("b");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let (ended, b_ended) = common::control::gate();
    let telling = Telling {
        registry: &registry,
        id: "b",
        ended: std::cell::RefCell::new(Some(ended)),
    };
    // The hook for a waits until b's execution has ended, as an app's would on a shared promise.
    let after = Waiting::on(&log, "a", b_ended);
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.executor = Some(&telling);
    setup.control.after_tool_call = Some(&after);
    let mut run = Driver::new(setup.options());

    run.stall();
    assert_eq!(*gates.started.borrow(), ["a", "b"]);
    assert_eq!(lines(&log, &["after", "tool_end"]), ["after:a"]);
    gates.release("b", Ok("b done"));
    let result = run.result();
    assert_eq!(
        lines(&log, &["after", "tool_end"]),
        ["after:a", "tool_end:a", "after:b", "tool_end:b"]
    );
    assert_eq!(result.reason, RunReason::Stop);
    assert!(validate_transcript(&result.messages).ok);
}

/// The registry, where call `id`'s tool first works synchronously for `ms` on the manual clock (as a tool
/// that reads a file with a blocking call would).
struct Busy<'a> {
    registry: &'a ToolRegistry,
    clock: &'a ManualClock,
    id: &'static str,
    ms: u64,
}

impl ToolExecutor for Busy<'_> {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
        Box::pin(async move {
            if call.id == self.id {
                self.clock.advance(self.ms);
            }
            ToolExecutor::execute(self.registry, call, context).await
        })
    }

    fn settings(&self, call: &ToolCall) -> CallSettings {
        self.registry.settings(call)
    }
}

/// A call's timeout counts from when it starts: the synchronous work of a call that starts before it in the
/// batch does not count against it.
#[test]
fn a_calls_timeout_counts_from_its_own_start_not_from_its_batchs() {
    let model = ScriptedModel::new(vec![
        tool_use(vec![read("a"), call("b", "fetch", json!({"path": "b"}))]),
        done(),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let fetch = Spec {
        timeout_ms: Some(200),
        ..spec("fetch")
    };
    let registry = gated_registry(&gates, &kept, &[spec("read"), fetch]);
    let clock = ManualClock::default();
    let busy = Busy {
        registry: &registry,
        clock: &clock,
        id: "a",
        ms: 300,
    };
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.executor = Some(&busy);
    setup.control.timers = &clock;
    let result = Driver::new(setup.options()).result();
    let rs = results(&result.messages);
    assert_eq!(
        (text_of(rs[1]).as_str(), rs[1].is_error),
        ("fetch ok", false),
        "b ran well within its 200 ms"
    );
    assert!(!kept.signals.borrow()["b"].aborted());
}

#[test]
fn a_timeout_a_timer_cannot_wait_is_refused_naming_its_field() {
    let rule = "a positive integer number of milliseconds, at most 2147483647";
    let model = ScriptedModel::new(vec![done()]);
    let registry = ToolRegistry::new();
    for (ms, got) in [(0, "0"), (u32::MAX, "4294967295")] {
        let mut setup = Setup::new(&model, &registry, &NoObserver);
        setup.control.tool_timeout_ms = Some(ms);
        let refused = futures::executor::block_on(run_agent_loop(setup.options())).err();
        let text = format!("options.toolTimeoutMs must be {rule} (got {got})");
        assert_eq!(refused, Some(InputError::Options(text.into())));

        let mut registry = ToolRegistry::new();
        let mut tool = Tool::new(
            ToolDefinition {
                name: "slow".into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            },
            Rc::new(|_: serde_json::Value, _: ToolCallContext| async { Ok(ToolOutput::default()) }),
        );
        tool.timeout_ms = Some(ms);
        let error = registry.register(tool).unwrap_err();
        assert_eq!(format!("tool.timeoutMs must be {rule} (got {got})"), error);
        assert!(registry.get("slow").is_none(), "nothing registered");
    }
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.tool_timeout_ms = Some(LONGEST_TIMER_MS);
    assert!(futures::executor::block_on(run_agent_loop(setup.options())).is_ok());
}

/// Timers made of futures (`Sleep::new`), as a runtime's are: each wait ends when the test ends it.
#[derive(Default)]
struct FutureTimers(std::cell::RefCell<Vec<futures::channel::oneshot::Sender<()>>>);

impl Timers for FutureTimers {
    fn sleep(&self, _ms: u32) -> Sleep {
        let (elapse, elapsed) = futures::channel::oneshot::channel();
        self.0.borrow_mut().push(elapse);
        Sleep::new(async {
            let _ = elapsed.await;
        })
    }
}

#[test]
fn a_runtimes_timer_future_times_a_call_out_and_aborts_its_signal() {
    let model = ScriptedModel::new(vec![tool_use(vec![read("a"), read("b")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    gates.gate("b");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let timers = FutureTimers::default();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.tool_timeout_ms = Some(30);
    setup.control.timers = &timers;
    let mut run = Driver::new(setup.options());
    run.stall();
    assert_eq!(timers.0.borrow().len(), 2, "a timer for each call");
    gates.release("b", Ok("b in time"));
    run.stall();
    let _ = timers.0.borrow_mut().remove(0).send(());
    let result = run.result();
    let rs = results(&result.messages);
    assert_eq!(text_of(rs[0]), "Tool call timed out after 30 ms.");
    assert_eq!(text_of(rs[1]), "b in time");
    assert!(kept.signals.borrow()["a"].aborted());
    assert!(!kept.signals.borrow()["b"].aborted());
}

#[test]
fn a_callback_timer_that_fires_as_it_is_set_still_aborts_the_calls_signal() {
    /// Timers with no time: each fires inside its own `set`.
    struct AtOnce;
    impl Timers for AtOnce {
        fn sleep(&self, _ms: u32) -> Sleep {
            Sleep::on_callback(|fire| {
                fire();
                Registration::none()
            })
        }
    }
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.tool_timeout_ms = Some(30);
    setup.control.tool_execution = ExecutionMode::Sequential;
    setup.control.timers = &AtOnce;
    let mut run = Driver::new(setup.options());
    run.stall();
    // Timed out before it started; a sequential batch still lets it settle, with its signal aborted.
    assert!(kept.signals.borrow()["a"].aborted());
    gates.release("a", Ok("too late"));
    let result = run.result();
    assert_eq!(
        text_of(results(&result.messages)[0]),
        "Tool call timed out after 30 ms."
    );
}

#[test]
fn a_native_run_on_real_time_times_out_a_call_that_never_ends() {
    struct RealTime;
    impl Timers for RealTime {
        fn sleep(&self, ms: u32) -> Sleep {
            Sleep::new(futures_timer::Delay::new(std::time::Duration::from_millis(
                ms.into(),
            )))
        }
    }
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.tool_timeout_ms = Some(5);
    setup.control.timers = &RealTime;
    let result = futures::executor::block_on(run_agent_loop(setup.options())).unwrap();
    assert_eq!(result.reason, RunReason::Stop);
    let rs = results(&result.messages);
    assert_eq!(text_of(rs[0]), "Tool call timed out after 5 ms.");
    assert!(kept.signals.borrow()["a"].aborted());
}

#[test]
fn a_call_that_finishes_in_time_is_answered_by_its_tool_and_its_signal_stays_quiet() {
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let clock = ManualClock::default();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.tool_timeout_ms = Some(10);
    setup.control.timers = &clock;
    let mut run = Driver::new(setup.options());
    run.stall();
    clock.advance(9);
    gates.release("a", Ok("in time"));
    let result = run.result();
    clock.advance(100);
    assert_eq!(text_of(results(&result.messages)[0]), "in time");
    assert!(!kept.signals.borrow()["a"].aborted());
    assert_eq!(clock.pending(), 0);
}

#[test]
fn a_sequential_call_that_timed_out_is_waited_for_before_the_next_call_starts() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![read("a"), read("b")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    gates.gate("b");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let clock = ManualClock::default();
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.tool_timeout_ms = Some(30);
    setup.control.timers = &clock;
    setup.control.tool_execution = ExecutionMode::Sequential;
    let mut run = Driver::new(setup.options());
    run.stall();
    assert_eq!(clock.asked(), [30], "b's timer starts only when b does");
    clock.advance(30);
    run.stall();
    assert_eq!(
        lines(&log, &["tool_"]),
        ["tool_start:a", "tool_end:a"],
        "a is answered as timed out at once"
    );
    assert!(kept.signals.borrow()["a"].aborted());
    // `a` ignores its signal and goes on: `b` waits, whatever the time.
    clock.advance(1000);
    run.stall();
    assert_eq!(*gates.started.borrow(), ["a"], "b never overlaps a");
    (kept.sinks.borrow()["a"])(vec![MediaBlock::text("still writing")]);
    gates.release("a", Ok("a done, too late"));
    run.stall();
    assert_eq!(
        *gates.started.borrow(),
        ["a", "b"],
        "b starts once a settled"
    );
    assert_eq!(clock.asked(), [30, 30]);
    clock.advance(29);
    gates.release("b", Ok("b done"));
    let result = run.result();
    let rs = results(&result.messages);
    assert_eq!(text_of(rs[0]), "Tool call timed out after 30 ms.");
    assert_eq!(text_of(rs[1]), "b done");
    assert_eq!(
        lines(&log, &["tool_"]),
        ["tool_start:a", "tool_end:a", "tool_start:b", "tool_end:b"],
        "nothing of a's after its tool_end"
    );
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
}

#[test]
fn a_sequential_batch_ends_only_once_its_timed_out_call_settled() {
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let clock = ManualClock::default();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.tool_timeout_ms = Some(30);
    setup.control.timers = &clock;
    setup.control.tool_execution = ExecutionMode::Sequential;
    let mut run = Driver::new(setup.options());
    run.stall();
    clock.advance(30);
    run.stall();
    assert_eq!(
        model.request_count(),
        1,
        "no request while the batch's timed-out call still runs"
    );
    gates.release("a", Ok("late"));
    let result = run.result();
    assert_eq!(model.request_count(), 2);
    assert_eq!(
        text_of(results(&result.messages)[0]),
        "Tool call timed out after 30 ms."
    );
}

#[test]
fn a_timed_out_call_that_never_settles_holds_its_sequential_batch_until_the_run_is_aborted() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![
        tool_use(vec![read("a"), read("b"), read("c")]),
        done(),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let clock = ManualClock::default();
    let controller = AbortController::new();
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.signal = controller.signal();
    setup.control.tool_timeout_ms = Some(30);
    setup.control.timers = &clock;
    setup.control.tool_execution = ExecutionMode::Sequential;
    let mut run = Driver::new(setup.options());
    run.stall();
    clock.advance(30);
    run.stall();
    clock.advance(1_000_000);
    run.stall();
    assert!(!run.finished(), "the batch waits for a");
    assert_eq!(*gates.started.borrow(), ["a"]);
    controller.abort();
    let result = run.result();
    assert_eq!(
        *gates.started.borrow(),
        ["a"],
        "the abort frees the batch: b and c never start"
    );
    assert_eq!(
        lines(&log, &["tool_", "turn_end"]),
        [
            "tool_start:a",
            "tool_end:a",
            "tool_skipped:b",
            "tool_skipped:c",
            "turn_end:aborted:1"
        ]
    );
    let rs = results(&result.messages);
    assert_eq!(text_of(rs[0]), "Tool call timed out after 30 ms.");
    assert_eq!(
        rs[1].details,
        Some(json!({"skipped": true, "reason": "aborted"}))
    );
    assert!(validate_transcript(&result.messages).ok);
    assert_eq!(model.request_count(), 1);
}

#[test]
fn a_timed_out_call_of_a_parallel_batch_is_not_waited_for() {
    let model = ScriptedModel::new(vec![tool_use(vec![read("a"), read("b")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    gates.gate("a");
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let clock = ManualClock::default();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.tool_timeout_ms = Some(30);
    setup.control.timers = &clock;
    let mut run = Driver::new(setup.options());
    run.stall();
    clock.advance(30);
    let result = run.result();
    assert_eq!(*gates.started.borrow(), ["a", "b"]);
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
    assert_eq!(
        text_of(results(&result.messages)[0]),
        "Tool call timed out after 30 ms."
    );
}

#[test]
fn a_call_times_out_through_a_custom_executor_and_the_run_signal_reaches_its_own_signal() {
    /// Waits until its signal aborts, then answers.
    struct Patient;
    impl ToolExecutor for Patient {
        fn execute<'a>(
            &'a self,
            _call: &'a ToolCall,
            context: ExecutionContext,
        ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
            Box::pin(async move {
                context.signal.cancelled().await;
                Ok(ToolReply {
                    content: vec![MediaBlock::text("stopped")],
                    ..ToolReply::default()
                })
            })
        }
    }
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let registry = ToolRegistry::new();
    let clock = ManualClock::default();
    let controller = AbortController::new();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.executor = Some(&Patient);
    setup.signal = controller.signal();
    setup.control.tool_timeout_ms = Some(1000);
    setup.control.timers = &clock;
    let mut run = Driver::new(setup.options());
    run.stall();
    assert!(!run.finished());
    controller.abort();
    let result = run.result();
    assert_eq!(
        text_of(results(&result.messages)[0]),
        "stopped",
        "the call's own signal follows the run's"
    );
    assert_eq!(result.reason, RunReason::Aborted);
    assert_eq!(clock.pending(), 0);
}

// ---------------------------------------------------------------------------------------------------------
// Terminate

/// A custom executor whose replies ask to terminate for the calls named `stop*`.
struct Terminating;

impl ToolExecutor for Terminating {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        _context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
        Box::pin(async move {
            Ok(ToolReply {
                content: vec![MediaBlock::text(format!("{} ran", call.id))],
                terminate: call.id.starts_with("stop"),
                ..ToolReply::default()
            })
        })
    }
}

#[test]
fn terminate_from_a_tool_ends_the_run_after_its_batch() {
    let model = ScriptedModel::new(vec![
        tool_use(vec![call("t", "finish", json!({"path": "x"})), read("r")]),
        done(),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let finish = Spec {
        terminate: true,
        ..spec("finish")
    };
    let registry = gated_registry(&gates, &kept, &[finish, spec("read")]);
    let recorder = Recorder::default();
    let result = Setup::new(&model, &registry, &recorder).run();
    assert_eq!(
        (result.reason, result.steps, model.request_count()),
        (RunReason::Terminated, 1, 1)
    );
    assert_eq!(
        roles(&result.messages),
        ["user", "assistant", "toolResult", "toolResult"]
    );
    assert_eq!(recorder.lines().last().unwrap(), "turn_end:terminated:1");
    let stored = serde_json::to_string(&result.messages).unwrap();
    assert!(
        !stored.contains("terminate"),
        "a control signal, never stored: {stored}"
    );
    assert_eq!(
        serde_json::to_value(result.reason).unwrap(),
        json!("terminated")
    );
}

#[test]
fn terminate_from_a_custom_executor_and_from_after_tool_call() {
    let registry = ToolRegistry::new();
    let model = ScriptedModel::new(vec![tool_use(vec![read("go"), read("stop")]), done()]);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.executor = Some(&Terminating);
    let result = setup.run();
    assert_eq!((result.reason, result.steps), (RunReason::Terminated, 1));
    assert_eq!(results(&result.messages).len(), 2);

    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![read("a"), read("b")]), done()]);
    let after = After::new(&log, |call, _, _| {
        Ok((call.id == "b").then(|| ResultPatch {
            terminate: Some(true),
            ..ResultPatch::default()
        }))
    });
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.executor = Some(&Terminating);
    setup.control.after_tool_call = Some(&after);
    let result = setup.run();
    assert_eq!((result.reason, result.steps), (RunReason::Terminated, 1));
}

#[test]
fn after_tool_call_may_overrule_a_tool_that_asked_to_terminate() {
    let log = Log::default();
    let registry = ToolRegistry::new();
    let model = ScriptedModel::new(vec![tool_use(vec![read("stop")]), done()]);
    let after = After::new(&log, |_, _, _| {
        Ok(Some(ResultPatch {
            terminate: Some(false),
            ..ResultPatch::default()
        }))
    });
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.executor = Some(&Terminating);
    setup.control.after_tool_call = Some(&after);
    let result = setup.run();
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
}

#[test]
fn after_a_batch_aborted_wins_over_terminated_and_terminated_over_max_steps() {
    let registry = ToolRegistry::new();
    let model = ScriptedModel::new(vec![tool_use(vec![read("stop")]), done()]);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.executor = Some(&Terminating);
    setup.max_steps = 1;
    assert_eq!(setup.run().reason, RunReason::Terminated);

    struct AbortOnEnd(AbortController);
    impl Observer<ModelEvent> for AbortOnEnd {
        fn on_event(&self, event: LoopEvent<'_, ModelEvent>) -> Observed {
            if let LoopEvent::ToolEnd { .. } = event {
                self.0.abort();
            }
            Ok(None)
        }
    }
    let model = ScriptedModel::new(vec![tool_use(vec![read("stop")]), done()]);
    let observer = AbortOnEnd(AbortController::new());
    let mut setup = Setup::new(&model, &registry, &observer);
    setup.executor = Some(&Terminating);
    setup.signal = observer.0.signal();
    assert_eq!(setup.run().reason, RunReason::Aborted);
}

// ---------------------------------------------------------------------------------------------------------
// Queues

fn user_msg(text: &str) -> AgentMessage {
    AgentMessage::user(text, 9.0)
}

#[test]
fn steering_is_asked_after_a_batch_and_its_messages_go_into_the_next_request() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let registry = readme_registry();
    let steering = Scripted::new(&log, "steering", vec![Ok(vec![user_msg("also check B")])]);
    let follow_up = Scripted::new(&log, "followUp", vec![]);
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.steering = Some(&steering);
    setup.control.follow_up = Some(&follow_up);
    let result = setup.run();

    assert_eq!(
        lines(
            &log,
            &[
                "tool_end",
                "steering",
                "followUp",
                "queued",
                "model_event:start",
                "turn_end"
            ]
        ),
        [
            "model_event:start",
            "tool_end:a",
            "steering?",
            "queued_message:steering:user",
            "model_event:start",
            "steering?",
            "followUp?",
            "turn_end:stop:2"
        ]
    );
    assert_eq!(
        roles(&model.requests()[1].messages),
        ["user", "assistant", "toolResult", "user"]
    );
    assert_eq!(result.messages[3], user_msg("also check B"));
    assert_eq!(result.reason, RunReason::Stop);
}

#[test]
fn a_follow_up_after_stop_makes_another_request_and_steering_comes_first() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![done(), done(), done()]);
    let registry = readme_registry();
    let steering = Scripted::new(
        &log,
        "steering",
        vec![Ok(vec![]), Ok(vec![user_msg("steer")])],
    );
    let follow_up = Scripted::new(
        &log,
        "followUp",
        vec![Ok(vec![user_msg("next task"), user_msg("and this")])],
    );
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.steering = Some(&steering);
    setup.control.follow_up = Some(&follow_up);
    let result = setup.run();

    assert_eq!(
        lines(
            &log,
            &[
                "assistant_message",
                "steering",
                "followUp",
                "queued",
                "turn_end"
            ]
        ),
        [
            "assistant_message:stop",
            "steering?",
            "followUp?",
            "queued_message:followUp:user",
            "queued_message:followUp:user",
            "assistant_message:stop",
            "steering?",
            "queued_message:steering:user",
            "assistant_message:stop",
            "steering?",
            "followUp?",
            "turn_end:stop:3"
        ]
    );
    assert_eq!(
        roles(&model.requests()[1].messages),
        ["user", "assistant", "user", "user"]
    );
    assert_eq!(result.steps, 3);
}

#[test]
fn the_queues_are_never_asked_when_the_run_ends_for_another_reason() {
    let log = Log::default();
    let registry = readme_registry();
    let ended = |script: Vec<AssistantMessage>,
                 max_steps: u32,
                 executor: Option<&dyn ToolExecutor>| {
        let steering = Scripted::new(&log, "steering", vec![Ok(vec![user_msg("s")])]);
        let follow_up = Scripted::new(&log, "followUp", vec![Ok(vec![user_msg("f")])]);
        let model = ScriptedModel::new(script);
        let mut setup = Setup::new(&model, &registry, &NoObserver);
        setup.executor = executor;
        setup.max_steps = max_steps;
        setup.control.steering = Some(&steering);
        setup.control.follow_up = Some(&follow_up);
        let result = setup.run();
        assert_eq!(
            (steering.asked(), follow_up.asked()),
            (0, 0),
            "{:?}",
            result.reason
        );
        assert!(
            !result.messages.contains(&user_msg("s")) && !result.messages.contains(&user_msg("f"))
        );
        result.reason
    };
    let reasons = [
        ended(
            vec![assistant(vec![read("a")], StopReason::Length)],
            32,
            None,
        ),
        ended(
            vec![assistant(vec![read("a")], StopReason::Error)],
            32,
            None,
        ),
        ended(
            vec![assistant(vec![read("a")], StopReason::Aborted)],
            32,
            None,
        ),
        ended(
            vec![assistant(vec![text("?")], StopReason::ToolUse)],
            32,
            None,
        ),
        ended(vec![tool_use(vec![read("a")])], 1, None),
        ended(vec![tool_use(vec![read("stop")])], 32, Some(&Terminating)),
        ended(vec![done()], 1, None),
    ];
    assert_eq!(
        reasons,
        [
            RunReason::Length,
            RunReason::Error,
            RunReason::Aborted,
            RunReason::Error,
            RunReason::MaxSteps,
            RunReason::Terminated,
            RunReason::Stop
        ]
    );
}

#[test]
fn the_queues_are_not_asked_once_the_run_is_aborted() {
    struct AbortOnStop(AbortController);
    impl Observer<ModelEvent> for AbortOnStop {
        fn on_event(&self, event: LoopEvent<'_, ModelEvent>) -> Observed {
            if let LoopEvent::AssistantMessage { .. } = event {
                self.0.abort();
            }
            Ok(None)
        }
    }
    let log = Log::default();
    let registry = readme_registry();
    for script in [vec![done()], vec![tool_use(vec![read("a")]), done()]] {
        let model = ScriptedModel::new(script);
        let steering = Scripted::new(&log, "steering", vec![Ok(vec![user_msg("s")])]);
        let follow_up = Scripted::new(&log, "followUp", vec![Ok(vec![user_msg("f")])]);
        let observer = AbortOnStop(AbortController::new());
        let mut setup = Setup::new(&model, &registry, &observer);
        setup.signal = observer.0.signal();
        setup.control.steering = Some(&steering);
        setup.control.follow_up = Some(&follow_up);
        let result = setup.run();
        assert_eq!((steering.asked(), follow_up.asked()), (0, 0));
        assert_eq!(result.steps, 1);
    }
}

#[test]
fn a_queued_message_that_is_not_a_user_or_custom_message_ends_the_run_and_nothing_of_it_is_appended(
) {
    let log = Log::default();
    let model = ScriptedModel::new(vec![done(), done()]);
    let registry = readme_registry();
    let stray = AgentMessage::Assistant(assistant(vec![text("I am the model")], StopReason::Stop));
    let follow_up = Scripted::new(&log, "followUp", vec![Ok(vec![user_msg("fine"), stray])]);
    let recorder = Recorder::default();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.control.follow_up = Some(&follow_up);
    let input = setup.context.messages.len();
    let result = setup.run();
    assert_eq!((result.reason, result.steps), (RunReason::Error, 1));
    assert_eq!(
        result.error.as_deref(),
        Some(
            "getFollowUpMessages returned a message with role \"assistant\" (message 2 of 2): only user \
             messages and messages of a role in customRoles may be queued"
        )
    );
    assert_eq!(
        result.messages.len(),
        input + 1,
        "not even the user message before it"
    );
    assert!(!recorder.lines().iter().any(|l| l.starts_with("queued")));

    // A custom message is queued only when its role is one of the run's.
    let note = || {
        AgentMessage::from_value_with_roles(json!({"role": "note", "text": "n"}), &["note"])
            .unwrap()
    };
    for (roles, reason) in [
        (vec![], RunReason::Error),
        (vec!["note".to_string()], RunReason::Stop),
    ] {
        let model = ScriptedModel::new(vec![done(), done()]);
        let steering = Scripted::new(&log, "steering", vec![Ok(vec![note()])]);
        let mut setup = Setup::new(&model, &registry, &NoObserver);
        setup.control.steering = Some(&steering);
        setup.control.custom_roles = roles;
        assert_eq!(setup.run().reason, reason);
    }
    // Nor is a message whose custom role is one of SPEC's own; and a run may not list one (refused up front).
    let forged = AgentMessage::Custom(CustomMessage {
        role: "toolResult".into(),
        fields: Default::default(),
    });
    let model = ScriptedModel::new(vec![done(), done()]);
    let steering = Scripted::new(&log, "steering", vec![Ok(vec![forged])]);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.steering = Some(&steering);
    let result = setup.run();
    assert_eq!(result.reason, RunReason::Error);
    assert!(!result.messages.iter().any(|m| m.role() == "toolResult"));
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.custom_roles = vec!["toolResult".to_string()];
    let refused = futures::executor::block_on(run_agent_loop(setup.options())).unwrap_err();
    assert!(matches!(refused, InputError::Options(_)), "{refused}");
}

#[test]
fn a_queue_that_throws_ends_the_run_with_its_message() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let registry = readme_registry();
    let steering = Scripted::new(&log, "steering", vec![Err("inbox offline".into())]);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.steering = Some(&steering);
    let result = setup.run();
    assert_eq!(
        (result.reason, result.error.as_deref(), result.steps),
        (
            RunReason::Error,
            Some("getSteeringMessages failed: inbox offline"),
            1
        )
    );
    assert!(validate_transcript(&result.messages).ok);
}

#[test]
fn queued_message_has_its_json_shape() {
    let message = user_msg("hi");
    let event = LoopEvent::QueuedMessage::<ModelEvent> {
        message: &message,
        queue: Queue::FollowUp,
        index: 3,
    };
    assert_eq!(
        serde_json::to_value(event).unwrap(),
        json!({"type": "queued_message", "message": {"role": "user", "content": "hi", "timestamp": 9.0}, "queue": "followUp"})
    );
    assert_eq!(event.kind(), "queued_message");
}

// ---------------------------------------------------------------------------------------------------------
// prepareRequest

#[test]
fn prepare_request_replaces_what_the_request_carries_and_never_the_transcript() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let registry = readme_registry();
    let prepare = Prepare::new(&log, |request, seen| {
        assert_eq!(seen.messages, request.messages.len());
        Ok(Some(RequestPatch {
            system_prompt: Some(format!("turn {}", seen.step)),
            // Only the last message (a user message or a result's whole exchange would be kept by a real app).
            messages: (seen.step == 1).then(|| vec![AgentMessage::user("short", 1.0)]),
            tools: Some(vec![]),
        }))
    });
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.prepare_request = Some(&prepare);
    let result = setup.run();

    let requests = model.requests();
    assert_eq!(
        requests[0].system_prompt.as_deref(),
        Some("turn 1"),
        "the step is the upcoming request's number"
    );
    assert_eq!(requests[1].system_prompt.as_deref(), Some("turn 2"));
    assert_eq!(requests[0].messages, [AgentMessage::user("short", 1.0)]);
    assert_eq!(
        roles(&requests[1].messages),
        ["user", "assistant", "toolResult"]
    );
    assert!(requests.iter().all(|r| r.tools.is_empty()));
    assert_eq!(
        roles(&result.messages),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(result.messages[0], readme_context().messages[0]);
    assert_eq!(
        lines(&log, &["prepare", "model_event:start"]),
        [
            "prepare:1",
            "model_event:start",
            "prepare:2",
            "model_event:start"
        ]
    );
}

#[test]
fn prepare_request_returning_an_orphan_result_ends_the_run_before_the_request() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let registry = readme_registry();
    let prepare = Prepare::new(&log, |request, seen| {
        if seen.step == 1 {
            return Ok(None);
        }
        // Drops the assistant message: its result is left without a call.
        let mut messages = request.messages.to_vec();
        messages.remove(1);
        Ok(Some(RequestPatch {
            messages: Some(messages),
            ..RequestPatch::default()
        }))
    });
    let recorder = Recorder::default();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.control.prepare_request = Some(&prepare);
    let result = setup.run();
    assert_eq!(
        (result.reason, result.steps, model.request_count()),
        (RunReason::Error, 1, 1),
        "no request made, steps unchanged"
    );
    assert_eq!(
        result.error.as_deref(),
        Some(
            "prepareRequest returned messages that break the pairing: orphan_result for tool call \"a\" at messages[1]"
        )
    );
    assert_eq!(roles(&result.messages), ["user", "assistant", "toolResult"]);
    assert_eq!(recorder.lines().last().unwrap(), "turn_end:error:1");
}

#[test]
fn an_abort_while_prepare_request_runs_ends_the_run_before_the_request() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![done()]);
    let registry = readme_registry();
    let controller = AbortController::new();
    let aborting = controller.clone();
    let prepare = Prepare::new(&log, move |_, _| {
        aborting.abort();
        Ok(None)
    });
    let recorder = Recorder::default();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.signal = controller.signal();
    setup.control.prepare_request = Some(&prepare);
    let result = setup.run();
    assert_eq!(
        (result.reason, result.steps, model.request_count()),
        (RunReason::Aborted, 0, 0)
    );
    assert_eq!(recorder.lines(), ["turn_end:aborted:0"]);
}

#[test]
fn prepare_request_that_throws_ends_the_run_with_no_request() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![done()]);
    let registry = readme_registry();
    let prepare = Prepare::new(&log, |_, _| Err("token budget service down".into()));
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.prepare_request = Some(&prepare);
    let result = setup.run();
    assert_eq!(
        (result.reason, result.steps, model.request_count()),
        (RunReason::Error, 0, 0)
    );
    assert_eq!(
        result.error.as_deref(),
        Some("prepareRequest failed: token budget service down")
    );
}

// ---------------------------------------------------------------------------------------------------------
// Custom roles

#[test]
fn custom_role_messages_are_kept_verbatim_and_never_sent() {
    let note =
        json!({"role": "notification", "text": "build finished", "level": 2, "timestamp": 3});
    let roles_list = ["notification"];
    let message = AgentMessage::from_value_with_roles(note.clone(), &roles_list).unwrap();
    assert_eq!(message.role(), "notification");
    assert_eq!(
        serde_json::to_value(&message).unwrap(),
        note,
        "written back as read"
    );
    assert_eq!(
        AgentMessage::from_value(note.clone()).unwrap_err(),
        "role must be one of \"user\", \"assistant\", \"toolResult\", \"compaction\" (got \"notification\")"
    );
    assert_eq!(
        AgentMessage::from_value_with_roles(json!({"role": "bot"}), &roles_list).unwrap_err(),
        "role must be one of \"user\", \"assistant\", \"toolResult\", \"compaction\", \"notification\" (got \"bot\")"
    );

    let log = Log::default();
    let model = ScriptedModel::new(vec![tool_use(vec![read("a")]), done()]);
    let registry = readme_registry();
    let seen_by_hook = Rc::new(std::cell::Cell::new(0));
    let seen = seen_by_hook.clone();
    let prepare = Prepare::new(&log, move |request, context| {
        seen.set(context.messages - request.messages.len());
        Ok(None)
    });
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.context.messages.push(message.clone());
    setup.control.custom_roles = vec!["notification".into()];
    setup.control.prepare_request = Some(&prepare);
    let result = setup.run();

    assert_eq!(
        seen_by_hook.get(),
        1,
        "the hook's context has it, the request not"
    );
    for request in model.requests() {
        assert!(request.messages.iter().all(|m| m.role() != "notification"));
    }
    assert_eq!(
        roles(&result.messages),
        [
            "user",
            "notification",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
    assert_eq!(result.messages[1], message);
    assert!(validate_transcript(&result.messages).ok);
    assert!(prologue_trace(&result.messages)
        .iter()
        .all(|r| !r.detail.contains("build finished")));
}

#[test]
fn prepare_request_putting_back_a_custom_message_or_an_entry_unconverted_ends_the_run_before_the_request(
) {
    let note = AgentMessage::from_value_with_roles(json!({"role": "note"}), &["note"]).unwrap();
    let entry = AgentMessage::from_value(
        json!({"role": "compaction", "summary": "s", "firstKeptIndex": 0, "timestamp": 1}),
    )
    .unwrap();
    let cases = [
        (note, "prepareRequest returned messages[1] with role \"note\": a custom-role message, which is sent only once converted (to a user message, say)"),
        (entry, "prepareRequest returned messages[1] with role \"compaction\": a compaction entry, which is never sent (its summary is)"),
    ];
    for (stranger, expected) in cases {
        let log = Log::default();
        let model = ScriptedModel::new(vec![done()]);
        let registry = readme_registry();
        let prepare = Prepare::new(&log, move |request, _| {
            let mut messages = request.messages.to_vec();
            messages.push(stranger.clone());
            Ok(Some(RequestPatch {
                messages: Some(messages),
                ..RequestPatch::default()
            }))
        });
        let mut setup = Setup::new(&model, &registry, &NoObserver);
        setup.control.custom_roles = vec!["note".into()];
        setup.control.prepare_request = Some(&prepare);
        let result = setup.run();
        assert_eq!(
            (result.reason, result.steps, model.request_count()),
            (RunReason::Error, 0, 0),
            "no request made"
        );
        assert_eq!(result.error.as_deref(), Some(expected));
        assert_eq!(roles(&result.messages), ["user"]);
    }
}

#[test]
fn a_custom_message_built_by_hand_must_have_one_of_the_runs_custom_roles() {
    // Found by a Rust user: a `Custom` message with role "toolResult" was stored, ignored by the pairing,
    // and written to JSONL as a second result.
    let stranger = |role: &str| {
        AgentMessage::Custom(CustomMessage {
            role: role.into(),
            fields: Default::default(),
        })
    };
    let cases = [
        (
            "toolResult",
            "context.messages[1]: role \"toolResult\" is one of SPEC's own roles, not a custom one",
        ),
        (
            "memo",
            "context.messages[1]: role \"memo\" is not one of the run's custom roles (customRoles)",
        ),
    ];
    for (role, expected) in cases {
        let model = ScriptedModel::new(vec![done()]);
        let registry = readme_registry();
        let mut setup = Setup::new(&model, &registry, &NoObserver);
        setup.context.messages.push(stranger(role));
        setup.control.custom_roles = vec!["note".into()];
        let error = futures::executor::block_on(run_agent_loop(setup.options())).unwrap_err();
        assert_eq!(error.to_string(), expected);
        assert_eq!(model.request_count(), 0, "nothing ran");
    }
    // A listed role runs as before.
    let model = ScriptedModel::new(vec![done()]);
    let registry = readme_registry();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.context.messages.push(stranger("note"));
    setup.control.custom_roles = vec!["note".into()];
    assert_eq!(roles(&setup.run().messages), ["user", "note", "assistant"]);
}

#[test]
fn the_validator_skips_custom_messages_wherever_they_stand() {
    let note = AgentMessage::from_value_with_roles(json!({"role": "note"}), &["note"]).unwrap();
    let messages = vec![
        user("q"),
        AgentMessage::Assistant(tool_use(vec![read("a")])),
        note.clone(),
        AgentMessage::ToolResult(ToolResultMessage::error(
            &ToolCall {
                id: "a".into(),
                name: "read".into(),
                arguments: Some(json!({})),
                extra: Default::default(),
            },
            "x",
            1.0,
        )),
        note,
    ];
    assert!(validate_transcript(&messages).ok);
    assert!(validate_trace(&prologue_trace(&messages)).ok);
}

// ---------------------------------------------------------------------------------------------------------
// Signals and readers

#[test]
fn a_child_signal_follows_its_parent_and_tells_its_listeners_once() {
    let parent = AbortController::new();
    let child = AbortController::with_parent(&parent.signal());
    let heard = Rc::new(std::cell::Cell::new(0));
    let h = heard.clone();
    let _listening = child
        .signal()
        .subscribe(Box::new(move || h.set(h.get() + 1)));
    let gone = heard.clone();
    drop(
        child
            .signal()
            .subscribe(Box::new(move || gone.set(gone.get() + 100))),
    );
    assert!(!child.signal().aborted());
    parent.abort();
    assert!(child.signal().aborted());
    child.abort();
    assert_eq!(
        heard.get(),
        1,
        "once; the dropped registration heard nothing"
    );

    // A child of an aborted parent is born aborted; a late listener is called at once.
    let late = AbortController::with_parent(&parent.signal());
    assert!(late.signal().aborted());
    let l = heard.clone();
    let _ = late
        .signal()
        .subscribe(Box::new(move || l.set(l.get() + 10)));
    assert_eq!(heard.get(), 11);
    // A child's own abort leaves its parent alone.
    let root = AbortController::new();
    let own = AbortController::with_parent(&root.signal());
    own.abort();
    assert!(own.signal().aborted() && !root.signal().aborted());
}

#[test]
fn terminate_is_read_from_a_tool_output_and_a_reply_and_kept_out_of_extra() {
    let output = ToolOutput::from_value(json!({"content": [], "terminate": true})).unwrap();
    assert!(output.terminate);
    let text = r#"{"content": [{"type": "text", "text": "x"}], "terminate": true}"#;
    assert!(serde_json::from_str::<ToolOutput>(text).unwrap().terminate);
    let reply =
        ToolReply::from_value(json!({"content": [], "terminate": true, "note": 1})).unwrap();
    assert!(reply.terminate);
    assert_eq!(reply.extra.keys().collect::<Vec<_>>(), ["note"]);
    assert!(ToolReply::from_value(json!({"terminate": "yes"})).is_err());
}

// ---------------------------------------------------------------------------------------------------------
// Plain closures as hooks

#[test]
fn plain_closures_are_hooks_lent_to_a_run() {
    let model = ScriptedModel::new(vec![tool_use(vec![read("a"), read("b")]), done()]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let (requests, steered) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let before = |call: &ToolCall, _: HookContext| {
        Ok((call.id == "b").then(|| Block {
            reason: Some("not b".into()),
        }))
    };
    let after = |_: &ToolCall, result: &ToolResultMessage, _: HookContext| {
        let text = format!("{} (checked)", text_of(result));
        Ok(Some(ResultPatch {
            content: Some(vec![MediaBlock::text(text)]),
            ..ResultPatch::default()
        }))
    };
    let prepare = |request: ModelRequest, context: HookContext| {
        requests.set(requests.get() + 1);
        assert_eq!(context.step, requests.get());
        Ok((context.step == 2).then(|| RequestPatch {
            system_prompt: Some(format!("{} messages", request.messages.len())),
            ..RequestPatch::default()
        }))
    };
    let steering = || {
        steered.set(steered.get() + 1);
        Ok(vec![])
    };
    let timeline = Timeline(Log::default());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.before_tool_call = Some(&before);
    setup.control.after_tool_call = Some(&after);
    setup.control.prepare_request = Some(&prepare);
    setup.control.steering = Some(&steering);
    let result = setup.run();

    assert_eq!(*gates.started.borrow(), ["a"], "the blocked call never ran");
    let rs = results(&result.messages);
    assert_eq!(text_of(rs[0]), "read ok (checked)");
    assert_eq!((text_of(rs[1]), rs[1].details.clone()), blocked("not b"));
    assert_eq!(
        (requests.get(), steered.get()),
        (2, 2),
        "after the batch and after the stop"
    );
    let second = &model.requests()[1];
    assert_eq!(second.system_prompt.as_deref(), Some("4 messages"));
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
}

#[test]
fn plain_closures_are_an_agents_hooks_a_tools_needs_approval_and_part_threes_functions() {
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let one = gated_registry(&gates, &kept, &[spec("read")]);
    let mut tool = one.get("read").unwrap().clone();
    tool.needs_approval = NeedsApproval::Ask(Rc::new(|arguments: &serde_json::Value| {
        arguments["path"] == "secret"
    }));
    let mut registry = ToolRegistry::new();
    registry.register(tool).unwrap();
    let model = ScriptedModel::new(vec![tool_use(vec![read("open"), read("secret")]), done()]);
    let mut options = AgentOptions::new(model, registry, Rc::new(|| 0.0));
    options.before_tool_call = Some(Rc::new(|call: &ToolCall, _: HookContext| {
        assert_ne!(call.id, "secret", "asked only once the call is approved");
        Ok(None)
    }));
    options.retry = Some(RetryPolicy {
        should_retry: Some(Rc::new(|_: Failure| false)),
        ..RetryPolicy::default()
    });
    options.compaction = Some(CompactionOptions {
        max_context_tokens: 1e9,
        keep_recent_tokens: None,
        summarize: Rc::new(|_: &[AgentMessage]| Ok("summary".to_string())),
        estimate_tokens: Some(Rc::new(|_: &AgentMessage| Ok(1.0))),
    });
    let agent = Agent::new(options).unwrap();

    let paused = futures::executor::block_on(agent.prompt_text("go")).unwrap();
    assert_eq!(paused.reason, RunReason::Paused);
    let pending = agent.pending().unwrap();
    let waits: Vec<_> = pending
        .iter()
        .map(|p| (p.tool_call_id.as_str(), p.needs_approval))
        .collect();
    assert_eq!(waits, [("open", false), ("secret", true)]);
    assert!(
        gates.started.borrow().is_empty(),
        "nothing ran before the decision"
    );
}

#[test]
fn a_run_aborted_before_it_began_answers_its_open_batch_as_any_batch_after_an_abort() {
    // The loop checks the signal before a request and after a batch (the course's two checkpoints): a
    // transcript saved mid-batch, resumed with a signal the caller had already aborted, has its batch
    // answered as a batch is once the run is aborted, then ends `aborted` with no request.
    for (mode, started, reason) in [
        (ExecutionMode::Parallel, vec!["a", "b"], None),
        (ExecutionMode::Sequential, vec![], Some(json!("aborted"))),
    ] {
        let model = ScriptedModel::new(vec![done()]);
        let (gates, kept) = (GatedTools::default(), Kept::default());
        let registry = gated_registry(&gates, &kept, &[spec("read")]);
        let timeline = Timeline(Log::default());
        let mut setup = Setup::new(&model, &registry, &timeline);
        let batch = AgentMessage::Assistant(tool_use(vec![read("a"), read("b")]));
        setup.context.messages = vec![user("go"), batch];
        setup.control.tool_execution = mode;
        let controller = AbortController::new();
        controller.abort();
        setup.signal = controller.signal();
        let result = setup.run();

        assert_eq!(
            *gates.started.borrow(),
            started,
            "{mode:?}: all at once, or none once aborted"
        );
        let rs = results(&result.messages);
        assert_eq!(ids(&rs), ["a", "b"], "{mode:?}: each call answered once");
        let reasons: Vec<_> = (rs.iter())
            .map(|r| r.details.as_ref().map(|d| d["reason"].clone()))
            .collect();
        assert_eq!(reasons, [reason.clone(), reason], "{mode:?}");
        assert_eq!(
            (result.reason, result.steps),
            (RunReason::Aborted, 0),
            "{mode:?}: no request"
        );
        assert!(validate_transcript(&result.messages).ok);
    }
}
