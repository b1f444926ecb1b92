//! A halting replay driven by the caller: the replay runs on a thread of its own and waits at
//! each halt until told how to go on.

use super::replay::{Driver, ReplayOptions, ReplayOutcome, debugger_for, replay_driven};
use crate::debugger::Debugger;
use crate::error::Error;
use crate::halt::Watch;
use ddbx_supervisor::Recording;
use ddbx_supervisor::session::{self, HaltAction, Resume};
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

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
/// Like [`replay`](crate::replay), it reaps with `waitpid(-1)`: run one at a time, and no
/// other children.
pub struct HaltingReplay {
    recording: Recording,
    halts: Receiver<session::HaltedState>,
    controls: Sender<Control>,
    thread: Option<JoinHandle<Result<ReplayOutcome, Error>>>,
    waiting: bool,
}

impl HaltingReplay {
    /// Starts replaying `options.dir` with its predicates (`stop_if`, `stop_at`, `traces`).
    pub fn start(options: ReplayOptions) -> Result<HaltingReplay, Error> {
        let recording = Recording::open(&options.dir)?;
        // The predicates are checked here, so that a mistake is an error of `start`.
        debugger_for(&recording, &options)?;
        let (halt_tx, halts) = std::sync::mpsc::channel();
        let (controls, control_rx) = std::sync::mpsc::channel::<Control>();
        let driver: Driver = Box::new(move |state, debugger| {
            if halt_tx.send(state.clone()).is_err() {
                return HaltAction::Kill;
            }
            match control_rx.recv() {
                Ok(control) => obey(control, debugger),
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
        let w = Watch::new(&self.recording, predicate, "stop_if")?;
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
        match thread.map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Err(Error::Internal("the replay thread panicked".into())),
        }
    }
}

/// What the replay thread does with the caller's `control` at a halt.
fn obey(control: Control, debugger: &mut Debugger) -> HaltAction {
    let resume: Result<Resume, String> = match control {
        Control::Cont => debugger.cont(),
        Control::StopIf(text) => match debugger.add_stop_if(&text) {
            Ok(_) => debugger.cont(),
            Err(e) => Err(e.to_string()),
        },
        Control::Kill => return HaltAction::Kill,
    };
    match resume {
        Ok(resume) => HaltAction::Resume(resume),
        // Cannot go on that way (checked before sending): end here.
        Err(_) => HaltAction::Kill,
    }
}
