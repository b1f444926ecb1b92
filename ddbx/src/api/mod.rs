//! The embedding API: record and replay a program from Rust, as the CLI does.
//!
//! * `record.rs`: [`record`](record()) runs a program under ddbx;
//! * `replay.rs`: [`replay`](replay()) and [`replay_driven`] run a recording again, halting
//!   where its predicates say and asking a [`Driver`] how to go on;
//! * `halting.rs`: [`HaltingReplay`] is such a replay on a thread of its own, driven from
//!   halt to halt by the caller.
//!
//! * `until_fail.rs`: [`Recorder::until_fail`] records a program again and again until a run
//!   fails, and keeps that run's recording.
//!
//! * `explore.rs`: [`explore`](explore()) flips races of a recording, one new recorded run
//!   each.
//!
//! * `live.rs`: [`run_live`] runs a program live, recorded, and halts it without replay where
//!   a predicate first holds (paper 001's lazy halting).
//!
//! * `events.rs`: what a run tells an [`Observer`] as it happens ([`Event`]).
//!
//! This file holds what both directions share: where ddbx's lines go ([`Messages`]), how a
//! run ended ([`OutcomeKind`]), and the checks of programs and output directories.

pub mod environment;
mod events;
mod explore;
mod halting;
mod live;
mod record;
mod replay;
mod until_fail;

pub use events::{Event, Observer};
pub use explore::{DEFAULT_PATIENCE, ExploreOptions, ExploreOutcome, Flip, explore};
pub use halting::HaltingReplay;
pub use live::{LiveDriver, RunOptions, RunOutcome, describe_live, run_live};
pub use record::{RecordOptions, RecordOutcome, record};
pub use replay::{Driver, ReplayOptions, ReplayOutcome, replay, replay_driven};
pub use until_fail::{
    DEFAULT_RUNS, FailingRun, Failure, OnRun, Recorder, RunReport, UntilFail, UntilFailOutcome,
};

use crate::error::Error;
use crate::exit;
use ddbx_supervisor::session::End;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

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

/// The exit code of a session that did not end normally.
fn end_code(end: &End) -> i32 {
    match end {
        End::Diverged(_) => exit::DIVERGED,
        End::Unsupported { .. } => exit::UNSUPPORTED,
        End::Interrupted { signal } => exit::interrupted(*signal),
        End::Complete | End::ReachedEnd | End::Halted(_) => 0,
    }
}

/// The value of `PATH` in an environment.
fn path_variable(env: &[(String, String)]) -> Option<&str> {
    env.iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
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
            // A recording is its owner's only: it holds the program's environment and the
            // bytes of its outside peers.
            private_dir(dir, option)
        }
        Err(_) if dir.exists() => Err(Error::Usage(format!(
            "{option} {}: expected a directory, found a file",
            dir.display()
        ))),
        Err(_) => private_dir(dir, option),
    }
}

/// Creates `dir` (or makes it) mode 0700.
fn private_dir(dir: &Path, option: &str) -> Result<(), Error> {
    ddbx_supervisor::wire::file::create_private_dir(dir)
        .map_err(|e| Error::Usage(format!("{option} {}: cannot create it: {e}", dir.display())))
}

/// Something that prints ddbx's lines.
type Sink = Box<dyn FnMut(&str) + Send>;

/// ddbx's lines as a run goes: each is printed at once and kept for the outcome.
struct Lines {
    sink: Sink,
    kept: Vec<String>,
}

impl Lines {
    /// Lines printed by `sink`.
    fn new(sink: Sink) -> Lines {
        Lines {
            sink,
            kept: Vec::new(),
        }
    }

    /// Prints `line` and keeps it.
    fn show(&mut self, line: String) {
        (self.sink)(&line);
        self.kept.push(line);
    }
}

/// The line printer for a [`Messages`] destination (the file is created or truncated).
fn open_sink(messages: &Messages) -> Result<Sink, Error> {
    Ok(match messages {
        Messages::Stderr => Box::new(crate::term::eprint_line),
        Messages::Quiet => Box::new(|_: &str| {}),
        Messages::File(path) => file_sink(std::fs::File::create(path).map_err(|e| {
            Error::Usage(format!(
                "--messages {}: cannot create it: {e}",
                path.display()
            ))
        })?),
    })
}

/// Like [`open_sink`], appending to a file already started (where it cannot be opened any
/// more, the lines go nowhere).
pub(crate) fn open_sink_append(messages: &Messages) -> Sink {
    let Messages::File(path) = messages else {
        return open_sink(messages).unwrap_or_else(|_| Box::new(|_: &str| {}));
    };
    match std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        Ok(file) => file_sink(file),
        Err(_) => Box::new(|_: &str| {}),
    }
}

/// Writes each line to `file`.
fn file_sink(mut file: std::fs::File) -> Sink {
    Box::new(move |line: &str| {
        let _ = writeln!(file, "{line}");
    })
}

/// Locks a mutex shared with the session's threads; a panic on one of them does not make the
/// data unusable here (each holder leaves it consistent between statements).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
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
        assert_eq!(
            record::default_out_dir(&base).unwrap(),
            PathBuf::from("ddbx-run-1")
        );
        assert_eq!(
            record::default_out_dir(&base).unwrap(),
            PathBuf::from("ddbx-run-2")
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
