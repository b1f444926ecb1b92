//! Replaying: run a recording again, forcing every nondeterministic outcome as recorded; with
//! `stop if` predicates, halt at each global state they select and let a [`Driver`] say how
//! to go on.

use super::events::shown_points;
use super::{
    Event, Lines, Messages, Observer, OutcomeKind, end_code, lock, open_sink, open_sink_append,
    path_variable, prepare_empty_dir, resolve_program,
};
use crate::debugger::{Debugger, Report, Trace, render};
use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::inf::Cut;
use ddbx_supervisor::session::{
    self, End, HaltAction, HaltedState, RuntimeDir, SessionConfig, SessionMode,
};
use ddbx_supervisor::wire::ActorId;
use ddbx_supervisor::wire::manifest::{ActorInfo, ExitStatus, SessionState};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What to replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// The recording directory.
    pub dir: PathBuf,
    /// Where the replay writes its own histories and manifest (must not exist or be empty).
    pub history_out: Option<PathBuf>,
    /// Where ddbx's lines go.
    pub messages: Messages,
    /// Catch SIGINT/SIGTERM: stop every process and end as interrupted (for command lines).
    pub handle_signals: bool,
    /// `stop if` predicates (the first one that is a conjunctive predicate is the primary:
    /// the replay halts at the first consistent global state where it holds).
    pub stop_if: Vec<String>,
    /// Stop points on the history: `p3:17`, after p3's 17th event (joined to the primary).
    pub stop_at: Vec<String>,
    /// After halting, keep the processes alive until interrupted.
    pub hold: bool,
    /// `trace EXPR if P`: (EXPR, P) pairs; EXPR is shown each time P becomes true.
    pub traces: Vec<(String, String)>,
    /// Which `stop_if` is the primary (from 1; default: the first conjunctive one).
    pub primary: Option<usize>,
    /// Told of each [`Event`] as it happens.
    pub observer: Observer,
}

/// Decides, at each halt of a replay, how it goes on (the prompt, or an embedding program).
/// It may add predicates and traces to the [`Debugger`] or switch its primary first.
pub type Driver = Box<dyn FnMut(&session::HaltedState, &mut Debugger) -> HaltAction + Send>;

/// What a replay did.
///
/// Its first six fields are [`RecordOutcome`](crate::RecordOutcome)'s: the two outcomes stay
/// flat structs (not one shared part) so that `outcome.exit_code` reads the same for both.
#[derive(Debug, Clone)]
pub struct ReplayOutcome {
    /// The recording replayed.
    pub dir: PathBuf,
    /// How it ended.
    pub kind: OutcomeKind,
    /// The details of the end (divergence, unsupported call, signal).
    pub end: End,
    /// The exit code `ddbx replay` uses (see [`crate::exit`]).
    pub exit_code: i32,
    /// The root process's status in the replay.
    pub root_status: Option<ExitStatus>,
    /// The actors the replay created (this run's pids).
    pub actors: Vec<ActorInfo>,
    /// Recorded events over all actors.
    pub events: u64,
    /// Where the replay's own histories went.
    pub history_out: Option<PathBuf>,
    /// Every `ddbx: …` line, in order.
    pub messages: Vec<String>,
    /// `stop if`: the global state the replay halted in (`None`: it did not halt).
    pub halted: Option<session::HaltedState>,
    /// The cut of every halt, in order (several after `cont`).
    pub halts: Vec<Cut>,
    /// Where the `stop if`s other than the primary first hold.
    pub reports: Vec<Report>,
    /// The traces, with every point where their condition became true.
    pub traces: Vec<Trace>,
    /// The predicates, reports and traces as the JSON output's `predicates` object.
    pub predicates: serde_json::Value,
}

/// Replays the recording in `options.dir`.
pub fn replay(options: ReplayOptions) -> Result<ReplayOutcome, Error> {
    replay_driven(options, None)
}

/// What the recording says about the run to reproduce.
pub(super) struct Recorded {
    /// How to start it again.
    launch: Launch,
    /// How it ended.
    end: RecordedEnd,
}

impl Recorded {
    /// The recorded command, to record again (`ddbx explore`).
    pub(super) fn into_run(self) -> super::record::Run {
        let Launch {
            argv,
            cwd,
            env,
            env_left_out,
            program,
        } = self.launch;
        super::record::Run {
            argv,
            cwd,
            env,
            env_left_out,
            program,
        }
    }
}

/// The root's command as recorded, kept while the recording itself goes to the session.
struct Launch {
    /// The root's argv, directory and environment.
    argv: Vec<String>,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    /// The variables of `env` the recording left out (a replay's own manifest leaves them
    /// out too).
    env_left_out: Vec<String>,
    /// The program to start (argv[0] resolved in the recorded directory and `PATH`).
    program: PathBuf,
}

/// What a replay that reaches the recorded end reports of the recording.
#[derive(Clone, Copy)]
struct RecordedEnd {
    /// How many actors it has.
    actor_count: usize,
    /// How the root ended, if it did.
    root_exit: Option<ExitStatus>,
}

/// Replays the recording in `options.dir`; at each halt, `driver` (if any) says how to go on
/// (without one: end the processes, or hold them with `options.hold`).
pub fn replay_driven(
    options: ReplayOptions,
    driver: Option<Driver>,
) -> Result<ReplayOutcome, Error> {
    // Without a predicate, a stop point or a trace nothing reads the histories but the plans:
    // they are read as streams and only their sketches kept (memory bounded whatever the
    // length of the run).
    let plain =
        options.stop_if.is_empty() && options.stop_at.is_empty() && options.traces.is_empty();
    let recording = if plain {
        Recording::open_for_replay(&options.dir)?
    } else {
        Recording::open(&options.dir)?
    };
    // A process that ran unmanaged in the record has no history to follow: its replay would
    // run free and its parent wait for it.
    if let Some(lost) = recording
        .manifest
        .actors
        .iter()
        .find(|a| a.unrecorded.is_some())
    {
        return Err(Error::Unsupported(format!(
            "{} cannot be replayed: {} ran unrecorded ({})",
            options.dir.display(),
            lost.id,
            lost.unrecorded.as_deref().unwrap_or_default()
        )));
    }
    let recorded = recorded_run(&recording, &options.dir)?;
    if let Some(dir) = &options.history_out {
        prepare_empty_dir(dir, "--history-out")?;
    }
    let mut lines = Lines::new(open_sink(&options.messages)?);
    for line in recording_notes(&recording) {
        lines.show(line);
    }
    let mut debugger = debugger_for(&recording, &options)?;
    let halt = debugger.request();
    let observe = debugger.start_observing();
    if let Some(request) = &halt {
        lines.show(format!(
            "ddbx: halting at the first global state where `{}` holds",
            request.text
        ));
    }
    let early = std::mem::take(&mut lines.kept);
    let runtime = RuntimeDir::create()?;
    let preload = crate::preload::locate(runtime.path())?;
    let lines = Arc::new(Mutex::new(lines));
    let debugger = Arc::new(Mutex::new(debugger));
    let on_halt = halt.is_some().then(|| {
        halt_callback(
            Arc::clone(&debugger),
            Arc::clone(&lines),
            driver,
            options.hold,
            options.observer.clone(),
        )
    });
    let on_message = {
        let lines = Arc::clone(&lines);
        Box::new(move |line: &str| (lock(&lines).sink)(line))
    };
    options.observer.tell(&Event::Starting {
        state_dir: &runtime.state_dir(),
        total_events: Some(recording.event_count()),
    });
    let on_event = options.observer.session_callback();
    let outcome = session::run(SessionConfig {
        mode: SessionMode::Replay {
            recording: Box::new(recording),
            history_out: options.history_out.clone(),
            halt,
            hold: options.hold,
            observe,
        },
        argv: recorded.launch.argv,
        program: recorded.launch.program,
        cwd: recorded.launch.cwd,
        env: recorded.launch.env,
        env_left_out: recorded.launch.env_left_out,
        preload,
        runtime,
        handle_signals: options.handle_signals,
        on_message,
        on_halt,
        on_event,
    })?;
    let mut debugger = lock(&debugger);
    let mut lines = lock(&lines);
    let mut outcome = replay_outcome(options, recorded.end, outcome, &mut debugger, &mut lines);
    outcome.messages.splice(0..0, early);
    Ok(outcome)
}

/// What a replay did, once its session has ended: the exit code, the halted state, and the
/// debugger's last lines (the traces and reports not shown yet). The messages are the
/// session's, then the debugger's, then the end's (the caller puts its own first).
fn replay_outcome(
    options: ReplayOptions,
    recorded: RecordedEnd,
    outcome: session::Outcome,
    debugger: &mut Debugger,
    lines: &mut Lines,
) -> ReplayOutcome {
    let kind = OutcomeKind::of(&outcome.end);
    let exit_code = match &outcome.end {
        End::Complete | End::ReachedEnd => recorded
            .root_exit
            .or(outcome.root_status)
            .map_or(0, ExitStatus::code),
        // A held halt ends when ddbx is interrupted: it exits as interrupted (130/143).
        End::Halted(_) if outcome.held_until.is_some() => {
            outcome.held_until.map_or(0, crate::exit::interrupted)
        }
        other => end_code(other),
    };
    let halted = match &outcome.end {
        End::Halted(state) => Some((**state).clone()),
        _ => None,
    };
    let observer = &options.observer;
    // Every process exited right at the halt: the halt callback never ran.
    if let Some(state) = &halted
        && debugger.last.as_ref() != Some(state)
    {
        let before = shown_points(debugger);
        show_all(lines, debugger.on_halt(state));
        observer.tell_trace_points(debugger, &before);
        observer.tell(&Event::Halted(state));
    }
    let before = shown_points(debugger);
    show_all(
        lines,
        debugger.at_end(kind == OutcomeKind::ReachedEnd, &outcome.observed),
    );
    observer.tell_trace_points(debugger, &before);
    let mut messages = outcome.messages;
    messages.append(&mut lines.kept);
    if kind == OutcomeKind::ReachedEnd {
        messages.push(reached_end_line(
            &options.messages,
            recorded.actor_count,
            outcome.events,
        ));
    }
    ReplayOutcome {
        dir: options.dir,
        kind,
        end: outcome.end,
        exit_code,
        root_status: outcome.root_status,
        actors: outcome.actors,
        events: outcome.events,
        history_out: options.history_out,
        messages,
        halted,
        halts: debugger.halts.clone(),
        reports: debugger.reports.clone().unwrap_or_default(),
        traces: debugger.traces.clone(),
        predicates: render::predicates_json(debugger),
    }
}

/// The debugger of the predicates and traces of `options` (a mistake in them is an error
/// here, before anything runs).
pub(super) fn debugger_for(
    recording: &Recording,
    options: &ReplayOptions,
) -> Result<Debugger, Error> {
    Debugger::new(
        recording,
        &options.stop_if,
        &options.stop_at,
        &options.traces,
        options.primary,
    )
}

/// The run a recording reproduces: its command (resolved as it was, in the recorded
/// directory), environment and root.
pub(super) fn recorded_run(recording: &Recording, dir: &Path) -> Result<Recorded, Error> {
    let manifest = &recording.manifest;
    if manifest.command.is_empty() {
        return Err(Error::BadRecording(format!(
            "{}: expected the recorded command, found an empty `command`",
            dir.join("manifest.ron").display()
        )));
    }
    if !manifest.cwd.is_dir() {
        return Err(Error::Usage(format!(
            "the recording ran in {}, which is not a directory here: replay needs the same files",
            manifest.cwd.display()
        )));
    }
    let env = super::environment::with_left_out(&manifest.env, &manifest.env_left_out)?;
    let program = resolve_program(&manifest.command[0], path_variable(&env), &manifest.cwd)?;
    Ok(Recorded {
        launch: Launch {
            argv: manifest.command.clone(),
            cwd: manifest.cwd.clone(),
            env,
            env_left_out: manifest.env_left_out.clone(),
            program,
        },
        end: RecordedEnd {
            actor_count: manifest.actors.len(),
            root_exit: manifest.actor(ActorId::ROOT).and_then(|a| a.exit),
        },
    })
}

/// What a replay says about its recording before it starts: the recording's warnings, and
/// that it is incomplete.
fn recording_notes(recording: &Recording) -> Vec<String> {
    let mut notes: Vec<String> = recording
        .warnings
        .iter()
        .map(|warning| format!("ddbx: {warning}"))
        .collect();
    let manifest = &recording.manifest;
    if manifest.state != SessionState::Complete {
        let why = manifest.problem.as_deref().unwrap_or("ddbx was stopped");
        notes.push(format!(
            "ddbx: this recording is incomplete ({:?}: {why}); replaying what it holds",
            manifest.state
        ));
        let optimal = manifest.actors.iter().any(|a| {
            let path = ddbx_wire::manifest::Manifest::history_path(&recording.dir, a.id);
            ddbx_wire::history::trace_of(&path) == ddbx_wire::history::Trace::Optimal
        });
        if optimal {
            notes.push(
                "ddbx: it was recorded with --trace optimal: the outcomes its processes still \
                 held undecided when they were killed are lost, so the replay may diverge \
                 near its end"
                    .into(),
            );
        }
    }
    notes
}

/// The session's halt callback: the debugger takes the halt and shows what it says, then
/// `driver` decides how to go on (without one: kill, or hold with `hold`).
fn halt_callback(
    debugger: Arc<Mutex<Debugger>>,
    lines: Arc<Mutex<Lines>>,
    mut driver: Option<Driver>,
    hold: bool,
    observer: Observer,
) -> session::OnHalt {
    Box::new(move |state: &HaltedState| {
        let mut debugger = lock(&debugger);
        let before = shown_points(&debugger);
        show_all(&mut lock(&lines), debugger.on_halt(state));
        observer.tell_trace_points(&debugger, &before);
        observer.tell(&Event::Halted(state));
        match driver.as_mut() {
            Some(driver) => driver(state, &mut debugger),
            None if hold => HaltAction::Hold,
            None => HaltAction::Kill,
        }
    })
}

/// Shows each of `shown`.
fn show_all(lines: &mut Lines, shown: Vec<String>) {
    for line in shown {
        lines.show(line);
    }
}

/// Prints (unless quiet) and returns the last line of a replay that reached the recorded end.
fn reached_end_line(messages: &Messages, actor_count: usize, events: u64) -> String {
    let line =
        format!("ddbx: replay reached the recorded end ({actor_count} actors, {events} events)");
    if *messages != Messages::Quiet {
        open_sink_append(messages)(&line);
    }
    line
}
