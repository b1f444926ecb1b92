//! The count of halting control messages this process's GD has sent or received (requests,
//! notes, reports, answers; not the Hello/Welcome handshake): what the halting benchmark
//! measures. Counting costs one relaxed atomic add per message.

use std::sync::atomic::{AtomicU64, Ordering};

static CONTROL_MESSAGES: AtomicU64 = AtomicU64::new(0);

/// How many halting control messages the GD has sent or received in this process so far.
pub fn control_messages() -> u64 {
    CONTROL_MESSAGES.load(Ordering::Relaxed)
}

/// Counts one control message.
pub(crate) fn count_message() {
    CONTROL_MESSAGES.fetch_add(1, Ordering::Relaxed);
}
