//! The JavaScript bridge: it converts at the edge and hands everything to the core. No rule of the loop lives
//! here. Every export checks what JS hands it and answers a `TypeError` naming the field; nothing here may
//! panic (a trap would poison the instance for every later call).
//!
//! # Module map
//!
//! Two layers, each module with one job. The API layer uses the transport layer and the core; the transport
//! layer uses the core and never the API. Inside a layer, a module uses only the modules listed above it
//! here (so there is no cycle), and `glue.js` imports nothing.
//!
//! **`api/`: what JS sees.** The exports, their input checks, their types.
//!
//! | file | its one job |
//! |---|---|
//! | `api/options.rs` | input checks the exports share: `context`, `signal`, `maxSteps`, `now`, `customRoles`, arrays, a tool source, a transcript's options |
//! | `api/checks.rs` | `validateTranscript`, `repairTranscript`, `prologueTrace`, `formatTrace`, `validateTrace` |
//! | `api/jsonl.rs` | `toJSONL` and `parseJSONL` (SPEC §9's sessions) |
//! | `api/registry.rs` | `ToolRegistry`: `register` and its checks of a tool, `definitions`, `execute`, a run's snapshot |
//! | `api/scripted.rs` | `ScriptedModel` (its options: the event grammar) and the stream its `stream()` returns |
//! | `api/approvals.rs` | SPEC §8 in a run: `approvals` and `startSteps` read, the registry asked about approval, `result.pending` |
//! | `api/run.rs` | `runAgentLoop`: its options read, the core's loop run, the result object made |
//! | `api/agent.rs` | the core's half of the JS `Agent` (SPEC §9): its state table, starting state and input check |
//! | `api/types.d.ts` | the TypeScript types of every export, event and message |
//!
//! **`transport/`: how values, calls, promises and streams cross.** It implements the core's traits over JS
//! values (`Model`, `ToolHandler`, `ToolExecutor`, `Observer`, `SignalSource`, `PatternEngine`, `Timers`, and
//! the hooks and queues of `crate::control`).
//!
//! | file | its one job |
//! |---|---|
//! | `transport/glue.rs` | declarations of every JS function the bridge imports beyond js-sys; nothing else |
//! | `transport/glue.js` | the bridge's JavaScript, one section per module below that calls it |
//! | `transport/protocol.rs` | the numbers exchanged with `glue.js`, as enums (`glue.js` names them alike; a test checks) |
//! | `transport/convert.rs` | values both ways: JSON, long strings, property names, type names, error messages |
//! | `transport/task.rs` | a Rust future run as a JS promise |
//! | `transport/waiter.rs` | awaiting JS: the `Waiter` `glue.js` reports to, a promise's outcome, a stream's next value |
//! | `transport/signal.rs` | a JS `AbortSignal` as the core's signal, and each core signal handed to JS as a JS one |
//! | `transport/timers.rs` | the host's `setTimeout` (gloo-timers) as the core's `Timers` (tool timeouts) |
//! | `transport/regexp.rs` | the host's `RegExp` as the core's `PatternEngine` (schema `pattern`s) |
//! | `transport/mirror.rs` | the JS objects of a run's transcript: every message, call and result handed to JS, frozen |
//! | `transport/tool_output.rs` | how what a JS tool returns (or `executeToolCall` resolves with) is read |
//! | `transport/model.rs` | a JS model: its stream opened, its events pulled, its final message read |
//! | `transport/tools.rs` | a JS tool or executor (`executeToolCall`, a tool source) called and awaited, its progress reported |
//! | `transport/approval.rs` | a tool's JS `needsApproval` function called and its answer awaited (SPEC §8) |
//! | `transport/events.rs` | how a loop event reaches `onEvent`, and its returned promise is awaited |
//! | `transport/hooks.rs` | the JS hooks and queues of SPEC §7 called and awaited, what they return read |
//!
//! # Where to change what
//!
//! - How a JS tool's result is read: `transport/tool_output.rs` (it names each way, in order, including the
//!   JS half of the fast one, `simpleOutput` in `glue.js`).
//! - What a JS tool is handed (its arguments and context): `transport/tools.rs` (its JS half is `callTool`;
//!   the run's call objects it reads are found in `transport/mirror.rs`, `running_call`).
//! - How a model stream is opened: `transport/model.rs` (`JsModel::stream`; its JS half is `openStream`).
//! - How an event reaches `onEvent`: `transport/events.rs` (its JS half is `emit`).
//! - A new option of `runAgentLoop`: read in `api/run.rs`, checked in `api/options.rs`, typed in
//!   `api/types.d.ts`. (SPEC §7's are read together, `ControlInput` in `api/run.rs`.)
//! - How a hook is called or what it may return is read: `transport/hooks.rs` (its JS half is `callHook`).
//! - What is frozen (SPEC §10): `transport/mirror.rs`, where each object is made or adopted (its JS half is
//!   `deepFreeze` and its callers in `glue.js`).
//! - A new number exchanged with `glue.js`: an enum in `transport/protocol.rs`, an object of the same name
//!   in `glue.js`, and a line in the test there.
//! - What the `Agent` does in each state: the core's `AgentState::on` (`src/agent.rs`); `api/agent.rs` only
//!   hands it to the class in `glue.js` (its section "api/agent.rs").

mod api;
mod transport;

pub use api::agent::JsAgent;
pub use api::checks::{
    format_trace_js, prologue_trace_js, repair_transcript_js, validate_trace_js,
    validate_transcript_js,
};
pub use api::jsonl::{parse_jsonl_js, to_jsonl_js};
pub use api::registry::JsToolRegistry;
pub use api::run::run_agent_loop_js;
pub use api::scripted::{JsScriptedModel, JsScriptedStream};
