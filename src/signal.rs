//! Cancellation. The loop only *reads* the signal at its two checkpoints (SPEC §4) and passes it on;
//! it never kills a running tool or stream.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Where an abort comes from: a native [`AbortController`], or a host's signal (the wasm bridge wraps a JS
/// `AbortSignal`).
pub trait SignalSource {
    fn aborted(&self) -> bool;
    /// Asks to wake `waker` once aborted. Sources that cannot notify may ignore it.
    fn on_abort(&self, waker: &Waker);
    /// Lets a host recover its own signal object (to hand the original `AbortSignal` to JS tools).
    fn as_any(&self) -> &dyn Any;
}

/// A cheap, clonable handle; `AbortSignal::none()` never aborts.
#[derive(Clone, Default)]
pub struct AbortSignal(Option<Rc<dyn SignalSource>>);

impl AbortSignal {
    pub fn none() -> Self {
        AbortSignal(None)
    }

    pub fn from_source(source: Rc<dyn SignalSource>) -> Self {
        AbortSignal(Some(source))
    }

    pub fn aborted(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.aborted())
    }

    pub fn source(&self) -> Option<&dyn SignalSource> {
        self.0.as_deref()
    }

    /// Resolves once the signal aborts (never, for `none()`): for tools and models that honour it.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled(self.clone())
    }
}

impl std::fmt::Debug for AbortSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AbortSignal(aborted: {})", self.aborted())
    }
}

pub struct Cancelled(AbortSignal);

impl Future for Cancelled {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.0.source() {
            Some(source) if source.aborted() => Poll::Ready(()),
            Some(source) => {
                source.on_abort(cx.waker());
                Poll::Pending
            }
            None => Poll::Pending,
        }
    }
}

/// The native counterpart of JS's `AbortController`.
#[derive(Clone, Default)]
pub struct AbortController(Rc<ControllerState>);

#[derive(Default)]
struct ControllerState {
    aborted: Cell<bool>,
    wakers: RefCell<Vec<Waker>>,
}

impl AbortController {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn signal(&self) -> AbortSignal {
        AbortSignal::from_source(self.0.clone())
    }

    pub fn abort(&self) {
        if !self.0.aborted.replace(true) {
            for waker in self.0.wakers.take() {
                waker.wake();
            }
        }
    }
}

impl SignalSource for ControllerState {
    fn aborted(&self) -> bool {
        self.aborted.get()
    }

    fn on_abort(&self, waker: &Waker) {
        let mut wakers = self.wakers.borrow_mut();
        if !wakers.iter().any(|w| w.will_wake(waker)) {
            wakers.push(waker.clone());
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
