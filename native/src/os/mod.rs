//! What the worker asks of the system for itself: where large blocks come from
//! (`alloc.rs`) and its scheduling policy while a closed loop runs (`batch.rs`).

pub mod alloc;
pub mod batch;
