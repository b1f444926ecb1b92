//! `ddbx`'s exit codes: the table and the constants live in [`ddbx_wire::exit`], shared with the
//! preload, which ends a debuggee with the same numbers.

pub use ddbx_supervisor::wire::exit::*;
