//! The search itself: runs started up to `jobs` at a time, each judged when it ends, the
//! failing one kept and the rest removed; SIGINT and SIGTERM read by a thread of their own.

use super::{
    FailingRun, Failure, Message, RUNS_DIR, Ran, RunReport, UntilFail, UntilFailOutcome,
    fail_if_holds, worker,
};
use crate::api::{Messages, OutcomeKind, RecordOptions, Sink, record};
use crate::error::Error;
use crate::exit;
use ddbx_supervisor::session::procs::{self, StopSignalReader};
use ddbx_supervisor::wire::manifest::ExitStatus;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

/// A search in progress.
pub(super) struct Search {
    options: RecordOptions,
    until: UntilFail,
    out: PathBuf,
    runs_dir: PathBuf,
    sink: Sink,
    messages: Vec<String>,
    /// Runs in progress in `ddbx record` processes: their pids.
    in_flight: BTreeMap<u32, i32>,
    started: Instant,
    /// The SIGINT or SIGTERM the signal thread read (0: none yet).
    signalled: Arc<AtomicI32>,
}

/// Where the search stands when its loop ends.
pub(super) struct Found {
    failing: Option<(u32, Failure, Ran)>,
    ended: u32,
    interrupted: Option<i32>,
}

impl Search {
    /// A search of `until` for `options.command`, kept in `out`; its first line said.
    pub(super) fn new(
        options: RecordOptions,
        until: UntilFail,
        out: PathBuf,
        sink: Sink,
    ) -> Search {
        let runs_dir = out.join(RUNS_DIR);
        let mut search = Search {
            options,
            until,
            out,
            runs_dir,
            sink,
            messages: Vec::new(),
            in_flight: BTreeMap::new(),
            started: Instant::now(),
            signalled: Arc::new(AtomicI32::new(0)),
        };
        search.say(format!(
            "ddbx: recording `{}` until a run fails (at most {} runs, {} at a time) into {}",
            search.options.command.join(" "),
            search.until.runs,
            search.until.jobs.min(search.until.runs),
            search.out.display()
        ));
        search
    }

    fn say(&mut self, line: String) {
        (self.sink)(&line);
        self.messages.push(line);
    }

    fn run_dir(&self, run: u32) -> PathBuf {
        self.runs_dir.join(format!("run-{run}"))
    }

    /// Runs until one fails, all `runs` have ended, or a signal or an error stops it.
    pub(super) fn run(&mut self, jobs: u32) -> Result<Found, Error> {
        let (tx, rx) = channel();
        let signals = match (&self.until.ddbx, self.options.handle_signals) {
            (Some(_), true) => Some(SignalThread::start(tx.clone(), &self.signalled)?),
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
                    // A ^C reaches the program's processes as well as ddbx: a run that ended
                    // then may have died of it, which is no failure of its own.
                    if let Some(signal) = self.interrupt_seen() {
                        found.interrupted.get_or_insert(signal);
                        self.stop_all();
                    }
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

    /// SIGINT or SIGTERM sent to ddbx, read by the signal thread or still pending (it is sent
    /// to a process group at once, so it is pending here when a run dies of it).
    fn interrupt_seen(&self) -> Option<i32> {
        match self.signalled.load(Ordering::Relaxed) {
            0 => procs::pending_stop_signal(),
            signal => Some(signal),
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
    pub(super) fn finish(
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

/// The thread that turns SIGINT and SIGTERM into [`Message::Signal`] while runs are `ddbx
/// record` processes (a run in this process has its session's own signal handling).
struct SignalThread {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
    old_mask: nix::sys::signal::SigSet,
}

impl SignalThread {
    fn start(tx: Sender<Message>, signalled: &Arc<AtomicI32>) -> Result<SignalThread, Error> {
        let io = |e: std::io::Error| Error::Internal(format!("cannot read SIGINT/SIGTERM: {e}"));
        let old_mask = procs::block_stop_signals().map_err(io)?;
        let reader = StopSignalReader::open().map_err(io)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let signalled = Arc::clone(signalled);
        let thread = std::thread::Builder::new()
            .name("ddbx-until-fail-signals".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    if let Some(signal) = reader.wait(Duration::from_millis(100)) {
                        signalled.store(signal, Ordering::Relaxed);
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
