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

use super::record::{default_out_dir, refuse_static, session_env};
use super::{
    Messages, OutcomeKind, RecordOptions, RecordOutcome, Sink, open_sink, path_variable,
    prepare_empty_dir, private_dir, record, resolve_program,
};
use crate::error::Error;
use crate::exit;
use crate::halt::Watch;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::cut::CutSearch;
use ddbx_supervisor::analysis::inf::Cut;
use ddbx_supervisor::session::End;
use ddbx_supervisor::session::procs::{self, StopSignalReader};
use ddbx_supervisor::wire::manifest::ExitStatus;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

/// How many runs `--until-fail` makes at most when `--runs` is not given.
pub const DEFAULT_RUNS: u32 = 100;

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
    /// 0: a failing run was kept; [`exit::NOT_FOUND`]: none failed; 130/143: interrupted.
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
        let mut search = Search {
            options,
            until,
            out,
            runs_dir,
            sink,
            messages: Vec::new(),
            in_flight: BTreeMap::new(),
            started: Instant::now(),
        };
        let jobs = search.until.jobs.min(search.until.runs);
        search.say(format!(
            "ddbx: recording `{}` until a run fails (at most {} runs, {jobs} at a time) into {}",
            search.options.command.join(" "),
            search.until.runs,
            search.out.display()
        ));
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
    refuse_static(&resolve_program(program, path_variable(&env), &cwd)?)?;
    if let Some(text) = &until.fail_if {
        ddbx_supervisor::predicate::parse(text)
            .map_err(|e| Error::Usage(format!("--fail-if: {}", e.render(text))))?;
    }
    Ok(())
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

/// A search in progress.
struct Search {
    options: RecordOptions,
    until: UntilFail,
    out: PathBuf,
    runs_dir: PathBuf,
    sink: Sink,
    messages: Vec<String>,
    /// Runs in progress in `ddbx record` processes: their pids.
    in_flight: BTreeMap<u32, i32>,
    started: Instant,
}

/// Where the search stands when its loop ends.
struct Found {
    failing: Option<(u32, Failure, Ran)>,
    ended: u32,
    interrupted: Option<i32>,
}

impl Search {
    fn say(&mut self, line: String) {
        (self.sink)(&line);
        self.messages.push(line);
    }

    fn run_dir(&self, run: u32) -> PathBuf {
        self.runs_dir.join(format!("run-{run}"))
    }

    /// Runs until one fails, all `runs` have ended, or a signal or an error stops it.
    fn run(&mut self, jobs: u32) -> Result<Found, Error> {
        let (tx, rx) = channel();
        let signals = match (&self.until.ddbx, self.options.handle_signals) {
            (Some(_), true) => Some(SignalThread::start(tx.clone())?),
            _ => None,
        };
        let result = self.run_loop(jobs, &tx, &rx);
        if let Some(signals) = signals {
            signals.stop();
        }
        result
    }

    fn run_loop(
        &mut self,
        jobs: u32,
        tx: &Sender<Message>,
        rx: &Receiver<Message>,
    ) -> Result<Found, Error> {
        let mut found = Found {
            failing: None,
            ended: 0,
            interrupted: None,
        };
        let mut error: Option<Error> = None;
        let mut next = 1;
        loop {
            let stopping =
                found.failing.is_some() || found.interrupted.is_some() || error.is_some();
            while !stopping && (self.in_flight.len() as u32) < jobs && next <= self.until.runs {
                if let Err(e) = self.launch(next, tx) {
                    error = Some(e);
                    self.stop_all();
                    break;
                }
                next += 1;
            }
            let Some(message) = (if self.in_flight.is_empty() {
                rx.try_recv().ok()
            } else {
                rx.recv().ok()
            }) else {
                break;
            };
            match message {
                Message::Signal(signal) => {
                    found.interrupted.get_or_insert(signal);
                    self.stop_all();
                }
                Message::Ended { run, ran } => {
                    self.in_flight.remove(&run);
                    let stopping =
                        found.failing.is_some() || found.interrupted.is_some() || error.is_some();
                    if stopping {
                        self.remove_run(run);
                        continue;
                    }
                    match ran.and_then(|ran| self.judge(run, ran)) {
                        Ok(Judged::Passed(ran)) => {
                            found.ended += 1;
                            self.remove_run(run);
                            self.report(run, found.ended, &ran, None);
                        }
                        Ok(Judged::Failed(failure, ran)) => {
                            found.ended += 1;
                            self.report(run, found.ended, &ran, Some(failure.clone()));
                            found.failing = Some((run, failure, ran));
                            self.stop_all();
                        }
                        Ok(Judged::Interrupted(signal)) => {
                            found.interrupted.get_or_insert(signal);
                            self.remove_run(run);
                            self.stop_all();
                        }
                        Err(e) => {
                            error = Some(e);
                            self.remove_run(run);
                            self.stop_all();
                        }
                    }
                }
            }
            if self.in_flight.is_empty() && (stopping_now(&found, &error) || next > self.until.runs)
            {
                // Nothing runs and nothing more will: a signal that came meanwhile is still
                // taken (try_recv above), then the loop ends.
                if let Ok(Message::Signal(signal)) = rx.try_recv() {
                    found.interrupted.get_or_insert(signal);
                }
                break;
            }
        }
        match error {
            Some(e) if found.failing.is_none() => Err(e),
            _ => Ok(found),
        }
    }

    /// Tells the observer of one run that ended.
    fn report(&self, run: u32, ended: u32, ran: &Ran, failure: Option<Failure>) {
        if let Some(on_run) = &self.until.on_run {
            on_run(&RunReport {
                run,
                ended,
                root_status: ran.root_status,
                failure,
            });
        }
    }

    /// Starts run `run`: in this process (it has ended when this returns, its message sent),
    /// or as a `ddbx record` process whose end a thread of its own sends.
    fn launch(&mut self, run: u32, tx: &Sender<Message>) -> Result<(), Error> {
        let dir = self.run_dir(run);
        match self.until.ddbx.clone() {
            None => {
                let ran = record(RecordOptions {
                    command: self.options.command.clone(),
                    out_dir: Some(dir),
                    messages: Messages::Quiet,
                    handle_signals: self.options.handle_signals,
                    observer: Default::default(),
                    env_exclude: self.options.env_exclude.clone(),
                })
                .map(|outcome| Ran::of(&outcome));
                let _ = tx.send(Message::Ended { run, ran });
                self.in_flight.insert(run, 0);
            }
            Some(ddbx) => {
                let pid = worker::spawn(&ddbx, &self.options, &dir, run, tx.clone())?;
                self.in_flight.insert(run, pid);
            }
        }
        Ok(())
    }

    /// Stops every run in progress (SIGTERM to its `ddbx record`, which stops its processes).
    fn stop_all(&self) {
        for &pid in self.in_flight.values() {
            if pid > 0 {
                procs::signal(pid, libc::SIGTERM);
            }
        }
    }

    fn remove_run(&self, run: u32) {
        let dir = self.run_dir(run);
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_file(dir.with_extension("json"));
    }

    /// Whether run `run` failed.
    fn judge(&self, run: u32, ran: Ran) -> Result<Judged, Error> {
        match ran.kind {
            OutcomeKind::Complete => {}
            OutcomeKind::Interrupted => {
                let signal = ran.exit_code - 128;
                return Ok(Judged::Interrupted(signal));
            }
            OutcomeKind::Unsupported => {
                return Err(Error::Unsupported(format!(
                    "run {run}: {}",
                    ran.problem
                        .as_deref()
                        .unwrap_or("the program did something ddbx cannot record")
                )));
            }
            other => {
                return Err(Error::Internal(format!(
                    "run {run}: the record ended as `{}`",
                    other.as_str()
                )));
            }
        }
        match ran.root_status {
            Some(ExitStatus::Exited(code)) if code != 0 => {
                return Ok(Judged::Failed(Failure::Exit(code), ran));
            }
            Some(ExitStatus::Signaled(sig)) => {
                return Ok(Judged::Failed(Failure::Signal(sig), ran));
            }
            _ => {}
        }
        let Some(text) = &self.until.fail_if else {
            return Ok(Judged::Passed(ran));
        };
        match fail_if_holds(&self.run_dir(run), text)? {
            Some(cut) => Ok(Judged::Failed(
                Failure::FailIf {
                    predicate: text.clone(),
                    cut,
                },
                ran,
            )),
            None => Ok(Judged::Passed(ran)),
        }
    }

    /// Keeps the failing run (or cleans up) and makes the outcome.
    fn finish(
        mut self,
        result: Result<Found, Error>,
        created: bool,
    ) -> Result<UntilFailOutcome, Error> {
        let elapsed = self.started.elapsed();
        let found = match result {
            Ok(found) => found,
            Err(e) => {
                self.remove_all(created);
                return Err(e);
            }
        };
        let seconds = format!("{:.1} s", elapsed.as_secs_f64());
        if let Some((run, failure, ran)) = found.failing {
            let kept = self.keep(run);
            self.remove_all(false);
            kept?;
            self.say(format!(
                "ddbx: run {run} of {} failed: {failure} ({} passed before it, {seconds})",
                self.until.runs,
                found.ended - 1
            ));
            self.say(format!(
                "ddbx: its recording is in {}; replay it with: ddbx replay {}",
                self.out.display(),
                self.out.display()
            ));
            return Ok(UntilFailOutcome {
                failing: Some(FailingRun {
                    run,
                    dir: self.out.clone(),
                    failure,
                    root_status: ran.root_status,
                    run_exit_code: ran.exit_code,
                }),
                runs: found.ended,
                interrupted: found.interrupted,
                exit_code: 0,
                elapsed,
                messages: self.messages,
            });
        }
        self.remove_all(created);
        let exit_code = match found.interrupted {
            Some(signal) => {
                self.say(format!(
                    "ddbx: interrupted after {} runs ({seconds}): the runs in progress were \
                     stopped and no recording was kept",
                    found.ended
                ));
                exit::interrupted(signal)
            }
            None => {
                self.say(format!(
                    "ddbx: no run failed in {} runs ({seconds}); no recording was kept",
                    found.ended
                ));
                exit::NOT_FOUND
            }
        };
        Ok(UntilFailOutcome {
            failing: None,
            runs: found.ended,
            interrupted: found.interrupted,
            exit_code,
            elapsed,
            messages: self.messages,
        })
    }

    /// Moves run `run`'s files up into the output directory.
    fn keep(&self, run: u32) -> Result<(), Error> {
        let from = self.run_dir(run);
        let entries = std::fs::read_dir(&from)
            .map_err(|e| Error::Internal(format!("cannot read {}: {e}", from.display())))?;
        for entry in entries.flatten() {
            let to = self.out.join(entry.file_name());
            std::fs::rename(entry.path(), &to).map_err(|e| {
                Error::Internal(format!(
                    "cannot move {} to {}: {e}",
                    entry.path().display(),
                    to.display()
                ))
            })?;
        }
        Ok(())
    }

    /// Removes the runs' directory, and the output directory too if this search made it and
    /// nothing else is in it.
    fn remove_all(&self, created: bool) {
        let _ = std::fs::remove_dir_all(&self.runs_dir);
        if created {
            let _ = std::fs::remove_dir(&self.out);
        }
    }
}

/// Whether the loop has a reason to stop launching runs.
fn stopping_now(found: &Found, error: &Option<Error>) -> bool {
    found.failing.is_some() || found.interrupted.is_some() || error.is_some()
}

/// What one run was.
enum Judged {
    Passed(Ran),
    Failed(Failure, Ran),
    Interrupted(i32),
}

/// The first consistent state of the recording in `dir` where `text` holds, if any.
fn fail_if_holds(dir: &Path, text: &str) -> Result<Option<Cut>, Error> {
    let recording = Recording::open(dir)?;
    let watch = Watch::new(&recording, text, "--fail-if")?;
    let search = CutSearch::new(recording);
    let floor = search.initial();
    Ok(search.first(watch.goal(), &floor))
}

/// The thread that turns SIGINT and SIGTERM into [`Message::Signal`] while runs are `ddbx
/// record` processes (a run in this process has its session's own signal handling).
struct SignalThread {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
    old_mask: nix::sys::signal::SigSet,
}

impl SignalThread {
    fn start(tx: Sender<Message>) -> Result<SignalThread, Error> {
        let io = |e: std::io::Error| Error::Internal(format!("cannot read SIGINT/SIGTERM: {e}"));
        let old_mask = procs::block_stop_signals().map_err(io)?;
        let reader = StopSignalReader::open().map_err(io)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("ddbx-until-fail-signals".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    if let Some(signal) = reader.wait(Duration::from_millis(100)) {
                        let _ = tx.send(Message::Signal(signal));
                    }
                }
            })
            .map_err(io)?;
        Ok(SignalThread {
            stop,
            thread,
            old_mask,
        })
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        procs::restore_mask(&self.old_mask);
    }
}

/// Runs as `ddbx record` processes.
mod worker {
    use super::{Message, Ran};
    use crate::api::{OutcomeKind, RecordOptions};
    use crate::error::Error;
    use ddbx_supervisor::wire::manifest::ExitStatus;
    use std::os::unix::process::CommandExt;
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::sync::mpsc::Sender;

    /// Starts `ddbx record --json` of the command into `dir`; a thread sends its end. Returns
    /// its pid.
    pub(super) fn spawn(
        ddbx: &Path,
        options: &RecordOptions,
        dir: &Path,
        run: u32,
        tx: Sender<Message>,
    ) -> Result<i32, Error> {
        let json = dir.with_extension("json");
        let mut command = Command::new(ddbx);
        command
            .arg("record")
            .arg("--json")
            .arg("--messages")
            .arg(&json)
            .arg("-o")
            .arg(dir);
        if std::env::var(ddbx_supervisor::wire::env::TRACE).as_deref() == Ok("optimal") {
            command.args(["--trace", "optimal"]);
        }
        for pattern in &options.env_exclude {
            command.arg("--env-exclude").arg(pattern);
        }
        command.arg("--").args(&options.command);
        command.stdin(Stdio::null());
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        // The run is stopped if this process dies: it would be nobody's any more.
        unsafe {
            command.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)
                    .map_err(std::io::Error::from)
            });
        }
        let mut child = command.spawn().map_err(|e| {
            Error::Internal(format!(
                "cannot start {} for run {run}: {e}",
                ddbx.display()
            ))
        })?;
        let pid = child.id() as i32;
        let name = format!("ddbx-run-{run}");
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            let status = child.wait();
            let ran = read_outcome(&json).ok_or_else(|| {
                Error::Internal(format!(
                    "run {run}: `ddbx record` ended ({}) without writing its outcome to {}",
                    status.map_or_else(|e| e.to_string(), |s| s.to_string()),
                    json.display()
                ))
            });
            let _ = tx.send(Message::Ended { run, ran });
        });
        spawned.map_err(|e| Error::Internal(format!("cannot start a thread: {e}")))?;
        Ok(pid)
    }

    /// The end of a run from its `--json` object.
    fn read_outcome(json: &Path) -> Option<Ran> {
        let text = std::fs::read_to_string(json).ok()?;
        let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
        let kind = match value.get("outcome")?.as_str()? {
            "complete" => OutcomeKind::Complete,
            "unsupported" => OutcomeKind::Unsupported,
            "interrupted" => OutcomeKind::Interrupted,
            _ => return None,
        };
        let root_status = value
            .get("root_status")
            .and_then(|s| s.as_str())
            .and_then(parse_status);
        Some(Ran {
            kind,
            exit_code: value.get("exit_code")?.as_i64()? as i32,
            root_status,
            problem: value
                .get("problem")
                .and_then(|p| p.as_str())
                .map(str::to_string),
        })
    }

    /// `exit 3` or `signal 6`, as [`ExitStatus`] shows itself.
    fn parse_status(text: &str) -> Option<ExitStatus> {
        let (word, n) = text.split_once(' ')?;
        let n = n.parse().ok()?;
        match word {
            "exit" => Some(ExitStatus::Exited(n)),
            "signal" => Some(ExitStatus::Signaled(n)),
            _ => None,
        }
    }
}
