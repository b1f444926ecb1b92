//! What the recording tells the halting state machine, computed once when a halting replay
//! starts: the dependencies between events, which parent event creates each actor, which
//! children each actor's waits reaped, which actors are bystanders, and the histories (the
//! state of an actor that cannot answer is read from its history).

use crate::analysis::deps::{Deps, Event};
use crate::analysis::vars::variables_at;
use crate::recording::Recording;
use ddbx_wire::history::{Origin, Record};
use ddbx_wire::manifest::Reap;
use ddbx_wire::pred::{Expr, Value, holds};
use ddbx_wire::proto::HaltPlan;
use ddbx_wire::{ActorId, History};
use std::collections::{BTreeMap, HashMap};

/// The parent event that creates an actor (its fork or spawn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Creation {
    /// The parent actor.
    pub(super) parent: ActorId,
    /// The parent's event (1-based) that creates the actor.
    pub(super) event: u64,
}

/// The recording, as the halting state machine asks about it.
pub(super) struct RecordedFacts {
    deps: Deps,
    /// child → the parent's event that creates it.
    creation: HashMap<ActorId, Creation>,
    /// parent → the children its waits reaped, with its events at each.
    reaps: HashMap<ActorId, Vec<Reap>>,
    /// Actors with nothing to hold, no history (an image that never joined): not waited for.
    bystanders: Vec<ActorId>,
    histories: HashMap<ActorId, History>,
}

impl RecordedFacts {
    /// Reads what halting needs from `recording`.
    pub(super) fn from_recording(recording: &Recording) -> RecordedFacts {
        let actors = &recording.manifest.actors;
        let creation = actors
            .iter()
            .filter_map(|info| Some((info.id, creation_of(recording, info.origin)?)))
            .collect();
        let reaps = actors
            .iter()
            .filter(|a| !a.reaps.is_empty())
            .map(|a| (a.id, a.reaps.clone()))
            .collect();
        let bystanders = actors
            .iter()
            .filter(|a| recording.history(a.id).is_none())
            .map(|a| a.id)
            .collect();
        let histories = recording
            .histories
            .iter()
            .map(|h| (h.actor, h.clone()))
            .collect();
        RecordedFacts {
            deps: Deps::from_recording(recording),
            creation,
            reaps,
            bystanders,
            histories,
        }
    }

    /// The events of other actors that `actor`'s `event` needs: what it receives, accepts or
    /// connects to, the exits of the children it waits for, and the turns in shared files
    /// that the turns after it come after.
    pub(super) fn needs(&self, actor: ActorId, event: u64) -> Vec<Event> {
        let mut needs: Vec<Event> = self.deps.needs(actor, event).to_vec();
        needs.extend(self.deps.child_exits(actor, event));
        needs.extend(self.deps.turn_needs(actor, event));
        needs
    }

    /// What an LD must know to halt: its predicate `sp`, its `target` and the `epoch`, and the
    /// shared files whose writes keep their order.
    pub(super) fn plan(&self, sp: Option<Expr>, target: u64, epoch: u64) -> HaltPlan {
        HaltPlan {
            sp,
            target,
            epoch,
            ordered_files: self.deps.ordered_files().to_vec(),
        }
    }

    /// The parent event that creates `actor` (`None`: the root, or an unhooked process).
    pub(super) fn creation(&self, actor: ActorId) -> Option<Creation> {
        self.creation.get(&actor).copied()
    }

    /// Whether `actor` is a bystander (no history: nothing in it can be held or asked for).
    pub(super) fn is_bystander(&self, actor: ActorId) -> bool {
        self.bystanders.contains(&actor)
    }

    /// The children that `actor`'s waits reaped before its `event`.
    pub(super) fn reaped_before(&self, actor: ActorId, event: u64) -> Vec<ActorId> {
        self.reaps
            .get(&actor)
            .map(|reaps| {
                reaps
                    .iter()
                    .filter(|r| r.after < event)
                    .map(|r| r.child)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many events `actor`'s history holds.
    pub(super) fn history_len(&self, actor: ActorId) -> u64 {
        self.histories
            .get(&actor)
            .map_or(0, |h| h.records.len() as u64)
    }

    /// `actor`'s probed variables after `events` events, by its history.
    pub(super) fn variables_at(&self, actor: ActorId, events: u64) -> BTreeMap<String, i64> {
        self.histories
            .get(&actor)
            .map(|h| variables_at(h, events))
            .unwrap_or_default()
    }

    /// Whether `sp` holds for `actor` after `events` events, by the recorded variables (a
    /// variable the history does not know makes it not hold).
    pub(super) fn holds_at(&self, sp: &Expr, actor: ActorId, events: u64) -> bool {
        let vars = self.variables_at(actor, events);
        holds(sp, &mut |v| vars.get(&v.name).map(|n| Value::Int(*n)))
    }

    /// `actor`'s event after `events` events, as a history line (`None`: at the end).
    pub(super) fn next_event(&self, actor: ActorId, events: u64) -> Option<String> {
        self.histories
            .get(&actor)
            .and_then(|h| h.records.get(events as usize))
            .map(|r| r.to_line())
    }
}

/// The parent event that creates an actor of this origin, found in the parent's history.
fn creation_of(recording: &Recording, origin: Origin) -> Option<Creation> {
    let (parent, index) = match origin {
        Origin::Fork { parent, index } | Origin::Spawn { parent, index } => (parent, index),
        _ => return None,
    };
    let position = recording.history(parent)?.records.iter().position(
        |r| matches!(r, Record::Fork { index: i } | Record::Spawn { index: i } if *i == index),
    )?;
    Some(Creation {
        parent,
        event: position as u64 + 1,
    })
}
