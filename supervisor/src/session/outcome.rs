//! How a session ended and what it did: the public result of [`super::run`].

use super::halted::{HaltedState, Observation};
use ddbx_wire::ActorId;
use ddbx_wire::manifest::{ActorInfo, ExitStatus};

/// A replay that did not follow its recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The actor, when one is to blame.
    pub actor: Option<ActorId>,
    /// Its event number, when known.
    pub event: Option<u64>,
    /// What the recording expected.
    pub expected: String,
    /// What happened.
    pub found: String,
    /// The whole message, as printed.
    pub message: String,
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Record: the whole tree exited.
    Complete,
    /// Replay: the replay reached the recorded end.
    ReachedEnd,
    /// Replay: it did not follow the recording.
    Diverged(Divergence),
    /// The program did something ddbx cannot handle.
    Unsupported {
        /// The actor, when known.
        actor: Option<ActorId>,
        /// What.
        what: String,
    },
    /// Replay: halted at the first consistent global state where the predicate holds.
    Halted(Box<HaltedState>),
    /// ddbx got SIGINT or SIGTERM.
    Interrupted {
        /// The signal.
        signal: i32,
    },
}

/// What a session did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// How it ended.
    pub end: End,
    /// The root process's status, if it was reaped.
    pub root_status: Option<ExitStatus>,
    /// The recorded root status (replay only).
    pub recorded_root_status: Option<ExitStatus>,
    /// A halt held (`--hold`) until ddbx was interrupted: the signal (the end is still
    /// [`End::Halted`], with the state it was held in).
    pub held_until: Option<i32>,
    /// The actors of this run (ids, this run's pids, exit statuses).
    pub actors: Vec<ActorInfo>,
    /// Replay: the recorded events; record: events the actors reported at exit.
    pub events: u64,
    /// Kinds of I/O that were not recorded, with the actors that did them.
    pub passthrough: Vec<String>,
    /// Every human-readable line the session produced, in order.
    pub messages: Vec<String>,
    /// Replay: the observed globals' values (see [`super::SessionMode::Replay`]'s `observe`).
    pub observed: Vec<Observation>,
}

impl End {
    /// The line the session shows when it stops for this reason (empty for the ends that
    /// are not a stop).
    pub(crate) fn stop_line(&self) -> String {
        match self {
            End::Diverged(d) => d.message.clone(),
            End::Unsupported {
                actor: Some(actor),
                what,
            } => format!("ddbx: {actor}: {what}"),
            End::Unsupported { actor: None, what } => format!("ddbx: {what}"),
            _ => String::new(),
        }
    }

    /// One line for the manifest's `problem`.
    pub(crate) fn problem(&self) -> String {
        match self {
            End::Complete | End::ReachedEnd => String::new(),
            End::Diverged(d) => d
                .message
                .strip_prefix("ddbx: ")
                .unwrap_or(&d.message)
                .to_string(),
            End::Unsupported {
                actor: Some(actor),
                what,
            } => format!("unsupported in {actor}: {what}"),
            End::Unsupported { actor: None, what } => format!("unsupported: {what}"),
            End::Interrupted { signal } => format!("ddbx was interrupted by signal {signal}"),
            End::Halted(state) => format!("halted at `{}`", state.predicate),
        }
    }
}
