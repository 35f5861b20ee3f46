//! The API layer: what JS sees. Each export checks what JS hands it (a `TypeError` naming the field), calls
//! the core over the transport layer's JS implementations, and converts the answer back. `types.d.ts` types
//! all of it. The module map is in `src/wasm/mod.rs`.

pub mod options;

pub mod checks;
pub mod registry;

pub mod approvals;
pub mod run;

pub mod agent;
pub mod jsonl;

#[cfg(feature = "lesson")]
pub mod scripted;
#[cfg(feature = "lesson")]
pub mod trace;

use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = include_str!("types.d.ts");

pub use crate::wasm::transport::{enter, entered};
