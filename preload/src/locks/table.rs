//! Lock objects by address: which object number a mutex or condition variable at an address
//! has in this process. Objects are numbered in the order they are first touched (the record's
//! order, which replay enforces), never by address, which ASLR and the allocator change
//! between runs.
//!
//! A fixed open-addressing table: lookups are lock-free (they run on every lock call);
//! inserting and forgetting take a spin lock (a new object, `pthread_mutex_init`,
//! `pthread_mutex_destroy`: rare). No allocation, so a forked child can clear it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// Slots in the table (a power of two).
const SLOTS: usize = 1 << 16;
/// A forgotten slot's key (no mutex lives at address 1).
const FORGOTTEN: usize = 1;

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_KEY: AtomicUsize = AtomicUsize::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const NO_ID: AtomicU32 = AtomicU32::new(0);

static KEYS: [AtomicUsize; SLOTS] = [EMPTY_KEY; SLOTS];
static IDS: [AtomicU32; SLOTS] = [NO_ID; SLOTS];
/// Held while inserting or forgetting.
static BUSY: AtomicBool = AtomicBool::new(false);
/// Slots ever used (what [`clear`] must clear).
static USED: AtomicUsize = AtomicUsize::new(0);

fn slot_of(addr: usize) -> usize {
    (addr >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48 & (SLOTS - 1)
}

/// The object at `addr`, if it has one.
pub fn lookup(addr: usize) -> Option<u32> {
    let mut i = slot_of(addr);
    for _ in 0..SLOTS {
        match KEYS[i].load(Ordering::Acquire) {
            0 => return None,
            k if k == addr => return Some(IDS[i].load(Ordering::Relaxed)),
            _ => i = (i + 1) & (SLOTS - 1),
        }
    }
    None
}

/// Runs `f` with the table's spin lock held.
pub fn exclusive<R>(f: impl FnOnce() -> R) -> R {
    while BUSY
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    let r = f();
    BUSY.store(false, Ordering::Release);
    r
}

/// Gives `addr` object `id` (inside [`exclusive`]); false when the table is full.
pub fn insert(addr: usize, id: u32) -> bool {
    let mut i = slot_of(addr);
    for _ in 0..SLOTS {
        let k = KEYS[i].load(Ordering::Relaxed);
        if k == 0 || k == FORGOTTEN {
            IDS[i].store(id, Ordering::Relaxed);
            KEYS[i].store(addr, Ordering::Release);
            USED.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        i = (i + 1) & (SLOTS - 1);
    }
    false
}

/// `addr` has no object any more (re-initialised or destroyed): its next touch makes a new one.
pub fn forget(addr: usize) {
    if lookup(addr).is_none() {
        return;
    }
    exclusive(|| {
        let mut i = slot_of(addr);
        for _ in 0..SLOTS {
            match KEYS[i].load(Ordering::Relaxed) {
                0 => return,
                k if k == addr => {
                    KEYS[i].store(FORGOTTEN, Ordering::Release);
                    return;
                }
                _ => i = (i + 1) & (SLOTS - 1),
            }
        }
    });
}

/// Empties the table (a forked child: the only thread left starts afresh).
pub fn clear() {
    BUSY.store(false, Ordering::Relaxed);
    if USED.swap(0, Ordering::Relaxed) == 0 {
        return;
    }
    for k in &KEYS {
        k.store(0, Ordering::Relaxed);
    }
}
