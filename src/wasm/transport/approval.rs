//! A tool's JS `needsApproval(args)` (SPEC §8) as the core's `ApprovalCheck`: called with its own copy of
//! the arguments and the registered tool as `this`, its answer awaited if it is a promise. A throw, a rejection or an answer that is not a boolean is an `Err`, which the core
//! counts as "needs approval" (a call whose need is unknown waits for a decision).

use std::rc::Rc;

use js_sys::Function;
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::convert::{error_message, settle, to_js};
use super::glue::{invoke_js, show_js};
use crate::approval::ApprovalCheck;
use crate::tools::HookFuture;

/// A registered tool's `needsApproval` function.
pub struct JsApprovalCheck(Rc<Parts>);

struct Parts {
    /// `tool "name"`, as errors name it.
    what: String,
    /// The object given to `register`, `this` for the call.
    spec: JsValue,
    check: Function,
}

impl JsApprovalCheck {
    pub fn new(name: &str, spec: JsValue, check: Function) -> Self {
        JsApprovalCheck(Rc::new(Parts {
            what: format!("tool \"{name}\" needsApproval"),
            spec,
            check,
        }))
    }
}

impl ApprovalCheck for JsApprovalCheck {
    fn needs_approval<'a>(&'a self, arguments: &'a Value) -> HookFuture<'a, bool> {
        // Made now: the function gets its own copy.
        let arguments = to_js(arguments);
        let parts = self.0.clone();
        Box::pin(async move {
            let none = JsValue::UNDEFINED;
            let called = invoke_js(&parts.check, &parts.spec, &arguments, &none, &none);
            let what = &parts.what;
            let answer = settle(called)
                .await
                .map_err(|e| format!("{what} failed: {}", error_message(&e)))?;
            let not_boolean = || format!("{what} answered {}, not a boolean", show_js(&answer));
            answer.as_bool().ok_or_else(not_boolean)
        })
    }
}
