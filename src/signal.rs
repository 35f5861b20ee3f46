//! Cancellation. The loop only *reads* the run's signal at its checkpoints (SPEC §4) and passes it on;
//! it never kills a running tool or stream. A call with a timeout (SPEC §7) gets its own signal, a child
//! of the run's, that also aborts when the call times out.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

/// Where an abort comes from: a native [`AbortController`], or a host's signal (the wasm bridge wraps a JS
/// `AbortSignal`).
pub trait SignalSource {
    fn aborted(&self) -> bool;
    /// Asks to call `listener` once, when the signal aborts; dropping the returned registration first
    /// unregisters it. How everything waiting on a signal hears its abort: [`AbortSignal::cancelled`], a
    /// child signal, a host's signal object. The default (a source that cannot notify) drops the listener: a
    /// child signal then still reads its parent's state, but nothing that waits on the source wakes.
    fn subscribe(&self, listener: Box<dyn FnOnce()>) -> Registration {
        drop(listener);
        Registration::none()
    }
    /// Lets a host recover its own signal object (to hand the original `AbortSignal` to JS tools).
    fn as_any(&self) -> &dyn Any;
}

/// Something registered with a host or a signal (an abort listener, a timer) that is cancelled when this
/// is dropped.
#[must_use = "dropping a registration cancels it"]
pub struct Registration {
    _guard: Option<Box<dyn Any>>,
}

impl Registration {
    /// Keeps `guard` alive until the registration is dropped; `guard`'s own `Drop` does the cancelling
    /// (a `gloo_timers::callback::Timeout` clears its timer).
    pub fn new(guard: impl Any) -> Self {
        Registration {
            _guard: Some(Box::new(guard)),
        }
    }

    /// Nothing to cancel.
    pub fn none() -> Self {
        Registration { _guard: None }
    }
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
        Cancelled {
            signal: self.clone(),
            listening: None,
        }
    }

    /// Calls `listener` once, when the signal aborts (at once if it already has), for as long as the
    /// registration lives. For a host that must pass the abort on to its own signal object (see
    /// [`SignalSource::subscribe`]).
    pub fn subscribe(&self, listener: Box<dyn FnOnce()>) -> Registration {
        if self.aborted() {
            listener();
            return Registration::none();
        }
        match self.source() {
            Some(source) => source.subscribe(listener),
            None => Registration::none(),
        }
    }
}

impl std::fmt::Debug for AbortSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AbortSignal(aborted: {})", self.aborted())
    }
}

/// Resolves once its signal aborts: an abort listener (`SignalSource::subscribe`) wakes the task that polled
/// it last, registered at its first pending poll and removed when it is dropped.
pub struct Cancelled {
    signal: AbortSignal,
    listening: Option<(Rc<RefCell<Waker>>, Registration)>,
}

impl Future for Cancelled {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.signal.aborted() {
            return Poll::Ready(());
        }
        match &this.listening {
            Some((waker, _)) => waker.borrow_mut().clone_from(cx.waker()),
            None => {
                let waker = Rc::new(RefCell::new(cx.waker().clone()));
                let wakes = waker.clone();
                let registration =
                    (this.signal).subscribe(Box::new(move || wakes.borrow().wake_by_ref()));
                this.listening = Some((waker, registration));
            }
        }
        Poll::Pending
    }
}

/// A listener of a native signal, by the id its registration removes it with.
type Listener = (u64, Box<dyn FnOnce()>);

/// The native counterpart of JS's `AbortController`.
#[derive(Clone)]
pub struct AbortController(Rc<ControllerState>);

impl std::fmt::Debug for AbortController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AbortController(aborted: {})", self.signal().aborted())
    }
}

impl Default for AbortController {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Default)]
struct ControllerState {
    /// The state itself, for the registrations it hands out.
    me: Weak<ControllerState>,
    aborted: Cell<bool>,
    listeners: RefCell<Vec<Listener>>,
    next_listener: Cell<u64>,
    /// A child's parent, and the child's listener there (dropped with the child).
    parent: Option<(AbortSignal, Registration)>,
}

impl AbortController {
    pub fn new() -> Self {
        AbortController(Rc::new_cyclic(|me: &Weak<ControllerState>| {
            ControllerState {
                me: me.clone(),
                ..ControllerState::default()
            }
        }))
    }

    /// A controller whose signal also aborts when `parent` does: a call's own signal, which follows the
    /// run's. When the parent cannot notify (see [`SignalSource::subscribe`]) the child still reads as
    /// aborted once the parent is.
    pub fn with_parent(parent: &AbortSignal) -> Self {
        AbortController(Rc::new_cyclic(|me: &Weak<ControllerState>| {
            let child = me.clone();
            let listening = parent.subscribe(Box::new(move || {
                if let Some(child) = child.upgrade() {
                    child.abort();
                }
            }));
            ControllerState {
                me: me.clone(),
                parent: Some((parent.clone(), listening)),
                ..ControllerState::default()
            }
        }))
    }

    pub fn signal(&self) -> AbortSignal {
        AbortSignal::from_source(self.0.clone())
    }

    pub fn abort(&self) {
        self.0.abort();
    }
}

impl ControllerState {
    fn abort(&self) {
        if self.aborted.replace(true) {
            return;
        }
        // Taken out first: a listener may subscribe or unsubscribe in turn.
        for (_, listener) in self.listeners.take() {
            listener();
        }
    }
}

impl SignalSource for ControllerState {
    fn aborted(&self) -> bool {
        self.aborted.get() || self.parent.as_ref().is_some_and(|(p, _)| p.aborted())
    }

    fn subscribe(&self, listener: Box<dyn FnOnce()>) -> Registration {
        if self.aborted() {
            listener();
            return Registration::none();
        }
        let id = self.next_listener.get();
        self.next_listener.set(id + 1);
        self.listeners.borrow_mut().push((id, listener));
        Registration::new(Unsubscribe {
            state: self.me.clone(),
            id,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Removes a listener from its controller when dropped.
struct Unsubscribe {
    state: Weak<ControllerState>,
    id: u64,
}

impl Drop for Unsubscribe {
    fn drop(&mut self) {
        if let Some(state) = self.state.upgrade() {
            // Busy only while the state itself calls its listeners, which it has taken out by then.
            if let Ok(mut listeners) = state.listeners.try_borrow_mut() {
                listeners.retain(|(id, _)| *id != self.id);
            }
        }
    }
}
