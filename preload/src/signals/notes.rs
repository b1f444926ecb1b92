//! Record (and replay, for its own history): the deliveries whose handler ran, in order, with
//! whether the program was inside a hooked call then, the non-blocking waits' outcomes and the
//! closes handlers made: a lock-free ring that the LD empties into value lines before the
//! next event's line (`preload/src/ld/journal.rs`). Atomics only: a signal handler writes it.

use libc::c_int;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

const NOTES: usize = 256;
/// A signal: `ended << 32 | entry << 10 | has_entry << 9 | after << 8 | sig << 1 | in_call`
/// (`ended`: a child number; `entry`: see [`note`]); a non-blocking
/// wait's outcome: `WAIT_NOTE | child`. 0: free.
static NOTE: [AtomicU64; NOTES] = [const { AtomicU64::new(0) }; NOTES];
static WRITTEN: AtomicUsize = AtomicUsize::new(0);
static READ: AtomicUsize = AtomicUsize::new(0);
/// Deliveries not noted because the ring was full (the history misses them).
static LOST: AtomicU32 = AtomicU32::new(0);

/// The program's handler for `sig` runs now; `in_call`: inside a hooked call; `after`: in a
/// hook, after its call (a place replay keeps exactly); `ended`: see [`ended_child`];
/// `entry`: it landed in computation and runs at the program's entry into a hook, this many
/// entries after the event before (at most 2²² − 1).
pub fn note(sig: c_int, (in_call, after): (bool, bool), ended: u32, entry: Option<u32>) {
    let after = if after { AFTER_CALL } else { 0 };
    let entry = entry.map_or(0, |n| u64::from(n.min(ENTRY_MAX)) << 10 | HAS_ENTRY);
    push_note(u64::from(ended) << 32 | entry | after | (sig as u64) << 1 | u64::from(in_call));
}

fn push_note(v: u64) {
    let at = WRITTEN.load(SeqCst);
    if at.wrapping_sub(READ.load(SeqCst)) >= NOTES {
        LOST.fetch_add(1, SeqCst);
        return;
    }
    WRITTEN.store(at.wrapping_add(1), SeqCst);
    NOTE[at % NOTES].store(v, SeqCst);
}

const WAIT_NOTE: u64 = 1 << 63;
const CLOSE_NOTE: u64 = 1 << 62;
const AFTER_CALL: u64 = 1 << 8;
const HAS_ENTRY: u64 = 1 << 9;
const ENTRY_MAX: u32 = (1 << 22) - 1;

/// How many notes were pushed (a ring index: `crate::guard::call_returned`).
pub fn notes_pushed() -> usize {
    WRITTEN.load(SeqCst)
}

/// A non-blocking wait of the program returned child number `child` (0: none): noted in the
/// same ring as the deliveries, so that the lines keep their order.
pub fn note_reaped(child: u32) {
    push_note(WAIT_NOTE | u64::from(child));
}

/// The program's handler, inside a hooked call, closed channel end `fd` (see
/// `ddbx_wire::history::value::Value::Closed`): noted in the same ring, in order.
pub fn note_closed(fd: c_int) {
    push_note(CLOSE_NOTE | fd as u32 as u64);
}

/// What a note says.
pub enum Note {
    /// A channel end closed by a handler inside a hooked call.
    Closed(c_int),
    /// A delivery ([`note`]).
    Signal(Delivery),
    /// A non-blocking wait's outcome.
    Reaped(u32),
}

/// The next note, oldest first, if it was pushed before ring index `mark` (`usize::MAX`: any).
pub fn next_note_before(mark: usize) -> Option<Note> {
    let at = READ.load(SeqCst);
    if at == WRITTEN.load(SeqCst) || at >= mark {
        return None;
    }
    let v = NOTE[at % NOTES].swap(0, SeqCst);
    READ.store(at.wrapping_add(1), SeqCst);
    if v == 0 {
        return None;
    }
    if v & WAIT_NOTE != 0 {
        return Some(Note::Reaped(v as u32));
    }
    if v & CLOSE_NOTE != 0 {
        return Some(Note::Closed(v as u32 as c_int));
    }
    let ended = (v >> 32) as u32;
    Some(Note::Signal(Delivery {
        sig: ((v >> 1) & 0x7f) as c_int,
        in_call: v & 1 == 1,
        ended: (ended != 0).then_some(ended),
        after_call: v & AFTER_CALL != 0,
        entry: (v & HAS_ENTRY != 0).then_some(((v >> 10) as u32) & ENTRY_MAX),
    }))
}

/// A delivery noted by [`note`].
pub struct Delivery {
    /// The signal.
    pub sig: c_int,
    /// Inside a hooked call, before its event.
    pub in_call: bool,
    /// A SIGCHLD's ended child.
    pub ended: Option<u32>,
    /// Inside a hook, after its call.
    pub after_call: bool,
    /// At the program's entry into a hook, this many after the event before.
    pub entry: Option<u32>,
}

/// Deliveries the ring had no room for, since the last call.
pub fn take_lost() -> u32 {
    LOST.swap(0, SeqCst)
}
