//! The agent loop (SPEC §4, §7): ask the model, decide, answer the calls, append each result paired to its
//! call, ask again. Reads top-down like pi-agent-core's `agent-loop.ts`:
//!
//! `drive` → `next_response` (`request.rs`: `prepare_request`, `stream_response`) → `decide` (`decide.rs`:
//! the decision table) → `Batch::answer` (`batch.rs`: `prepare_calls` → `execute_calls` → `finish_call`) or
//! `Batch::skip` → `after_batch` / `after_stop` (the checks, then the queues: `queue.rs`) → `finish`.

mod batch;
mod decide;
mod queue;
mod request;

use futures::future::LocalBoxFuture;

use crate::control::{HookContext, LoopControl};
use crate::event::{LoopEvent, Queue, RunReason, RunResult};
use crate::message::{AgentMessage, AssistantMessage, ToolCall};
use crate::model::{Model, ModelRequest, ModelStream};
use crate::signal::AbortSignal;
use crate::tools::{Clock, ToolDefinition, ToolExecutor};
use batch::Batch;
use decide::{decide, Decision};

pub use batch::{skipped, timed_out};

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

/// How a run ends: the reason, and for `Error` what went wrong.
#[derive(Debug, Clone, PartialEq)]
enum End {
    Stop,
    Length,
    Error(String),
    Aborted,
    MaxSteps,
    Terminated,
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

/// Runs the loop to its end. Never fails: every way a run can go wrong is a reason in the result.
pub async fn run_agent_loop<M: Model>(options: LoopOptions<'_, M>) -> RunResult {
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
    let has_custom = context
        .messages
        .iter()
        .any(|m| matches!(m, AgentMessage::Custom(_)));
    let mut run = Run {
        model,
        executor,
        system_prompt: context.system_prompt,
        tools,
        signal,
        max_steps,
        clock,
        control,
        messages: context.messages,
        has_custom,
        steps: 0,
        emitter: Emitter {
            observer,
            first_error: None,
        },
    };
    let end = run.drive().await;
    run.finish(end).await
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
    messages: Vec<AgentMessage>,
    /// Whether the transcript holds a custom-role message (then requests carry a filtered copy).
    has_custom: bool,
    steps: u32,
    emitter: Emitter<'a, <M::Stream as ModelStream>::Event>,
}

impl<M: Model> Run<'_, M> {
    /// One model request per step until a row of the table, a check or a hook ends the run.
    async fn drive(&mut self) -> End {
        loop {
            if let Some(end) = self.checkpoint() {
                return end;
            }
            let message = match self.next_response().await {
                Ok(message) => message,
                Err(end) => return end,
            };
            self.messages.push(AgentMessage::Assistant(message));
            let Some(AgentMessage::Assistant(message)) = self.messages.last() else {
                unreachable!("the message was just appended");
            };
            self.emitter
                .emit(LoopEvent::AssistantMessage { message })
                .await;
            // The calls are borrowed from the transcript; the batch gets every other part of the run, and
            // the results are appended once every call is answered.
            let calls: Vec<&ToolCall> = message.tool_calls().collect();
            let mut batch = Batch {
                emitter: &mut self.emitter,
                executor: self.executor,
                control: &self.control,
                signal: &self.signal,
                clock: &self.clock,
                step: self.steps,
                messages: &self.messages,
            };
            let (results, after) = match decide(message, &calls) {
                Decision::Execute => {
                    let (results, terminated) = batch.answer(&calls).await;
                    (results, After::Batch { terminated })
                }
                Decision::Skip(reason, end) => (batch.skip(&calls, reason).await, After::End(end)),
                Decision::Done => (Vec::new(), After::Stop),
                Decision::Finish(end) => (Vec::new(), After::End(end)),
            };
            self.messages
                .extend(results.into_iter().map(AgentMessage::ToolResult));
            let end = match after {
                After::Batch { terminated } => self.after_batch(terminated).await,
                After::Stop => self.after_stop().await,
                After::End(end) => Some(end),
            };
            if let Some(end) = end {
                return end;
            }
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

    /// One request: built (custom-role messages left out), shown to `prepareRequest`, made and streamed.
    /// A hook that throws or breaks the pairing ends the run before the request, which is then not
    /// counted; so does an abort while the hook ran.
    async fn next_response(&mut self) -> Result<AssistantMessage, End> {
        let messages = request::request_messages(&self.messages, self.has_custom);
        let built = ModelRequest {
            system_prompt: self.system_prompt.as_deref(),
            messages: &messages,
            tools: &self.tools,
        };
        let patch = match self.control.prepare_request {
            None => None,
            Some(hook) => {
                let context = HookContext {
                    signal: &self.signal,
                    step: self.steps + 1,
                    messages: &self.messages,
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
        request::stream_response(self.model, request, &self.signal, &mut self.emitter)
            .await
            .map_err(End::Error)
    }

    /// After a batch was appended the loop checks, in this order: aborted, terminated, `max_steps`. When
    /// it is about to make another request anyway, it asks the steering queue first.
    async fn after_batch(&mut self, terminated: bool) -> Option<End> {
        if self.signal.aborted() {
            return Some(End::Aborted);
        }
        if terminated {
            return Some(End::Terminated);
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
    /// aborted or at `max_steps` (nothing queued is lost by a run that ends).
    async fn after_stop(&mut self) -> Option<End> {
        for queue in [Queue::Steering, Queue::FollowUp] {
            let Some(source) = self.queue(queue) else {
                continue;
            };
            if self.signal.aborted() || self.steps >= self.max_steps {
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
        let (reason, error) = match end {
            End::Stop => (RunReason::Stop, None),
            End::Length => (RunReason::Length, None),
            End::Error(error) => (RunReason::Error, Some(error)),
            End::Aborted => (RunReason::Aborted, None),
            End::MaxSteps => (RunReason::MaxSteps, None),
            End::Terminated => (RunReason::Terminated, None),
        };
        self.emitter
            .emit(LoopEvent::TurnEnd {
                reason,
                steps: self.steps,
            })
            .await;
        RunResult {
            reason,
            messages: self.messages,
            steps: self.steps,
            error,
            observer_error: self.emitter.first_error,
        }
    }
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
