//! The session's main loop: it hears every [`MainEvent`] and decides how the session goes on,
//! until every descendant is gone. It owns the decision to stop (a divergence, an unsupported
//! call, a signal, a halt), kills the process tree when it stops, and runs the embedding's
//! halt callback at each halt.

use super::OnHalt;
use super::events::{MainEvent, SessionEvent};
use super::gd_state::{CollectedHalt, GdState};
use super::halted::{HaltAction, HaltedState};
use super::outcome::{Divergence, End};
use super::procs;
use super::transcript::Transcript;
use ddbx_wire::manifest::ExitStatus;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long the processes sent their recorded fatal signal at the end get to die of it.
const SIGNAL_GRACE: Duration = Duration::from_secs(1);
/// How long a stopping session waits before killing again (processes forked meanwhile).
const KILL_AGAIN: Duration = Duration::from_millis(50);
/// How long a halting replay may stand still before its requests are sent again.
const HALTING_TICK: Duration = Duration::from_secs(1);
/// How long a divergence waits for the reaper to report a kill that caused it.
const CAUSE_GRACE: Duration = Duration::from_millis(200);
/// How long the halted actors have to answer `Report`.
const REPORT_LIMIT: Duration = Duration::from_secs(10);
/// Quiet ticks a process that runs past its last event, holding the signal that killed the
/// record's, is let compute before it is woken to die of it (`MainLoop::wake_held_ends`).
const RUNNING_PATIENCE: u32 = 15;

/// How the main loop ended.
pub(super) struct LoopEnd {
    /// Why the session stopped early (`None`: it ran to its end).
    pub(super) stop: Option<End>,
    /// The root's status, if it was reaped.
    pub(super) root_status: Option<ExitStatus>,
    /// The signal that ended a held halt (`--hold` ends when ddbx is interrupted).
    pub(super) held_until: Option<i32>,
    /// waitpid failed in an unexpected way.
    pub(super) reap_error: Option<std::io::Error>,
    /// The processes whose exit the embedding was told of.
    pub(super) exits_announced: HashSet<i32>,
    /// The channel, with what the threads sent after the loop stopped reading (kept open, so
    /// that nothing sent before the threads are gone is lost).
    pub(super) events: Receiver<MainEvent>,
}

/// What the main loop needs, and what it has decided so far.
pub(super) struct MainLoop<'a> {
    gd: &'a GdState,
    events: Receiver<MainEvent>,
    root_pid: i32,
    on_halt: Option<OnHalt>,
    /// After halting, without a callback: keep the processes alive until interrupted.
    hold: bool,
    transcript: &'a mut Transcript,
    stop: Option<End>,
    /// Held at a halt (`--hold`) until a signal comes.
    held: Option<HaltedState>,
    /// The signal that ended the hold.
    held_until: Option<i32>,
    root_status: Option<ExitStatus>,
    /// The processes whose exit was handed to the embedding.
    exits_announced: HashSet<i32>,
    /// A divergence waiting (since then) for the kill that may have caused it.
    pending: Option<(Divergence, Instant)>,
    /// Processes found at their end with their recorded signal held, with the number of
    /// quiet ticks in a row they have been.
    held_seen: RefCell<HashMap<i32, u32>>,
}

impl<'a> MainLoop<'a> {
    /// A loop over `events` (every sender but the threads' is dropped).
    pub(super) fn new(
        gd: &'a GdState,
        events: Receiver<MainEvent>,
        root_pid: i32,
        on_halt: Option<OnHalt>,
        hold: bool,
        transcript: &'a mut Transcript,
    ) -> MainLoop<'a> {
        MainLoop {
            gd,
            events,
            root_pid,
            on_halt,
            hold,
            transcript,
            stop: None,
            held: None,
            held_until: None,
            root_status: None,
            exits_announced: HashSet::new(),
            pending: None,
            held_seen: RefCell::new(HashMap::new()),
        }
    }

    /// Runs until no descendant is left (or waitpid fails).
    pub(super) fn run(mut self) -> LoopEnd {
        let mut reap_error = None;
        while let Some(event) = self.next_event() {
            match event {
                MainEvent::Reaped { pid, status } => {
                    if pid == self.root_pid {
                        self.root_status = Some(status);
                    }
                    if let Some(actor) = self.gd.reaped(pid, status) {
                        self.announce(SessionEvent::ActorExited { actor, pid, status });
                        // Once the session stops, ddbx's own kills end the processes.
                        if let Some(kill) = self.gd.unrecorded_kill(actor, status) {
                            self.on_unrecorded_kill(kill);
                        }
                    }
                }
                MainEvent::UnrecordedKill(kill) => self.on_unrecorded_kill(kill),
                MainEvent::AllGone => break,
                MainEvent::ReapFailed(e) => {
                    reap_error = Some(e);
                    break;
                }
                MainEvent::Signal(signal) => self.on_signal(signal),
                // A divergence may be the consequence of a kill from outside (a peer's reset,
                // an early end of a stream): the kill is the cause to report, and the reaper
                // may not have seen it yet.
                MainEvent::Stop(End::Diverged(d)) if self.stop.is_none() => {
                    self.pending.get_or_insert((d, Instant::now()));
                }
                MainEvent::Stop(end) => self.on_stop(end),
                MainEvent::Note(line) => self.transcript.say(line),
                // They were killed there in the record: end them the same way.
                MainEvent::AllAtEnd { spare, first } => {
                    for (pid, sig) in &first {
                        procs::signal(*pid, *sig);
                        // Past its last event the LD keeps that signal blocked until the
                        // next call; one that never comes is woken (`preload/src/fatal.rs`).
                        if procs::blocks(*pid, *sig) {
                            procs::signal(*pid, libc::SIGCONT);
                        }
                    }
                    // A signal acts when its process next runs: a SIGKILL sent before then
                    // takes its place (a run that abort()ed replayed as killed by signal 9).
                    let until = Instant::now() + SIGNAL_GRACE;
                    for (pid, _) in &first {
                        procs::has_died(*pid, until.saturating_duration_since(Instant::now()));
                    }
                    procs::kill_descendants_but(&spare);
                }
                MainEvent::Halted => self.on_halted(),
                MainEvent::Event(event) => self.announce(event),
                MainEvent::Tick => {}
            }
            self.settle_divergence(false);
        }
        self.settle_divergence(true);
        // Every process ended before all of them stood still: the predicate never held (a
        // process that reaches a state where it holds is held there).
        if self.stop.is_none()
            && let Some(predicate) = self.gd.pending_predicate()
        {
            self.transcript.say(format!(
                "ddbx: `{predicate}` never holds in this run: every process ran to its end"
            ));
        }
        LoopEnd {
            stop: self.stop,
            root_status: self.root_status,
            held_until: self.held_until,
            reap_error,
            exits_announced: self.exits_announced,
            events: self.events,
        }
    }

    /// The next event; `None` when every sender is gone. While stopping, it kills again every
    /// little while; in a halting replay where nothing moved for a while, it repeats what was
    /// asked (and may find the program halted).
    fn next_event(&self) -> Option<MainEvent> {
        loop {
            let wait = match &self.pending {
                Some((_, since)) => CAUSE_GRACE
                    .saturating_sub(since.elapsed())
                    .max(Duration::from_millis(1)),
                None if self.stop.is_some() => KILL_AGAIN,
                None => HALTING_TICK,
            };
            match self.events.recv_timeout(wait) {
                Ok(event) => return Some(event),
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) if self.pending.is_some() => {
                    return Some(MainEvent::Tick);
                }
                Err(RecvTimeoutError::Timeout) if self.stop.is_some() => {
                    // Processes forked while we were killing: kill again.
                    procs::kill_descendants();
                }
                Err(RecvTimeoutError::Timeout) => {
                    if self.gd.halting_tick() {
                        return Some(MainEvent::Halted);
                    }
                    self.wake_held_ends();
                }
            }
        }
    }

    /// Past its last event, a process keeps the signal that killed the record's blocked
    /// until its next call (`preload/src/fatal.rs`). One that still holds it, blocked, after a
    /// whole quiet tick is stuck where no hook sees it (a read of a terminal, a raw `pause`):
    /// it is woken to die of it now, rather than hang the process that waits for its end. One
    /// that runs is computing its way to that call (the record's died somewhere in the same
    /// computation): it is given [`RUNNING_PATIENCE`] ticks (a loop that never calls again
    /// would otherwise hold it for ever). Woken after two ticks whatever it did, a child that
    /// computed for five seconds after its last message died before printing what it had read
    /// (`tests/progs/term_unblocked.c`).
    fn wake_held_ends(&self) {
        let mut seen = self.held_seen.borrow_mut();
        let held: HashMap<i32, u32> = self
            .gd
            .killed_at_end()
            .into_iter()
            .filter(|(pid, sig)| procs::holds(*pid, *sig))
            .map(|(pid, _)| (pid, seen.get(&pid).map_or(1, |ticks| ticks + 1)))
            .collect();
        for (pid, ticks) in &held {
            if (*ticks >= 2 && !procs::running(*pid)) || *ticks > RUNNING_PATIENCE {
                procs::signal(*pid, libc::SIGCONT);
            }
        }
        *seen = held;
    }

    /// A process died by a signal its record does not have: the cause of any divergence
    /// waiting (once the session stops, ddbx's own kills end the processes: not a cause).
    fn on_unrecorded_kill(&mut self, kill: Divergence) {
        if self.stop.is_none() {
            self.pending = None;
            self.on_stop(End::Diverged(kill));
        }
    }

    /// Stops the session for the divergence that came, once the reaper had `CAUSE_GRACE` to
    /// report a kill it may be the consequence of (`now`: at once); an unreaped actor killed
    /// from outside is the cause too.
    fn settle_divergence(&mut self, now: bool) {
        let due = self
            .pending
            .as_ref()
            .is_some_and(|(_, since)| now || since.elapsed() >= CAUSE_GRACE);
        if due && let Some((divergence, _)) = self.pending.take() {
            let cause = self.gd.unreaped_unrecorded_kill();
            self.on_stop(End::Diverged(cause.unwrap_or(divergence)));
        }
    }

    /// Hands `event` to the embedding; an exit only once per process (its LD says it exits,
    /// and ddbx may reap it too).
    fn announce(&mut self, event: SessionEvent) {
        if let SessionEvent::ActorExited { pid, .. } = event
            && !self.exits_announced.insert(pid)
        {
            return;
        }
        self.transcript.event(&event);
    }

    /// SIGINT or SIGTERM: a held halt ends halted; anything else ends interrupted.
    fn on_signal(&mut self, signal: i32) {
        if let Some(state) = self.held.take() {
            let live = self.gd.live_state();
            if live.is_some() {
                procs::freeze_descendants();
            }
            let state = live.unwrap_or(state);
            self.stop = Some(End::Halted(Box::new(state)));
            self.held_until = Some(signal);
        } else if self.stop.is_none() {
            self.transcript.say(format!(
                "ddbx: interrupted by signal {signal}: stopping every process"
            ));
            self.stop = Some(End::Interrupted { signal });
        }
        procs::kill_descendants();
    }

    /// A divergence or an unsupported call: the first one is the session's end.
    fn on_stop(&mut self, end: End) {
        if self.stop.is_none() {
            self.transcript.say(end.stop_line());
            self.transcript.event(&SessionEvent::Stopped(end.clone()));
            self.stop = Some(end);
        }
        procs::kill_descendants();
    }

    /// Every actor is passive: collect the halted state and ask how to go on.
    fn on_halted(&mut self) {
        if self.stop.is_some() {
            return;
        }
        if self.gd.is_live() {
            return self.on_live_halt();
        }
        let Some(CollectedHalt { state, holds }) = self.gd.collect_halted_state(REPORT_LIMIT)
        else {
            return;
        };
        if !holds {
            self.transcript.say(format!(
                "ddbx: `{}` never holds in this run: replaying to the end",
                state.predicate
            ));
            self.gd.release();
            return;
        }
        // A replay's halted state does not change while it stands: a `Refresh` asks again.
        let action = loop {
            let action = match self.on_halt.as_mut() {
                Some(callback) => callback(&state),
                None if self.hold => HaltAction::Hold,
                None => HaltAction::Kill,
            };
            if action != HaltAction::Refresh {
                break action;
            }
        };
        match action {
            HaltAction::Resume(resume) => self.gd.resume(&resume),
            HaltAction::Hold => self.hold_at(state),
            HaltAction::Kill | HaltAction::Refresh => {
                self.stop = Some(End::Halted(Box::new(state)));
                procs::kill_descendants();
            }
        }
    }

    /// A live run halted (`ddbx run`): its state changes while it stands (actors that
    /// interact with stopped ones stop in turn, others run on), so each look at it is made
    /// anew; `cont` ends the halt.
    fn on_live_halt(&mut self) {
        loop {
            let Some(state) = self.gd.live_state() else {
                return;
            };
            let action = match self.on_halt.as_mut() {
                Some(callback) => callback(&state),
                None if self.hold => HaltAction::Hold,
                None => HaltAction::Kill,
            };
            match action {
                HaltAction::Refresh => continue,
                HaltAction::Resume(_) => self.gd.live_resume(),
                HaltAction::Hold => self.hold_at(state),
                HaltAction::Kill => {
                    let state = self.gd.live_state().unwrap_or(state);
                    self.stop = Some(End::Halted(Box::new(state)));
                    // No process may record another's death as its last event.
                    procs::freeze_descendants();
                    procs::kill_descendants();
                }
            }
            return;
        }
    }

    /// Keeps the processes at the halt until a signal comes.
    fn hold_at(&mut self, state: HaltedState) {
        let pids: Vec<String> = state
            .actors
            .iter()
            .filter_map(|a| {
                // A live run's state has the pids; a halting replay's GD knows them.
                a.pid
                    .filter(|_| a.status.starts_with("stopped"))
                    .or_else(|| self.gd.halted_pid(a.actor))
                    .map(|pid| format!("{} pid {pid}", a.actor))
            })
            .collect();
        self.transcript.say(format!(
            "ddbx: halted; holding the processes ({}); interrupt ddbx (Ctrl-C) to end them",
            pids.join(", ")
        ));
        self.held = Some(state);
    }
}
