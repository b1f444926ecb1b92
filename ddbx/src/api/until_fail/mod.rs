//! Flaky runs: record a command again and again until one run fails, keep that run's
//! recording and delete the others ([`Recorder::until_fail`], `ddbx record --until-fail`).
//!
//! A run *fails* when its root process exits non-zero or is killed by a signal, or, with
//! [`UntilFail::fail_if`], when the predicate holds at some consistent global state of its
//! recording. That is computed offline, as `ddbx inf` does: Inf(P) for a conjunction of
//! conditions that each involve one process; for a general predicate, the first state where
//! it holds along the observation chain a replay follows. Probes and the built-in counters
//! only: memory variables are read by a live replay.
//!
//! Each run is recorded into `DIR/.until-fail/run-K/`; the failing run's files are then moved
//! up into DIR and everything else is removed. A session reaps with `waitpid(-1)`, so it must
//! be the only one in its process: runs at once (`jobs > 1`) are each a `ddbx record` process
//! of their own, started from the binary [`UntilFail::ddbx`] names (each has its own runtime
//! directory, `ddbx-<pid>-<random>`, so they never meet). Without a binary the runs are
//! recorded in this process, one after the other.

use super::record::{default_out_dir, refuse_unseen, session_env};
use super::{
    OutcomeKind, RecordOptions, RecordOutcome, open_sink, path_variable, prepare_empty_dir,
    private_dir, record, resolve_program,
};
use crate::error::Error;
use crate::halt::Watch;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::cut::CutSearch;
use ddbx_supervisor::analysis::inf::Cut;
use ddbx_supervisor::session::End;
use ddbx_supervisor::wire::manifest::ExitStatus;
use search::Search;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How many runs `--until-fail` makes at most when `--runs` is not given.
pub const DEFAULT_RUNS: u32 = 100;

mod search;
mod worker;

/// The directory inside DIR where the runs are recorded until one fails.
const RUNS_DIR: &str = ".until-fail";

/// A record to make: once ([`Recorder::record`]) or until a run fails
/// ([`Recorder::until_fail`]).
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    /// The command, the directory (`out_dir`: where the failing run is kept), where ddbx's
    /// lines go, whether SIGINT/SIGTERM stop the runs, the environment left out. Its
    /// `observer` is not told of the runs' events.
    pub options: RecordOptions,
}

/// How to look for a failing run.
#[derive(Clone)]
pub struct UntilFail {
    /// At most this many runs (≥ 1).
    pub runs: u32,
    /// Runs at once (≥ 1); more than one needs [`UntilFail::ddbx`].
    pub jobs: u32,
    /// A run whose program exits 0 fails too when this predicate (the `stop if` language)
    /// holds at some consistent state of its recording.
    pub fail_if: Option<String>,
    /// The `ddbx` binary that records each run as a process of its own (`None`: in this
    /// process, one run after the other).
    pub ddbx: Option<PathBuf>,
    /// Told after each run that ended by itself (not one stopped because another failed).
    pub on_run: Option<OnRun>,
}

/// What [`UntilFail::on_run`] calls, on the thread that called [`Recorder::until_fail`].
pub type OnRun = Arc<dyn Fn(&RunReport) + Send + Sync>;

impl Default for UntilFail {
    fn default() -> UntilFail {
        UntilFail {
            runs: DEFAULT_RUNS,
            jobs: 1,
            fail_if: None,
            ddbx: None,
            on_run: None,
        }
    }
}

impl std::fmt::Debug for UntilFail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UntilFail")
            .field("runs", &self.runs)
            .field("jobs", &self.jobs)
            .field("fail_if", &self.fail_if)
            .field("ddbx", &self.ddbx)
            .field("on_run", &self.on_run.as_ref().map(|_| ".."))
            .finish()
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The root process exited with this non-zero status.
    Exit(i32),
    /// The root process was killed by this signal.
    Signal(i32),
    /// The `fail_if` predicate holds at this consistent state (events per actor).
    FailIf {
        /// The predicate as given.
        predicate: String,
        /// The first state found where it holds.
        cut: Cut,
    },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Exit(code) => write!(f, "the program exited with status {code}"),
            Failure::Signal(sig) => {
                let name = nix::sys::signal::Signal::try_from(*sig)
                    .map(|s| format!(" ({})", s.as_str()))
                    .unwrap_or_default();
                write!(f, "the program was killed by signal {sig}{name}")
            }
            Failure::FailIf { predicate, cut } => {
                let at: Vec<String> = cut.iter().map(|(a, k)| format!("{a}:{k}")).collect();
                write!(f, "`{predicate}` holds (at {})", at.join(" "))
            }
        }
    }
}

/// One run that ended, as [`UntilFail::on_run`] is told.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Its number, from 1.
    pub run: u32,
    /// Runs ended so far, this one included.
    pub ended: u32,
    /// The root process's status.
    pub root_status: Option<ExitStatus>,
    /// Why it failed (`None`: it passed).
    pub failure: Option<Failure>,
}

/// The run that failed, kept.
#[derive(Debug, Clone)]
pub struct FailingRun {
    /// Its number, from 1.
    pub run: u32,
    /// Where its recording is (the directory asked for).
    pub dir: PathBuf,
    /// Why it failed.
    pub failure: Failure,
    /// The root process's status.
    pub root_status: Option<ExitStatus>,
    /// The exit code `ddbx record` gave that run (the program's own).
    pub run_exit_code: i32,
}

/// What [`Recorder::until_fail`] found.
#[derive(Debug, Clone)]
pub struct UntilFailOutcome {
    /// The failing run (`None`: none failed, or interrupted before one did).
    pub failing: Option<FailingRun>,
    /// Runs that ended by themselves (the failing one included).
    pub runs: u32,
    /// SIGINT or SIGTERM stopped the search (nothing is kept then, unless a run had failed).
    pub interrupted: Option<i32>,
    /// 0: a failing run was kept; [`crate::exit::NOT_FOUND`]: none failed; 130/143: interrupted.
    pub exit_code: i32,
    /// Time from the first run's start to the end.
    pub elapsed: Duration,
    /// Every `ddbx: …` line, in order.
    pub messages: Vec<String>,
}

impl Recorder {
    /// A recorder of `options.command`.
    pub fn new(options: RecordOptions) -> Recorder {
        Recorder { options }
    }

    /// Records the command once ([`record`](super::record())).
    pub fn record(self) -> Result<RecordOutcome, Error> {
        record(self.options)
    }

    /// Records the command until a run fails, at most `until.runs` times, `until.jobs` at
    /// once; keeps the failing run's recording in `options.out_dir` (or `ddbx-run-N`) and
    /// deletes the others.
    pub fn until_fail(self, until: UntilFail) -> Result<UntilFailOutcome, Error> {
        let options = self.options;
        check(&options, &until)?;
        let cwd = std::env::current_dir()
            .map_err(|e| Error::Internal(format!("cannot read the current directory: {e}")))?;
        let (out, created) = match &options.out_dir {
            Some(dir) => {
                let created = !dir.exists();
                prepare_empty_dir(dir, "-o")?;
                (dir.clone(), created)
            }
            None => (default_out_dir(&cwd)?, true),
        };
        let runs_dir = out.join(RUNS_DIR);
        private_dir(&runs_dir, "-o")?;
        let sink = open_sink(&options.messages)?;
        let jobs = until.jobs.min(until.runs);
        let mut search = Search::new(options, until, out, sink);
        let result = search.run(jobs);
        search.finish(result, created)
    }
}

/// Refuses what cannot work before any run: no program, a program that cannot be recorded,
/// bad counts, a malformed `fail_if`.
fn check(options: &RecordOptions, until: &UntilFail) -> Result<(), Error> {
    let Some(program) = options.command.first() else {
        return Err(Error::Usage(
            "expected a program to record after `--`, found nothing".into(),
        ));
    };
    if until.runs == 0 || until.jobs == 0 {
        return Err(Error::Usage(format!(
            "--runs and --jobs: expected at least 1, found {} and {}",
            until.runs, until.jobs
        )));
    }
    if until.jobs > 1 && until.ddbx.is_none() {
        return Err(Error::Usage(
            "jobs > 1 needs the ddbx binary (UntilFail::ddbx): each run at once is a `ddbx \
             record` process of its own, since a session reaps every child of its process"
                .into(),
        ));
    }
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Internal(format!("cannot read the current directory: {e}")))?;
    let env = session_env();
    refuse_unseen(&resolve_program(program, path_variable(&env), &cwd)?)?;
    if let Some(text) = &until.fail_if {
        check_fail_if(text)?;
    }
    Ok(())
}

/// Refuses a `--fail-if` that does not parse.
pub(super) fn check_fail_if(text: &str) -> Result<(), Error> {
    ddbx_supervisor::predicate::parse(text)
        .map(|_| ())
        .map_err(|e| Error::Usage(format!("--fail-if: {}", e.render(text))))
}

/// How one run ended, as the search needs it.
struct Ran {
    kind: OutcomeKind,
    exit_code: i32,
    root_status: Option<ExitStatus>,
    problem: Option<String>,
}

impl Ran {
    fn of(outcome: &RecordOutcome) -> Ran {
        Ran {
            kind: outcome.kind,
            exit_code: outcome.exit_code,
            root_status: outcome.root_status,
            problem: match &outcome.end {
                End::Unsupported {
                    actor: Some(actor),
                    what,
                } => Some(format!("unsupported in {actor}: {what}")),
                End::Unsupported { actor: None, what } => Some(format!("unsupported: {what}")),
                _ => None,
            },
        }
    }
}

/// What the search's loop waits for.
enum Message {
    /// Run `run` ended (or could not be made).
    Ended { run: u32, ran: Result<Ran, Error> },
    /// SIGINT or SIGTERM came.
    Signal(i32),
}

/// The first consistent state of the recording in `dir` where `text` holds, if any.
pub(super) fn fail_if_holds(dir: &Path, text: &str) -> Result<Option<Cut>, Error> {
    let recording = Recording::open(dir)?;
    let watch = Watch::new(&recording, text, "--fail-if")?;
    let search = CutSearch::new(recording);
    let floor = search.initial();
    Ok(search.first(watch.goal(), &floor))
}
