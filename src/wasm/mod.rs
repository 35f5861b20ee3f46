//! bridge placeholder
