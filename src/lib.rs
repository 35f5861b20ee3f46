//! tiny-pi: an agent loop. Placeholder while the core lands.
