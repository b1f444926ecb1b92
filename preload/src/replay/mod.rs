//! Replay: making each call come out as its history record says.
//!
//! Mirrors `record/`, file by file (`io`, `socket`, `ready`, `process`, `probe`). Before a
//! call, the LD looks at the actor's next record ([`cursor`]); it waits until the outcome the
//! record names is really possible (the bytes have arrived, the fd is ready, the right peer has
//! connected), then makes the call produce exactly that outcome. Anything the record does not
//! expect is a divergence. Peers outside the session are played by the LD ([`external`]).

pub mod accept;
pub mod cursor;
pub mod datagram;
pub mod external;
pub mod held;
pub mod io;
pub mod kept;
pub mod probe;
pub mod process;
pub mod reads;
pub mod ready;
pub mod signals;
pub mod socket;
pub mod thread_values;
pub mod threads;
pub mod values;

use crate::sys;

/// Waits with a growing pause (20 µs up to 2 ms): for states that a poll cannot wait for
/// (fewer bytes than needed have arrived; a server is not listening yet).
pub struct Backoff(u64);

impl Backoff {
    /// A fresh backoff.
    pub fn new() -> Backoff {
        Backoff(20)
    }

    /// Sleeps, and lengthens the next pause.
    pub fn pause(&mut self) {
        sys::sleep_us(self.0);
        self.0 = (self.0 * 2).min(2000);
    }
}
