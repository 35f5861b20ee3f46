//! What a generated run looks like: the model's script (one `ResponsePlan` per request), what each tool
//! execution does, how the observer behaves, the order gates are released in, where the run is aborted,
//! `max_steps`, SPEC §7's loop control (hooks, queues, execution modes, timeouts, custom roles), §8's
//! approvals (each tool's need, the decision an app gives each call, and which are given up front), and
//! part three: the usage each response reports, a budget, a retry policy (and what `shouldRetry` answers),
//! compaction (its limits, the estimate, what `summarize` answers, and an entry already in the input).
//! Plans are plain data so proptest can print and shrink them.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};
use tiny_pi::*;

/// The tools the registry knows. `nope` is a name no tool has.
pub const TOOL_NAMES: [&str; 4] = ["alpha", "beta", "gamma", "nope"];

pub fn definitions() -> Vec<ToolDefinition> {
    let def = |name: &str, parameters: Value| ToolDefinition {
        name: name.into(),
        description: format!("{name} tool"),
        parameters,
    };
    vec![
        def(
            "alpha",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        def(
            "beta",
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"],
                   "additionalProperties": false}),
        ),
        def("gamma", json!({"type": "object"})),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArgKind {
    Valid,
    WrongType,
    Missing,
    NotObject,
}

/// The arguments a call to `tool` gets for each kind; `gamma` accepts any object.
pub fn arguments(tool: &str, kind: ArgKind) -> Value {
    match (tool, kind) {
        ("beta", ArgKind::Valid) => json!({"n": 3}),
        ("beta", ArgKind::WrongType) => json!({"n": -1}),
        ("beta", ArgKind::NotObject) => json!([1, 2]),
        (_, ArgKind::Valid) => json!({"path": "README.md"}),
        (_, ArgKind::WrongType) => json!({"path": 7}),
        (_, ArgKind::Missing) => json!({}),
        (_, ArgKind::NotObject) => json!("README.md"),
    }
}

/// Whether the registry should accept the call (and so run the tool's handler).
pub fn registry_accepts(call: &ToolCall) -> bool {
    let Some(def) = definitions().into_iter().find(|d| d.name == call.name) else {
        return false;
    };
    // A call that came without arguments runs as if they were `{}`.
    let arguments = call.arguments.clone().unwrap_or_else(|| json!({}));
    match def.name.as_str() {
        "gamma" => arguments.is_object(),
        "alpha" => arguments.get("path").is_some_and(Value::is_string),
        _ => arguments.as_object().is_some_and(|o| {
            o.len() == 1 && o.get("n").and_then(Value::as_i64).is_some_and(|n| n >= 0)
        }),
    }
}

/// How a response's stream goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Every event, terminal included.
    Complete,
    /// Stops after `n % len` events, before its terminal event.
    EndEarly(usize),
    /// Throws in place of event `n % len`.
    Throw(usize),
    /// `model.stream()` itself throws.
    ThrowOnOpen,
}

#[derive(Debug, Clone)]
pub struct ResponsePlan {
    pub message: AssistantMessage,
    pub shape: Shape,
    /// The stream has `result()` (pi-ai's `EventStream`); otherwise the terminal event carries the message.
    pub has_result: bool,
    pub result_rejects: bool,
    /// Gate before event `i` when `gates[i % len]`; a gate blocks the stream until the driver opens it.
    pub gates: Vec<bool>,
    pub gate_result: bool,
    /// On abort, end the stream at once with an `error` event whose message has stopReason `aborted`.
    pub honours_abort: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OutcomeKind {
    Answer,
    ErrorResult,
    Reject,
}

/// What one tool execution does (the n-th execution of the run uses `outcomes[n % len]`).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub kind: OutcomeKind,
    pub gated: bool,
    /// Ends at once with an error result when the signal aborts while it waits.
    pub honours_abort: bool,
    pub progress_at_start: bool,
    pub progress_at_end: bool,
    /// Keeps its progress callback and calls it again after it has finished (a stray JS timer).
    pub late_progress: bool,
    /// Custom executor only: the reply carries its own timestamp / a forged `toolCallId` the loop must not trust.
    pub reply_timestamp: bool,
    pub forged_id: bool,
    /// The output (or the custom executor's reply) asks the run to terminate.
    pub terminate: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ExecutorKind {
    /// The core `ToolRegistry` executor (unknown tools and bad arguments become error results).
    Registry,
    /// A caller's `executeToolCall` that may reject.
    Custom,
}

/// What the observer does with the n-th event (`observer[n % len]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ObserverMove {
    Plain,
    AwaitReady,
    Throw,
    RejectLater,
    /// Returns a future that waits on a gate.
    AwaitGate,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AbortPlan {
    Never,
    BeforeStart,
    /// Inside the observer, right after the n-th event.
    AtEvent(usize),
    /// At the n-th time the run stalls (waiting on gates).
    AtStall(usize),
    /// At the first stall while the loop waits before a retry (SPEC §12).
    AtRetryWait,
}

#[derive(Debug, Clone)]
pub struct RunPlan {
    pub system_prompt: Option<String>,
    pub input: Vec<AgentMessage>,
    pub responses: Vec<ResponsePlan>,
    pub executor: ExecutorKind,
    pub outcomes: Vec<Outcome>,
    pub observer: Vec<ObserverMove>,
    /// At each stall, the gate `choices[stall % len] % open_gates` is opened: random completion orders.
    pub choices: Vec<u8>,
    pub abort: AbortPlan,
    /// `None`: the default, `DEFAULT_MAX_STEPS`.
    pub max_steps: Option<u32>,
    pub control: ControlPlan,
}

// ---- loop control (SPEC §7) ----

/// What `beforeToolCall` does with the n-th call it sees (`moves[n % len]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BeforeMove {
    Allow,
    /// `{block: true}`, with the reason `blocked <id>` or none.
    Block {
        reason: bool,
    },
    Throw,
    /// Waits on a gate, then allows.
    Gate,
}

/// What `afterToolCall` does with the n-th call it sees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AfterMove {
    Keep,
    /// Replaces content, details and isError.
    Patch,
    Terminate(bool),
    Throw,
    /// Waits on a gate, then keeps the result.
    Gate,
}

/// What `prepareRequest` does before the n-th request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PrepareMove {
    Keep,
    /// A system prompt of its own.
    SystemPrompt,
    /// The same messages plus a user reminder at the end, and no tools.
    Remind,
    /// The messages plus a result no call asked for: the run must end before the request.
    Orphan,
    /// The whole transcript as the request's messages: with a compaction entry or a custom-role message in
    /// it, the run must end before the request; without, the request carries it.
    Whole,
    Throw,
    Gate,
}

/// What a queue gives at its n-th ask.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueueMove {
    Empty,
    /// 1 or 2 user messages.
    Users(u8),
    /// A message of the custom role `note` (refused when the run does not list it).
    Note,
    /// A custom message of a role no run lists.
    Stranger,
    /// An assistant message: no queue may hold one.
    Assistant,
    Throw,
    /// Waits on a gate, then gives one user message.
    Gate,
}

/// The role the runs may list as custom.
pub const NOTE: &str = "note";

#[derive(Debug, Clone)]
pub struct ControlPlan {
    /// `toolExecution`.
    pub mode: ExecutionMode,
    pub tool_timeout_ms: Option<u32>,
    /// alpha, beta and gamma's `executionMode` and `timeoutMs`.
    pub tools: Vec<(ExecutionMode, Option<u32>)>,
    pub before: Option<Vec<BeforeMove>>,
    pub after: Option<Vec<AfterMove>>,
    pub prepare: Option<Vec<PrepareMove>>,
    pub steering: Option<Vec<QueueMove>>,
    pub follow_up: Option<Vec<QueueMove>>,
    /// The run lists `note` as a custom role (and its input holds a note).
    pub custom_roles: bool,
    /// SPEC §8: tools that need approval, and the decisions.
    pub approval: Option<ApprovalPlan>,
    /// SPEC §11.
    pub budget: Option<Budget>,
    /// SPEC §12.
    pub retry: Option<RetryPlan>,
    /// SPEC §13.
    pub compaction: Option<CompactionPlan>,
}

// ---- part three ----

/// What `shouldRetry` answers at its n-th ask.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShouldMove {
    Yes,
    No,
    Throw,
    /// Waits on a gate, then says yes.
    Gate,
}

#[derive(Debug, Clone)]
pub struct RetryPlan {
    pub max_retries: u32,
    pub base_delay_ms: f64,
    pub max_delay_ms: f64,
    /// `None`: no `shouldRetry` (always retry).
    pub should: Option<Vec<ShouldMove>>,
}

/// How messages are estimated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EstimatePlan {
    /// The default, `ceil(JSON length / 4)`.
    Default,
    /// `5 + 10 × blocks` (a string content is one block; a compaction entry or custom message 1).
    Blocks,
}

/// What `summarize` does at its n-th call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SummarizeMove {
    /// `summary <n>`.
    Ok,
    Throw,
    /// Waits on a gate, then answers `summary <n>`.
    Gate,
}

#[derive(Debug, Clone)]
pub struct CompactionPlan {
    pub max_context_tokens: f64,
    pub keep_recent_tokens: Option<f64>,
    pub estimate: EstimatePlan,
    pub summarize: Vec<SummarizeMove>,
}

impl EstimatePlan {
    /// The estimate of `message`, as the plan's `estimateTokens` answers it (the default: computed here from
    /// the JSON line `to_jsonl` writes, not by the core's counter).
    pub fn of(self, message: &AgentMessage) -> f64 {
        match self {
            EstimatePlan::Default => {
                let line = to_jsonl(std::slice::from_ref(message));
                let json = line.strip_suffix('\n').unwrap_or(&line);
                (json.encode_utf16().count() as f64 / 4.0).ceil()
            }
            EstimatePlan::Blocks => {
                let blocks = match message {
                    AgentMessage::User(u) => match &u.content {
                        UserContent::Text(_) => 1,
                        UserContent::Blocks(b) => b.len(),
                    },
                    AgentMessage::Assistant(a) => a.content.len(),
                    AgentMessage::ToolResult(r) => r.content.len(),
                    AgentMessage::Compaction(_) | AgentMessage::Custom(_) => 1,
                };
                5.0 + 10.0 * blocks as f64
            }
        }
    }
}

/// The usage a response reports (`usage` in its extra fields).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum UsagePlan {
    /// Only `input` and `output`: no total, no cost.
    Partial,
    /// `totalTokens` and `cost.total` (in hundredths).
    Full(u32, u32),
    /// Fields of the wrong types: each counts 0.
    Garbage,
}

impl UsagePlan {
    pub fn value(self, k: usize) -> Value {
        match self {
            UsagePlan::Partial => json!({"input": k, "output": 1}),
            UsagePlan::Full(total, cents) => {
                json!({"input": total / 2, "output": total - total / 2,
                "cacheRead": 1, "cacheWrite": 0.5, "totalTokens": total,
                "cost": {"input": 0, "total": f64::from(cents) / 100.0}})
            }
            UsagePlan::Garbage => json!({"input": "many", "output": null, "totalTokens": [3],
                "cost": 7}),
        }
    }
}

// ---- approvals (SPEC §8) ----

/// What a tool says about its calls' need for approval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NeedPlan {
    Never,
    Always,
    /// A function of the arguments: a call needs approval when its arguments have a `path`. `later`: the
    /// answer comes after a yield (a promise); `throws`: the function throws (the call then needs approval).
    ByPath {
        later: bool,
        throws: bool,
    },
}

/// The decision an app gives a call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decide {
    Approve,
    /// With the reason `no to <id>`, or none.
    Deny {
        reason: bool,
    },
}

#[derive(Debug, Clone)]
pub struct ApprovalPlan {
    /// alpha, beta and gamma's `needsApproval`.
    pub needs: Vec<NeedPlan>,
    /// The decision for a call id: `decisions[slot(id)]` (the same for every call with that id).
    pub decisions: Vec<Decide>,
    /// Whether a call id's decision is given up front: `given[slot(id)]`; the others pause the run.
    pub given: Vec<bool>,
    /// Ids whose decisions are given up front besides (not generated: a test sets them).
    pub also_given: Vec<String>,
}

impl ApprovalPlan {
    /// The need of a call to `name` (a name no tool has: none).
    pub fn need_of(&self, name: &str) -> NeedPlan {
        TOOL_NAMES[..3]
            .iter()
            .position(|n| *n == name)
            .map_or(NeedPlan::Never, |i| self.needs[i])
    }

    /// The decision an app gives the call `id`.
    pub fn decision(&self, id: &str) -> Approval {
        match self.decisions[slot(id, self.decisions.len())] {
            Decide::Approve => Approval::Approve,
            Decide::Deny { reason } => Approval::Deny {
                reason: reason.then(|| format!("no to {id}")),
            },
        }
    }

    /// Whether the decision about `id` is given up front.
    pub fn given(&self, id: &str) -> bool {
        self.given[slot(id, self.given.len())] || self.also_given.iter().any(|given| given == id)
    }

    /// Every decision given up front, about the call ids of `plan`.
    pub fn up_front(&self, plan: &RunPlan) -> Approvals {
        let mut approvals = Approvals::new();
        for id in plan.call_ids().iter().filter(|id| self.given(id)) {
            approvals.insert(id.clone(), self.decision(id));
        }
        approvals
    }
}

/// A stable spread of call ids over a plan's vectors.
fn slot(id: &str, len: usize) -> usize {
    let hash = (id.bytes()).fold(17u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    hash as usize % len
}

/// What a `ByPath` need answers for these arguments (when it does not throw).
pub fn has_path(arguments: &Value) -> bool {
    arguments.get("path").is_some()
}

impl ControlPlan {
    /// How the registry runs a call to `name` (a name it does not know: the defaults).
    pub fn tool_settings(&self, name: &str) -> (ExecutionMode, Option<u32>) {
        TOOL_NAMES[..3]
            .iter()
            .position(|n| *n == name)
            .map_or((ExecutionMode::Parallel, None), |i| self.tools[i])
    }

    pub fn custom_roles(&self) -> Vec<String> {
        if self.custom_roles {
            vec![NOTE.into()]
        } else {
            vec![]
        }
    }
}

impl RunPlan {
    pub fn max_steps(&self) -> u32 {
        self.max_steps.unwrap_or(DEFAULT_MAX_STEPS)
    }

    /// The ids of every call the script has.
    pub fn call_ids(&self) -> Vec<String> {
        let calls = (self.responses.iter()).flat_map(|r| r.message.tool_calls());
        calls.map(|call| call.id.clone()).collect()
    }

    /// The decisions the run is given up front (none without an approval plan).
    pub fn approvals(&self) -> Approvals {
        (self.control.approval.as_ref()).map_or_else(Approvals::new, |a| a.up_front(self))
    }

    /// This plan without a budget (a run paused and resumed counts usage from each resume: SPEC §11's
    /// usage is a run's).
    pub fn without_budget(&self) -> RunPlan {
        let mut plan = self.clone();
        plan.control.budget = None;
        plan
    }

    /// This plan with the decisions about `ids` given up front too.
    pub fn also_given(&self, ids: &[String]) -> RunPlan {
        let mut plan = self.clone();
        if let Some(approval) = &mut plan.control.approval {
            approval.also_given.extend(ids.iter().cloned());
        }
        plan
    }

    /// This plan with each call id of the k-th response suffixed `@k`: no id is used by two messages (a
    /// repeated id inside one message stays repeated).
    pub fn ids_per_message(&self) -> RunPlan {
        let mut plan = self.clone();
        for (k, response) in plan.responses.iter_mut().enumerate() {
            for block in &mut response.message.content {
                if let AssistantBlock::ToolCall(call) = block {
                    call.id = format!("{}@{k}", call.id);
                }
            }
        }
        plan
    }
}

// ---- strategies ----

#[derive(Debug, Clone, Copy)]
pub enum IdGen {
    Fresh,
    /// From a tiny pool shared by every message: repeats inside a message and across messages.
    Pooled(u8),
}

/// A weighted choice among `table`'s values. Drawn from a plain integer because `prop_oneof!` costs ~50 µs
/// a draw in a debug build, which would dominate the run time; it shrinks toward the first entry.
fn weighted<T: Clone + std::fmt::Debug + 'static>(
    table: &'static [(u32, T)],
) -> impl Strategy<Value = T> {
    let total: u32 = table.iter().map(|(w, _)| w).sum();
    (0..total).prop_map(move |mut x| {
        for (w, value) in table {
            if x < *w {
                return value.clone();
            }
            x -= w;
        }
        unreachable!()
    })
}

fn stop_reason() -> impl Strategy<Value = StopReason> {
    weighted(&[
        (28, StopReason::ToolUse),
        (3, StopReason::Stop),
        (1, StopReason::Length),
        (2, StopReason::Error),
        (1, StopReason::Aborted),
    ])
}

pub fn call_gen() -> impl Strategy<Value = (IdGen, usize, ArgKind)> {
    let id = weighted(&[
        (7, IdGen::Fresh),
        (1, IdGen::Pooled(0)),
        (1, IdGen::Pooled(1)),
    ]);
    let args = weighted(&[
        (5, ArgKind::Valid),
        (1, ArgKind::WrongType),
        (1, ArgKind::Missing),
        (1, ArgKind::NotObject),
    ]);
    (id, weighted(&[(1, 0usize), (1, 1), (1, 2), (1, 3)]), args)
}

fn shape() -> impl Strategy<Value = Shape> {
    (weighted(&[(36, 0u8), (1, 1), (1, 2), (1, 3)]), 0usize..64).prop_map(|(kind, n)| match kind {
        0 => Shape::Complete,
        1 => Shape::EndEarly(n),
        2 => Shape::Throw(n),
        _ => Shape::ThrowOnOpen,
    })
}

fn usage_plan() -> impl Strategy<Value = UsagePlan> {
    (weighted(&[(2, 0u8), (6, 1), (1, 2)]), 0u32..60, 0u32..40).prop_map(
        |(kind, t, c)| match kind {
            0 => UsagePlan::Partial,
            1 => UsagePlan::Full(t, c),
            _ => UsagePlan::Garbage,
        },
    )
}

#[allow(clippy::type_complexity)]
pub fn response_gen() -> impl Strategy<
    Value = (
        StopReason,
        (Vec<(IdGen, usize, ArgKind)>, u8),
        (bool, bool, bool, bool),
        Shape,
        (bool, bool, Vec<bool>, bool, bool),
        UsagePlan,
    ),
> {
    (
        stop_reason(),
        (vec(call_gen(), 1..=5), 0u8..20),
        // leading text, thinking, trailing text, errorMessage
        (
            any::<bool>(),
            prop::bool::weighted(0.3),
            prop::bool::weighted(0.2),
            any::<bool>(),
        ),
        shape(),
        (
            any::<bool>(),
            prop::bool::weighted(0.06),
            vec(prop::bool::weighted(0.2), 1..6),
            prop::bool::weighted(0.1),
            any::<bool>(),
        ),
        usage_plan(),
    )
}

/// Turns generated parts into the k-th scripted message. Each message carries `responseId: r{k}` so that
/// "appended exactly once" can be checked by identity.
#[allow(clippy::type_complexity)]
fn materialize(
    k: usize,
    (
        stop,
        (calls, keep),
        (lead, thinking, trail, error_message),
        shape,
        (has_result, result_rejects, gates, gate_result, honours_abort),
        usage,
    ): (
        StopReason,
        (Vec<(IdGen, usize, ArgKind)>, u8),
        (bool, bool, bool, bool),
        Shape,
        (bool, bool, Vec<bool>, bool, bool),
        UsagePlan,
    ),
) -> ResponsePlan {
    // Calls where they make the run go on, now and then where they do not: toolUse keeps its 1-5 calls
    // 19 times in 20, stop 1 in 5, the other reasons half the time.
    let keep = match stop {
        StopReason::ToolUse => keep >= 1,
        StopReason::Stop => keep < 4,
        _ => keep < 10,
    };
    let calls = if keep { calls } else { Vec::new() };
    let mut content = Vec::new();
    if thinking {
        content.push(AssistantBlock::thinking(format!("thinking {k}")));
    }
    if lead {
        content.push(AssistantBlock::text(format!("answer {k}")));
    }
    for (i, (id, tool, args)) in calls.into_iter().enumerate() {
        let id = match id {
            IdGen::Fresh => format!("call-{k}-{i}"),
            IdGen::Pooled(p) => format!("dup-{p}"),
        };
        let name = TOOL_NAMES[tool];
        content.push(AssistantBlock::tool_call(id, name, arguments(name, args)));
    }
    if trail {
        content.push(AssistantBlock::text(format!("trailing {k}")));
    }
    let mut message = AssistantMessage::new(content, stop);
    message.timestamp = 1000.0 + k as f64;
    message
        .extra
        .insert("responseId".into(), json!(format!("r{k}")));
    message.extra.insert("usage".into(), usage.value(k));
    if error_message && stop == StopReason::Error {
        message.error_message = Some(format!("provider failed on response {k}"));
    }
    ResponsePlan {
        message,
        shape,
        has_result,
        result_rejects,
        gates,
        gate_result,
        honours_abort,
    }
}

pub fn outcome() -> impl Strategy<Value = Outcome> {
    let kind = weighted(&[
        (3, OutcomeKind::Answer),
        (1, OutcomeKind::ErrorResult),
        (1, OutcomeKind::Reject),
    ]);
    let (often, sometimes, rarely) = (
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.15),
    );
    (
        kind,
        prop::bool::weighted(0.7),
        any::<bool>(),
        often,
        often,
        often,
        sometimes,
        rarely,
        prop::bool::weighted(0.08),
    )
        .prop_map(
            |(
                kind,
                gated,
                honours_abort,
                progress_at_start,
                progress_at_end,
                reply_timestamp,
                forged_id,
                late_progress,
                terminate,
            )| Outcome {
                kind,
                gated,
                honours_abort,
                progress_at_start,
                progress_at_end,
                late_progress,
                reply_timestamp,
                forged_id,
                terminate,
            },
        )
}

/// Present one time in `1 / odds`, with 1 to 5 moves.
fn sometimes<T: Clone + std::fmt::Debug + 'static>(
    odds: u32,
    moves: impl Strategy<Value = T> + 'static,
) -> impl Strategy<Value = Option<Vec<T>>> {
    ((0..odds), vec(moves, 1..6)).prop_map(|(n, moves)| (n == 0).then_some(moves))
}

fn timeout() -> impl Strategy<Value = Option<u32>> {
    (0u32..8, 1u32..100).prop_map(|(n, ms)| (n == 0).then_some(ms))
}

fn mode(sequential_in: u32) -> impl Strategy<Value = ExecutionMode> {
    (0..sequential_in).prop_map(|n| match n {
        0 => ExecutionMode::Sequential,
        _ => ExecutionMode::Parallel,
    })
}

/// What a queue gives: nothing, with weight `empty` against 9 for everything else.
fn queue_move(empty: u32) -> impl Strategy<Value = QueueMove> {
    let given = weighted(&[
        (2, QueueMove::Users(1)),
        (1, QueueMove::Users(2)),
        (1, QueueMove::Note),
        (1, QueueMove::Stranger),
        (1, QueueMove::Assistant),
        (1, QueueMove::Throw),
        (2, QueueMove::Gate),
    ]);
    ((0..empty + 9), given).prop_map(move |(n, given)| match n < empty {
        true => QueueMove::Empty,
        false => given,
    })
}

pub fn control_plan() -> impl Strategy<Value = ControlPlan> {
    let before = weighted(&[
        (6, BeforeMove::Allow),
        (1, BeforeMove::Block { reason: true }),
        (1, BeforeMove::Block { reason: false }),
        (1, BeforeMove::Throw),
        (2, BeforeMove::Gate),
    ]);
    let after = weighted(&[
        (6, AfterMove::Keep),
        (2, AfterMove::Patch),
        (1, AfterMove::Terminate(true)),
        (1, AfterMove::Terminate(false)),
        (1, AfterMove::Throw),
        (2, AfterMove::Gate),
    ]);
    let prepare = weighted(&[
        (8, PrepareMove::Keep),
        (2, PrepareMove::SystemPrompt),
        (2, PrepareMove::Remind),
        (1, PrepareMove::Orphan),
        (1, PrepareMove::Whole),
        (1, PrepareMove::Throw),
        (2, PrepareMove::Gate),
    ]);
    let steering = queue_move(14);
    // Asked only after a `stop`, which is rarer: more often with something to give.
    let follow_up = queue_move(4);
    (
        (mode(6), timeout(), vec((mode(10), timeout()), 3)),
        (
            sometimes(3, before),
            sometimes(3, after),
            sometimes(4, prepare),
        ),
        (
            sometimes(3, steering),
            sometimes(2, follow_up),
            any::<bool>(),
        ),
        approval_plan(),
        (budget_plan(), retry_plan(), compaction_plan()),
    )
        .prop_map(
            |(
                (mode, tool_timeout_ms, tools),
                (before, after, prepare),
                (steering, follow_up, custom_roles),
                approval,
                (budget, retry, compaction),
            )| ControlPlan {
                mode,
                tool_timeout_ms,
                tools,
                before,
                after,
                prepare,
                steering,
                follow_up,
                custom_roles,
                approval,
                budget,
                retry,
                compaction,
            },
        )
}

/// A budget one run in four: tokens, cost or both, small enough to be spent.
fn budget_plan() -> impl Strategy<Value = Option<Budget>> {
    ((0u8..8), 10u32..150, 5u32..80).prop_map(|(n, tokens, cents)| match n {
        0 => Some(Budget {
            max_tokens: Some(f64::from(tokens)),
            max_cost: None,
        }),
        1 => Some(Budget {
            max_tokens: None,
            max_cost: Some(f64::from(cents) / 100.0),
        }),
        _ => None,
    })
}

/// A retry policy one run in three.
fn retry_plan() -> impl Strategy<Value = Option<RetryPlan>> {
    let should = weighted(&[
        (4, ShouldMove::Yes),
        (1, ShouldMove::No),
        (1, ShouldMove::Throw),
        (2, ShouldMove::Gate),
    ]);
    ((0u8..3), 0u32..4, 0u32..40, 10u32..80, sometimes(2, should)).prop_map(
        |(n, max_retries, base, max, should)| {
            (n == 0).then_some(RetryPlan {
                max_retries,
                base_delay_ms: f64::from(base),
                max_delay_ms: f64::from(max),
                should,
            })
        },
    )
}

/// Compaction one run in three, with limits the generated transcripts go over within a few requests.
fn compaction_plan() -> impl Strategy<Value = Option<CompactionPlan>> {
    let summarize = weighted(&[
        (6, SummarizeMove::Ok),
        (1, SummarizeMove::Throw),
        (2, SummarizeMove::Gate),
    ]);
    (
        (0u8..3),
        any::<bool>(),
        (1u32..12, prop::option::of(1u32..8)),
        vec(summarize, 1..4),
    )
        .prop_map(|(n, default, (max, keep), summarize)| {
            let (estimate, unit) = match default {
                true => (EstimatePlan::Default, 40.0),
                false => (EstimatePlan::Blocks, 15.0),
            };
            (n == 0).then_some(CompactionPlan {
                max_context_tokens: unit * f64::from(max),
                keep_recent_tokens: keep.map(|k| unit * f64::from(k)),
                estimate,
                summarize,
            })
        })
}

/// Approvals in every other run: each tool's need, the decisions, and which are given up front.
pub fn approval_plan() -> impl Strategy<Value = Option<ApprovalPlan>> {
    let need = weighted(&[
        (3, NeedPlan::Never),
        (2, NeedPlan::Always),
        (
            1,
            NeedPlan::ByPath {
                later: false,
                throws: false,
            },
        ),
        (
            2,
            NeedPlan::ByPath {
                later: true,
                throws: false,
            },
        ),
        (
            1,
            NeedPlan::ByPath {
                later: true,
                throws: true,
            },
        ),
    ]);
    let decide = weighted(&[
        (3, Decide::Approve),
        (1, Decide::Deny { reason: true }),
        (1, Decide::Deny { reason: false }),
    ]);
    (
        any::<bool>(),
        vec(need, 3),
        vec(decide, 1..4),
        vec(prop::bool::weighted(0.5), 1..4),
    )
        .prop_map(|(on, needs, decisions, given)| {
            on.then_some(ApprovalPlan {
                needs,
                decisions,
                also_given: Vec::new(),
                given,
            })
        })
}

fn observer_move() -> impl Strategy<Value = ObserverMove> {
    weighted(&[
        (12, ObserverMove::Plain),
        (2, ObserverMove::AwaitReady),
        (1, ObserverMove::Throw),
        (1, ObserverMove::RejectLater),
        (2, ObserverMove::AwaitGate),
    ])
}

fn abort_plan() -> impl Strategy<Value = AbortPlan> {
    (
        weighted(&[(10, 0u8), (1, 1), (2, 2), (2, 3), (1, 4)]),
        0usize..40,
    )
        .prop_map(|(kind, n)| match kind {
            0 => AbortPlan::Never,
            1 => AbortPlan::BeforeStart,
            2 => AbortPlan::AtEvent(n),
            3 => AbortPlan::AtStall(n % 8),
            _ => AbortPlan::AtRetryWait,
        })
}

/// A custom-role message, as an app would keep one.
pub fn note(text: &str) -> AgentMessage {
    AgentMessage::from_value_with_roles(json!({"role": NOTE, "text": text, "level": 1}), &[NOTE])
        .expect("a note reads")
}

/// A valid transcript to start from: a user message, sometimes after a finished exchange that used
/// the pooled id `dup-0` (ids may be reused by later messages), and then sometimes after a compaction
/// entry that summarised it (a restored conversation keeps its compactions).
fn input() -> impl Strategy<Value = Vec<AgentMessage>> {
    (any::<bool>(), prop::bool::weighted(0.3)).prop_map(|(prior, compacted)| {
        let mut messages = Vec::new();
        if prior {
            messages.push(AgentMessage::user("earlier question", 1.0));
            let mut call = AssistantMessage::new(
                vec![AssistantBlock::tool_call(
                    "dup-0",
                    "alpha",
                    json!({"path": "a"}),
                )],
                StopReason::ToolUse,
            );
            call.extra.insert("provider".into(), json!("earlier"));
            messages.push(AgentMessage::Assistant(call));
            messages.push(AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: "dup-0".into(),
                tool_name: "alpha".into(),
                content: vec![MediaBlock::text("a's content")],
                details: Some(json!({"bytes": 11})),
                is_error: false,
                timestamp: 2.0,
                extra: Default::default(),
            }));
            messages.push(AgentMessage::Assistant(AssistantMessage::new(
                vec![AssistantBlock::text("done")],
                StopReason::Stop,
            )));
            if compacted {
                messages.push(AgentMessage::Compaction(CompactionEntry {
                    summary: "an earlier question about a".into(),
                    first_kept_index: 3,
                    tokens_before: Some(120.0),
                    timestamp: 2.5,
                    extra: Default::default(),
                }));
            }
        }
        let mut task = AgentMessage::user("do the task", 3.0);
        if let AgentMessage::User(u) = &mut task {
            u.extra.insert("tag".into(), json!({"kept": true}));
        }
        messages.push(task);
        messages
    })
}

pub fn run_plan() -> impl Strategy<Value = RunPlan> {
    (
        prop::option::of(Just("You are a test.".to_string())),
        input(),
        vec(response_gen(), 1..=8),
        weighted(&[(1, ExecutorKind::Registry), (1, ExecutorKind::Custom)]),
        vec(outcome(), 1..8),
        vec(observer_move(), 1..8),
        vec(any::<u8>(), 1..12),
        abort_plan(),
        // 0 one time in 16, 1..5 ten times, the default (32) five times.
        (0u32..16).prop_map(|n| match n {
            0 => Some(0),
            1..=10 => Some(1 + (n - 1) % 5),
            _ => None,
        }),
        control_plan(),
    )
        .prop_map(
            |(
                system_prompt,
                input,
                responses,
                executor,
                outcomes,
                observer,
                choices,
                abort,
                max_steps,
                control,
            )| RunPlan {
                system_prompt,
                // A run that lists the custom role starts with a note among its messages.
                input: match control.custom_roles {
                    true => {
                        let mut input = input;
                        input.insert(input.len() - 1, note("build finished"));
                        input
                    }
                    false => input,
                },
                responses: responses
                    .into_iter()
                    .enumerate()
                    .map(|(k, r)| materialize(k, r))
                    .collect(),
                executor,
                outcomes,
                observer,
                choices,
                abort,
                max_steps,
                control,
            },
        )
}
