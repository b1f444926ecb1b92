//! Offline analysis of recorded histories: work done on whole recordings, not during a run.
//!
//! A [`crate::recording::Recording`] is data (manifest and histories); everything here is
//! derived from one, by whoever needs it, in this order:
//!
//! * [`channels`]: which connect made which accepted connection (the recording's channels);
//! * [`deps`]: which event needs which event of another actor (fork, connect/accept, data,
//!   readiness), and the byte range each send and receive covered; a [`deps::Deps`] keeps the
//!   channels it was built with;
//! * [`clock`]: vector clocks over those dependencies (happened-before);
//! * [`inf`]: consistent cuts, their closure, and Inf(P) for conjunctive predicates — the
//!   oracle of `stop if`;
//! * [`races`]: message races, locally-first and unaffected races, the affects relation;
//! * [`twopass`]: the same locally-first and unaffected races by Park & Jun's two-pass
//!   method (pass 1 on the recording, pass 2 a simulated replay carrying Affecter sets), an
//!   independent check of [`races`];
//! * [`vars`]: an actor's variables (probes and built-in counters) after k events.

pub mod channels;
pub mod clock;
pub mod cut;
pub mod deps;
pub mod inf;
pub mod races;
pub mod twopass;
pub mod vars;

#[cfg(test)]
mod testing;

pub use channels::{Channel, Endpoint, match_channels};

use ddbx_wire::ActorId;

/// `actors` ordered parents before children: by depth in the process tree (`parent_of` tells
/// an actor's parent, `None` for a tree's root), then by id. The walks over fd bindings go in
/// this order, a child starting with its parent's bindings at the fork that created it.
pub(crate) fn parents_first(
    actors: impl IntoIterator<Item = ActorId>,
    parent_of: impl Fn(ActorId) -> Option<ActorId>,
) -> Vec<ActorId> {
    let actors: Vec<ActorId> = actors.into_iter().collect();
    let mut order: Vec<(usize, ActorId)> = actors
        .iter()
        .map(|&a| {
            let mut depth = 0;
            let mut cur = a;
            while let Some(parent) = parent_of(cur) {
                // Deeper than there are actors: a cycle, which only a corrupt recording has.
                if depth > actors.len() {
                    break;
                }
                depth += 1;
                cur = parent;
            }
            (depth, a)
        })
        .collect();
    order.sort();
    order.into_iter().map(|(_, a)| a).collect()
}
