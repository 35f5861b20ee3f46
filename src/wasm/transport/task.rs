//! Runs one `runAgentLoop` future to its end as a JS promise. Unlike `future_to_promise`, a wake-up polls
//! the future right away instead of queueing another microtask: the loop awaits once per model event, so
//! each saved hop is paid back on every event.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use js_sys::{Function, Promise};
use wasm_bindgen::JsValue;

type Job = Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>>;

struct Task {
    job: RefCell<Option<Job>>,
    polling: Cell<bool>,
    woken: Cell<bool>,
    resolve: Function,
    reject: Function,
}

pub fn spawn_promise(job: impl Future<Output = Result<JsValue, JsValue>> + 'static) -> Promise {
    let mut callbacks = None;
    let promise = Promise::new(&mut |resolve, reject| callbacks = Some((resolve, reject)));
    let Some((resolve, reject)) = callbacks else {
        return promise;
    };
    let task = Rc::new(Task {
        job: RefCell::new(Some(Box::pin(job))),
        polling: Cell::new(false),
        woken: Cell::new(false),
        resolve,
        reject,
    });
    run(&task);
    promise
}

/// Polls until the job is pending with no wake-up outstanding. A wake-up during a poll (a future that
/// wakes itself, progress sent from inside a tool) is remembered and polled again here, never nested.
fn run(task: &Rc<Task>) {
    if task.polling.replace(true) {
        task.woken.set(true);
        return;
    }
    loop {
        task.woken.set(false);
        let waker = waker(task.clone());
        let mut cx = Context::from_waker(&waker);
        let mut slot = task.job.borrow_mut();
        let Some(job) = slot.as_mut() else { break };
        if let Poll::Ready(outcome) = job.as_mut().poll(&mut cx) {
            *slot = None;
            drop(slot);
            let _ = match outcome {
                Ok(value) => task.resolve.call1(&JsValue::UNDEFINED, &value),
                Err(error) => task.reject.call1(&JsValue::UNDEFINED, &error),
            };
            break;
        }
        drop(slot);
        if !task.woken.get() {
            break;
        }
    }
    task.polling.set(false);
}

// A waker over `Rc<Task>`: wasm runs on one thread, so the Send/Sync a `Waker` promises is never used.
const VTABLE: RawWakerVTable = RawWakerVTable::new(clone_raw, wake_raw, wake_by_ref_raw, drop_raw);

fn waker(task: Rc<Task>) -> Waker {
    let raw = RawWaker::new(Rc::into_raw(task) as *const (), &VTABLE);
    // SAFETY: the vtable below keeps the Rc count balanced for every clone, wake and drop.
    unsafe { Waker::from_raw(raw) }
}

unsafe fn clone_raw(data: *const ()) -> RawWaker {
    Rc::increment_strong_count(data as *const Task);
    RawWaker::new(data, &VTABLE)
}

unsafe fn wake_raw(data: *const ()) {
    let task = Rc::from_raw(data as *const Task);
    run(&task);
}

unsafe fn wake_by_ref_raw(data: *const ()) {
    let task = std::mem::ManuallyDrop::new(Rc::from_raw(data as *const Task));
    run(&task);
}

unsafe fn drop_raw(data: *const ()) {
    drop(Rc::from_raw(data as *const Task));
}
