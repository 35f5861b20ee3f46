//! Signals across the boundary. A JS `AbortSignal` is a core signal source: the loop reads `signal.aborted`
//! at its checkpoints, and a call's own signal (SPEC §7, a native child of the run's) hears the JS signal's
//! abort through a listener. The other way, every core signal handed to JS code is a JS `AbortSignal`: the
//! caller's own object, or, for a call's own signal, a JS `AbortController`'s that follows it.

use std::any::Any;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use crate::signal::{AbortSignal, Registration, SignalSource};

pub struct JsSignal(pub web_sys::AbortSignal);

impl JsSignal {
    /// `signal.aborted`, read so that a getter that throws (an object that only claims to be an
    /// AbortSignal) is an error, never an exception unwinding through the loop.
    pub fn read(signal: &web_sys::AbortSignal) -> Result<bool, JsValue> {
        js_sys::Reflect::get(signal, &JsValue::from_str("aborted")).map(|a| a.is_truthy())
    }
}

impl SignalSource for JsSignal {
    fn aborted(&self) -> bool {
        // Checked when the run started; a getter that throws later reads as not aborted.
        JsSignal::read(&self.0).unwrap_or(false)
    }

    /// An `abort` listener on the JS signal, removed when the registration is dropped: how a call's own
    /// signal, and the loop waiting on the run's (`AbortSignal::cancelled`), hear that the run was aborted.
    fn subscribe(&self, listener: Box<dyn FnOnce()>) -> Registration {
        let closure = Closure::once(listener);
        let target: &web_sys::EventTarget = self.0.unchecked_ref();
        // Something that only claims to be an AbortSignal refuses: the child reads its parent's flag instead.
        let _ = target.add_event_listener_with_callback("abort", closure.as_ref().unchecked_ref());
        Registration::new(Listening {
            signal: self.0.clone(),
            closure,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An abort listener on a JS signal, removed when dropped.
struct Listening {
    signal: web_sys::AbortSignal,
    closure: Closure<dyn FnMut()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let target: &web_sys::EventTarget = self.signal.unchecked_ref();
        let _ = target
            .remove_event_listener_with_callback("abort", self.closure.as_ref().unchecked_ref());
    }
}

/// The JS `AbortSignal` to hand JS code for `signal`, with what keeps it following `signal` (hold it for as
/// long as the JS code may look): the caller's own object; for a call's own signal, a new JS controller's
/// signal, aborted when the call's is (at once, if it already is). `None` for a signal that never aborts.
pub fn handed(signal: &AbortSignal) -> Option<(JsValue, Registration)> {
    if let Some(js) = signal.source()?.as_any().downcast_ref::<JsSignal>() {
        return Some((js.0.clone().into(), Registration::none()));
    }
    let controller = web_sys::AbortController::new().ok()?;
    let handed = controller.signal().into();
    let following = signal.subscribe(Box::new(move || controller.abort()));
    Some((handed, following))
}

/// A signal that never aborts, for a hook of a run without one (SPEC §7: always an AbortSignal).
pub fn never() -> JsValue {
    web_sys::AbortController::new().map_or(JsValue::UNDEFINED, |c| c.signal().into())
}
