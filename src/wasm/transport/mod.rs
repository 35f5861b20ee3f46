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

/// Held by an export (or a function the package hands the app, such as `reportProgress`) while it reads what
/// JS hands it and runs the app's code it calls.
pub struct Entered(());

/// Enters an export, or refuses with an `Error` `DEEPEST` levels deep. Only a call that finds others entered
/// asks for the turn to end (a microtask); a call from the top asks nothing of the host.
pub fn enter() -> Result<Entered, wasm_bindgen::JsValue> {
    let (at, level) = ENTERED.get();
    let turn = glue::current_turn_js(level > 0);
    let level = if at == turn { level } else { 0 };
    if level > DEEPEST {
        return Err(convert::plain_error(format_args!(
            "tiny-pi was called while it read a value again to name the field in an error: refused"
        )));
    }
    if level == DEEPEST {
        return Err(convert::plain_error(format_args!(
            "tiny-pi was called from inside itself {DEEPEST} levels deep (a getter, toJSON, proxy or now \
             that calls tiny-pi while it reads them): refused before the wasm stack runs out"
        )));
    }
    ENTERED.set((turn, level + 1));
    Ok(Entered(()))
}

/// Runs `read` with every export refused: app code it runs that calls tiny-pi is refused at once. For a second
/// read of an app's value, only to name the field in an error, which must not cost a nested run again.
pub fn sealed<T>(read: impl FnOnce() -> T) -> T {
    let before = ENTERED.replace((glue::current_turn_js(true), DEEPEST + 1));
    let out = read();
    ENTERED.set(before);
    out
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
