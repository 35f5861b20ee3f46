//! Awaiting JS values from Rust. `JsFuture` makes two closures per await; the loop awaits once per model
//! event and per observed event, one at a time, so a run reuses one pair of callbacks for those.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use js_sys::Promise;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::convert::{get_key, is_object};

/// The value of `value`, awaited if it is a promise or a thenable.
pub async fn settle(value: JsValue) -> Result<JsValue, JsValue> {
    match as_promise(value) {
        Ok(promise) => JsFuture::from(promise).await,
        Err(value) => Ok(value),
    }
}

/// `Ok(promise)` for a promise or thenable, `Err(value)` for anything else.
fn as_promise(value: JsValue) -> Result<Promise, JsValue> {
    if value.is_instance_of::<Promise>() {
        return Ok(value.unchecked_into());
    }
    if is_object(&value) && get_key(&value, "then").is_ok_and(|t| t.is_function()) {
        return Ok(Promise::resolve(&value));
    }
    Err(value)
}

#[derive(Default)]
struct Slot {
    outcome: RefCell<Option<Result<JsValue, JsValue>>>,
    waker: RefCell<Option<Waker>>,
    busy: Cell<bool>,
}

/// One pair of `then` callbacks for a run's sequential awaits; dropped with the run.
pub struct Awaiter {
    slot: Rc<Slot>,
    on_ok: Closure<dyn FnMut(JsValue)>,
    on_err: Closure<dyn FnMut(JsValue)>,
}

impl Awaiter {
    pub fn new() -> Rc<Awaiter> {
        let slot = Rc::new(Slot::default());
        let settle_with = |slot: Rc<Slot>, ok: bool| {
            Closure::<dyn FnMut(JsValue)>::new(move |value: JsValue| {
                *slot.outcome.borrow_mut() = Some(if ok { Ok(value) } else { Err(value) });
                // Released before waking: the wake may poll the run at once, which sets the waker again.
                let waker = slot.waker.borrow_mut().take();
                if let Some(waker) = waker {
                    waker.wake();
                }
            })
        };
        Rc::new(Awaiter {
            on_ok: settle_with(slot.clone(), true),
            on_err: settle_with(slot.clone(), false),
            slot,
        })
    }

    /// Awaits `value` (a promise, a thenable, or a plain value). Falls back to `JsFuture` if another
    /// await of this run is still pending, so correctness never depends on the awaits being sequential.
    pub async fn settle(self: &Rc<Self>, value: JsValue) -> Result<JsValue, JsValue> {
        let promise = match as_promise(value) {
            Ok(promise) => promise,
            Err(value) => return Ok(value),
        };
        if self.slot.busy.replace(true) {
            return JsFuture::from(promise).await;
        }
        let _ = promise.then2(&self.on_ok, &self.on_err);
        let outcome = Pending(self.slot.clone()).await;
        self.slot.busy.set(false);
        outcome
    }
}

struct Pending(Rc<Slot>);

impl Future for Pending {
    type Output = Result<JsValue, JsValue>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.0.outcome.borrow_mut().take() {
            Some(outcome) => Poll::Ready(outcome),
            None => {
                *self.0.waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
