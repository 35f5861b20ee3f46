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
    /// The exports running now, one inside another (0 whenever a microtask or the app's own code starts).
    static ENTERED: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// Held by an export while it reads what JS hands it and runs the app's code it calls.
pub struct Entered(());

/// Enters an export, or refuses with an `Error` `DEEPEST` levels deep.
pub fn enter() -> Result<Entered, wasm_bindgen::JsValue> {
    if ENTERED.get() == DEEPEST {
        return Err(crate::wasm::transport::convert::plain_error(format_args!(
            "tiny-pi was called from inside itself {DEEPEST} levels deep (a getter, toJSON, proxy or now \
             that calls tiny-pi while it reads them): refused before the wasm stack runs out"
        )));
    }
    ENTERED.set(ENTERED.get() + 1);
    Ok(Entered(()))
}

/// An export that answers a promise: `run` inside `enter`, or its refusal as a rejected promise.
pub fn entered(run: impl FnOnce() -> js_sys::Promise) -> js_sys::Promise {
    enter().map_or_else(|deep| js_sys::Promise::reject(&deep), |_entered| run())
}

impl Drop for Entered {
    fn drop(&mut self) {
        ENTERED.set(ENTERED.get() - 1);
    }
}
