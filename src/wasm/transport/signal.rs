//! A JS `AbortSignal` as a core signal source. The loop reads `signal.aborted` at its checkpoints; JS
//! tools and models get the original object.

use std::any::Any;
use std::task::Waker;

use wasm_bindgen::JsValue;

use super::convert::get_key;
use crate::signal::{AbortSignal, SignalSource};

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

    /// The bridge never waits on the signal itself (JS code observes the JS signal), so there is no
    /// listener to register.
    fn on_abort(&self, _waker: &Waker) {}

    fn as_any(&self) -> &dyn Any {
        self
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
