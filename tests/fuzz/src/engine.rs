//! Running a target on many inputs: each execution in a worker thread under
//! [`std::panic::catch_unwind`], with a time budget after which the input is a hang; findings
//! minimised; the inputs that gave a new outcome kept as parents of later ones.
//!
//! A stack overflow or a failed allocation aborts the process (Rust cannot unwind from them):
//! [`dump_input_on_abort`] makes the abort write the input that caused it to a file first.

use crate::mutate::Mutator;
use crate::rng::Rng;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

/// A target as the engine sees it: input to outcome, panicking on a bug.
pub type Run = Arc<dyn Fn(&[u8]) -> String + Send + Sync>;

/// The stack of a worker thread: what a thread spawned by ddbx gets by default, less than its
/// main thread's 8 MiB.
const STACK: usize = 2 << 20;

/// The most inputs kept as parents (the corpus, then inputs with new outcomes).
const POOL: usize = 4096;

/// What one execution did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exec {
    /// It returned this outcome.
    Done(String),
    /// It panicked: the message and where.
    Crash(String),
    /// It did not finish within the budget.
    Hang,
}

thread_local! {
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The input being run (for [`dump_input_on_abort`]).
static CURRENT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static CURRENT_LEN: AtomicUsize = AtomicUsize::new(0);

/// Panics in workers are recorded for the report, not printed; other threads' as before.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_WORKER.get() {
                return previous(info);
            }
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            let at = info
                .location()
                .map_or_else(String::new, |l| format!("{}:{}", l.file(), l.line()));
            LAST_PANIC.set(Some(format!("panicked at {at}: {message}")));
        }));
    });
}

/// A thread that runs inputs sent to it, one at a time.
struct Worker {
    inputs: Sender<Vec<u8>>,
    results: Receiver<Result<String, String>>,
}

impl Worker {
    fn start(run: &Run) -> Worker {
        install_panic_hook();
        let (inputs, rx) = channel::<Vec<u8>>();
        let (tx, results) = channel();
        let run = run.clone();
        std::thread::Builder::new()
            .name("fuzz-worker".into())
            .stack_size(STACK)
            .spawn(move || {
                IN_WORKER.set(true);
                for input in rx {
                    CURRENT_LEN.store(input.len(), Ordering::SeqCst);
                    CURRENT.store(input.as_ptr().cast_mut(), Ordering::SeqCst);
                    let result = catch_unwind(AssertUnwindSafe(|| run(&input)))
                        .map_err(|_| LAST_PANIC.take().unwrap_or_else(|| "a panic".into()));
                    CURRENT.store(std::ptr::null_mut(), Ordering::SeqCst);
                    if tx.send(result).is_err() {
                        break;
                    }
                }
            })
            .unwrap_or_else(|e| panic!("cannot start a fuzz worker: {e}"));
        Worker { inputs, results }
    }

    /// Runs `input`; a worker that overran its budget is left behind (its input is reported)
    /// and replaced.
    fn exec(&mut self, run: &Run, input: &[u8], budget: Duration) -> Exec {
        if self.inputs.send(input.to_vec()).is_err() {
            *self = Worker::start(run);
            return Exec::Crash("the worker thread died".into());
        }
        match self.results.recv_timeout(budget) {
            Ok(Ok(outcome)) => Exec::Done(outcome),
            Ok(Err(panic)) => Exec::Crash(panic),
            Err(RecvTimeoutError::Timeout) => {
                *self = Worker::start(run);
                Exec::Hang
            }
            Err(RecvTimeoutError::Disconnected) => {
                *self = Worker::start(run);
                Exec::Crash("the worker thread died".into())
            }
        }
    }
}

/// What a run looks for and how.
pub struct Config {
    /// The target's name, for reports and file names.
    pub name: String,
    /// The target.
    pub run: Run,
    /// Its mutations.
    pub mutator: Mutator,
    /// The PRNG's seed.
    pub seed: u64,
    /// How many executions (the corpus entries first, as they are).
    pub execs: u64,
    /// An execution that takes longer is a hang.
    pub budget: Duration,
    /// The corpus.
    pub corpus: Vec<Vec<u8>>,
    /// Where findings are written (minimised), if anywhere.
    pub save: Option<PathBuf>,
    /// Print a line every this many executions (0: never).
    pub progress: u64,
}

/// An input that crashed or hung.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The panic (`panicked at FILE:LINE: …`), or `hang`.
    pub what: String,
    /// The input as found.
    pub input: Vec<u8>,
    /// The smallest input found that does the same.
    pub minimised: Vec<u8>,
    /// Where it was saved.
    pub saved: Option<PathBuf>,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Report {
    /// Executions.
    pub execs: u64,
    /// How long they took.
    pub elapsed: Duration,
    /// Each distinct outcome and how often it came.
    pub outcomes: BTreeMap<String, u64>,
    /// Distinct crashes (one per panic site).
    pub crashes: Vec<Finding>,
    /// Hangs.
    pub hangs: Vec<Finding>,
    /// The slowest execution.
    pub slowest: Duration,
    /// Executions that overran the budget but finished within 5 times it (not hangs).
    pub slow: u64,
}

impl Report {
    /// One line: executions, time, outcomes, crashes, hangs.
    pub fn summary(&self, name: &str, seed: u64) -> String {
        let secs = self.elapsed.as_secs_f64();
        format!(
            "{name}: {} executions, seed {seed}, {secs:.1} s ({:.0}/s, slowest {} ms, {} over the budget but finished), {} distinct outcomes, {} crashes, {} hangs",
            self.execs,
            self.execs as f64 / secs.max(1e-9),
            self.slowest.as_millis(),
            self.slow,
            self.outcomes.len(),
            self.crashes.len(),
            self.hangs.len()
        )
    }
}

/// Runs `config`: the corpus entries, then mutated inputs, `config.execs` in all.
pub fn fuzz(config: &Config) -> Report {
    let mut worker = Worker::start(&config.run);
    let mut rng = Rng::new(config.seed);
    let mut pool: Vec<Vec<u8>> = config.corpus.clone();
    if pool.is_empty() {
        pool.push(Vec::new());
    }
    let mut report = Report::default();
    let started = Instant::now();
    for i in 0..config.execs {
        // Half the parents come from the corpus itself: the inputs with new outcomes are
        // mostly broken early (a bad header), and would otherwise crowd out whole files.
        let parents = if config.corpus.is_empty() || rng.one_in(2) {
            &pool
        } else {
            &config.corpus
        };
        let input = match config.corpus.get(i as usize) {
            Some(entry) => entry.clone(),
            None => config.mutator.mutate(&mut rng, parents),
        };
        let t = Instant::now();
        let exec = worker.exec(&config.run, &input, config.budget);
        report.slowest = report.slowest.max(t.elapsed());
        report.execs += 1;
        match exec {
            Exec::Done(outcome) => {
                let seen = report.outcomes.entry(outcome).or_insert(0);
                *seen += 1;
                if *seen == 1 && pool.len() < POOL {
                    pool.push(input);
                }
            }
            Exec::Crash(what) => {
                let at = site(&what);
                if !report.crashes.iter().any(|c| site(&c.what) == at) {
                    let f = finding(config, &mut worker, what, input, 4000);
                    report.crashes.push(f);
                }
            }
            // A hang is confirmed with 5 times the budget: on a loaded machine a slow input
            // (a 1 MiB one) can overrun the budget without hanging.
            Exec::Hang
                if !matches!(
                    worker.exec(&config.run, &input, 5 * config.budget),
                    Exec::Hang
                ) =>
            {
                report.slow += 1;
            }
            Exec::Hang => {
                // Each try costs a whole budget: the first hangs are minimised, all are kept.
                let tries = if report.hangs.len() < 3 { 12 } else { 0 };
                let f = finding(config, &mut worker, "hang".into(), input, tries);
                report.hangs.push(f);
            }
        }
        if config.progress > 0 && (i + 1) % config.progress == 0 {
            eprintln!(
                "  {}: {} executions, {} outcomes, {} crashes, {} hangs, {:.0} s",
                config.name,
                i + 1,
                report.outcomes.len(),
                report.crashes.len(),
                report.hangs.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    report.elapsed = started.elapsed();
    report
}

/// Runs every input once: what a corpus replay does. Returns the inputs that crashed or hung.
pub fn replay(run: &Run, inputs: &[(PathBuf, Vec<u8>)], budget: Duration) -> Vec<String> {
    let mut worker = Worker::start(run);
    let mut bad = Vec::new();
    for (path, input) in inputs {
        match worker.exec(run, input, budget) {
            Exec::Done(_) => {}
            Exec::Crash(what) => bad.push(format!("{}: {what}", path.display())),
            Exec::Hang => bad.push(format!("{}: no answer within {budget:?}", path.display())),
        }
    }
    bad
}

/// The place a panic message names (`panicked at FILE:LINE`), which identifies the bug.
fn site(what: &str) -> &str {
    what.split(": ").next().unwrap_or(what)
}

/// A finding, minimised (at most `tries` executions) and saved.
fn finding(
    config: &Config,
    worker: &mut Worker,
    what: String,
    input: Vec<u8>,
    tries: usize,
) -> Finding {
    let same = |e: &Exec| match e {
        Exec::Crash(w) => site(w) == site(&what),
        Exec::Hang => what == "hang",
        Exec::Done(_) => false,
    };
    let minimised = minimise(&input, tries, |candidate| {
        same(&worker.exec(&config.run, candidate, config.budget))
    });
    let saved = config.save.as_ref().and_then(|dir| {
        let path = dir.join(format!("regress-{:016x}", fnv(&minimised)));
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&path, &minimised))
            .map(|()| path)
            .ok()
    });
    Finding {
        what,
        input,
        minimised,
        saved,
    }
}

/// Removes chunks of `input` (halves, quarters, … single bytes) as long as `still` holds, in at
/// most `tries` attempts.
pub fn minimise(input: &[u8], tries: usize, mut still: impl FnMut(&[u8]) -> bool) -> Vec<u8> {
    let mut best = input.to_vec();
    let mut left = tries;
    let mut chunk = (best.len() / 2).max(1);
    while left > 0 && !best.is_empty() {
        let mut removed = false;
        let mut at = 0;
        while at < best.len() && left > 0 {
            let end = (at + chunk).min(best.len());
            let mut candidate = best[..at].to_vec();
            candidate.extend_from_slice(&best[end..]);
            left -= 1;
            if still(&candidate) {
                best = candidate;
                removed = true;
            } else {
                at += chunk;
            }
        }
        if chunk > 1 {
            chunk /= 2;
        } else if !removed {
            break;
        }
    }
    best
}

/// FNV-1a, for file names of findings.
pub fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Where [`dump_input_on_abort`] writes, as a C string.
static DUMP_PATH: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();

/// On SIGABRT (a stack overflow or a failed allocation in a worker, which Rust cannot unwind),
/// writes the input being run to `path` before the process dies.
pub fn dump_input_on_abort(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    if DUMP_PATH.set(c).is_err() {
        return;
    }
    extern "C" fn on_abort(_: libc::c_int) {
        let ptr = CURRENT.load(Ordering::SeqCst);
        let Some(path) = DUMP_PATH.get() else { return };
        if ptr.is_null() {
            return;
        }
        let len = CURRENT_LEN.load(Ordering::SeqCst);
        const NOTE: &[u8] =
            b"ddbx-fuzz: aborted while running an input; it is saved in the dump file\n";
        // SAFETY: open, write and close are async-signal-safe; `path` is a valid C string that
        // lives for the whole program; `ptr..ptr+len` is the input the worker is running, which
        // it owns until it clears CURRENT after the run (it cannot, as this handler runs in the
        // aborting worker or while it is stuck).
        unsafe {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
                0o644,
            );
            if fd >= 0 {
                libc::write(fd, ptr.cast(), len);
                libc::close(fd);
            }
            libc::write(2, NOTE.as_ptr().cast(), NOTE.len());
        }
    }
    // SAFETY: installs a handler that only makes async-signal-safe calls (above).
    unsafe {
        libc::signal(
            libc::SIGABRT,
            on_abort as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimise_keeps_what_matters() {
        let input = b"aaaa(bbbb)cccc".to_vec();
        let small = minimise(&input, 1000, |c| c.contains(&b'(') && c.contains(&b')'));
        assert_eq!(small, b"()");
    }
}
