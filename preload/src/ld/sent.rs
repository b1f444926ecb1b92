//! Replay: how many standard signals the session's processes sent each process with `kill`,
//! so that a process can tell that a signal came although the kernel delivered it once.
//!
//! Two kills of one standard signal that reach a process while it does not run (GNU `timeout`
//! sends its child a SIGTERM and then its own process group one, 100 µs apart) arrive as one.
//! The record saw them apart (each interrupted a call of its own: two `~g15` deliveries); a
//! replay under other timing may get one arrival, and its second recorded delivery waited for
//! an arrival that never came (redis 500 ms; Twisted for ever, its reactor already in the
//! `epoll_wait` the handler's wake-up byte should have ended). So in a replay the sender counts
//! each kill it makes in a table every process of the session maps
//! ([`ddbx_wire::SIGNALS_SENT`]), and a delivery whose signal has not arrived counts as come
//! when more were sent to this process than arrived, and none is pending.
//!
//! Atomics and raw system calls only: kills made by signal handlers count too.

use super::Ld;
use super::turns::map_shared;
use crate::sys;
use ddbx_wire::{SENT_ENTRY, SENT_SLOTS, SIGNALS_SENT};
use libc::c_int;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicU32, AtomicUsize};

/// One process's counts: its pid (0: a free entry), then one count per signal 1 to 31.
#[repr(C)]
struct Entry {
    pid: AtomicU32,
    sent: [AtomicU32; 31],
}

const _: () = assert!(std::mem::size_of::<Entry>() <= SENT_ENTRY);

/// The table's address in this image (0: not mapped, as in a record).
static TABLE: AtomicUsize = AtomicUsize::new(0);
/// This process's counts when its image started (or it was forked): what was sent before is
/// not this image's to count.
static BASE: [AtomicU32; 31] = [const { AtomicU32::new(0) }; 31];
/// Arrivals of each signal in this image, and arrivals counted although none came.
static ARRIVED: [AtomicU32; 31] = [const { AtomicU32::new(0) }; 31];
static MERGED: [AtomicU32; 31] = [const { AtomicU32::new(0) }; 31];
/// How many entries a pid is looked for in, from its hash on.
const PROBES: usize = 64;

impl Ld {
    /// Replay: maps the session's table (at the LD's start, before the program can chroot or
    /// switch users), and takes this process's counts so far as its base.
    pub fn map_signals_sent(&self) {
        let Some(dir) = self.runtime_dir() else {
            return;
        };
        let mut path = dir.to_vec();
        path.push(b'/');
        path.extend_from_slice(SIGNALS_SENT.as_bytes());
        let file = sys::open(&path, libc::O_RDWR | libc::O_CLOEXEC, 0);
        if file < 0 {
            return;
        }
        if let Some(p) = map_shared(file, SENT_SLOTS * SENT_ENTRY) {
            TABLE.store(p as usize, SeqCst);
            start_counting();
        }
    }
}

/// A forked child (or a new image) counts from now on, under its own pid.
pub fn start_counting() {
    let me = entry(sys::getpid());
    for sig in 1..32 {
        let i = sig - 1;
        BASE[i].store(me.map_or(0, |e| e.sent[i].load(SeqCst)), SeqCst);
        ARRIVED[i].store(0, SeqCst);
        MERGED[i].store(0, SeqCst);
    }
}

/// The entry of `pid` (claimed if free); `None`: no table, or no room.
fn entry(pid: c_int) -> Option<&'static Entry> {
    let base = TABLE.load(SeqCst);
    if base == 0 || pid <= 0 {
        return None;
    }
    let key = pid as u32;
    let start = (u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize;
    (0..PROBES).find_map(|i| {
        let at = base + (start + i) % SENT_SLOTS * SENT_ENTRY;
        // SAFETY: within the mapping of SENT_SLOTS entries, which stays mapped for the life
        // of the image; entries are atomics only.
        let e = unsafe { &*(at as *const Entry) };
        match e.pid.compare_exchange(0, key, SeqCst, SeqCst) {
            Ok(_) => Some(e),
            Err(k) if k == key => Some(e),
            Err(_) => None,
        }
    })
}

/// The program sent `sig` to process `pid` (as the kernel knows it), and the kill succeeded.
pub fn count(pid: c_int, sig: c_int) {
    if (1..32).contains(&sig)
        && let Some(e) = entry(pid)
    {
        e.sent[sig as usize - 1].fetch_add(1, SeqCst);
    }
}

/// `sig` arrived (the LD's handler).
pub fn arrived(sig: c_int) {
    if (1..32).contains(&sig) {
        ARRIVED[sig as usize - 1].fetch_add(1, SeqCst);
    }
}

/// Whether more `sig` were sent to this process than arrived (or were counted so by
/// [`take_merged`]), and none is pending: one merged into an earlier arrival.
pub fn merged(sig: c_int) -> bool {
    if !(1..32).contains(&sig) || TABLE.load(SeqCst) == 0 {
        return false;
    }
    let i = sig as usize - 1;
    if entry(sys::getpid()).is_none() {
        return false;
    }
    let sent = since_start(sig);
    let seen = ARRIVED[i].load(SeqCst) + MERGED[i].load(SeqCst);
    sent > seen && !sys::is_pending(sig)
}

/// How many `sig` the session's processes sent this process since its image started.
pub fn since_start(sig: c_int) -> u32 {
    if !(1..32).contains(&sig) {
        return 0;
    }
    let i = sig as usize - 1;
    entry(sys::getpid()).map_or(0, |me| {
        me.sent[i].load(SeqCst).wrapping_sub(BASE[i].load(SeqCst))
    })
}

/// A delivery takes a signal [`merged`] said came.
pub fn take_merged(sig: c_int) {
    if (1..32).contains(&sig) {
        MERGED[sig as usize - 1].fetch_add(1, SeqCst);
    }
}
