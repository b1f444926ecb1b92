//! The session's helper threads, besides one thread per LD connection: the reaper (owns
//! `waitpid`), the acceptor (owns the GD socket's listener), and the signal thread (reads
//! SIGINT/SIGTERM, when the session handles them). Each tells the main loop through its own
//! sender of the [`MainEvent`] channel.

use super::connections;
use super::events::MainEvent;
use super::gd_state::GdState;
use super::procs::{self, Reaped, StopSignalReader};
use crate::error::{Error, Result};
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the signal thread looks whether it should stop.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// The running helper threads.
pub(super) struct Threads {
    reaper: JoinHandle<()>,
    acceptor: JoinHandle<()>,
    signals: Option<SignalThread>,
}

/// The signal thread, its stop flag, and what wakes it to see the flag (the session's end
/// would otherwise wait for its poll's timeout: 85 ms of every record and replay).
struct SignalThread {
    thread: JoinHandle<()>,
    stop: Arc<AtomicBool>,
    wake: UnixStream,
}

impl Threads {
    /// Starts the reaper, the acceptor and (with `handle_signals`) the signal thread. The
    /// signals must be blocked already ([`procs::block_stop_signals`]).
    pub(super) fn start(
        events: &Sender<MainEvent>,
        listener: UnixListener,
        gd: &Arc<GdState>,
        handle_signals: bool,
    ) -> Result<Threads> {
        let reaper = start_reaper(events.clone())?;
        let acceptor = connections::start_acceptor(listener, Arc::clone(gd))
            .map_err(|e| Error::io("cannot start a thread", e))?;
        let signals = if handle_signals {
            Some(start_signal_thread(events.clone())?)
        } else {
            None
        };
        Ok(Threads {
            reaper,
            acceptor,
            signals,
        })
    }

    /// Waits for the acceptor and the reaper (both end by themselves once every process is
    /// gone and [`GdState::finish`] has run), then stops the signal thread.
    pub(super) fn join(self) {
        let _ = self.acceptor.join();
        let _ = self.reaper.join();
        if let Some(signals) = self.signals {
            signals.stop.store(true, Ordering::Relaxed);
            let _ = (&signals.wake).write_all(b"x");
            let _ = signals.thread.join();
        }
    }
}

/// Starts the thread that reaps every child until none is left.
fn start_reaper(events: Sender<MainEvent>) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ddbx-reaper".into())
        .spawn(move || {
            loop {
                let event = match procs::wait_any() {
                    Ok(Reaped::Child { pid, status }) => MainEvent::Reaped { pid, status },
                    Ok(Reaped::NoChildren) => MainEvent::AllGone,
                    Err(e) => MainEvent::ReapFailed(e),
                };
                let last = !matches!(event, MainEvent::Reaped { .. });
                let _ = events.send(event);
                if last {
                    return;
                }
            }
        })
        .map_err(|e| Error::io("cannot start a thread", e))
}

/// Starts the thread that passes SIGINT and SIGTERM on to the main loop.
fn start_signal_thread(events: Sender<MainEvent>) -> Result<SignalThread> {
    let reader =
        StopSignalReader::open().map_err(|e| Error::io("cannot read SIGINT and SIGTERM", e))?;
    let (wake, woken) =
        UnixStream::pair().map_err(|e| Error::io("cannot make a socket pair", e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let stop_seen = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("ddbx-signals".into())
        .spawn(move || {
            while !stop_seen.load(Ordering::Relaxed) {
                if let Some(signal) = reader.wait_unless(SIGNAL_POLL, Some(woken.as_fd())) {
                    let _ = events.send(MainEvent::Signal(signal));
                }
            }
        })
        .map_err(|e| Error::io("cannot start a thread", e))?;
    Ok(SignalThread { thread, stop, wake })
}
