//! Runs one plan for real: a test model whose streams may block on gates, throw, end early, or honour the
//! signal; executors whose calls block on gates; an observer that records every event (and may throw,
//! reject, or make the loop wait); hooks and queues that answer as planned (and may wait on gates); timers
//! on a clock only the driver moves. Nothing sleeps: the driver runs the pool until it stalls, then opens
//! one gate or fires the next timer, as the plan chooses, and again, until the run has finished.
//!
//! Everything the loop does lands in one timeline (events, requests, hook calls, need asks, executions,
//! progress, timers, the abort), so the oracle can tell what the loop knew at each point.
//!
//! A run may also be resumed (SPEC §8): every time it pauses, the driver runs it again from its transcript
//! with the decisions about the pending calls, in the same world, until it ends otherwise.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::channel::oneshot;
use futures::executor::LocalPool;
use futures::future::{self, Either, LocalBoxFuture};
use futures::task::LocalSpawnExt;
use futures::FutureExt;
use serde_json::{json, Value};
use tiny_pi::*;

use super::plan::*;

/// An owned copy of a `LoopEvent`, in the order the observer got it.
#[derive(Debug, Clone, PartialEq)]
pub enum Ev {
    Model(ModelEvent),
    Assistant(AssistantMessage),
    ToolStart(ToolCall),
    Progress(String, Vec<MediaBlock>),
    ToolEnd(ToolResultMessage),
    Skipped(ToolResultMessage),
    Queued(AgentMessage, Queue),
    Retry(u32, f64, String),
    Compaction(CompactionEntry),
    TurnEnd(RunReason, u32),
}

impl Ev {
    /// A short label for failure messages: `tool_end:call-0-1`.
    pub fn label(&self) -> String {
        match self {
            Ev::Model(e) => format!(
                "model:{}",
                serde_json::to_value(e).unwrap()["type"].as_str().unwrap()
            ),
            Ev::Assistant(m) => format!("assistant:{}", m.stop_reason.as_str()),
            Ev::ToolStart(c) => format!("tool_start:{}", c.id),
            Ev::Progress(id, _) => format!("tool_progress:{id}"),
            Ev::ToolEnd(r) => format!("tool_end:{}", r.tool_call_id),
            Ev::Skipped(r) => format!("tool_skipped:{}", r.tool_call_id),
            Ev::Queued(m, q) => format!("queued_message:{}:{}", q.as_str(), m.role()),
            Ev::Retry(attempt, delay, _) => format!("retry:{attempt}:{delay}"),
            Ev::Compaction(e) => format!("compaction:{}", e.first_kept_index),
            Ev::TurnEnd(reason, steps) => format!("turn_end:{reason:?}:{steps}"),
        }
    }
}

/// One request as the model saw it, and what the model did with it.
#[derive(Debug, Clone)]
pub struct RequestLog {
    pub system_prompt: Option<String>,
    pub messages: Vec<AgentMessage>,
    pub tools: Vec<ToolDefinition>,
    /// Whether the signal was already aborted when the request was made (it never may be).
    pub signal_aborted: bool,
    /// Every event the stream yielded, in order.
    pub emitted: Vec<ModelEvent>,
    /// The final message the model delivered (from `result()`, or its terminal event without one).
    pub delivered: Option<AssistantMessage>,
    /// The error the model threw, if it threw.
    pub thrown: Option<String>,
    /// Where the request said its messages come from in the transcript.
    pub sources: SourcesLog,
}

/// `ModelRequest::sources`, owned.
#[derive(Debug, Clone, PartialEq)]
pub enum SourcesLog {
    Transcript,
    Picked(Vec<usize>),
    Summarized(Vec<usize>),
    Other,
}

impl SourcesLog {
    pub fn of(sources: Sources<'_>) -> Self {
        match sources {
            Sources::Transcript => SourcesLog::Transcript,
            Sources::Picked(at) => SourcesLog::Picked(at.to_vec()),
            Sources::Summarized(at) => SourcesLog::Summarized(at.to_vec()),
            Sources::Other => SourcesLog::Other,
        }
    }
}

/// One tool execution: the call, what it reported, what it answered.
#[derive(Debug, Clone)]
pub struct Execution {
    pub call: ToolCall,
    pub progress_sent: usize,
    pub handler_ran: bool,
    /// `None` while running, and for good when the call timed out and its future was dropped (a parallel
    /// batch's); a sequential batch's timed-out call may settle later (`Entry::ExecEnd` after its timer fired).
    pub reply: Option<Result<ToolReply, String>>,
    /// The signal the executor was handed.
    pub signal: AbortSignal,
}

/// One call of `beforeToolCall`: what it was shown and what it answered.
#[derive(Debug, Clone)]
pub struct BeforeLog {
    pub call: ToolCall,
    pub step: u32,
    pub messages: usize,
    /// The hook's signal, and the run's, when it was called.
    pub signal_aborted: bool,
    pub run_aborted: bool,
    pub answer: Result<Option<Block>, String>,
}

/// One call of `afterToolCall`.
#[derive(Debug, Clone)]
pub struct AfterLog {
    pub call: ToolCall,
    pub result: ToolResultMessage,
    pub step: u32,
    pub messages: usize,
    pub signal_aborted: bool,
    pub run_aborted: bool,
    pub answer: Result<Option<ResultPatch>, String>,
}

/// One call of `prepareRequest`.
#[derive(Debug, Clone)]
pub struct PrepareLog {
    pub system_prompt: Option<String>,
    pub request: Vec<AgentMessage>,
    pub tools: Vec<ToolDefinition>,
    pub context: Vec<AgentMessage>,
    pub step: u32,
    pub answer: Result<Option<RequestPatch>, String>,
}

/// One ask of a tool's `needsApproval` function (SPEC §8).
#[derive(Debug, Clone)]
pub struct NeedLog {
    pub tool: &'static str,
    pub arguments: Value,
    pub answer: Result<bool, String>,
}

/// One call of `summarize` (SPEC §13): what it was given, what it answered.
#[derive(Debug, Clone)]
pub struct SummarizeLog {
    pub messages: Vec<AgentMessage>,
    pub answer: Result<String, String>,
}

/// One ask of `shouldRetry` (SPEC §12).
#[derive(Debug, Clone)]
pub struct RetryAskLog {
    pub error: String,
    pub message: Option<AssistantMessage>,
    pub attempt: u32,
    pub answer: Result<bool, String>,
}

/// One ask of a queue.
#[derive(Debug, Clone)]
pub struct AskLog {
    pub queue: Queue,
    pub answer: Result<Vec<AgentMessage>, String>,
}

/// One timer the loop set: its timeout, and when it is due on the driver's clock.
pub struct TimerLog {
    pub ms: u32,
    due: u64,
    fire: Option<Box<dyn FnOnce()>>,
}

/// A point in the run's one shared timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Entry {
    /// `events[n]` was emitted.
    Event(usize),
    /// `executions[n]` began.
    ExecStart(usize),
    /// `executions[n]`'s future was first polled: its tool began to run.
    Began(usize),
    /// `executions[n]` settled (its reply or rejection was recorded).
    ExecEnd(usize),
    /// The model was asked for `requests[n]`.
    Request(usize),
    /// `befores[n]`, `afters[n]`, `prepares[n]`, `asks[n]`, `needs[n]` were called.
    Before(usize),
    After(usize),
    Prepare(usize),
    Ask(usize),
    Need(usize),
    /// `summaries[n]`, `retry_asks[n]` were called.
    Summarize(usize),
    ShouldRetry(usize),
    /// `executions[n]` reported progress (late reports are not counted).
    ProgressSent(usize),
    /// `timers[n]` was set, fired, cleared.
    TimerSet(usize),
    TimerFired(usize),
    TimerCleared(usize),
    /// The run's signal aborted.
    Abort,
}

impl Entry {
    /// Whether this is something the loop did (rather than a tool, a timer or the driver).
    pub fn is_action(self) -> bool {
        matches!(
            self,
            Entry::Event(_)
                | Entry::Request(_)
                | Entry::Before(_)
                | Entry::After(_)
                | Entry::Prepare(_)
                | Entry::Ask(_)
                | Entry::Need(_)
                | Entry::Summarize(_)
                | Entry::ShouldRetry(_)
        )
    }
}

#[derive(Default)]
pub struct World {
    gates: RefCell<Vec<(String, oneshot::Sender<()>)>>,
    pub requests: RefCell<Vec<RequestLog>>,
    pub events: RefCell<Vec<Ev>>,
    pub timeline: RefCell<Vec<Entry>>,
    pub executions: RefCell<Vec<Execution>>,
    pub observer_errors: RefCell<Vec<String>>,
    /// The signal's state when `turn_end` was emitted (before any abort the observer does then).
    pub aborted_at_end: Cell<Option<bool>>,
    pub controller: AbortController,
    pub stalls: Cell<usize>,
    /// Streams and tools that ended early because the signal they were handed aborted.
    pub honoured_aborts: Cell<usize>,
    pub late_progress_calls: Cell<usize>,
    /// Progress callbacks kept by tools that have finished; the driver calls them at the next stall.
    late_progress: RefCell<Vec<(String, ProgressSink)>>,
    clock: Cell<f64>,
    pub befores: RefCell<Vec<BeforeLog>>,
    pub afters: RefCell<Vec<AfterLog>>,
    pub prepares: RefCell<Vec<PrepareLog>>,
    pub asks: RefCell<Vec<AskLog>>,
    pub timers: RefCell<Vec<TimerLog>>,
    /// The driver's clock for timers, in ms.
    timer_clock: Cell<u64>,
    /// Each execution's progress sink, as the executor was handed it.
    sinks: RefCell<Vec<ProgressSink>>,
    pub needs: RefCell<Vec<NeedLog>>,
    pub summaries: RefCell<Vec<SummarizeLog>>,
    pub retry_asks: RefCell<Vec<RetryAskLog>>,
    /// Resuming runs: a paused run's `turn_end` is counted here, not logged as an event (so that the
    /// events of a run paused and resumed line up with those of the same run never paused).
    resuming: Cell<bool>,
    pub pauses: Cell<usize>,
    /// What the events said each appended message is, and where it goes (`index`).
    pub appended: RefCell<Vec<(usize, AgentMessage)>>,
    /// The ids of the calls the driver gave a decision about when it resumed a pause.
    pub decided_at_pauses: RefCell<Vec<String>>,
}

impl World {
    fn entry(&self, entry: Entry) {
        self.timeline.borrow_mut().push(entry);
    }

    /// Aborts the run's signal (once), marking the timeline.
    fn abort(&self) {
        if !self.controller.signal().aborted() {
            self.entry(Entry::Abort);
            self.controller.abort();
        }
    }

    /// Fires the timer due first, moving the clock to it. `false` when none is pending.
    fn fire_next_timer(&self) -> bool {
        let next = (self.timers.borrow().iter().enumerate())
            .filter(|(_, t)| t.fire.is_some())
            .min_by_key(|(i, t)| (t.due, *i))
            .map(|(i, _)| i);
        let Some(index) = next else {
            return false;
        };
        let fire = {
            let mut timers = self.timers.borrow_mut();
            self.timer_clock
                .set(self.timer_clock.get().max(timers[index].due));
            timers[index].fire.take().unwrap()
        };
        self.entry(Entry::TimerFired(index));
        fire();
        // Every call still running reports, from outside the loop's polls (a JS tool's own timer): the
        // loop must drop what the call that just timed out reports from now on.
        let sinks = self.sinks.borrow();
        let running: Vec<(usize, String, ProgressSink)> = (self.executions.borrow().iter())
            .enumerate()
            .filter(|(_, e)| e.reply.is_none())
            .map(|(i, e)| (i, e.call.id.clone(), sinks[i].clone()))
            .collect();
        drop(sinks);
        for (i, id, sink) in running {
            self.entry(Entry::ProgressSent(i));
            sink(vec![MediaBlock::text(format!("{id} outside"))]);
        }
        true
    }

    fn timers_pending(&self) -> bool {
        self.timers.borrow().iter().any(|t| t.fire.is_some())
    }

    /// A gate: the returned receiver resolves when the driver opens it.
    fn gate(&self, label: String) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.gates.borrow_mut().push((label, tx));
        rx
    }

    /// Waits on a new gate, or (when `signal` is given) until the signal aborts. `true` when aborted first.
    async fn wait(&self, label: String, signal: Option<&AbortSignal>) -> bool {
        let rx = self.gate(label);
        match signal {
            None => {
                let _ = rx.await;
                false
            }
            Some(signal) => match future::select(rx, signal.cancelled()).await {
                Either::Left(_) => false,
                Either::Right(_) => true,
            },
        }
    }
}

// ---- the model ----

pub struct TestModel {
    world: Rc<World>,
    responses: Vec<ResponsePlan>,
}

enum Item {
    Event(ModelEvent),
    Throw,
}

pub struct TestStream {
    world: Rc<World>,
    index: usize,
    plan: ResponsePlan,
    items: Vec<Item>,
    position: usize,
    finished: bool,
    signal: AbortSignal,
    /// Set when the stream honoured an abort: the message it ended with instead of the script's.
    aborted_message: Option<AssistantMessage>,
}

impl Model for TestModel {
    type Stream = TestStream;

    fn stream(
        &self,
        request: ModelRequest<'_>,
        signal: &AbortSignal,
    ) -> Result<TestStream, String> {
        let index = self.world.requests.borrow().len();
        self.world.entry(Entry::Request(index));
        let mut log = RequestLog {
            system_prompt: request.system_prompt.map(str::to_owned),
            messages: request.messages.to_vec(),
            tools: request.tools.to_vec(),
            signal_aborted: signal.aborted(),
            sources: SourcesLog::of(request.sources),
            emitted: Vec::new(),
            delivered: None,
            thrown: None,
        };
        let plan = match self.responses.get(index) {
            Some(plan) if plan.shape != Shape::ThrowOnOpen => plan.clone(),
            found => {
                let error = match found {
                    Some(_) => format!("model threw opening request {}", index + 1),
                    None => format!("script exhausted at request {}", index + 1),
                };
                log.thrown = Some(error.clone());
                self.world.requests.borrow_mut().push(log);
                return Err(error);
            }
        };
        self.world.requests.borrow_mut().push(log);
        let mut events = ModelEvent::script(&plan.message);
        if plan.has_result {
            // With `result()`, the terminal event's copy is not the final message: the loop must take
            // `result()`'s. Marking the copy shows which one it appended.
            if let Some(
                ModelEvent::Done { message, .. } | ModelEvent::Error { error: message, .. },
            ) = events.last_mut()
            {
                message
                    .extra
                    .insert("copyInTerminalEvent".into(), json!(true));
            }
        }
        let items = match plan.shape {
            Shape::EndEarly(n) => events
                .into_iter()
                .take(n % plan_len(&plan))
                .map(Item::Event)
                .collect(),
            Shape::Throw(n) => {
                let mut items: Vec<Item> = events
                    .into_iter()
                    .take(n % plan_len(&plan))
                    .map(Item::Event)
                    .collect();
                items.push(Item::Throw);
                items
            }
            _ => events.into_iter().map(Item::Event).collect(),
        };
        Ok(TestStream {
            world: self.world.clone(),
            index,
            plan,
            items,
            position: 0,
            finished: false,
            signal: signal.clone(),
            aborted_message: None,
        })
    }
}

fn plan_len(plan: &ResponsePlan) -> usize {
    ModelEvent::script(&plan.message).len()
}

impl TestStream {
    fn record(&self, f: impl FnOnce(&mut RequestLog)) {
        f(&mut self.world.requests.borrow_mut()[self.index]);
    }

    /// A stream that honours the signal ends with pi-ai's `error` event, stopReason `aborted`.
    fn end_aborted(&mut self) -> Option<Result<ModelEvent, String>> {
        self.world
            .honoured_aborts
            .set(self.world.honoured_aborts.get() + 1);
        self.finished = true;
        let mut message = self.plan.message.clone();
        message.stop_reason = StopReason::Aborted;
        message.error_message = Some("Request was aborted".into());
        let event = ModelEvent::Error {
            reason: StopReason::Aborted,
            error: message.clone(),
        };
        let has_result = self.plan.has_result;
        self.record(|log| {
            log.emitted.push(event.clone());
            if !has_result {
                log.delivered = Some(message.clone());
            }
        });
        self.aborted_message = Some(message);
        Some(Ok(event))
    }
}

impl ModelStream for TestStream {
    type Event = ModelEvent;

    async fn next(&mut self) -> Option<Result<ModelEvent, String>> {
        if self.finished {
            return None;
        }
        let honours = self.plan.honours_abort.then(|| self.signal.clone());
        if honours.as_ref().is_some_and(AbortSignal::aborted) {
            return self.end_aborted();
        }
        if self.position >= self.items.len() {
            self.finished = true;
            return None;
        }
        if self.plan.gates[self.position % self.plan.gates.len()] {
            let label = format!("stream r{} event {}", self.index, self.position);
            if self.world.wait(label, honours.as_ref()).await {
                return self.end_aborted();
            }
        }
        let position = self.position;
        self.position += 1;
        match &self.items[position] {
            Item::Event(event) => {
                let event = event.clone();
                let has_result = self.plan.has_result;
                self.record(|log| {
                    log.emitted.push(event.clone());
                    if !has_result {
                        if let ModelEvent::Done { message, .. }
                        | ModelEvent::Error { error: message, .. } = &event
                        {
                            log.delivered = Some(message.clone());
                        }
                    }
                });
                Some(Ok(event))
            }
            Item::Throw => {
                self.finished = true;
                let error = format!(
                    "stream broke at event {position} of request {}",
                    self.index + 1
                );
                self.record(|log| log.thrown = Some(error.clone()));
                Some(Err(error))
            }
        }
    }

    fn has_result(&self) -> bool {
        self.plan.has_result
    }

    async fn result(&mut self) -> Result<AssistantMessage, String> {
        assert!(
            self.plan.has_result,
            "result() called on a stream without one"
        );
        if self.plan.gate_result {
            self.world
                .wait(format!("result r{}", self.index), None)
                .await;
        }
        if self.plan.result_rejects {
            let error = format!("result() rejected for request {}", self.index + 1);
            self.record(|log| log.thrown = Some(error.clone()));
            return Err(error);
        }
        let message = self
            .aborted_message
            .clone()
            .unwrap_or_else(|| self.plan.message.clone());
        self.record(|log| log.delivered = Some(message.clone()));
        Ok(message)
    }
}

// ---- the tools ----

/// The body every tool execution shares: progress, an optional gate, then the planned outcome.
/// `Ok((content, is_error))` or `Err(message)` (a rejection / a tool that threw).
async fn tool_body(
    world: Rc<World>,
    index: usize,
    plan: Outcome,
    signal: AbortSignal,
    progress: ProgressSink,
) -> Result<(Vec<MediaBlock>, bool), String> {
    let id = world.executions.borrow()[index].call.id.clone();
    let report = |when: &str| {
        world.executions.borrow_mut()[index].progress_sent += 1;
        world.entry(Entry::ProgressSent(index));
        progress(vec![MediaBlock::text(format!("{id} {when}"))]);
    };
    if plan.progress_at_start {
        report("starting");
    }
    if plan.gated {
        let honours = plan.honours_abort.then_some(&signal);
        if world
            .wait(format!("tool {id} (execution {index})"), honours)
            .await
        {
            world.honoured_aborts.set(world.honoured_aborts.get() + 1);
            return Ok((vec![MediaBlock::text(format!("{id} aborted"))], true));
        }
    }
    if plan.progress_at_end {
        report("finishing");
    }
    if plan.late_progress {
        world
            .late_progress
            .borrow_mut()
            .push((id.clone(), progress.clone()));
    }
    match plan.kind {
        OutcomeKind::Answer => Ok((vec![MediaBlock::text(format!("{id} answered"))], false)),
        OutcomeKind::ErrorResult => Ok((vec![MediaBlock::text(format!("{id} failed"))], true)),
        OutcomeKind::Reject => Err(format!("{id} rejected")),
    }
}

/// The executor the loop gets: logs each execution, then runs it through the registry or as a caller's
/// custom executor.
pub struct Executor {
    world: Rc<World>,
    registry: ToolRegistry,
    kind: ExecutorKind,
    outcomes: Vec<Outcome>,
}

impl ToolExecutor for Executor {
    fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        context: ExecutionContext,
    ) -> LocalBoxFuture<'a, Result<ToolReply, String>> {
        let index = {
            let mut executions = self.world.executions.borrow_mut();
            executions.push(Execution {
                call: call.clone(),
                progress_sent: 0,
                handler_ran: false,
                reply: None,
                signal: context.signal.clone(),
            });
            self.world.sinks.borrow_mut().push(context.progress.clone());
            executions.len() - 1
        };
        self.world
            .timeline
            .borrow_mut()
            .push(Entry::ExecStart(index));
        let plan = self.outcomes[index % self.outcomes.len()].clone();
        let world = self.world.clone();
        async move {
            world.entry(Entry::Began(index));
            let reply = match self.kind {
                ExecutorKind::Registry => {
                    <ToolRegistry as ToolExecutor>::execute(&self.registry, call, context).await
                }
                ExecutorKind::Custom => {
                    let body = tool_body(
                        world.clone(),
                        index,
                        plan.clone(),
                        context.signal.clone(),
                        context.progress.clone(),
                    );
                    body.await.map(|(content, is_error)| {
                        let mut extra = serde_json::Map::new();
                        if plan.forged_id {
                            extra.insert("toolCallId".into(), json!("forged"));
                            extra.insert("toolName".into(), json!("forged"));
                        }
                        extra.insert("custom".into(), json!(index));
                        ToolReply {
                            content,
                            details: Some(json!({"execution": index})),
                            is_error,
                            timestamp: plan.reply_timestamp.then_some(7.0),
                            extra: extra.into(),
                            terminate: plan.terminate,
                        }
                    })
                }
            };
            world.executions.borrow_mut()[index].reply = Some(reply.clone());
            world.entry(Entry::ExecEnd(index));
            reply
        }
        .boxed_local()
    }

    /// The registry's settings and refusals; a custom executor keeps the defaults.
    fn settings(&self, call: &ToolCall) -> CallSettings {
        match self.kind {
            ExecutorKind::Registry => self.registry.settings(call),
            ExecutorKind::Custom => CallSettings::default(),
        }
    }

    fn refuses(&self, call: &ToolCall) -> bool {
        match self.kind {
            ExecutorKind::Registry => self.registry.refuses(call),
            ExecutorKind::Custom => false,
        }
    }

    /// The registry's (asked only for calls it accepts); a custom executor asks the tool's need for any
    /// call to a tool the registry knows, whatever its arguments.
    fn needs_approval<'a>(&'a self, call: &'a ToolCall) -> Option<HookFuture<'a, bool>> {
        match self.kind {
            ExecutorKind::Registry => self.registry.needs_approval(call),
            ExecutorKind::Custom => match &self.registry.get(&call.name)?.needs_approval {
                NeedsApproval::Never => None,
                NeedsApproval::Always => Some(Box::pin(async { Ok(true) })),
                NeedsApproval::Ask(check) => Some(check.needs_approval(call.arguments_or_empty())),
            },
        }
    }
}

/// A `needsApproval` function as the plan has it (`NeedPlan::ByPath`), logging each ask.
struct NeedCheck {
    world: Rc<World>,
    tool: &'static str,
    later: bool,
    throws: bool,
}

impl ApprovalCheck for NeedCheck {
    fn needs_approval<'a>(&'a self, arguments: &'a Value) -> HookFuture<'a, bool> {
        let answer = match self.throws {
            true => Err(format!("needsApproval of {} failed", self.tool)),
            false => Ok(has_path(arguments)),
        };
        let n = {
            let mut needs = self.world.needs.borrow_mut();
            needs.push(NeedLog {
                tool: self.tool,
                arguments: arguments.clone(),
                answer: answer.clone(),
            });
            needs.len() - 1
        };
        self.world.entry(Entry::Need(n));
        let later = self.later;
        Box::pin(async move {
            if later {
                YieldOnce(false).await;
            }
            answer
        })
    }
}

/// Ready at its second poll, having woken itself: an answer that comes later without anyone's help.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

fn registry(world: &Rc<World>, outcomes: &[Outcome], control: &ControlPlan) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for definition in definitions() {
        let (owner, world, outcomes) = (world, world.clone(), outcomes.to_vec());
        let handler = move |_arguments: Value, context: ToolCallContext| {
            // The execution this call belongs to: the latest one with its id (ids are unique in a batch).
            let index = {
                let mut executions = world.executions.borrow_mut();
                let index = executions
                    .iter()
                    .rposition(|e| e.call.id == context.call_id)
                    .expect("handler for an unknown execution");
                executions[index].handler_ran = true;
                index
            };
            let plan = outcomes[index % outcomes.len()].clone();
            let terminate = plan.terminate;
            tool_body(world.clone(), index, plan, context.signal, context.progress).map(move |r| {
                r.map(|(content, is_error)| ToolOutput {
                    content,
                    is_error,
                    details: None,
                    terminate,
                })
            })
        };
        let (execution_mode, timeout_ms) = control.tool_settings(&definition.name);
        let name = TOOL_NAMES[..3]
            .iter()
            .find(|n| **n == definition.name)
            .expect("a tool of the plan");
        let need = (control.approval.as_ref()).map_or(NeedPlan::Never, |a| a.need_of(name));
        let mut tool = Tool::new(definition, Rc::new(handler));
        tool.execution_mode = execution_mode;
        tool.timeout_ms = timeout_ms;
        tool.needs_approval = match need {
            NeedPlan::Never => NeedsApproval::Never,
            NeedPlan::Always => NeedsApproval::Always,
            NeedPlan::ByPath { later, throws } => NeedsApproval::Ask(Rc::new(NeedCheck {
                world: owner.clone(),
                tool: name,
                later,
                throws,
            })),
        };
        registry.register(tool).expect("test tool registers");
    }
    registry
}

// ---- the observer ----

pub struct Recorder {
    world: Rc<World>,
    moves: Vec<ObserverMove>,
    abort_at: Option<usize>,
}

impl Observer<ModelEvent> for Recorder {
    fn on_event(
        &self,
        event: LoopEvent<'_, ModelEvent>,
    ) -> Result<Option<LocalBoxFuture<'static, Result<(), String>>>, String> {
        let announced = match event {
            LoopEvent::AssistantMessage { message, index } => {
                Some((index, AgentMessage::Assistant(message.clone())))
            }
            LoopEvent::ToolEnd { result, index } | LoopEvent::ToolSkipped { result, index } => {
                Some((index, AgentMessage::ToolResult(result.clone())))
            }
            LoopEvent::QueuedMessage { message, index, .. } => Some((index, message.clone())),
            LoopEvent::Compaction { entry, index } => {
                Some((index, AgentMessage::Compaction(entry.clone())))
            }
            _ => None,
        };
        self.world.appended.borrow_mut().extend(announced);
        let owned = match event {
            LoopEvent::ModelEvent { event } => Ev::Model(event.clone()),
            LoopEvent::AssistantMessage { message, .. } => Ev::Assistant(message.clone()),
            LoopEvent::ToolStart { call } => Ev::ToolStart(call.clone()),
            LoopEvent::ToolProgress { call_id, content } => {
                Ev::Progress(call_id.to_owned(), content.to_vec())
            }
            LoopEvent::ToolEnd { result, .. } => Ev::ToolEnd(result.clone()),
            LoopEvent::ToolSkipped { result, .. } => Ev::Skipped(result.clone()),
            LoopEvent::QueuedMessage { message, queue, .. } => Ev::Queued(message.clone(), queue),
            LoopEvent::Retry {
                attempt,
                delay_ms,
                error,
            } => Ev::Retry(attempt, delay_ms, error.to_owned()),
            LoopEvent::Compaction { entry, .. } => Ev::Compaction(entry.clone()),
            LoopEvent::TurnEnd {
                reason: RunReason::Paused,
                ..
            } if self.world.resuming.get() => {
                self.world.pauses.set(self.world.pauses.get() + 1);
                return Ok(None);
            }
            LoopEvent::TurnEnd { reason, steps } => {
                self.world
                    .aborted_at_end
                    .set(Some(self.world.controller.signal().aborted()));
                Ev::TurnEnd(reason, steps)
            }
        };
        let n = {
            let mut events = self.world.events.borrow_mut();
            events.push(owned);
            events.len() - 1
        };
        self.world.timeline.borrow_mut().push(Entry::Event(n));
        if self.abort_at == Some(n) {
            self.world.abort();
        }
        let error = || {
            let error = format!("observer failed on event {n}");
            self.world.observer_errors.borrow_mut().push(error.clone());
            error
        };
        match self.moves[n % self.moves.len()] {
            ObserverMove::Plain => Ok(None),
            ObserverMove::AwaitReady => Ok(Some(async { Ok(()) }.boxed_local())),
            ObserverMove::Throw => Err(error()),
            ObserverMove::RejectLater => {
                let error = error();
                Ok(Some(async move { Err(error) }.boxed_local()))
            }
            ObserverMove::AwaitGate => {
                let rx = self.world.gate(format!("observer event {n}"));
                Ok(Some(
                    async move {
                        let _ = rx.await;
                        Ok(())
                    }
                    .boxed_local(),
                ))
            }
        }
    }
}

// ---- loop control ----

/// SPEC §7's hooks, answering as the plan says and logging each call in the timeline.
pub struct Hooks {
    world: Rc<World>,
    plan: ControlPlan,
}

/// The n-th move of `moves`, for the hook called `n` times before.
fn nth<T: Copy>(moves: &Option<Vec<T>>, n: usize) -> T {
    let moves = moves.as_ref().expect("a hook the plan has");
    moves[n % moves.len()]
}

/// `answer`, once the gate (if any) is open.
fn answer_after<T: 'static>(
    gate: Option<oneshot::Receiver<()>>,
    answer: Result<T, String>,
) -> HookFuture<'static, T> {
    async move {
        if let Some(gate) = gate {
            let _ = gate.await;
        }
        answer
    }
    .boxed_local()
}

impl BeforeToolCall for Hooks {
    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<Block>> {
        let n = self.world.befores.borrow().len();
        let next = nth(&self.plan.before, n);
        let answer = match next {
            BeforeMove::Allow | BeforeMove::Gate => Ok(None),
            BeforeMove::Block { reason } => Ok(Some(Block {
                reason: reason.then(|| format!("blocked {}", call.id)),
            })),
            BeforeMove::Throw => Err(format!("before failed for {}", call.id)),
        };
        self.world.befores.borrow_mut().push(BeforeLog {
            call: call.clone(),
            step: context.step,
            messages: context.messages.len(),
            signal_aborted: context.signal.aborted(),
            run_aborted: self.world.controller.signal().aborted(),
            answer: answer.clone(),
        });
        self.world.entry(Entry::Before(n));
        let gate = (next == BeforeMove::Gate).then(|| self.world.gate(format!("before {n}")));
        answer_after(gate, answer)
    }
}

impl AfterToolCall for Hooks {
    fn after_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        result: &'a ToolResultMessage,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<ResultPatch>> {
        let n = self.world.afters.borrow().len();
        let next = nth(&self.plan.after, n);
        let answer = match next {
            AfterMove::Keep | AfterMove::Gate => Ok(None),
            AfterMove::Patch => Ok(Some(ResultPatch {
                content: Some(vec![MediaBlock::text(format!("{} patched", call.id))]),
                details: Some(json!({"patched": n})),
                is_error: Some(n % 2 == 0),
                terminate: None,
            })),
            AfterMove::Terminate(flag) => Ok(Some(ResultPatch {
                terminate: Some(flag),
                ..ResultPatch::default()
            })),
            AfterMove::Throw => Err(format!("after failed for {}", call.id)),
        };
        self.world.afters.borrow_mut().push(AfterLog {
            call: call.clone(),
            result: result.clone(),
            step: context.step,
            messages: context.messages.len(),
            signal_aborted: context.signal.aborted(),
            run_aborted: self.world.controller.signal().aborted(),
            answer: answer.clone(),
        });
        self.world.entry(Entry::After(n));
        let gate = (next == AfterMove::Gate).then(|| self.world.gate(format!("after {n}")));
        answer_after(gate, answer)
    }
}

/// The result no call asked for that `PrepareMove::Orphan` sends.
pub fn orphan() -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: "orphan".into(),
        tool_name: "alpha".into(),
        content: vec![MediaBlock::text("from nowhere")],
        details: None,
        is_error: false,
        timestamp: 0.0,
        extra: Default::default(),
    })
}

impl PrepareRequest for Hooks {
    fn prepare_request<'a>(
        &'a self,
        request: ModelRequest<'a>,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<RequestPatch>> {
        let n = self.world.prepares.borrow().len();
        let next = nth(&self.plan.prepare, n);
        let step = context.step;
        let with = |extra: AgentMessage| {
            let mut messages = request.messages.to_vec();
            messages.push(extra);
            messages
        };
        let answer = match next {
            PrepareMove::Keep | PrepareMove::Gate => Ok(None),
            PrepareMove::SystemPrompt => Ok(Some(RequestPatch {
                system_prompt: Some(format!("patched prompt {step}")),
                ..RequestPatch::default()
            })),
            PrepareMove::Remind => Ok(Some(RequestPatch {
                messages: Some(with(AgentMessage::user(format!("reminder {step}"), 0.5))),
                tools: Some(vec![]),
                ..RequestPatch::default()
            })),
            PrepareMove::Orphan => Ok(Some(RequestPatch {
                messages: Some(with(orphan())),
                ..RequestPatch::default()
            })),
            PrepareMove::Whole => Ok(Some(RequestPatch {
                messages: Some(context.messages.to_vec()),
                ..RequestPatch::default()
            })),
            PrepareMove::Throw => Err(format!("prepare failed at step {step}")),
        };
        self.world.prepares.borrow_mut().push(PrepareLog {
            system_prompt: request.system_prompt.map(str::to_owned),
            request: request.messages.to_vec(),
            tools: request.tools.to_vec(),
            context: context.messages.to_vec(),
            step,
            answer: answer.clone(),
        });
        self.world.entry(Entry::Prepare(n));
        let gate = (next == PrepareMove::Gate).then(|| self.world.gate(format!("prepare {n}")));
        answer_after(gate, answer)
    }
}

/// `summarize` as the plan has it, logging each call.
pub struct Summarizer {
    world: Rc<World>,
    moves: Vec<SummarizeMove>,
}

impl Summarize for Summarizer {
    fn summarize<'a>(
        &'a self,
        messages: &'a [AgentMessage],
        _signal: &'a AbortSignal,
    ) -> HookFuture<'a, String> {
        let n = self.world.summaries.borrow().len();
        let next = self.moves[n % self.moves.len()];
        let answer = match next {
            SummarizeMove::Ok | SummarizeMove::Gate => Ok(format!("summary {n}")),
            SummarizeMove::Throw => Err(format!("summarize failed at {n}")),
        };
        self.world.summaries.borrow_mut().push(SummarizeLog {
            messages: messages.to_vec(),
            answer: answer.clone(),
        });
        self.world.entry(Entry::Summarize(n));
        let gate = (next == SummarizeMove::Gate).then(|| self.world.gate(format!("summarize {n}")));
        answer_after(gate, answer)
    }
}

/// `estimateTokens` as the plan has it (not logged: a pure function, asked once per message).
pub struct Estimator(EstimatePlan);

impl EstimateTokens for Estimator {
    fn estimate_tokens(&self, message: &AgentMessage) -> Result<f64, String> {
        Ok(self.0.of(message))
    }
}

/// `shouldRetry` as the plan has it, logging each ask.
pub struct Judge {
    world: Rc<World>,
    moves: Vec<ShouldMove>,
}

impl ShouldRetry for Judge {
    fn should_retry<'a>(&'a self, failure: Failure<'a>) -> HookFuture<'a, bool> {
        let n = self.world.retry_asks.borrow().len();
        let next = self.moves[n % self.moves.len()];
        let answer = match next {
            ShouldMove::Yes | ShouldMove::Gate => Ok(true),
            ShouldMove::No => Ok(false),
            ShouldMove::Throw => Err(format!("shouldRetry failed at {n}")),
        };
        self.world.retry_asks.borrow_mut().push(RetryAskLog {
            error: failure.error.to_owned(),
            message: failure.message.cloned(),
            attempt: failure.attempt,
            answer: answer.clone(),
        });
        self.world.entry(Entry::ShouldRetry(n));
        let gate = (next == ShouldMove::Gate).then(|| self.world.gate(format!("shouldRetry {n}")));
        answer_after(gate, answer)
    }
}

/// A steering or follow-up queue giving what the plan says, logging each ask.
pub struct QueueSource {
    world: Rc<World>,
    queue: Queue,
    moves: Option<Vec<QueueMove>>,
}

impl MessageQueue for QueueSource {
    fn take_messages(&self) -> HookFuture<'_, Vec<AgentMessage>> {
        let index = self.world.asks.borrow().len();
        let n = (self.world.asks.borrow().iter())
            .filter(|a| a.queue == self.queue)
            .count();
        let next = nth(&self.moves, n);
        let text = |j: u8| format!("{} {index}.{j}", self.queue.as_str());
        let user = |j: u8| AgentMessage::user(text(j), 4.0);
        let answer = match next {
            QueueMove::Empty => Ok(vec![]),
            QueueMove::Users(k) => Ok((0..k).map(user).collect()),
            QueueMove::Gate => Ok(vec![user(0)]),
            QueueMove::Note => Ok(vec![note(&text(0))]),
            QueueMove::Stranger => Ok(vec![AgentMessage::Custom(CustomMessage {
                role: "stranger".into(),
                fields: Default::default(),
            })]),
            QueueMove::Assistant => Ok(vec![
                user(0),
                AgentMessage::Assistant(AssistantMessage::new(
                    vec![AssistantBlock::text("queued by mistake")],
                    StopReason::Stop,
                )),
            ]),
            QueueMove::Throw => Err(format!("{} failed at ask {index}", self.queue.as_str())),
        };
        self.world.asks.borrow_mut().push(AskLog {
            queue: self.queue,
            answer: answer.clone(),
        });
        self.world.entry(Entry::Ask(index));
        let gate = (next == QueueMove::Gate).then(|| self.world.gate(format!("ask {index}")));
        answer_after(gate, answer)
    }
}

/// Timers on the driver's clock: the driver fires the next one when the plan picks it.
pub struct WorldTimers(Rc<World>);

/// Clears a timer that has not fired when its registration is dropped.
struct ClearTimer(std::rc::Weak<World>, usize);

impl Drop for ClearTimer {
    fn drop(&mut self) {
        let Some(world) = self.0.upgrade() else {
            return;
        };
        let cleared = world.timers.borrow_mut()[self.1].fire.take().is_some();
        if cleared {
            world.entry(Entry::TimerCleared(self.1));
        }
    }
}

impl Timers for WorldTimers {
    fn sleep(&self, ms: u32) -> Sleep {
        Sleep::on_callback(|fire| {
            let world = &self.0;
            let index = world.timers.borrow().len();
            world.timers.borrow_mut().push(TimerLog {
                ms,
                due: world.timer_clock.get() + u64::from(ms),
                fire: Some(fire),
            });
            world.entry(Entry::TimerSet(index));
            Registration::new(ClearTimer(Rc::downgrade(world), index))
        })
    }
}

/// The shipped `ScriptedModel`, logging each request as the test model does.
pub struct Logged {
    world: Rc<World>,
    inner: ScriptedModel,
    script: Vec<AssistantMessage>,
}

impl Model for Logged {
    type Stream = tiny_pi::model::ScriptedStream;

    fn stream(
        &self,
        request: ModelRequest<'_>,
        signal: &AbortSignal,
    ) -> Result<Self::Stream, String> {
        let k = self.world.requests.borrow().len();
        self.world.entry(Entry::Request(k));
        let stream = self.inner.stream(request, signal);
        let delivered = stream.as_ref().ok().and(self.script.get(k).cloned());
        self.world.requests.borrow_mut().push(RequestLog {
            system_prompt: request.system_prompt.map(str::to_owned),
            messages: request.messages.to_vec(),
            tools: request.tools.to_vec(),
            signal_aborted: signal.aborted(),
            sources: SourcesLog::of(request.sources),
            emitted: delivered
                .as_ref()
                .map(ModelEvent::script)
                .unwrap_or_default(),
            delivered,
            thrown: stream.as_ref().err().cloned(),
        });
        stream
    }
}

// ---- the driver ----

pub struct Finished {
    pub world: Rc<World>,
    /// The last run's result.
    pub result: RunResult,
    /// Every run's result, in order (one unless the run was resumed).
    pub runs: Vec<RunResult>,
}

/// How the driver answers a paused run.
#[derive(Clone, Copy, PartialEq)]
pub enum Pauses {
    /// It does not: the run ends paused.
    End,
    /// It runs it again with the decisions given up front and those about the pending calls.
    Resume,
}

/// Runs `plan` with the test model (gated, throwing, truncated, abort-honouring streams).
pub fn run(plan: &RunPlan) -> Result<Finished, String> {
    run_with(plan, Pauses::End)
}

/// `run`, answering pauses as `pauses` says.
pub fn run_with(plan: &RunPlan, pauses: Pauses) -> Result<Finished, String> {
    let world = Rc::new(World::default());
    world.resuming.set(pauses == Pauses::Resume);
    let model = Rc::new(TestModel {
        world: world.clone(),
        responses: plan.responses.clone(),
    });
    drive(plan, world, model)
}

/// Runs `plan`'s messages through the shipped `ScriptedModel` instead (streams always complete).
pub fn run_scripted(plan: &RunPlan) -> Result<Finished, String> {
    let world = Rc::new(World::default());
    let script: Vec<AssistantMessage> = plan.responses.iter().map(|r| r.message.clone()).collect();
    let model = Rc::new(Logged {
        world: world.clone(),
        inner: ScriptedModel::new(script.clone()),
        script,
    });
    drive(plan, world, model)
}

/// Runs the loop to its end under a `LocalPool`. `Err` when the run hangs (stalled with no gate left).
fn drive<M>(plan: &RunPlan, world: Rc<World>, model: M) -> Result<Finished, String>
where
    M: std::ops::Deref + 'static,
    M::Target: Model<Stream: ModelStream<Event = ModelEvent>> + Sized,
{
    let executor = Executor {
        world: world.clone(),
        registry: registry(&world, &plan.outcomes, &plan.control),
        kind: plan.executor,
        outcomes: plan.outcomes.clone(),
    };
    let abort_at = match plan.abort {
        AbortPlan::AtEvent(n) => Some(n),
        _ => None,
    };
    let recorder = Recorder {
        world: world.clone(),
        moves: plan.observer.clone(),
        abort_at,
    };
    if plan.abort == AbortPlan::BeforeStart {
        world.abort();
    }
    let context = AgentContext {
        system_prompt: plan.system_prompt.clone(),
        messages: plan.input.clone(),
    };
    let context_prompt = plan.system_prompt.clone();
    let clock_world = world.clone();
    let clock: Clock = Rc::new(move || {
        let now = clock_world.clock.get() + 1.0;
        clock_world.clock.set(now);
        now
    });
    let signal = world.controller.signal();
    let max_steps = plan.max_steps();
    let result = Rc::new(RefCell::new(None));
    let hooks = Hooks {
        world: world.clone(),
        plan: plan.control.clone(),
    };
    let queue = |queue, moves: &Option<Vec<QueueMove>>| {
        moves.is_some().then(|| QueueSource {
            world: world.clone(),
            queue,
            moves: moves.clone(),
        })
    };
    let steering = queue(Queue::Steering, &plan.control.steering);
    let follow_up = queue(Queue::FollowUp, &plan.control.follow_up);
    let timers = WorldTimers(world.clone());
    let retry = (plan.control.retry.as_ref()).map(|r| RetryPolicy {
        max_retries: r.max_retries,
        base_delay_ms: r.base_delay_ms,
        max_delay_ms: r.max_delay_ms,
        should_retry: (r.should.clone()).map(|moves| {
            Rc::new(Judge {
                world: world.clone(),
                moves,
            }) as Rc<dyn ShouldRetry>
        }),
    });
    let compaction = (plan.control.compaction.as_ref()).map(|c| CompactionOptions {
        max_context_tokens: c.max_context_tokens,
        keep_recent_tokens: c.keep_recent_tokens,
        summarize: Rc::new(Summarizer {
            world: world.clone(),
            moves: c.summarize.clone(),
        }),
        // The default is the core's own counter; the oracle measures the written JSON.
        estimate_tokens: match c.estimate {
            EstimatePlan::Default => None,
            other => Some(Rc::new(Estimator(other)) as Rc<dyn EstimateTokens>),
        },
    });
    let control = plan.control.clone();
    let up_front = plan.approvals();
    let resuming = world.resuming.get();
    let runs = Rc::new(RefCell::new(Vec::new()));

    let mut pool = LocalPool::new();
    let slot = result.clone();
    let all = runs.clone();
    let decider = world.clone();
    pool.spawner()
        .spawn_local(async move {
            let (mut context, mut approvals, mut start_steps) = (context, up_front.clone(), 0);
            loop {
                let options = LoopOptions {
                    context,
                    model: &*model,
                    tools: definitions(),
                    executor: &executor,
                    signal: signal.clone(),
                    max_steps,
                    observer: &recorder,
                    clock: clock.clone(),
                    control: LoopControl {
                        tool_execution: control.mode,
                        tool_timeout_ms: control.tool_timeout_ms,
                        before_tool_call: control.before.is_some().then_some(&hooks as _),
                        after_tool_call: control.after.is_some().then_some(&hooks as _),
                        prepare_request: control.prepare.is_some().then_some(&hooks as _),
                        steering: steering.as_ref().map(|q| q as _),
                        follow_up: follow_up.as_ref().map(|q| q as _),
                        custom_roles: control.custom_roles(),
                        timers: &timers,
                        approvals,
                        start_steps,
                        budget: control.budget,
                        retry: retry.as_ref(),
                        compaction: compaction.as_ref(),
                    },
                };
                let result = run_agent_loop(options).await.unwrap();
                all.borrow_mut().push(result.clone());
                match (&result.pending, resuming) {
                    // Resumed with the decisions about the calls that wait (the app's answer).
                    (Some(pending), true) if all.borrow().len() < 50 => {
                        let plan = control.approval.as_ref().expect("only approvals pause");
                        approvals = up_front.clone();
                        for call in pending.iter().filter(|c| c.needs_approval) {
                            (decider.decided_at_pauses.borrow_mut())
                                .push(call.tool_call_id.clone());
                            approvals.insert(
                                call.tool_call_id.clone(),
                                plan.decision(&call.tool_call_id),
                            );
                        }
                        context = AgentContext {
                            system_prompt: context_prompt.clone(),
                            messages: result.messages,
                        };
                        start_steps = result.steps;
                    }
                    _ => {
                        *slot.borrow_mut() = Some(result);
                        break;
                    }
                }
            }
        })
        .expect("spawn");

    loop {
        pool.run_until_stalled();
        if result.borrow().is_some() {
            break;
        }
        let stall = world.stalls.get();
        world.stalls.set(stall + 1);
        // Late progress from finished tools: the loop must drop it (it would follow the call's tool_end).
        let late: Vec<_> = world.late_progress.borrow_mut().drain(..).collect();
        if !late.is_empty() {
            world
                .late_progress_calls
                .set(world.late_progress_calls.get() + late.len());
            for (id, sink) in late {
                sink(vec![MediaBlock::text(format!("{id} late"))]);
            }
            continue;
        }
        let waiting = matches!(world.events.borrow().last(), Some(Ev::Retry(..)));
        let abort_now = match plan.abort {
            AbortPlan::AtStall(at) => at == stall,
            AbortPlan::AtRetryWait => waiting,
            _ => false,
        };
        if abort_now && !world.controller.signal().aborted() {
            world.abort();
            continue;
        }
        let mut gates = world.gates.borrow_mut();
        // A gate whose waiter is gone (it honoured an abort, it timed out) cannot unblock anything.
        gates.retain(|(_, tx)| !tx.is_canceled());
        // The next timer to fire is one more choice beside the gates.
        let choices = gates.len() + usize::from(world.timers_pending());
        if choices == 0 {
            let events: Vec<String> = world.events.borrow().iter().map(Ev::label).collect();
            return Err(format!(
                "the run hung: stalled with no gate left to open; events so far: {events:?}"
            ));
        }
        if stall > 10_000 {
            return Err("the run did not finish after 10,000 gate releases".into());
        }
        let pick = plan.choices[stall % plan.choices.len()] as usize % choices;
        if pick < gates.len() {
            let (_, tx) = gates.remove(pick);
            let _ = tx.send(());
        } else {
            drop(gates);
            world.fire_next_timer();
        }
    }
    let result = result.borrow_mut().take().unwrap();
    let runs = runs.borrow().clone();
    Ok(Finished {
        world,
        result,
        runs,
    })
}
