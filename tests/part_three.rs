//! SPEC part three, natively: usage and budgets (§11), retries (§12) and compaction (§13), each rule
//! against runs that could break it. Waits run on a manual clock (`ManualClock`), hooks that must wait on
//! gates; nothing sleeps.
//!
//! Also the examples of how a Rust app passes part three's options: a `Budget` by value, a `RetryPolicy`
//! (with a `ShouldRetry`) and `CompactionOptions` (with a `Summarize` and an `EstimateTokens`) lent to
//! `LoopControl`, or owned by `AgentOptions`.
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

mod common;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use common::control::*;
use common::*;
use futures::channel::oneshot;
use serde_json::{json, Value};
use tiny_pi::*;

fn read(id: &str) -> AssistantBlock {
    call(id, "read", json!({"path": id}))
}

fn tool_use(calls: Vec<AssistantBlock>) -> AssistantMessage {
    assistant(calls, StopReason::ToolUse)
}

fn done(words: &str) -> AssistantMessage {
    assistant(vec![text(words)], StopReason::Stop)
}

/// `message` reporting `usage`, as pi-ai puts it on a final message.
fn with_usage(mut message: AssistantMessage, usage: Value) -> AssistantMessage {
    message.extra.insert("usage".into(), usage);
    message
}

/// A pi-ai usage object: tokens in, out, and a total; `cost.total`.
fn usage(input: u32, output: u32, cost: f64) -> Value {
    json!({"input": input, "output": output, "cacheRead": 1, "cacheWrite": 2,
           "totalTokens": input + output, "cost": {"input": 0.0, "output": 0.0, "total": cost}})
}

/// A response that failed: `stopReason: "error"`, with calls it asked for anyway.
fn failed(error: &str, calls: Vec<AssistantBlock>) -> AssistantMessage {
    let mut message = assistant(calls, StopReason::Error);
    message.error_message = Some(error.into());
    message
}

fn ids_started(gates: &GatedTools) -> Vec<String> {
    gates.started.borrow().clone()
}

// =========================================================================================================
// §11 Usage and budgets

#[test]
fn usage_sums_every_final_message_and_counts_what_is_not_a_finite_number_as_zero() {
    let model = ScriptedModel::new(vec![
        with_usage(tool_use(vec![read("a")]), usage(100, 20, 0.5)),
        // Strings, a cost that is a number (not `{total}`), a missing total: each counts 0.
        with_usage(
            tool_use(vec![read("b")]),
            json!({"input": "12", "output": 7, "cacheRead": null, "totalTokens": 7, "cost": 3}),
        ),
        // No usage at all.
        done("done"),
    ]);
    let registry = readme_registry();
    let result = Setup::new(&model, &registry, &NoObserver).run();
    assert_eq!(result.reason, RunReason::Stop);
    assert_eq!(
        result.usage,
        Usage {
            input: 100.0,
            output: 27.0,
            cache_read: 1.0,
            cache_write: 2.0,
            total_tokens: 127.0,
            cost: 0.5,
        }
    );
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(
        json["usage"],
        json!({"input": 100.0, "output": 27.0, "cacheRead": 1.0, "cacheWrite": 2.0, "totalTokens": 127.0, "cost": 0.5})
    );
    assert_eq!(json["retries"], 0);

    // Nothing reported: zeros, and still present.
    let model = ScriptedModel::new(vec![done("hi")]);
    let result = Setup::new(&model, &registry, &NoObserver).run();
    assert_eq!(result.usage, Usage::default());
    assert!(serde_json::to_value(&result).unwrap()["usage"].is_object());
}

#[test]
fn usage_that_overflows_stays_the_largest_finite_number_never_null_in_json() {
    let huge = json!({"input": 1e308, "totalTokens": 1e308, "cost": {"total": -1e308}});
    let model = ScriptedModel::new(vec![
        with_usage(tool_use(vec![read("a")]), huge.clone()),
        with_usage(done("done"), huge),
    ]);
    let registry = readme_registry();
    let result = Setup::new(&model, &registry, &NoObserver).run();
    assert_eq!(
        (
            result.usage.input,
            result.usage.total_tokens,
            result.usage.cost
        ),
        (f64::MAX, f64::MAX, -f64::MAX)
    );
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["usage"]["input"], json!(f64::MAX));
    assert_eq!(json["usage"]["cost"], json!(-f64::MAX));
}

#[test]
fn a_spent_budget_ends_the_run_after_the_batch_that_spent_it() {
    let model = ScriptedModel::new(vec![
        with_usage(tool_use(vec![read("a")]), usage(50, 10, 0.0)),
        with_usage(tool_use(vec![read("b")]), usage(30, 10, 0.0)),
        done("never asked"),
    ]);
    let registry = readme_registry();
    let log = Log::default();
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.budget = Some(Budget {
        max_tokens: Some(100.0),
        max_cost: None,
    });
    let result = setup.run();
    assert_eq!((result.reason, result.steps), (RunReason::Budget, 2));
    assert_eq!(
        model.request_count(),
        2,
        "no request after the budget is spent"
    );
    assert_eq!(result.usage.total_tokens, 100.0);
    assert_eq!(
        roles(&result.messages),
        ["user", "assistant", "toolResult", "assistant", "toolResult"],
        "the batch that spent it is answered and appended"
    );
    assert_eq!(log.borrow().last().unwrap(), "turn_end:budget:2");
    assert!(result.error.is_none());

    // By cost: 0.3 + 0.3 < 1, then 1.2 >= 1.
    let model = ScriptedModel::new(vec![
        with_usage(tool_use(vec![read("a")]), usage(1, 1, 0.3)),
        with_usage(tool_use(vec![read("b")]), usage(1, 1, 0.3)),
        with_usage(tool_use(vec![read("c")]), usage(1, 1, 0.6)),
        done("never asked"),
    ]);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.budget = Some(Budget {
        max_tokens: Some(1e9),
        max_cost: Some(1.0),
    });
    let result = setup.run();
    assert_eq!((result.reason, result.steps), (RunReason::Budget, 3));
    assert!((result.usage.cost - 1.2).abs() < 1e-12);
}

#[test]
fn after_a_batch_the_checks_go_aborted_terminated_budget_max_steps() {
    let spent = || {
        Some(Budget {
            max_tokens: Some(10.0),
            max_cost: None,
        })
    };
    let script = || {
        vec![
            with_usage(tool_use(vec![read("a")]), usage(10, 5, 0.0)),
            done("never asked"),
        ]
    };
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let terminating = Spec {
        terminate: true,
        ..spec("read")
    };

    // Terminated beats budget.
    let model = ScriptedModel::new(script());
    let registry = gated_registry(&gates, &kept, &[terminating]);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.budget = spent();
    assert_eq!(setup.run().reason, RunReason::Terminated);

    // Aborted beats both: the abort lands while the call runs.
    let model = ScriptedModel::new(script());
    gates.gate("a");
    let controller = AbortController::new();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.signal = controller.signal();
    setup.control.budget = spent();
    let mut run = Driver::new(setup.options());
    run.stall();
    controller.abort();
    gates.release("a", Ok("a done"));
    assert_eq!(run.result().reason, RunReason::Aborted);

    // Budget beats max_steps.
    let model = ScriptedModel::new(script());
    let registry = readme_registry();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.max_steps = 1;
    setup.control.budget = spent();
    assert_eq!(setup.run().reason, RunReason::Budget);
    // And without a budget, the same run ends with max_steps.
    let model = ScriptedModel::new(script());
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.max_steps = 1;
    assert_eq!(setup.run().reason, RunReason::MaxSteps);
}

#[test]
fn a_stop_with_a_spent_budget_ends_with_stop_and_asks_no_queue() {
    let run = |budget: Option<Budget>| {
        let log = Log::default();
        let model = ScriptedModel::new(vec![
            with_usage(done("first"), usage(40, 0, 0.0)),
            done("after the follow-up"),
        ]);
        let registry = readme_registry();
        let steering = Scripted::new(&log, "steering", vec![]);
        let follow_up = Scripted::new(&log, "followUp", vec![Ok(vec![user("more")])]);
        let mut setup = Setup::new(&model, &registry, &NoObserver);
        setup.control.steering = Some(&steering);
        setup.control.follow_up = Some(&follow_up);
        setup.control.budget = budget;
        let result = setup.run();
        (result, steering.asked(), follow_up.asked())
    };
    let (result, steering, follow_up) = run(Some(Budget {
        max_tokens: Some(40.0),
        max_cost: None,
    }));
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 1));
    assert_eq!((steering, follow_up), (0, 0), "nothing queued is taken");
    let (result, steering, follow_up) = run(Some(Budget {
        max_tokens: Some(41.0),
        max_cost: None,
    }));
    assert_eq!((result.reason, result.steps), (RunReason::Stop, 2));
    assert_eq!((steering, follow_up), (2, 2), "not spent: the queues go on");
}

#[test]
fn budget_values_are_checked_naming_the_field() {
    let check = |max_tokens, max_cost| {
        Budget {
            max_tokens,
            max_cost,
        }
        .check("options.budget")
    };
    assert_eq!(check(Some(100.0), Some(0.5)), Ok(()));
    assert_eq!(check(None, None), Ok(()));
    assert_eq!(
        check(Some(-1.0), None).unwrap_err(),
        "options.budget.maxTokens must be a positive number (got -1)"
    );
    assert_eq!(
        check(Some(0.0), None).unwrap_err(),
        "options.budget.maxTokens must be a positive number (got 0)"
    );
    assert_eq!(
        check(None, Some(f64::NAN)).unwrap_err(),
        "options.budget.maxCost must be a positive number (got NaN)"
    );
    assert_eq!(
        check(None, Some(f64::INFINITY)).unwrap_err(),
        "options.budget.maxCost must be a positive number (got Infinity)"
    );
}

// =========================================================================================================
// §12 Retries

/// A `ShouldRetry` that logs each failure it is shown and answers from a list (then `true`); an answer may
/// wait on a gate first.
struct Policy {
    seen: RefCell<Vec<(String, Option<StopReason>, u32)>>,
    answers: RefCell<Vec<Result<bool, String>>>,
    gate: RefCell<Option<oneshot::Receiver<()>>>,
}

impl Policy {
    fn new(answers: Vec<Result<bool, String>>) -> Rc<Self> {
        Rc::new(Policy {
            seen: RefCell::default(),
            answers: RefCell::new(answers),
            gate: RefCell::default(),
        })
    }
}

impl ShouldRetry for Policy {
    fn should_retry<'a>(&'a self, failure: Failure<'a>) -> HookFuture<'a, bool> {
        self.seen.borrow_mut().push((
            failure.error.to_owned(),
            failure.message.map(|m| m.stop_reason),
            failure.attempt,
        ));
        let mut answers = self.answers.borrow_mut();
        let answer = match answers.is_empty() {
            true => Ok(true),
            false => answers.remove(0),
        };
        let gate = self.gate.borrow_mut().take();
        Box::pin(async move {
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            answer
        })
    }
}

fn policy(max_retries: u32, base: f64, max: f64) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base_delay_ms: base,
        max_delay_ms: max,
        should_retry: None,
    }
}

#[test]
fn a_failed_response_is_retried_after_its_wait_and_nothing_of_it_is_appended_or_run() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![
        with_usage(failed("overloaded", vec![read("never")]), usage(5, 0, 0.01)),
        with_usage(tool_use(vec![read("a")]), usage(10, 2, 0.02)),
        done("done"),
    ]);
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let registry = gated_registry(&gates, &kept, &[spec("read")]);
    let clock = ManualClock::default();
    let prepare = Prepare::new(&log, |_, _| Ok(None));
    let retry = policy(2, 100.0, 1000.0);
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.timers = &clock;
    setup.control.retry = Some(&retry);
    setup.control.prepare_request = Some(&prepare);
    let mut run = Driver::new(setup.options());

    run.stall();
    assert_eq!(model.request_count(), 1);
    assert_eq!(clock.asked(), [100], "the wait is on the host's timers");
    assert_eq!(
        log.borrow().last().unwrap(),
        "retry:1:100:overloaded",
        "announced before the wait"
    );
    clock.advance(99);
    run.stall();
    assert_eq!(model.request_count(), 1, "not before the wait is over");
    clock.advance(1);
    let result = run.result();

    assert_eq!(model.request_count(), 3);
    let requests = model.requests();
    assert_eq!(
        requests[0], requests[1],
        "the same request again, prepareRequest not asked again"
    );
    assert_eq!(
        lines(
            &log,
            &["prepare", "retry", "assistant_message", "tool_", "turn_end"]
        ),
        [
            "prepare:1",
            "retry:1:100:overloaded",
            "assistant_message:toolUse",
            "tool_start:a",
            "tool_end:a",
            "prepare:2",
            "assistant_message:stop",
            "turn_end:stop:2"
        ],
        "no assistant_message, no tool_skipped for the failed response"
    );
    assert_eq!(
        ids_started(&gates),
        ["a"],
        "the failed response's call never ran"
    );
    assert!(
        !result.messages.iter().any(|m| match m {
            AgentMessage::Assistant(a) => a.stop_reason == StopReason::Error,
            AgentMessage::ToolResult(r) => r.tool_call_id == "never",
            _ => false,
        }),
        "nothing of the failed response is in the transcript"
    );
    assert_eq!(
        (result.reason, result.steps, result.retries),
        (RunReason::Stop, 2, 1)
    );
    assert_eq!(
        result.usage.total_tokens, 17.0,
        "the dropped response's usage counts"
    );
    assert!((result.usage.cost - 0.03).abs() < 1e-12);
    assert_eq!(clock.pending(), 0);
    assert!(validate_transcript(&result.messages).ok);
}

#[test]
fn waits_double_up_to_the_longest_and_past_max_retries_the_failure_ends_the_run() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![
        failed("e1", vec![]),
        failed("e2", vec![]),
        failed("e3", vec![]),
        failed("e4", vec![read("x")]),
    ]);
    let registry = readme_registry();
    let clock = ManualClock::default();
    let retry = policy(3, 100.0, 250.0);
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.control.timers = &clock;
    setup.control.retry = Some(&retry);
    let mut run = Driver::new(setup.options());
    for _ in 0..3 {
        run.stall();
        clock.advance(1000);
    }
    let result = run.result();
    assert_eq!(clock.asked(), [100, 200, 250]);
    assert_eq!(
        lines(
            &log,
            &["retry", "assistant_message", "tool_skipped", "turn_end"]
        ),
        [
            "retry:1:100:e1",
            "retry:2:200:e2",
            "retry:3:250:e3",
            "assistant_message:error",
            "tool_skipped:x",
            "turn_end:error:1"
        ],
        "the fourth failure is handled as part one says"
    );
    assert_eq!(result.error.as_deref(), Some("e4"));
    assert_eq!((result.steps, result.retries), (1, 3));
    assert_eq!(roles(&result.messages), ["user", "assistant", "toolResult"]);
    assert_eq!(
        RetryPolicy::default().delay_ms(1),
        1000.0,
        "the default waits a second, then doubles"
    );
    assert_eq!(policy(0, 1000.0, 30_000.0).delay_ms(6), 30_000.0);
    assert_eq!(policy(0, 0.0, 30_000.0).delay_ms(5000), 0.0);
}

#[test]
fn a_wait_longer_than_a_host_timer_is_several_timers_one_after_another() {
    // setTimeout fires at once when asked for more than 2^31 - 1 ms: a wait of 2^32 + 2 ms is three timers,
    // and the model is asked again only when the last has fired (found by a third attack).
    let model = ScriptedModel::new(vec![failed("e1", vec![]), done("ok")]);
    let registry = readme_registry();
    let clock = ManualClock::default();
    let longest = u64::from(LONGEST_TIMER_MS);
    let retry = policy(1, (2 * longest + 4) as f64, f64::MAX);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.timers = &clock;
    setup.control.retry = Some(&retry);
    let mut run = Driver::new(setup.options());
    for _ in 0..2 {
        assert!(!run.stall(), "the run waits");
        clock.advance(longest);
        assert_eq!(
            model.request_count(),
            1,
            "not asked again before the whole wait"
        );
    }
    assert!(!run.stall(), "the run waits");
    clock.advance(3);
    assert!(!run.stall(), "the run waits");
    assert_eq!(
        model.request_count(),
        1,
        "not asked again a millisecond early"
    );
    clock.advance(1);
    let result = run.result();
    assert_eq!(clock.asked(), [LONGEST_TIMER_MS, LONGEST_TIMER_MS, 4]);
    assert_eq!((result.reason, result.retries), (RunReason::Stop, 1));
    assert_eq!(model.request_count(), 2);
}

/// A model whose listed requests (1 for the first) throw after `start`; the others replay `inner`'s script.
struct Flaky {
    inner: ScriptedModel,
    throws: Vec<usize>,
    made: Cell<usize>,
    /// Each request's `attempt`, in the order they were made.
    attempts: RefCell<Vec<u32>>,
}

enum FlakyStream {
    Scripted(tiny_pi::model::ScriptedStream),
    Throw(bool),
}

impl Model for Flaky {
    type Stream = FlakyStream;
    fn stream(
        &self,
        request: ModelRequest<'_>,
        signal: &AbortSignal,
    ) -> Result<FlakyStream, String> {
        self.made.set(self.made.get() + 1);
        self.attempts.borrow_mut().push(request.attempt);
        match self.throws.contains(&self.made.get()) {
            true => Ok(FlakyStream::Throw(false)),
            false => self
                .inner
                .stream(request, signal)
                .map(FlakyStream::Scripted),
        }
    }
}

impl ModelStream for FlakyStream {
    type Event = ModelEvent;
    async fn next(&mut self) -> Option<Result<ModelEvent, String>> {
        match self {
            FlakyStream::Scripted(stream) => stream.next().await,
            FlakyStream::Throw(thrown) if !*thrown => {
                *thrown = true;
                Some(Ok(ModelEvent::Start {
                    partial: Partial::default(),
                }))
            }
            FlakyStream::Throw(_) => Some(Err("socket hang up".into())),
        }
    }
    fn has_result(&self) -> bool {
        matches!(self, FlakyStream::Scripted(_))
    }
    async fn result(&mut self) -> Result<AssistantMessage, String> {
        match self {
            FlakyStream::Scripted(stream) => stream.result().await,
            FlakyStream::Throw(_) => Err("no result".into()),
        }
    }
}

fn flaky_options<'a>(
    model: &'a Flaky,
    registry: &'a ToolRegistry,
    observer: &'a dyn Observer<ModelEvent>,
    control: LoopControl<'a>,
) -> LoopOptions<'a, Flaky> {
    LoopOptions {
        context: readme_context(),
        model,
        tools: registry.definitions(),
        executor: registry,
        signal: AbortSignal::none(),
        max_steps: DEFAULT_MAX_STEPS,
        observer,
        clock: fixed_clock(),
        control,
    }
}

#[test]
fn a_stream_that_throws_is_retried_and_should_retry_sees_each_failure() {
    let log = Log::default();
    let model = Flaky {
        inner: ScriptedModel::new(vec![failed("rate limited", vec![]), done("finally")]),
        throws: vec![1],
        made: Cell::new(0),
        attempts: RefCell::default(),
    };
    let registry = readme_registry();
    let should = Policy::new(vec![]);
    let retry = RetryPolicy {
        should_retry: Some(should.clone()),
        ..policy(5, 10.0, 100.0)
    };
    let clock = ManualClock::default();
    let timeline = Timeline(log.clone());
    let control = LoopControl {
        retry: Some(&retry),
        timers: &clock,
        ..LoopControl::default()
    };
    let mut run = Driver::new(flaky_options(&model, &registry, &timeline, control));
    run.stall();
    clock.advance(10);
    run.stall();
    clock.advance(20);
    let result = run.result();
    assert_eq!(
        *should.seen.borrow(),
        [
            ("socket hang up".to_string(), None, 1),
            ("rate limited".to_string(), Some(StopReason::Error), 2)
        ],
        "a thrown stream has no message; attempt counts this request's retries"
    );
    assert_eq!(
        lines(&log, &["retry", "turn_end"]),
        [
            "retry:1:10:socket hang up",
            "retry:2:20:rate limited",
            "turn_end:stop:1"
        ]
    );
    assert_eq!((result.retries, result.steps), (2, 1));
    assert_eq!(roles(&result.messages), ["user", "assistant"]);
    assert_eq!(
        *model.attempts.borrow(),
        [0, 1, 2],
        "the model is told each retry is the same request again"
    );
    let requests = model.inner.requests();
    assert_eq!(requests[0], requests[1], "the same request, as data");
}

#[test]
fn should_retry_saying_no_or_throwing_means_no_retry_and_it_is_awaited() {
    for (answer, reason) in [
        (Ok(false), RunReason::Error),
        (Err("policy broke".to_string()), RunReason::Error),
    ] {
        let model = ScriptedModel::new(vec![failed("boom", vec![read("x")]), done("never")]);
        let registry = readme_registry();
        let should = Policy::new(vec![answer]);
        let retry = RetryPolicy {
            should_retry: Some(should.clone()),
            ..policy(3, 10.0, 10.0)
        };
        let mut setup = Setup::new(&model, &registry, &NoObserver);
        setup.control.retry = Some(&retry);
        let result = setup.run();
        assert_eq!((result.reason, result.retries), (reason, 0));
        assert_eq!(result.error.as_deref(), Some("boom"));
        assert_eq!(roles(&result.messages), ["user", "assistant", "toolResult"]);
        assert_eq!(should.seen.borrow().len(), 1);
    }

    // An answer that comes later is waited for.
    let model = ScriptedModel::new(vec![failed("boom", vec![]), done("ok")]);
    let registry = readme_registry();
    let should = Policy::new(vec![Ok(true)]);
    let (open, gate) = gate();
    *should.gate.borrow_mut() = Some(gate);
    let retry = RetryPolicy {
        should_retry: Some(should.clone()),
        ..policy(3, 10.0, 10.0)
    };
    let clock = ManualClock::default();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.retry = Some(&retry);
    setup.control.timers = &clock;
    let mut run = Driver::new(setup.options());
    run.stall();
    assert!(
        clock.asked().is_empty(),
        "no wait before shouldRetry answers"
    );
    open.send(()).unwrap();
    run.stall();
    clock.advance(10);
    assert_eq!(run.result().retries, 1);
}

#[test]
fn an_abort_during_the_wait_ends_the_run_at_once() {
    let log = Log::default();
    let model = ScriptedModel::new(vec![failed("overloaded", vec![read("x")]), done("never")]);
    let registry = readme_registry();
    let clock = ManualClock::default();
    let retry = policy(1, 5000.0, 5000.0);
    let controller = AbortController::new();
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.signal = controller.signal();
    setup.control.timers = &clock;
    setup.control.retry = Some(&retry);
    let input = setup.context.messages.clone();
    let mut run = Driver::new(setup.options());
    run.stall();
    assert_eq!(clock.pending(), 1);
    controller.abort();
    assert!(run.stall(), "the run ends without the timer");
    let result = run.result();
    assert_eq!(
        (result.reason, result.steps, result.retries),
        (RunReason::Aborted, 1, 1)
    );
    assert_eq!(result.messages, input, "nothing of the failed response");
    assert_eq!(clock.pending(), 0, "the wait's timer is cleared");
    assert_eq!(model.request_count(), 1);
    assert_eq!(
        lines(&log, &["retry", "assistant", "tool", "turn_end"]),
        ["retry:1:5000:overloaded", "turn_end:aborted:1"]
    );
}

/// Aborts the run when it sees the failed response's terminal event.
struct AbortAtError(AbortController);

impl Observer<ModelEvent> for AbortAtError {
    fn on_event(&self, event: LoopEvent<'_, ModelEvent>) -> Observed {
        if let LoopEvent::ModelEvent {
            event: ModelEvent::Error { .. },
        } = event
        {
            self.0.abort();
        }
        Ok(None)
    }
}

#[test]
fn no_retry_once_aborted_spent_or_not_allowed() {
    // Aborted before the retry: the failure is handled as part one says.
    let model = ScriptedModel::new(vec![failed("boom", vec![]), done("never")]);
    let registry = readme_registry();
    let should = Policy::new(vec![]);
    let retry = RetryPolicy {
        should_retry: Some(should.clone()),
        ..policy(3, 10.0, 10.0)
    };
    let controller = AbortController::new();
    let observer = AbortAtError(controller.clone());
    let mut setup = Setup::new(&model, &registry, &observer);
    setup.signal = controller.signal();
    setup.control.retry = Some(&retry);
    let result = setup.run();
    assert_eq!((result.reason, result.retries), (RunReason::Error, 0));
    assert!(should.seen.borrow().is_empty(), "not even asked");

    // A spent budget makes no retry.
    let model = ScriptedModel::new(vec![
        with_usage(failed("boom", vec![]), usage(100, 0, 0.0)),
        done("never"),
    ]);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.retry = Some(&retry);
    setup.control.budget = Some(Budget {
        max_tokens: Some(100.0),
        max_cost: None,
    });
    let result = setup.run();
    assert_eq!((result.reason, result.retries), (RunReason::Error, 0));

    // The default policy (max_retries 0) retries nothing, and asks nothing.
    let model = ScriptedModel::new(vec![failed("boom", vec![]), done("never")]);
    let retry = RetryPolicy {
        should_retry: Some(should.clone()),
        ..RetryPolicy::default()
    };
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.retry = Some(&retry);
    let result = setup.run();
    assert_eq!((result.reason, result.retries), (RunReason::Error, 0));
    assert!(should.seen.borrow().is_empty());
}

#[test]
fn with_no_timers_a_retry_does_not_wait() {
    let model = ScriptedModel::new(vec![failed("boom", vec![]), done("ok")]);
    let registry = readme_registry();
    let retry = policy(1, 60_000.0, 60_000.0);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.retry = Some(&retry);
    let result = setup.run();
    assert_eq!((result.reason, result.retries), (RunReason::Stop, 1));
}

#[test]
fn a_run_refuses_options_out_of_range_before_anything_runs_naming_the_field() {
    let model = ScriptedModel::new(vec![done("never asked")]);
    let registry = readme_registry();
    let retry = policy(1, f64::INFINITY, 1000.0);
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.retry = Some(&retry);
    let refused = futures::executor::block_on(run_agent_loop(setup.options())).unwrap_err();
    assert_eq!(
        refused.describe(&|i| format!("context.messages[{i}]")),
        "options.retry.baseDelayMs must be a non-negative number (got Infinity)"
    );
    assert!(matches!(refused, InputError::Options(_)));
    assert_eq!(model.request_count(), 0, "no request");
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.control.budget = Some(Budget {
        max_tokens: Some(0.0),
        max_cost: None,
    });
    let refused = futures::executor::block_on(run_agent_loop(setup.options())).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "options.budget.maxTokens must be a positive number (got 0)"
    );
}

#[test]
fn retry_values_are_checked_naming_the_field() {
    assert_eq!(RetryPolicy::default().check("options.retry"), Ok(()));
    assert_eq!(
        policy(1, -5.0, 10.0).check("options.retry").unwrap_err(),
        "options.retry.baseDelayMs must be a non-negative number (got -5)"
    );
    assert_eq!(
        policy(1, 5.0, f64::NAN).check("options.retry").unwrap_err(),
        "options.retry.maxDelayMs must be a non-negative number (got NaN)"
    );
}

// =========================================================================================================
// §13 Compaction: entries

fn entry(summary: &str, first_kept_index: usize) -> AgentMessage {
    AgentMessage::Compaction(CompactionEntry {
        summary: summary.into(),
        first_kept_index,
        tokens_before: Some(1234.0),
        timestamp: 9.0,
        extra: Default::default(),
    })
}

#[test]
fn a_compaction_entry_reads_writes_and_round_trips_without_custom_roles() {
    let line = r#"{"role":"compaction","summary":"we read README","firstKeptIndex":3,"tokensBefore":5120,"timestamp":1700000000000,"note":{"by":"app"}}"#;
    let messages = parse_jsonl(line).unwrap();
    let AgentMessage::Compaction(read) = &messages[0] else {
        panic!("a compaction entry: {messages:?}")
    };
    assert_eq!(
        (
            read.summary.as_str(),
            read.first_kept_index,
            read.tokens_before,
            read.timestamp
        ),
        ("we read README", 3, Some(5120.0), 1_700_000_000_000.0)
    );
    assert_eq!(
        read.extra["note"],
        json!({"by": "app"}),
        "other fields are kept"
    );
    assert_eq!(
        to_jsonl(&messages),
        format!("{line}\n"),
        "the round trip is exact"
    );
    assert_eq!(messages[0].role(), "compaction");

    // An entry handed in without tokensBefore is kept without it: nothing is added to the caller's data
    // (it came back with "tokensBefore":0: found by a third attack). A non-number, null among them, is an
    // error naming the field.
    let bare = r#"{"role":"compaction","summary":"s","firstKeptIndex":0,"timestamp":1}"#;
    let messages = parse_jsonl(bare).unwrap();
    assert_eq!(to_jsonl(&messages), format!("{bare}\n"));
    assert_eq!(
        parse_jsonl(
            r#"{"role":"compaction","summary":"s","firstKeptIndex":0,"tokensBefore":null,"timestamp":1}"#
        )
        .unwrap_err()
        .to_string(),
        "line 1: message.tokensBefore must be a number (got null)"
    );

    // A bad summary or firstKeptIndex is an error naming the field.
    for (bad, error) in [
        (
            r#"{"role":"compaction","summary":7,"firstKeptIndex":1,"timestamp":1}"#,
            "line 1: message.summary must be a string (got integer)",
        ),
        (
            r#"{"role":"compaction","summary":"s","firstKeptIndex":-1,"timestamp":1}"#,
            "line 1: message.firstKeptIndex must be a non-negative integer (got integer)",
        ),
        (
            r#"{"role":"compaction","summary":"s","timestamp":1}"#,
            "line 1: message.firstKeptIndex is missing",
        ),
    ] {
        assert_eq!(parse_jsonl(bad).unwrap_err().to_string(), error);
    }
    for (bad, error) in [
        (
            json!({"role": "compaction", "summary": null, "firstKeptIndex": 1, "timestamp": 1}),
            "summary must be a string (got null)",
        ),
        (
            json!({"role": "compaction", "summary": "s", "firstKeptIndex": 1.5, "timestamp": 1}),
            "firstKeptIndex must be a non-negative integer (got number)",
        ),
        (
            json!({"role": "compaction", "summary": "s", "firstKeptIndex": "2", "timestamp": 1}),
            "firstKeptIndex must be a non-negative integer (got string)",
        ),
        (
            json!({"role": "compaction", "summary": "s", "firstKeptIndex": 1e300, "timestamp": 1}),
            "firstKeptIndex must be at most 9007199254740992 (got 1e+300)",
        ),
    ] {
        assert_eq!(AgentMessage::from_value(bad).unwrap_err(), error);
    }
    // An integer a host hands over as a float reads as the integer.
    let read = AgentMessage::from_value(
        json!({"role": "compaction", "summary": "s", "firstKeptIndex": 2.0, "timestamp": 1}),
    )
    .unwrap();
    assert_eq!(read, {
        let mut e = entry("s", 2);
        if let AgentMessage::Compaction(e) = &mut e {
            (e.tokens_before, e.timestamp) = (None, 1.0);
        }
        e
    });
}

#[test]
fn entries_take_no_part_in_the_pairing_and_are_never_queued() {
    let messages = vec![
        user("q"),
        AgentMessage::Assistant(tool_use(vec![read("a")])),
        entry("between a call and its result", 0),
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
    ];
    assert!(validate_transcript(&messages).ok);
    let agent = Agent::new(AgentOptions::new(
        ScriptedModel::new(vec![]),
        readme_registry(),
        fixed_clock(),
    ))
    .unwrap();
    assert!(matches!(
        agent.prompt(vec![entry("s", 0)]).now_or_never_result(),
        Some(Err(AgentError::Input(_)))
    ));
}

/// Polls a future once (the agent's refusals are immediate).
trait NowOrNever: std::future::Future + Sized {
    fn now_or_never_result(self) -> Option<Self::Output> {
        futures::FutureExt::now_or_never(self)
    }
}

impl<F: std::future::Future> NowOrNever for F {}

#[test]
fn a_request_after_an_entry_carries_its_summary_and_the_messages_from_its_cut() {
    let mut messages = vec![
        user("q1"),                                   // 0
        AgentMessage::Assistant(done("a1")),          // 1
        user("q2"),                                   // 2
        AgentMessage::Assistant(done("a2")),          // 3
        entry("old summary", 1),                      // 4
        entry("q1 was asked, a1 and q2 followed", 3), // 5
        parse_note("build finished"),                 // 6
        user("q3"),                                   // 7
    ];
    let view = compaction::request_messages(&messages);
    let summary = AgentMessage::User(UserMessage {
        content: UserContent::Blocks(vec![MediaBlock::text(
            "The conversation so far, summarised:\n\nq1 was asked, a1 and q2 followed",
        )]),
        timestamp: 9.0,
        extra: Default::default(),
    });
    assert_eq!(
        view.to_vec(),
        vec![summary.clone(), messages[3].clone(), messages[7].clone()],
        "the last entry's summary, then from its cut on, no entry and no custom message"
    );

    // A run sends just that.
    let model = ScriptedModel::new(vec![done("a3")]);
    let registry = readme_registry();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.context.messages = messages.clone();
    setup.control.custom_roles = vec!["note".into()];
    let result = setup.run();
    assert_eq!(model.requests()[0].messages, view.to_vec());
    messages.push(AgentMessage::Assistant(done("a3")));
    assert_eq!(
        result.messages, messages,
        "nothing is removed from the transcript"
    );

    // Without entries or custom messages the transcript itself is sent, uncopied.
    let plain = vec![user("q")];
    assert!(matches!(
        compaction::request_messages(&plain),
        std::borrow::Cow::Borrowed(_)
    ));
}

fn parse_note(text: &str) -> AgentMessage {
    AgentMessage::from_value_with_roles(json!({"role": "note", "text": text}), &["note"]).unwrap()
}

#[test]
fn an_entry_handed_in_must_cut_where_a_run_could() {
    let base = || {
        vec![
            user("q"),                                          // 0
            AgentMessage::Assistant(tool_use(vec![read("a")])), // 1
            user("an interjection"),                            // 2
            AgentMessage::ToolResult(ToolResultMessage::error(
                &ToolCall {
                    id: "a".into(),
                    name: "read".into(),
                    arguments: Some(json!({})),
                    extra: Default::default(),
                },
                "x",
                1.0,
            )), // 3
            AgentMessage::Assistant(done("fine")),              // 4
        ]
    };
    let with = |entry_at_end: AgentMessage| {
        let mut messages = base();
        messages.push(entry_at_end);
        messages
    };
    assert_eq!(compaction::check_entries(&with(entry("s", 4))), Ok(()));
    assert_eq!(compaction::check_entries(&with(entry("s", 5))), Ok(()));
    assert_eq!(
        compaction::check_entries(&with(entry("s", 6))).unwrap_err(),
        "messages[5].firstKeptIndex: 6 is after the entry (an entry keeps messages from before it)"
    );
    assert_eq!(
        compaction::check_entries(&with(entry("s", 3))).unwrap_err(),
        "messages[5].firstKeptIndex: 3 is not a user or assistant message"
    );
    assert_eq!(
        compaction::check_entries(&with(entry("s", 2))).unwrap_err(),
        "messages[5].firstKeptIndex: 2 is a user message between a tool call and its result (a cut there would separate them)"
    );

    // An entry that keeps nothing from before it, with the result of a call before it after it: the
    // request would carry the result without its call.
    let mut entry_between = base();
    entry_between.insert(3, entry("s", 3));
    assert_eq!(
        compaction::check_entries(&entry_between).unwrap_err(),
        "messages[3].firstKeptIndex: 3 keeps nothing from before the entry, but a tool result after it (or one a run will append) answers a call before it"
    );
    let mut entry_after_the_batch = base();
    entry_after_the_batch.insert(4, entry("s", 4));
    assert_eq!(compaction::check_entries(&entry_after_the_batch), Ok(()));

    // A run refuses it before anything happens, as it refuses a pairing problem; so does an Agent.
    let refused = |messages: Vec<AgentMessage>| {
        let model = ScriptedModel::new(vec![done("never")]);
        let registry = readme_registry();
        let recorder = Recorder::default();
        let mut setup = Setup::new(&model, &registry, &recorder);
        setup.context.messages = messages;
        let error = futures::executor::block_on(run_agent_loop(setup.options()))
            .expect_err("the transcript is refused");
        assert_eq!(model.request_count(), 0);
        assert!(recorder.lines().is_empty(), "no event: no tool started");
        error.to_string()
    };
    assert_eq!(
        refused(with(entry("s", 3))),
        "context.messages[5].firstKeptIndex: 3 is not a user or assistant message"
    );
    let mut options =
        AgentOptions::new(ScriptedModel::new(vec![]), readme_registry(), fixed_clock());
    options.messages = with(entry("s", 3));
    assert_eq!(
        Agent::new(options).err(),
        Some(AgentError::Input(
            "options.messages[5].firstKeptIndex: 3 is not a user or assistant message".into()
        ))
    );
    // The results a run will append for the calls that wait for one come after every entry. An entry after
    // a batch's message that keeps nothing from before it would send a result without its call; one that
    // cuts at an appended result would leave the call waiting: both are refused, before anything runs.
    let waiting = |first_kept_index| {
        vec![
            user("q"),                                                     // 0
            AgentMessage::Assistant(tool_use(vec![read("a"), read("b")])), // 1
            AgentMessage::ToolResult(ToolResultMessage::error(
                &ToolCall {
                    id: "a".into(),
                    name: "read".into(),
                    arguments: Some(json!({})),
                    extra: Default::default(),
                },
                "x",
                1.0,
            )), // 2
            entry("s", first_kept_index),                                  // 3
        ]
    };
    assert_eq!(
        refused(waiting(3)),
        "context.messages[3].firstKeptIndex: 3 keeps nothing from before the entry, but a tool result after it (or one a run will append) answers a call before it"
    );
    assert_eq!(
        refused(waiting(2)),
        "context.messages[3].firstKeptIndex: 2 is not a user or assistant message"
    );
    let mut options =
        AgentOptions::new(ScriptedModel::new(vec![]), readme_registry(), fixed_clock());
    options.messages = waiting(3);
    assert!(matches!(Agent::new(options), Err(AgentError::Input(_))));
    // Cut at the batch's message, the run answers the waiting call once and its request pairs every call.
    let model = ScriptedModel::new(vec![done("ok")]);
    let registry = readme_registry();
    let recorder = Recorder::default();
    let mut setup = Setup::new(&model, &registry, &recorder);
    setup.context.messages = waiting(1);
    let result = setup.run();
    assert_eq!(result.reason, RunReason::Stop);
    let started: Vec<String> = (recorder.lines().into_iter())
        .filter(|line| line.starts_with("tool_start"))
        .collect();
    assert_eq!(started, vec!["tool_start:b"], "only b runs, once");
    let sent = &model.requests()[0].messages;
    assert!(
        validate_transcript(sent).ok,
        "the request pairs every call: {sent:?}"
    );

    // From JSONL, the entry is named by its line, as every other problem of the text is (a blank line
    // between: line numbers are the text's, not the messages' indices).
    let jsonl = to_jsonl(&with(entry("s", 3))).replacen('\n', "\n\n", 1);
    let options = AgentOptions::new(ScriptedModel::new(vec![]), readme_registry(), fixed_clock());
    assert_eq!(
        Agent::from_jsonl(&jsonl, options).err(),
        Some(AgentError::Input(
            "line 7: message.firstKeptIndex: 3 is not a user or assistant message".into()
        ))
    );
}

// =========================================================================================================
// §13 Compaction: the step

/// `summarize` that logs what it was given and answers from a list (then `summary <n>`); an answer may wait
/// on a gate.
struct Summarizer {
    log: Log,
    given: RefCell<Vec<Vec<AgentMessage>>>,
    answers: RefCell<Vec<Result<String, String>>>,
    gate: RefCell<Option<oneshot::Receiver<()>>>,
}

impl Summarizer {
    fn new(log: &Log, answers: Vec<Result<String, String>>) -> Rc<Self> {
        Rc::new(Summarizer {
            log: log.clone(),
            given: RefCell::default(),
            answers: RefCell::new(answers),
            gate: RefCell::default(),
        })
    }
}

impl Summarize for Summarizer {
    fn summarize<'a>(
        &'a self,
        messages: &'a [AgentMessage],
        _signal: &'a AbortSignal,
    ) -> HookFuture<'a, String> {
        let n = self.given.borrow().len() + 1;
        self.log
            .borrow_mut()
            .push(format!("summarize:{}", messages.len()));
        self.given.borrow_mut().push(messages.to_vec());
        let mut answers = self.answers.borrow_mut();
        let answer = match answers.is_empty() {
            true => Ok(format!("summary {n}")),
            false => answers.remove(0),
        };
        let gate = self.gate.borrow_mut().take();
        Box::pin(async move {
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            answer
        })
    }
}

/// `estimateTokens` from a closure.
struct Tokens<F>(F);

impl<F: Fn(&AgentMessage) -> Result<f64, String>> EstimateTokens for Tokens<F> {
    fn estimate_tokens(&self, message: &AgentMessage) -> Result<f64, String> {
        (self.0)(message)
    }
}

/// Ten tokens for every message.
fn ten_each() -> Option<Rc<dyn EstimateTokens>> {
    Some(Rc::new(Tokens(|_: &AgentMessage| Ok(10.0))))
}

fn compaction_options(
    summarize: Rc<dyn Summarize>,
    max: f64,
    keep: Option<f64>,
    estimate: Option<Rc<dyn EstimateTokens>>,
) -> CompactionOptions {
    CompactionOptions {
        max_context_tokens: max,
        keep_recent_tokens: keep,
        summarize,
        estimate_tokens: estimate,
    }
}

/// Two finished exchanges and a new question: 9 messages.
fn conversation() -> Vec<AgentMessage> {
    let result = |id: &str| {
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![MediaBlock::text(format!("{id} read"))],
            details: None,
            is_error: false,
            timestamp: 2.0,
            extra: Default::default(),
        })
    };
    vec![
        user("q1"),                                          // 0
        AgentMessage::Assistant(tool_use(vec![read("a1")])), // 1
        result("a1"),                                        // 2
        AgentMessage::Assistant(done("a")),                  // 3
        user("q2"),                                          // 4
        AgentMessage::Assistant(tool_use(vec![read("b1")])), // 5
        result("b1"),                                        // 6
        AgentMessage::Assistant(done("b")),                  // 7
        user("q3"),                                          // 8
    ]
}

fn summary_of(text: &str) -> AgentMessage {
    compaction::summary_message(&CompactionEntry {
        summary: text.into(),
        first_kept_index: 0,
        tokens_before: Some(0.0),
        timestamp: 42.0,
        extra: Default::default(),
    })
}

#[test]
fn over_the_limit_the_loop_compacts_once_before_the_request_and_prepare_request_sees_the_result() {
    let log = Log::default();
    let summarizer = Summarizer::new(&log, vec![]);
    let options = compaction_options(summarizer.clone(), 45.0, Some(30.0), ten_each());
    let model = ScriptedModel::new(vec![tool_use(vec![read("c1")]), done("c")]);
    let registry = readme_registry();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let saw = seen.clone();
    let prepare = Prepare::new(&log, move |request, context| {
        saw.borrow_mut()
            .push((request.messages.len(), context.messages));
        Ok(None)
    });
    let timeline = Timeline(log.clone());
    let mut setup = Setup::new(&model, &registry, &timeline);
    setup.context.messages = conversation();
    setup.control.compaction = Some(&options);
    setup.control.prepare_request = Some(&prepare);
    let result = setup.run();

    // Request 1: 9 messages × 10 = 90 > 45. Cut: the smallest user/assistant index whose messages from it
    // on estimate at most 30: 7 (20 tokens); the summary covers 0..7.
    assert_eq!(summarizer.given.borrow()[0], conversation()[..7].to_vec());
    let AgentMessage::Compaction(first) = &result.messages[9] else {
        panic!("the entry is appended at the end: {:?}", result.messages[9])
    };
    assert_eq!(
        (
            first.summary.as_str(),
            first.first_kept_index,
            first.tokens_before,
            first.timestamp
        ),
        ("summary 1", 7, Some(90.0), 42.0)
    );
    let requests = model.requests();
    let messages = conversation();
    assert_eq!(
        requests[0].messages,
        vec![
            summary_of("summary 1"),
            messages[7].clone(),
            messages[8].clone()
        ]
    );
    // Request 2: the summary (10) + 7, 8, the response and its result (40) = 50 > 45: compacts again,
    // after the previous cut. Cut 8 (30 tokens from it on; the entry at 9 counts nothing); the summary
    // covers the previous summary and 7.
    assert_eq!(
        summarizer.given.borrow()[1],
        vec![summary_of("summary 1"), messages[7].clone()]
    );
    let AgentMessage::Compaction(second) = &result.messages[12] else {
        panic!("{:?}", result.messages[12])
    };
    assert_eq!(
        (second.first_kept_index, second.tokens_before),
        (8, Some(50.0))
    );
    assert_eq!(
        requests[1].messages,
        vec![
            summary_of("summary 2"),
            messages[8].clone(),
            result.messages[10].clone(),
            result.messages[11].clone()
        ]
    );
    assert_eq!(
        lines(
            &log,
            &[
                "summarize",
                "compaction",
                "prepare",
                "model_event:start",
                "turn_end"
            ]
        ),
        [
            "summarize:7",
            "compaction:7:90",
            "prepare:1",
            "model_event:start",
            "summarize:2",
            "compaction:8:50",
            "prepare:2",
            "model_event:start",
            "turn_end:stop:2"
        ],
        "compaction, then prepareRequest, then the request; not counted as a step"
    );
    assert_eq!(
        *seen.borrow(),
        [(3, 10), (4, 13)],
        "prepareRequest gets the shortened request, and the transcript with its entries"
    );
    assert_eq!(result.messages.len(), 14, "nothing is removed");
    assert!(validate_transcript(&result.messages).ok);
}

/// One run of `messages` with compaction (`estimate` per message, by index in `messages`), until the first
/// request: the entry's cut, if the loop compacted.
fn cut_of(messages: Vec<AgentMessage>, tokens: Vec<f64>, max: f64, keep: f64) -> Option<usize> {
    let log = Log::default();
    let summarizer = Summarizer::new(&log, vec![]);
    let by_index = messages.clone();
    let estimate = Tokens(move |m: &AgentMessage| {
        Ok(by_index
            .iter()
            .position(|x| x == m)
            .map_or(5.0, |i| tokens[i]))
    });
    let options = compaction_options(summarizer, max, Some(keep), Some(Rc::new(estimate)));
    let model = ScriptedModel::new(vec![done("ok")]);
    let registry = readme_registry();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.context.messages = messages;
    setup.control.compaction = Some(&options);
    let result = setup.run();
    assert_eq!(result.reason, RunReason::Stop);
    let cut = result.messages.iter().find_map(|m| match m {
        AgentMessage::Compaction(entry) => Some(entry.first_kept_index),
        _ => None,
    });
    if let Some(cut) = cut {
        let request = &model.requests()[0].messages;
        assert!(
            validate_transcript(request).ok,
            "the request after a cut at {cut} breaks the pairing: {request:?}"
        );
    }
    cut
}

#[test]
fn an_estimate_that_overflows_is_the_largest_finite_number_in_the_entry() {
    let log = Log::default();
    let summarizer = Summarizer::new(&log, vec![]);
    let huge: Option<Rc<dyn EstimateTokens>> = Some(Rc::new(Tokens(|_: &AgentMessage| Ok(1e308))));
    let options = compaction_options(summarizer.clone(), 45.0, None, huge);
    let model = ScriptedModel::new(vec![done("c")]);
    let registry = readme_registry();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.context.messages = conversation();
    setup.control.compaction = Some(&options);
    let result = setup.run();
    assert_eq!(result.reason, RunReason::Stop);
    let AgentMessage::Compaction(entry) = &result.messages[9] else {
        panic!("{:?}", result.messages[9])
    };
    assert_eq!(entry.tokens_before, Some(f64::MAX));
    let json = serde_json::to_value(&result.messages[9]).unwrap();
    assert_eq!(json["tokensBefore"], json!(f64::MAX));
}

#[test]
fn a_cut_is_at_a_user_or_assistant_message_and_never_separates_a_call_from_its_result() {
    let result = |id: &str| {
        AgentMessage::ToolResult(ToolResultMessage::error(
            &ToolCall {
                id: id.into(),
                name: "read".into(),
                arguments: Some(json!({})),
                extra: Default::default(),
            },
            "r",
            1.0,
        ))
    };
    // The results at 2 and 3 would fit (20 tokens from 2 on), but are no cut: the cut is 4.
    let messages = vec![
        user("q"),
        AgentMessage::Assistant(tool_use(vec![read("c1"), read("c2")])),
        result("c1"),
        result("c2"),
        AgentMessage::Assistant(done("d")),
        user("next"),
    ];
    assert_eq!(
        cut_of(messages, vec![5.0, 50.0, 5.0, 5.0, 5.0, 5.0], 60.0, 20.0),
        Some(4)
    );

    // A user message between a call and its result (a hand-written transcript) is no cut either.
    let messages = vec![
        user("q"),
        AgentMessage::Assistant(tool_use(vec![read("c1")])),
        user("an interjection"),
        result("c1"),
        AgentMessage::Assistant(done("d")),
        user("next"),
    ];
    assert_eq!(cut_of(messages, vec![10.0; 6], 40.0, 40.0), Some(4));

    // When no cut keeps little enough, the largest.
    let messages = vec![
        user("q"),
        AgentMessage::Assistant(done("long")),
        user("long too"),
    ];
    assert_eq!(cut_of(messages, vec![100.0; 3], 50.0, 10.0), Some(2));

    // No index after 0 is a cut: no compaction, the request goes as it is.
    assert_eq!(cut_of(vec![user("huge")], vec![1000.0], 50.0, 10.0), None);

    // Not over the limit: nothing.
    assert_eq!(cut_of(conversation(), vec![5.0; 9], 45.0, 10.0), None);
}

#[test]
fn a_failed_summary_ends_the_run_before_the_request_and_appends_nothing() {
    let log = Log::default();
    let summarizer = Summarizer::new(&log, vec![Err("model offline".into())]);
    let options = compaction_options(summarizer, 45.0, None, ten_each());
    let model = ScriptedModel::new(vec![done("never")]);
    let registry = readme_registry();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.context.messages = conversation();
    setup.control.compaction = Some(&options);
    let result = setup.run();
    assert_eq!((result.reason, result.steps), (RunReason::Error, 0));
    assert_eq!(
        result.error.as_deref(),
        Some("compaction failed: model offline")
    );
    assert_eq!(result.messages, conversation());
    assert_eq!(model.request_count(), 0);

    // An estimate that is not a non-negative number, or that fails, likewise.
    for (estimate, error) in [
        (
            Ok(f64::NAN),
            "compaction failed: estimateTokens returned NaN for messages[0]: expected a non-negative number",
        ),
        (
            Err("tokenizer missing".to_string()),
            "compaction failed: estimateTokens failed for messages[0]: tokenizer missing",
        ),
    ] {
        let estimate = Tokens(move |_: &AgentMessage| estimate.clone());
        let options =
            compaction_options(Summarizer::new(&log, vec![]), 45.0, None, Some(Rc::new(estimate)));
        let model = ScriptedModel::new(vec![done("never")]);
        let mut setup = Setup::new(&model, &registry, &NoObserver);
        setup.control.compaction = Some(&options);
        let result = setup.run();
        assert_eq!(result.error.as_deref(), Some(error));
        assert_eq!(model.request_count(), 0);
    }
}

#[test]
fn an_abort_while_summarize_runs_ends_the_run_with_nothing_appended() {
    let log = Log::default();
    let summarizer = Summarizer::new(&log, vec![]);
    let (open, gate) = gate();
    *summarizer.gate.borrow_mut() = Some(gate);
    let options = compaction_options(summarizer, 45.0, None, ten_each());
    let model = ScriptedModel::new(vec![done("never")]);
    let registry = readme_registry();
    let controller = AbortController::new();
    let mut setup = Setup::new(&model, &registry, &NoObserver);
    setup.context.messages = conversation();
    setup.signal = controller.signal();
    setup.control.compaction = Some(&options);
    let mut run = Driver::new(setup.options());
    run.stall();
    controller.abort();
    open.send(()).unwrap();
    let result = run.result();
    assert_eq!((result.reason, result.steps), (RunReason::Aborted, 0));
    assert_eq!(result.messages, conversation());
}

#[test]
fn the_default_estimate_is_the_json_length_over_four() {
    let messages = [
        user("hi"),
        user("é 😀 \"quoted\" \\ \n\t\u{1}"),
        AgentMessage::Assistant(with_usage(
            tool_use(vec![call(
                "c1",
                "read",
                json!({"path": "ü", "n": [1, -2, 0.5, 1e21, 3e-7, true, null]}),
            )]),
            json!({"cost": {"total": 0.000003}, "totalTokens": 12345678901234u64}),
        )),
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![MediaBlock::text("x")],
            details: Some(json!({"nested": {"a": []}, "numbers": [
                -0.25, 1.5e-7, 123.456, 1e20, -1e20, 2e21, 5e-324, f64::MAX, -0.0, 1e-6, 99.0,
                9007199254740993.0, -12345.0
            ]})),
            is_error: false,
            timestamp: 1_700_000_000_123.5,
            extra: Default::default(),
        }),
        entry("a summary", 2),
        parse_note("a note"),
    ];
    for message in &messages {
        let line = to_jsonl(std::slice::from_ref(message));
        let length = line.trim_end_matches('\n').encode_utf16().count();
        assert_eq!(estimate::json_length(message), length, "{line}");
        assert_eq!(
            compaction::default_estimate(message),
            (length as f64 / 4.0).ceil()
        );
    }
}

#[test]
fn compaction_values_are_checked_naming_the_field() {
    let log = Log::default();
    let options = |max: f64, keep: Option<f64>| {
        compaction_options(Summarizer::new(&log, vec![]), max, keep, None)
    };
    assert_eq!(options(1000.0, None).check("options.compaction"), Ok(()));
    assert_eq!(options(1000.0, None).keep_recent(), 500.0);
    assert_eq!(
        options(0.0, None).check("options.compaction").unwrap_err(),
        "options.compaction.maxContextTokens must be a positive number (got 0)"
    );
    assert_eq!(
        options(10.0, Some(-3.0))
            .check("options.compaction")
            .unwrap_err(),
        "options.compaction.keepRecentTokens must be a positive number (got -3)"
    );
}

// =========================================================================================================
// The Agent

#[test]
fn an_agent_runs_with_part_three_options_and_refuses_bad_values() {
    let log = Log::default();
    let mut options = AgentOptions::new(
        ScriptedModel::new(vec![
            with_usage(tool_use(vec![read("a")]), usage(90, 20, 0.0)),
            done("never asked"),
        ]),
        readme_registry(),
        fixed_clock(),
    );
    options.budget = Some(Budget {
        max_tokens: Some(100.0),
        max_cost: None,
    });
    options.retry = Some(policy(2, 10.0, 10.0));
    options.compaction = Some(compaction_options(
        Summarizer::new(&log, vec![]),
        1e6,
        None,
        None,
    ));
    let agent = Agent::new(options).unwrap();
    let result = futures::executor::block_on(agent.prompt_text("go")).unwrap();
    assert_eq!(
        (result.reason, result.usage.total_tokens),
        (RunReason::Budget, 110.0)
    );

    for (mutate, error) in [
        (
            Box::new(|o: &mut AgentOptions<ScriptedModel>| {
                o.budget = Some(Budget {
                    max_tokens: None,
                    max_cost: Some(0.0),
                })
            }) as Box<dyn Fn(&mut AgentOptions<ScriptedModel>)>,
            "options.budget.maxCost must be a positive number (got 0)",
        ),
        (
            Box::new(|o| o.retry = Some(policy(1, f64::INFINITY, 1.0))),
            "options.retry.baseDelayMs must be a non-negative number (got Infinity)",
        ),
        (
            Box::new(|o| {
                o.compaction = Some(compaction_options(
                    Summarizer::new(&Log::default(), vec![]),
                    f64::NAN,
                    None,
                    None,
                ))
            }),
            "options.compaction.maxContextTokens must be a positive number (got NaN)",
        ),
        (
            Box::new(|o| o.tool_timeout_ms = Some(u32::MAX)),
            "options.toolTimeoutMs must be a positive integer number of milliseconds, at most 2147483647 (got 4294967295)",
        ),
    ] {
        let mut options =
            AgentOptions::new(ScriptedModel::new(vec![]), readme_registry(), fixed_clock());
        mutate(&mut options);
        assert_eq!(
            Agent::new(options).err(),
            Some(AgentError::Input(error.into()))
        );
    }
}

#[test]
fn a_paused_conversation_restored_from_jsonl_counts_its_steps_on_from_start_steps() {
    let registry = {
        let mut r = ToolRegistry::new();
        let mut tool = readme_registry().get("read").unwrap().clone();
        tool.needs_approval = NeedsApproval::Always;
        r.register(tool).unwrap();
        r
    };
    let script = || {
        vec![
            tool_use(vec![read("a")]),
            tool_use(vec![read("b")]),
            tool_use(vec![read("c")]),
        ]
    };
    let mut options = AgentOptions::new(
        ScriptedModel::new(script()),
        registry.clone(),
        fixed_clock(),
    );
    options.max_steps = 3;
    let agent = Agent::new(options).unwrap();
    let mut approvals = Approvals::new();
    approvals.insert("a", Approval::Approve);
    let first = futures::executor::block_on(agent.prompt_text("go")).unwrap();
    assert_eq!((first.reason, first.steps), (RunReason::Paused, 1));
    let second = futures::executor::block_on(agent.resume(approvals)).unwrap();
    assert_eq!((second.reason, second.steps), (RunReason::Paused, 2));
    assert_eq!(agent.steps(), 2, "what an app saves beside the JSONL");

    // Restored with the steps it had made, its resume counts on: one more request reaches max_steps 3.
    let saved = agent.to_jsonl();
    let restore = |start_steps| {
        let mut options = AgentOptions::new(
            ScriptedModel::new(vec![tool_use(vec![read("c")]), done("end")]),
            registry.clone(),
            fixed_clock(),
        );
        options.max_steps = 3;
        options.start_steps = start_steps;
        let agent = Agent::from_jsonl(&saved, options).unwrap();
        assert_eq!(agent.state(), AgentState::Paused);
        let mut approvals = Approvals::new();
        approvals.insert("b", Approval::Approve);
        approvals.insert("c", Approval::Approve);
        futures::executor::block_on(agent.resume(approvals)).unwrap()
    };
    let resumed = restore(agent.steps());
    assert_eq!((resumed.reason, resumed.steps), (RunReason::MaxSteps, 3));
    // Restored without them, it counts from 0 and asks the model past the conversation's max_steps.
    let fresh = restore(0);
    assert_eq!((fresh.reason, fresh.steps), (RunReason::Stop, 2));
}

#[test]
fn an_agent_keeps_compaction_entries_through_jsonl_and_sends_the_summary() {
    let log = Log::default();
    let mut options = AgentOptions::new(
        ScriptedModel::new(vec![done("a"), done("b")]),
        readme_registry(),
        fixed_clock(),
    );
    options.compaction = Some(compaction_options(
        Summarizer::new(&log, vec![]),
        15.0,
        Some(5.0),
        ten_each(),
    ));
    let agent = Agent::new(options).unwrap();
    futures::executor::block_on(agent.prompt_text("one")).unwrap();
    futures::executor::block_on(agent.prompt_text("two")).unwrap();
    let messages = agent.messages();
    assert_eq!(
        roles(&messages),
        ["user", "assistant", "user", "compaction", "assistant"],
        "the second prompt compacted: 30 tokens over 15"
    );
    let saved = agent.to_jsonl();
    let restored = Agent::from_jsonl(
        &saved,
        AgentOptions::new(
            ScriptedModel::new(vec![done("c")]),
            readme_registry(),
            fixed_clock(),
        ),
    )
    .unwrap();
    assert_eq!(restored.messages(), messages);
    assert_eq!(restored.to_jsonl(), saved);
    futures::executor::block_on(restored.prompt_text("three")).unwrap();
    let request = &restored.model().requests()[0].messages;
    assert_eq!(request[0], summary_of("summary 1"));
    assert_eq!(roles(request), ["user", "user", "assistant", "user"]);
}

#[test]
fn an_agent_whose_run_ended_in_an_error_asks_again_when_prompted_with_nothing() {
    let agent = Agent::new(AgentOptions::new(
        ScriptedModel::new(vec![
            failed("overloaded", vec![read("x")]),
            done("recovered"),
        ]),
        readme_registry(),
        fixed_clock(),
    ))
    .unwrap();
    let first = futures::executor::block_on(agent.prompt_text("go")).unwrap();
    assert_eq!(first.reason, RunReason::Error);
    let again = futures::executor::block_on(agent.prompt(vec![])).unwrap();
    assert_eq!((again.reason, again.steps), (RunReason::Stop, 1));
    assert_eq!(
        roles(&agent.messages()),
        ["user", "assistant", "toolResult", "assistant"],
        "the failed response stays, answered; the new one follows"
    );
}

#[test]
fn repair_moves_a_compaction_entrys_cut_with_the_message_it_names() {
    // A skipped result put in before the kept message moves it one place on; the entry's cut moves with it
    // (it named the message before, and the repaired transcript was refused: found by a fourth attack).
    let call = |id: &str| AgentMessage::Assistant(tool_use(vec![read(id)]));
    let answer = |id: &str| {
        AgentMessage::ToolResult(ToolResultMessage::error(
            &ToolCall {
                id: id.into(),
                name: "read".into(),
                arguments: Some(json!({})),
                extra: Default::default(),
            },
            "ok",
            1.0,
        ))
    };
    let messages = vec![
        user("a"),     // 0
        call("x"),     // 1: never answered
        user("b"),     // 2
        call("y"),     // 3
        answer("y"),   // 4
        user("keep"),  // 5
        entry("s", 5), // 6
    ];
    let repaired = repair_transcript(&messages, 9.0);
    assert_eq!(repaired.repaired, 1);
    let AgentMessage::Compaction(moved) = &repaired.messages[7] else {
        panic!("the entry, one place on: {:?}", repaired.messages)
    };
    assert_eq!(moved.first_kept_index, 6);
    assert!(
        matches!(&repaired.messages[6], AgentMessage::User(m) if m.content == UserContent::Text("keep".into()))
    );
    assert_eq!(compaction::check_entries(&repaired.messages), Ok(()));
}
