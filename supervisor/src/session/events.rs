//! What the session's threads tell its main loop. Every thread (the reaper, the signal
//! thread, each LD connection's thread) holds a sender of one std `mpsc` channel; the main loop
//! is its only receiver.

use super::outcome::End;
use ddbx_wire::ActorId;
use ddbx_wire::history::Origin;
use ddbx_wire::manifest::ExitStatus;

/// Something that happened in a session, handed to [`super::SessionConfig::on_event`] as it
/// happens (for progress lines and `--json-lines`; the `ddbx: …` lines are unchanged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEvent {
    /// A process image became an actor: a new process, or an exec of a live one (`exec`).
    ActorStarted {
        /// The actor.
        actor: ActorId,
        /// Its process in this run.
        pid: i32,
        /// How it was created.
        origin: Origin,
        /// Its program and arguments.
        argv: Vec<String>,
        /// Whether this is an exec of a process that was already this actor.
        exec: bool,
    },
    /// An actor's process was reaped.
    ActorExited {
        /// The actor.
        actor: ActorId,
        /// Its process in this run.
        pid: i32,
        /// How it ended.
        status: ExitStatus,
    },
    /// A live run (`ddbx run`): an actor stopped, at its breakpoint or delayed by a stopped
    /// one (paper 001's lazy halting).
    ActorStopped {
        /// The actor.
        actor: ActorId,
        /// Events it made.
        events: u64,
        /// `break`, or `delayed by p3`.
        why: String,
    },
    /// The session stops early: a divergence, an unsupported call (the first one only).
    Stopped(End),
    /// Every process is gone; the session writes its end (a record strips its channel data).
    Finishing,
}

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
    /// `spare`: processes that said they exit, on their way out (not to be killed).
    /// `first`: processes to end with the signal that ended them in the record before the
    /// SIGKILL that ends the rest (the first fatal signal sets how a process ended).
    AllAtEnd {
        spare: Vec<i32>,
        first: Vec<(i32, i32)>,
    },
    /// Something to hand to the embedding's event callback.
    Event(SessionEvent),
    /// Nothing came before the main loop's own deadline (a divergence waiting for its cause).
    Tick,
    /// Replay: a process died by a signal its record does not have (its parent reaped it).
    UnrecordedKill(super::outcome::Divergence),
}
