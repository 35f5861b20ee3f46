//! A JS tool's calls in flight, awaited with no function made per call: `glue.js`'s `callTool` calls the
//! tool and hands its progress reports, and then how it settled, to the one `deliver` function of the tool
//! (or executor) under the call's token; each waiting call finds its outcome here. A speed path: a
//! `JsFuture` and a report closure per call (three wasm-bindgen closures) made a turn 1.05-1.12x as costly
//! on `full`, `compact` and `thinking` (bench/RESULTS.md, "A turn", the paragraph on `transport/calls.rs`).
//!
//! A call's reports reach its progress sink until the call settles or its future is dropped (a timed-out
//! call): later ones, and an outcome no one waits for any more, find no call here and are dropped (SPEC §7).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use js_sys::Function;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use super::convert::{from_js, type_error};
use super::glue::{call_sink_js, call_tool_js, close_delivery_js};
use crate::message::MediaBlock;
use crate::tools::ProgressSink;

/// A JS tool's `execute` (or an executor), with its calls that have not settled and the one function
/// `glue.js` delivers to.
pub struct JsCalls {
    /// The function called, and its `this`.
    f: Function,
    this: JsValue,
    /// How errors name it: `tool "name"`, `executeToolCall`.
    pub what: Rc<str>,
    open: Rc<RefCell<Open>>,
    /// `{ deliver, closed }`, as `glue.js`'s `callSink` made it.
    sink: JsValue,
    /// What the sink's `deliver` calls; dropped after `closeDelivery` (a late outcome never calls it).
    _deliver: Closure<dyn Fn(u32, u32, JsValue) -> Result<(), JsValue>>,
}

#[derive(Default)]
struct Open {
    next: u32,
    calls: Vec<OpenCall>,
}

struct OpenCall {
    token: u32,
    progress: ProgressSink,
    outcome: Option<Result<JsValue, JsValue>>,
    waker: Option<Waker>,
}

/// What `callTool` delivers (`glue.js`'s `Delivered` has the same numbers).
const REPORT: u32 = 0;
const RETURNED: u32 = 1;

impl JsCalls {
    pub fn new(f: Function, this: JsValue, what: Rc<str>) -> Rc<JsCalls> {
        let open = Rc::new(RefCell::new(Open::default()));
        let (to, reports) = (open.clone(), format!("{what} reportProgress(content)"));
        let deliver = Closure::<dyn Fn(u32, u32, JsValue) -> Result<(), JsValue>>::new(
            move |token: u32, kind: u32, value: JsValue| deliver(&to, &reports, token, kind, value),
        );
        let sink = call_sink_js(deliver.as_ref().unchecked_ref());
        Rc::new(JsCalls {
            f,
            this,
            what,
            open,
            sink,
            _deliver: deliver,
        })
    }

    /// Calls `f.call(this, arg, context)` with a context of `call_id`, `signal` and a `reportProgress` that
    /// reports to `progress` while the call is open; resolves with what it returned (or resolved with), or
    /// what it threw (or rejected with).
    pub fn call(
        self: &Rc<Self>,
        arg: &JsValue,
        call_id: Option<String>,
        signal: &JsValue,
        progress: ProgressSink,
    ) -> Calling {
        let token = {
            let mut open = self.open.borrow_mut();
            let token = open.next;
            open.next = token.wrapping_add(1);
            open.calls.push(OpenCall {
                token,
                progress,
                outcome: None,
                waker: None,
            });
            token
        };
        // A tool that returns at once delivers before this returns: the first poll finds its outcome.
        call_tool_js(&self.f, &self.this, arg, call_id, signal, &self.sink, token);
        Calling {
            calls: self.clone(),
            token,
        }
    }
}

impl Drop for JsCalls {
    fn drop(&mut self) {
        close_delivery_js(&self.sink);
    }
}

/// A report or an outcome for the call `token`, if it is still open (`what` names a bad report).
fn deliver(
    open: &RefCell<Open>,
    what: &str,
    token: u32,
    kind: u32,
    value: JsValue,
) -> Result<(), JsValue> {
    let mut borrowed = open.borrow_mut();
    let Some(call) = borrowed.calls.iter_mut().find(|c| c.token == token) else {
        return Ok(());
    };
    if kind == REPORT {
        if call.outcome.is_some() {
            // Settled, not yet taken by its waiter: a report now comes after the call's end.
            return Ok(());
        }
        let progress = call.progress.clone();
        // Reading the content runs the caller's code (getters, `toJSON`): no borrow is held.
        drop(borrowed);
        let _entered = super::enter()?;
        let content: Vec<MediaBlock> = from_js(&value, what).map_err(type_error)?;
        progress(content);
        return Ok(());
    }
    call.outcome = Some(match kind {
        RETURNED => Ok(value),
        _ => Err(value),
    });
    let waker = call.waker.take();
    drop(borrowed);
    if let Some(waker) = waker {
        waker.wake();
    }
    Ok(())
}

/// A call of `JsCalls::call` until it settles; dropped before that, it closes the call (later reports and
/// its outcome are dropped).
pub struct Calling {
    calls: Rc<JsCalls>,
    token: u32,
}

impl Future for Calling {
    type Output = Result<JsValue, JsValue>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut open = self.calls.open.borrow_mut();
        let Some(at) = open.calls.iter().position(|c| c.token == self.token) else {
            // Only a bridge bug could take the call away while it is awaited: reported, never a panic.
            return Poll::Ready(Err(JsValue::from_str("tiny-pi: a tool call was lost")));
        };
        if open.calls[at].outcome.is_some() {
            let call = open.calls.swap_remove(at);
            return Poll::Ready(call.outcome.unwrap_or(Ok(JsValue::UNDEFINED)));
        }
        open.calls[at].waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Calling {
    fn drop(&mut self) {
        let mut open = self.calls.open.borrow_mut();
        if let Some(at) = open.calls.iter().position(|c| c.token == self.token) {
            open.calls.swap_remove(at);
        }
    }
}
