//! Awaiting JS values from Rust, with no closure made per await: the `Waiter` that `glue.js` reports to, and
//! the futures it wakes.
//!
//! `glue.js` awaits in JS and reports the outcome to the module's one `Waiter` object under an id; the id
//! names a slot here holding the outcome and the waker of the Rust future that waits for it.
//! (wasm-bindgen-futures' `JsFuture` makes two closures per await, each registered with a
//! `FinalizationRegistry`: at the loop's rate of awaits, they were the largest single cost of a run.)
//!
//! A model stream is pulled by `pump`: while the loop asks for the next event as soon as it has one, the JS
//! side keeps calling `next()`; once the loop waits on something else, the pump stops, and the next poll
//! starts a new one. The loop never gets an event it did not ask for.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use super::glue::{pump_js, settle_js, take_kept_js};
use super::protocol::{StepKind, Unknown};

type Outcome = Result<JsValue, JsValue>;

/// Where `glue.js` reports. Not part of the API: exported only because JS reaches Rust only through
/// exports.
#[wasm_bindgen(js_name = __TinyPiWaiter, skip_typescript)]
pub struct Waiter;

thread_local! {
    static WAITER: JsValue = JsValue::from(Waiter);
}

/// Runs `f` with the module's one `Waiter` object.
fn with_waiter<R>(f: impl FnOnce(&JsValue) -> R) -> R {
    WAITER.with(f)
}

#[wasm_bindgen(js_class = __TinyPiWaiter)]
impl Waiter {
    /// How the value `settle` awaited under `id` settled.
    pub fn settled(&self, id: u32, ok: bool, value: JsValue) {
        settled(id, if ok { Ok(value) } else { Err(value) });
    }

    /// Takes one `next()` outcome (a `StepKind` and its value); answers whether the pump should pull another
    /// one right away.
    pub fn delivered(&self, id: u32, kind: u32, value: JsValue) -> bool {
        delivered(id, Step::new(kind, value))
    }
}

/// One `next()` of a model stream, as `glue.js`'s `pump` read it.
pub enum Step {
    /// `{ done: false, value }`
    Value(JsValue),
    /// `{ done: true }`
    Done,
    /// `next()` threw or its promise rejected.
    Threw(JsValue),
    /// Something that is not an iterator result.
    NotResult(JsValue),
    /// A `StepKind` number that names none: a bridge bug, reported as the stream's error.
    Unknown(Unknown),
}

impl Step {
    fn new(kind: u32, value: JsValue) -> Step {
        match StepKind::from_u32(kind) {
            Ok(StepKind::Value) => Step::Value(value),
            Ok(StepKind::Done) => Step::Done,
            Ok(StepKind::Threw) => Step::Threw(value),
            Ok(StepKind::NotResult) => Step::NotResult(value),
            Err(unknown) => Step::Unknown(unknown),
        }
    }
}

enum Slot {
    Free,
    /// One `settle`: JS calls `settled` exactly once.
    Await {
        outcome: Option<Outcome>,
        waker: Option<Waker>,
        dropped: bool,
    },
    /// A model stream: JS calls `delivered` once per `next()` it made.
    Stream {
        item: Option<Step>,
        waker: Option<Waker>,
        /// A `pump` is running (it will deliver once more).
        pumping: bool,
        /// The stream's owner is waiting for the next item.
        wanted: bool,
        dropped: bool,
    },
}

#[derive(Default)]
struct Slots {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Slots {
    fn take(&mut self, slot: Slot) -> u32 {
        match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        }
    }

    fn release(&mut self, id: u32) {
        if let Some(slot) = self.slots.get_mut(id as usize) {
            *slot = Slot::Free;
            self.free.push(id);
        }
    }
}

thread_local! {
    static SLOTS: RefCell<Slots> = RefCell::default();
}

fn with_slots<R>(f: impl FnOnce(&mut Slots) -> R) -> R {
    SLOTS.with(|slots| f(&mut slots.borrow_mut()))
}

fn keep_waker(slot: &mut Option<Waker>, cx: &Context<'_>) {
    match slot {
        Some(waker) if waker.will_wake(cx.waker()) => {}
        _ => *slot = Some(cx.waker().clone()),
    }
}

fn settled(id: u32, result: Outcome) {
    let waker = with_slots(|slots| match slots.slots.get_mut(id as usize) {
        Some(Slot::Await { dropped: true, .. }) => {
            slots.release(id);
            None
        }
        Some(Slot::Await { outcome, waker, .. }) => {
            *outcome = Some(result);
            waker.take()
        }
        _ => None,
    });
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// Takes one `next()` outcome; answers whether the pump should pull another one right away.
fn delivered(id: u32, result: Step) -> bool {
    let waker = with_slots(|slots| match slots.slots.get_mut(id as usize) {
        Some(Slot::Stream { dropped: true, .. }) => {
            slots.release(id);
            None
        }
        Some(Slot::Stream {
            item,
            waker,
            pumping,
            wanted,
            ..
        }) => {
            *item = Some(result);
            *wanted = false;
            let waker = waker.take();
            // No one to wake: stop, and let the next poll start a new pump.
            *pumping &= waker.is_some();
            waker
        }
        _ => None,
    });
    let Some(waker) = waker else {
        return false;
    };
    // The run is polled right here: if it asks for the next event before it returns, keep pulling.
    waker.wake();
    with_slots(|slots| match slots.slots.get_mut(id as usize) {
        Some(Slot::Stream { dropped: true, .. }) => {
            slots.release(id);
            false
        }
        Some(Slot::Stream {
            pumping, wanted, ..
        }) => {
            *pumping = *wanted;
            *wanted
        }
        _ => false,
    })
}

/// The value of `value`, awaited if it is a promise or a thenable.
pub async fn settle(value: JsValue) -> Outcome {
    settle_with(|waiter, id| (!settle_js(&value, waiter, id)).then_some(value)).await
}

/// What a `glue.js` call (`callTool`, `callHook`, ..) settles under the id it is given; when it answers
/// `false` (nothing to await), the value it left for `takeKept`.
pub fn settle_call(start: impl FnOnce(&JsValue, u32) -> bool) -> impl Future<Output = Outcome> {
    settle_with(|waiter, id| (!start(waiter, id)).then(take_kept_js))
}

/// What `start` settles under the id it is given (it calls `glue.js`, which reports to `waiter`), or the
/// value it answers at once (`Some`: nothing to await, and nothing will be reported).
async fn settle_with(start: impl FnOnce(&JsValue, u32) -> Option<JsValue>) -> Outcome {
    let id = with_slots(|slots| {
        slots.take(Slot::Await {
            outcome: None,
            waker: None,
            dropped: false,
        })
    });
    if let Some(value) = with_waiter(|waiter| start(waiter, id)) {
        with_slots(|slots| slots.release(id));
        return Ok(value);
    }
    Settle { id: Some(id) }.await
}

struct Settle {
    /// `None` once the outcome is taken.
    id: Option<u32>,
}

impl Future for Settle {
    type Output = Outcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let Some(id) = self.id else {
            return Poll::Ready(Err(JsValue::from_str("awaited twice")));
        };
        let ready = with_slots(|slots| match slots.slots.get_mut(id as usize) {
            Some(Slot::Await { outcome, waker, .. }) => match outcome.take() {
                Some(outcome) => {
                    slots.release(id);
                    Some(outcome)
                }
                None => {
                    keep_waker(waker, cx);
                    None
                }
            },
            _ => Some(Err(JsValue::from_str("lost await slot"))),
        });
        match ready {
            Some(outcome) => {
                self.id = None;
                Poll::Ready(outcome)
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for Settle {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        let _ = SLOTS.try_with(|slots| {
            let Ok(mut slots) = slots.try_borrow_mut() else {
                return;
            };
            match slots.slots.get_mut(id as usize) {
                // Settled but never read: nothing more will come.
                Some(Slot::Await {
                    outcome: Some(_), ..
                }) => slots.release(id),
                // Still in flight: `settled` frees the slot when it comes.
                Some(Slot::Await { dropped, .. }) => *dropped = true,
                _ => {}
            }
        });
    }
}

/// The results of `next.call(iterator)` of a stream `glue.js` opened (`openStream`), one per
/// `next().await`, pulled only when asked for.
pub struct Pull {
    opened: JsValue,
    id: u32,
}

impl Pull {
    pub fn new(opened: JsValue) -> Self {
        let id = with_slots(|slots| {
            slots.take(Slot::Stream {
                item: None,
                waker: None,
                pumping: false,
                wanted: false,
                dropped: false,
            })
        });
        Pull { opened, id }
    }

    /// The opened stream, as `openStream` left it (`{ stream, iterator, next, result }`).
    pub fn opened(&self) -> &JsValue {
        &self.opened
    }

    /// The next `next()` outcome.
    pub fn next(&mut self) -> impl Future<Output = Step> + '_ {
        std::future::poll_fn(move |cx| self.poll_next(cx))
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Step> {
        let id = self.id;
        let start = with_slots(|slots| match slots.slots.get_mut(id as usize) {
            Some(Slot::Stream {
                item,
                waker,
                pumping,
                wanted,
                ..
            }) => match item.take() {
                Some(outcome) => Err(outcome),
                None => {
                    keep_waker(waker, cx);
                    *wanted = true;
                    Ok(!std::mem::replace(pumping, true))
                }
            },
            _ => Err(Step::Threw(JsValue::from_str("lost stream slot"))),
        });
        match start {
            Err(outcome) => Poll::Ready(outcome),
            Ok(start) => {
                if start {
                    with_waiter(|waiter| pump_js(&self.opened, waiter, id));
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for Pull {
    fn drop(&mut self) {
        let id = self.id;
        let _ = SLOTS.try_with(|slots| {
            let Ok(mut slots) = slots.try_borrow_mut() else {
                return;
            };
            match slots.slots.get_mut(id as usize) {
                // A pump still owes a delivery: `delivered` frees the slot when it comes.
                Some(Slot::Stream {
                    pumping: true,
                    dropped,
                    ..
                }) => *dropped = true,
                Some(Slot::Stream { .. }) => slots.release(id),
                _ => {}
            }
        });
    }
}
