//! The Agent (SPEC §9), natively: its state table (idle / running / paused) as each method meets it, the
//! queues it lends its runs, its listeners, pause and resume, abort in every state, and a conversation saved
//! as JSONL and restored. Runs are driven by hand (`LocalPool`) with gated tools, never by sleeps.
#![cfg(not(target_arch = "wasm32"))] // native tests; the browser tests are tests/web.rs

mod common;

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use common::control::{gated_registry, spec, Kept, Timeline};
use common::*;
use futures::executor::LocalPool;
use futures::future::LocalBoxFuture;
use futures::task::LocalSpawnExt;
use serde_json::json;
use tiny_pi::*;

fn on(id: &str, name: &str) -> AssistantBlock {
    call(id, name, json!({"path": id}))
}

fn tool_use(calls: Vec<AssistantBlock>) -> AssistantMessage {
    assistant(calls, StopReason::ToolUse)
}

fn said(words: &str) -> AssistantMessage {
    assistant(vec![text(words)], StopReason::Stop)
}

/// An agent over `script` with the gated tools `read` and `delete` (which needs approval), a clock that
/// counts, and a listener that logs every event.
struct Fixture {
    agent: Agent<ScriptedModel>,
    gates: GatedTools,
    kept: Kept,
    log: common::control::Log,
}

fn registry(gates: &GatedTools, kept: &Kept) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for tool in [spec("read"), spec("delete")] {
        let one = gated_registry(gates, kept, &[tool]);
        let mut tool = one.get(tool.name).unwrap().clone();
        if tool.definition.name == "delete" {
            tool.needs_approval = NeedsApproval::Always;
        }
        registry.register(tool).unwrap();
    }
    registry
}

fn counting_clock() -> Clock {
    let now = Rc::new(RefCell::new(0.0));
    Rc::new(move || {
        *now.borrow_mut() += 1.0;
        *now.borrow()
    })
}

fn options(
    script: Vec<AssistantMessage>,
    gates: &GatedTools,
    kept: &Kept,
) -> AgentOptions<ScriptedModel> {
    AgentOptions::new(
        ScriptedModel::new(script),
        registry(gates, kept),
        counting_clock(),
    )
}

impl Fixture {
    fn new(script: Vec<AssistantMessage>) -> Self {
        let (gates, kept) = (GatedTools::default(), Kept::default());
        let agent = Agent::new(options(script, &gates, &kept)).unwrap();
        Self::with(agent, gates, kept)
    }

    fn with(agent: Agent<ScriptedModel>, gates: GatedTools, kept: Kept) -> Self {
        let log = common::control::Log::default();
        agent.subscribe(Rc::new(Timeline(log.clone())));
        Fixture {
            agent,
            gates,
            kept,
            log,
        }
    }

    /// The events logged since the last call (model events left out).
    fn events(&self) -> Vec<String> {
        let events = (self.log.borrow().iter())
            .filter(|l| !l.starts_with("model_event"))
            .cloned()
            .collect();
        self.log.borrow_mut().clear();
        events
    }
}

/// Runs `future` on `pool` until it stalls; its output once it has one.
fn spawn<T: 'static>(
    pool: &mut LocalPool,
    future: impl Future<Output = T> + 'static,
) -> Rc<RefCell<Option<T>>> {
    let slot = Rc::new(RefCell::new(None));
    let out = slot.clone();
    pool.spawner()
        .spawn_local(async move {
            *out.borrow_mut() = Some(future.await);
        })
        .unwrap();
    pool.run_until_stalled();
    slot
}

fn block<T>(future: impl Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

// ---------------------------------------------------------------------------------------------------------
// The table

#[test]
fn the_state_table_says_what_each_method_does_in_each_state() {
    use AgentAction as A;
    use AgentEffect as E;
    use AgentState::*;
    let table = [
        (Idle, A::Prompt, Running, E::Run),
        (Idle, A::Resume, Idle, E::Refuse(AgentError::NotPaused)),
        (Idle, A::Queue, Idle, E::Queue),
        (Idle, A::Abort, Idle, E::Nothing),
        (Idle, A::Reset, Idle, E::Clear),
        (Running, A::Prompt, Running, E::Refuse(AgentError::Running)),
        (Running, A::Resume, Running, E::Refuse(AgentError::Running)),
        (Running, A::Queue, Running, E::Queue),
        (Running, A::Abort, Running, E::AbortRun),
        (Running, A::Reset, Running, E::Refuse(AgentError::Running)),
        (Running, A::RunEnded { paused: false }, Idle, E::Settle),
        (Running, A::RunEnded { paused: true }, Paused, E::Settle),
        (Paused, A::Prompt, Paused, E::Refuse(AgentError::Paused)),
        (Paused, A::Resume, Running, E::Run),
        (Paused, A::Queue, Paused, E::Queue),
        (Paused, A::Abort, Idle, E::Interrupt),
        (Paused, A::Reset, Idle, E::Clear),
    ];
    for (state, action, next, effect) in table {
        assert_eq!(state.on(action), (next, effect), "{state:?} × {action:?}");
    }
}

// ---------------------------------------------------------------------------------------------------------
// Prompt

#[test]
fn a_prompt_runs_and_the_agent_keeps_the_conversation_for_the_next() {
    let f = Fixture::new(vec![
        tool_use(vec![on("a", "read")]),
        said("read it"),
        said("you are welcome"),
    ]);
    let first = block(f.agent.prompt_text("read a")).unwrap();
    assert_eq!((first.reason, first.steps), (RunReason::Stop, 2));
    assert_eq!(f.agent.messages(), first.messages);
    assert_eq!(f.agent.state(), AgentState::Idle);
    let second = block(f.agent.prompt_text("thanks")).unwrap();
    assert_eq!(
        (second.reason, second.steps),
        (RunReason::Stop, 1),
        "steps count per prompt"
    );
    assert_eq!(
        roles(&f.agent.messages()),
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant"
        ]
    );
    // The second request saw the whole conversation.
    assert_eq!(f.agent.model().requests()[2].messages.len(), 5);
}

#[test]
fn a_prompt_while_a_run_is_in_progress_is_refused_and_the_run_goes_on() {
    let f = Fixture::new(vec![tool_use(vec![on("a", "read")]), said("done")]);
    f.gates.gate("a");
    let mut pool = LocalPool::new();
    let first = spawn(&mut pool, f.agent.prompt_text("read a"));
    assert!(f.agent.is_running());
    assert_eq!(
        roles(&f.agent.messages()),
        ["user", "assistant"],
        "the conversation is the run's as it goes: the input, and the response whose call waits"
    );

    let second = block(f.agent.prompt_text("and b"));
    assert_eq!(second.unwrap_err(), AgentError::Running);
    assert!(AgentError::Running
        .to_string()
        .starts_with("a run is already in progress"));
    assert_eq!(
        block(f.agent.resume(Approvals::new())).unwrap_err(),
        AgentError::Running
    );
    assert_eq!(f.agent.reset().unwrap_err(), AgentError::Running);
    assert_eq!(
        roles(&f.agent.messages()),
        ["user", "assistant"],
        "nothing of the refused prompt was appended"
    );

    f.gates.release("a", Ok("a's text"));
    pool.run_until_stalled();
    let first = first.borrow_mut().take().unwrap().unwrap();
    assert_eq!(first.reason, RunReason::Stop);
    assert_eq!(f.agent.state(), AgentState::Idle);
}

#[test]
fn only_user_and_custom_role_messages_may_be_prompted_or_queued() {
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let mut options = options(vec![said("ok")], &gates, &kept);
    options.custom_roles = vec!["note".into()];
    let agent = Agent::new(options).unwrap();
    let note =
        AgentMessage::from_value_with_roles(json!({"role": "note", "text": "fyi"}), &["note"])
            .unwrap();
    let stranger = AgentMessage::Custom(CustomMessage {
        role: "stranger".into(),
        fields: Default::default(),
    });
    let reply = AgentMessage::Assistant(said("I said this"));
    let error = block(agent.prompt(vec![user("hi"), reply.clone()])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "input[1].role must be \"user\" or one of customRoles (\"note\") (got \"assistant\"): only user \
         messages and messages of a role in customRoles may be prompted or queued"
    );
    assert_eq!(
        agent.steer(stranger).unwrap_err().to_string(),
        "message.role must be \"user\" or one of customRoles (\"note\") (got \"stranger\"): only user \
         messages and messages of a role in customRoles may be prompted or queued"
    );
    assert!(matches!(agent.follow_up(reply), Err(AgentError::Input(_))));
    assert_eq!(agent.state(), AgentState::Idle);
    assert!(agent.messages().is_empty());
    let result = block(agent.prompt(vec![note, user("hi")])).unwrap();
    assert_eq!(roles(&result.messages), ["note", "user", "assistant"]);
}

#[test]
fn a_custom_role_is_none_of_specs_own() {
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let mut options = options(vec![said("ok")], &gates, &kept);
    options.custom_roles = vec!["note".into(), "toolResult".into()];
    let error = Agent::new(options).err().unwrap();
    assert_eq!(
        error.to_string(),
        "options.customRoles[1]: \"toolResult\" is one of SPEC's own roles (user, assistant, toolResult, \
         compaction), not a custom one"
    );
}

// ---------------------------------------------------------------------------------------------------------
// Queues

#[test]
fn steer_and_follow_up_while_idle_wait_for_the_next_prompt() {
    let f = Fixture::new(vec![
        tool_use(vec![on("a", "read")]),
        said("steered"),
        said("followed up"),
        said("no"),
    ]);
    f.agent.steer(user("also check b")).unwrap();
    f.agent.follow_up(user("then summarize")).unwrap();
    assert_eq!(f.agent.state(), AgentState::Idle);
    assert!(f.agent.messages().is_empty(), "queued, not appended");

    let result = block(f.agent.prompt_text("read a")).unwrap();
    assert_eq!(result.reason, RunReason::Stop);
    assert_eq!(
        f.events(),
        [
            "assistant_message:toolUse",
            "tool_start:a",
            "tool_end:a",
            "queued_message:steering:user",
            "assistant_message:stop",
            "queued_message:followUp:user",
            "assistant_message:stop",
            "turn_end:stop:3"
        ]
    );
    // Taken once: the next prompt finds the queues empty.
    block(f.agent.prompt_text("anything else?")).unwrap();
    assert_eq!(f.events(), ["assistant_message:stop", "turn_end:stop:1"]);
}

#[test]
fn steer_while_running_reaches_the_run_after_its_batch() {
    let f = Fixture::new(vec![tool_use(vec![on("a", "read")]), said("done")]);
    f.gates.gate("a");
    let mut pool = LocalPool::new();
    let run = spawn(&mut pool, f.agent.prompt_text("read a"));
    f.agent.steer(user("stop after this")).unwrap();
    f.gates.release("a", Ok("a's text"));
    pool.run_until_stalled();
    let result = run.borrow_mut().take().unwrap().unwrap();
    assert_eq!(
        roles(&result.messages),
        ["user", "assistant", "toolResult", "user", "assistant"]
    );
    let request = &f.agent.model().requests()[1];
    assert_eq!(request.messages.last(), Some(&user("stop after this")));
}

// ---------------------------------------------------------------------------------------------------------
// Pause, resume, abort

#[test]
fn a_paused_run_leaves_the_agent_paused_and_resume_continues_it() {
    let f = Fixture::new(vec![
        tool_use(vec![on("a", "read"), on("b", "delete")]),
        said("deleted"),
    ]);
    let paused = block(f.agent.prompt_text("clean up")).unwrap();
    assert_eq!(paused.reason, RunReason::Paused);
    assert_eq!(f.agent.state(), AgentState::Paused);
    assert!(!f.agent.is_running());
    let pending = f.agent.pending().unwrap();
    assert_eq!(
        pending
            .iter()
            .map(|p| (p.tool_call_id.as_str(), p.needs_approval))
            .collect::<Vec<_>>(),
        [("a", false), ("b", true)]
    );
    assert_eq!(
        block(f.agent.prompt_text("hello?")).unwrap_err(),
        AgentError::Paused
    );

    // A resume without the decision pauses again.
    let again = block(f.agent.resume(Approvals::new())).unwrap();
    assert_eq!((again.reason, again.steps), (RunReason::Paused, 1));
    assert_eq!(f.agent.state(), AgentState::Paused);

    let resumed = block(f.agent.resume(Approvals::new().approve("b"))).unwrap();
    assert_eq!(
        (resumed.reason, resumed.steps),
        (RunReason::Stop, 2),
        "steps counted on"
    );
    assert_eq!(*f.gates.started.borrow(), ["a", "b"]);
    assert_eq!(f.agent.state(), AgentState::Idle);
    assert_eq!(f.agent.pending(), None);
    assert_eq!(
        block(f.agent.resume(Approvals::new())).unwrap_err(),
        AgentError::NotPaused
    );
}

#[test]
fn abort_while_paused_answers_the_pending_calls_and_the_conversation_goes_on() {
    let f = Fixture::new(vec![
        tool_use(vec![on("a", "read"), on("b", "delete")]),
        said("fine, I will not"),
    ]);
    block(f.agent.prompt_text("clean up")).unwrap();
    assert_eq!(f.agent.state(), AgentState::Paused);
    f.events();

    f.agent.abort();
    assert_eq!(f.agent.state(), AgentState::Idle);
    assert_eq!(f.agent.pending(), None);
    assert_eq!(f.events(), Vec::<String>::new(), "no run, no event");
    let messages = f.agent.messages();
    let answered = results(&messages);
    assert_eq!(answered.len(), 2);
    for result in answered {
        assert_eq!(
            result.details,
            Some(json!({"skipped": true, "reason": "interrupted"}))
        );
    }
    assert!(validate_transcript(&messages).ok);
    assert!(f.gates.started.borrow().is_empty(), "nothing ran");

    let next = block(f.agent.prompt_text("never mind")).unwrap();
    assert_eq!(next.reason, RunReason::Stop);
}

#[test]
fn abort_while_running_aborts_the_run_and_abort_while_idle_does_nothing() {
    let f = Fixture::new(vec![tool_use(vec![on("a", "read")]), said("never asked")]);
    f.agent.abort();
    assert_eq!(f.agent.state(), AgentState::Idle);

    f.gates.gate("a");
    let mut pool = LocalPool::new();
    let run = spawn(&mut pool, f.agent.prompt_text("read a"));
    let idle = spawn(&mut pool, f.agent.wait_for_idle());
    assert!(
        idle.borrow().is_none(),
        "waiting while the run is in progress"
    );
    f.agent.abort();
    assert!(
        f.kept.signals.borrow()["a"].aborted(),
        "the tool saw the abort"
    );
    assert!(f.agent.is_running(), "the loop never kills a running tool");
    f.gates.release("a", Ok("finished anyway"));
    pool.run_until_stalled();
    let result = run.borrow_mut().take().unwrap().unwrap();
    assert_eq!((result.reason, result.steps), (RunReason::Aborted, 1));
    assert!(
        idle.borrow().is_some(),
        "wait_for_idle resolved when the run ended"
    );
    assert_eq!(f.agent.state(), AgentState::Idle);
    block(f.agent.wait_for_idle());
}

#[test]
fn reset_forgets_the_conversation_the_queues_and_the_pause() {
    let f = Fixture::new(vec![tool_use(vec![on("b", "delete")]), said("hi")]);
    block(f.agent.prompt_text("delete b")).unwrap();
    assert_eq!(f.agent.state(), AgentState::Paused);
    f.agent.steer(user("queued")).unwrap();
    f.agent.reset().unwrap();
    assert_eq!(f.agent.state(), AgentState::Idle);
    assert!(f.agent.messages().is_empty());
    assert_eq!(f.agent.pending(), None);
    let result = block(f.agent.prompt_text("hello")).unwrap();
    assert_eq!(
        roles(&result.messages),
        ["user", "assistant"],
        "the queued message is gone"
    );
}

/// Polls `future` once, then drops it (a Rust caller may).
fn poll_once_and_drop<T>(future: impl Future<Output = T>) {
    let mut future = Box::pin(future);
    let waker = futures::task::noop_waker();
    let _ = future
        .as_mut()
        .poll(&mut std::task::Context::from_waker(&waker));
}

#[test]
fn a_run_future_dropped_unfinished_answers_its_calls_and_leaves_the_agent_idle() {
    let f = Fixture::new(vec![tool_use(vec![on("a", "read")]), said("done")]);
    f.gates.gate("a");
    let mut pool = LocalPool::new();
    let idle = spawn(&mut pool, f.agent.wait_for_idle());
    assert!(idle.borrow().is_some(), "idle at once");
    let run = f.agent.prompt_text("read a");
    assert!(f.agent.is_running());
    poll_once_and_drop(run);
    assert_eq!(*f.gates.started.borrow(), ["a"], "the call had started");
    assert_eq!(f.agent.state(), AgentState::Idle);
    let messages = f.agent.messages();
    assert_eq!(roles(&messages), ["user", "assistant", "toolResult"]);
    assert_eq!(
        results(&messages)[0].details,
        Some(json!({"skipped": true, "reason": "interrupted"}))
    );
    assert!(validate_transcript(&messages).ok);
}

#[test]
fn a_run_future_dropped_before_its_first_poll_still_settles() {
    let f = Fixture::new(vec![said("hi")]);
    drop(f.agent.prompt_text("hello"));
    assert_eq!(f.agent.state(), AgentState::Idle);
    block(f.agent.wait_for_idle());
    let next = block(f.agent.prompt_text("hello again")).unwrap();
    assert_eq!(roles(&next.messages), ["user", "user", "assistant"]);
}

#[test]
fn a_resume_dropped_after_a_call_ran_keeps_its_result_and_never_runs_it_again() {
    let f = Fixture::new(vec![
        tool_use(vec![on("a", "read"), on("b", "delete")]),
        said("done"),
    ]);
    block(f.agent.prompt_text("clean up")).unwrap();
    assert_eq!(f.agent.state(), AgentState::Paused);
    f.gates.gate("b");
    poll_once_and_drop(f.agent.resume(Approvals::new().approve("b")));
    assert_eq!(*f.gates.started.borrow(), ["a", "b"]);
    assert_eq!(f.agent.state(), AgentState::Idle, "nothing left to resume");
    assert_eq!(
        block(f.agent.resume(Approvals::new().approve("b"))).unwrap_err(),
        AgentError::NotPaused
    );
    let messages = f.agent.messages();
    let answered = results(&messages);
    assert_eq!(
        (answered.iter())
            .map(|r| (
                r.tool_call_id.as_str(),
                r.details.as_ref().map(|d| &d["reason"])
            ))
            .collect::<Vec<_>>(),
        [("a", None), ("b", Some(&json!("interrupted")))],
        "a ran: its own result (the model must not be told it did not run); b, still running: interrupted"
    );
    assert_eq!(
        (answered.iter().map(|r| r.is_error)).collect::<Vec<_>>(),
        [false, true]
    );
    assert!(validate_transcript(&messages).ok);
    block(f.agent.prompt_text("and now?")).unwrap();
    assert_eq!(*f.gates.started.borrow(), ["a", "b"], "no call ran twice");
}

/// A listener that holds the run at one call's `tool_end` until the test opens its gate.
struct HoldsAt {
    call_id: &'static str,
    gate: RefCell<Option<futures::channel::oneshot::Receiver<()>>>,
}

impl Observer<ModelEvent> for HoldsAt {
    fn on_event(&self, event: LoopEvent<'_, ModelEvent>) -> Observed {
        let LoopEvent::ToolEnd { result, .. } = event else {
            return Ok(None);
        };
        let gate = (result.tool_call_id == self.call_id)
            .then(|| self.gate.borrow_mut().take())
            .flatten();
        Ok(
            gate.map(|gate| -> LocalBoxFuture<'static, Result<(), String>> {
                Box::pin(async move {
                    let _ = gate.await;
                    Ok(())
                })
            }),
        )
    }
}

/// A call that ran to its end while a listener held the run at another call's `tool_end` keeps its own
/// result when the run's future is dropped then (it ran: the model must not be told it did not).
#[test]
fn a_run_dropped_while_a_listener_waits_keeps_the_result_of_a_call_that_ended_meanwhile() {
    let f = Fixture::new(vec![
        tool_use(vec![on("a", "read"), on("b", "read")]),
        said("done"),
    ]);
    f.gates.gate("b");
    let (_open, gate) = futures::channel::oneshot::channel::<()>();
    f.agent.subscribe(Rc::new(HoldsAt {
        call_id: "a",
        gate: RefCell::new(Some(gate)),
    }));
    let mut run = Box::pin(f.agent.prompt_text("read both"));
    let waker = futures::task::noop_waker();
    let mut poll = || {
        let pending = run
            .as_mut()
            .poll(&mut std::task::Context::from_waker(&waker))
            .is_pending();
        assert!(pending, "the listener holds the run");
    };
    poll();
    f.gates.release("b", Ok("b done"));
    poll();
    drop(run);
    assert_eq!(f.agent.state(), AgentState::Idle);
    let messages = f.agent.messages();
    let answered: Vec<_> = results(&messages)
        .iter()
        .map(|r| (r.tool_call_id.clone(), r.content.clone(), r.details.clone()))
        .collect();
    assert_eq!(
        answered,
        [
            ("a".into(), vec![MediaBlock::text("read ok")], None),
            ("b".into(), vec![MediaBlock::text("b done")], None)
        ]
    );
    assert!(validate_transcript(&messages).ok);
    assert_eq!(*f.gates.started.borrow(), ["a", "b"]);
}

// ---------------------------------------------------------------------------------------------------------
// Listeners

/// A listener that logs under its name and may make the run wait on a gate or fail.
struct Named {
    name: &'static str,
    log: common::control::Log,
    fail: bool,
    wait: RefCell<Option<futures::channel::oneshot::Receiver<()>>>,
}

impl Observer<ModelEvent> for Named {
    fn on_event(&self, event: LoopEvent<'_, ModelEvent>) -> Observed {
        if matches!(event, LoopEvent::ModelEvent { .. }) {
            return Ok(None);
        }
        self.log
            .borrow_mut()
            .push(format!("{}:{}", self.name, event.kind()));
        if self.fail {
            return Err(format!("{} failed", self.name));
        }
        let wait = self.wait.borrow_mut().take();
        let log = self.log.clone();
        let name = self.name;
        Ok(
            wait.map(|gate| -> LocalBoxFuture<'static, Result<(), String>> {
                Box::pin(async move {
                    let _ = gate.await;
                    log.borrow_mut().push(format!("{name}:resolved"));
                    Ok(())
                })
            }),
        )
    }
}

#[test]
fn listeners_see_every_event_of_every_run_in_order_and_are_awaited() {
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let agent = Agent::new(options(vec![said("one"), said("two")], &gates, &kept)).unwrap();
    let log = common::control::Log::default();
    let (open, gate) = futures::channel::oneshot::channel();
    let first = agent.subscribe(Rc::new(Named {
        name: "first",
        log: log.clone(),
        fail: false,
        wait: RefCell::new(Some(gate)),
    }));
    agent.subscribe(Rc::new(Named {
        name: "second",
        log: log.clone(),
        fail: true,
        wait: RefCell::new(None),
    }));
    let mut pool = LocalPool::new();
    let run = spawn(&mut pool, agent.prompt_text("hi"));
    assert_eq!(
        *log.borrow(),
        ["first:assistant_message", "second:assistant_message"],
        "both got the event; the run waits for the first's promise"
    );
    assert!(run.borrow().is_none());
    open.send(()).unwrap();
    pool.run_until_stalled();
    let result = run.borrow_mut().take().unwrap().unwrap();
    assert_eq!(
        *log.borrow(),
        [
            "first:assistant_message",
            "second:assistant_message",
            "first:resolved",
            "first:turn_end",
            "second:turn_end"
        ]
    );
    assert_eq!(result.observer_error.as_deref(), Some("second failed"));

    assert!(agent.unsubscribe(first));
    assert!(!agent.unsubscribe(first));
    log.borrow_mut().clear();
    block(agent.prompt_text("again")).unwrap();
    assert_eq!(
        *log.borrow(),
        ["second:assistant_message", "second:turn_end"]
    );
}

// ---------------------------------------------------------------------------------------------------------
// Sessions

#[test]
fn a_conversation_saved_as_jsonl_is_restored_and_a_paused_one_resumes() {
    let f = Fixture::new(vec![tool_use(vec![on("a", "read"), on("b", "delete")])]);
    block(f.agent.prompt_text("clean up")).unwrap();
    let saved = f.agent.to_jsonl();
    assert_eq!(saved.lines().count(), 2);

    // A new process: the same tools, a model that goes on from there.
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let restored = Agent::from_jsonl(&saved, options(vec![said("done")], &gates, &kept)).unwrap();
    assert_eq!(restored.state(), AgentState::Paused);
    assert_eq!(restored.messages(), f.agent.messages());
    assert_eq!(
        restored.pending(),
        f.agent.pending(),
        "the same calls, the same needs"
    );
    assert_eq!(restored.to_jsonl(), saved);

    let result = block(restored.resume(Approvals::new().deny("b", Some("no")))).unwrap();
    assert_eq!(
        (result.reason, result.steps),
        (RunReason::Stop, 1),
        "steps are not saved"
    );
    assert_eq!(*gates.started.borrow(), ["a"]);
    assert_eq!(restored.state(), AgentState::Idle);
}

#[test]
fn a_restored_transcript_must_be_whole_but_for_its_last_message() {
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let broken = concat!(
        r#"{"role":"user","content":"q","timestamp":1}"#,
        "\n",
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"a","name":"read","arguments":{}}],"stopReason":"toolUse","timestamp":2}"#,
        "\n",
        r#"{"role":"user","content":"more","timestamp":3}"#,
        "\n",
    );
    let error = Agent::from_jsonl(broken, options(vec![], &gates, &kept))
        .err()
        .unwrap();
    assert!(
        error
            .to_string()
            .starts_with("line 2: tool call \"a\" has no result"),
        "{error}"
    );
    let error = Agent::from_jsonl("{\"role\":\"user\"}\n", options(vec![], &gates, &kept))
        .err()
        .unwrap();
    assert_eq!(
        error,
        AgentError::Input("line 1: message.content is missing".into())
    );
}

#[test]
fn a_closure_is_a_listener() {
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let agent = Agent::new(options(vec![said("one")], &gates, &kept)).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    agent.subscribe(Rc::new(move |event: LoopEvent<'_, ModelEvent>| {
        log.borrow_mut()
            .push(matches!(event, LoopEvent::TurnEnd { .. }));
        Ok(None)
    }));
    block(agent.prompt_text("hi")).unwrap();
    let seen = seen.borrow();
    assert!(seen.len() > 1, "the run's events reach it");
    assert_eq!(
        (seen.iter().filter(|end| **end).count(), seen.last()),
        (1, Some(&true)),
        "one turn_end, the last"
    );
}

#[test]
fn read_input_takes_what_an_agent_may_be_prompted_with_and_names_the_roles_it_takes() {
    let note = json!({ "role": "note", "text": "away" });
    assert!(matches!(
        read_input(note.clone(), &["note".to_string()]),
        Ok(AgentMessage::Custom(_))
    ));
    assert_eq!(
        read_input(note, &[]).unwrap_err(),
        "role must be \"user\" (got \"note\"): only user messages and messages of a role in customRoles \
         may be prompted or queued"
    );
    let reply = json!({ "role": "assistant", "content": [], "stopReason": "stop", "timestamp": 1 });
    assert!(read_input(reply, &[])
        .unwrap_err()
        .message()
        .starts_with("role must be \"user\" (got \"assistant\")"));
    let user = json!({ "role": "user", "content": 5, "timestamp": 1 });
    assert_eq!(
        read_input(user, &[]).unwrap_err(),
        "content must be a string or an array (got integer)"
    );
}

#[test]
fn an_agent_its_options_and_registry_print_what_they_hold() {
    let (gates, kept) = (GatedTools::default(), Kept::default());
    let mut made = options(vec![said("one")], &gates, &kept);
    made.retry = Some(RetryPolicy {
        max_retries: 2,
        ..RetryPolicy::default()
    });
    let printed = format!("{made:?}");
    assert!(
        printed.starts_with("AgentOptions { tools: [")
            && printed.contains("retry: Some(RetryPolicy { max_retries: 2, base_delay_ms: 1000.0, max_delay_ms: 30000.0, should_retry: false })"),
        "{printed}"
    );
    let agent = Agent::new(made).unwrap();
    assert_eq!(
        format!("{agent:?}"),
        "Agent { state: Idle, steps: 0, messages: 0, .. }"
    );
    block(agent.prompt_text("hi")).unwrap();
    assert_eq!(
        format!("{agent:?}"),
        "Agent { state: Idle, steps: 1, messages: 2, .. }"
    );
    let printed = format!("{:?}", registry(&gates, &kept));
    assert!(printed.starts_with("[Tool { name: "), "{printed}");
    assert!(printed.contains("needs_approval: Never, .. }"), "{printed}");
}
