"""The load engine: a coordinator in the caller's loop, load in worker processes."""
