//! The API layer: what JS sees. Each export checks what JS hands it (a `TypeError` naming the field), calls
//! the core over the transport layer's JS implementations, and converts the answer back. `types.d.ts` types
//! all of it. The module map is in `src/wasm/mod.rs`.

pub mod options;

#[cfg(feature = "js")]
pub mod checks;
#[cfg(feature = "js")]
pub mod registry;

#[cfg(feature = "js")]
pub mod approvals;
#[cfg(feature = "js")]
pub mod run;

#[cfg(feature = "js")]
pub mod agent;
#[cfg(feature = "js")]
pub mod jsonl;

#[cfg(feature = "lesson")]
pub mod scripted;
#[cfg(feature = "lesson")]
pub mod trace;

use wasm_bindgen::prelude::wasm_bindgen;

#[cfg(feature = "js")]
#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = include_str!("types.d.ts");

/// The lesson entry's types are the main entry's (`tiny-pi`), imported: one declaration of each.
#[cfg(feature = "lesson")]
#[wasm_bindgen(typescript_custom_section)]
const LESSON_TYPES: &'static str = include_str!("lesson.d.ts");
