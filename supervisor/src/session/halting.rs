//! Halting at Inf(P): the GD's part of the paper's algorithm (003 §4, Fig. 5; DESIGN §4).
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

use crate::analysis::deps::Deps;
use crate::recording::Recording;
use ddbx_wire::history::{Origin, Record};
use ddbx_wire::pred::Expr;
use ddbx_wire::proto::{GdToLd, HaltPlan};
use ddbx_wire::{ActorId, proto};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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

/// A writer shared by an LD connection's thread and the halting logic.
pub(crate) type Writer = Arc<Mutex<UnixStream>>;

/// Whether to trace the halting protocol (`DDBX_TRACE_HALT=1`: on stderr; `DDBX_TRACE_HALT=FILE`
/// with a `/` in it: appended to FILE, one line per message, prefixed with the GD's pid; for
/// ddbx developers).
fn tracing() -> bool {
    trace_target().is_some()
}

fn trace_target() -> Option<&'static str> {
    static ON: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ON.get_or_init(|| std::env::var("DDBX_TRACE_HALT").ok())
        .as_deref()
}

fn trace_line(line: String) {
    match trace_target() {
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

macro_rules! trace {
    ($($arg:tt)*) => {
        if tracing() {
            trace_line(format!("ddbx-halt: {}", format!($($arg)*)));
        }
    };
}

/// Halting control messages the GD has sent or received in this process so far (requests,
/// notes, reports; not the Hello/Welcome handshake): for benchmarks.
static CONTROL_MESSAGES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many halting control messages the GD has sent or received in this process so far.
pub fn control_messages() -> u64 {
    CONTROL_MESSAGES.load(std::sync::atomic::Ordering::Relaxed)
}

fn count_message() {
    CONTROL_MESSAGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Sends one message on an LD connection (ignored if it is closed).
pub(crate) fn send(writer: &Writer, msg: &GdToLd) {
    count_message();
    let line = proto::encode(msg);
    let mut stream = writer.lock().unwrap_or_else(|p| p.into_inner());
    let _ = stream.write_all(line.as_bytes());
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    NotCreated,
    Running,
    Passive,
    Exited,
}

struct Actor {
    phase: Phase,
    /// The largest target asked of it.
    target: u64,
    writer: Option<Writer>,
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

/// The halting state of a replay.
pub(crate) struct Halting {
    deps: Deps,
    sp: HashMap<ActorId, Expr>,
    text: String,
    actors: BTreeMap<ActorId, Actor>,
    /// child → (parent, the parent's event that creates it).
    creation: HashMap<ActorId, (ActorId, u64)>,
    /// parent → the children its waits reaped, with its events at each (see `Reap`).
    reaps: HashMap<ActorId, Vec<ddbx_wire::manifest::Reap>>,
    /// Actors with nothing to hold (see `is_bystander`): not waited for.
    bystanders: Vec<ActorId>,
    /// The recorded histories (the state of an actor that cannot answer comes from them).
    histories: HashMap<ActorId, ddbx_wire::History>,
    state_dir: PathBuf,
    /// Halt detected (the main loop collects the state).
    pub halted: bool,
    /// `Retarget`s sent to each actor so far (one per resume with a new predicate).
    epoch: u64,
    /// Released: the predicate never held; everything runs to the end, new actors included.
    released: bool,
    /// `State` answers collected after the halt.
    pub states: BTreeMap<ActorId, HaltedActor>,
}

impl Halting {
    /// Prepares halting a replay of `recording` at `request`.
    pub(crate) fn new(recording: &Recording, request: &HaltRequest, state_dir: PathBuf) -> Halting {
        trace!("start {} P={}", recording.dir.display(), request.text);
        let deps = Deps::from_recording(recording);
        let mut creation = HashMap::new();
        for info in &recording.manifest.actors {
            let (parent, index) = match info.origin {
                Origin::Fork { parent, index } | Origin::Spawn { parent, index } => (parent, index),
                _ => continue,
            };
            let event = recording.history(parent).and_then(|h| {
                h.records.iter().position(|r| {
                    matches!(r, Record::Fork { index: i } | Record::Spawn { index: i } if *i == index)
                })
            });
            if let Some(pos) = event {
                creation.insert(info.id, (parent, pos as u64 + 1));
            }
        }
        let actors = recording
            .manifest
            .actors
            .iter()
            .map(|a| {
                (
                    a.id,
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
                    },
                )
            })
            .collect();
        let bystanders = recording
            .manifest
            .actors
            .iter()
            .filter(|a| {
                recording
                    .history(a.id)
                    .is_none_or(|h| ddbx_wire::history::is_bystander(&h.records))
            })
            .map(|a| a.id)
            .collect();
        let histories = recording
            .histories
            .iter()
            .map(|h| (h.actor, h.clone()))
            .collect();
        let reaps = recording
            .manifest
            .actors
            .iter()
            .filter(|a| !a.reaps.is_empty())
            .map(|a| (a.id, a.reaps.clone()))
            .collect();
        let mut halting = Halting {
            reaps,
            histories,
            bystanders,
            deps,
            sp: request.primary.iter().cloned().collect(),
            text: request.text.clone(),
            actors,
            creation,
            state_dir,
            halted: false,
            epoch: 0,
            released: false,
            states: BTreeMap::new(),
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
                    if let Some(&(parent, fork)) = self.creation.get(&actor) {
                        // Created through its parent's fork (recursively, if the parent does
                        // not exist yet either).
                        self.ensure(parent, fork);
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
                    send(w, &GdToLd::RunUntil { event });
                }
            }
        }
    }

    /// Before `actor` can execute `event`, the children its waits reaped before that event
    /// must have ended (a process blocked in waitpid reads no request): run them to their end.
    fn ensure_reaped(&mut self, actor: ActorId, event: u64) {
        let children: Vec<ActorId> = self
            .reaps
            .get(&actor)
            .map(|r| {
                r.iter()
                    .filter(|r| r.after < event)
                    .map(|r| r.child)
                    .collect()
            })
            .unwrap_or_default();
        for child in children {
            let end = self
                .histories
                .get(&child)
                .map_or(0, |h| h.records.len() as u64);
            if end > 0 && child != actor {
                trace!("{actor} reaped {child} before its event {event}: run {child} to its end");
                self.ensure(child, end);
            }
        }
    }

    /// An LD said hello as `actor`: what it must know, and the incarnation to `attach` its
    /// connection with.
    pub(crate) fn welcomed(&mut self, actor: ActorId, pid: i32) -> (HaltPlan, u64) {
        let sp = self.sp.get(&actor).cloned();
        match self.actors.get_mut(&actor) {
            Some(a) => {
                a.incarnation += 1;
                trace!("Welcome {actor} pid {pid} (incarnation {})", a.incarnation);
                a.phase = Phase::Running;
                // Until the Welcome is written and the writer attached, requests only raise
                // the target; `attach` sends what the Welcome did not carry.
                a.writer = None;
                a.pid = Some(pid);
                // After a release, a new actor must not be held either.
                let target = if self.released { u64::MAX } else { a.target };
                a.welcomed_target = target;
                let epoch = self.epoch;
                (HaltPlan { sp, target, epoch }, a.incarnation)
            }
            None => (
                HaltPlan {
                    sp,
                    target: 0,
                    epoch: self.epoch,
                },
                0,
            ),
        }
    }

    /// The Welcome of `actor` has been written: later requests go through `writer`, starting
    /// with any target raised since the Welcome was made.
    ///
    /// A connection welcomed before the latest one (the image before an exec, whose thread got
    /// here late) is not attached: requests written to it would be lost.
    pub(crate) fn attach(&mut self, actor: ActorId, incarnation: u64, writer: Writer) {
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
                send(&writer, &GdToLd::RunUntil { event: a.target });
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
                send(w, &GdToLd::RunUntil { event: a.target });
            }
        }
        self.check()
    }

    /// `actor` is about to execute `event`, which needs other actors' events.
    pub(crate) fn need(&mut self, actor: ActorId, event: u64) {
        count_message();
        let mut needs: Vec<(ActorId, u64)> = self.deps.needs(actor, event).to_vec();
        needs.extend(self.deps.child_exits(actor, event));
        self.ensure_reaped(actor, event);
        trace!("Need {actor} {event}: {needs:?}");
        for (other, e) in needs {
            self.ensure(other, e);
        }
    }

    /// `actor` is passive after `events` events, having seen requests up to `target`.
    /// A note from an image that has since exec'd (`incarnation` not the latest), or decided
    /// under a predicate since replaced (`epoch` older than the last `Retarget`), is stale.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn passive(
        &mut self,
        actor: ActorId,
        incarnation: u64,
        events: u64,
        target: u64,
        at_gate: bool,
        epoch: u64,
    ) {
        count_message();
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
            if target >= a.target && matches!(a.phase, Phase::Running | Phase::Passive) {
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
            if self.bystanders.contains(id) {
                continue;
            }
            match a.phase {
                Phase::Running => return false,
                Phase::Passive | Phase::Exited => any_created = true,
                Phase::NotCreated => {
                    if let Some(&(parent, fork)) = self.creation.get(id) {
                        if self.progress(parent) >= fork {
                            return false; // forked, not yet said hello
                        }
                        // Asked for, from a parent nothing holds (a shell): it is on its way.
                        let parent_runs_freely = self.bystanders.contains(&parent)
                            && self
                                .actors
                                .get(&parent)
                                .is_some_and(|p| p.phase != Phase::Exited);
                        if a.target > 0 && parent_runs_freely {
                            return false;
                        }
                    }
                }
            }
        }
        if any_created {
            self.halted = true;
        }
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
                send(w, &GdToLd::Report);
                asked += 1;
            }
        }
        asked
    }

    /// An actor's answer to `Report`.
    pub(crate) fn state(&mut self, actor: HaltedActor) {
        count_message();
        self.states.insert(actor.actor, actor);
    }

    /// Whether halting was given up (the predicate never held).
    pub(crate) fn released(&self) -> bool {
        self.released
    }

    /// Lets every actor run freely to the end of its history.
    pub(crate) fn release(&mut self) {
        self.released = true;
        for a in self.actors.values_mut() {
            if let Some(w) = &a.writer {
                send(w, &GdToLd::Release);
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
        self.states.clear();
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
        let epoch = self.epoch;
        self.sp = sp;
        self.text = text;
        let ids: Vec<ActorId> = self.actors.keys().copied().collect();
        let mut blocked = Vec::new();
        for id in &ids {
            let new_sp = self.sp.get(id).cloned();
            // An actor blocked outside its events (waitpid) reads the new predicate only at its
            // next event: if the predicate does not hold where it stands (by the recorded
            // values; memory unknown counts as not holding), it must be counted as running.
            let must_move = new_sp.as_ref().is_some_and(|sp| {
                let progress = self.progress(*id);
                let vars = self
                    .histories
                    .get(id)
                    .map(|h| crate::analysis::vars::variables_at(h, progress))
                    .unwrap_or_default();
                !ddbx_wire::pred::holds(sp, &mut |v| {
                    vars.get(&v.name).map(|n| ddbx_wire::pred::Value::Int(*n))
                })
            });
            if let Some(a) = self.actors.get_mut(id)
                && matches!(a.phase, Phase::Passive | Phase::Running)
                && let Some(w) = &a.writer
            {
                send(w, &GdToLd::Retarget { sp: new_sp, epoch });
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

    /// The halted global state, from the answers collected.
    pub(crate) fn halted_state(&self) -> HaltedState {
        let mut cut = BTreeMap::new();
        let mut actors = Vec::new();
        for (id, a) in &self.actors {
            let entry = match (a.phase, self.states.get(id)) {
                (_, Some(s)) => s.clone(),
                (Phase::NotCreated, None) => HaltedActor {
                    actor: *id,
                    events: 0,
                    next: None,
                    vars: Vec::new(),
                    satisfied: None,
                    pid: None,
                    status: "not created".into(),
                },
                (phase, None) => HaltedActor {
                    actor: *id,
                    events: self.progress(*id),
                    next: self
                        .histories
                        .get(id)
                        .and_then(|h| h.records.get(self.progress(*id) as usize))
                        .map(|r| r.to_line()),
                    vars: self
                        .histories
                        .get(id)
                        .map(|h| {
                            crate::analysis::vars::variables_at(h, self.progress(*id))
                                .into_iter()
                                .collect()
                        })
                        .unwrap_or_default(),
                    satisfied: self.sp.get(id).map(|sp| {
                        let vars = self
                            .histories
                            .get(id)
                            .map(|h| crate::analysis::vars::variables_at(h, self.progress(*id)))
                            .unwrap_or_default();
                        ddbx_wire::pred::holds(sp, &mut |v| {
                            vars.get(&v.name).map(|n| ddbx_wire::pred::Value::Int(*n))
                        })
                    }),
                    pid: a.pid,
                    status: if phase == Phase::Exited {
                        "exited"
                    } else if self.bystanders.contains(id) {
                        "bystander (no socket events: not held)"
                    } else if !a.at_gate {
                        "passive (waiting outside its recorded events, e.g. in waitpid)"
                    } else {
                        "passive"
                    }
                    .into(),
                },
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

    /// The pid of an actor's process, if it is alive.
    pub(crate) fn pid(&self, actor: ActorId) -> Option<i32> {
        self.actors.get(&actor).and_then(|a| a.pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddbx_wire::History;
    use std::io::{BufRead, BufReader};
    use std::path::Path;

    /// One root actor with a few events (enough for a `RunUntil` to mean something).
    fn recording() -> Recording {
        let text = "Header(format: 1, actor: \"p1\")\n\
            Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n\
            Probe(name: \"x\", value: 1)\n\
            Probe(name: \"x\", value: 2)\n\
            Exit(status: 0)\n";
        let history = History::parse(Path::new("p1.ron"), text).expect("test history");
        Recording::in_memory(vec![history])
    }

    fn pair() -> (Writer, BufReader<UnixStream>) {
        let (a, b) = UnixStream::pair().expect("socketpair");
        (Arc::new(Mutex::new(a)), BufReader::new(b))
    }

    /// An image that exec'd says hello again on a new connection; if the thread of its old
    /// connection attaches late, requests must still reach the new one (they were lost before:
    /// a halting replay of Figure 1 hung about once in 300 runs under load).
    #[test]
    fn a_late_attach_of_the_image_before_exec_does_not_steal_requests() {
        let request = HaltRequest {
            primary: Vec::new(),
            text: "p1.x == 2".into(),
        };
        let mut h = Halting::new(&recording(), &request, PathBuf::from("/nonexistent"));
        let p1 = ActorId(1);
        let (_, first) = h.welcomed(p1, 10);
        let (_, second) = h.welcomed(p1, 10); // after exec
        let (old_w, old_r) = pair();
        let (new_w, mut new_r) = pair();
        h.attach(p1, second, new_w);
        h.attach(p1, first, old_w); // the old connection's thread, late
        h.ensure(p1, 2);
        drop(h); // closes both writers
        let mut line = String::new();
        new_r.read_line(&mut line).expect("read");
        assert!(line.contains("RunUntil"), "the new image got {line:?}");
        assert_eq!(
            old_r.lines().count(),
            0,
            "the dead connection got a request"
        );
    }
}
