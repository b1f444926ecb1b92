//! A steered record (`ddbx explore`): a live run, recorded as usual, in which some messages are
//! made to come after some receives. Each [`Order`] says that an event that issues a message
//! (a send or a connect of one actor) is made only once a receive of another actor has been
//! made: the sender's LD asks before the event (`Hold`) and waits for `Go`; the receiver's LD
//! tells the GD when it made the receive (`Did`). Holding the message that won a race until the
//! race's receive is over makes another message win it, without touching the receiver.
//!
//! Actors are named by the recording explored ([`Steering::like`]): a new process created the
//! way one of its actors was gets that actor's id, so the orders' events name the same
//! processes. A held event that waits longer than [`Steering::patience`] (its receive never
//! comes: the run went another way) is let go, and the session says so (the waits are the
//! connection threads', `connections/messages.rs`).

use ddbx_wire::ActorId;
use ddbx_wire::manifest::ActorInfo;
use ddbx_wire::proto::SteerPlan;
use std::collections::HashSet;
use std::time::Duration;

/// An event of an actor: (actor, 1-based event number).
pub type StepAt = (ActorId, u64);

/// One order a steered record keeps: `then` is made only after `first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// The receive that must come first.
    pub first: StepAt,
    /// The event that issues a message (a send, a connect, a datagram), held until then.
    pub then: StepAt,
}

/// What a steered record follows.
#[derive(Debug, Clone)]
pub struct Steering {
    /// The orders to keep.
    pub orders: Vec<Order>,
    /// The actors of the recording explored: a new process with the origin of one of them
    /// gets its id.
    pub like: Vec<ActorInfo>,
    /// How long a held event waits at most for its receives.
    pub patience: Duration,
}

impl Steering {
    /// What `actor`'s LD must do (`None`: nothing).
    pub(crate) fn plan_for(&self, actor: ActorId) -> Option<SteerPlan> {
        let events = |pick: fn(&Order) -> StepAt| {
            let mut v: Vec<u64> = self
                .orders
                .iter()
                .map(pick)
                .filter(|(a, _)| *a == actor)
                .map(|(_, k)| k)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let plan = SteerPlan {
            hold: events(|o| o.then),
            report: events(|o| o.first),
        };
        (!plan.hold.is_empty() || !plan.report.is_empty()).then_some(plan)
    }
}

/// What the GD knows of a steered record as it runs.
#[derive(Debug, Default)]
pub(crate) struct Steered {
    /// The receives made so far, of those the orders name.
    pub(crate) done: HashSet<StepAt>,
}
