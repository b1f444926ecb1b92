//! Recording: run a program and every process it starts under ddbx, into a new recording
//! directory.

use super::{
    Event, Lines, Messages, Observer, OutcomeKind, end_code, environment, open_sink,
    open_sink_append, path_variable, prepare_empty_dir, resolve_program,
};
use crate::error::Error;
use ddbx_supervisor::session::{self, DDBX_VARIABLES, End, RuntimeDir, SessionConfig, SessionMode};
use ddbx_supervisor::wire::manifest::{ActorInfo, ExitStatus};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

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
    /// Told of each [`Event`] as it happens.
    pub observer: Observer,
    /// Shell patterns (`AWS_*`) of environment variables the manifest leaves out: the program
    /// gets them, a replay takes them from its own environment.
    pub env_exclude: Vec<String>,
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

/// Records `options.command` under ddbx.
pub fn record(options: RecordOptions) -> Result<RecordOutcome, Error> {
    let (run, notes) = Run::of(&options, "record")?;
    record_run(&options, run, None, None, notes)
}

impl Run {
    /// The run of `options.command` from this directory with this environment (`verb`: the
    /// command's name, for the error when nothing follows `--`), and the notes to show about
    /// its environment.
    pub(super) fn of(options: &RecordOptions, verb: &str) -> Result<(Run, Vec<String>), Error> {
        let Some(program_name) = options.command.first() else {
            return Err(Error::Usage(format!(
                "expected a program to {verb} after `--`, found nothing"
            )));
        };
        let cwd = std::env::current_dir()
            .map_err(|e| Error::Internal(format!("cannot read the current directory: {e}")))?;
        let env = session_env();
        let program = resolve_program(program_name, path_variable(&env), &cwd)?;
        refuse_unseen(&program)?;
        let (stored, env_left_out) = environment::split(&env, &options.env_exclude);
        let notes = environment::secret_note(&stored).into_iter().collect();
        let run = Run {
            argv: options.command.clone(),
            cwd,
            env,
            env_left_out,
            program,
        };
        Ok((run, notes))
    }
}

/// A run to record: the root's command, directory and environment.
#[derive(Debug, Clone)]
pub(super) struct Run {
    /// The root's argv (`argv[0]` is what the program sees).
    pub(super) argv: Vec<String>,
    /// Its working directory.
    pub(super) cwd: PathBuf,
    /// Its environment.
    pub(super) env: Vec<(String, String)>,
    /// The variables of `env` the manifest leaves out.
    pub(super) env_left_out: Vec<String>,
    /// The program to start, resolved.
    pub(super) program: PathBuf,
}

/// Records `run` into `options.out_dir` (steered by `steer`, or halted live where `live`'s
/// request holds and then driven by its callback, if given), showing `notes` after the first
/// line.
pub(super) fn record_run(
    options: &RecordOptions,
    run: Run,
    steer: Option<Box<session::Steering>>,
    live: Option<(session::LiveRequest, session::OnHalt)>,
    notes: Vec<String>,
) -> Result<RecordOutcome, Error> {
    let out_dir = match &options.out_dir {
        Some(dir) => {
            prepare_empty_dir(dir, "-o")?;
            dir.clone()
        }
        None => default_out_dir(&run.cwd)?,
    };
    // A steered run is one of several (`ddbx explore`): its lines follow the others'.
    let sink = match steer {
        Some(_) => open_sink_append(&options.messages),
        None => open_sink(&options.messages)?,
    };
    let mut lines = Lines::new(sink);
    lines.show(format!("ddbx: recording to {}", out_dir.display()));
    for note in notes {
        lines.show(note);
    }

    let runtime = RuntimeDir::create()?;
    let preload = crate::preload::locate(runtime.path())?;
    options.observer.tell(&Event::Starting {
        state_dir: &runtime.state_dir(),
        total_events: None,
    });
    let (live, on_halt) = live.unzip();
    let outcome = session::run(SessionConfig {
        mode: SessionMode::Record {
            out_dir: out_dir.clone(),
            steer,
            live,
        },
        argv: run.argv,
        program: run.program,
        cwd: run.cwd,
        env: run.env,
        env_left_out: run.env_left_out,
        preload,
        runtime,
        handle_signals: options.handle_signals,
        on_message: lines.sink,
        on_halt,
        on_event: options.observer.session_callback(),
    })?;
    let kind = OutcomeKind::of(&outcome.end);
    let exit_code = match &outcome.end {
        End::Complete | End::ReachedEnd => outcome.root_status.map_or(0, ExitStatus::code),
        End::Halted(_) => 0,
        other => end_code(other),
    };
    let mut messages = lines.kept;
    messages.extend(outcome.messages);
    Ok(RecordOutcome {
        dir: out_dir,
        kind,
        end: outcome.end,
        exit_code,
        root_status: outcome.root_status,
        actors: outcome.actors,
        passthrough: outcome.passthrough,
        messages,
    })
}

/// A statically linked program ignores LD_PRELOAD, and a Go program's runtime bypasses libc:
/// ddbx would see none of their calls.
pub(super) fn refuse_unseen(program: &Path) -> Result<(), Error> {
    use ddbx_supervisor::wire::elf;
    use std::io::Read;
    let mut head = Vec::with_capacity(elf::HEADER_BYTES);
    if let Ok(file) = std::fs::File::open(program) {
        let _ = file.take(elf::HEADER_BYTES as u64).read_to_end(&mut head);
    }
    if elf::is_static(&head) == Some(true) {
        return Err(Error::Unsupported(format!(
            "{} is statically linked: it does not load ddbx's preload library, so none of its \
             calls can be recorded (record a dynamically linked build of it)",
            program.display()
        )));
    }
    if elf::is_go(&head) {
        return Err(Error::Unsupported(format!(
            "{} is a Go program: the Go runtime makes its system calls itself, not through \
             libc, so ddbx's preload library sees none of them and nothing it does can be \
             recorded",
            program.display()
        )));
    }
    Ok(())
}

/// This process's environment without ddbx's own variables, as the program will get it.
pub(super) fn session_env() -> Vec<(String, String)> {
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

/// Creates `ddbx-run-N` in `cwd`, N the smallest integer ≥ 1 not taken.
pub(super) fn default_out_dir(cwd: &Path) -> Result<PathBuf, Error> {
    for n in 1..100_000u32 {
        let name = PathBuf::from(format!("ddbx-run-{n}"));
        let made = std::fs::DirBuilder::new()
            .mode(0o700)
            .create(cwd.join(&name));
        match made {
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
