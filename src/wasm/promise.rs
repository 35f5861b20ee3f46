//! Awaiting JS promises from Rust. `JsFuture` makes two closures per await; the loop awaits once per model
//! event, per observed event and per tool, so instead one pair of callbacks serves the whole module and
//! each await binds them to its own id (`Function.prototype.bind`, no closure made).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use js_sys::{Function, Promise};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use super::convert::{get_key, is_object};

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// A promise seen as having `then(ok, err)` that takes plain functions (the bound callbacks below).
    type Thenable;
    /// `catch`: a `then` that throws (one of its own, or `Promise.prototype.then` on something that only
    /// inherits from Promise) is a rejection, not an exception unwinding through the loop.
    #[wasm_bindgen(method, catch, js_name = then)]
    fn then_with(this: &Thenable, ok: &JsValue, err: &JsValue) -> Result<JsValue, JsValue>;
}

enum State {
    Waiting(Option<Waker>),
    Settled(Result<JsValue, JsValue>),
}

/// The module's one pair of `then` callbacks and the awaits in flight (a handful at a time).
struct Settler {
    pending: RefCell<Vec<(f64, State)>>,
    next_id: Cell<f64>,
    on_ok: Closure<dyn Fn(f64, JsValue)>,
    on_err: Closure<dyn Fn(f64, JsValue)>,
}

thread_local! {
    static SETTLER: Settler = Settler {
        pending: RefCell::new(Vec::new()),
        next_id: Cell::new(0.0),
        on_ok: Closure::new(|id, value| finish(id, Ok(value))),
        on_err: Closure::new(|id, error| finish(id, Err(error))),
    };
}

/// A callback for an await that is gone (its future was dropped) finds no entry and does nothing.
fn finish(id: f64, outcome: Result<JsValue, JsValue>) {
    let waker = SETTLER.with(|s| {
        let mut pending = s.pending.borrow_mut();
        let entry = pending.iter_mut().find(|(i, _)| *i == id)?;
        match std::mem::replace(&mut entry.1, State::Settled(outcome)) {
            State::Waiting(waker) => waker,
            State::Settled(_) => None,
        }
    });
    // Woken after the borrow ends: the wake may poll the run at once.
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// The value of `value`, awaited if it is a promise or a thenable.
pub async fn settle(value: JsValue) -> Result<JsValue, JsValue> {
    let promise = match as_promise(value) {
        Ok(promise) => promise,
        Err(value) => return Ok(value),
    };
    let id = SETTLER.with(|s| {
        let id = s.next_id.get();
        s.next_id.set(id + 1.0);
        let bind = |f: &Closure<dyn Fn(f64, JsValue)>| -> JsValue {
            f.as_ref()
                .unchecked_ref::<Function>()
                .bind1(&JsValue::NULL, &JsValue::from(id))
                .into()
        };
        let (ok, err) = (bind(&s.on_ok), bind(&s.on_err));
        promise.unchecked_ref::<Thenable>().then_with(&ok, &err)?;
        s.pending.borrow_mut().push((id, State::Waiting(None)));
        Ok::<f64, JsValue>(id)
    })?;
    Settling(id).await
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

struct Settling(f64);

impl Future for Settling {
    type Output = Result<JsValue, JsValue>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        SETTLER.with(|s| {
            let mut pending = s.pending.borrow_mut();
            let Some(index) = pending.iter().position(|(i, _)| *i == self.0) else {
                return Poll::Ready(Err(JsValue::from_str("await lost")));
            };
            match &mut pending[index].1 {
                State::Waiting(waker) => {
                    *waker = Some(cx.waker().clone());
                    Poll::Pending
                }
                State::Settled(_) => match pending.swap_remove(index).1 {
                    State::Settled(outcome) => Poll::Ready(outcome),
                    State::Waiting(_) => Poll::Pending,
                },
            }
        })
    }
}

impl Drop for Settling {
    fn drop(&mut self) {
        let _ = SETTLER.try_with(|s| {
            if let Ok(mut pending) = s.pending.try_borrow_mut() {
                pending.retain(|(i, _)| *i != self.0);
            }
        });
    }
}
