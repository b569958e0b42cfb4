//! Traces: the op trace a step writes (`capture.rs`), trace files read as streams
//! (`file.rs`: formats; `readahead.rs`: read on a thread of their own; `zstd.rs`: `.zst`
//! through libzstd), and a trace's replay: its requests dealt to this worker's clients
//! (`replay.rs`) under keys made from the trace's (`keys.rs`).

pub mod capture;
mod file;
mod keys;
mod readahead;
pub mod replay;
mod zstd;
