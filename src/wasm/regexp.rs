//! The core's `PatternEngine` in wasm: the host's `RegExp` with the `u` flag, which is what JSON Schema's
//! ECMA-262 patterns mean (exact semantics, and no regex engine linked into the module).

use wasm_bindgen::prelude::*;

use super::convert::error_message;
use crate::schema::{Pattern, PatternEngine};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = RegExp)]
    type HostRegExp;

    /// `new RegExp(pattern, flags)`: an invalid pattern's SyntaxError comes back as `Err`, never as an
    /// exception unwinding through wasm.
    #[wasm_bindgen(constructor, js_class = "RegExp", catch)]
    fn new(pattern: &str, flags: &str) -> Result<HostRegExp, JsValue>;

    /// Caught too: a match that exhausts the host's stack throws a RangeError.
    #[wasm_bindgen(method, js_class = "RegExp", catch)]
    fn test(this: &HostRegExp, text: &str) -> Result<bool, JsValue>;
}

pub struct HostPatterns;

impl PatternEngine for HostPatterns {
    fn compile(&self, pattern: &str) -> Result<Box<dyn Pattern>, String> {
        match HostRegExp::new(pattern, "u") {
            Ok(regexp) => Ok(Box::new(HostPattern(regexp))),
            Err(error) => Err(error_message(&error)),
        }
    }
}

struct HostPattern(HostRegExp);

impl Pattern for HostPattern {
    /// A match the host could not finish is no match: the arguments get an error result.
    fn is_match(&self, text: &str) -> bool {
        self.0.test(text).unwrap_or(false)
    }
}
