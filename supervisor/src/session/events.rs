//! What the session's threads tell its main loop. Every thread (the reaper, the signal
//! thread, each LD connection's thread) holds a sender of one std `mpsc` channel; the main loop
//! is its only receiver.

use super::outcome::End;
use ddbx_wire::manifest::ExitStatus;

/// Events for the session's main loop.
pub(crate) enum MainEvent {
    /// A child was reaped.
    Reaped {
        /// Its pid.
        pid: i32,
        /// How it ended.
        status: ExitStatus,
    },
    /// No descendant is left.
    AllGone,
    /// waitpid failed in an unexpected way.
    ReapFailed(std::io::Error),
    /// SIGINT / SIGTERM.
    Signal(i32),
    /// Stop everything: divergence or unsupported.
    Stop(End),
    /// A line to show.
    Note(String),
    /// Halting: every actor is passive.
    Halted,
    /// Replay: every live process waits at the end of a history that ends without `Exit`.
    AllAtEnd,
}
