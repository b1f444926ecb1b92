//! The progress line of long work, on standard error when it is a terminal (never on standard
//! output, never with `--json`/`--json-lines`, never into a pipe or file).
//!
//! * `record` and `replay`: events done (of the recording's total, in a replay), actors alive,
//!   elapsed time; then the end-of-record work. Events done are read every 200 ms from the
//!   session's state directory (one file per actor, its events so far in the first 8 bytes);
//!   actors come from the session's events. The line is removed at the first halt (the
//!   prompt may open) and at the end.
//! * `races`, `view`: which step runs (loading, vector clocks, races, drawing) and the
//!   elapsed time.
//!
//! Drawn with indicatif, through [`crate::term`] so that ddbx's own lines step around it.

use crate::api::{Event, Observer};
use crate::term;
use ddbx_supervisor::session::SessionEvent;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How often the line is redrawn, and the events counted again.
const TICK: Duration = Duration::from_millis(200);
/// Work shorter than this shows no line (the program's own output, on the same terminal, is
/// left alone); `DDBX_PROGRESS_DELAY_MS` sets another delay (the tests use 0).
fn delay() -> Duration {
    let ms = std::env::var("DDBX_PROGRESS_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    Duration::from_millis(ms)
}

/// Whether a progress line may be shown: standard error is a terminal and the output is not
/// JSON.
pub fn wanted(json: bool) -> bool {
    !json && std::io::stderr().is_terminal()
}

/// A progress line as [`term`] sees it.
struct Line(ProgressBar);

impl term::ProgressLine for Line {
    fn suspend(&self, print: &mut dyn FnMut()) {
        self.0.suspend(print);
    }
}

/// Shows `bar` on standard error, registered with [`term`], unless it is finished already.
fn reveal(bar: &ProgressBar) {
    if bar.is_finished() {
        return;
    }
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(5));
    bar.enable_steady_tick(TICK);
    term::show_progress(Some(Box::new(Line(bar.clone()))));
}

/// A bar not drawn yet (see [`reveal`]).
fn hidden_bar(len: Option<u64>, template: &str) -> ProgressBar {
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .progress_chars("=> ");
    ProgressBar::with_draw_target(len, ProgressDrawTarget::hidden()).with_style(style)
}

/// Removes the bar from the terminal.
fn clear(bar: &ProgressBar) {
    term::show_progress(None);
    bar.finish_and_clear();
}

/// The progress of one record or replay.
struct RunProgress {
    verb: &'static str,
    bar: Mutex<Option<ProgressBar>>,
    alive: AtomicI64,
    done: Arc<AtomicBool>,
}

impl RunProgress {
    /// The bar, if it is still shown.
    fn bar(&self) -> Option<ProgressBar> {
        self.bar
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn on_event(&self, event: &Event<'_>) {
        match event {
            Event::Starting {
                state_dir,
                total_events,
            } => self.start(state_dir, *total_events),
            Event::Session(SessionEvent::ActorStarted { exec: false, .. }) => {
                self.alive.fetch_add(1, Ordering::Relaxed);
                self.say_alive();
            }
            Event::Session(SessionEvent::ActorExited { .. }) => {
                self.alive.fetch_sub(1, Ordering::Relaxed);
                self.say_alive();
            }
            Event::Session(SessionEvent::Finishing) => {
                if let Some(bar) = self.bar() {
                    bar.set_message(match self.verb {
                        "recording" => "writing the recording's end",
                        _ => "finishing",
                    });
                }
            }
            Event::Halted(_) => self.stop(),
            _ => {}
        }
    }

    fn say_alive(&self) {
        if let Some(bar) = self.bar() {
            let n = self.alive.load(Ordering::Relaxed).max(0);
            bar.set_message(format!("{n} actor{} alive", if n == 1 { "" } else { "s" }));
        }
    }

    /// Counts events from `state_dir` until the bar is removed, and shows it after [`delay`].
    fn start(&self, state_dir: &Path, total: Option<u64>) {
        let template = match total {
            Some(_) => format!(
                "{{spinner}} {} [{{bar:20}}] {{pos}}/{{len}} events, {{elapsed}}: {{wide_msg}}",
                self.verb
            ),
            None => format!(
                "{{spinner}} {} {{pos}} events, {{elapsed}}: {{wide_msg}}",
                self.verb
            ),
        };
        let bar = hidden_bar(total, &template).with_message("0 actors alive");
        *self.bar.lock().unwrap_or_else(PoisonError::into_inner) = Some(bar.clone());
        let dir = state_dir.to_path_buf();
        let done = Arc::clone(&self.done);
        let _ = std::thread::Builder::new()
            .name("ddbx-progress".into())
            .spawn(move || count_events(&dir, &bar, &done));
    }

    /// Removes the bar for good.
    fn stop(&self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(bar) = self
            .bar
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            clear(&bar);
        }
    }
}

/// Sums the events in `dir`'s state files every tick, until `done` or the bar is finished;
/// shows the bar after [`delay`].
fn count_events(dir: &PathBuf, bar: &ProgressBar, done: &AtomicBool) {
    let started = std::time::Instant::now();
    let delay = delay();
    let mut shown = false;
    while !done.load(Ordering::Relaxed) && !bar.is_finished() {
        if !shown && started.elapsed() >= delay {
            reveal(bar);
            shown = true;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            std::thread::sleep(TICK);
            continue;
        };
        let events: u64 = entries
            .flatten()
            .filter_map(|e| std::fs::read(e.path()).ok())
            .filter_map(|b| b.get(..8).and_then(|s| s.try_into().ok()))
            .map(u64::from_le_bytes)
            .sum();
        bar.set_position(events);
        std::thread::sleep(TICK);
    }
}

/// The progress of a record or replay, as an observer, and a guard that removes the line at
/// the end (`None` when no line is wanted).
pub fn for_run(verb: &'static str, wanted: bool) -> (Observer, Option<RunGuard>) {
    if !wanted {
        return (Observer::default(), None);
    }
    let progress = Arc::new(RunProgress {
        verb,
        bar: Mutex::new(None),
        alive: AtomicI64::new(0),
        done: Arc::new(AtomicBool::new(false)),
    });
    let observer = {
        let progress = Arc::clone(&progress);
        Observer::new(move |event| progress.on_event(event))
    };
    (observer, Some(RunGuard(progress)))
}

/// Removes a run's progress line when dropped.
pub struct RunGuard(Arc<RunProgress>);

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// A spinner naming the step of an offline analysis (`races`, `view`), removed when dropped.
pub struct Steps(Option<ProgressBar>);

impl Steps {
    /// A spinner for `what` (nothing when `wanted` is false).
    pub fn new(what: &str, wanted: bool) -> Steps {
        if !wanted {
            return Steps(None);
        }
        let bar = hidden_bar(
            None,
            &format!("{{spinner}} {what}, {{elapsed}}: {{wide_msg}}"),
        );
        let later = bar.clone();
        let _ = std::thread::Builder::new()
            .name("ddbx-progress".into())
            .spawn(move || {
                std::thread::sleep(delay());
                reveal(&later);
            });
        Steps(Some(bar))
    }

    /// Names the step that runs now.
    pub fn step(&self, message: impl Into<std::borrow::Cow<'static, str>>) {
        if let Some(bar) = &self.0 {
            bar.set_message(message);
        }
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            clear(bar);
        }
    }
}
