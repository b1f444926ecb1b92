//! One record or replay session: the runtime directory, the GD socket, the process tree.
//!
//! [`run`] starts the root process (with the preload, `DDBX_GD` and `DDBX_SPAWN` in its
//! environment), answers every LD's `Hello` (see [`crate::actors`]), collects their notes,
//! answers `WhoIs` in replay, and reaps processes.
//!
//! **When a session ends.** ddbx makes itself a child subreaper before starting the root, so
//! every orphaned descendant is re-parented to it. The session ends when the root has exited
//! *and* `waitpid(-1)` reports `ECHILD`: no descendant is left. A divergence, an unsupported
//! call, or SIGINT/SIGTERM (when [`SessionConfig::handle_signals`] is set) SIGKILLs every
//! descendant first; the session then ends the same way. The runtime directory is removed
//! whatever happens.
//!
//! The session reaps with `waitpid(-1)`: an embedding program must not have other children
//! of its own that it expects to wait for while a session runs.

mod connections;
pub mod halting;
pub mod matcher;
pub mod procs;
pub mod runtime_dir;

pub use halting::{HaltAction, HaltRequest, HaltedActor, HaltedState, Observation, Resume};
pub use runtime_dir::RuntimeDir;

use crate::actors::Registry;
use crate::analysis::channels::accepts_of;
use crate::error::{Error, Result, shown};
use crate::recording::Recording;
use connections::Shared;
use ddbx_wire::history::Record;
use ddbx_wire::manifest::{ActorInfo, ExitStatus, Manifest, SessionState};
use ddbx_wire::{ActorId, FORMAT_VERSION};
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Record or replay, with what each needs.
#[derive(Debug)]
pub enum SessionMode {
    /// Record into `out_dir`, which exists and is empty.
    Record {
        /// The recording directory.
        out_dir: PathBuf,
    },
    /// Replay a loaded recording.
    Replay {
        /// The recording.
        recording: Box<Recording>,
        /// Where the replay writes its own histories and manifest, if anywhere (exists, empty).
        history_out: Option<PathBuf>,
        /// Halt at the first consistent global state where this predicate holds.
        halt: Option<HaltRequest>,
        /// After halting, keep the processes alive until ddbx is interrupted.
        hold: bool,
        /// Globals to read from the processes' memory after every event (traces and
        /// predicates over memory are evaluated from these values: [`Observation`]).
        observe: Vec<ddbx_wire::pred::VarRef>,
    },
}

/// Everything a session needs.
pub struct SessionConfig {
    /// Record or replay.
    pub mode: SessionMode,
    /// The root's argv as the user gave it (`argv[0]` is what the program sees).
    pub argv: Vec<String>,
    /// The executable to start (`argv[0]` resolved through `PATH`), absolute.
    pub program: PathBuf,
    /// The root's working directory.
    pub cwd: PathBuf,
    /// The root's environment, without ddbx's own variables.
    pub env: Vec<(String, String)>,
    /// The preload library.
    pub preload: PathBuf,
    /// The runtime directory (created by [`RuntimeDir::create`]; removed when the session ends).
    pub runtime: RuntimeDir,
    /// Whether to catch SIGINT/SIGTERM (stop the session, exit 130/143). For the CLI.
    pub handle_signals: bool,
    /// Receives each human-readable line (`ddbx: …`) as it happens.
    pub on_message: Box<dyn FnMut(&str) + Send>,
    /// Replay with a halt request: called at each halt (the processes wait, blocked in their
    /// LDs, while it runs) to decide how to go on. `None`: end the processes, or hold them
    /// with [`SessionMode::Replay`]'s `hold`.
    pub on_halt: Option<OnHalt>,
}

/// The halt callback of [`SessionConfig::on_halt`].
pub type OnHalt = Box<dyn FnMut(&HaltedState) -> HaltAction + Send>;

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
    /// The actors of this run (ids, this run's pids, exit statuses).
    pub actors: Vec<ActorInfo>,
    /// Replay: the recorded events; record: events the actors reported at exit.
    pub events: u64,
    /// Kinds of I/O that were not recorded, with the actors that did them.
    pub passthrough: Vec<String>,
    /// Every human-readable line the session produced, in order.
    pub messages: Vec<String>,
    /// Replay: the observed globals' values (see [`SessionMode::Replay`]'s `observe`).
    pub observed: Vec<Observation>,
}

/// Events for the session's main loop.
pub(crate) enum MainEvent {
    /// A child was reaped.
    Reaped { pid: i32, status: ExitStatus },
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
    AllAtEnd,
}

/// Environment variables that are ddbx's own and are never stored in a manifest.
pub const DDBX_VARIABLES: &[&str] = &[
    ddbx_wire::env::GD_SOCKET,
    ddbx_wire::env::SPAWN,
    ddbx_wire::env::LD_LOG,
    ddbx_wire::env::TRACE,
    ddbx_wire::env::TRACE_CHECK,
    "DDBX_PRELOAD",
];

/// Runs one session to its end (see the module doc).
pub fn run(config: SessionConfig) -> Result<Outcome> {
    let SessionConfig {
        mode,
        argv,
        program,
        cwd,
        env,
        preload,
        runtime,
        handle_signals,
        mut on_message,
        mut on_halt,
    } = config;
    let ddbx_pid = std::process::id() as i32;
    let host = procs::host_name();
    let mut messages: Vec<String> = Vec::new();
    let mut say = |line: String, messages: &mut Vec<String>| {
        on_message(&line);
        messages.push(line);
    };

    // What the LDs are told, and where the record goes.
    let (registry, manifest_dir, recording) = match &mode {
        SessionMode::Record { out_dir } => (
            Registry::for_record(ddbx_pid, &host),
            Some(absolute(out_dir)?),
            None,
        ),
        SessionMode::Replay {
            recording,
            history_out,
            ..
        } => (
            Registry::for_replay(ddbx_pid, &host, recording.manifest.actors.clone()),
            history_out.as_deref().map(absolute).transpose()?,
            Some(recording.as_ref()),
        ),
    };
    let observe: Vec<ddbx_wire::pred::VarRef> = match &mode {
        SessionMode::Replay { observe, .. } => observe.clone(),
        SessionMode::Record { .. } => Vec::new(),
    };
    let (halt_request, hold) = match &mode {
        SessionMode::Replay { halt, hold, .. } => (halt.clone(), *hold),
        SessionMode::Record { .. } => (None, false),
    };
    if let Some(dir) = &manifest_dir {
        let history = dir.join("history");
        std::fs::create_dir_all(&history)
            .map_err(|e| Error::io_at("cannot create", &history, e))?;
    }
    let manifest = Manifest {
        format: FORMAT_VERSION,
        ddbx_version: env!("CARGO_PKG_VERSION").to_string(),
        command: argv.clone(),
        cwd: cwd.clone(),
        env: env.clone(),
        host: host.clone(),
        state: SessionState::Recording,
        actors: Vec::new(),
        passthrough: Vec::new(),
        problem: None,
    };
    if let Some(dir) = &manifest_dir {
        manifest
            .store(dir)
            .map_err(|e| Error::io_at("cannot write the manifest in", dir, e))?;
    }
    let plans = recording.map(|r| {
        r.manifest
            .actors
            .iter()
            .map(|a| {
                let history = r.history(a.id);
                let ended_by_exit = matches!(
                    history.and_then(|h| h.records.last()),
                    Some(Record::Exit { .. })
                );
                let torn = history.is_some_and(|h| h.truncated);
                // Killed by a signal that another recorded process sent: that process's replay
                // sends it again at the same point of its own history, so this one waits for it
                // (ending it where its history ends could be too early: socat's handler kills
                // its EXEC child only after it has read the child's last bytes).
                let by_an_actor = |sig| a.signalled_by.iter().any(|(_, s)| *s == sig);
                let killed_by = match a.exit {
                    Some(ExitStatus::Signaled(sig)) if !ended_by_exit && !by_an_actor(sig) => {
                        Some(sig)
                    }
                    Some(ExitStatus::Signaled(_)) if !ended_by_exit => None,
                    // A record torn in the middle: the process died while writing it.
                    _ if torn && !ended_by_exit => Some(libc::SIGKILL),
                    _ => None,
                };
                (
                    a.id,
                    ddbx_wire::proto::ReplayPlan {
                        // Absolute: the program may chdir before its LD opens it (busybox
                        // httpd -h DIR does).
                        history: std::path::absolute(Manifest::history_path(&r.dir, a.id))
                            .unwrap_or_else(|_| Manifest::history_path(&r.dir, a.id))
                            .to_string_lossy()
                            .into_owned(),
                        accepts: accepts_of(&r.channels, a.id),
                        killed_by,
                        external_connects: external_connects(r, a.id),
                        observe: observe
                            .iter()
                            .filter(|v| v.actor_id() == Some(a.id))
                            .map(|v| (v.name.clone(), v.ty))
                            .collect(),
                    },
                )
            })
            .collect()
    });

    let socket = runtime.socket();
    let listener =
        UnixListener::bind(&socket).map_err(|e| Error::io_at("cannot listen on", &socket, e))?;
    let (events_tx, events_rx) = mpsc::channel::<MainEvent>();
    let shared = Arc::new(Shared::new(
        registry,
        plans,
        manifest_dir.clone(),
        manifest,
        runtime.state_dir(),
        events_tx.clone(),
        match (&halt_request, recording) {
            (Some(request), Some(r)) => {
                Some(halting::Halting::new(r, request, runtime.state_dir()))
            }
            _ => None,
        },
    ));

    let old_mask = handle_signals
        .then(procs::block_stop_signals)
        .transpose()
        .map_err(|e| Error::io("cannot block SIGINT and SIGTERM", e))?;
    procs::become_subreaper().map_err(|e| Error::io("cannot become a child subreaper", e))?;

    // The root.
    let mut command = std::process::Command::new(&program);
    command
        .arg0(argv.first().map(String::as_str).unwrap_or_default())
        .args(argv.iter().skip(1))
        .current_dir(&cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)));
    let preload_text = preload.to_string_lossy().into_owned();
    let ld_preload = match env.iter().find(|(k, _)| k == "LD_PRELOAD") {
        Some((_, existing)) if !existing.is_empty() => format!("{preload_text}:{existing}"),
        _ => preload_text,
    };
    command
        .env("LD_PRELOAD", ld_preload)
        .env(ddbx_wire::env::GD_SOCKET, &socket)
        .env(ddbx_wire::env::SPAWN, format!("{ddbx_pid}:p0:1"));
    if let Some(log) = std::env::var_os(ddbx_wire::env::LD_LOG) {
        command.env(ddbx_wire::env::LD_LOG, log);
    }
    // Optimal tracing is chosen by `ddbx record --trace optimal` (a record only).
    if matches!(mode, SessionMode::Record { .. }) {
        for var in [ddbx_wire::env::TRACE, ddbx_wire::env::TRACE_CHECK] {
            if let Some(value) = std::env::var_os(var) {
                command.env(var, value);
            }
        }
    }
    // The program starts with the signal mask ddbx itself was started with, not with the
    // SIGINT/SIGTERM that ddbx blocks for its own signal thread.
    let program_mask = old_mask;
    // SAFETY: the closure runs between fork and exec and makes one async-signal-safe call
    // (pthread_sigmask, through nix, which neither allocates nor locks).
    unsafe {
        command.pre_exec(move || {
            if let Some(mask) = &program_mask {
                let _ = mask.thread_set_mask();
            }
            Ok(())
        });
    }
    let root = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            if let Some(mask) = &old_mask {
                procs::restore_mask(mask);
            }
            return Err(Error::BadCommand(format!(
                "cannot start `{}` ({}): {e}",
                argv.join(" "),
                shown(&program)
            )));
        }
    };
    let root_pid = root.id() as i32;
    // The reaper owns waiting; the Child handle is not waited on.
    drop(root);

    let reaper = {
        let tx = events_tx.clone();
        std::thread::Builder::new()
            .name("ddbx-reaper".into())
            .spawn(move || {
                loop {
                    match procs::wait_any() {
                        Ok(procs::Reaped::Child { pid, status }) => {
                            let _ = tx.send(MainEvent::Reaped { pid, status });
                        }
                        Ok(procs::Reaped::NoChildren) => {
                            let _ = tx.send(MainEvent::AllGone);
                            return;
                        }
                        Err(e) => {
                            let _ = tx.send(MainEvent::ReapFailed(e));
                            return;
                        }
                    }
                }
            })
            .map_err(|e| Error::io("cannot start a thread", e))?
    };
    let acceptor = connections::start_acceptor(listener, Arc::clone(&shared))
        .map_err(|e| Error::io("cannot start a thread", e))?;
    let stop_signals = Arc::new(Mutex::new(false));
    let signal_thread = if handle_signals {
        let tx = events_tx.clone();
        let stop = Arc::clone(&stop_signals);
        let signals = procs::StopSignalReader::open()
            .map_err(|e| Error::io("cannot read SIGINT and SIGTERM", e))?;
        Some(
            std::thread::Builder::new()
                .name("ddbx-signals".into())
                .spawn(move || {
                    while !*stop.lock().unwrap_or_else(|p| p.into_inner()) {
                        if let Some(sig) = signals.wait(Duration::from_millis(100)) {
                            let _ = tx.send(MainEvent::Signal(sig));
                        }
                    }
                })
                .map_err(|e| Error::io("cannot start a thread", e))?,
        )
    } else {
        None
    };
    drop(events_tx);

    // The main loop: until every descendant is gone.
    let mut stop: Option<End> = None;
    let mut halted_hold: Option<HaltedState> = None;
    let mut root_status = None;
    let mut reap_error = None;
    loop {
        let event = if stop.is_some() {
            match events_rx.recv_timeout(Duration::from_millis(50)) {
                Ok(event) => event,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // Processes forked while we were killing: kill again.
                    procs::kill_descendants();
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match events_rx.recv_timeout(Duration::from_secs(1)) {
                Ok(event) => event,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // A halting replay where nothing moved for a second: repeat what was asked.
                    if shared.halting_tick() {
                        MainEvent::Halted
                    } else {
                        continue;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        };
        match event {
            MainEvent::Reaped { pid, status } => {
                if pid == root_pid {
                    root_status = Some(status);
                }
                shared.reaped(pid, status);
            }
            MainEvent::AllGone => break,
            MainEvent::ReapFailed(e) => {
                reap_error = Some(e);
                break;
            }
            MainEvent::Signal(signal) => {
                if let Some(state) = halted_hold.take() {
                    stop = Some(End::Halted(Box::new(state)));
                } else if stop.is_none() {
                    say(
                        format!("ddbx: interrupted by signal {signal}: stopping every process"),
                        &mut messages,
                    );
                    stop = Some(End::Interrupted { signal });
                }
                procs::kill_descendants();
            }
            MainEvent::Stop(end) => {
                if stop.is_none() {
                    let line = match &end {
                        End::Diverged(d) => d.message.clone(),
                        End::Unsupported {
                            actor: Some(actor),
                            what,
                        } => format!("ddbx: {actor}: {what}"),
                        End::Unsupported { actor: None, what } => format!("ddbx: {what}"),
                        _ => String::new(),
                    };
                    say(line, &mut messages);
                    stop = Some(end);
                }
                procs::kill_descendants();
            }
            MainEvent::Note(line) => say(line, &mut messages),
            MainEvent::AllAtEnd => {
                // They were killed there in the record: end them the same way.
                procs::kill_descendants();
            }
            MainEvent::Halted => {
                if stop.is_some() {
                    continue;
                }
                let Some((state, holds)) = shared.collect_halted_state(Duration::from_secs(10))
                else {
                    continue;
                };
                if !holds {
                    say(
                        format!(
                            "ddbx: `{}` never holds in this run: replaying to the end",
                            state.predicate
                        ),
                        &mut messages,
                    );
                    shared.release();
                    continue;
                }
                let action = match on_halt.as_mut() {
                    Some(callback) => callback(&state),
                    None if hold => HaltAction::Hold,
                    None => HaltAction::Kill,
                };
                if let HaltAction::Resume(resume) = &action {
                    shared.resume(resume);
                    continue;
                }
                if action == HaltAction::Hold {
                    let pids: Vec<String> = state
                        .actors
                        .iter()
                        .filter_map(|a| {
                            shared
                                .halted_pid(a.actor)
                                .map(|pid| format!("{} pid {pid}", a.actor))
                        })
                        .collect();
                    say(
                        format!(
                            "ddbx: halted; holding the processes ({}); interrupt ddbx (Ctrl-C) to end them",
                            pids.join(", ")
                        ),
                        &mut messages,
                    );
                    halted_hold = Some(state);
                    continue;
                }
                stop = Some(End::Halted(Box::new(state)));
                procs::kill_descendants();
            }
        }
    }

    // Every process is gone: let the handlers read what is left, then stop listening.
    shared.finish(&socket, Duration::from_secs(2));
    let _ = acceptor.join();
    let _ = reaper.join();
    *stop_signals.lock().unwrap_or_else(|p| p.into_inner()) = true;
    if let Some(thread) = signal_thread {
        let _ = thread.join();
    }
    if let Some(mask) = &old_mask {
        procs::restore_mask(mask);
    }
    if let Some(e) = reap_error {
        return Err(Error::io("waiting for the program's processes failed", e));
    }
    for note in shared.take_notes() {
        say(note, &mut messages);
    }

    let (actors, passthrough, _) = shared.results();
    // Events as the histories hold them (a killed process never reports its count).
    let recorded_events: u64 = match &manifest_dir {
        Some(dir) if recording.is_none() => actors
            .iter()
            .filter_map(|a| ddbx_wire::History::load(&Manifest::history_path(dir, a.id)).ok())
            .map(|h| h.records.len() as u64)
            .sum(),
        _ => 0,
    };
    let recorded_root_status = recording
        .and_then(|r| r.manifest.actor(ActorId::ROOT))
        .and_then(|a| a.exit);
    let end = match (stop, recording) {
        (Some(end), _) => end,
        (None, None) => End::Complete,
        (None, Some(r)) => match shared.final_halt() {
            // Every process exited right at the halt: that is where the predicate held.
            Some(state) => End::Halted(Box::new(state)),
            None => replay_end_check(r, &actors, root_status),
        },
    };
    if let End::Diverged(d) = &end
        && !messages.contains(&d.message)
    {
        say(d.message.clone(), &mut messages);
    }

    // The manifest of this run (the recording, or the replay's own under --history-out).
    if let Some(dir) = &manifest_dir {
        let mut manifest = shared.manifest_snapshot();
        manifest.actors = actors.clone();
        manifest.passthrough = passthrough.clone();
        match &end {
            End::Complete | End::ReachedEnd => manifest.state = SessionState::Complete,
            other => {
                manifest.state = SessionState::Interrupted;
                manifest.problem = Some(describe_end(other));
            }
        }
        manifest
            .store(dir)
            .map_err(|e| Error::io_at("cannot write the manifest in", dir, e))?;
        if recording.is_none()
            && let Err(e) = strip_managed_data(dir)
        {
            say(
                format!("ddbx: the bytes between recorded processes were kept: {e}"),
                &mut messages,
            );
        }
    }
    if recording.is_none() {
        for line in &passthrough {
            say(format!("ddbx: not recorded: {line}"), &mut messages);
        }
        if let (End::Complete, Some(dir)) = (&end, &manifest_dir) {
            say(
                format!(
                    "ddbx: recorded {} actors, {recorded_events} events in {}",
                    actors.len(),
                    dir.display()
                ),
                &mut messages,
            );
        }
    }
    let events = match recording {
        Some(r) => r.event_count(),
        None => recorded_events,
    };
    drop(runtime);
    Ok(Outcome {
        end,
        root_status,
        recorded_root_status,
        actors,
        events,
        passthrough,
        messages,
        observed: shared.observed(),
    })
}

/// Replay reached the end without a reported divergence: did it really follow the record?
fn replay_end_check(
    recording: &Recording,
    actors: &[ActorInfo],
    root_status: Option<ExitStatus>,
) -> End {
    for recorded in &recording.manifest.actors {
        if !actors.iter().any(|a| a.id == recorded.id) {
            let expected = format!(
                "{} created as {}",
                recorded.id,
                crate::actors::describe(recorded.origin)
            );
            return End::Diverged(Divergence {
                actor: Some(recorded.id),
                event: None,
                expected: expected.clone(),
                found: "no such process by the end".into(),
                message: format!(
                    "ddbx: replay diverged: {} was never created (the record had it as {}, `{}`)",
                    recorded.id,
                    crate::actors::describe(recorded.origin),
                    recorded.argv.join(" ")
                ),
            });
        }
    }
    let recorded = recording.manifest.actor(ActorId::ROOT).and_then(|a| a.exit);
    if let (Some(recorded), Some(now)) = (recorded, root_status)
        && recorded != now
    {
        return End::Diverged(Divergence {
            actor: Some(ActorId::ROOT),
            event: None,
            expected: recorded.to_string(),
            found: now.to_string(),
            message: format!(
                "ddbx: replay diverged: p1 ended with {now}, the record with {recorded}"
            ),
        });
    }
    End::ReachedEnd
}

/// An actor's connects that succeeded (or were under way) but no recorded actor accepted:
/// their peer was outside the session.
fn external_connects(recording: &Recording, actor: ActorId) -> Vec<u64> {
    let Some(history) = recording.history(actor) else {
        return Vec::new();
    };
    history
        .records
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            matches!(r, Record::Connect { err, .. }
                if err.is_none() || *err == Some(ddbx_wire::Errno::EINPROGRESS))
        })
        .map(|(i, _)| i as u64 + 1)
        .filter(|event| {
            !recording
                .channels
                .iter()
                .any(|c| c.connector.actor == actor && c.connector.event == *event)
        })
        .collect()
}

/// At the end of a record: drops the bytes of receives and sends on channels whose both ends
/// were recorded (replay regenerates them); the bytes exchanged with outside peers stay.
fn strip_managed_data(dir: &Path) -> Result<()> {
    let recording = Recording::open(dir)?;
    let deps = crate::analysis::deps::Deps::from_recording(&recording);
    for history in &recording.histories {
        let actor = history.actor;
        let path = Manifest::history_path(dir, actor);
        if ddbx_wire::history::trace_of(&path) == ddbx_wire::history::Trace::Optimal {
            continue; // its logged bytes are only ever input from outside peers
        }
        let mut changed = false;
        let records: Vec<Record> = history
            .records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let managed = deps.data_range(actor, i as u64 + 1).is_some();
                match r {
                    Record::Recv {
                        fd,
                        n,
                        data: Some(_),
                    } if managed => {
                        changed = true;
                        Record::Recv {
                            fd: *fd,
                            n: *n,
                            data: None,
                        }
                    }
                    Record::Send {
                        fd,
                        n,
                        data: Some(_),
                    } if managed => {
                        changed = true;
                        Record::Send {
                            fd: *fd,
                            n: *n,
                            data: None,
                        }
                    }
                    other => other.clone(),
                }
            })
            .collect();
        if !changed {
            continue;
        }
        let mut text = ddbx_wire::history::header_line(actor);
        for r in &records {
            text.push_str(&r.to_line());
            text.push('\n');
        }
        let tmp = path.with_extension("ron.tmp");
        std::fs::write(&tmp, text).map_err(|e| Error::io_at("cannot write", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io_at("cannot replace", &path, e))?;
    }
    Ok(())
}

/// One line for the manifest's `problem`.
fn describe_end(end: &End) -> String {
    match end {
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

/// `path` made absolute (the debuggees may change directory).
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| Error::io_at("cannot resolve", path, e))
}
