//! `ddbx-supervisor`: the global debugger (GD) of ddbx.
//!
//! The GD starts the debuggees, gives every process image its logical actor id, collects what
//! the local debuggers (LDs, the preload inside each debuggee) report, answers their replay
//! questions, and knows when the whole process tree has ended.
//!
//! * [`session`]: one record or replay run ([`session::run`]);
//! * [`actors`]: who a new process is (a pure state machine over `Hello`s);
//! * [`recording`]: a recording on disk, loaded and checked ([`Recording::open`]): data only;
//! * [`analysis`]: what is derived from a recording offline: channels, dependencies, vector
//!   clocks, consistent cuts and Inf(P), message races;
//! * [`predicate`]: the `stop if` language: parse, resolve, classify (conjunctive or general).
//!
//! The only vocabulary shared with the LD is [`ddbx_wire`], re-exported as [`wire`].

pub mod actors;
pub mod analysis;
pub mod error;
pub mod predicate;
pub mod recording;
pub mod session;

pub use ddbx_wire as wire;
pub use error::Error;
pub use recording::Recording;
