//! The host's timers as the core's `Timers` (SPEC §7 tool timeouts): `setTimeout` through gloo-timers, and
//! a dropped wait clears the timer.

use gloo_timers::callback::Timeout;

use crate::control::{Sleep, Timers};
use crate::signal::Registration;

/// JS timers (`setTimeout` / `clearTimeout`).
pub struct JsTimers;

impl Timers for JsTimers {
    fn sleep(&self, ms: u32) -> Sleep {
        // Dropping a `Timeout` clears it; `ms` is at most `LONGEST_TIMER_MS` (setTimeout's own limit).
        Sleep::on_callback(|fire| Registration::new(Timeout::new(ms, fire)))
    }
}
