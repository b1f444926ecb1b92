//! One record or replay session: the runtime directory, the GD socket, the process tree.
//!
//! [`run`] starts the root process (with the preload, `DDBX_GD` and `DDBX_SPAWN` in its
//! environment), answers every LD's `Hello` (see [`crate::actors`]), collects their notes,
//! answers `WhoIs` in replay, and reaps processes.
//!
//! **Its steps, one module each.** Before the root starts: the first manifest (`manifest`),
//! the replay plans (`plans`), the halting state machine ([`halting`]) and the state the
//! threads share (`gd_state`). Then the root (`launch`), the reaper, acceptor and signal
//! threads (`threads`, `connections`), the main loop (`main_loop`), and, once every process
//! is gone, the end, the last manifest and the [`Outcome`] (`finish`, `strip`).
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
pub mod control_count;
mod events;
mod finish;
mod gd_state;
mod halted;
pub mod halting;
mod handover;
mod joins;
mod launch;
mod ld_writer;
mod lifeline;
mod live;
mod main_loop;
mod manifest;
pub mod matcher;
mod outcome;
mod owed;
mod plans;
pub mod procs;
pub mod runtime_dir;
mod spares;
mod steer;
mod strip;
mod threads;
mod transcript;

pub use events::SessionEvent;
pub use halted::{HaltAction, HaltRequest, HaltedActor, HaltedState, Observation, Resume};
pub use live::LiveRequest;
pub use outcome::{Divergence, End, Outcome};
pub use runtime_dir::RuntimeDir;
pub use steer::{Order, Steering};

use crate::actors::Registry;
use crate::error::{Error, Result};
use crate::recording::Recording;
use ddbx_wire::pred::VarRef;
use events::MainEvent;
use gd_state::{GdState, Tables};
use halting::Halting;
use main_loop::{LoopEnd, MainLoop};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::Duration;
use transcript::Transcript;

/// Record or replay, with what each needs.
#[derive(Debug)]
pub enum SessionMode {
    /// Record into `out_dir`, which exists and is empty.
    Record {
        /// The recording directory.
        out_dir: PathBuf,
        /// A steered record (`ddbx explore`): the message orders to keep (`None`: a plain
        /// record).
        steer: Option<Box<Steering>>,
        /// A live run (`ddbx run --break-if`): halt without replay where this predicate
        /// first holds (`None`: a plain record).
        live: Option<LiveRequest>,
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
    /// Names of variables of `env` that the manifest leaves out (the program still gets them).
    pub env_left_out: Vec<String>,
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
    /// Receives each [`SessionEvent`] as it happens (`None`: nobody listens).
    pub on_event: Option<OnEvent>,
}

/// The event callback of [`SessionConfig::on_event`].
pub type OnEvent = Box<dyn FnMut(&SessionEvent) + Send>;

/// The halt callback of [`SessionConfig::on_halt`].
pub type OnHalt = Box<dyn FnMut(&HaltedState) -> HaltAction + Send>;

impl SessionMode {
    /// The recording a replay follows.
    fn recording(&self) -> Option<&Recording> {
        match self {
            SessionMode::Record { .. } => None,
            SessionMode::Replay { recording, .. } => Some(recording),
        }
    }

    /// Where this run's histories and manifest go, if anywhere.
    fn manifest_dir(&self) -> Option<&Path> {
        match self {
            SessionMode::Record { out_dir, .. } => Some(out_dir),
            SessionMode::Replay { history_out, .. } => history_out.as_deref(),
        }
    }

    /// The globals a replay reads from the processes' memory.
    fn observe(&self) -> &[VarRef] {
        match self {
            SessionMode::Record { .. } => &[],
            SessionMode::Replay { observe, .. } => observe,
        }
    }

    /// A replay's halt request.
    fn halt_request(&self) -> Option<&HaltRequest> {
        match self {
            SessionMode::Record { .. } => None,
            SessionMode::Replay { halt, .. } => halt.as_ref(),
        }
    }

    /// A steered record's orders.
    fn steering(&self) -> Option<&Steering> {
        match self {
            SessionMode::Record { steer, .. } => steer.as_deref(),
            SessionMode::Replay { .. } => None,
        }
    }

    /// Whether to hold the processes at a halt when there is no halt callback.
    fn hold(&self) -> bool {
        matches!(self, SessionMode::Replay { hold: true, .. })
    }
}

/// Environment variables that are ddbx's own and are never stored in a manifest.
pub const DDBX_VARIABLES: &[&str] = &[
    ddbx_wire::env::GD_SOCKET,
    ddbx_wire::env::SPAWN,
    ddbx_wire::env::LD_LOG,
    ddbx_wire::env::TRACE,
    ddbx_wire::env::TRACE_CHECK,
    ddbx_wire::env::GD_KEY,
    "DDBX_PRELOAD",
];

/// How long the connection threads may go on reading once every process is gone.
const LINGER: Duration = Duration::from_secs(2);

/// Runs one session to its end (see the module doc).
pub fn run(config: SessionConfig) -> Result<Outcome> {
    let SessionConfig {
        mode,
        argv,
        program,
        cwd,
        env,
        env_left_out,
        preload,
        runtime,
        handle_signals,
        on_message,
        on_halt,
        on_event,
    } = config;
    let ddbx_pid = std::process::id() as i32;
    let host = procs::host_name();
    let mut transcript = Transcript::new(on_message, on_event);
    let manifest_dir = mode.manifest_dir().map(absolute).transpose()?;
    let facts = manifest::RunFacts {
        argv: &argv,
        cwd: &cwd,
        env: &env,
        env_left_out: &env_left_out,
        host: &host,
    };
    let (events_tx, events_rx) = mpsc::channel::<MainEvent>();
    let key = procs::session_key().map_err(|e| Error::io("cannot read /dev/urandom", e))?;
    let access = gd_state::Access {
        key: key.clone(),
        ddbx_pid,
    };
    let (gd, listener) = start_gd(&mode, &runtime, &facts, access, &manifest_dir, &events_tx)?;
    let root = launch::Root {
        program: &program,
        argv: &argv,
        cwd: &cwd,
        env: &env,
        preload: &preload,
        socket: &runtime.socket(),
        key: &key,
        ddbx_pid,
        record: mode.recording().is_none(),
        handle_signals,
    };
    let lifeline = lifeline::Lifeline::start(&runtime, &death_notice(&mode, ddbx_pid))?;
    let launched = launch::start(&root)?;
    let threads = threads::Threads::start(&events_tx, listener, &gd, handle_signals)?;
    drop(events_tx);

    let hold = mode.hold();
    let main_loop = MainLoop::new(
        &gd,
        events_rx,
        launched.root_pid,
        on_halt,
        hold,
        &mut transcript,
    );
    let LoopEnd {
        stop,
        root_status,
        held_until,
        reap_error,
        exits_announced,
        events: late,
    } = main_loop.run();

    // Every process is gone: let the handlers read what is left, then stop listening.
    gd.finish(&runtime.socket(), LINGER);
    threads.join();
    launched.restore_mask();
    if let Some(e) = reap_error {
        return Err(Error::io("waiting for the program's processes failed", e));
    }
    let ended = finish::Ended {
        recording: mode.recording(),
        manifest_dir: manifest_dir.as_deref(),
        stop,
        root_status,
        held_until,
    };
    // What the threads sent after the main loop stopped reading (every sender is gone now): a
    // process reaped by its parent whose `Exiting` was read after the last process was gone.
    for event in late.try_iter() {
        match event {
            MainEvent::Event(SessionEvent::ActorExited { pid, .. })
                if exits_announced.contains(&pid) => {}
            MainEvent::Event(event) => transcript.event(&event),
            MainEvent::Note(line) => transcript.say(line),
            _ => {}
        }
    }
    say_out_of_turn(&runtime, &mut transcript);
    transcript.event(&SessionEvent::Finishing);
    let outcome = finish::outcome(&gd, ended, transcript)?;
    drop(lifeline);
    drop(runtime);
    Ok(outcome)
}

/// Says how many writes into shared files the replay made out of turn, if any.
fn say_out_of_turn(runtime: &RuntimeDir, transcript: &mut Transcript) {
    let n = runtime.out_of_turn_writes();
    if n > 0 {
        transcript.say(format!(
            "ddbx: {n} write(s) into files that several processes write could not wait for their recorded turn (1 s without progress): those lines may come out in another order than the record's (DDBX_LD_LOG=FILE names them)"
        ));
    }
}

/// The GD before the root starts: the registry, the first manifest, the replay plans, the
/// halting state machine, and the socket the LDs will connect to.
fn start_gd(
    mode: &SessionMode,
    runtime: &RuntimeDir,
    facts: &manifest::RunFacts<'_>,
    access: gd_state::Access,
    manifest_dir: &Option<PathBuf>,
    events: &mpsc::Sender<MainEvent>,
) -> Result<(Arc<GdState>, UnixListener)> {
    let recording = mode.recording();
    let ddbx_pid = access.ddbx_pid;
    let registry = match (recording, mode.steering()) {
        (None, Some(steer)) => Registry::for_record_like(ddbx_pid, facts.host, steer.like.clone()),
        (None, None) => Registry::for_record(ddbx_pid, facts.host),
        (Some(r), _) => Registry::for_replay(ddbx_pid, facts.host, r.manifest.actors.clone())
            .expecting_unjoined(r.unjoined_children()),
    };
    let first_manifest = manifest::first_manifest(facts);
    if let Some(dir) = manifest_dir {
        manifest::start_in(dir, &first_manifest)?;
    }
    let plans = recording.map(|r| plans::replay_plans(r, mode.observe()));
    let ends = recording
        .zip(plans.as_ref())
        .map(|(r, p)| plans::recorded_ends(r, p));
    let socket = runtime.socket();
    let listener =
        UnixListener::bind(&socket).map_err(|e| Error::io_at("cannot listen on", &socket, e))?;
    // Any uid may connect (a program may switch users); the acceptor checks who did.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| Error::io_at("cannot set the mode of", &socket, e))?;
    let halting = match (mode.halt_request(), recording) {
        (Some(request), Some(r)) => Some(Halting::new(r, request, runtime.state_dir())),
        _ => None,
    };
    let live = match mode {
        SessionMode::Record {
            live: Some(request),
            ..
        } => Some(live::Live::new(request.clone(), runtime.path())?),
        _ => None,
    };
    let mut tables = Tables::new(registry, first_manifest, halting);
    tables.live = live;
    let gd = GdState::new(
        tables,
        plans,
        ends,
        manifest_dir.clone(),
        runtime.state_dir(),
        access,
        events.clone(),
    )
    .steered_by(mode.steering().cloned());
    Ok((Arc::new(gd), listener))
}

/// The line the sentinel writes if ddbx dies during the session (`lifeline`).
fn death_notice(mode: &SessionMode, ddbx_pid: i32) -> String {
    match mode {
        SessionMode::Record { out_dir, .. } => format!(
            "ddbx: ddbx (pid {ddbx_pid}) died while recording into {}: the recorded processes \
             were killed with it; the recording ends where they stopped",
            crate::error::shown(out_dir)
        ),
        SessionMode::Replay { recording, .. } => format!(
            "ddbx: ddbx (pid {ddbx_pid}) died during the replay of {}: the replayed processes \
             were killed with it",
            crate::error::shown(&recording.dir)
        ),
    }
}

/// `path` made absolute (the debuggees may change directory).
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| Error::io_at("cannot resolve", path, e))
}
