//! Offline analysis of recorded histories: work done on whole recordings, not during a run.
//!
//! * [`channels`]: which connect made which accepted connection (the recording's channels);
//! * [`deps`]: which event needs which event of another actor (fork, connect/accept, data,
//!   readiness), and the byte range each send and receive covered;
//! * [`clock`]: vector clocks over those dependencies (happened-before);
//! * [`inf`]: consistent cuts, their closure, and Inf(P) for conjunctive predicates — the
//!   oracle of `stop if`;
//! * [`races`]: message races, locally-first and unaffected races, the affects relation;
//! * [`twopass`]: the same locally-first and unaffected races by Park & Jun's two-pass
//!   method (pass 1 on the recording, pass 2 a simulated replay carrying Affecter sets), an
//!   independent check of [`races`];
//! * [`vars`]: an actor's variables (probes and built-in counters) after k events.

pub mod channels;
pub mod clock;
pub mod cut;
pub mod deps;
pub mod inf;
pub mod races;
pub mod twopass;
pub mod vars;

pub use channels::{Channel, Endpoint, match_channels};
