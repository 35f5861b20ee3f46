//! The agent loop (SPEC §4, §7, §8, part three): ask the model, decide, answer the calls, append each
//! result paired to its call, ask again. Reads top-down like pi-agent-core's `agent-loop.ts`:
//!
//! `open_calls` (`transcript.rs`: what the input may end with, SPEC §8; any other pairing problem refuses
//! it) → `drive` → `next_response` (`compact.rs`: `compact`, SPEC §13; `request.rs`: `request_messages`,
//! `prepare_request`; `retry.rs`: `Attempts::respond` around `stream_response`, counting usage, SPEC
//! §11/§12) → `answer` → `decide` (`decide.rs`: the decision table) → `approval_gate` (`approval.rs`:
//! pause, or go on with the decisions) → `Batch::answer` (`batch.rs`: `prepare_calls` → `screen_calls` →
//! `execute_calls`, with `settle` for a sequential batch's timed-out call → `finish_call`) or `Batch::skip`
//! → `after_batch` / `after_stop` (the checks, budget among them, then the queues: `queue.rs`) → `finish`.

// Shared borrows of the transcript across awaits are the design (see `Transcript`).
#![allow(clippy::await_holding_refcell_ref)]

mod approval;
mod batch;
mod compact;
mod decide;
mod queue;
mod request;
mod retry;

use std::cell::RefCell;
use std::rc::Rc;

use futures::future::LocalBoxFuture;

use crate::approval::PendingCall;
use crate::compaction::last_entry;
use crate::control::{HookContext, LoopControl};
use crate::event::{LoopEvent, Queue, RunReason, RunResult};
use crate::message::{AgentMessage, AssistantMessage, ToolCall, ToolResultMessage};
use crate::model::{Model, ModelRequest, ModelStream};
use crate::signal::AbortSignal;
use crate::tools::{Clock, ToolDefinition, ToolExecutor};
pub use crate::transcript::InputError;
use crate::transcript::{check_roles, check_start};
use crate::usage::Usage;
use approval::{approval_gate, Gate};
use batch::Batch;
use compact::Estimates;
use decide::{decide, Decision};
use retry::Attempts;

pub(crate) use queue::may_queue;

pub const DEFAULT_MAX_STEPS: u32 = 32;

/// The system prompt and the messages a run starts from. The run works on its own copy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentContext {
    pub system_prompt: Option<String>,
    pub messages: Vec<AgentMessage>,
}

/// What an observer answers for one event: `Ok(None)` when it is done, `Ok(Some(wait))` when the loop must
/// await `wait` before it goes on (a JS `onEvent` returning a promise), `Err` when it threw.
pub type Observed = Result<Option<LocalBoxFuture<'static, Result<(), String>>>, String>;

/// Receives every event of a run, in order.
pub trait Observer<E> {
    fn on_event(&self, event: LoopEvent<'_, E>) -> Observed;

    /// A call's execution ended with `result`, as it stands before `afterToolCall` and its `tool_end` (which
    /// wait for their turn while another call's run). Called at once, never awaited, and not an event: a host
    /// that may drop the run's future keeps it, so that a call that ran is never answered as if it had not
    /// (the `Agent` does). The default does nothing.
    fn on_executed(&self, result: &ToolResultMessage) {
        let _ = result;
    }
}

/// A function or closure is an observer. A closure names its argument's type, so that it takes an event of
/// any lifetime, with the event type of the run's model (`ScriptedModel`'s and pi-ai's is `ModelEvent`):
///
/// ```ignore-wasm32
/// use tiny_pi::{LoopEvent, ModelEvent, Observed, Observer};
///
/// let observer = |event: LoopEvent<'_, ModelEvent>| -> Observed {
///     println!("{}", event.kind());
///     Ok(None)
/// };
/// let _lent: &dyn Observer<ModelEvent> = &observer; // as `LoopOptions::observer` takes it
/// ```
impl<E, F> Observer<E> for F
where
    F: Fn(LoopEvent<'_, E>) -> Observed,
{
    fn on_event(&self, event: LoopEvent<'_, E>) -> Observed {
        self(event)
    }
}

/// An observer that ignores everything.
pub struct NoObserver;

impl<E> Observer<E> for NoObserver {
    fn on_event(&self, _: LoopEvent<'_, E>) -> Observed {
        Ok(None)
    }
}

/// Everything a run needs. `tools` are the definitions sent on every request; `executor` runs the calls
/// (a `ToolRegistry`, or the caller's own executor); `control` holds SPEC §7's hooks, queues, execution
/// mode and timeouts (`LoopControl::default()`: none of them).
pub struct LoopOptions<'a, M: Model> {
    pub context: AgentContext,
    pub model: &'a M,
    pub tools: Vec<ToolDefinition>,
    pub executor: &'a dyn ToolExecutor,
    pub signal: AbortSignal,
    pub max_steps: u32,
    pub observer: &'a dyn Observer<<M::Stream as ModelStream>::Event>,
    pub clock: Clock,
    pub control: LoopControl<'a>,
}

impl<'a, M: Model> LoopOptions<'a, M> {
    /// A run of `model` over `messages`, offered `executor`'s tools (a `ToolRegistry`'s definitions), with
    /// the defaults: no system prompt, no signal, `DEFAULT_MAX_STEPS`, no observer, no option of SPEC §7 or
    /// part three. Set a field to change one.
    pub fn new(
        messages: Vec<AgentMessage>,
        model: &'a M,
        executor: &'a dyn ToolExecutor,
        tools: Vec<ToolDefinition>,
        clock: Clock,
    ) -> Self {
        LoopOptions {
            context: AgentContext {
                system_prompt: None,
                messages,
            },
            model,
            tools,
            executor,
            signal: AbortSignal::none(),
            max_steps: DEFAULT_MAX_STEPS,
            observer: &NoObserver,
            clock,
            control: LoopControl::default(),
        }
    }
}

/// How a run ends: the reason, and for `Error` what went wrong.
#[derive(Debug, Clone, PartialEq)]
enum End {
    Stop,
    Length,
    Error(String),
    Aborted,
    MaxSteps,
    Terminated,
    /// A batch waits for decisions (SPEC §8).
    Paused(Vec<PendingCall>),
    /// The budget is spent (SPEC §11).
    Budget,
}

/// What the loop does once a response's results (if any) are appended.
enum After {
    /// A batch ran: check, then ask the steering queue and go on.
    Batch { terminated: bool },
    /// The model stopped: ask the queues, or end with `stop`.
    Stop,
    /// The table ended the run.
    End(End),
}

/// Runs the loop to its end. Every way a run can go wrong is a reason in the result; only an input with a
/// pairing problem beyond the unanswered calls of its last assistant message, or with a compaction entry
/// whose cut no run could make (`check_start`), is refused, before anything happens: no event, no request,
/// no tool.
///
/// When `context.messages` ends with an assistant message some of whose calls have no result (a paused
/// run, or a transcript saved mid-batch), the run finishes that batch first, before any request (SPEC §8):
/// the calls left are answered as the decision table answers that message (a `toolUse` message's through
/// the approval gate and the three phases of a batch; another row's with its skipped results), without
/// a second `assistant_message` event.
pub async fn run_agent_loop<M: Model>(
    mut options: LoopOptions<'_, M>,
) -> Result<RunResult, InputError> {
    let transcript = Rc::new(RefCell::new(std::mem::take(&mut options.context.messages)));
    let mut result = run_over(options, &transcript, Pairing::Unchecked).await?;
    result.messages = Rc::try_unwrap(transcript)
        .map(RefCell::into_inner)
        .unwrap_or_else(|shared| shared.borrow().clone());
    Ok(result)
}

/// A run's transcript: the run appends to it; a host that keeps its conversation there (the `Agent`) reads
/// it while the run goes on, and keeps it after, with nothing copied. The run is its only writer: it holds
/// shared borrows across its awaits (a batch borrows its calls from the transcript) and never while it
/// appends; a host only reads it, for a moment, while a run goes on (its state table refuses every change
/// of the conversation then). Hence `clippy::await_holding_refcell_ref` is allowed in this module's steps.
pub(crate) type Transcript = Rc<RefCell<Vec<AgentMessage>>>;

/// What a run knows of its transcript's pairing before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pairing {
    /// Nothing: the run checks it (`check_start`), and refuses a pairing or compaction-entry problem.
    Unchecked,
    /// Its host vouches that it is whole but for the open calls of the assistant message at this index, if
    /// any: the `Agent`, whose conversation only its runs (which keep the promise) and its own checked input
    /// (messages that neither call nor answer) ever changed. A prompt then need not check the whole
    /// conversation again (issue 26, item 7); debug builds check the claim.
    Whole { open: Option<usize> },
}

/// `run_agent_loop` over `transcript` in place of `options.context.messages` (which is not read): the run
/// appends to it, and the result's `messages` is left empty (the transcript holds them).
pub(crate) async fn run_over<M: Model>(
    options: LoopOptions<'_, M>,
    transcript: &Transcript,
    pairing: Pairing,
) -> Result<RunResult, InputError> {
    let (open, has_custom, last_entry) = {
        let messages = transcript.borrow();
        let checked = || check_start(&messages).map(|open| open.first().map(|call| call.index));
        let open = match pairing {
            Pairing::Unchecked => {
                options.control.check().map_err(InputError::Options)?;
                check_roles(&messages, &options.control.custom_roles)?;
                checked()?
            }
            Pairing::Whole { open } => {
                debug_assert_eq!(
                    checked().ok(),
                    Some(open),
                    "a transcript vouched whole is not"
                );
                open
            }
        };
        let has_custom = (messages.iter()).any(|m| matches!(m, AgentMessage::Custom(_)));
        (open, has_custom, last_entry(&messages))
    };
    let LoopOptions {
        context,
        model,
        tools,
        executor,
        signal,
        max_steps,
        observer,
        clock,
        control,
    } = options;
    let mut run = Run {
        model,
        executor,
        system_prompt: context.system_prompt,
        tools,
        signal,
        max_steps,
        clock,
        messages: transcript.clone(),
        has_custom,
        last_entry,
        estimates: Estimates::default(),
        usage: Usage::default(),
        retries: 0,
        steps: control.start_steps,
        control,
        emitter: Emitter {
            observer,
            first_error: None,
        },
    };
    let end = run.drive(open).await;
    Ok(run.finish(end).await)
}

struct Run<'a, M: Model> {
    model: &'a M,
    executor: &'a dyn ToolExecutor,
    system_prompt: Option<String>,
    tools: Vec<ToolDefinition>,
    signal: AbortSignal,
    max_steps: u32,
    clock: Clock,
    control: LoopControl<'a>,
    /// The transcript (the run's own, or shared with its host).
    messages: Transcript,
    /// Whether the transcript holds a custom-role message (then requests carry a filtered copy).
    has_custom: bool,
    /// The index of the last compaction entry (then requests carry its summary and what it kept).
    last_entry: Option<usize>,
    /// With compaction: each message's estimated tokens.
    estimates: Estimates,
    /// What the model's responses reported (SPEC §11), and the retries made (SPEC §12).
    usage: Usage,
    retries: u32,
    steps: u32,
    emitter: Emitter<'a, <M::Stream as ModelStream>::Event>,
}

impl<M: Model> Run<'_, M> {
    /// The open batch first (`open`: its message's index), then one model request per step until a row
    /// of the table, a check, a hook or a pause ends the run.
    async fn drive(&mut self, open: Option<usize>) -> End {
        if let Some(at) = open {
            if let Some(end) = self.answer(at).await {
                return end;
            }
        }
        loop {
            if let Some(end) = self.checkpoint() {
                return end;
            }
            let message = match self.next_response().await {
                Ok(message) => message,
                Err(end) => return end,
            };
            self.messages
                .borrow_mut()
                .push(AgentMessage::Assistant(message));
            let transcript = self.messages.clone();
            let messages = transcript.borrow();
            let index = messages.len() - 1;
            let Some(AgentMessage::Assistant(message)) = messages.last() else {
                unreachable!("the message was just appended");
            };
            self.emitter
                .emit(LoopEvent::AssistantMessage { message, index })
                .await;
            drop(messages);
            if let Some(end) = self.answer(index).await {
                return end;
            }
        }
    }

    /// Answers the calls of the assistant message at `at` that have no result yet (all of them, for a
    /// response just appended) as its row of the table says, appends the results, then does what comes
    /// after that row. `Some(end)` when the run ends.
    async fn answer(&mut self, at: usize) -> Option<End> {
        let (results, after) = self.answer_calls(at).await;
        self.messages
            .borrow_mut()
            .extend(results.into_iter().map(AgentMessage::ToolResult));
        match after {
            After::Batch { terminated } => self.after_batch(terminated).await,
            After::Stop => self.after_stop().await,
            After::End(end) => Some(end),
        }
    }

    /// The results answering the calls of the assistant message at `at` that have none yet (in call order,
    /// to be appended), and what comes after.
    async fn answer_calls(&mut self, at: usize) -> (Vec<ToolResultMessage>, After) {
        let transcript = self.messages.clone();
        let messages = transcript.borrow();
        let AgentMessage::Assistant(message) = &messages[at] else {
            unreachable!("the loop answers assistant messages");
        };
        // The calls are borrowed from the transcript; the batch gets every other part of the run, and the
        // results are appended once every call is answered (the borrow ended). The table decides on the
        // message, every call of it: a message that repeats an id runs none of its calls, whichever of
        // them a saved transcript has answered already.
        let answered = &messages[at + 1..];
        let mut calls: Vec<&ToolCall> = message.tool_calls().collect();
        let decision = decide(message, &calls);
        calls.retain(|call| !answered.iter().any(|m| answers(m, call)));
        let gate = match decision {
            Decision::Execute => {
                let approvals = &mut self.control.approvals;
                approval_gate(self.executor, approvals, &calls).await
            }
            _ => Gate::Open(Vec::new()),
        };
        let mut batch = Batch {
            emitter: &mut self.emitter,
            executor: self.executor,
            control: &self.control,
            signal: &self.signal,
            clock: &self.clock,
            step: self.steps,
            messages: &messages,
            first_index: messages.len(),
        };
        match (decision, gate) {
            (_, Gate::Pause(pending)) => (Vec::new(), After::End(End::Paused(pending))),
            (Decision::Execute, Gate::Open(denials)) => {
                let (results, terminated) = batch.answer(&calls, denials).await;
                (results, After::Batch { terminated })
            }
            (Decision::Skip(reason, end), _) => (batch.skip(&calls, reason).await, After::End(end)),
            (Decision::Done, _) => (Vec::new(), After::Stop),
            (Decision::Finish(end), _) => (Vec::new(), After::End(end)),
        }
    }

    /// No new request once aborted (before the first, and after each appended batch or queue), or at
    /// `max_steps`.
    fn checkpoint(&self) -> Option<End> {
        if self.signal.aborted() {
            Some(End::Aborted)
        } else if self.steps >= self.max_steps {
            Some(End::MaxSteps)
        } else {
            None
        }
    }

    /// One request: the context compacted if it must be, the request built (custom-role messages and
    /// compaction entries left out), shown to `prepareRequest`, made and streamed, and made again as the
    /// retry policy says. A failed compaction, a hook that throws or breaks the pairing end the run before
    /// the request, which is then not counted; so does an abort while `summarize` or the hook ran.
    async fn next_response(&mut self) -> Result<AssistantMessage, End> {
        if let Some(options) = self.control.compaction {
            self.compact(options).await?;
        }
        let transcript = self.messages.clone();
        let whole = transcript.borrow();
        let (messages, picked) =
            request::request_messages(&whole, self.has_custom, self.last_entry);
        let built = ModelRequest {
            system_prompt: self.system_prompt.as_deref(),
            messages: &messages,
            tools: &self.tools,
            sources: picked.sources(),
            attempt: 0,
        };
        let patch = match self.control.prepare_request {
            None => None,
            Some(hook) => {
                let context = HookContext {
                    signal: &self.signal,
                    step: self.steps + 1,
                    messages: &whole,
                };
                let patch = request::prepare_request(hook, built, context).await?;
                if self.signal.aborted() {
                    return Err(End::Aborted);
                }
                patch
            }
        };
        let request = match &patch {
            Some(patch) => patch.apply(built),
            None => built,
        };
        self.steps += 1;
        let mut attempts = Attempts {
            emitter: &mut self.emitter,
            control: &self.control,
            signal: &self.signal,
            usage: &mut self.usage,
            retries: &mut self.retries,
        };
        attempts.respond(self.model, request).await
    }

    /// Whether the run's budget is spent (SPEC §11).
    fn budget_spent(&self) -> bool {
        (self.control.budget).is_some_and(|budget| budget.spent(&self.usage))
    }

    /// After a batch was appended the loop checks, in this order: aborted, terminated, budget,
    /// `max_steps`. When it is about to make another request anyway, it asks the steering queue first.
    async fn after_batch(&mut self, terminated: bool) -> Option<End> {
        if self.signal.aborted() {
            return Some(End::Aborted);
        }
        if terminated {
            return Some(End::Terminated);
        }
        if self.budget_spent() {
            return Some(End::Budget);
        }
        if self.steps >= self.max_steps {
            return Some(End::MaxSteps);
        }
        match self.queue(Queue::Steering) {
            Some(steering) => self.take_queued(Queue::Steering, steering).await.err(),
            None => None,
        }
    }

    /// After a `stop` with no calls: the steering queue, then the follow-up queue; the first that gives
    /// messages makes the loop go on, else the run ends with `stop`. A queue is not asked once the run is
    /// aborted, at `max_steps` or over its budget (nothing queued is lost by a run that ends).
    async fn after_stop(&mut self) -> Option<End> {
        for queue in [Queue::Steering, Queue::FollowUp] {
            let Some(source) = self.queue(queue) else {
                continue;
            };
            if self.signal.aborted() || self.steps >= self.max_steps || self.budget_spent() {
                return Some(End::Stop);
            }
            match self.take_queued(queue, source).await {
                Ok(0) => {}
                Ok(_) => return None,
                Err(end) => return Some(end),
            }
        }
        Some(End::Stop)
    }

    async fn finish(mut self, end: End) -> RunResult {
        let (reason, error, pending) = match end {
            End::Stop => (RunReason::Stop, None, None),
            End::Length => (RunReason::Length, None, None),
            End::Error(error) => (RunReason::Error, Some(error), None),
            End::Aborted => (RunReason::Aborted, None, None),
            End::MaxSteps => (RunReason::MaxSteps, None, None),
            End::Terminated => (RunReason::Terminated, None, None),
            End::Paused(pending) => (RunReason::Paused, None, Some(pending)),
            End::Budget => (RunReason::Budget, None, None),
        };
        self.emitter
            .emit(LoopEvent::TurnEnd {
                reason,
                steps: self.steps,
            })
            .await;
        RunResult {
            reason,
            // The transcript holds them (`run_agent_loop` takes them out).
            messages: Vec::new(),
            steps: self.steps,
            error,
            observer_error: self.emitter.first_error,
            pending,
            usage: self.usage,
            retries: self.retries,
        }
    }
}

/// Whether `message` is a result answering `call`.
fn answers(message: &AgentMessage, call: &ToolCall) -> bool {
    matches!(message, AgentMessage::ToolResult(result) if result.tool_call_id == call.id)
}

/// Sends events to the observer, awaiting it when it asks; keeps the first error it throws.
struct Emitter<'a, E> {
    observer: &'a dyn Observer<E>,
    first_error: Option<String>,
}

impl<E> Emitter<'_, E> {
    async fn emit(&mut self, event: LoopEvent<'_, E>) {
        let outcome = match self.observer.on_event(event) {
            Ok(None) => Ok(()),
            Ok(Some(pending)) => pending.await,
            Err(error) => Err(error),
        };
        if let Err(error) = outcome {
            self.first_error.get_or_insert(error);
        }
    }
}
