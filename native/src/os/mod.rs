//! What the worker asks of the system for itself: where large blocks come from
//! (`alloc.rs`), its scheduling policy while a closed loop runs (`batch.rs`), and to die
//! with its parent (`parent.rs`).

pub mod alloc;
pub mod batch;
pub mod parent;
