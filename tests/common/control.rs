//! Fixtures for SPEC §7 (loop control): hooks and queues that log into one timeline with the events, a
//! manual clock for timeouts (time moves only when a test says so), gated registry tools with settings,
//! and a driver that runs a loop by hand until it stalls.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::channel::oneshot;
use futures::task::{waker, ArcWake};
use serde_json::{json, Value};
use tiny_pi::*;

use super::{describe, Outcome};

/// Events and hook calls, in the order they happened: `tool_start:a`, `before:a`, `after:a`, `prepare:2`.
pub type Log = Rc<RefCell<Vec<String>>>;

/// Lines of `log` that start with one of `prefixes`.
pub fn lines(log: &Log, prefixes: &[&str]) -> Vec<String> {
    log.borrow()
        .iter()
        .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
        .cloned()
        .collect()
}

/// Logs every event (as `describe` writes it) into the shared timeline.
pub struct Timeline(pub Log);

impl Observer<ModelEvent> for Timeline {
    fn on_event(&self, event: LoopEvent<'_, ModelEvent>) -> Observed {
        self.0.borrow_mut().push(describe(&event));
        Ok(None)
    }
}

// ---- hooks from closures ----

/// What a hook closure sees of its context: the step, how many messages, whether the signal aborted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    pub step: u32,
    pub messages: usize,
    pub aborted: bool,
}

impl Seen {
    fn of(context: &HookContext<'_>) -> Self {
        Seen {
            step: context.step,
            messages: context.messages.len(),
            aborted: context.signal.aborted(),
        }
    }
}

type BeforeFn = dyn Fn(&ToolCall, Seen) -> Result<Option<Block>, String>;

/// `beforeToolCall` from a closure; logs `before:<id>`.
pub struct Before {
    log: Log,
    f: Box<BeforeFn>,
}

impl Before {
    pub fn new(
        log: &Log,
        f: impl Fn(&ToolCall, Seen) -> Result<Option<Block>, String> + 'static,
    ) -> Self {
        Before {
            log: log.clone(),
            f: Box::new(f),
        }
    }
}

impl BeforeToolCall for Before {
    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<Block>> {
        self.log.borrow_mut().push(format!("before:{}", call.id));
        let answer = (self.f)(call, Seen::of(&context));
        Box::pin(async move { answer })
    }
}

type AfterFn = dyn Fn(&ToolCall, &ToolResultMessage, Seen) -> Result<Option<ResultPatch>, String>;

/// `afterToolCall` from a closure; logs `after:<id>`.
pub struct After {
    log: Log,
    f: Box<AfterFn>,
}

impl After {
    pub fn new(
        log: &Log,
        f: impl Fn(&ToolCall, &ToolResultMessage, Seen) -> Result<Option<ResultPatch>, String> + 'static,
    ) -> Self {
        After {
            log: log.clone(),
            f: Box::new(f),
        }
    }
}

impl AfterToolCall for After {
    fn after_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        result: &'a ToolResultMessage,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<ResultPatch>> {
        self.log.borrow_mut().push(format!("after:{}", call.id));
        let answer = (self.f)(call, result, Seen::of(&context));
        Box::pin(async move { answer })
    }
}

type PrepareFn = dyn Fn(&ModelRequest<'_>, Seen) -> Result<Option<RequestPatch>, String>;

/// `prepareRequest` from a closure; logs `prepare:<step>`.
pub struct Prepare {
    log: Log,
    f: Box<PrepareFn>,
}

impl Prepare {
    pub fn new(
        log: &Log,
        f: impl Fn(&ModelRequest<'_>, Seen) -> Result<Option<RequestPatch>, String> + 'static,
    ) -> Self {
        Prepare {
            log: log.clone(),
            f: Box::new(f),
        }
    }
}

impl PrepareRequest for Prepare {
    fn prepare_request<'a>(
        &'a self,
        request: ModelRequest<'a>,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<RequestPatch>> {
        self.log
            .borrow_mut()
            .push(format!("prepare:{}", context.step));
        let answer = (self.f)(&request, Seen::of(&context));
        Box::pin(async move { answer })
    }
}

/// A queue that gives its batches one per ask (then nothing); logs `<name>?` at each ask.
pub struct Scripted {
    log: Log,
    name: &'static str,
    batches: RefCell<VecDeque<Result<Vec<AgentMessage>, String>>>,
}

impl Scripted {
    pub fn new(
        log: &Log,
        name: &'static str,
        batches: Vec<Result<Vec<AgentMessage>, String>>,
    ) -> Self {
        Scripted {
            log: log.clone(),
            name,
            batches: RefCell::new(batches.into()),
        }
    }

    /// How many times the loop asked.
    pub fn asked(&self) -> usize {
        let prefix = format!("{}?", self.name);
        self.log.borrow().iter().filter(|l| **l == prefix).count()
    }
}

impl MessageQueue for Scripted {
    fn take_messages(&self) -> HookFuture<'_, Vec<AgentMessage>> {
        self.log.borrow_mut().push(format!("{}?", self.name));
        let batch = self.batches.borrow_mut().pop_front().unwrap_or(Ok(vec![]));
        Box::pin(async move { batch })
    }
}

// ---- a manual clock ----

type Pending = (u64, u64, Box<dyn FnOnce()>);

/// Timers that fire only when the test advances the clock.
#[derive(Default)]
pub struct ManualClock(Rc<ClockState>);

#[derive(Default)]
pub struct ClockState {
    now: Cell<u64>,
    next_id: Cell<u64>,
    /// (deadline, id, callback)
    pending: RefCell<Vec<Pending>>,
    /// Every timeout asked for, in ms.
    pub asked: RefCell<Vec<u32>>,
}

impl ManualClock {
    /// Moves time on by `ms`, firing every timer that falls due, earliest first.
    pub fn advance(&self, ms: u64) {
        let target = self.0.now.get() + ms;
        loop {
            let due = {
                let mut pending = self.0.pending.borrow_mut();
                let earliest = (pending.iter().enumerate())
                    .filter(|(_, (deadline, ..))| *deadline <= target)
                    .min_by_key(|(_, (deadline, id, _))| (*deadline, *id))
                    .map(|(i, _)| i);
                earliest.map(|i| pending.remove(i))
            };
            let Some((deadline, _, fire)) = due else {
                break;
            };
            self.0.now.set(deadline);
            fire();
        }
        self.0.now.set(target);
    }

    /// Timers set and neither fired nor cleared.
    pub fn pending(&self) -> usize {
        self.0.pending.borrow().len()
    }

    pub fn asked(&self) -> Vec<u32> {
        self.0.asked.borrow().clone()
    }
}

struct Clear(Weak<ClockState>, u64);

impl Drop for Clear {
    fn drop(&mut self) {
        if let Some(state) = self.0.upgrade() {
            state
                .pending
                .borrow_mut()
                .retain(|(_, id, _)| *id != self.1);
        }
    }
}

impl Timers for ManualClock {
    fn sleep(&self, ms: u32) -> Sleep {
        Sleep::on_callback(|fire| {
            let id = self.0.next_id.get();
            self.0.next_id.set(id + 1);
            self.0.asked.borrow_mut().push(ms);
            let deadline = self.0.now.get() + u64::from(ms);
            self.0.pending.borrow_mut().push((deadline, id, fire));
            Registration::new(Clear(Rc::downgrade(&self.0), id))
        })
    }
}

// ---- registry tools with gates and settings ----

/// Registry tools whose calls wait on `gates` when a gate exists for their id (else answer
/// `<name> ok` at once). Each call's signal and progress sink are kept for the test to look at.
#[derive(Default, Clone)]
pub struct Kept {
    pub signals: Rc<RefCell<HashMap<String, AbortSignal>>>,
    pub sinks: Rc<RefCell<HashMap<String, ProgressSink>>>,
}

/// How a test tool is registered and what it answers.
#[derive(Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    pub mode: ExecutionMode,
    pub timeout_ms: Option<u32>,
    /// The tool's output asks the run to terminate.
    pub terminate: bool,
}

pub fn spec(name: &'static str) -> Spec {
    Spec {
        name,
        mode: ExecutionMode::Parallel,
        timeout_ms: None,
        terminate: false,
    }
}

/// A registry of gated tools (`{"path": string}` arguments required).
pub fn gated_registry(gates: &super::GatedTools, kept: &Kept, specs: &[Spec]) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for spec in specs {
        let (gates, kept, spec) = (gates.clone(), kept.clone(), *spec);
        let handler = move |_args: Value, ctx: ToolCallContext| {
            gates.started.borrow_mut().push(ctx.call_id.clone());
            kept.signals
                .borrow_mut()
                .insert(ctx.call_id.clone(), ctx.signal.clone());
            kept.sinks
                .borrow_mut()
                .insert(ctx.call_id.clone(), ctx.progress.clone());
            let gate = gates.gates.borrow_mut().remove(&ctx.call_id);
            async move {
                let outcome: Outcome = match gate {
                    Some(rx) => rx.await.map_err(|_| "gate dropped".to_string())?,
                    None => Ok(format!("{} ok", spec.name)),
                };
                outcome.map(|text| ToolOutput {
                    content: vec![MediaBlock::text(text)],
                    terminate: spec.terminate,
                    ..ToolOutput::default()
                })
            }
        };
        let mut tool = Tool::new(
            ToolDefinition {
                name: spec.name.into(),
                description: format!("{} tool", spec.name),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            },
            Rc::new(handler),
        );
        tool.execution_mode = spec.mode;
        tool.timeout_ms = spec.timeout_ms;
        registry.register(tool).unwrap();
    }
    registry
}

// ---- driving a run by hand ----

#[derive(Default)]
struct Flag(AtomicBool);

impl ArcWake for Flag {
    fn wake_by_ref(flag: &Arc<Self>) {
        flag.0.store(true, Ordering::SeqCst);
    }
}

/// A run polled by hand: `stall()` polls until nothing more can happen without the test (a gate, the
/// clock), so the test can look, act, and go on. No executor, so the run may borrow the test's fixtures.
pub struct Driver<'a> {
    future: Pin<Box<dyn Future<Output = RunResult> + 'a>>,
    woken: Arc<Flag>,
    result: Option<RunResult>,
}

impl<'a> Driver<'a> {
    pub fn new<M: Model + 'a>(options: LoopOptions<'a, M>) -> Self {
        let woken = Arc::new(Flag::default());
        woken.0.store(true, Ordering::SeqCst);
        Driver {
            future: Box::pin(async { run_agent_loop(options).await.expect("a whole transcript") }),
            woken,
            result: None,
        }
    }

    /// Polls until the run finishes or waits on something only the test can move.
    pub fn stall(&mut self) -> bool {
        let waker = waker(self.woken.clone());
        while self.result.is_none() && self.woken.0.swap(false, Ordering::SeqCst) {
            if let Poll::Ready(result) = self.future.as_mut().poll(&mut Context::from_waker(&waker))
            {
                self.result = Some(result);
            }
        }
        self.result.is_some()
    }

    pub fn finished(&self) -> bool {
        self.result.is_some()
    }

    /// Stalls, and expects the run to have finished.
    pub fn result(mut self) -> RunResult {
        self.stall();
        self.result.expect("the run is still waiting")
    }
}

/// A gate that resolves when opened, for hooks that must wait.
pub fn gate() -> (oneshot::Sender<()>, oneshot::Receiver<()>) {
    oneshot::channel()
}
