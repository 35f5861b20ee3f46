//! The JavaScript bridge: it converts at the edge and hands everything to the core. No rule of the loop lives
//! here, and no run state but the JS objects of a transcript (`transport/objects.rs`), which each run or
//! agent owns. Every export checks what JS hands it and answers a `TypeError` naming the field; nothing here may
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
//! | `api/options.rs` | input checks the exports share: `context`, `signal`, `maxSteps`, `now`, `customRoles`, a tool source, a transcript's options |
//! | `api/checks.rs` | `validateTranscript`, `repairTranscript` |
//! | `api/jsonl.rs` | `toJSONL` and `parseJSONL` (SPEC §9's sessions) |
//! | `api/registry.rs` | `ToolRegistry`: `register` and its checks of a tool, `definitions`, `execute`, the table of live registries a run looks its registry up in |
//! | `api/scripted.rs` | lesson entry: `ScriptedModel` (its options: the event grammar) and the stream its `stream()` returns |
//! | `api/trace.rs` | lesson entry: `prologueTrace`, `formatTrace`, `validateTrace` |
//! | `api/approvals.rs` | SPEC §8 in a run: `approvals` and `startSteps` read |
//! | `api/run.rs` | `runAgentLoop`: its options read (`Setup`, shared with `Agent`), the core's loop run, the result object made |
//! | `api/agent.rs` | `Agent` (SPEC §9): the core's `Agent` as a JS class |
//! | `api/types.d.ts` | the TypeScript types of every export, event and message |
//!
//! The package is two modules of this crate: the app's (feature `js`: everything above but the lesson entry's)
//! and the lesson entry's (`tiny-pi/lesson`, feature `lesson`: all of it).
//!
//! **`transport/`: how values, calls, promises and streams cross.** It implements the core's traits over JS
//! values (`Model`, `ToolHandler`, `ToolExecutor`, `Observer`, `SignalSource`, `Timers`, and the hooks and
//! queues of `crate::control`).
//!
//! | file | its one job |
//! |---|---|
//! | `transport/glue.rs` | declarations of every JS function the bridge imports beyond js-sys; nothing else |
//! | `transport/glue.js` | the bridge's JavaScript, one section per module below that calls it |
//! | `transport/convert.rs` | values both ways (JS to Rust as the JSON `JSON.stringify` writes, read once; Rust to JS as JSON parsed in JS), strings kept exactly, type names, error messages, the errors the exports throw |
//! | `transport/signal.rs` | a JS `AbortSignal` as the core's signal, and each core signal handed to JS as a JS one |
//! | `transport/timers.rs` | the host's `setTimeout` (gloo-timers) as the core's `Timers` (tool timeouts, retry waits) |
//! | `transport/objects.rs` | the frozen JS objects of a transcript, made once from the core's data, kept by the index the core's events name |
//! | `transport/approval.rs` | a tool's JS `needsApproval` function called and its answer awaited (SPEC §8) |
//! | `transport/calls.rs` | a JS tool's calls in flight: each called, its reports and its outcome delivered through one function per tool |
//! | `transport/model.rs` | a JS model: its request shown, its stream opened, its events pulled, its final message read once |
//! | `transport/tools.rs` | a JS tool or executor called and awaited, its progress reported, its output read; a run's executor, which hands each call its JS object |
//! | `transport/events.rs` | how a loop event reaches `onEvent` or a listener, and its returned promise is awaited |
//! | `transport/hooks.rs` | the JS hooks and queues of SPEC §7 called and awaited, what they return read |
//!
//! # Where to change what
//!
//! - How a value crosses: `transport/convert.rs` (`from_js` in, `frozen_js` / `to_js` out).
//! - What a JS tool is handed (its arguments and context): `transport/tools.rs` (its JS half is
//!   `argumentsOf` and `callTool` in `glue.js`; `transport/calls.rs` awaits the call).
//! - How a model stream is opened and read: `transport/model.rs` (its JS half is `openStream`, `pull`, `finalOf`).
//! - How an event reaches `onEvent`: `transport/events.rs` (its JS half is the `emit*` functions, one per event type).
//! - A new option of `runAgentLoop` or `Agent`: read in `api/run.rs` (`Setup`), checked in `api/options.rs`,
//!   typed in `api/types.d.ts`.
//! - What is frozen (SPEC §10): `transport/objects.rs` and `convert::frozen_js` (its JS half is `parseFrozen`).
//! - How deep the exports may call one another through the app's code: `transport::enter` (`transport/mod.rs`).
//! - What the `Agent` does in each state: the core's `AgentState::on` (`src/agent.rs`).

// The package builds two modules from this crate: the app's (feature `js`) and the lesson entry's (`lesson`,
// which adds `ScriptedModel` and the trace checks). What only those call is unused in the first.
#![cfg_attr(not(feature = "lesson"), allow(dead_code, unused_imports))]

mod api;
mod transport;

// The npm package's allocator (feature `talc`; Cargo.toml says why): a Rust app that builds its own module
// without the feature keeps the allocator it declares.
#[cfg(all(feature = "talc", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

pub use api::agent::JsAgent;
pub use api::checks::{repair_transcript_js, validate_transcript_js};
pub use api::jsonl::{parse_jsonl_js, to_jsonl_js};
pub use api::registry::JsToolRegistry;
pub use api::run::run_agent_loop_js;
#[cfg(feature = "lesson")]
pub use api::scripted::{JsScriptedModel, JsScriptedStream};
#[cfg(feature = "lesson")]
pub use api::trace::{format_trace_js, prologue_trace_js, validate_trace_js};
