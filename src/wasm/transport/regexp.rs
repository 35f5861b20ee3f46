//! The core's `PatternEngine` in wasm: the host's `RegExp` with the `u` flag, which is what JSON Schema's
//! ECMA-262 patterns mean (exact semantics, and no regex engine linked into the module). `api/registry.rs`
//! hands it to every `ToolRegistry`.

use super::convert::error_message;
use super::glue::HostRegExp;
use crate::schema::{Pattern, PatternEngine};

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
