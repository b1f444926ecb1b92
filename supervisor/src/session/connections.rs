//! The GD socket: one thread accepts LD connections, one thread per connection serves it.
//!
//! Each connection starts with `Hello` (answered with `Welcome` or `Refuse`); the one-way notes
//! that follow update the shared [`State`]; a replay `WhoIs` blocks its own connection's thread
//! on a condition variable until the matching `Connected` arrives or the session ends.

use super::halting::{self, HaltedActor, HaltedState, Halting, Observation, Writer};
use super::matcher::ConnectTable;
use super::{Divergence, End, MainEvent, procs};
use crate::actors::{HelloFacts, Registry, Resolution};
use ddbx_wire::ActorId;
use ddbx_wire::manifest::{ActorInfo, ExitStatus, Manifest};
use ddbx_wire::proto::{self, GdToLd, LdToGd, Mode, ReplayPlan};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the connection threads share, behind one mutex.
struct State {
    registry: Registry,
    connects: ConnectTable,
    /// The session is ending: pending `WhoIs` get `Peer{peer: None}`.
    ending: bool,
    /// Connections being served.
    open: usize,
    /// Distinct passthrough kinds, in the order first seen, with the actors.
    passthrough: Vec<(String, Vec<ActorId>)>,
    /// The record's manifest (or the replay's own, for `--history-out`).
    manifest: Manifest,
    /// Lines for the user that came up after the main loop stopped listening.
    notes: Vec<String>,
    /// Events reported by `Exiting` notes, summed.
    events: u64,
    /// Halting replay (`stop if`) state.
    halting: Option<Halting>,
    /// Replay: actors waiting at the end of a history that ends without `Exit`.
    at_end: Vec<ActorId>,
    /// Replay: observed globals, in the order the notes came.
    observed: Vec<Observation>,
}

/// The state shared by the session's threads.
pub(crate) struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    plans: Option<HashMap<ActorId, ReplayPlan>>,
    manifest_dir: Option<PathBuf>,
    state_dir: PathBuf,
    events: mpsc::Sender<MainEvent>,
}

impl Shared {
    /// New shared state; `plans` is `Some` in replay.
    pub(crate) fn new(
        registry: Registry,
        plans: Option<HashMap<ActorId, ReplayPlan>>,
        manifest_dir: Option<PathBuf>,
        manifest: Manifest,
        state_dir: PathBuf,
        events: mpsc::Sender<MainEvent>,
        halting: Option<Halting>,
    ) -> Shared {
        Shared {
            state: Mutex::new(State {
                registry,
                connects: ConnectTable::default(),
                ending: false,
                open: 0,
                passthrough: Vec::new(),
                manifest,
                notes: Vec::new(),
                events: 0,
                halting,
                at_end: Vec::new(),
                observed: Vec::new(),
            }),
            changed: Condvar::new(),
            plans,
            manifest_dir,
            state_dir,
            events,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A handler that panicked cannot leave the tables half-updated in a way that matters
        // more than losing the session: keep going with what is there.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn send(&self, event: MainEvent) {
        if let Err(mpsc::SendError(MainEvent::Note(line))) = self.events.send(event) {
            self.lock().notes.push(line);
        }
    }

    /// ddbx reaped process `pid`: its status is authoritative.
    pub(crate) fn reaped(&self, pid: i32, status: ExitStatus) {
        let mut state = self.lock();
        state.registry.exited(pid, Some(status));
        self.changed.notify_all();
    }

    /// The session is ending: release every waiting `WhoIs` and wake the acceptor.
    pub(crate) fn finish(&self, socket: &Path, linger: Duration) {
        {
            let mut state = self.lock();
            state.ending = true;
            self.changed.notify_all();
        }
        // Our own connection tells the acceptor to stop, after the ones queued before it.
        let _ = UnixStream::connect(socket);
        // Let the connection threads read what the dead processes left in their sockets.
        let deadline = Instant::now() + linger;
        let mut state = self.lock();
        while state.open > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Lines that came up late.
    pub(crate) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().notes)
    }

    /// The actors, the passthrough lines (`what (p3, p5)`), and the events reported at exit.
    pub(crate) fn results(&self) -> (Vec<ActorInfo>, Vec<String>, u64) {
        let state = self.lock();
        let passthrough = state
            .passthrough
            .iter()
            .map(|(what, actors)| {
                let ids: Vec<String> = actors.iter().map(ToString::to_string).collect();
                format!("{what} ({})", ids.join(", "))
            })
            .collect();
        (state.registry.actors().to_vec(), passthrough, state.events)
    }

    /// The manifest as it stands.
    pub(crate) fn manifest_snapshot(&self) -> Manifest {
        self.lock().manifest.clone()
    }

    /// Halting: asks every passive actor where it stands and waits (up to `limit`) for the
    /// answers; then the halted global state and whether the predicate holds there.
    pub(crate) fn collect_halted_state(&self, limit: Duration) -> Option<(HaltedState, bool)> {
        let mut state = self.lock();
        let asked = state.halting.as_mut()?.request_reports();
        let deadline = Instant::now() + limit;
        while state.halting.as_ref().map_or(0, |h| h.states.len()) < asked {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let halting = state.halting.as_ref()?;
        let mut halted = halting.halted_state();
        halted.observed = state.observed.clone();
        Some((halted, halting.satisfied()))
    }

    /// Replay: the observed globals' values so far.
    pub(crate) fn observed(&self) -> Vec<Observation> {
        self.lock().observed.clone()
    }

    /// Halting, when every process is gone: the halted state, if the program halted with the
    /// predicate holding (its last actors may have exited right there) and was not released.
    pub(crate) fn final_halt(&self) -> Option<HaltedState> {
        let mut state = self.lock();
        let h = state.halting.as_mut()?;
        if h.released() {
            return None;
        }
        let halted = h.halted || h.check();
        let observed = state.observed.clone();
        let h = state.halting.as_ref()?;
        (halted && h.satisfied()).then(|| HaltedState {
            observed,
            ..h.halted_state()
        })
    }

    /// Halting, when nothing happened for a while: repeats the requests not yet met; true if
    /// the program is now found halted.
    pub(crate) fn halting_tick(&self) -> bool {
        self.lock().halting.as_mut().is_some_and(|h| h.resend())
    }

    /// Halting: the predicate never held; let everything run to the end.
    pub(crate) fn release(&self) {
        if let Some(h) = self.lock().halting.as_mut() {
            h.release();
        }
    }

    /// Halting: continues from a halt (see [`halting::Resume`]); the main loop hears
    /// `Halted` again at the next halt.
    pub(crate) fn resume(&self, resume: &halting::Resume) {
        let mut state = self.lock();
        if let Some(h) = state.halting.as_mut() {
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

/// Starts the thread that accepts LD connections until [`Shared::finish`] connects.
pub(crate) fn start_acceptor(
    listener: UnixListener,
    shared: Arc<Shared>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ddbx-gd-accept".into())
        .spawn(move || {
            let me = std::process::id() as i32;
            for stream in listener.incoming() {
                let stream = match stream {
                    Ok(stream) => stream,
                    Err(_) => {
                        // Out of fds or similar: the LD will see its connect fail.
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                };
                if procs::peer_pid(&stream) == Some(me) {
                    return;
                }
                shared.lock().open += 1;
                let for_thread = Arc::clone(&shared);
                let spawned =
                    std::thread::Builder::new()
                        .name("ddbx-gd-ld".into())
                        .spawn(move || {
                            serve(&for_thread, stream);
                            let mut state = for_thread.lock();
                            state.open -= 1;
                            for_thread.changed.notify_all();
                        });
                if spawned.is_err() {
                    let mut state = shared.lock();
                    state.open -= 1;
                    state
                        .notes
                        .push("ddbx: internal: cannot start a thread for an LD connection".into());
                }
            }
        })
}

/// Serves one LD connection until it closes.
fn serve(shared: &Shared, stream: UnixStream) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let writer = stream;
    let Some(first) = read_line(&mut reader) else {
        return;
    };
    let hello = match proto::decode::<LdToGd>(&first) {
        Ok(LdToGd::Hello {
            protocol,
            pid,
            ppid,
            claim,
            argv,
        }) => HelloFacts {
            protocol,
            pid,
            ppid,
            claim,
            argv,
            start_time: procs::start_time(pid),
        },
        Ok(other) => {
            note(
                shared,
                format!(
                    "ddbx: internal: an LD connection began with `{other:?}` instead of `Hello`"
                ),
            );
            return;
        }
        Err(e) => {
            note(
                shared,
                format!(
                    "ddbx: internal: expected a `Hello` from an LD, found `{}` ({e})",
                    clip(&first)
                ),
            );
            return;
        }
    };
    let writer: Writer = Arc::new(Mutex::new(writer));
    let (actor, incarnation, reply) = welcome(shared, &hello);
    // A refused process is gone from the session's point of view once told so.
    if writer
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .write_all(proto::encode(&reply).as_bytes())
        .is_err()
    {
        return;
    }
    let Some(actor) = actor else {
        return;
    };
    // Only now may others' requests reach this LD: after its Welcome.
    if let Some(h) = shared.lock().halting.as_mut() {
        h.attach(actor, incarnation, Arc::clone(&writer));
    }
    while let Some(line) = read_line(&mut reader) {
        let message = match proto::decode::<LdToGd>(&line) {
            Ok(message) => message,
            Err(e) => {
                note(
                    shared,
                    format!(
                        "ddbx: internal: cannot read a message from {actor}: `{}` ({e})",
                        clip(&line)
                    ),
                );
                continue;
            }
        };
        if let Some(answer) = handle(shared, actor, hello.pid, incarnation, message) {
            halting::send(&writer, &answer);
        }
    }
}

/// Resolves a `Hello`: the actor (`None`: refused), its halting incarnation and the reply to
/// send.
fn welcome(shared: &Shared, hello: &HelloFacts) -> (Option<ActorId>, u64, GdToLd) {
    let mut state = shared.lock();
    let resolution = state.registry.hello(hello);
    shared.changed.notify_all();
    match resolution {
        Resolution::Welcome {
            actor,
            origin,
            exec,
            new_actor,
        } => {
            let (halting, incarnation) = match state.halting.as_mut() {
                Some(h) => {
                    let (plan, incarnation) = h.welcomed(actor, hello.pid);
                    (Some(plan), incarnation)
                }
                None => (None, 0),
            };
            if new_actor
                && let Some(dir) = &shared.manifest_dir
                && let Some(info) = state.registry.actors().iter().find(|a| a.id == actor)
            {
                if let Err(e) = Manifest::append_actor(dir, info) {
                    let line = format!(
                        "ddbx: cannot update {}: {e}",
                        dir.join(Manifest::FILE).display()
                    );
                    drop(state);
                    note(shared, line);
                }
            }
            let reply = GdToLd::Welcome {
                actor,
                origin,
                exec,
                mode: if shared.plans.is_some() {
                    Mode::Replay
                } else {
                    Mode::Record
                },
                history_out: shared.manifest_dir.as_ref().map(|d| {
                    Manifest::history_path(d, actor)
                        .to_string_lossy()
                        .into_owned()
                }),
                state_file: shared
                    .state_dir
                    .join(actor.to_string())
                    .to_string_lossy()
                    .into_owned(),
                replay: shared
                    .plans
                    .as_ref()
                    .map(|plans| plans.get(&actor).cloned().unwrap_or_default()),
                halting,
            };
            (Some(actor), incarnation, reply)
        }
        Resolution::Refuse { why, .. } => {
            drop(state);
            // The LD is told first; the session then stops.
            let end = if shared.plans.is_some() {
                End::Diverged(Divergence {
                    actor: None,
                    event: None,
                    expected: "only the processes of the record".into(),
                    found: why.clone(),
                    message: format!("ddbx: replay diverged: {why} (pid {})", hello.pid),
                })
            } else {
                End::Unsupported {
                    actor: None,
                    what: format!("pid {} refused: {why}", hello.pid),
                }
            };
            shared.send(MainEvent::Stop(end));
            (None, 0, GdToLd::Refuse { why })
        }
    }
}

/// Handles one message after the handshake; returns the answer, if it is a request.
fn handle(
    shared: &Shared,
    me: ActorId,
    pid: i32,
    incarnation: u64,
    message: LdToGd,
) -> Option<GdToLd> {
    match message {
        LdToGd::Hello { .. } => {
            note(
                shared,
                format!("ddbx: internal: {me} said `Hello` twice on one connection"),
            );
            None
        }
        LdToGd::Connected {
            actor,
            event,
            local,
            remote,
        } => {
            let mut state = shared.lock();
            state.connects.connected(actor, event, local, remote);
            shared.changed.notify_all();
            None
        }
        LdToGd::WhoIs {
            local,
            remote,
            peer_pid,
        } => {
            let mut state = shared.lock();
            loop {
                let peer_actor = peer_pid.and_then(|p| state.registry.live_actor(p));
                if let Some(peer) = state.connects.who_is(&local, &remote, peer_pid, peer_actor) {
                    return Some(GdToLd::Peer { peer: Some(peer) });
                }
                if state.ending {
                    return Some(GdToLd::Peer { peer: None });
                }
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(|p| p.into_inner());
            }
        }
        LdToGd::Signal { actor, pid, sig } => {
            shared.lock().registry.signalled(pid, actor, sig);
            None
        }
        LdToGd::Passthrough { actor, what } => {
            let mut state = shared.lock();
            match state.passthrough.iter_mut().find(|(w, _)| *w == what) {
                Some((_, actors)) => {
                    if !actors.contains(&actor) {
                        actors.push(actor);
                    }
                }
                None => state.passthrough.push((what, vec![actor])),
            }
            None
        }
        LdToGd::Diverged {
            actor,
            event,
            expected,
            found,
        } => {
            let message = format!(
                "ddbx: replay diverged: {actor} at event {event}: expected `{expected}`, found `{found}`"
            );
            shared.send(MainEvent::Stop(End::Diverged(Divergence {
                actor: Some(actor),
                event: Some(event),
                expected,
                found,
                message,
            })));
            None
        }
        LdToGd::Unsupported { actor, what } => {
            shared.send(MainEvent::Stop(End::Unsupported {
                actor: Some(actor),
                what,
            }));
            None
        }
        LdToGd::Observed {
            actor,
            events,
            name,
            value,
        } => {
            shared.lock().observed.push(Observation {
                actor,
                after: events,
                name,
                value,
            });
            None
        }
        LdToGd::Reaped {
            actor: _,
            events,
            pid: child,
        } => {
            let mut state = shared.lock();
            if shared.plans.is_none() {
                state.registry.reaped(pid, events, child);
            }
            None
        }
        LdToGd::Exiting {
            actor: _,
            events,
            status,
        } => {
            let mut state = shared.lock();
            // After a reap, waitpid's status stands.
            if state.registry.live_actor(pid) == Some(me) {
                state.registry.exited(pid, Some(status));
            }
            state.events += events;
            if let Some(h) = state.halting.as_mut() {
                h.exited(me, events);
                if h.check() {
                    shared.send(MainEvent::Halted);
                }
            }
            shared.changed.notify_all();
            None
        }
        LdToGd::AtEnd { actor, events: _ } => {
            let mut state = shared.lock();
            if !state.at_end.contains(&actor) {
                state.at_end.push(actor);
            }
            // Every live process waits at the end of its history: the replay is over.
            let live: Vec<i32> = state.registry.live_pids();
            let all_at_end = live.iter().all(|pid| {
                state
                    .registry
                    .live_actor(*pid)
                    .is_some_and(|a| state.at_end.contains(&a))
            });
            if all_at_end {
                shared.send(MainEvent::AllAtEnd);
            }
            None
        }
        LdToGd::Need { actor, event } => {
            if let Some(h) = shared.lock().halting.as_mut() {
                h.need(actor, event);
            }
            None
        }
        LdToGd::Passive {
            actor,
            events,
            target,
            at_gate,
            epoch,
        } => {
            let mut state = shared.lock();
            if let Some(h) = state.halting.as_mut() {
                h.passive(actor, incarnation, events, target, at_gate, epoch);
                if h.check() {
                    shared.send(MainEvent::Halted);
                }
            }
            None
        }
        LdToGd::State {
            actor,
            events,
            next,
            vars,
            satisfied,
        } => {
            let mut state = shared.lock();
            if let Some(h) = state.halting.as_mut() {
                h.state(HaltedActor {
                    actor,
                    events,
                    next,
                    vars,
                    satisfied,
                    pid: Some(pid),
                    status: "passive".into(),
                });
            }
            shared.changed.notify_all();
            None
        }
    }
}

/// A line for the user, shown by the main loop.
fn note(shared: &Shared, line: String) {
    shared.send(MainEvent::Note(line));
}

/// Reads one line without its newline; `None` at the end of the stream or on an error.
fn read_line(reader: &mut BufReader<UnixStream>) -> Option<String> {
    let mut buf = Vec::new();
    match reader.read_until(b'\n', &mut buf) {
        Ok(0) | Err(_) => None,
        Ok(_) => {
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            Some(String::from_utf8_lossy(&buf).into_owned())
        }
    }
}

fn clip(s: &str) -> String {
    s.chars().take(120).collect()
}
