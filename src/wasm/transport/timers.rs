//! The host's timers as the core's `Timers` (SPEC §7 tool timeouts): `setTimeout` through gloo-timers, and
//! a dropped registration clears the timer.

use gloo_timers::callback::Timeout;

use crate::control::Timers;
use crate::signal::Registration;

/// JS timers (`setTimeout` / `clearTimeout`).
pub struct JsTimers;

impl Timers for JsTimers {
    fn set_timeout(&self, ms: u32, fire: Box<dyn FnOnce()>) -> Registration {
        // Dropping a `Timeout` clears it; `ms` is at most `LONGEST_TIMER_MS` (setTimeout's own limit).
        Registration::new(Timeout::new(ms, fire))
    }
}
