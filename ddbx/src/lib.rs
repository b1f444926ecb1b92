//! ddbx: a record/replay debugger for Linux programs made of several processes that talk over
//! sockets.
//!
//! This crate is the `ddbx` command ([`cli`]) and the API it is a thin layer over:
//!
//! * [`record`] runs a program under ddbx and leaves a recording directory;
//! * [`replay`] runs a recording again, forcing every nondeterministic outcome;
//! * [`Recording::open`] loads a recording (manifest, histories, channels) for inspection.
//!
//! Exit codes are in [`exit`]; the preload library is embedded and found by [`preload`].
//!
//! ```no_run
//! use ddbx::{Messages, RecordOptions, ReplayOptions};
//!
//! let recorded = ddbx::record(RecordOptions {
//!     command: vec!["./server".into(), "--port".into(), "4000".into()],
//!     out_dir: Some("/tmp/server-run".into()),
//!     messages: Messages::Quiet,
//!     ..Default::default()
//! })?;
//! println!("recorded {} actors, exit code {}", recorded.actors.len(), recorded.exit_code);
//!
//! let replayed = ddbx::replay(ReplayOptions {
//!     dir: recorded.dir.clone(),
//!     ..Default::default()
//! })?;
//! assert_eq!(replayed.kind, ddbx::OutcomeKind::ReachedEnd);
//!
//! let recording = ddbx::Recording::open(&recorded.dir)?;
//! for channel in &recording.channels {
//!     println!("channel {}: {:?} -> {:?}", channel.id, channel.connector, channel.acceptor);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod api;
pub mod cli;
mod error;
pub mod exit;
pub mod halt;
pub mod preload;

pub use api::{
    Messages, OutcomeKind, RecordOptions, RecordOutcome, ReplayOptions, ReplayOutcome, record,
    replay, resolve_program,
};
pub use ddbx_supervisor::Recording;
pub use ddbx_supervisor::analysis::channels::{Channel, Endpoint};
pub use ddbx_supervisor::session::{Divergence, End};
pub use ddbx_supervisor::wire;
pub use error::Error;
