//! Offline analysis of recorded histories: work done on whole recordings, not during a run.
//!
//! * [`channels`]: which connect made which accepted connection (the recording's channels).

pub mod channels;

pub use channels::{Channel, Endpoint, match_channels};
