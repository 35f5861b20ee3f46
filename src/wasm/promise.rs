//! Awaiting JS values from Rust.
//!
//! Every await adopts the value through `Promise.all([value])`, as `await` would: a `then` that throws
//! (its own, or `Promise.prototype.then` on something that only inherits from Promise) is a rejection,
//! never an exception unwinding through wasm. (Reusing one pair of `then` callbacks per run, or binding
//! module-wide ones per await, was faster, but made Node 20's V8 crash in its deoptimizer under the
//! leak test, a few runs in ten.)

use js_sys::{Array, Promise};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::convert::{get_key, is_object};

fn is_thenable(value: &JsValue) -> bool {
    value.is_instance_of::<Promise>()
        || (is_object(value) && get_key(value, "then").is_ok_and(|t| t.is_function()))
}

/// The value of `value`, awaited if it is a promise or a thenable.
pub async fn settle(value: JsValue) -> Result<JsValue, JsValue> {
    if !is_thenable(&value) {
        return Ok(value);
    }
    let all = JsFuture::from(Promise::all(&Array::of1(&value))).await?;
    Ok(Array::from(&all).get(0))
}
