//! Halting at Inf(P): the GD's part of the paper's halting algorithm (its Fig. 5).
//!
//! The GD sees every control message, which makes it the termination detector. Each actor is
//! *not created*, *running* (active, or between its last note and its next), *passive* (waiting
//! at the entry of its next event), or *exited*. Requests go to the actor the history says will
//! act: before an event that waits on others, an LD says `Need`; the GD looks up, in the
//! recording's dependencies, which events of which actors that event needs (the send that holds
//! the bytes, the connect of an accept and vice versa, the fork that creates an actor) and sends
//! `RunUntil` to each actor that has not executed them yet; an actor that does not exist yet is
//! created by the same rule, through its parent's fork (recursively).
//!
//! **Halted**: no actor is running, and every actor whose creating fork has been executed has
//! said hello. Then the program stands at Inf(P) (or, if some actor with a predicate exited
//! without it holding, P never holds).

mod recorded;
pub(super) mod trace;

/// Kept at this path for callers (the halting benchmark); it lives in `control_count`.
pub use super::control_count::control_messages;

use super::control_count::count_message;
use super::halted::{HaltRequest, HaltedActor, HaltedState, Resume};
use super::ld_writer::LdWriter;
use crate::recording::Recording;
use ddbx_wire::ActorId;
use ddbx_wire::pred::Expr;
use ddbx_wire::proto::{GdToLd, HaltPlan};
use recorded::RecordedFacts;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use trace::trace;

/// Where an actor stands, as the GD knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Its process has not said hello yet.
    NotCreated,
    /// Active, or between its last note and its next.
    Running,
    /// Waiting at the entry of its next event (or outside its events, e.g. in waitpid).
    Passive,
    /// Its process exited.
    Exited,
}

/// One actor of the recording, in the halting state machine.
struct Actor {
    phase: Phase,
    /// The largest target asked of it.
    target: u64,
    writer: Option<LdWriter>,
    pid: Option<i32>,
    /// Events executed, as last reported (Passive/Exiting/State).
    reported: u64,
    /// Passive at the entry of its next event, reading the GD (it answers `Report`).
    at_gate: bool,
    /// Its predicate held (with nothing owed) when it last said so, even if it then exited.
    held: bool,
    /// The target its Welcome carried.
    welcomed_target: u64,
    /// Welcomes so far: an exec'd image says hello again on a new connection, and only the
    /// latest connection may carry requests (an older one may be attached late, and is dead).
    incarnation: u64,
}

impl Actor {
    fn not_created() -> Actor {
        Actor {
            phase: Phase::NotCreated,
            target: 0,
            writer: None,
            pid: None,
            reported: 0,
            at_gate: false,
            held: false,
            welcomed_target: 0,
            incarnation: 0,
        }
    }
}

/// What halting tells a newly welcomed LD, and the incarnation to [`Halting::attach`] its
/// connection with.
pub(crate) struct HaltingWelcome {
    /// Its part of the Welcome.
    pub(crate) plan: HaltPlan,
    /// Welcomes of this actor so far (an exec'd image is welcomed again).
    pub(crate) incarnation: u64,
}

/// An LD's `Passive` note, with the incarnation of the connection it came on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PassiveNote {
    /// The actor.
    pub(crate) actor: ActorId,
    /// The connection's incarnation (see [`HaltingWelcome`]).
    pub(crate) incarnation: u64,
    /// Events it has executed.
    pub(crate) events: u64,
    /// The largest target it has seen.
    pub(crate) target: u64,
    /// Whether it waits at the entry of its next event, reading the GD.
    pub(crate) at_gate: bool,
    /// The `Retarget`s it had seen when it decided.
    pub(crate) epoch: u64,
}

/// The halting state of a replay.
pub(crate) struct Halting {
    recorded: RecordedFacts,
    /// The simple predicate of each actor that has one.
    sp: HashMap<ActorId, Expr>,
    /// What is halted at, for the user.
    text: String,
    actors: BTreeMap<ActorId, Actor>,
    /// Where the LDs keep their state files (their event counts).
    state_dir: PathBuf,
    /// Halt detected (the main loop collects the state).
    halted: bool,
    /// `Retarget`s sent to each actor so far (one per resume with a new predicate).
    epoch: u64,
    /// Released: the predicate never held; everything runs to the end, new actors included.
    released: bool,
    /// `State` answers collected after the halt.
    reports: BTreeMap<ActorId, HaltedActor>,
}

impl Halting {
    /// Prepares halting a replay of `recording` at `request`.
    pub(crate) fn new(recording: &Recording, request: &HaltRequest, state_dir: PathBuf) -> Halting {
        trace!("start {} P={}", recording.dir.display(), request.text);
        let recorded = RecordedFacts::from_recording(recording);
        let actors = recording
            .manifest
            .actors
            .iter()
            .map(|a| (a.id, Actor::not_created()))
            .collect();
        let mut halting = Halting {
            recorded,
            sp: request.primary.iter().cloned().collect(),
            text: request.text.clone(),
            actors,
            state_dir,
            halted: false,
            epoch: 0,
            released: false,
            reports: BTreeMap::new(),
        };
        // Actors with a predicate must exist: create them (through their parents) from the start.
        let with_sp: Vec<ActorId> = halting.sp.keys().copied().collect();
        for actor in with_sp {
            halting.ensure(actor, 1);
        }
        halting
    }

    /// Events executed by `actor` now (from its state file), or as last reported.
    fn progress(&self, actor: ActorId) -> u64 {
        let from_file = std::fs::read(self.state_dir.join(actor.to_string()))
            .ok()
            .and_then(|b| {
                b.get(..8)
                    .map(|s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
            });
        let reported = self.actors.get(&actor).map_or(0, |a| a.reported);
        from_file.unwrap_or(0).max(reported)
    }

    /// Makes `actor` execute at least `event` events (creating it first if need be).
    fn ensure(&mut self, actor: ActorId, event: u64) {
        self.ensure_reaped(actor, event);
        let progress = self.progress(actor);
        let Some(a) = self.actors.get_mut(&actor) else {
            return;
        };
        match a.phase {
            Phase::Exited => {}
            Phase::NotCreated => {
                if event > a.target {
                    trace!("create {actor} (then run to {event})");
                    a.target = event;
                    if let Some(creation) = self.recorded.creation(actor) {
                        // Created through its parent's fork (recursively, if the parent does
                        // not exist yet either).
                        self.ensure(creation.parent, creation.event);
                    }
                }
            }
            Phase::Running | Phase::Passive => {
                if progress >= event || event <= a.target {
                    return;
                }
                a.target = event;
                a.phase = Phase::Running;
                a.at_gate = false;
                a.held = false;
                trace!("RunUntil {actor} {event} (at {progress})");
                if let Some(w) = &a.writer {
                    w.send(&GdToLd::RunUntil { event });
                }
            }
        }
    }

    /// Before `actor` can execute `event`, the children its waits reaped before that event
    /// must have ended (a process blocked in waitpid reads no request): run them to their end.
    fn ensure_reaped(&mut self, actor: ActorId, event: u64) {
        for child in self.recorded.reaped_before(actor, event) {
            let end = self.recorded.history_len(child);
            if end > 0 && child != actor {
                trace!("{actor} reaped {child} before its event {event}: run {child} to its end");
                self.ensure(child, end);
            }
        }
    }

    /// An LD said hello as `actor`: what it must know, and the incarnation to `attach` its
    /// connection with.
    pub(crate) fn welcomed(&mut self, actor: ActorId, pid: i32) -> HaltingWelcome {
        let sp = self.sp.get(&actor).cloned();
        let Some(a) = self.actors.get_mut(&actor) else {
            let plan = self.recorded.plan(sp, 0, self.epoch);
            return HaltingWelcome {
                plan,
                incarnation: 0,
            };
        };
        a.incarnation += 1;
        trace!("Welcome {actor} pid {pid} (incarnation {})", a.incarnation);
        a.phase = Phase::Running;
        // Until the Welcome is written and the writer attached, requests only raise the
        // target; `attach` sends what the Welcome did not carry.
        a.writer = None;
        a.pid = Some(pid);
        // After a release, a new actor must not be held either.
        let target = if self.released { u64::MAX } else { a.target };
        a.welcomed_target = target;
        let epoch = self.epoch;
        let incarnation = a.incarnation;
        HaltingWelcome {
            plan: self.recorded.plan(sp, target, epoch),
            incarnation,
        }
    }

    /// The Welcome of `actor` has been written: later requests go through `writer`, starting
    /// with any target raised since the Welcome was made.
    ///
    /// A connection welcomed before the latest one (the image before an exec, whose thread got
    /// here late) is not attached: requests written to it would be lost.
    pub(crate) fn attach(&mut self, actor: ActorId, incarnation: u64, writer: LdWriter) {
        if let Some(a) = self.actors.get_mut(&actor) {
            if incarnation != a.incarnation {
                trace!(
                    "not attaching {actor}'s incarnation {incarnation} (now {})",
                    a.incarnation
                );
                return;
            }
            trace!("attach {actor} incarnation {incarnation}");
            if a.target > a.welcomed_target && !self.released {
                trace!(
                    "RunUntil {actor} {} (raised before its Welcome was out)",
                    a.target
                );
                writer.send(&GdToLd::RunUntil { event: a.target });
            }
            a.writer = Some(writer);
        }
    }

    /// Sends every request again that has not been met yet (an actor whose target is above its
    /// progress), and checks for the halt again. Requests are idempotent, so this only
    /// repairs a request that got lost (the main loop calls it when nothing happened for a
    /// while).
    pub(crate) fn resend(&mut self) -> bool {
        if self.halted || self.released {
            return false;
        }
        let ids: Vec<ActorId> = self.actors.keys().copied().collect();
        for id in ids {
            let progress = self.progress(id);
            if let Some(a) = self.actors.get(&id)
                && matches!(a.phase, Phase::Running | Phase::Passive)
                && a.target > progress
                && let Some(w) = &a.writer
            {
                trace!("RunUntil {id} {} again (at {progress})", a.target);
                w.send(&GdToLd::RunUntil { event: a.target });
            }
        }
        self.check()
    }

    /// `actor` is about to execute `event`, which needs other actors' events.
    pub(crate) fn need(&mut self, actor: ActorId, event: u64) {
        count_message();
        let needs = self.recorded.needs(actor, event);
        self.ensure_reaped(actor, event);
        trace!("Need {actor} {event}: {needs:?}");
        for (other, e) in needs {
            self.ensure(other, e);
        }
    }

    /// An actor is passive (see [`PassiveNote`]). A note from an image that has since exec'd
    /// (`incarnation` not the latest), or decided under a predicate since replaced (`epoch`
    /// older than the last `Retarget`), is stale.
    pub(crate) fn passive(&mut self, note: PassiveNote) {
        count_message();
        let PassiveNote {
            actor,
            incarnation,
            events,
            target,
            at_gate,
            epoch,
        } = note;
        trace!(
            "Passive {actor} at {events} (target seen {target}, at gate {at_gate}, incarnation {incarnation})"
        );
        if epoch < self.epoch {
            trace!("(stale: epoch {epoch} < {})", self.epoch);
        }
        if let Some(a) = self.actors.get_mut(&actor)
            && a.incarnation == incarnation
            && epoch >= self.epoch
        {
            a.reported = a.reported.max(events);
            // Also a note sent before a `RunUntil` it never read (in a wait), once that far.
            let current = target >= a.target || events >= a.target;
            if current && matches!(a.phase, Phase::Running | Phase::Passive) {
                a.phase = Phase::Passive;
                a.at_gate = at_gate;
                a.held = true;
            }
        }
    }

    /// `actor`'s process exited.
    pub(crate) fn exited(&mut self, actor: ActorId, events: u64) {
        count_message();
        trace!("Exited {actor} at {events}");
        if let Some(a) = self.actors.get_mut(&actor) {
            a.phase = Phase::Exited;
            a.reported = a.reported.max(events);
            a.writer = None;
        }
    }

    /// Whether the program has halted now (every actor passive or exited, and every child whose
    /// creating fork was executed has said hello).
    pub(crate) fn check(&mut self) -> bool {
        // Released: nothing is held any more, so nothing halts.
        if self.halted || self.released {
            return false;
        }
        let mut any_created = false;
        for (id, a) in &self.actors {
            // A bystander is only waited for to say hello once forked.
            let bystander = self.bystander(*id);
            match a.phase {
                Phase::Running if !bystander => return false,
                Phase::Passive | Phase::Exited if !bystander => any_created = true,
                Phase::NotCreated if self.on_its_way(*id, a) => return false,
                _ => {}
            }
        }
        if any_created {
            self.halted = true;
        }
        self.halted
    }

    /// Whether an actor not created yet is being created: its parent executed the fork and it
    /// has not said hello yet, or it was asked for from a parent nothing holds (a shell).
    fn on_its_way(&self, id: ActorId, a: &Actor) -> bool {
        let Some(creation) = self.recorded.creation(id) else {
            return false;
        };
        if self.progress(creation.parent) >= creation.event {
            return true; // forked, not yet said hello
        }
        let parent = self.actors.get(&creation.parent);
        a.target > 0
            && parent.is_some_and(|p| p.phase != Phase::Exited)
            && self.bystander(creation.parent)
    }

    /// Whether `actor` is a bystander (no history: nothing holds it) that no predicate names.
    fn bystander(&self, actor: ActorId) -> bool {
        self.recorded.is_bystander(actor) && !self.sp.contains_key(&actor)
    }

    /// Whether a halt was detected and not resumed from yet.
    pub(crate) fn is_halted(&self) -> bool {
        self.halted
    }

    /// Whether every actor with a predicate is passive (it holds there): else P never held.
    pub(crate) fn satisfied(&self) -> bool {
        self.sp.keys().all(|id| {
            self.actors
                .get(id)
                .is_some_and(|a| a.held && matches!(a.phase, Phase::Passive | Phase::Exited))
        })
    }

    /// Asks every passive actor for its state; returns how many answers to wait for.
    pub(crate) fn request_reports(&mut self) -> usize {
        let mut asked = 0;
        for a in self.actors.values() {
            if a.phase == Phase::Passive
                && a.at_gate
                && let Some(w) = &a.writer
            {
                w.send(&GdToLd::Report);
                asked += 1;
            }
        }
        asked
    }

    /// An actor's answer to `Report`.
    pub(crate) fn state(&mut self, actor: HaltedActor) {
        count_message();
        self.reports.insert(actor.actor, actor);
    }

    /// How many answers to `Report` have come since the halt.
    pub(crate) fn reports_received(&self) -> usize {
        self.reports.len()
    }

    /// Whether halting was given up (the predicate never held).
    pub(crate) fn released(&self) -> bool {
        self.released
    }

    /// The predicate being halted at, as the user wrote it.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Lets every actor run freely to the end of its history.
    pub(crate) fn release(&mut self) {
        self.released = true;
        for a in self.actors.values_mut() {
            if let Some(w) = &a.writer {
                w.send(&GdToLd::Release);
            }
            if a.phase == Phase::Passive {
                a.phase = Phase::Running;
            }
        }
        self.sp.clear();
    }

    /// Continues a halted replay (see [`Resume`]). Every live actor is sent its new simple
    /// predicate; one that waits at its gate counts as running until it says `Passive` again;
    /// actors outside their gate (in waitpid) pick it up at their next event, and actors not
    /// created yet in their Welcome.
    pub(crate) fn resume(&mut self, resume: &Resume) {
        self.halted = false;
        self.reports.clear();
        let (sp, text, cut) = match resume {
            Resume::ToEnd => {
                self.release();
                return;
            }
            Resume::ToCut { cut, text } => (HashMap::new(), text.clone(), cut.clone()),
            Resume::Predicate(request) => (
                request.primary.iter().cloned().collect(),
                request.text.clone(),
                BTreeMap::new(),
            ),
        };
        trace!("resume towards `{text}`");
        self.epoch += 1;
        self.sp = sp;
        self.text = text;
        let blocked = self.retarget();
        // What a blocked actor waits for (the children its wait reaps) must happen.
        for id in blocked {
            let next = self.progress(id) + 1;
            self.ensure_reaped(id, next);
        }
        for (id, event) in cut {
            self.ensure(id, event);
        }
        let with_sp: Vec<ActorId> = self.sp.keys().copied().collect();
        for actor in with_sp {
            self.ensure(actor, 1);
        }
    }

    /// Sends every live actor its new simple predicate (`Retarget`) and counts as running
    /// those that must move; returns the ones among them blocked outside their events.
    fn retarget(&mut self) -> Vec<ActorId> {
        let epoch = self.epoch;
        let ids: Vec<ActorId> = self.actors.keys().copied().collect();
        let mut blocked = Vec::new();
        for id in &ids {
            let new_sp = self.sp.get(id).cloned();
            // An actor blocked outside its events (waitpid) reads the new predicate only at its
            // next event: if the predicate does not hold where it stands (by the recorded
            // values; memory unknown counts as not holding), it must be counted as running.
            let must_move = new_sp
                .as_ref()
                .is_some_and(|sp| !self.recorded.holds_at(sp, *id, self.progress(*id)));
            if let Some(a) = self.actors.get_mut(id)
                && matches!(a.phase, Phase::Passive | Phase::Running)
                && let Some(w) = &a.writer
            {
                w.send(&GdToLd::Retarget { sp: new_sp, epoch });
                // An actor reading the GD at its gate answers at once.
                if a.phase == Phase::Passive && (a.at_gate || must_move) {
                    if !a.at_gate {
                        blocked.push(*id);
                    }
                    a.phase = Phase::Running;
                    a.held = false;
                }
            }
        }
        blocked
    }

    /// The halted global state, from the answers collected (and, for the actors that could not
    /// answer, from their histories).
    pub(crate) fn halted_state(&self) -> HaltedState {
        let mut cut = BTreeMap::new();
        let mut actors = Vec::new();
        for (id, a) in &self.actors {
            let entry = match self.reports.get(id) {
                Some(report) => report.clone(),
                None => self.unreported(*id, a),
            };
            cut.insert(*id, entry.events);
            actors.push(entry);
        }
        HaltedState {
            predicate: self.text.clone(),
            cut,
            actors,
            observed: Vec::new(),
        }
    }

    /// An actor in the halted state that did not answer `Report`: where it stands, read from
    /// its history.
    fn unreported(&self, id: ActorId, a: &Actor) -> HaltedActor {
        if a.phase == Phase::NotCreated {
            return HaltedActor {
                actor: id,
                events: 0,
                next: None,
                vars: Vec::new(),
                satisfied: None,
                pid: None,
                status: "not created".into(),
            };
        }
        let events = self.progress(id);
        let status = if a.phase == Phase::Exited {
            "exited"
        } else if self.bystander(id) {
            "bystander (unrecorded: not held)"
        } else if !a.at_gate {
            "passive (waiting outside its recorded events, e.g. in waitpid)"
        } else {
            "passive"
        };
        HaltedActor {
            actor: id,
            events,
            next: self.recorded.next_event(id, events),
            vars: HaltedActor::in_order(self.recorded.variables_at(id, events)),
            satisfied: self
                .sp
                .get(&id)
                .map(|sp| self.recorded.holds_at(sp, id, events)),
            pid: a.pid,
            status: status.into(),
        }
    }

    /// The pid of an actor's process, if it is alive.
    pub(crate) fn pid(&self, actor: ActorId) -> Option<i32> {
        self.actors.get(&actor).and_then(|a| a.pid)
    }
}

#[cfg(test)]
mod tests;
