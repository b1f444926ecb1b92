//! ddbx: a record/replay debugger for Linux programs made of several processes that talk over
//! sockets.
//!
//! This crate is the `ddbx` command ([`cli`]) and the API it is a thin layer over:
//!
//! * [`record`] runs a program under ddbx and leaves a recording directory;
//! * [`Recorder::until_fail`] records a flaky program again and again until a run fails, and
//!   keeps only that run's recording;
//! * [`replay`] runs a recording again, forcing every nondeterministic outcome;
//! * [`HaltingReplay`] replays with `stop if` predicates, stops at each halt with every
//!   process alive, and continues (`cont`, a new `stop_if`) or kills on request;
//! * [`Recording::open`] loads a recording (manifest, histories, channels) for inspection.
//!
//! A halting replay's predicates are parsed into a halt request by [`halt`] and kept, with its
//! traces and reports, by the [`debugger::Debugger`] a [`Driver`] is handed at each halt.
//! Exit codes are in [`exit`]; the preload library is embedded and found by [`preload`].
//!
//! A program that forks a child which sends a line back over a socketpair: record it, replay
//! it, then halt it right after the child's send (`--stop-at p2:2`) and read the halted state.
//!
//! ```
//! use ddbx::{Messages, RecordOptions, ReplayOptions};
//!
//! let dir = std::env::temp_dir().join(format!("ddbx-doc-{}", std::process::id()));
//! let program = "import os, socket\n\
//!     a, b = socket.socketpair()\n\
//!     if os.fork() == 0:\n    b.send(b'hi'); os._exit(0)\n\
//!     print(a.recv(2).decode()); os.wait()";
//! let recorded = ddbx::record(RecordOptions {
//!     command: vec!["/usr/bin/python3".into(), "-c".into(), program.into()],
//!     out_dir: Some(dir.clone()),
//!     messages: Messages::Quiet,
//!     ..Default::default()
//! })?;
//! assert_eq!(recorded.exit_code, 0);
//! assert_eq!(recorded.actors.len(), 2); // p1: python, p2: its child
//!
//! let replayed = ddbx::replay(ReplayOptions {
//!     dir: recorded.dir.clone(),
//!     messages: Messages::Quiet,
//!     ..Default::default()
//! })?;
//! assert_eq!(replayed.kind, ddbx::OutcomeKind::ReachedEnd);
//!
//! // Halt right after p2's 2nd event (its Start, then its send).
//! let halted = ddbx::replay(ReplayOptions {
//!     dir: recorded.dir.clone(),
//!     messages: Messages::Quiet,
//!     stop_at: vec!["p2:2".into()],
//!     ..Default::default()
//! })?;
//! assert_eq!(halted.kind, ddbx::OutcomeKind::Halted);
//! let state = halted.halted.expect("a halted state");
//! assert_eq!(state.cut[&ddbx::wire::ActorId(2)], 2);
//!
//! // Halt where the child has sent, look, then go on: `cont` runs to the next time the
//! // predicate becomes true (never again here: p2's sends stay 1), so to the end.
//! let mut replay = ddbx::HaltingReplay::start(ReplayOptions {
//!     dir: recorded.dir.clone(),
//!     messages: Messages::Quiet,
//!     stop_if: vec!["p2.sends == 1".into()],
//!     ..Default::default()
//! })?;
//! let state = replay.next_halt().expect("a halt");
//! let child = state.actors.iter().find(|a| a.actor == ddbx::wire::ActorId(2)).unwrap();
//! assert!(child.vars.contains(&("sends".to_string(), 1)));
//! assert!(child.pid.is_some()); // alive, blocked in ddbx: `gdb -p` could attach now
//! replay.cont()?;
//! assert!(replay.next_halt().is_none());
//! assert_eq!(replay.finish()?.kind, ddbx::OutcomeKind::ReachedEnd);
//!
//! // Or end the processes at the halt.
//! let mut replay = ddbx::HaltingReplay::start(ReplayOptions {
//!     dir: recorded.dir.clone(),
//!     messages: Messages::Quiet,
//!     stop_if: vec!["p2.sends == 1".into()],
//!     ..Default::default()
//! })?;
//! assert!(replay.next_halt().is_some());
//! replay.kill()?;
//! assert_eq!(replay.finish()?.kind, ddbx::OutcomeKind::Halted);
//!
//! let recording = ddbx::Recording::open(&recorded.dir)?;
//! assert_eq!(recording.histories.len(), 2);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod api;
pub mod cli;
pub mod debugger;
mod error;
pub mod exit;
pub mod halt;
pub mod preload;
pub mod term;

pub use api::{
    DEFAULT_PATIENCE, DEFAULT_RUNS, Driver, Event, ExploreOptions, ExploreOutcome, FailingRun,
    Failure, Flip, HaltingReplay, LiveDriver, Messages, Observer, OutcomeKind, RecordOptions,
    RecordOutcome, Recorder, ReplayOptions, ReplayOutcome, RunOptions, RunOutcome, RunReport,
    UntilFail, UntilFailOutcome, explore, record, replay, replay_driven, resolve_program, run_live,
};
pub use ddbx_supervisor::Recording;
pub use ddbx_supervisor::analysis::channels::{Channel, Endpoint};
pub use ddbx_supervisor::session::{
    Divergence, End, HaltAction, HaltedActor, HaltedState, Resume, SessionEvent,
};
pub use ddbx_supervisor::wire;
pub use error::Error;
