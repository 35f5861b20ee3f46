//! The agent loop (SPEC §4): ask the model, decide, run the requested tools, append each result paired to
//! its call, ask again. Reads top-down like pi-agent-core's `agent-loop.ts`:
//! `drive` → `stream_response` → `decide` (the decision table) → `Batch::execute` / `Batch::skip` → `finish`.

use std::collections::{BTreeSet, VecDeque};
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use futures::channel::mpsc;
use futures::future::LocalBoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::json;

use crate::event::{LoopEvent, RunReason, RunResult, SkipReason};
use crate::message::{
    AgentMessage, AssistantMessage, MediaBlock, StopReason, ToolCall, ToolResultMessage,
};
use crate::model::{Model, ModelRequest, ModelStream, StreamEvent};
use crate::signal::AbortSignal;
use crate::tools::{Clock, ExecutionContext, ToolDefinition, ToolExecutor, ToolReply};

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
/// (a `ToolRegistry`, or the caller's own executor).
pub struct LoopOptions<'a, M: Model> {
    pub context: AgentContext,
    pub model: &'a M,
    pub tools: Vec<ToolDefinition>,
    pub executor: &'a dyn ToolExecutor,
    pub signal: AbortSignal,
    pub max_steps: u32,
    pub observer: &'a dyn Observer<<M::Stream as ModelStream>::Event>,
    pub clock: Clock,
}

/// How a run ends: the reason, and for `Error` what went wrong.
#[derive(Debug, Clone, PartialEq)]
enum End {
    Stop,
    Length,
    Error(String),
    Aborted,
    MaxSteps,
}

/// One row of the decision table.
#[derive(Debug, Clone, PartialEq)]
enum Decision {
    /// Run every call at once, append the results in call order, then ask again.
    Execute,
    /// Answer every call with a skipped result (none when there are no calls), then end.
    Skip(SkipReason, End),
    /// Nothing to answer: end.
    Finish(End),
}

/// The decision table of SPEC §4, one model response at a time.
fn decide(message: &AssistantMessage, calls: &[&ToolCall]) -> Decision {
    use Decision::{Execute, Finish, Skip};
    match (message.stop_reason, calls.is_empty()) {
        (StopReason::Stop, true) => Finish(End::Stop),
        (StopReason::Stop, false) => Skip(
            SkipReason::UnexpectedStop,
            End::Error(format!(
                "the model stopped with {} tool call(s) it did not ask to run",
                calls.len()
            )),
        ),
        (StopReason::ToolUse, true) => Finish(End::Error(
            "the model asked for tool use but sent no tool calls".into(),
        )),
        (StopReason::ToolUse, false) => match repeated_id(calls) {
            Some(id) => Skip(
                SkipReason::DuplicateCallId,
                End::Error(format!(
                    "the model used tool call id \"{id}\" more than once in one message"
                )),
            ),
            None => Execute,
        },
        (StopReason::Length, _) => Skip(SkipReason::Length, End::Length),
        (StopReason::Error, _) => Skip(
            SkipReason::Error,
            End::Error(
                message
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "the model response ended with an error".into()),
            ),
        ),
        (StopReason::Aborted, _) => Skip(SkipReason::Aborted, End::Aborted),
    }
}

fn repeated_id<'a>(calls: &[&'a ToolCall]) -> Option<&'a str> {
    let mut seen = BTreeSet::new();
    calls
        .iter()
        .map(|c| c.id.as_str())
        .find(|id| !seen.insert(*id))
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
    } = options;
    let mut run = Run {
        model,
        executor,
        system_prompt: context.system_prompt,
        tools,
        signal,
        max_steps,
        clock,
        messages: context.messages,
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
    messages: Vec<AgentMessage>,
    steps: u32,
    emitter: Emitter<'a, <M::Stream as ModelStream>::Event>,
}

impl<M: Model> Run<'_, M> {
    /// One model request per step until a row of the table ends the run.
    async fn drive(&mut self) -> End {
        loop {
            // No new request once aborted: before the first, and after each appended batch.
            if self.signal.aborted() {
                return End::Aborted;
            }
            if self.steps >= self.max_steps {
                return End::MaxSteps;
            }
            self.steps += 1;
            let message = match self.stream_response().await {
                Ok(message) => message,
                Err(error) => return End::Error(error),
            };
            self.messages.push(AgentMessage::Assistant(message));
            let Some(AgentMessage::Assistant(message)) = self.messages.last() else {
                unreachable!("the message was just appended");
            };
            self.emitter
                .emit(LoopEvent::AssistantMessage { message })
                .await;
            // The calls are borrowed from the transcript; the batch gets every other part of the run.
            let calls: Vec<&ToolCall> = message.tool_calls().collect();
            let mut batch = Batch {
                emitter: &mut self.emitter,
                executor: self.executor,
                signal: &self.signal,
                clock: &self.clock,
            };
            let (results, end) = match decide(message, &calls) {
                Decision::Execute => (batch.execute(&calls).await, None),
                Decision::Skip(reason, end) => (batch.skip(&calls, reason).await, Some(end)),
                Decision::Finish(end) => (Vec::new(), Some(end)),
            };
            self.messages
                .extend(results.into_iter().map(AgentMessage::ToolResult));
            if let Some(end) = end {
                return end;
            }
        }
    }

    /// Streams one response: every event goes to the observer, then the final message is taken from
    /// `result()` or, without one, from the terminal event. A stream that throws or ends without a final
    /// message is an error and appends nothing.
    async fn stream_response(&mut self) -> Result<AssistantMessage, String> {
        let request = ModelRequest {
            system_prompt: self.system_prompt.as_deref(),
            messages: &self.messages,
            tools: &self.tools,
        };
        let mut stream = self.model.stream(request, &self.signal)?;
        let from_result = stream.has_result();
        let mut terminal = None;
        while let Some(event) = stream.next().await {
            let event = event?;
            if !from_result {
                terminal = event.final_message().or(terminal);
            }
            self.emitter
                .emit(LoopEvent::ModelEvent { event: &event })
                .await;
        }
        if from_result {
            stream.result().await
        } else {
            terminal.unwrap_or_else(|| Err("the model stream ended without a final message".into()))
        }
    }

    async fn finish(mut self, end: End) -> RunResult {
        let (reason, error) = match end {
            End::Stop => (RunReason::Stop, None),
            End::Length => (RunReason::Length, None),
            End::Error(error) => (RunReason::Error, Some(error)),
            End::Aborted => (RunReason::Aborted, None),
            End::MaxSteps => (RunReason::MaxSteps, None),
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

/// What answering one message's calls needs: the run's observer, executor, signal and clock. (Not its
/// transcript: the calls are borrowed from there, and the results are appended to it afterwards.)
struct Batch<'r, 'a, E> {
    emitter: &'r mut Emitter<'a, E>,
    executor: &'a dyn ToolExecutor,
    signal: &'r AbortSignal,
    clock: &'r Clock,
}

impl<E> Batch<'_, '_, E> {
    /// Every `tool_start`, then all calls at once; `tool_end` in completion order. The results come back in
    /// call order once the whole batch has finished.
    async fn execute(&mut self, calls: &[&ToolCall]) -> Vec<ToolResultMessage> {
        for call in calls {
            self.emitter.emit(LoopEvent::ToolStart { call }).await;
        }
        let (progress_tx, mut progress_rx) = mpsc::unbounded::<(usize, Vec<MediaBlock>)>();
        let mut running: FuturesUnordered<_> = calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let tx = progress_tx.clone();
                let context = ExecutionContext {
                    signal: self.signal.clone(),
                    progress: Rc::new(move |content| {
                        // The receiver is gone only after the batch ended; late progress is dropped.
                        let _ = tx.unbounded_send((index, content));
                    }),
                    clock: self.clock.clone(),
                };
                let execution = self.executor.execute(call, context);
                async move { (index, execution.await) }
            })
            .collect();
        drop(progress_tx);

        let mut results: Vec<Option<ToolResultMessage>> = vec![None; calls.len()];
        let mut finished = VecDeque::new();
        loop {
            // Tools are polled first so that progress a tool reports just before finishing still goes
            // out before its `tool_end`.
            let next = poll_fn(|cx| {
                while let Poll::Ready(Some(done)) = running.poll_next_unpin(cx) {
                    finished.push_back(done);
                }
                if let Poll::Ready(Some(progress)) = progress_rx.poll_next_unpin(cx) {
                    return Poll::Ready(Some(Err(progress)));
                }
                match finished.pop_front() {
                    Some(done) => Poll::Ready(Some(Ok(done))),
                    None if running.is_empty() => Poll::Ready(None),
                    None => Poll::Pending,
                }
            })
            .await;
            match next {
                // A sink kept past its call's end reports nothing: no progress after `tool_end`.
                Some(Err((index, _))) if results[index].is_some() => {}
                Some(Err((index, content))) => {
                    let event = LoopEvent::ToolProgress {
                        call_id: &calls[index].id,
                        content: &content,
                    };
                    self.emitter.emit(event).await;
                }
                Some(Ok((index, reply))) => {
                    let result = finalize(calls[index], reply, self.clock);
                    self.emitter
                        .emit(LoopEvent::ToolEnd { result: &result })
                        .await;
                    results[index] = Some(result);
                }
                None => break,
            }
        }
        results.into_iter().flatten().collect()
    }

    /// Answers each distinct call id with a skipped result, announced by `tool_skipped`.
    async fn skip(&mut self, calls: &[&ToolCall], reason: SkipReason) -> Vec<ToolResultMessage> {
        let mut answered = BTreeSet::new();
        let mut results = Vec::new();
        for call in calls
            .iter()
            .filter(|call| answered.insert(call.id.as_str()))
        {
            let result = skipped(call, reason, (self.clock)());
            self.emitter
                .emit(LoopEvent::ToolSkipped { result: &result })
                .await;
            results.push(result);
        }
        results
    }
}

/// The result of an executed call; a rejection becomes an error result with its message (never a stack).
/// The clock is read only when the executor did not stamp the result.
fn finalize(call: &ToolCall, reply: Result<ToolReply, String>, clock: &Clock) -> ToolResultMessage {
    match reply {
        Ok(reply) => reply.into_result(call, || clock()),
        Err(message) => ToolResultMessage::error(call, message, clock()),
    }
}

/// The result answering a call the loop did not run.
pub fn skipped(call: &ToolCall, reason: SkipReason, now: f64) -> ToolResultMessage {
    ToolResultMessage {
        details: Some(json!({ "skipped": true, "reason": reason.as_str() })),
        ..ToolResultMessage::error(call, reason.explanation(), now)
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
