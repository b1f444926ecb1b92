//! This image's children, by number (what `~g17@N` and `~wN` name): atomics only, as the
//! rest of `signals` (a signal handler reads them).

use libc::c_int;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

const KIDS: usize = 4096;
/// `pid << 32 | number`, in fork order.
static KID: [AtomicU64; KIDS] = [const { AtomicU64::new(0) }; KIDS];
static KIDS_LEN: AtomicUsize = AtomicUsize::new(0);

/// The number of the child a fork of this image is making until the fork has returned its
/// pid (0: none).
static FORKING: AtomicU32 = AtomicU32::new(0);

/// A fork of child number `index` starts (0: the fork has returned).
pub fn forking(index: u32) {
    FORKING.store(index, SeqCst);
}

/// Whether child number `index` is being forked: it exists, or is about to, but its pid is
/// not known yet (the fork's event is replayed in libc's fork handler, before fork returns).
pub fn being_forked(index: u32) -> bool {
    index > 0 && FORKING.load(SeqCst) == index
}

/// A fork of this image returned `pid`, its child number `index`.
pub fn add_kid(pid: c_int, index: u32) {
    let n = KIDS_LEN.load(SeqCst);
    if n < KIDS {
        KID[n].store((pid as u32 as u64) << 32 | u64::from(index), SeqCst);
        KIDS_LEN.store(n + 1, SeqCst);
    }
}

/// The number of the child with `pid` (0: not a child of this image).
pub fn kid_index(pid: c_int) -> u32 {
    (0..KIDS_LEN.load(SeqCst).min(KIDS))
        .map(|i| KID[i].load(SeqCst))
        .rev()
        .find(|v| (v >> 32) as u32 as c_int == pid)
        .map_or(0, |v| v as u32)
}

/// The pid of child number `index` (`None`: not a child of this image).
pub fn kid_pid(index: u32) -> Option<c_int> {
    (0..KIDS_LEN.load(SeqCst).min(KIDS))
        .map(|i| KID[i].load(SeqCst))
        .find(|v| *v as u32 == index)
        .map(|v| (v >> 32) as u32 as c_int)
}

/// A forked child has no children of its own yet, and no fork under way.
pub fn forget_all() {
    KIDS_LEN.store(0, SeqCst);
    FORKING.store(0, SeqCst);
}
