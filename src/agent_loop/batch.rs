//! Answering one response's calls. A batch (a `toolUse` response with unique ids, SPEC §7) that the
//! approval gate let through (SPEC §8) runs in three phases: `prepare_calls` (each call's settings, timeout
//! and signal) and `screen_calls` (in call order: the denied calls, and `beforeToolCall`); then
//! `execute_calls` (all at once, or one at a time, a timed-out call settled before the next starts); and
//! each call, as it ends, through `finish_call` and `after_tool_call` before its `tool_end`, one call at a
//! time in the order they ended, while the other calls run on (`RunningCalls`): an app's callback for one
//! call may wait for another call's execution, not for its `afterToolCall` or `tool_end`. The other rows
//! of the table answer every call with a skipped result (`skip`). Either way the results come back in call
//! order, to be appended once every call is answered.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll};

use futures::channel::mpsc;
use futures::future::{self, LocalBoxFuture};
use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;

use super::{Emitter, Observer};
use crate::control::{
    AfterToolCall, BeforeToolCall, Block, HookContext, LoopControl, Sleep, Timers,
};
use crate::event::{LoopEvent, SkipReason};
use crate::message::{AgentMessage, MediaBlock, ToolCall, ToolResultMessage};
use crate::signal::{AbortController, AbortSignal};
use crate::tools::{Clock, ExecutionContext, ExecutionMode, ToolExecutor, ToolReply};

/// A call of the batch, as phase 1 leaves it.
enum Slot {
    /// To be run in phase 2.
    Run(Runnable),
    /// Answered: blocked in phase 1, skipped at its turn, or finished in phase 3.
    Answered(ToolResultMessage),
}

/// What running one call needs.
struct Runnable {
    /// The call's timeout and own signal; without one, the call's signal is the run's.
    timeout: Option<Timeout>,
    /// Whether the hooks see this call (its executor does not refuse it outright).
    hooked: bool,
}

/// A call's timeout, and its own signal: a child of the run's that also aborts when the timer fires.
struct Timeout {
    ms: u32,
    controller: AbortController,
    signal: AbortSignal,
}

impl Runnable {
    /// The call's own signal.
    fn signal<'s>(&'s self, run: &'s AbortSignal) -> &'s AbortSignal {
        self.timeout.as_ref().map_or(run, |timeout| &timeout.signal)
    }
}

/// What the running calls of a batch yield next.
enum Arrival {
    /// A running call reported progress.
    Progress(usize, Vec<MediaBlock>),
    /// A call finished: the first of `RunningCalls::ended`.
    Finished,
}

/// How an executed call ended.
enum Outcome {
    /// The executor's reply, or (`Err`) its rejection.
    Replied(Result<ToolReply, String>),
    /// Its timer fired first, after so many milliseconds.
    TimedOut(u32),
}

/// A call whose execution ended, waiting for its turn at phase 3: its index, its result and whether it asked
/// to terminate, and (`keep`) the execution of a call that timed out.
struct Ended<'c> {
    index: usize,
    result: ToolResultMessage,
    terminate: bool,
    straggler: Option<Straggler<'c>>,
}

/// The running calls of a batch, and those that ended while the loop was busy with another call. A call's
/// result is made as its execution ends (stamped then), and noted to the observer at once
/// (`Observer::on_executed`), before its turn at `afterToolCall` and `tool_end`.
struct RunningCalls<'r, 'c, E> {
    running: FuturesUnordered<Running<'c>>,
    /// In the order they ended.
    ended: VecDeque<Ended<'c>>,
    calls: &'r [&'r ToolCall],
    clock: &'r Clock,
    observer: &'r dyn Observer<E>,
}

/// Where a running call's progress goes: its index in the batch and what it reported.
type Reports = mpsc::UnboundedSender<(usize, Vec<MediaBlock>)>;

/// What answering one message's calls needs: the run's observer, executor, options, signal and clock,
/// and the transcript so far for the hooks. (The calls are borrowed from the transcript; the results are
/// appended to it afterwards.)
pub(super) struct Batch<'r, 'a, E> {
    pub emitter: &'r mut Emitter<'a, E>,
    pub executor: &'a dyn ToolExecutor,
    pub control: &'r LoopControl<'a>,
    pub signal: &'r AbortSignal,
    pub clock: &'r Clock,
    /// The number of the request whose response is being answered.
    pub step: u32,
    pub messages: &'r [AgentMessage],
    /// Where the batch's first result goes in the transcript; the others follow in call order (a batch
    /// answers each of its calls once; `skip` answers each distinct id once).
    pub first_index: usize,
}

impl<E> Batch<'_, '_, E> {
    /// Answers every call of a `toolUse` response: phase 1 (with `denials`, from the approval gate: each
    /// call's denial text, or none), then phases 2 and 3 in the batch's mode. The results in call order, and
    /// whether a call asked to terminate.
    pub async fn answer(
        &mut self,
        calls: &[&ToolCall],
        denials: Vec<Option<String>>,
    ) -> (Vec<ToolResultMessage>, bool) {
        let (mut slots, mode) = self.prepare_calls(calls);
        self.screen_calls(calls, &mut slots, denials).await;
        let terminated = self.execute_calls(calls, &mut slots, mode).await;
        let results = slots
            .into_iter()
            .map(|slot| match slot {
                Slot::Answered(result) => result,
                Slot::Run(_) => unreachable!("phase 2 answers every call it runs"),
            })
            .collect();
        (results, terminated)
    }

    /// Phase 1, in call order: each call's settings, signal and timeout, and whether the hooks see it. The
    /// batch is sequential when the run says so or any call's tool does.
    fn prepare_calls(&self, calls: &[&ToolCall]) -> (Vec<Slot>, ExecutionMode) {
        let control = self.control;
        let hooks = control.before_tool_call.is_some() || control.after_tool_call.is_some();
        let mut mode = control.tool_execution;
        let slots = (calls.iter())
            .map(|call| {
                let settings = self.executor.settings(call);
                if settings.execution_mode == ExecutionMode::Sequential {
                    mode = ExecutionMode::Sequential;
                }
                let timeout = (settings.timeout_ms).or(control.tool_timeout_ms).map(|ms| {
                    let controller = AbortController::with_parent(self.signal);
                    Timeout {
                        ms,
                        signal: controller.signal(),
                        controller,
                    }
                });
                Slot::Run(Runnable {
                    timeout,
                    hooked: hooks && !self.executor.refuses(call),
                })
            })
            .collect();
        (slots, mode)
    }

    /// Phase 1, in call order, one call at a time: a denied call (SPEC §8) is answered with a skipped
    /// result, reason `denied`, and no hook sees it; a call the hooks see goes to `beforeToolCall`, which
    /// may block it (reason `blocked`). Either is announced by `tool_skipped` at once and never runs.
    async fn screen_calls(
        &mut self,
        calls: &[&ToolCall],
        slots: &mut [Slot],
        mut denials: Vec<Option<String>>,
    ) {
        let hook = self.control.before_tool_call;
        if hook.is_none() && denials.is_empty() {
            return;
        }
        for (index, (call, slot)) in calls.iter().zip(slots.iter_mut()).enumerate() {
            let Slot::Run(runnable) = slot else {
                continue;
            };
            let skip = match (denials.get_mut(index).and_then(Option::take), hook) {
                (Some(text), _) => Some((SkipReason::Denied, text)),
                (None, Some(hook)) if runnable.hooked => {
                    let blocked = self.before_tool_call(hook, call, runnable).await;
                    blocked.map(|text| (SkipReason::Blocked, text))
                }
                (None, _) => None,
            };
            if let Some((reason, text)) = skip {
                let at = self.first_index + index;
                *slot = Slot::Answered(self.skip_one(call, reason, text, at).await);
            }
        }
    }

    /// `beforeToolCall` for one call: the skipped result's text when it blocks the call or throws.
    async fn before_tool_call(
        &self,
        hook: &dyn BeforeToolCall,
        call: &ToolCall,
        runnable: &Runnable,
    ) -> Option<String> {
        let context = HookContext {
            signal: runnable.signal(self.signal),
            step: self.step,
            messages: self.messages,
        };
        match hook.before_tool_call(call, context).await {
            Ok(None) => None,
            Ok(Some(Block { reason })) => {
                Some(reason.unwrap_or_else(|| SkipReason::Blocked.explanation().into()))
            }
            Err(message) => Some(format!("beforeToolCall failed: {message}")),
        }
    }

    /// Phase 2. Parallel: a `tool_start` for every call that runs, then all at once, `tool_end` in
    /// completion order. Sequential: one call at a time in call order, each `tool_start` right before
    /// its call runs and its `tool_end` before the next `tool_start`, and no call starts while another
    /// still runs, even one that timed out (`settle`); once the run is aborted, a call not yet started is
    /// skipped (reason `aborted`) instead. Whether a call asked to terminate.
    async fn execute_calls(
        &mut self,
        calls: &[&ToolCall],
        slots: &mut [Slot],
        mode: ExecutionMode,
    ) -> bool {
        let (reports, mut received) = mpsc::unbounded();
        match mode {
            ExecutionMode::Parallel => {
                for (call, slot) in calls.iter().zip(slots.iter()) {
                    if let Slot::Run(_) = slot {
                        self.emitter.emit(LoopEvent::ToolStart { call }).await;
                    }
                }
                let running = (calls.iter().zip(slots.iter()).enumerate())
                    .filter_map(|(index, (call, slot))| match slot {
                        Slot::Run(runnable) => {
                            Some(self.launch(index, call, runnable, &reports, false))
                        }
                        Slot::Answered(_) => None,
                    })
                    .collect();
                drop(reports);
                self.collect(calls, slots, running, &mut received).await.0
            }
            ExecutionMode::Sequential => {
                let mut terminated = false;
                for (index, call) in calls.iter().enumerate() {
                    let Slot::Run(runnable) = &slots[index] else {
                        continue;
                    };
                    if self.signal.aborted() {
                        let (text, at) =
                            (SkipReason::Aborted.explanation(), self.first_index + index);
                        let result = self
                            .skip_one(call, SkipReason::Aborted, text.into(), at)
                            .await;
                        slots[index] = Slot::Answered(result);
                        continue;
                    }
                    self.emitter.emit(LoopEvent::ToolStart { call }).await;
                    let running = [self.launch(index, call, runnable, &reports, true)]
                        .into_iter()
                        .collect();
                    let (stop, straggler) =
                        self.collect(calls, slots, running, &mut received).await;
                    terminated |= stop;
                    if let Some(straggler) = straggler {
                        self.settle(straggler).await;
                    }
                }
                terminated
            }
        }
    }

    /// A sequential batch's call that timed out and ignored its aborted signal still runs: the next call
    /// starts, and the batch ends, only once it has settled, so that two calls of a sequential batch never
    /// overlap. What it answers or reports now is ignored (it was answered as timed out). A call that never
    /// settles holds its batch until the run is aborted: the wait then ends, the calls not yet started are
    /// skipped (reason `aborted`), so none of them ever overlaps it, and it is let go (a native future is
    /// dropped; a JS promise runs on, ignored).
    async fn settle(&self, straggler: Straggler<'_>) {
        let _ = future::select(straggler, self.signal.cancelled()).await;
    }

    /// Makes one call's future, which starts the call at its first poll: its executor gets the call's
    /// signal and a progress sink; its timer (if it has a timeout) starts with it, so that no other call's
    /// work counts against its time. When the timer fires, the call's signal aborts and the call is answered as
    /// timed out; whatever the tool does later (settling, progress) is ignored. With `keep`, the execution
    /// of a call that timed out comes back with its outcome, to be settled; without, it is dropped.
    fn launch<'c>(
        &self,
        index: usize,
        call: &'c ToolCall,
        runnable: &Runnable,
        reports: &Reports,
        keep: bool,
    ) -> Running<'c>
    where
        Self: 'c,
    {
        let timers = self.control.timers;
        let starting = (runnable.timeout.as_ref()).map(|timeout| Starting {
            timers,
            ms: timeout.ms,
            controller: timeout.controller.clone(),
            open: Rc::new(Cell::new(true)),
        });
        let open = starting.as_ref().map(|starting| starting.open.clone());
        let reports = reports.clone();
        let context = ExecutionContext {
            signal: runnable.signal(self.signal).clone(),
            progress: Rc::new(move |content| {
                // The receiver is gone only after the batch ended; late progress is dropped.
                if open.as_ref().map_or(true, |open| open.get()) {
                    let _ = reports.unbounded_send((index, content));
                }
            }),
            clock: self.clock.clone(),
            host: None,
        };
        Running {
            index,
            execution: Some(self.executor.execute(call, context)),
            starting,
            timer: None,
            keep,
        }
    }

    /// Waits for the running calls: progress goes out as `tool_progress`; each finished call is finished
    /// (phase 3), announced by `tool_end` and answered in its slot. Whether one asked to terminate, and the
    /// execution of a call that timed out, if one was kept. While the loop awaits an app's callback for one
    /// call (its `afterToolCall`, an observer of its events), the other calls run on
    /// (`RunningCalls::beside`).
    async fn collect<'c>(
        &mut self,
        calls: &[&ToolCall],
        slots: &mut [Slot],
        running: FuturesUnordered<Running<'c>>,
        received: &mut mpsc::UnboundedReceiver<(usize, Vec<MediaBlock>)>,
    ) -> (bool, Option<Straggler<'c>>) {
        let mut terminated = false;
        let mut straggler = None;
        let mut calls_running = RunningCalls {
            running,
            ended: VecDeque::new(),
            calls,
            clock: self.clock,
            observer: self.emitter.observer,
        };
        loop {
            // The calls are polled before the progress queue, and a call's end held back until the queue is
            // empty, so that progress a tool reports just before finishing still goes out before its
            // `tool_end`.
            let arrival = poll_fn(|cx| {
                calls_running.poll(cx);
                if let Poll::Ready(Some((index, content))) = received.poll_next_unpin(cx) {
                    return Poll::Ready(Some(Arrival::Progress(index, content)));
                }
                match calls_running.ended.is_empty() {
                    false => Poll::Ready(Some(Arrival::Finished)),
                    true if calls_running.running.is_empty() => Poll::Ready(None),
                    true => Poll::Pending,
                }
            })
            .await;
            match arrival {
                None => return (terminated, straggler),
                // A sink kept past its call's end reports nothing: no progress after `tool_end`.
                Some(Arrival::Progress(index, _)) if matches!(slots[index], Slot::Answered(_)) => {}
                Some(Arrival::Progress(index, content)) => {
                    let event = LoopEvent::ToolProgress {
                        call_id: &calls[index].id,
                        content: &content,
                    };
                    calls_running.beside(self.emitter.emit(event)).await;
                }
                Some(Arrival::Finished) => {
                    let Some(Ended {
                        index,
                        mut result,
                        mut terminate,
                        straggler: left,
                    }) = calls_running.ended.pop_front()
                    else {
                        unreachable!("a call finished");
                    };
                    // One call at a time when one is kept (a sequential batch's).
                    debug_assert!(straggler.is_none() || left.is_none());
                    straggler = left.or(straggler.take());
                    let Slot::Run(runnable) = &slots[index] else {
                        unreachable!("a call finishes once");
                    };
                    if let Some(hook) = self.control.after_tool_call.filter(|_| runnable.hooked) {
                        let (call, signal) = (calls[index], runnable.signal(self.signal));
                        let finished = (&mut result, &mut terminate);
                        let hook = self.after_tool_call(hook, call, signal, finished);
                        calls_running.beside(hook).await;
                    }
                    let event = LoopEvent::ToolEnd {
                        result: &result,
                        index: self.first_index + index,
                    };
                    calls_running.beside(self.emitter.emit(event)).await;
                    terminated |= terminate;
                    slots[index] = Slot::Answered(result);
                }
            }
        }
    }

    /// Phase 3, the hook: `afterToolCall` for an executed call the hooks see. A patch replaces fields of
    /// the result and may set `terminate`; a throw makes the result an error result (what the tool asked
    /// about `terminate` still holds).
    async fn after_tool_call(
        &self,
        hook: &dyn AfterToolCall,
        call: &ToolCall,
        signal: &AbortSignal,
        (result, terminate): (&mut ToolResultMessage, &mut bool),
    ) {
        let context = HookContext {
            signal,
            step: self.step,
            messages: self.messages,
        };
        match hook.after_tool_call(call, result, context).await {
            Ok(None) => {}
            Ok(Some(patch)) => patch.apply(result, terminate),
            Err(message) => {
                let text = format!("afterToolCall failed: {message}");
                *result = ToolResultMessage::error(call, text, result.timestamp);
            }
        }
    }

    /// Answers each distinct call id with a skipped result, announced by `tool_skipped`.
    pub async fn skip(
        &mut self,
        calls: &[&ToolCall],
        reason: SkipReason,
    ) -> Vec<ToolResultMessage> {
        // Each id answered, with its result's place in `results` (the map type `transcript.rs` uses, so that
        // the module links one B-tree's code, not two).
        let mut answered: BTreeMap<&str, usize> = BTreeMap::new();
        let mut results = Vec::new();
        for call in calls.iter().filter(|call| {
            let next = answered.len();
            *answered.entry(call.id.as_str()).or_insert(next) == next
        }) {
            let (text, index) = (reason.explanation(), self.first_index + results.len());
            results.push(self.skip_one(call, reason, text.into(), index).await);
        }
        results
    }

    /// One skipped result with its text, announced by `tool_skipped`; `index` is where it goes in the
    /// transcript.
    async fn skip_one(
        &mut self,
        call: &ToolCall,
        reason: SkipReason,
        text: String,
        index: usize,
    ) -> ToolResultMessage {
        let result = ToolResultMessage::skipped_with(call, reason, text, (self.clock)());
        let event = LoopEvent::ToolSkipped {
            result: &result,
            index,
        };
        self.emitter.emit(event).await;
        result
    }
}

/// Phase 3 for one executed call: its result (a reply, a rejection as an error result, a timeout), and
/// whether the call asked to terminate. (`afterToolCall` comes after, for a call the hooks see.)
fn finish_call(call: &ToolCall, outcome: Outcome, clock: &Clock) -> (ToolResultMessage, bool) {
    match outcome {
        // The clock is read only when the executor did not stamp the result.
        Outcome::Replied(Ok(reply)) => {
            let terminate = reply.terminate;
            (reply.into_result(call, || clock()), terminate)
        }
        Outcome::Replied(Err(message)) => (ToolResultMessage::error(call, message, clock()), false),
        Outcome::TimedOut(ms) => (ToolResultMessage::timed_out(call, ms, clock()), false),
    }
}

/// An executor's future for one call.
type Execution<'c> = LocalBoxFuture<'c, Result<ToolReply, String>>;

/// The execution of a call that timed out, still running: a sequential batch waits for it to settle.
type Straggler<'c> = Execution<'c>;

/// One running call: its executor's future and, with a timeout, its timer. A plain future rather than an
/// `async` block, because one is made per call: kept small, it costs the loop nothing when there is no
/// timer.
struct Running<'c> {
    index: usize,
    /// Taken out when the call times out (`keep`: to be settled).
    execution: Option<Execution<'c>>,
    /// With a timeout, until the first poll: what starts the timer.
    starting: Option<Starting<'c>>,
    timer: Option<Timer>,
    /// Whether a call that timed out gives back its execution.
    keep: bool,
}

impl<'c> Future for Running<'c> {
    type Output = Done<'c>;

    /// The timer is looked at first: once it has fired, the tool is not polled again here. (Timers that
    /// drop the callback unfired never fire.)
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Some(starting) = this.starting.take() {
            this.timer = Some(Timer::start(starting));
        }
        if let Some(timer) = &mut this.timer {
            match timer.elapsed.poll_unpin(cx) {
                Poll::Ready(true) => {
                    let left = this.execution.take().filter(|_| this.keep);
                    return Poll::Ready((this.index, Outcome::TimedOut(timer.ms), left));
                }
                Poll::Ready(false) => this.timer = None,
                Poll::Pending => {}
            }
        }
        let Some(execution) = &mut this.execution else {
            return Poll::Pending;
        };
        (execution.poll_unpin(cx)).map(|reply| (this.index, Outcome::Replied(reply), None))
    }
}

/// What a call's future gives back: its index, how it ended, and (`keep`) the execution of a call that timed
/// out.
type Done<'c> = (usize, Outcome, Option<Straggler<'c>>);

impl<'c, E> RunningCalls<'_, 'c, E> {
    /// Polls every call that was woken (a call starts at its first poll: all of them at once), keeping
    /// each that ended with its result. A call noticed as it ends is answered by its tool, never by a timer
    /// that fired later while the loop was busy.
    fn poll(&mut self, cx: &mut Context<'_>) {
        while let Poll::Ready(Some((index, outcome, straggler))) = self.running.poll_next_unpin(cx)
        {
            let (result, terminate) = finish_call(self.calls[index], outcome, self.clock);
            self.observer.on_executed(&result);
            self.ended.push_back(Ended {
                index,
                result,
                terminate,
                straggler,
            });
        }
    }

    /// Awaits `work` (an app's hook or observer) while the calls run on (SPEC §4: the executions of a
    /// batch run concurrently; a hook may even wait for another call of its batch to have run).
    async fn beside<T>(&mut self, work: impl Future<Output = T>) -> T {
        let mut work = pin!(work);
        poll_fn(|cx| {
            self.poll(cx);
            work.as_mut().poll(cx)
        })
        .await
    }
}

/// A running call's timer. Dropped (the call finished first), it is cleared.
struct Timer {
    ms: u32,
    elapsed: Sleep,
}

/// What starts a call's timer when the call starts: the host's timers, the timeout, and what the timer does
/// as it fires: abort the call's controller, and clear `open`, which its progress sink reads (progress after
/// that is ignored).
struct Starting<'c> {
    timers: &'c dyn Timers,
    ms: u32,
    controller: AbortController,
    open: Rc<Cell<bool>>,
}

impl Timer {
    fn start(starting: Starting<'_>) -> Timer {
        let Starting {
            timers,
            ms,
            controller,
            open,
        } = starting;
        let elapsed = timers.sleep(ms).on_elapsed(move || {
            open.set(false);
            controller.abort();
        });
        Timer { ms, elapsed }
    }
}
