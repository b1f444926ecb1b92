//! What a record or replay tells an [`Observer`] as it happens: the session's events (an actor
//! started or exited, the session stopped early, its end being written), each halt, each trace
//! point the replay passed. The CLI's `--json-lines` and progress line are such observers.

use crate::debugger::{Debugger, TracePoint};
use ddbx_supervisor::session::{HaltedState, SessionEvent};
use std::path::Path;
use std::sync::Arc;

/// One thing that happened in a record or replay.
#[derive(Debug)]
pub enum Event<'a> {
    /// The session is about to start the program. `state_dir` holds one file per actor whose
    /// first 8 bytes are its events so far (little-endian), while the session runs;
    /// `total_events` is what a replay's recording holds (`None` in a record).
    Starting {
        /// The session's state directory (removed when the session ends).
        state_dir: &'a Path,
        /// The recorded events over all actors (replay).
        total_events: Option<u64>,
    },
    /// Something the session reported.
    Session(&'a SessionEvent),
    /// A halting replay halted here (before the driver decides how to go on).
    Halted(&'a HaltedState),
    /// `trace EXPR if COND`: COND became true at a state the replay has passed.
    TracePoint {
        /// EXPR as written.
        expr: &'a str,
        /// COND as written.
        cond: &'a str,
        /// Where, and EXPR's value there.
        point: &'a TracePoint,
    },
}

/// A callback for a run's [`Event`]s, shared so that the options stay `Clone` (none: nobody
/// listens). It is called from the session's main thread, one event at a time.
#[derive(Clone, Default)]
pub struct Observer(Option<Arc<ObserverFn>>);

/// What an [`Observer`] calls.
type ObserverFn = dyn Fn(&Event<'_>) + Send + Sync;

impl Observer {
    /// An observer that hands every event to `f`.
    pub fn new(f: impl Fn(&Event<'_>) + Send + Sync + 'static) -> Observer {
        Observer(Some(Arc::new(f)))
    }

    /// Hands `event` to the callback, if there is one.
    pub fn tell(&self, event: &Event<'_>) {
        if let Some(f) = &self.0 {
            f(event);
        }
    }

    /// Whether anybody listens.
    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// The session's event callback that forwards to this observer (`None` if nobody listens).
    pub(super) fn session_callback(&self) -> Option<ddbx_supervisor::session::OnEvent> {
        let observer = self.clone();
        self.is_some().then(|| {
            Box::new(move |event: &SessionEvent| observer.tell(&Event::Session(event)))
                as ddbx_supervisor::session::OnEvent
        })
    }

    /// Tells the trace points `debugger` shows from `before` on (`before[i]`: the points of
    /// trace `i` shown before).
    pub(super) fn tell_trace_points(&self, debugger: &Debugger, before: &[usize]) {
        for (trace, &from) in debugger.traces.iter().zip(before) {
            for point in trace.points.iter().take(trace.shown()).skip(from) {
                self.tell(&Event::TracePoint {
                    expr: &trace.expr_text,
                    cond: &trace.cond.text,
                    point,
                });
            }
        }
    }
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_some() {
            "Observer(Some(..))"
        } else {
            "Observer(None)"
        })
    }
}

/// How many points of each trace `debugger` has shown.
pub(super) fn shown_points(debugger: &Debugger) -> Vec<usize> {
    debugger.traces.iter().map(|t| t.shown()).collect()
}
