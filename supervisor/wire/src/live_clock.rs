//! The clock page of a live run (`ddbx run --break-if`, paper 001): one page of a file in the
//! session's runtime directory, written by the GD and mapped for reading by every LD.
//!
//! It says whether a halt is on and how long the halts so far lasted, so that an LD can tell
//! without a message (a load from memory on its hot path) whether it must ask before
//! interacting with another process, and can count a timeout in *virtual time*: real time
//! minus the time the program stood halted, so that a halt does not make a peer time out.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

/// The page's size in bytes (the file is this long).
pub const SIZE: usize = 4096;

/// The page's layout.
#[repr(C)]
#[derive(Debug, Default)]
pub struct LiveClock {
    /// Odd while a halt is on, even otherwise; each halt adds 2.
    phase: AtomicU64,
    /// How long (ns) the halts that are over lasted, together.
    halted_ns: AtomicU64,
    /// When the halt that is on started (`CLOCK_MONOTONIC`, ns).
    since_ns: AtomicU64,
}

impl LiveClock {
    /// The page mapped at `base`.
    ///
    /// # Safety
    /// `base` must point to at least [`SIZE`] bytes, aligned to 8, that stay mapped (shared)
    /// for as long as the result is used.
    pub unsafe fn at<'a>(base: *const u8) -> &'a LiveClock {
        // SAFETY: the caller's promise; every field is an atomic, valid for any bytes.
        unsafe { &*(base as *const LiveClock) }
    }

    /// Whether a halt is on.
    pub fn halted(&self) -> bool {
        self.phase.load(SeqCst) & 1 == 1
    }

    /// Which halt is on, or was last (0: none yet).
    pub fn halt_number(&self) -> u64 {
        self.phase.load(SeqCst).div_ceil(2)
    }

    /// How long (ns) the program stood halted up to `now` (`CLOCK_MONOTONIC`, ns).
    pub fn halted_time(&self, now: u64) -> u64 {
        loop {
            let phase = self.phase.load(SeqCst);
            let total = self.halted_ns.load(SeqCst);
            let since = self.since_ns.load(SeqCst);
            if self.phase.load(SeqCst) != phase {
                continue;
            }
            let on = if phase & 1 == 1 {
                now.saturating_sub(since)
            } else {
                0
            };
            return total + on;
        }
    }

    /// The GD: a halt starts at `now`.
    pub fn start_halt(&self, now: u64) {
        if !self.halted() {
            self.since_ns.store(now, SeqCst);
            self.phase.fetch_add(1, SeqCst);
        }
    }

    /// The GD: the halt that is on ends at `now`.
    pub fn end_halt(&self, now: u64) {
        if self.halted() {
            let since = self.since_ns.load(SeqCst);
            self.halted_ns.fetch_add(now.saturating_sub(since), SeqCst);
            self.phase.fetch_add(1, SeqCst);
        }
    }
}

/// `CLOCK_MONOTONIC` now, in ns (the clock every process of the machine shares). For the GD:
/// the LD reads it with the system call, since its hooks stand in for the C library's.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halted_time_counts_halts_over_and_the_one_on() {
        let c = LiveClock::default();
        assert_eq!(c.halted_time(100), 0);
        c.start_halt(100);
        assert!(c.halted());
        assert_eq!(c.halt_number(), 1);
        assert_eq!(c.halted_time(150), 50);
        c.end_halt(200);
        assert!(!c.halted());
        assert_eq!(c.halted_time(1_000), 100);
        c.start_halt(1_000);
        assert_eq!(c.halt_number(), 2);
        assert_eq!(c.halted_time(1_010), 110);
    }
}
