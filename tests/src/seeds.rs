//! Property tests over many generated programs: seeds F..F+N-1, run on several threads, every
//! seed to its end even when some fail, so that a report lists all the failures at once.

use crate::{env_number, panic_message};
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The seeds of a property test and the threads that run them.
#[derive(Debug, Clone, Copy)]
pub struct Seeds {
    /// The first seed run.
    pub first: u64,
    /// Seeds `first..first + count` are run.
    pub count: u64,
    /// How many at once (the cases mostly wait for their programs).
    pub threads: u64,
}

/// What one seed gave: its case's value, or the message of the panic that ended it.
#[derive(Debug)]
pub struct SeedOutcome<T> {
    /// The seed.
    pub seed: u64,
    /// The case's value, or why it panicked.
    pub result: Result<T, String>,
}

impl Seeds {
    /// `DDBX_PROPTEST_CASES` seeds (default 50) from `DDBX_PROPTEST_FIRST` (default 1, so that a
    /// long run can be made in parts) on `DDBX_PROPTEST_THREADS` threads (default 8).
    pub fn from_env() -> Seeds {
        Seeds {
            first: env_number("DDBX_PROPTEST_FIRST", 1).max(1),
            count: env_number("DDBX_PROPTEST_CASES", 50),
            threads: env_number("DDBX_PROPTEST_THREADS", 8).max(1),
        }
    }

    /// Runs `case(seed)` for every seed; a panic in one case is that seed's outcome and does not
    /// stop the others. The outcomes, by seed.
    pub fn run<T: Send>(&self, case: impl Fn(u64) -> T + Sync) -> Vec<SeedOutcome<T>> {
        let next = AtomicU64::new(self.first);
        let end = self.first.saturating_add(self.count);
        let outcomes = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..self.threads {
                scope.spawn(|| {
                    loop {
                        let seed = next.fetch_add(1, Ordering::Relaxed);
                        if seed >= end {
                            break;
                        }
                        // A panicking case shares nothing the next one reads.
                        let result = std::panic::catch_unwind(AssertUnwindSafe(|| case(seed)))
                            .map_err(|e| panic_message(&*e));
                        let outcome = SeedOutcome { seed, result };
                        outcomes
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(outcome);
                    }
                });
            }
        });
        let mut outcomes = outcomes.into_inner().unwrap_or_else(|p| p.into_inner());
        outcomes.sort_by_key(|o| o.seed);
        outcomes
    }
}

/// splitmix64: the random numbers of a property test's case, a function of its seed only.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// An index in `0..n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}
