//! Tracing the halting protocol, for ddbx developers: `DDBX_TRACE_HALT=1` writes one line per
//! decision on stderr; `DDBX_TRACE_HALT=FILE` (a value with a `/` in it) appends them to FILE,
//! each prefixed with the GD's pid. Off, a trace point costs one check of a cached value.

use std::io::Write;
use std::sync::OnceLock;

/// Where the trace goes: `None` when off.
fn target() -> Option<&'static str> {
    static TARGET: OnceLock<Option<String>> = OnceLock::new();
    TARGET
        .get_or_init(|| std::env::var("DDBX_TRACE_HALT").ok())
        .as_deref()
}

/// Whether the halting protocol is traced.
pub(super) fn enabled() -> bool {
    target().is_some()
}

/// Writes one trace line.
pub(super) fn write(line: String) {
    match target() {
        Some(path) if path.contains('/') => {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "{} {line}", std::process::id());
            }
        }
        _ => eprintln!("{line}"),
    }
}

/// `trace!("RunUntil {actor} {event}")`: one line of the halting trace, formatted only when on.
macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::session::halting::trace::enabled() {
            $crate::session::halting::trace::write(format!("ddbx-halt: {}", format!($($arg)*)));
        }
    };
}
pub(super) use trace;
