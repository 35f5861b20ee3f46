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

/// How many exports may run one inside another: an app's getter, `toJSON`, proxy trap or `now` that calls the
/// package while the package reads it. Each level holds a few KB of the wasm stack and of the host's; at ~300
/// one of them runs out inside wasm, which leaves the instance broken for every later call.
const DEEPEST: u8 = 16;

std::thread_local! {
    /// The exports running now, one inside another, and the JS turn they run in (`glue.js`'s `currentTurn`): a
    /// count from an earlier turn was left by an exception that unwound through wasm (a host's stack overflow),
    /// and restarts at 0.
    static ENTERED: std::cell::Cell<(i32, u8)> = const { std::cell::Cell::new((0, 0)) };
}

/// Held by an export while it reads what JS hands it and runs the app's code it calls.
pub struct Entered(());

/// Enters an export, or refuses with an `Error` `DEEPEST` levels deep.
pub fn enter() -> Result<Entered, wasm_bindgen::JsValue> {
    let turn = crate::wasm::transport::glue::current_turn_js();
    let (at, level) = ENTERED.get();
    let level = if at == turn { level } else { 0 };
    if level == DEEPEST {
        return Err(crate::wasm::transport::convert::plain_error(format_args!(
            "tiny-pi was called from inside itself {DEEPEST} levels deep (a getter, toJSON, proxy or now \
             that calls tiny-pi while it reads them): refused before the wasm stack runs out"
        )));
    }
    ENTERED.set((turn, level + 1));
    Ok(Entered(()))
}

/// An export that answers a promise: `run` inside `enter`, or its refusal as a rejected promise.
pub fn entered(run: impl FnOnce() -> js_sys::Promise) -> js_sys::Promise {
    enter().map_or_else(|deep| js_sys::Promise::reject(&deep), |_entered| run())
}

impl Drop for Entered {
    fn drop(&mut self) {
        let (turn, level) = ENTERED.get();
        ENTERED.set((turn, level.saturating_sub(1)));
    }
}
