//! Signals across the boundary. A JS `AbortSignal` is a core signal source: the loop reads `signal.aborted`
//! at its checkpoints, and a call's own signal (SPEC §7, a native child of the run's) hears the JS signal's
//! abort through a listener. The other way, every core signal handed to JS code is a JS `AbortSignal`: the
//! caller's own object, or, for a call's own signal, a JS `AbortController`'s that follows it.

use std::any::Any;
use std::task::Waker;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsValue;

use super::convert::get_key;
use super::glue::{abort_controller_js, listen_abort_js, new_controller_js};
use crate::signal::{AbortSignal, Registration, SignalSource};

pub struct JsSignal(pub web_sys::AbortSignal);

impl JsSignal {
    /// `signal.aborted`, read so that a getter that throws (an object that only claims to be an
    /// AbortSignal) is an error, never an exception unwinding through the loop.
    pub fn read(signal: &web_sys::AbortSignal) -> Result<bool, JsValue> {
        get_key(signal, "aborted").map(|a| a.is_truthy())
    }
}

impl SignalSource for JsSignal {
    fn aborted(&self) -> bool {
        // Checked when the run started; a getter that throws later reads as not aborted.
        JsSignal::read(&self.0).unwrap_or(false)
    }

    /// The bridge never polls on the signal itself (JS code observes the JS signal).
    fn on_abort(&self, _waker: &Waker) {}

    /// An `abort` listener on the JS signal, removed when the registration is dropped: how a call's own
    /// signal hears that the run was aborted.
    fn subscribe(&self, listener: Box<dyn FnOnce()>) -> Registration {
        let mut listener = Some(listener);
        let closure = Closure::<dyn FnMut()>::new(move || {
            if let Some(listener) = listener.take() {
                listener();
            }
        });
        listen_abort_js(&self.0, closure.as_ref(), true);
        Registration::new(Listening {
            signal: self.0.clone().into(),
            closure,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An abort listener on a JS signal, removed when dropped.
struct Listening {
    signal: JsValue,
    closure: Closure<dyn FnMut()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        listen_abort_js(&self.signal, self.closure.as_ref(), false);
    }
}

/// The JS signal behind a core signal, for handing on to JS code.
pub fn js_signal(signal: &AbortSignal) -> Option<&web_sys::AbortSignal> {
    signal
        .source()?
        .as_any()
        .downcast_ref::<JsSignal>()
        .map(|s| &s.0)
}

/// The JS `AbortSignal` to hand JS code for `signal`, with what keeps it following `signal` (hold it for as
/// long as the JS code may look): the caller's own object; for a call's own signal, a new JS controller's
/// signal, aborted when the call's is (at once, if it already is). `None` for a signal that never aborts.
pub fn handed(signal: &AbortSignal) -> Option<(JsValue, Registration)> {
    signal.source()?;
    if let Some(js) = js_signal(signal) {
        return Some((js.clone().into(), Registration::none()));
    }
    let controller = new_controller_js();
    let handed = get_key(&controller, "signal").unwrap_or(JsValue::UNDEFINED);
    let following = signal.subscribe(Box::new(move || abort_controller_js(&controller)));
    Some((handed, following))
}
