//! Loop control: what a run may be given beyond part one. SPEC §7's hooks around each tool call and each
//! request, the steering and follow-up queues, how calls are executed, their timeouts, and the timers
//! behind them; §8's approvals; part three's budget (`crate::usage`), retry policy (`crate::retry`) and
//! compaction (`crate::compaction`). Every part is optional: `LoopControl::default()` is a part-one run,
//! event for event.
//!
//! Hooks, queues and timers are traits, so a host implements them its own way (the wasm bridge calls JS
//! functions and uses JS timers; native tests drive them by hand). A hook answers with a future of
//! `Result`: an `Err` is a hook that threw, its message. A Rust app lends its hooks to the run:
//!
//! ```ignore-wasm32
//! use std::rc::Rc;
//! use serde_json::{json, Value};
//! use tiny_pi::*;
//!
//! /// Blocks every call to `delete`.
//! struct NoDeletes;
//!
//! impl BeforeToolCall for NoDeletes {
//!     fn before_tool_call<'a>(
//!         &'a self,
//!         call: &'a ToolCall,
//!         _context: HookContext<'a>,
//!     ) -> HookFuture<'a, Option<Block>> {
//!         let verdict = (call.name == "delete").then(|| Block {
//!             reason: Some("Deleting is not allowed.".into()),
//!         });
//!         Box::pin(async move { Ok(verdict) })
//!     }
//! }
//!
//! let mut tools = ToolRegistry::new();
//! let definition = ToolDefinition {
//!     name: "delete".into(),
//!     description: "Delete a file".into(),
//!     parameters: json!({"type": "object"}),
//! };
//! let handler = |_: Value, _: ToolCallContext| async { Ok(ToolOutput::default()) };
//! tools.register(Tool::new(definition, Rc::new(handler))).unwrap();
//! let model = ScriptedModel::new(vec![
//!     AssistantMessage::new(
//!         vec![AssistantBlock::tool_call("c1", "delete", json!({"path": "a"}))],
//!         StopReason::ToolUse,
//!     ),
//!     AssistantMessage::new(vec![AssistantBlock::text("I may not.")], StopReason::Stop),
//! ]);
//! let result = futures::executor::block_on(run_agent_loop(LoopOptions {
//!     context: AgentContext {
//!         system_prompt: None,
//!         messages: vec![AgentMessage::user("Clean up.", 0.0)],
//!     },
//!     model: &model,
//!     tools: tools.definitions(),
//!     executor: &tools,
//!     signal: AbortSignal::none(),
//!     max_steps: DEFAULT_MAX_STEPS,
//!     observer: &NoObserver,
//!     clock: Rc::new(|| 0.0),
//!     control: LoopControl {
//!         before_tool_call: Some(&NoDeletes),
//!         ..LoopControl::default()
//!     },
//! }))
//! .unwrap();
//! let AgentMessage::ToolResult(blocked) = &result.messages[2] else { unreachable!() };
//! assert_eq!(blocked.content, vec![MediaBlock::text("Deleting is not allowed.")]);
//! assert_eq!(blocked.details, Some(json!({"skipped": true, "reason": "blocked"})));
//! ```

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures::channel::oneshot;
use futures::future::LocalBoxFuture;
use futures::FutureExt;
use serde_json::Value;

use crate::approval::Approvals;
use crate::compaction::CompactionOptions;
use crate::invalid::Invalid;
use crate::message::{check_custom_roles, AgentMessage, MediaBlock, ToolCall, ToolResultMessage};
use crate::model::{ModelRequest, Sources};
use crate::retry::RetryPolicy;
use crate::signal::{AbortSignal, Registration};
use crate::tools::definition::ToolDefinition;
use crate::tools::executor::{ExecutionMode, HookFuture};
use crate::usage::Budget;

/// What every hook gets beside its subject. Lent: a hook that keeps any of it must copy it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct HookContext<'a> {
    /// For a tool hook, the call's own signal (it also aborts when the call times out); for
    /// `prepareRequest`, the run's.
    pub signal: &'a AbortSignal,
    /// For a tool hook, the number of the request whose response is being answered (1 for the first);
    /// for `prepareRequest`, the number the request about to be made will have.
    pub step: u32,
    /// The transcript so far, custom-role messages included (a batch's results are not in it yet).
    pub messages: &'a [AgentMessage],
}

/// `beforeToolCall`'s `{block: true, reason?}`: the call is answered with a skipped result, reason
/// `blocked`, and never runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    /// The skipped result's text; `None` gives `Tool call was blocked.`
    pub reason: Option<String>,
}

/// What `afterToolCall` may change in a call's result before its `tool_end`. `None` keeps the field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResultPatch {
    pub content: Option<Vec<MediaBlock>>,
    pub details: Option<Value>,
    pub is_error: Option<bool>,
    /// Replaces what the tool asked for (`true` ends the run after the batch; `false` overrules a tool
    /// that asked to terminate).
    pub terminate: Option<bool>,
}

impl ResultPatch {
    /// Whether applying the patch changes the result message (`terminate` alone does not).
    pub fn changes_result(&self) -> bool {
        self.content.is_some() || self.details.is_some() || self.is_error.is_some()
    }

    /// Writes the patch into `result` and the call's terminate flag.
    pub fn apply(self, result: &mut ToolResultMessage, terminate: &mut bool) {
        if let Some(content) = self.content {
            result.content = content;
        }
        if let Some(details) = self.details {
            result.details = Some(details);
        }
        if let Some(is_error) = self.is_error {
            result.is_error = is_error;
        }
        if let Some(flag) = self.terminate {
            *terminate = flag;
        }
    }
}

/// What `prepareRequest` may replace in the request the loop built. `None` keeps the field. The
/// transcript is never changed; replaced `messages` must still pair every call with one result after it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestPatch {
    pub system_prompt: Option<String>,
    pub messages: Option<Vec<AgentMessage>>,
    pub tools: Option<Vec<ToolDefinition>>,
}

impl RequestPatch {
    /// `request` with this patch's fields in place of its own.
    pub fn apply<'a>(&'a self, request: ModelRequest<'a>) -> ModelRequest<'a> {
        let (messages, sources) = match &self.messages {
            Some(messages) => (&messages[..], Sources::Other),
            None => (request.messages, request.sources),
        };
        ModelRequest {
            system_prompt: self.system_prompt.as_deref().or(request.system_prompt),
            messages,
            tools: self.tools.as_deref().unwrap_or(request.tools),
            sources,
            attempt: request.attempt,
        }
    }
}

/// `beforeToolCall`: asked in phase 1 of a batch, in call order, one call at a time, for every call its
/// executor would not refuse outright. `Ok(Some(block))` blocks the call; an `Err` (the hook threw) blocks it
/// with the text `beforeToolCall failed: <message>`.
pub trait BeforeToolCall {
    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<Block>>;
}

/// A function or closure is a `beforeToolCall` that answers at once: `|call: &ToolCall, _: HookContext| ...`.
impl<F> BeforeToolCall for F
where
    F: Fn(&ToolCall, HookContext<'_>) -> Result<Option<Block>, String>,
{
    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<Block>> {
        Box::pin(std::future::ready(self(call, context)))
    }
}

/// `afterToolCall`: asked for every executed call the hooks see (timed-out and failed ones included), as it
/// finishes and before its `tool_end`. An `Err` (the hook threw) makes the result an error result with the
/// text `afterToolCall failed: <message>`; what the tool asked about `terminate` still holds then.
pub trait AfterToolCall {
    fn after_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        result: &'a ToolResultMessage,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<ResultPatch>>;
}

/// A function or closure is an `afterToolCall` that answers at once.
impl<F> AfterToolCall for F
where
    F: Fn(&ToolCall, &ToolResultMessage, HookContext<'_>) -> Result<Option<ResultPatch>, String>,
{
    fn after_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
        result: &'a ToolResultMessage,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<ResultPatch>> {
        Box::pin(std::future::ready(self(call, result, context)))
    }
}

/// `prepareRequest`: asked before every model request with the request the loop built. An `Err` (the hook
/// threw), or replaced messages that break the pairing, end the run with reason `error`; the request is
/// not made and not counted.
pub trait PrepareRequest {
    fn prepare_request<'a>(
        &'a self,
        request: ModelRequest<'a>,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<RequestPatch>>;
}

/// A function or closure is a `prepareRequest` that answers at once.
impl<F> PrepareRequest for F
where
    F: Fn(ModelRequest<'_>, HookContext<'_>) -> Result<Option<RequestPatch>, String>,
{
    fn prepare_request<'a>(
        &'a self,
        request: ModelRequest<'a>,
        context: HookContext<'a>,
    ) -> HookFuture<'a, Option<RequestPatch>> {
        Box::pin(std::future::ready(self(request, context)))
    }
}

/// `getSteeringMessages` / `getFollowUpMessages`: asked only at the two points SPEC §7 names. Only user and
/// custom-role messages may be queued; anything else, or an `Err` (the function threw), ends the run with
/// reason `error`, and nothing of what it returned is appended.
pub trait MessageQueue {
    fn take_messages(&self) -> HookFuture<'_, Vec<AgentMessage>>;
}

/// A function or closure is a queue that answers at once (an empty `Vec`: nothing queued).
impl<F> MessageQueue for F
where
    F: Fn() -> Result<Vec<AgentMessage>, String>,
{
    fn take_messages(&self) -> HookFuture<'_, Vec<AgentMessage>> {
        Box::pin(std::future::ready(self()))
    }
}

/// The longest single timer the core sets: `setTimeout`'s (2^31 - 1 ms, about 24.8 days), which fires at
/// once when asked for longer. A longer wait is several timers, one after another.
pub const LONGEST_TIMER_MS: u32 = i32::MAX as u32;

/// What a timeout is (SPEC §7: `toolTimeoutMs`, a tool's `timeoutMs`): a whole number of milliseconds a
/// host's timer can wait.
pub const TIMEOUT_MS_RULE: &str = "a positive integer number of milliseconds, at most 2147483647";

/// A timeout (`what` names it) that is `TIMEOUT_MS_RULE`, or none.
pub fn check_timeout_ms(ms: Option<u32>, what: &str) -> Result<(), Invalid> {
    match ms {
        Some(ms) if ms == 0 || ms > LONGEST_TIMER_MS => Err(Invalid::from(format!(
            "{what} must be {TIMEOUT_MS_RULE} (got {ms})"
        ))),
        _ => Ok(()),
    }
}

/// The host's timers: per-call timeouts (SPEC §7) and the waits before retries (SPEC §12). One method, a
/// wait of so many milliseconds, made from the runtime's own timer future or from a callback timer such
/// as `setTimeout` (the wasm bridge's). On tokio, `Sleep::new(tokio::time::sleep(duration))`; on any
/// executor, with the `futures-timer` crate:
///
/// ```ignore-wasm32
/// use std::time::Duration;
/// use tiny_pi::{Sleep, Timers};
///
/// struct RealTime;
///
/// impl Timers for RealTime {
///     fn sleep(&self, ms: u32) -> Sleep {
///         Sleep::new(futures_timer::Delay::new(Duration::from_millis(ms.into())))
///     }
/// }
///
/// assert!(futures::executor::block_on(RealTime.sleep(5)));
/// ```
pub trait Timers {
    /// A wait of `ms` milliseconds (the core never asks for more than `LONGEST_TIMER_MS`). It ends with
    /// `true` when the time has passed, or at once with `false` from timers that never fire (`NoTimers`).
    /// Dropped before it ends, its timer is cleared.
    fn sleep(&self, ms: u32) -> Sleep;
}

/// `Timers::sleep`'s wait: `true` when the time has passed, `false` from timers that never fire.
#[must_use = "a wait does nothing unless awaited"]
pub struct Sleep(Waiting);

enum Waiting {
    Elapsing(LocalBoxFuture<'static, ()>),
    Called {
        fired: oneshot::Receiver<()>,
        /// What `on_elapsed` asks to run in the timer's callback, or that the callback has run.
        at_fire: Rc<Cell<AtFire>>,
        _registration: Registration,
    },
    Never,
}

/// A callback timer's part in `on_elapsed`.
#[derive(Default)]
enum AtFire {
    #[default]
    Nothing,
    Effect(Box<dyn FnOnce()>),
    /// The timer fired (perhaps inside its own `set`), before any effect was asked for.
    Fired,
}

impl Sleep {
    /// A wait that ends when `elapsed` does: a runtime's timer future (`tokio::time::sleep`,
    /// `futures_timer::Delay`), which stops its timer when dropped.
    pub fn new(elapsed: impl Future<Output = ()> + 'static) -> Sleep {
        Sleep(Waiting::Elapsing(elapsed.boxed_local()))
    }

    /// A wait on a callback timer: `set` arms it to call `fire` once and answers the registration whose
    /// drop clears it (`Registration::new(gloo_timers::callback::Timeout::new(ms, fire))`). A timer that
    /// drops `fire` unfired never fires: the wait ends at once with `false`.
    pub fn on_callback(set: impl FnOnce(Box<dyn FnOnce()>) -> Registration) -> Sleep {
        let (fire, fired) = oneshot::channel();
        let at_fire = Rc::new(Cell::new(AtFire::Nothing));
        // Weak: a wait dropped (its timer cleared, or a host that does not clear it) runs no effect.
        let effect = Rc::downgrade(&at_fire);
        let _registration = set(Box::new(move || {
            if let Some(at_fire) = effect.upgrade() {
                if let AtFire::Effect(effect) = at_fire.replace(AtFire::Fired) {
                    effect();
                }
            }
            let _ = fire.send(());
        }));
        Sleep(Waiting::Called {
            fired,
            at_fire,
            _registration,
        })
    }

    /// A wait from timers that never fire: it ends at once with `false` (a timeout never happens, a retry
    /// does not wait).
    pub fn never() -> Sleep {
        Sleep(Waiting::Never)
    }

    /// Runs `effect` as the time passes, before the wait ends: in the callback of a callback timer (so
    /// that nothing runs between the timer and the effect), else as the future ends.
    pub(crate) fn on_elapsed(self, effect: impl FnOnce() + 'static) -> Sleep {
        match self.0 {
            Waiting::Elapsing(elapsed) => Sleep::new(elapsed.map(|()| effect())),
            Waiting::Called { ref at_fire, .. } => {
                match at_fire.take() {
                    AtFire::Fired => {
                        at_fire.set(AtFire::Fired);
                        effect();
                    }
                    _ => at_fire.set(AtFire::Effect(Box::new(effect))),
                }
                self
            }
            Waiting::Never => self,
        }
    }
}

impl Future for Sleep {
    /// Whether the time has passed (else the timers never fire: nothing to wait for).
    type Output = bool;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        match &mut self.0 {
            Waiting::Elapsing(elapsed) => elapsed.poll_unpin(cx).map(|()| true),
            Waiting::Called { fired, .. } => fired.poll_unpin(cx).map(|fired| fired.is_ok()),
            Waiting::Never => Poll::Ready(false),
        }
    }
}

/// Timers that never fire: the default, for runs that set no timeout. A timeout never happens, and a
/// wait (before a retry) ends at once.
pub struct NoTimers;

impl Timers for NoTimers {
    fn sleep(&self, _ms: u32) -> Sleep {
        Sleep::never()
    }
}

/// The options of SPEC §7, §8 and part three. The default changes nothing: no hook, no queue, parallel
/// execution, no timeout, no decisions, steps counted from 0, no budget, no retry, no compaction.
pub struct LoopControl<'a> {
    /// `toolExecution`: `Sequential` runs every batch one call at a time.
    pub tool_execution: ExecutionMode,
    /// `toolTimeoutMs`: the timeout of every call whose executor names none of its own.
    pub tool_timeout_ms: Option<u32>,
    /// `beforeToolCall`: may block a call before it runs.
    pub before_tool_call: Option<&'a dyn BeforeToolCall>,
    /// `afterToolCall`: may change a call's result, or ask the run to end, before its `tool_end`.
    pub after_tool_call: Option<&'a dyn AfterToolCall>,
    /// `prepareRequest`: may change what each model request carries.
    pub prepare_request: Option<&'a dyn PrepareRequest>,
    /// `getSteeringMessages`.
    pub steering: Option<&'a dyn MessageQueue>,
    /// `getFollowUpMessages`.
    pub follow_up: Option<&'a dyn MessageQueue>,
    /// `customRoles`: the roles of the app's own messages the run keeps and never sends.
    pub custom_roles: Vec<String>,
    /// What timeouts and the waits before retries are measured with; `NoTimers` by default (a timeout
    /// never fires, a wait ends at once).
    pub timers: &'a dyn Timers,
    /// `approvals` (SPEC §8): decisions by call id. A batch with a call that needs approval and no decision
    /// for it pauses the run; a decision applies to any call with its id (a denial denies a call whose tool
    /// needs no approval too).
    pub approvals: Approvals,
    /// `startSteps` (SPEC §8): the steps already made by the runs this one continues (a paused run's
    /// `steps`), so that `max_steps` spans the conversation; the result's `steps` counts on from it.
    pub start_steps: u32,
    /// `budget` (SPEC §11): the run ends with reason `budget` once its usage reaches a limit.
    pub budget: Option<Budget>,
    /// `retry` (SPEC §12): how failed responses are retried; `None` retries nothing.
    pub retry: Option<&'a RetryPolicy>,
    /// `compaction` (SPEC §13): when and how the context is compacted before a request.
    pub compaction: Option<&'a CompactionOptions>,
}

impl Default for LoopControl<'_> {
    fn default() -> Self {
        LoopControl {
            tool_execution: ExecutionMode::Parallel,
            tool_timeout_ms: None,
            before_tool_call: None,
            after_tool_call: None,
            prepare_request: None,
            steering: None,
            follow_up: None,
            custom_roles: Vec::new(),
            timers: &NoTimers,
            approvals: Approvals::new(),
            start_steps: 0,
            budget: None,
            retry: None,
            compaction: None,
        }
    }
}

impl LoopControl<'_> {
    /// The options' values as SPEC asks them to be (`check_options`): the first that is not, named under
    /// `options`.
    pub fn check(&self) -> Result<(), Invalid> {
        check_options(
            self.tool_timeout_ms,
            self.budget.as_ref(),
            self.retry,
            self.compaction,
            &self.custom_roles,
        )
    }
}

/// A timeout a host's timer can wait, a positive budget, non-negative finite delays, positive token limits,
/// custom roles that are none of SPEC's: the first value that is not, naming its field
/// (`options.retry.baseDelayMs must be ...`).
pub fn check_options(
    tool_timeout_ms: Option<u32>,
    budget: Option<&Budget>,
    retry: Option<&RetryPolicy>,
    compaction: Option<&CompactionOptions>,
    custom_roles: &[String],
) -> Result<(), Invalid> {
    check_timeout_ms(tool_timeout_ms, "options.toolTimeoutMs")?;
    budget.map_or(Ok(()), |b| b.check("options.budget"))?;
    retry.map_or(Ok(()), |r| r.check("options.retry"))?;
    compaction.map_or(Ok(()), |c| c.check("options.compaction"))?;
    check_custom_roles(custom_roles, "options.customRoles")
}
