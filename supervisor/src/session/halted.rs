//! What a halting replay is asked for and what it reports: the request, the halted global
//! state, the globals observed on the way, and the embedding's answer on how to go on. These
//! are the public types of halting; the GD's state machine is [`super::halting`].

use ddbx_wire::ActorId;
use ddbx_wire::pred::Expr;
use std::collections::BTreeMap;

/// What the user asked to halt at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaltRequest {
    /// The primary predicate, as a conjunction of simple predicates, one per actor.
    pub primary: Vec<(ActorId, Expr)>,
    /// The predicate as the user wrote it (for messages).
    pub text: String,
}

/// One actor in the halted global state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaltedActor {
    /// The actor.
    pub actor: ActorId,
    /// Events executed (0: not created).
    pub events: u64,
    /// Its next event (`None`: at the end of its history, or not created).
    pub next: Option<String>,
    /// Its variables at the halt.
    pub vars: Vec<(String, i64)>,
    /// Whether its simple predicate holds (`None`: it has none).
    pub satisfied: Option<bool>,
    /// Its process id in this replay (`None`: not created, or exited).
    pub pid: Option<i32>,
    /// `created`, `passive`, `exited`, `not created`.
    pub status: String,
}

impl HaltedActor {
    /// Variables in the order they are shown: probes by name, then the built-in counters in
    /// their usual order — the same whether the live LD reported them or the GD read them from
    /// the history.
    pub fn in_order(vars: impl IntoIterator<Item = (String, i64)>) -> Vec<(String, i64)> {
        let mut vars: Vec<(String, i64)> = vars.into_iter().collect();
        let rank = |name: &str| {
            ddbx_wire::counters::NAMES
                .iter()
                .position(|c| *c == name)
                .map_or(0, |i| i + 1)
        };
        vars.sort_by(|a, b| (rank(&a.0), &a.0).cmp(&(rank(&b.0), &b.0)));
        vars
    }
}

/// The global state the replay halted in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaltedState {
    /// The predicate halted at.
    pub predicate: String,
    /// Events executed per actor, every recorded actor included (0: not created): the cut.
    pub cut: BTreeMap<ActorId, u64>,
    /// Per actor, in id order.
    pub actors: Vec<HaltedActor>,
    /// The observed globals' values so far (see [`Observation`]).
    pub observed: Vec<Observation>,
}

/// A global's value read from a replayed process's memory after an event (the globals a
/// replay observes are those its traces and predicates name: `SessionMode::Replay::observe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The actor.
    pub actor: ActorId,
    /// After this many of its events.
    pub after: u64,
    /// The global.
    pub name: String,
    /// Its value (from then until the next observation of the same global).
    pub value: i64,
}

/// How a halted replay goes on (what the embedding's halt callback answers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HaltAction {
    /// End every process now (the replay ends halted).
    Kill,
    /// Keep the processes as they are until ddbx is interrupted (`--hold`).
    Hold,
    /// Run on from the halted state, and call the callback again at the next halt.
    Resume(Resume),
    /// Look again: the callback is called anew with the state as it is now (a live run's
    /// changes while it stands; a replay's does not).
    Refresh,
}

/// Where a halted replay runs on to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// Run every actor exactly to this consistent global state (events per actor, each at
    /// least where it stands now; computed offline, e.g. the next satisfaction of a
    /// predicate), then halt there. `text` names it in the halted state.
    ToCut {
        /// Events per actor (missing: where it stands).
        cut: BTreeMap<ActorId, u64>,
        /// What the state is, for the user.
        text: String,
    },
    /// Halt at the least consistent global state at or after the current one where this
    /// conjunctive predicate holds (the halting algorithm again, with new simple predicates).
    Predicate(HaltRequest),
    /// Stop halting: run to the end of the recording.
    ToEnd,
}
