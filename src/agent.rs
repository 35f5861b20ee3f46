//! The Agent (SPEC §9): a stateful conversation over `run_agent_loop`. It holds the transcript, the steering
//! and follow-up queues and, after a paused run, the calls that wait for a decision; every run is a
//! `run_agent_loop` with those, and no rule of the loop is written again here.
//!
//! What each method does in each state is one table, `AgentState::on`:
//!
//! | state \ action | prompt | resume | steer / followUp | abort | reset |
//! |---|---|---|---|---|---|
//! | idle | append, run → running | `NotPaused` | queue for the next run | nothing | clear |
//! | running | `Running` | `Running` | queue: the run takes it at SPEC §7's points | abort the run's signal | `Running` |
//! | paused | `Paused` | run with the decisions → running | queue for the resumed run | answer the pending calls `interrupted` → idle | clear → idle |
//!
//! A run that ends goes back to idle, or to paused when it paused. An abort while paused answers the calls
//! that wait (as `repair_transcript` does, reason `interrupted`): the app chose not to run them, and the
//! conversation can go on with a `prompt`. (An app that means to decide later keeps the agent paused, or
//! saves it with `to_jsonl`.)
//!
//! Every run gets the agent's part-three options too: its `budget` (per run: each run's usage starts at
//! zero), `retry` policy and `compaction`; the entries a compaction appends stay in the conversation. A run
//! that ended in an error (a provider that failed past its retries) is retried by prompting again with no
//! new message: `prompt(vec![])` asks the model again from the conversation as it is.
//!
//! **What a saved session holds.** `to_jsonl` writes the messages, one per line, compaction entries
//! included (role `compaction`, read back without `custom_roles`), and nothing else: the JSONL stays the
//! transcript a pi-ai app writes. The step count of a paused run is not in it, because it cannot be read
//! back from the messages (queued messages, retries and refused requests do not show in them). An app that
//! saves a paused conversation keeps `steps()` beside it and hands it back as `AgentOptions::start_steps`,
//! so the resumed run counts on from there and `max_steps` spans the whole run. An idle conversation needs
//! nothing more: every `prompt` starts a run of its own, counted from 0.
//!
//! ```ignore-wasm32
//! use std::rc::Rc;
//! use tiny_pi::*;
//!
//! let model = ScriptedModel::new(vec![
//!     AssistantMessage::new(vec![AssistantBlock::text("Hello!")], StopReason::Stop),
//!     AssistantMessage::new(vec![AssistantBlock::text("You said hi.")], StopReason::Stop),
//! ]);
//! let agent = Agent::new(AgentOptions::new(model, ToolRegistry::new(), Rc::new(|| 0.0))).unwrap();
//! futures::executor::block_on(agent.prompt_text("hi")).unwrap();
//! let second = futures::executor::block_on(agent.prompt_text("what did I say?")).unwrap();
//! assert_eq!(second.messages.len(), 4, "the conversation goes on");
//! let restored = Agent::from_jsonl(
//!     &agent.to_jsonl(),
//!     AgentOptions::new(ScriptedModel::new(vec![]), ToolRegistry::new(), Rc::new(|| 0.0)),
//! )
//! .unwrap();
//! assert_eq!(restored.messages(), agent.messages());
//! ```
//!
//! Single-threaded like the loop: a cheap handle over `Rc`/`RefCell`, whose run futures are `'static` so a
//! host can hold them (the wasm bridge turns each into a JS promise). A state change happens when a method
//! is called, not when its future is first polled: two `prompt`s in a row, the second is refused.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::rc::Rc;

use futures::channel::oneshot;
use futures::future::LocalBoxFuture;
use futures::FutureExt;
use serde_json::Value;

use crate::agent_loop::{
    may_queue, run_over, AgentContext, LoopOptions, Observed, Observer, Pairing, Transcript,
    DEFAULT_MAX_STEPS,
};
use crate::approval::{needed, Approvals, PendingCall};
use crate::compaction::{check_entries_named, CompactionOptions};
use crate::control::{
    check_options, AfterToolCall, BeforeToolCall, LoopControl, MessageQueue, NoTimers,
    PrepareRequest, Timers,
};
use crate::event::{LoopEvent, RunReason, RunResult};
use crate::invalid::Invalid;
use crate::message::{AgentMessage, ToolResultMessage};
use crate::model::{Model, ModelStream};
use crate::retry::RetryPolicy;
use crate::session::{jsonl_lines, parse_jsonl_with_roles, to_jsonl};
use crate::signal::AbortController;
use crate::tools::{Clock, ExecutionMode, HookFuture, ToolDefinition, ToolExecutor, ToolRegistry};
use crate::transcript::{check_start, repair_transcript, Unanswered};
use crate::usage::Budget;

/// What the agent is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentState {
    /// No run; `prompt` starts one.
    Idle,
    /// A run is in progress.
    Running,
    /// The last run paused: calls wait for a decision (`pending`); `resume` continues it.
    Paused,
}

/// What is asked of the agent: its methods, and the end of its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentAction {
    /// `prompt`.
    Prompt,
    /// `resume`.
    Resume,
    /// `steer` or `follow_up`.
    Queue,
    /// `abort`.
    Abort,
    /// `reset`.
    Reset,
    /// The run ended.
    RunEnded {
        /// With reason `paused`.
        paused: bool,
    },
}

/// What the agent does about an action, as the table says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEffect {
    /// Start a run (after a prompt: with its input appended; after a resume: with the decisions).
    Run,
    /// Queue the message.
    Queue,
    /// Abort the running run's signal; the run ends as the loop ends it.
    AbortRun,
    /// Answer the pending calls with skipped results, reason `interrupted`.
    Interrupt,
    /// Forget the conversation, the queues and the pending calls.
    Clear,
    /// Keep the run's transcript (and, paused, its pending calls).
    Settle,
    /// Nothing to do.
    Nothing,
    /// Refuse: the method fails with this error and nothing changes.
    Refuse(AgentError),
}

impl AgentState {
    /// The state table: the state after `action`, and what the agent does.
    pub fn on(self, action: AgentAction) -> (AgentState, AgentEffect) {
        use AgentAction as A;
        use AgentEffect as E;
        use AgentState::{Idle, Paused, Running};
        match (self, action) {
            (Idle, A::Prompt) => (Running, E::Run),
            (Running, A::Prompt | A::Resume | A::Reset) => {
                (Running, E::Refuse(AgentError::Running))
            }
            (Paused, A::Prompt) => (Paused, E::Refuse(AgentError::Paused)),
            (Paused, A::Resume) => (Running, E::Run),
            (Idle, A::Resume) => (Idle, E::Refuse(AgentError::NotPaused)),
            (state, A::Queue) => (state, E::Queue),
            (Idle, A::Abort) => (Idle, E::Nothing),
            (Running, A::Abort) => (Running, E::AbortRun),
            (Paused, A::Abort) => (Idle, E::Interrupt),
            (Idle | Paused, A::Reset) => (Idle, E::Clear),
            (Running, A::RunEnded { paused: true }) => (Paused, E::Settle),
            (Running, A::RunEnded { paused: false }) => (Idle, E::Settle),
            // Only a run ends a run.
            (state @ (Idle | Paused), A::RunEnded { .. }) => (state, E::Nothing),
        }
    }
}

/// Why an agent refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentError {
    /// A run is in progress (`prompt`, `resume`, `reset`).
    Running,
    /// The agent is paused (`prompt`): its last message has calls that wait for a decision.
    Paused,
    /// Nothing to resume (`resume` while not paused).
    NotPaused,
    /// Bad input: a message that may not be prompted or queued, a transcript with a call that has no
    /// result (outside its last message), JSONL that does not read. The message names the field.
    Input(String),
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Running => f.write_str(
                "a run is already in progress: use steer() or followUp() to add messages to it, or \
                 waitForIdle() first",
            ),
            AgentError::Paused => f.write_str(
                "the agent is paused on tool calls that wait for a decision: resume(approvals) or \
                 abort() first",
            ),
            AgentError::NotPaused => f.write_str("nothing to resume: the agent is not paused"),
            AgentError::Input(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for AgentError {}

/// A listener's id, for `unsubscribe`.
pub type ListenerId = u32;

/// What an agent is made with: the model and tools, and every option of a run but the queues (the agent's
/// own `steer` / `follow_up` are its queues).
pub struct AgentOptions<M> {
    /// What every run asks.
    pub model: M,
    /// The definitions sent on every request.
    pub tools: Vec<ToolDefinition>,
    /// Runs the calls (a `ToolRegistry`, or the app's own executor).
    pub executor: Rc<dyn ToolExecutor>,
    /// Timestamps for the messages the agent and its runs write.
    pub clock: Clock,
    /// `context.systemPrompt` of every run.
    pub system_prompt: Option<String>,
    /// Per run; a resumed run goes on counting from the paused one.
    pub max_steps: u32,
    /// The conversation to start from. When its last assistant message has calls without results, the agent
    /// starts paused on them.
    pub messages: Vec<AgentMessage>,
    /// `startSteps`: the steps the paused run of `messages` had made (what `steps()` said when it was
    /// saved), so that its resume counts on from them and `max_steps` spans the run. An agent that starts
    /// idle ignores it: each `prompt` starts a run of its own, counted from 0.
    pub start_steps: u32,
    /// `toolExecution` (SPEC §7's options, as `LoopControl` has them, owned).
    pub tool_execution: ExecutionMode,
    /// `toolTimeoutMs`.
    pub tool_timeout_ms: Option<u32>,
    /// `beforeToolCall`.
    pub before_tool_call: Option<Rc<dyn BeforeToolCall>>,
    /// `afterToolCall`.
    pub after_tool_call: Option<Rc<dyn AfterToolCall>>,
    /// `prepareRequest`.
    pub prepare_request: Option<Rc<dyn PrepareRequest>>,
    /// `customRoles`: also the roles `prompt`, `steer` and `follow_up` accept besides `user`, and those
    /// `from_jsonl` reads.
    pub custom_roles: Vec<String>,
    /// What timeouts and the waits before retries are measured with.
    pub timers: Rc<dyn Timers>,
    /// `budget` (SPEC §11), for each run.
    pub budget: Option<Budget>,
    /// `retry` (SPEC §12).
    pub retry: Option<RetryPolicy>,
    /// `compaction` (SPEC §13).
    pub compaction: Option<CompactionOptions>,
}

impl<M> AgentOptions<M> {
    /// An agent over `model` and the tools of `registry`, with every other option at its default.
    pub fn new(model: M, registry: ToolRegistry, clock: Clock) -> Self {
        AgentOptions {
            model,
            tools: registry.definitions(),
            executor: Rc::new(registry),
            clock,
            system_prompt: None,
            max_steps: DEFAULT_MAX_STEPS,
            messages: Vec::new(),
            start_steps: 0,
            tool_execution: ExecutionMode::Parallel,
            tool_timeout_ms: None,
            before_tool_call: None,
            after_tool_call: None,
            prepare_request: None,
            custom_roles: Vec::new(),
            timers: Rc::new(NoTimers),
            budget: None,
            retry: None,
            compaction: None,
        }
    }

    /// The options' values as SPEC asks them to be (`check_options`: a timeout a timer can wait, a positive
    /// budget, non-negative delays, positive token limits, custom roles that are none of SPEC's): an error
    /// names the field. (`messages` is checked as a run checks its input: `Agent::new`.)
    pub fn check(&self) -> Result<(), AgentError> {
        let (retry, compaction) = (self.retry.as_ref(), self.compaction.as_ref());
        let timeout = self.tool_timeout_ms;
        check_options(
            timeout,
            self.budget.as_ref(),
            retry,
            compaction,
            &self.custom_roles,
        )
        .map_err(|invalid| AgentError::Input(invalid.into()))
    }
}

/// What the agent is made with, but its model and functions: the tools' names, the numbers, the options.
impl<M> std::fmt::Debug for AgentOptions<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        f.debug_struct("AgentOptions")
            .field("tools", &tools)
            .field("system_prompt", &self.system_prompt)
            .field("max_steps", &self.max_steps)
            .field("messages", &self.messages.len())
            .field("custom_roles", &self.custom_roles)
            .field("budget", &self.budget)
            .field("retry", &self.retry)
            .field("compaction", &self.compaction)
            .finish_non_exhaustive()
    }
}

/// A stateful conversation over `run_agent_loop` (SPEC §9). See the module for its state table.
pub struct Agent<M: Model> {
    inner: Rc<Inner<M>>,
}

/// Another handle on the same agent: its conversation, listeners and runs.
impl<M: Model> Clone for Agent<M> {
    fn clone(&self) -> Self {
        Agent {
            inner: self.inner.clone(),
        }
    }
}

/// A handle on an agent that does not keep it alive (a host's unsubscribe function holds one).
pub struct WeakAgent<M: Model>(std::rc::Weak<Inner<M>>);

impl<M: Model> Clone for WeakAgent<M> {
    fn clone(&self) -> Self {
        WeakAgent(self.0.clone())
    }
}

/// The agent's state, steps and the size of its conversation.
impl<M: Model + 'static> std::fmt::Debug for Agent<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("state", &self.state())
            .field("steps", &self.steps())
            .field("messages", &self.with_messages(<[AgentMessage]>::len))
            .finish_non_exhaustive()
    }
}

impl<M: Model> WeakAgent<M> {
    /// The agent, if it is still alive.
    pub fn upgrade(&self) -> Option<Agent<M>> {
        self.0.upgrade().map(|inner| Agent { inner })
    }
}

/// The model's event type, which listeners receive.
type Event<M> = <<M as Model>::Stream as ModelStream>::Event;

struct Inner<M: Model> {
    options: AgentOptions<M>,
    conversation: RefCell<Conversation>,
    steering: Inbox,
    follow_up: Inbox,
    listeners: Listeners<Event<M>>,
}

/// The state and what goes with it.
struct Conversation {
    state: AgentState,
    /// The transcript, shared with the run in progress (which appends to it): nothing is copied per run.
    messages: Transcript,
    /// Paused: the calls that wait, and the steps the paused run made (the resumed run counts on).
    pending: Vec<PendingCall>,
    steps: u32,
    /// Running: the run's abort controller.
    controller: Option<AbortController>,
    /// Running: `wait_for_idle` futures to wake when it ends.
    idle: Vec<oneshot::Sender<()>>,
}

impl<M: Model + 'static> Agent<M> {
    /// An agent over `options`. Refused when `options.messages` has a pairing problem beyond the calls of its
    /// last assistant message that wait for results (`check_start`: a call without a result anywhere else, a
    /// result before its call or answering none, two results for a call, an id used twice in one message),
    /// the first one named (`options.messages[3]: ...`), or a compaction entry whose cut no run could make;
    /// when that message has such calls, the agent starts paused on them.
    /// Refused too when an option's value is not one SPEC allows (`AgentOptions::check`); a paused agent's
    /// resume counts steps on from `options.start_steps`.
    pub fn new(options: AgentOptions<M>) -> Result<Self, AgentError> {
        Self::starting(options, &|index| format!("options.messages[{index}]"))
    }

    /// An agent over `options` whose conversation is the JSONL `text` (`to_jsonl`'s): paused when its last
    /// message has calls without results. Refused as `new` refuses a transcript, the problem named by its
    /// line (`line 4: ...`).
    pub fn from_jsonl(text: &str, mut options: AgentOptions<M>) -> Result<Self, AgentError> {
        options.messages = parse_jsonl_with_roles(text, &options.custom_roles)
            .map_err(|e| AgentError::Input(e.to_string()))?;
        let lines: Vec<usize> = jsonl_lines(text).map(|(line, _)| line).collect();
        check_entries_named(&options.messages, &|at| {
            format!("line {}: message", lines[at])
        })
        .map_err(AgentError::Input)?;
        Self::starting(options, &|index| format!("line {}", lines[index]))
    }

    /// `new`, naming the messages by `name` in its error.
    fn starting(
        mut options: AgentOptions<M>,
        name: &dyn Fn(usize) -> String,
    ) -> Result<Self, AgentError> {
        options.check()?;
        let (state, pending) = starting_state_named(&*options.executor, &options.messages, name)?;
        let conversation = Conversation {
            state,
            messages: Rc::new(RefCell::new(std::mem::take(&mut options.messages))),
            pending,
            steps: options.start_steps,
            controller: None,
            idle: Vec::new(),
        };
        Ok(Agent {
            inner: Rc::new(Inner {
                options,
                conversation: RefCell::new(conversation),
                steering: Inbox::default(),
                follow_up: Inbox::default(),
                listeners: Listeners::default(),
            }),
        })
    }

    /// The conversation as JSON Lines (`parse_jsonl`, `Agent::from_jsonl` read it back).
    pub fn to_jsonl(&self) -> String {
        to_jsonl(&self.inner.conversation.borrow().messages.borrow())
    }

    /// Appends `input` (user and custom-role messages) and runs; the run's result. Refused while a run is
    /// in progress (`steer` / `follow_up` add to it) or while paused (`resume` / `abort` first).
    pub fn prompt(
        &self,
        input: Vec<AgentMessage>,
    ) -> impl Future<Output = Result<RunResult, AgentError>> + 'static {
        refused_later(self.prompt_with(input, true))
    }

    /// `prompt`; the result's `messages` a copy of the conversation when `copy` says so, else left empty
    /// (a host that reads the conversation in place, `with_messages`, copies nothing: the wasm bridge). A
    /// refusal comes at once, not from the run's future (the bridge throws it with the caller's stack).
    pub(crate) fn prompt_with(&self, input: Vec<AgentMessage>, copy: bool) -> RunStart {
        let started = self
            .check_input(&input, None)
            .and_then(|()| self.start(AgentAction::Prompt, input));
        self.run(started, Approvals::new(), copy)
    }

    /// `prompt` with one user message of `text`, stamped by the agent's clock.
    pub fn prompt_text(
        &self,
        text: &str,
    ) -> impl Future<Output = Result<RunResult, AgentError>> + 'static {
        self.prompt(vec![AgentMessage::user(text, (self.inner.options.clock)())])
    }

    /// Continues a paused run with `approvals` (SPEC §8): its pending calls are answered or run, and the run
    /// goes on, counting its steps from the paused run's. A call still without a decision pauses it again,
    /// with nothing of its batch run: the next `resume` gives every decision of that batch again (the agent
    /// keeps none between resumes).
    pub fn resume(
        &self,
        approvals: Approvals,
    ) -> impl Future<Output = Result<RunResult, AgentError>> + 'static {
        refused_later(self.resume_with(approvals, true))
    }

    /// `resume`, the result's `messages` and a refusal as `prompt_with` says.
    pub(crate) fn resume_with(&self, approvals: Approvals, copy: bool) -> RunStart {
        let started = self.start(AgentAction::Resume, Vec::new());
        self.run(started, approvals, copy)
    }

    /// Queues a message the running loop takes after its current batch (or, with no run, the next run
    /// does). Only user and custom-role messages may be queued.
    pub fn steer(&self, message: AgentMessage) -> Result<(), AgentError> {
        self.queue(&self.inner.steering, message)
    }

    /// Queues a message the running loop takes when the model would stop (or, with no run, the next run
    /// does).
    pub fn follow_up(&self, message: AgentMessage) -> Result<(), AgentError> {
        self.queue(&self.inner.follow_up, message)
    }

    /// Running: aborts the run's signal. Paused: answers the pending calls with skipped results, reason
    /// `interrupted`, and goes idle. Idle: nothing.
    pub fn abort(&self) {
        let Ok(effect) = self.act(AgentAction::Abort) else {
            return;
        };
        match effect {
            AgentEffect::AbortRun => {
                let controller = self.inner.conversation.borrow().controller.clone();
                // Outside the borrow: the abort may call back into the app.
                if let Some(controller) = controller {
                    controller.abort();
                }
            }
            AgentEffect::Interrupt => {
                let now = (self.inner.options.clock)();
                let mut conversation = self.inner.conversation.borrow_mut();
                let repaired = repair_transcript(&conversation.messages.borrow(), now);
                *conversation.messages.borrow_mut() = repaired.messages;
                conversation.pending.clear();
                conversation.steps = 0;
            }
            _ => {}
        }
    }

    /// Resolves once no run is in progress (at once if none is).
    pub fn wait_for_idle(&self) -> impl Future<Output = ()> + 'static {
        let mut conversation = self.inner.conversation.borrow_mut();
        let waiting = (conversation.state == AgentState::Running).then(|| {
            let (wake, woken) = oneshot::channel();
            conversation.idle.push(wake);
            woken
        });
        async move {
            if let Some(woken) = waiting {
                let _ = woken.await;
            }
        }
    }

    /// Forgets the conversation, the queued messages and the pending calls. Refused while a run is in
    /// progress (`abort` and `wait_for_idle` first).
    pub fn reset(&self) -> Result<(), AgentError> {
        self.act(AgentAction::Reset)?;
        let mut conversation = self.inner.conversation.borrow_mut();
        conversation.messages.borrow_mut().clear();
        conversation.pending.clear();
        conversation.steps = 0;
        drop(conversation);
        self.inner.steering.0.borrow_mut().clear();
        self.inner.follow_up.0.borrow_mut().clear();
        Ok(())
    }

    /// Adds a listener of every event of every run, in order, awaited like `onEvent` (one that fails is
    /// reported as the run's `observer_error`, and the run goes on).
    pub fn subscribe(&self, listener: Rc<dyn Observer<Event<M>>>) -> ListenerId {
        self.inner.listeners.add(listener)
    }

    /// Removes a listener; `false` if it was not there.
    pub fn unsubscribe(&self, id: ListenerId) -> bool {
        self.inner.listeners.remove(id)
    }

    /// The conversation so far: during a run, with its input and what it has appended yet.
    pub fn messages(&self) -> Vec<AgentMessage> {
        self.with_messages(<[AgentMessage]>::to_vec)
    }

    /// `f` of the conversation so far, lent (`messages` without the copy).
    ///
    /// # Panics
    /// If `f` starts or ends a run of this agent (`prompt`, `resume`, `reset`, `abort` while paused, or
    /// dropping a run's future): the conversation is borrowed while `f` runs.
    pub fn with_messages<R>(&self, f: impl FnOnce(&[AgentMessage]) -> R) -> R {
        let transcript = self.inner.conversation.borrow().messages.clone();
        let messages = transcript.borrow();
        f(&messages)
    }

    /// A handle that does not keep the agent alive.
    pub fn downgrade(&self) -> WeakAgent<M> {
        WeakAgent(Rc::downgrade(&self.inner))
    }

    /// The agent's clock (what it stamps a prompted text with).
    pub fn now(&self) -> f64 {
        (self.inner.options.clock)()
    }

    /// The model the agent's runs ask.
    pub fn model(&self) -> &M {
        &self.inner.options.model
    }

    /// Idle, running or paused.
    pub fn state(&self) -> AgentState {
        self.inner.conversation.borrow().state
    }

    /// Whether a run is in progress.
    pub fn is_running(&self) -> bool {
        self.state() == AgentState::Running
    }

    /// The steps the last run made (a paused agent restored from JSONL: `start_steps`). A paused
    /// conversation's resume counts on from them: an app that saves one keeps this beside its JSONL and
    /// hands it back as `AgentOptions::start_steps`.
    pub fn steps(&self) -> u32 {
        self.inner.conversation.borrow().steps
    }

    /// Paused: the calls of the last message, in call order (`needs_approval` says which wait).
    pub fn pending(&self) -> Option<Vec<PendingCall>> {
        let conversation = self.inner.conversation.borrow();
        (conversation.state == AgentState::Paused).then(|| conversation.pending.clone())
    }

    /// Applies the table to `action`: the effect, or the error of a refusal (then nothing changes).
    fn act(&self, action: AgentAction) -> Result<AgentEffect, AgentError> {
        let mut conversation = self.inner.conversation.borrow_mut();
        match conversation.state.on(action) {
            (_, AgentEffect::Refuse(error)) => Err(error),
            (next, effect) => {
                conversation.state = next;
                Ok(effect)
            }
        }
    }

    fn check_input(&self, input: &[AgentMessage], what: Option<&str>) -> Result<(), AgentError> {
        check_input(input, &self.inner.options.custom_roles, what)
    }

    fn queue(&self, inbox: &Inbox, message: AgentMessage) -> Result<(), AgentError> {
        self.check_input(std::slice::from_ref(&message), Some("message"))?;
        self.act(AgentAction::Queue)?;
        inbox.0.borrow_mut().push(message);
        Ok(())
    }

    /// Starts a run now (the table says whether): what it starts from.
    fn start(&self, action: AgentAction, input: Vec<AgentMessage>) -> Result<Start, AgentError> {
        let before = self.state();
        self.act(action)?;
        let mut conversation = self.inner.conversation.borrow_mut();
        conversation.messages.borrow_mut().extend(input);
        let controller = AbortController::new();
        conversation.controller = Some(controller.clone());
        let start_steps = match action {
            AgentAction::Resume => conversation.steps,
            _ => 0,
        };
        let transcript = conversation.messages.clone();
        // Idle: every call has its result (the prompt's input neither calls nor answers). Paused: the
        // calls waiting are the last assistant message's.
        let open = match before {
            AgentState::Paused => {
                (transcript.borrow().iter()).rposition(|m| matches!(m, AgentMessage::Assistant(_)))
            }
            _ => None,
        };
        Ok(Start {
            transcript,
            controller,
            start_steps,
            pairing: Pairing::Whole { open },
        })
    }

    /// The run itself, as a future that owns what it needs. Over the conversation's transcript, in place:
    /// the result's `messages` are a copy of it when `copy` says so, else left empty (`with_messages` reads
    /// them).
    fn run(&self, start: Result<Start, AgentError>, approvals: Approvals, copy: bool) -> RunStart {
        let inner = self.inner.clone();
        let start = start?;
        // The settling made now, not at the first poll: a future dropped unpolled settles its run too.
        let mut settle = Settle {
            inner: inner.clone(),
            ended: false,
            finished: Rc::default(),
        };
        Ok(Box::pin(async move {
            let options = &inner.options;
            let observer = Keeping {
                listeners: &inner.listeners,
                finished: &settle.finished,
            };
            let result = run_over(
                LoopOptions {
                    context: AgentContext {
                        system_prompt: options.system_prompt.clone(),
                        messages: Vec::new(),
                    },
                    model: &options.model,
                    tools: options.tools.clone(),
                    executor: &*options.executor,
                    signal: start.controller.signal(),
                    max_steps: options.max_steps,
                    observer: &observer,
                    clock: options.clock.clone(),
                    control: LoopControl {
                        tool_execution: options.tool_execution,
                        tool_timeout_ms: options.tool_timeout_ms,
                        before_tool_call: options.before_tool_call.as_deref(),
                        after_tool_call: options.after_tool_call.as_deref(),
                        prepare_request: options.prepare_request.as_deref(),
                        steering: Some(&inner.steering),
                        follow_up: Some(&inner.follow_up),
                        custom_roles: options.custom_roles.clone(),
                        timers: &*options.timers,
                        approvals,
                        start_steps: start.start_steps,
                        budget: options.budget,
                        retry: options.retry.as_ref(),
                        compaction: options.compaction.as_ref(),
                    },
                },
                &start.transcript,
                start.pairing,
            )
            .await;
            match result {
                Ok(mut result) => {
                    settle.ended(&result);
                    if copy {
                        result.messages = start.transcript.borrow().clone();
                    }
                    Ok(result)
                }
                // The agent's transcripts are whole by construction; kept for the type's sake.
                Err(error) => Err(AgentError::Input(error.to_string())),
            }
        }))
    }
}

/// A run the agent started, or why it did not start (`AgentError::Running`, `NotPaused`, bad input).
pub(crate) type RunStart =
    Result<LocalBoxFuture<'static, Result<RunResult, AgentError>>, AgentError>;

/// A start's refusal as the run's answer, for Rust callers (a future, refusing when awaited).
fn refused_later(start: RunStart) -> LocalBoxFuture<'static, Result<RunResult, AgentError>> {
    start.unwrap_or_else(|refused| Box::pin(std::future::ready(Err(refused))))
}

/// What a run starts from.
struct Start {
    /// The conversation's transcript, the input appended.
    transcript: Transcript,
    controller: AbortController,
    start_steps: u32,
    /// What the agent knows of the transcript's pairing (its runs need not check it again).
    pairing: Pairing,
}

/// Ends a run's part in the agent's state: with its result (`ended`), or, when the run's future is dropped
/// before it ends (a Rust caller may), as `abort` ends a paused run: what the run appended stays, a call of
/// the batch in flight that had ended is answered with its result (it ran: the model must not be told it
/// did not), each other call without a result is answered `interrupted` (none runs again), and the agent is
/// idle. A dropped run emits no `turn_end`.
struct Settle<M: Model> {
    inner: Rc<Inner<M>>,
    ended: bool,
    /// The results of the batch in flight that ended, as `Keeping` saw them.
    finished: Rc<RefCell<Vec<ToolResultMessage>>>,
}

/// The agent's listeners, and a note of each result of the batch in flight as it ends (its execution's, then
/// its `tool_end`'s or `tool_skipped`'s; a new response starts the note again): the results a dropped run
/// keeps.
struct Keeping<'a, E> {
    listeners: &'a Listeners<E>,
    finished: &'a RefCell<Vec<ToolResultMessage>>,
}

impl<E> Keeping<'_, E> {
    /// `result` noted, in place of what was noted of its call before.
    fn note(&self, result: &ToolResultMessage) {
        let mut finished = self.finished.borrow_mut();
        let id = &result.tool_call_id;
        match finished.iter_mut().find(|noted| noted.tool_call_id == *id) {
            Some(noted) => *noted = result.clone(),
            None => finished.push(result.clone()),
        }
    }
}

impl<E> Observer<E> for Keeping<'_, E> {
    fn on_event(&self, event: LoopEvent<'_, E>) -> Observed {
        match &event {
            LoopEvent::AssistantMessage { .. } => self.finished.borrow_mut().clear(),
            LoopEvent::ToolEnd { result, .. } | LoopEvent::ToolSkipped { result, .. } => {
                self.note(result)
            }
            _ => {}
        }
        self.listeners.on_event(event)
    }

    fn on_executed(&self, result: &ToolResultMessage) {
        self.note(result);
    }
}

impl<M: Model> Settle<M> {
    fn ended(&mut self, result: &RunResult) {
        self.ended = true;
        let mut conversation = self.inner.conversation.borrow_mut();
        let paused = result.reason == RunReason::Paused;
        let (next, _) = conversation.state.on(AgentAction::RunEnded { paused });
        conversation.state = next;
        conversation.pending = result.pending.clone().unwrap_or_default();
        conversation.steps = result.steps;
        self.wake(conversation);
    }

    fn wake(&self, mut conversation: std::cell::RefMut<'_, Conversation>) {
        conversation.controller = None;
        let idle = std::mem::take(&mut conversation.idle);
        drop(conversation);
        for wake in idle {
            let _ = wake.send(());
        }
    }
}

impl<M: Model> Drop for Settle<M> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let now = (self.inner.options.clock)();
        let mut conversation = self.inner.conversation.borrow_mut();
        let repaired = repair_transcript(&conversation.messages.borrow(), now);
        let mut messages = repaired.messages;
        // Only the batch in flight lacks results: the repair's are the transcript's last messages.
        let at = messages.len() - repaired.repaired;
        let mut finished = self.finished.take();
        for message in &mut messages[at..] {
            let AgentMessage::ToolResult(result) = message else {
                continue;
            };
            if let Some(k) = (finished.iter()).position(|f| f.tool_call_id == result.tool_call_id) {
                *result = finished.remove(k);
            }
        }
        *conversation.messages.borrow_mut() = messages;
        conversation.state = AgentState::Idle;
        conversation.pending.clear();
        conversation.steps = 0;
        self.wake(conversation);
    }
}

/// Whether `input` may be prompted or queued: only user messages and messages of a role in `custom_roles`
/// may (`what` names one message, else each is `input[index]`).
pub(crate) fn check_input(
    input: &[AgentMessage],
    custom_roles: &[String],
    what: Option<&str>,
) -> Result<(), AgentError> {
    match input.iter().position(|m| !may_queue(m, custom_roles)) {
        None => Ok(()),
        Some(index) => Err(AgentError::Input(format!(
            "{}.{}",
            what.map_or_else(|| format!("input[{index}]"), str::to_owned),
            role_refused(input[index].role(), custom_roles)
        ))),
    }
}

/// Reads one message an agent is prompted with or queues (SPEC §9), for a host that gets its input as JSON:
/// a user message or a message of a role in `custom_roles`. Any other role is refused before the message's
/// shape is read, naming the roles that may be (`may_queue`'s rule, which `Agent::prompt` applies to
/// messages already built).
pub fn read_input(value: Value, custom_roles: &[String]) -> Result<AgentMessage, Invalid> {
    match value.get("role").and_then(Value::as_str) {
        Some(role) if role != "user" && !custom_roles.iter().any(|r| r == role) => {
            Err(role_refused(role, custom_roles).into())
        }
        _ => AgentMessage::from_value_with_roles(value, custom_roles),
    }
}

/// `role must be "user" ... (got "assistant"): ...`, the roles an agent takes as input named.
fn role_refused(role: &str, custom_roles: &[String]) -> String {
    let customs: Vec<String> = custom_roles
        .iter()
        .map(|r| Value::from(r.as_str()).to_string())
        .collect();
    let others = match customs.is_empty() {
        true => String::new(),
        false => format!(" or one of customRoles ({})", customs.join(", ")),
    };
    format!(
        "role must be \"user\"{others} (got {}): only user messages and messages of a role in \
         customRoles may be prompted or queued",
        Value::from(role)
    )
}

/// The state an agent over `messages` starts in, and the calls it then waits on: paused when its last
/// assistant message has calls without results; refused for any other pairing problem, or for a compaction
/// entry whose cut no run could make (`check_start`), the messages named by `name` in the error.
fn starting_state_named(
    executor: &dyn ToolExecutor,
    messages: &[AgentMessage],
    name: &dyn Fn(usize) -> String,
) -> Result<(AgentState, Vec<PendingCall>), AgentError> {
    let open = check_start(messages).map_err(|e| AgentError::Input(e.describe(name)))?;
    let pending = pending_now(executor, messages, &open);
    let state = match pending.is_empty() {
        true => AgentState::Idle,
        false => AgentState::Paused,
    };
    Ok((state, pending))
}

/// The pending calls of a transcript's open batch (`open`), their need asked at once: a need that can only
/// be answered later counts as `true` (the call is shown as waiting; resuming asks again).
fn pending_now(
    executor: &dyn ToolExecutor,
    messages: &[AgentMessage],
    open: &[Unanswered],
) -> Vec<PendingCall> {
    let Some(AgentMessage::Assistant(message)) = open.first().map(|call| &messages[call.index])
    else {
        return Vec::new();
    };
    let calls = open.iter().filter_map(|unanswered| {
        (message.tool_calls()).find(|call| call.id == unanswered.tool_call_id)
    });
    calls
        .map(|call| {
            let need = (executor.needs_approval(call))
                .is_some_and(|answer| answer.now_or_never().map_or(true, needed));
            PendingCall::new(call, need)
        })
        .collect()
}

/// One of the agent's queues: what `steer` / `follow_up` put in, until a run takes it.
#[derive(Default)]
struct Inbox(RefCell<Vec<AgentMessage>>);

impl MessageQueue for Inbox {
    fn take_messages(&self) -> HookFuture<'_, Vec<AgentMessage>> {
        let taken = std::mem::take(&mut *self.0.borrow_mut());
        Box::pin(async move { Ok(taken) })
    }
}

/// A listener, by its id.
type Listener<E> = (ListenerId, Rc<dyn Observer<E>>);

/// The agent's listeners, as one observer of its runs.
struct Listeners<E> {
    /// Replaced, never changed in place: a listener may (un)subscribe while the list is being called.
    list: RefCell<Rc<[Listener<E>]>>,
    next: Cell<ListenerId>,
}

impl<E> Default for Listeners<E> {
    fn default() -> Self {
        Listeners {
            list: RefCell::new(Rc::new([])),
            next: Cell::new(0),
        }
    }
}

impl<E> Listeners<E> {
    fn add(&self, listener: Rc<dyn Observer<E>>) -> ListenerId {
        let id = self.next.get();
        self.next.set(id.wrapping_add(1));
        let list: Rc<[_]> = (self.list.borrow().iter().cloned())
            .chain([(id, listener)])
            .collect();
        *self.list.borrow_mut() = list;
        id
    }

    fn remove(&self, id: ListenerId) -> bool {
        let list: Rc<[_]> = (self.list.borrow().iter())
            .filter(|(known, _)| *known != id)
            .cloned()
            .collect();
        let removed = list.len() < self.list.borrow().len();
        *self.list.borrow_mut() = list;
        removed
    }
}

impl<E> Observer<E> for Listeners<E> {
    /// Each listener in turn gets the event; then whatever they returned is awaited, in the same order.
    /// The first error (thrown, then rejected) is the one reported.
    fn on_event(&self, event: LoopEvent<'_, E>) -> Observed {
        let list = self.list.borrow().clone();
        if let [(_, only)] = &*list {
            return only.on_event(event);
        }
        let mut waits = Vec::new();
        let mut first_error = None;
        for (_, listener) in list.iter() {
            match listener.on_event(event) {
                Ok(None) => {}
                Ok(Some(wait)) => waits.push(wait),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        if waits.is_empty() {
            return first_error.map_or(Ok(None), Err);
        }
        Ok(Some(Box::pin(async move {
            for wait in waits {
                if let Err(error) = wait.await {
                    first_error.get_or_insert(error);
                }
            }
            first_error.map_or(Ok(()), Err)
        })))
    }
}
