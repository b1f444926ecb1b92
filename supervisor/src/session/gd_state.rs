//! The GD's state, shared by the session's threads: the actor registry, the replay's connect
//! table, the halting state machine, and what the session reports at the end. One mutex guards
//! it ([`Tables`]); one condition variable ([`GdState::changed`]) wakes whoever waits on it
//! (a `WhoIs` waiting for its `Connected`, the main loop waiting for halting reports or for
//! the last connections to close).

use super::events::MainEvent;
use super::halted::{HaltedState, Observation, Resume};
use super::halting::Halting;
use super::handover::Handovers;
use super::joins::Execs;
use super::live::Live;
use super::matcher::ConnectTable;
use super::outcome::Divergence;
use super::plans::RecordedEnd;
use super::spares::Spares;
use super::steer::{Steered, Steering};
use crate::actors::Registry;
use ddbx_wire::ActorId;
use ddbx_wire::manifest::{ActorInfo, ExitStatus, Manifest};
use ddbx_wire::proto::ReplayPlan;
use std::collections::HashMap;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

/// How long a replayed SIGKILL waits at most for its target to reach the state the record's
/// found (`GdState::await_kill_target`): longer than a grace period a script or a wrapper
/// gives, shorter than a test's patience.
const KILL_PATIENCE: Duration = Duration::from_secs(10);

/// A kind of I/O that was not recorded, and the actors that did it.
pub(super) struct Passthrough {
    /// The kind, as the LD described it.
    pub(super) what: String,
    /// The actors, in the order first seen.
    pub(super) actors: Vec<ActorId>,
}

/// What the connection threads and the main loop share, behind one mutex.
pub(super) struct Tables {
    pub(super) registry: Registry,
    pub(super) connects: ConnectTable,
    /// The session is ending: pending `WhoIs` get `Peer{peer: None}`.
    pub(super) ending: bool,
    /// Connections being served.
    pub(super) open: usize,
    /// Distinct passthrough kinds, in the order first seen.
    pub(super) passthrough: Vec<Passthrough>,
    /// The record's manifest (or the replay's own, for `--history-out`).
    pub(super) manifest: Manifest,
    /// Lines for the user that came up after the main loop stopped listening.
    pub(super) notes: Vec<String>,
    /// Halting replay (`stop if`) state.
    pub(super) halting: Option<Halting>,
    /// Replay: actors waiting at the end of a history that ends without `Exit`.
    pub(super) at_end: Vec<ActorId>,
    /// Replay: observed globals, in the order the notes came.
    pub(super) observed: Vec<Observation>,
    /// Replay: connections being passed from the process that took them to the actor whose
    /// accept returned them.
    pub(super) handovers: Handovers,
    /// The execs LDs announced, and whether each new image joined.
    pub(super) execs: Execs,
    /// A steered record: the receives its orders wait for that were made.
    pub(super) steered: Steered,
    /// A live run (`ddbx run --break-if`): its breakpoint and halts.
    pub(super) live: Option<Live>,
}

/// The state shared by the session's threads (see the module doc).
pub(crate) struct GdState {
    tables: Mutex<Tables>,
    /// Notified whenever the tables change in a way someone may wait for.
    pub(super) changed: Condvar,
    /// Replay: each recorded actor's plan (`None` in record).
    pub(super) plans: Option<HashMap<ActorId, ReplayPlan>>,
    /// Replay: where each recorded actor's history ends (`None` in record).
    ends: Option<HashMap<ActorId, RecordedEnd>>,
    /// A steered record's orders (`ddbx explore`).
    pub(super) steer: Option<Steering>,
    /// Where this run's histories and manifest go, if anywhere.
    pub(super) manifest_dir: Option<PathBuf>,
    /// Where the LDs keep their state files.
    pub(super) state_dir: PathBuf,
    /// Empty history files made ahead ([`Spares`]).
    pub(super) spares: Spares,
    /// Who may join: the session's secret (every `Hello` carries it) and ddbx's pid (every
    /// peer descends from it).
    pub(super) access: Access,
    events: mpsc::Sender<MainEvent>,
}

/// Who may talk to the GD: the descendants of `ddbx_pid` whose `Hello` carries `key`.
pub(crate) struct Access {
    /// The session's secret ([`ddbx_wire::env::GD_KEY`]).
    pub(crate) key: String,
    /// ddbx's pid.
    pub(crate) ddbx_pid: i32,
}

/// What the session learnt about its processes, for the outcome and the manifest.
pub(crate) struct RunResults {
    /// The actors of this run.
    pub(crate) actors: Vec<ActorInfo>,
    /// The kinds of I/O not recorded, each as `what (p3, p5)`.
    pub(crate) passthrough: Vec<String>,
}

/// The halted global state the main loop collected, and whether the predicate holds there.
pub(crate) struct CollectedHalt {
    /// The state.
    pub(crate) state: HaltedState,
    /// Whether the predicate holds there (else it never held in this run).
    pub(crate) holds: bool,
}

impl GdState {
    /// New shared state; `plans` is `Some` in replay.
    pub(crate) fn new(
        tables: Tables,
        plans: Option<HashMap<ActorId, ReplayPlan>>,
        ends: Option<HashMap<ActorId, RecordedEnd>>,
        manifest_dir: Option<PathBuf>,
        state_dir: PathBuf,
        access: Access,
        events: mpsc::Sender<MainEvent>,
    ) -> GdState {
        GdState {
            tables: Mutex::new(tables),
            changed: Condvar::new(),
            plans,
            ends,
            steer: None,
            spares: Spares::new(manifest_dir.as_ref().map(|d| d.join("history"))),
            manifest_dir,
            state_dir,
            access,
            events,
        }
    }

    /// The same state, steering a record by `steer` (`ddbx explore`).
    pub(crate) fn steered_by(self, steer: Option<Steering>) -> GdState {
        GdState { steer, ..self }
    }

    /// The tables, locked.
    pub(super) fn lock(&self) -> MutexGuard<'_, Tables> {
        // A handler that panicked cannot leave the tables half-updated in a way that matters
        // more than losing the session: keep going with what is there.
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits on [`GdState::changed`] with the tables locked.
    pub(super) fn wait<'a>(&self, tables: MutexGuard<'a, Tables>) -> MutexGuard<'a, Tables> {
        self.changed.wait(tables).unwrap_or_else(|p| p.into_inner())
    }

    /// Waits on [`GdState::changed`] until `deadline` at the latest: `Ok` after a wait (the
    /// tables may have changed), `Err` when the deadline has passed.
    pub(super) fn wait_until<'a>(
        &self,
        tables: MutexGuard<'a, Tables>,
        deadline: Instant,
    ) -> Result<MutexGuard<'a, Tables>, MutexGuard<'a, Tables>> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(tables);
        }
        let (tables, _) = self
            .changed
            .wait_timeout(tables, left)
            .unwrap_or_else(|p| p.into_inner());
        Ok(tables)
    }

    /// Tells the main loop; a line that comes after it stopped listening is kept for the end.
    pub(super) fn send(&self, event: MainEvent) {
        if let Err(mpsc::SendError(MainEvent::Note(line))) = self.events.send(event) {
            self.lock().notes.push(line);
        }
    }

    /// ddbx reaped process `pid`: its status is authoritative. Returns the actor it was, if
    /// it was one.
    pub(crate) fn reaped(&self, pid: i32, status: ExitStatus) -> Option<ActorId> {
        let mut tables = self.lock();
        let actor = tables.registry.actor_of_pid(pid);
        tables.registry.exited(pid, Some(status));
        self.changed.notify_all();
        actor
    }

    /// Replay: `actor`, reaped with `status`, was killed by a signal its record does not have:
    /// before the end of its history, by a signal no recorded actor sent it (one from outside
    /// the session, or one the replay brought about). What stops the replay then, saying so.
    pub(crate) fn unrecorded_kill(&self, actor: ActorId, status: ExitStatus) -> Option<Divergence> {
        let ExitStatus::Signaled(sig) = status else {
            return None;
        };
        let end = self.ends.as_ref()?.get(&actor)?;
        let done = std::fs::read(self.state_dir.join(actor.to_string()))
            .ok()
            .and_then(|b| b.get(..8).and_then(|s| s.try_into().ok()))
            .map_or(0, u64::from_le_bytes);
        if end.signalled_by.contains(&sig) || done >= end.events {
            return None;
        }
        if sig == libc::SIGKILL && done + 1 == end.events && self.lock().at_end.contains(&actor) {
            // The replay's own end: the process was waiting past its last event, in a call
            // its record did not make (its record exited there), for a signal that never came.
            let found = "another call where its record exits".to_string();
            let message = format!(
                "ddbx: replay diverged: {actor} at event {}: expected its exit, found a call \
                 its record did not make after event {done}; no signal came to end it there, \
                 and the replay ended it",
                end.events
            );
            return Some(Divergence {
                actor: Some(actor),
                event: Some(end.events),
                expected: "its exit".to_string(),
                found,
                message,
            });
        }
        let name =
            nix::sys::signal::Signal::try_from(sig).map_or("a real-time signal", |s| s.as_str());
        let found = format!("killed by signal {sig} ({name}), which the record does not have");
        let expected = format!("its history to go on to event {}", end.events);
        let message = format!(
            "ddbx: replay stopped: {actor} was {found}, after event {done} (its recorded history \
             goes on to event {}): a signal from outside the session",
            end.events
        );
        Some(Divergence {
            actor: Some(actor),
            event: Some(done + 1),
            expected,
            found,
            message,
        })
    }

    /// Replay: the live processes at the end of their history that the record's were killed
    /// by a signal, with that signal.
    pub(crate) fn killed_at_end(&self) -> Vec<(i32, i32)> {
        let tables = self.lock();
        tables
            .registry
            .live_pids()
            .into_iter()
            .filter_map(|pid| {
                let actor = tables.registry.live_actor(pid)?;
                tables.at_end.contains(&actor).then_some(())?;
                Some((pid, self.recorded_signal(actor)?))
            })
            .collect()
    }

    /// Replay: waits until a SIGKILL (`sig`) the program sends to process `pid` lands where the
    /// record's did (at most [`KILL_PATIENCE`]): a recorded process that did not die of it in
    /// the record had ended before it came, so it is let end first; one that died of it is
    /// let reach the end of its history (or end). A SIGKILL cannot be held by the receiving LD as other
    /// signals are: sent early (a replay slower than its record, and `runuser`'s grace of two
    /// seconds after its SIGTERM), it ended postgres's postmaster in the middle of its shutdown.
    pub(crate) fn await_kill_target(&self, pid: i32, sig: i32) {
        let deadline = Instant::now() + KILL_PATIENCE;
        let mut tables = self.lock();
        loop {
            // An actor that said it exits is still running its exit (and would die of the
            // signal): the process's own state says when it has ended.
            let Some(actor) = tables.registry.actor_of_pid(pid) else {
                return;
            };
            let ended = super::procs::zombie_status(pid).is_some()
                || super::procs::start_time(pid).is_none();
            let landed = ended
                || (self.recorded_signal(actor) == Some(sig) && tables.at_end.contains(&actor));
            if landed || tables.ending {
                return;
            }
            // A process's end is not always told (a zombie its parent has not reaped): look
            // again now and then.
            let next = deadline.min(Instant::now() + Duration::from_millis(20));
            tables = match self.wait_until(tables, next) {
                Ok(tables) if Instant::now() < deadline => tables,
                _ => return,
            };
        }
    }

    /// Replay: the signal that ended `actor` in the record, if one did.
    pub(crate) fn recorded_signal(&self, actor: ActorId) -> Option<i32> {
        self.ends.as_ref()?.get(&actor)?.signal
    }

    /// Replay: whether every child the record has for `actor` has joined this run (`logged`:
    /// only those its history creates). An actor at its end has created them all, but one
    /// may not have said hello yet: the replay is not over until it has (and is at its end
    /// too). A killed actor's unlogged children are forked only if the program forks again
    /// after the end of its history, which a process that died there did not.
    pub(crate) fn children_joined(
        &self,
        registry: &Registry,
        actor: ActorId,
        logged: bool,
    ) -> bool {
        let Some(end) = self.ends.as_ref().and_then(|e| e.get(&actor)) else {
            return true;
        };
        let joined = registry.actors();
        end.children
            .iter()
            .filter(|child| !logged || !end.unlogged_children.contains(child))
            .all(|child| joined.iter().any(|a| a.id == *child))
    }

    /// Replay: an actor that died by a signal its record does not have and is not reaped yet
    /// (a peer of its may report the consequence, a reset or an early end of a stream, before
    /// the reaper has seen the death): the kill, which is the cause to report.
    pub(crate) fn unreaped_unrecorded_kill(&self) -> Option<Divergence> {
        self.ends.as_ref()?;
        let pids = self.lock().registry.live_pids();
        pids.into_iter().find_map(|pid| {
            let status = super::procs::zombie_status(pid)?;
            let actor = self.lock().registry.actor_of_pid(pid)?;
            let sig = status & 0x7f;
            (sig != 0).then_some(())?;
            self.unrecorded_kill(actor, ExitStatus::Signaled(sig))
        })
    }

    /// The session is ending: release every waiting `WhoIs`, wake the acceptor, and give the
    /// connection threads up to `linger` to read what the dead processes left in their sockets.
    pub(crate) fn finish(&self, socket: &Path, linger: Duration) {
        {
            let mut tables = self.lock();
            tables.ending = true;
            self.changed.notify_all();
        }
        // Our own connection tells the acceptor to stop, after the ones queued before it.
        let _ = UnixStream::connect(socket);
        let deadline = Instant::now() + linger;
        let mut tables = self.lock();
        while tables.open > 0 {
            match self.wait_until(tables, deadline) {
                Ok(later) => tables = later,
                Err(_) => break,
            }
        }
    }

    /// Lines that came up late.
    pub(crate) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().notes)
    }

    /// The actors and the passthrough lines.
    pub(crate) fn results(&self) -> RunResults {
        let tables = self.lock();
        let passthrough = tables
            .passthrough
            .iter()
            .map(|p| {
                let ids: Vec<String> = p.actors.iter().map(ToString::to_string).collect();
                format!("{} ({})", p.what, ids.join(", "))
            })
            .collect();
        RunResults {
            actors: tables.registry.actors().to_vec(),
            passthrough,
        }
    }

    /// The manifest as it stands.
    pub(crate) fn manifest_snapshot(&self) -> Manifest {
        self.lock().manifest.clone()
    }

    /// Halting: asks every passive actor where it stands and waits (up to `limit`) for the
    /// answers; then the halted global state and whether the predicate holds there.
    pub(crate) fn collect_halted_state(&self, limit: Duration) -> Option<CollectedHalt> {
        let mut tables = self.lock();
        let asked = tables.halting.as_mut()?.request_reports();
        let deadline = Instant::now() + limit;
        while tables.halting.as_ref().map_or(0, Halting::reports_received) < asked {
            match self.wait_until(tables, deadline) {
                Ok(later) => tables = later,
                Err(unchanged) => {
                    tables = unchanged;
                    break;
                }
            }
        }
        let halting = tables.halting.as_ref()?;
        let mut state = halting.halted_state();
        state.observed = tables.observed.clone();
        Some(CollectedHalt {
            state,
            holds: halting.satisfied(),
        })
    }

    /// Replay: the observed globals' values so far.
    pub(crate) fn observed(&self) -> Vec<Observation> {
        self.lock().observed.clone()
    }

    /// Halting, when every process is gone: the halted state, if the program halted with the
    /// predicate holding (its last actors may have exited right there) and was not released.
    pub(crate) fn final_halt(&self) -> Option<HaltedState> {
        let mut tables = self.lock();
        let h = tables.halting.as_mut()?;
        if h.released() {
            return None;
        }
        let halted = h.is_halted() || h.check();
        let observed = tables.observed.clone();
        let h = tables.halting.as_ref()?;
        (halted && h.satisfied()).then(|| HaltedState {
            observed,
            ..h.halted_state()
        })
    }

    /// Halting, when nothing happened for a while: repeats the requests not yet met; true if
    /// the program is now found halted.
    pub(crate) fn halting_tick(&self) -> bool {
        self.lock().halting.as_mut().is_some_and(Halting::resend)
    }

    /// Whether this is a live run (`ddbx run --break-if`).
    pub(crate) fn is_live(&self) -> bool {
        self.lock().live.is_some()
    }

    /// Live run: the halted state now, if a halt is on.
    pub(crate) fn live_state(&self) -> Option<HaltedState> {
        let tables = self.lock();
        let live = tables.live.as_ref()?;
        live.halt_on()?;
        Some(live.state(&tables.registry))
    }

    /// Live run: `cont`: the halt is over, every stopped actor goes on.
    pub(crate) fn live_resume(&self) {
        if let Some(live) = self.lock().live.as_mut() {
            live.resume();
        }
        self.changed.notify_all();
    }

    /// Halting: the predicate still looked for (halting neither given up nor ended by a halt).
    pub(crate) fn pending_predicate(&self) -> Option<String> {
        let tables = self.lock();
        let h = tables.halting.as_ref()?;
        (!h.released()).then(|| h.text().to_string())
    }

    /// Halting: the predicate never held; let everything run to the end.
    pub(crate) fn release(&self) {
        if let Some(h) = self.lock().halting.as_mut() {
            h.release();
        }
    }

    /// Halting: continues from a halt (see [`Resume`]); the main loop hears `Halted` again at
    /// the next halt.
    pub(crate) fn resume(&self, resume: &Resume) {
        let mut tables = self.lock();
        if let Some(h) = tables.halting.as_mut() {
            h.resume(resume);
            if h.check() {
                self.send(MainEvent::Halted);
            }
        }
    }

    /// Halting: an actor's pid (for `--hold`).
    pub(crate) fn halted_pid(&self, actor: ActorId) -> Option<i32> {
        self.lock().halting.as_ref().and_then(|h| h.pid(actor))
    }
}

impl Tables {
    /// The tables at the start of a session.
    pub(crate) fn new(registry: Registry, manifest: Manifest, halting: Option<Halting>) -> Tables {
        Tables {
            registry,
            connects: ConnectTable::default(),
            ending: false,
            open: 0,
            passthrough: Vec::new(),
            manifest,
            notes: Vec::new(),
            halting,
            at_end: Vec::new(),
            observed: Vec::new(),
            handovers: Handovers::default(),
            execs: Execs::default(),
            steered: Steered::default(),
            live: None,
        }
    }
}
