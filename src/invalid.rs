//! `Invalid`: the error of a value that failed one of SPEC's checks (a tool's name or schema, a message read
//! from JSON, an option out of range, arguments against a schema). Its text names the field by its path,
//! in SPEC's JSON names (`tool.parameters.properties.path.pattern ...`, `options.retry.baseDelayMs must be
//! a non-negative number (got NaN)`), the same text the JS API throws.

use std::fmt;

/// A value that failed a check; `Display` gives the text that names the field.
///
/// It implements `std::error::Error` (so `?` takes it into `Box<dyn Error>`, `anyhow` or `eyre`), and
/// turns into its `String`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(String);

impl Invalid {
    /// The text: the field's path, then what is wrong with it.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

impl From<String> for Invalid {
    fn from(message: String) -> Self {
        Invalid(message)
    }
}

impl From<&str> for Invalid {
    fn from(message: &str) -> Self {
        Invalid(message.to_owned())
    }
}

impl From<Invalid> for String {
    fn from(invalid: Invalid) -> Self {
        invalid.0
    }
}

impl AsRef<str> for Invalid {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Compares the text (`assert_eq!(registry.register(tool).unwrap_err(), "tool.name must be ...")`).
/// `invalid == text` and `text == invalid`, for each kind of text.
macro_rules! compare_text {
    ($($text:ty),*) => {$(
        impl PartialEq<$text> for Invalid {
            fn eq(&self, text: &$text) -> bool {
                self.0 == *text
            }
        }

        impl PartialEq<Invalid> for $text {
            fn eq(&self, invalid: &Invalid) -> bool {
                invalid == self
            }
        }
    )*};
}

compare_text!(str, &str, String);
