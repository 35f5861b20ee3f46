//! `pattern` and `patternProperties`: the regular expression engine is the host's. JSON Schema specifies
//! ECMA-262 regular expressions; in wasm the bridge implements `PatternEngine` with the host's `RegExp`
//! (`new RegExp(pattern, "u")`, exact semantics and no engine linked into the module). Natively the engine
//! is `regex-lite`, which differs from ECMA-262 in what follows; a pattern it cannot compile is refused at
//! `register` like an invalid one:
//!
//! - `\s` is ASCII whitespace only (ECMA-262 adds the Unicode spaces, e.g. U+00A0, U+FEFF, U+2028);
//! - `.` excludes only `\n` (ECMA-262 excludes `\r`, U+2028 and U+2029 too);
//! - refused: `\p{...}` classes, lookahead/lookbehind, backreferences;
//! - accepted although ECMA-262 refuses them: inline flags `(?i)`, `\A`, `\z`, `[[:alpha:]]` classes.

use std::rc::Rc;

/// Compiles the patterns of a schema; an `Err` is why the pattern is invalid.
pub trait PatternEngine {
    fn compile(&self, pattern: &str) -> Result<Box<dyn Pattern>, String>;
}

/// A compiled pattern. Unanchored, as JSON Schema says: it matches if it matches anywhere in the text.
pub trait Pattern {
    fn is_match(&self, text: &str) -> bool;
}

/// For a build with no engine (wasm without the JS bridge, whose host brings none): a schema with
/// `pattern` is refused at `register`, never passed unchecked.
pub struct NoPatterns;

impl PatternEngine for NoPatterns {
    fn compile(&self, _: &str) -> Result<Box<dyn Pattern>, String> {
        Err("no regular expression engine in this build".into())
    }
}

/// The engine a registry uses unless given one: `regex-lite` natively; none in wasm (the JS bridge
/// passes the host's `RegExp`).
pub fn default_patterns() -> Rc<dyn PatternEngine> {
    #[cfg(not(target_arch = "wasm32"))]
    return Rc::new(RegexLite);
    #[cfg(target_arch = "wasm32")]
    return Rc::new(NoPatterns);
}

#[cfg(not(target_arch = "wasm32"))]
struct RegexLite;

#[cfg(not(target_arch = "wasm32"))]
impl PatternEngine for RegexLite {
    fn compile(&self, pattern: &str) -> Result<Box<dyn Pattern>, String> {
        match regex_lite::Regex::new(pattern) {
            Ok(regex) => Ok(Box::new(regex)),
            Err(error) => Err(error.to_string()),
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Pattern for regex_lite::Regex {
    fn is_match(&self, text: &str) -> bool {
        regex_lite::Regex::is_match(self, text)
    }
}
