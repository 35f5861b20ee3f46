//! The transport layer: how values, calls, promises and streams cross between the core and JS. It implements
//! the core's traits over JS values (`Model`, `ToolHandler`, `ToolExecutor`, `Observer`, `SignalSource`,
//! `Timers`, the hooks and queues) and knows nothing of the API layer. The module map is in
//! `src/wasm/mod.rs`; modules are listed here in the order they build on each other (each uses only modules
//! above it).

pub mod glue;

pub mod convert;

pub mod signal;
pub mod timers;

pub mod objects;

pub mod approval;
pub mod calls;
pub mod model;
pub mod tools;

pub mod events;
pub mod hooks;
