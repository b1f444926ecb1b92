//! The embedding API: record and replay a program from Rust, as the CLI does.

use crate::error::Error;
use crate::exit;
use crate::halt::{Debugger, Report, Trace};
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::inf::Cut;
use ddbx_supervisor::session::HaltAction;
use ddbx_supervisor::session::{self, DDBX_VARIABLES, End, RuntimeDir, SessionConfig, SessionMode};
use ddbx_supervisor::wire::manifest::{ActorInfo, ExitStatus};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where ddbx's own human-readable lines (`ddbx: …`) go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Messages {
    /// To standard error (the program's own output is never mixed into it by ddbx).
    #[default]
    Stderr,
    /// To this file (created or truncated).
    File(PathBuf),
    /// Nowhere; they are still returned in the outcome.
    Quiet,
}

/// What to record.
#[derive(Debug, Clone, Default)]
pub struct RecordOptions {
    /// The program and its arguments; the program is looked up in `PATH` like a shell does.
    pub command: Vec<String>,
    /// The recording directory: must not exist or be empty. `None`: `ddbx-run-N` in the
    /// current directory, N the smallest free integer ≥ 1.
    pub out_dir: Option<PathBuf>,
    /// Where ddbx's lines go.
    pub messages: Messages,
    /// Catch SIGINT/SIGTERM: stop every process and end as interrupted (for command lines).
    pub handle_signals: bool,
}

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
}

/// Decides, at each halt of a replay, how it goes on (the prompt, or an embedding program).
/// It may add predicates and traces to the [`Debugger`] or switch its primary first.
pub type Driver = Box<dyn FnMut(&session::HaltedState, &mut Debugger) -> HaltAction + Send>;

/// How a record or replay ended, as a word (the `outcome` field of the JSON output).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutcomeKind {
    /// Record: the whole process tree exited.
    Complete,
    /// Replay: the recorded end was reached.
    ReachedEnd,
    /// Replay: the program did not follow the recording.
    Diverged,
    /// The program did something ddbx cannot handle.
    Unsupported,
    /// ddbx was interrupted.
    Interrupted,
    /// Replay: halted at the first global state where the `stop if` predicate holds.
    Halted,
}

impl OutcomeKind {
    /// `complete`, `reached_end`, `diverged`, `unsupported`, `interrupted`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Complete => "complete",
            OutcomeKind::ReachedEnd => "reached_end",
            OutcomeKind::Diverged => "diverged",
            OutcomeKind::Unsupported => "unsupported",
            OutcomeKind::Interrupted => "interrupted",
            OutcomeKind::Halted => "halted",
        }
    }

    fn of(end: &End) -> OutcomeKind {
        match end {
            End::Complete => OutcomeKind::Complete,
            End::ReachedEnd => OutcomeKind::ReachedEnd,
            End::Diverged(_) => OutcomeKind::Diverged,
            End::Unsupported { .. } => OutcomeKind::Unsupported,
            End::Interrupted { .. } => OutcomeKind::Interrupted,
            End::Halted(_) => OutcomeKind::Halted,
        }
    }
}

/// What a record did.
#[derive(Debug, Clone)]
pub struct RecordOutcome {
    /// The recording directory.
    pub dir: PathBuf,
    /// How it ended.
    pub kind: OutcomeKind,
    /// The details of the end (divergence, unsupported call, signal).
    pub end: End,
    /// The exit code `ddbx record` uses (see [`crate::exit`]).
    pub exit_code: i32,
    /// The root process's status.
    pub root_status: Option<ExitStatus>,
    /// Every actor recorded.
    pub actors: Vec<ActorInfo>,
    /// Kinds of I/O that were not recorded (`what (p3, p5)`).
    pub passthrough: Vec<String>,
    /// Every `ddbx: …` line, in order.
    pub messages: Vec<String>,
}

/// What a replay did.
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

/// Records `options.command` under ddbx.
pub fn record(options: RecordOptions) -> Result<RecordOutcome, Error> {
    let Some(program_name) = options.command.first() else {
        return Err(Error::Usage(
            "expected a program to record after `--`, found nothing".into(),
        ));
    };
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Internal(format!("cannot read the current directory: {e}")))?;
    let env = session_env();
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str());
    let program = resolve_program(program_name, path_var, &cwd)?;
    refuse_static(&program)?;
    let out_dir = match &options.out_dir {
        Some(dir) => {
            prepare_empty_dir(dir, "-o")?;
            dir.clone()
        }
        None => default_out_dir(&cwd)?,
    };
    let mut sink = open_sink(&options.messages)?;
    let mut early = Vec::new();
    let line = format!("ddbx: recording to {}", out_dir.display());
    sink(&line);
    early.push(line);

    let runtime = RuntimeDir::create()?;
    let preload = crate::preload::locate(runtime.path())?;
    let outcome = session::run(SessionConfig {
        mode: SessionMode::Record {
            out_dir: out_dir.clone(),
        },
        argv: options.command.clone(),
        program,
        cwd,
        env,
        preload,
        runtime,
        handle_signals: options.handle_signals,
        on_message: sink,
        on_halt: None,
    })?;
    let kind = OutcomeKind::of(&outcome.end);
    let exit_code = match &outcome.end {
        End::Complete | End::ReachedEnd => outcome.root_status.map_or(0, ExitStatus::code),
        other => end_code(other),
    };
    early.extend(outcome.messages);
    Ok(RecordOutcome {
        dir: out_dir,
        kind,
        end: outcome.end,
        exit_code,
        root_status: outcome.root_status,
        actors: outcome.actors,
        passthrough: outcome.passthrough,
        messages: early,
    })
}

/// A statically linked program ignores LD_PRELOAD: ddbx would see none of its calls.
fn refuse_static(program: &Path) -> Result<(), Error> {
    use std::io::Read;
    let mut head = Vec::with_capacity(ddbx_supervisor::wire::elf::HEADER_BYTES);
    if let Ok(file) = std::fs::File::open(program) {
        let _ = file
            .take(ddbx_supervisor::wire::elf::HEADER_BYTES as u64)
            .read_to_end(&mut head);
    }
    if ddbx_supervisor::wire::elf::is_static(&head) == Some(true) {
        return Err(Error::Unsupported(format!(
            "{} is statically linked: it does not load ddbx's preload library, so none of its \
             calls can be recorded (record a dynamically linked build of it)",
            program.display()
        )));
    }
    Ok(())
}

/// Replays the recording in `options.dir`.
pub fn replay(options: ReplayOptions) -> Result<ReplayOutcome, Error> {
    replay_driven(options, None)
}

/// Replays the recording in `options.dir`; at each halt, `driver` (if any) says how to go on
/// (without one: end the processes, or hold them with `options.hold`).
pub fn replay_driven(
    options: ReplayOptions,
    driver: Option<Driver>,
) -> Result<ReplayOutcome, Error> {
    let recording = Recording::open(&options.dir)?;
    let manifest = &recording.manifest;
    if manifest.command.is_empty() {
        return Err(Error::BadRecording(format!(
            "{}: expected the recorded command, found an empty `command`",
            options.dir.join("manifest.ron").display()
        )));
    }
    if !manifest.cwd.is_dir() {
        return Err(Error::Usage(format!(
            "the recording ran in {}, which is not a directory here: replay needs the same files",
            manifest.cwd.display()
        )));
    }
    let path_var = manifest
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str());
    let program = resolve_program(&manifest.command[0], path_var, &manifest.cwd)?;
    if let Some(dir) = &options.history_out {
        prepare_empty_dir(dir, "--history-out")?;
    }
    let mut sink = open_sink(&options.messages)?;
    let mut early = Vec::new();
    for warning in &recording.warnings {
        let line = format!("ddbx: {warning}");
        sink(&line);
        early.push(line);
    }
    if recording.manifest.state != ddbx_supervisor::wire::manifest::SessionState::Complete {
        let why = recording
            .manifest
            .problem
            .as_deref()
            .unwrap_or("ddbx was stopped");
        let line = format!(
            "ddbx: this recording is incomplete ({:?}: {why}); replaying what it holds",
            recording.manifest.state
        );
        sink(&line);
        early.push(line);
    }
    let actor_count = manifest.actors.len();
    let recorded_root = manifest
        .actor(ddbx_supervisor::wire::ActorId::ROOT)
        .and_then(|a| a.exit);
    let argv = manifest.command.clone();
    let cwd = manifest.cwd.clone();
    let env = manifest.env.clone();
    let mut debugger = Debugger::new(
        &recording,
        &options.stop_if,
        &options.stop_at,
        &options.traces,
        options.primary,
    )?;
    let halt = debugger.request();
    let observe = debugger.start_observing();
    if let Some(request) = &halt {
        let line = format!(
            "ddbx: halting at the first global state where `{}` holds",
            request.text
        );
        sink(&line);
        early.push(line);
    }
    let runtime = RuntimeDir::create()?;
    let preload = crate::preload::locate(runtime.path())?;
    let sink = Arc::new(Mutex::new(sink));
    let debugger = Arc::new(Mutex::new(debugger));
    let shown: Arc<Mutex<Vec<String>>> = Arc::default();
    let show = {
        let sink = Arc::clone(&sink);
        let shown = Arc::clone(&shown);
        move |lines: Vec<String>| {
            let mut sink = sink.lock().unwrap_or_else(|p| p.into_inner());
            for line in &lines {
                sink(line);
            }
            shown
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(lines);
        }
    };
    let on_halt: Option<session::OnHalt> = halt.as_ref().map(|_| {
        let debugger = Arc::clone(&debugger);
        let show = show.clone();
        let hold = options.hold;
        let mut driver = driver;
        Box::new(move |state: &session::HaltedState| {
            let mut d = debugger.lock().unwrap_or_else(|p| p.into_inner());
            show(d.on_halt(state));
            match driver.as_mut() {
                Some(driver) => driver(state, &mut d),
                None if hold => HaltAction::Hold,
                None => HaltAction::Kill,
            }
        }) as session::OnHalt
    });
    let on_message = {
        let sink = Arc::clone(&sink);
        Box::new(move |line: &str| (sink.lock().unwrap_or_else(|p| p.into_inner()))(line))
    };
    let outcome = session::run(SessionConfig {
        mode: SessionMode::Replay {
            recording: Box::new(recording),
            history_out: options.history_out.clone(),
            halt,
            hold: options.hold,
            observe,
        },
        argv,
        program,
        cwd,
        env,
        preload,
        runtime,
        handle_signals: options.handle_signals,
        on_message,
        on_halt,
    })?;
    let kind = OutcomeKind::of(&outcome.end);
    let mut messages = early;
    messages.extend(outcome.messages);
    let exit_code = match &outcome.end {
        End::Complete | End::ReachedEnd => recorded_root
            .or(outcome.root_status)
            .map_or(0, ExitStatus::code),
        other => end_code(other),
    };
    let halted = match &outcome.end {
        End::Halted(state) => Some((**state).clone()),
        _ => None,
    };
    {
        let mut d = debugger.lock().unwrap_or_else(|p| p.into_inner());
        // Every process exited right at the halt: the halt callback never ran.
        if let Some(state) = &halted
            && d.last.as_ref() != Some(state)
        {
            show(d.on_halt(state));
        }
        show(d.at_end(kind == OutcomeKind::ReachedEnd, &outcome.observed));
    }
    messages.extend(shown.lock().unwrap_or_else(|p| p.into_inner()).drain(..));
    if kind == OutcomeKind::ReachedEnd {
        let line = format!(
            "ddbx: replay reached the recorded end ({actor_count} actors, {} events)",
            outcome.events
        );
        if options.messages != Messages::Quiet {
            let mut sink = open_sink_append(&options.messages);
            sink(&line);
        }
        messages.push(line);
    }
    let d = debugger.lock().unwrap_or_else(|p| p.into_inner());
    Ok(ReplayOutcome {
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
        halts: d.halts.clone(),
        reports: d.reports.clone().unwrap_or_default(),
        traces: d.traces.clone(),
        predicates: d.to_json(),
    })
}

/// How a [`HaltingReplay`] goes on from a halt.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Control {
    Cont,
    StopIf(String),
    Kill,
}

/// A replay running on a thread of its own that stops at each halt and waits to be told how
/// to go on: [`cont`](HaltingReplay::cont) (to the next time the primary becomes true),
/// [`stop_if`](HaltingReplay::stop_if) (to the first state from here where a new predicate
/// holds), or [`kill`](HaltingReplay::kill). While it waits, every process is alive and
/// blocked in ddbx's library (`pid` in [`session::HaltedActor`]: attach a debugger to it).
///
/// Like [`replay`], it reaps with `waitpid(-1)`: run one at a time, and no other children.
pub struct HaltingReplay {
    recording: Recording,
    halts: std::sync::mpsc::Receiver<session::HaltedState>,
    controls: std::sync::mpsc::Sender<Control>,
    thread: Option<std::thread::JoinHandle<Result<ReplayOutcome, Error>>>,
    waiting: bool,
}

impl HaltingReplay {
    /// Starts replaying `options.dir` with its predicates (`stop_if`, `stop_at`, `traces`).
    pub fn start(options: ReplayOptions) -> Result<HaltingReplay, Error> {
        let recording = Recording::open(&options.dir)?;
        // The predicates are checked here, so that a mistake is an error of `start`.
        Debugger::new(
            &recording,
            &options.stop_if,
            &options.stop_at,
            &options.traces,
            options.primary,
        )?;
        let (halt_tx, halts) = std::sync::mpsc::channel();
        let (controls, control_rx) = std::sync::mpsc::channel::<Control>();
        let driver: Driver = Box::new(move |state, debugger| {
            if halt_tx.send(state.clone()).is_err() {
                return HaltAction::Kill;
            }
            let resume = match control_rx.recv() {
                Ok(Control::Cont) => debugger.cont(),
                Ok(Control::StopIf(text)) => match debugger.add_stop_if(&text) {
                    Ok(_) => debugger.cont(),
                    Err(e) => Err(e.to_string()),
                },
                Ok(Control::Kill) | Err(_) => return HaltAction::Kill,
            };
            match resume {
                Ok(resume) => HaltAction::Resume(resume),
                // Cannot go on that way (checked before sending): end here.
                Err(_) => HaltAction::Kill,
            }
        });
        let thread = std::thread::Builder::new()
            .name("ddbx-replay".into())
            .spawn(move || replay_driven(options, Some(driver)))
            .map_err(|e| Error::Internal(format!("cannot start a thread: {e}")))?;
        Ok(HaltingReplay {
            recording,
            halts,
            controls,
            thread: Some(thread),
            waiting: false,
        })
    }

    /// Waits for the next halt; `None` when the replay ended without halting again (then
    /// [`finish`](HaltingReplay::finish) says how).
    pub fn next_halt(&mut self) -> Option<session::HaltedState> {
        let state = self.halts.recv().ok();
        self.waiting = state.is_some();
        state
    }

    /// Continues to the next time the primary predicate becomes true (from the values the
    /// recording saved), or to the end if it does not.
    pub fn cont(&mut self) -> Result<(), Error> {
        self.control(Control::Cont)
    }

    /// Continues to the first global state, at or after this one, where `predicate` (a
    /// conjunctive predicate, which becomes the primary) holds.
    pub fn stop_if(&mut self, predicate: &str) -> Result<(), Error> {
        let w = crate::halt::Watch::new(&self.recording, predicate, "stop_if")?;
        if let Some(reason) = w.reason {
            return Err(Error::Usage(format!(
                "stop_if `{predicate}`: cannot be halted at exactly: {reason}"
            )));
        }
        self.control(Control::StopIf(predicate.to_string()))
    }

    /// Ends every process; the replay ends halted where it is.
    pub fn kill(&mut self) -> Result<(), Error> {
        self.control(Control::Kill)
    }

    fn control(&mut self, control: Control) -> Result<(), Error> {
        if !self.waiting {
            return Err(Error::Usage(
                "the replay is not halted: wait for it with next_halt first".into(),
            ));
        }
        self.waiting = false;
        self.controls
            .send(control)
            .map_err(|_| Error::Internal("the replay thread is gone".into()))
    }

    /// Waits for the replay to end (killing it if it is halted) and returns what it did.
    pub fn finish(mut self) -> Result<ReplayOutcome, Error> {
        if self.waiting {
            let _ = self.kill();
        }
        // Halts not asked for are not waited at: the driver sees both channels closed.
        let thread = self.thread.take();
        drop(self.halts);
        drop(self.controls);
        match thread.map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Err(Error::Internal("the replay thread panicked".into())),
        }
    }
}

/// The exit code of a session that did not end normally.
fn end_code(end: &End) -> i32 {
    match end {
        End::Diverged(_) => exit::DIVERGED,
        End::Unsupported { .. } => exit::UNSUPPORTED,
        End::Interrupted { signal } => exit::interrupted(*signal),
        End::Complete | End::ReachedEnd | End::Halted(_) => 0,
    }
}

/// This process's environment without ddbx's own variables, as the program will get it.
fn session_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .filter(|(k, _)| !DDBX_VARIABLES.contains(&k.as_str()))
        .collect()
}

/// Finds the executable a shell would run for `name`: a name with a `/` is a path (relative
/// to `cwd`); otherwise each `PATH` entry is tried in order (an empty entry is `cwd`).
pub fn resolve_program(name: &str, path_var: Option<&str>, cwd: &Path) -> Result<PathBuf, Error> {
    if name.is_empty() {
        return Err(Error::Usage(
            "expected a program name, found an empty string".into(),
        ));
    }
    if name.contains('/') {
        let path = cwd.join(name);
        return match std::fs::metadata(&path) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(path),
            Ok(m) if m.is_file() => Err(Error::Usage(format!(
                "`{name}` is not executable (mode {:o}): expected a program",
                m.permissions().mode() & 0o7777
            ))),
            Ok(_) => Err(Error::Usage(format!(
                "`{name}` is a directory, expected a program"
            ))),
            Err(_) => Err(Error::Usage(format!(
                "`{name}`: no such program (looked for {})",
                path.display()
            ))),
        };
    }
    let path_var = path_var.unwrap_or("/usr/local/bin:/usr/bin:/bin");
    for dir in path_var.split(':') {
        let dir = if dir.is_empty() {
            cwd.to_path_buf()
        } else {
            cwd.join(dir)
        };
        let candidate = dir.join(name);
        if let Ok(m) = std::fs::metadata(&candidate)
            && m.is_file()
            && m.permissions().mode() & 0o111 != 0
        {
            return Ok(candidate);
        }
    }
    Err(Error::Usage(format!(
        "`{name}`: program not found in PATH ({path_var})"
    )))
}

/// Makes sure `dir` is a new or empty directory (ddbx never overwrites a recording).
fn prepare_empty_dir(dir: &Path, option: &str) -> Result<(), Error> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(Error::Usage(format!(
                    "{option} {}: expected a new or empty directory, found one with files in it \
                     (ddbx never overwrites a recording; choose another directory or remove it)",
                    dir.display()
                )));
            }
            Ok(())
        }
        Err(_) if dir.exists() => Err(Error::Usage(format!(
            "{option} {}: expected a directory, found a file",
            dir.display()
        ))),
        Err(_) => std::fs::create_dir_all(dir).map_err(|e| {
            Error::Usage(format!("{option} {}: cannot create it: {e}", dir.display()))
        }),
    }
}

/// Creates `ddbx-run-N` in `cwd`, N the smallest integer ≥ 1 not taken.
fn default_out_dir(cwd: &Path) -> Result<PathBuf, Error> {
    for n in 1..100_000u32 {
        let name = PathBuf::from(format!("ddbx-run-{n}"));
        match std::fs::create_dir(cwd.join(&name)) {
            Ok(()) => return Ok(name),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Error::Usage(format!(
                    "cannot create {} for the recording: {e} (give another directory with -o)",
                    cwd.join(&name).display()
                )));
            }
        }
    }
    Err(Error::Usage(format!(
        "every name ddbx-run-1 … ddbx-run-99999 in {} is taken: give a directory with -o",
        cwd.display()
    )))
}

/// Something that prints ddbx's lines.
type Sink = Box<dyn FnMut(&str) + Send>;

/// The line printer for a [`Messages`] destination (the file is created or truncated).
fn open_sink(messages: &Messages) -> Result<Sink, Error> {
    Ok(match messages {
        Messages::Stderr => Box::new(|line: &str| eprintln!("{line}")),
        Messages::Quiet => Box::new(|_: &str| {}),
        Messages::File(path) => {
            let mut file = std::fs::File::create(path).map_err(|e| {
                Error::Usage(format!(
                    "--messages {}: cannot create it: {e}",
                    path.display()
                ))
            })?;
            Box::new(move |line: &str| {
                let _ = writeln!(file, "{line}");
            })
        }
    })
}

/// Like [`open_sink`], appending to a file already started.
fn open_sink_append(messages: &Messages) -> Sink {
    match messages {
        Messages::File(path) => {
            let file = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(path);
            match file {
                Ok(mut file) => Box::new(move |line: &str| {
                    let _ = writeln!(file, "{line}");
                }),
                Err(_) => Box::new(|_: &str| {}),
            }
        }
        Messages::Stderr => Box::new(|line: &str| eprintln!("{line}")),
        Messages::Quiet => Box::new(|_: &str| {}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_resolve_like_a_shell() {
        let cwd = Path::new("/");
        assert_eq!(
            resolve_program("sh", Some("/nonexistent:/bin:/usr/bin"), cwd)
                .unwrap()
                .file_name()
                .unwrap(),
            "sh"
        );
        assert!(resolve_program("/bin/sh", None, cwd).is_ok());
        let e = resolve_program("no-such-program-ddbx", Some("/bin"), cwd).unwrap_err();
        assert_eq!(e.exit_code(), exit::USAGE);
        assert!(e.to_string().contains("not found in PATH"), "{e}");
        let e = resolve_program("./etc", None, cwd).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
    }

    #[test]
    fn output_dirs_must_be_new_or_empty() {
        let base = std::env::temp_dir().join(format!("ddbx-api-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("rec");
        prepare_empty_dir(&dir, "-o").unwrap();
        prepare_empty_dir(&dir, "-o").unwrap();
        std::fs::write(dir.join("manifest.ron"), "x").unwrap();
        let e = prepare_empty_dir(&dir, "-o").unwrap_err();
        assert!(e.to_string().contains("never overwrites"), "{e}");
        assert_eq!(
            std::fs::read_to_string(dir.join("manifest.ron")).unwrap(),
            "x"
        );
        assert_eq!(default_out_dir(&base).unwrap(), PathBuf::from("ddbx-run-1"));
        assert_eq!(default_out_dir(&base).unwrap(), PathBuf::from("ddbx-run-2"));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
