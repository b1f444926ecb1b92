//! The ring of what happened in signal handlers, for the history: each delivery (the signal,
//! whether it came in a hooked call, and in one that made no event, the child whose end raised
//! it), each outcome of a non-blocking wait, each channel end a handler closed inside a hooked
//! call. Written from the LD's signal handler (atomics only); emptied into value lines before
//! the next event's line (`preload/src/ld/journal.rs`).

use libc::c_int;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

const NOTES: usize = 256;
/// A signal: `ended << 32 | no_event << 8 | sig << 1 | in_call` (`ended`: a child number);
/// a non-blocking wait's outcome: `WAIT_NOTE | child`. 0: free.
static NOTE: [AtomicU64; NOTES] = [const { AtomicU64::new(0) }; NOTES];
static WRITTEN: AtomicUsize = AtomicUsize::new(0);
static READ: AtomicUsize = AtomicUsize::new(0);
/// Deliveries not noted because the ring was full (the history misses them).
static LOST: AtomicU32 = AtomicU32::new(0);

/// The program's handler for `sig` runs now; `in_call`: inside a hooked call; `no_event`:
/// one that made no event (replay: as the plan says; record: found when the hook ends,
/// [`hook_ended_without_event`]); `ended`: see `super::ended_child`.
pub fn note(sig: c_int, in_call: bool, no_event: bool, ended: u32) {
    let place = u64::from(in_call) | if no_event { NO_EVENT } else { 0 };
    push_note(u64::from(ended) << 32 | (sig as u64) << 1 | place);
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
/// A delivery during a hooked call that ended without an event (`~n`).
const NO_EVENT: u64 = 1 << 8;

/// Where the ring is: a hook notes it as it starts ([`hook_ended_without_event`]).
pub fn notes_written() -> usize {
    WRITTEN.load(SeqCst)
}

/// The hooked call that started when the ring was at `from` ends without having made an
/// event (a sleep, a wait for a child, a call on a file): the deliveries noted during it came
/// in a call, but not in the call of the next event. Replay runs those at the program's next
/// hooked call; one that came in an event's call waits for that call (rsync's receiver
/// checks the flag its SIGUSR2 handler sets before each `poll`: run at a call before the
/// `poll` the record's signal interrupted, it made the receiver leave without that `poll`).
pub fn hook_ended_without_event(from: usize) {
    if super::mode() != super::RECORD {
        return;
    }
    let to = WRITTEN.load(SeqCst);
    let mut at = from.max(READ.load(SeqCst));
    while at != to && at.wrapping_sub(from) < NOTES {
        let slot = &NOTE[at % NOTES];
        let v = slot.load(SeqCst);
        if v & 1 == 1 && v & (WAIT_NOTE | CLOSE_NOTE) == 0 {
            // Taken meanwhile (swapped to 0), the slot is left alone.
            let _ = slot.compare_exchange(v, v | NO_EVENT, SeqCst, SeqCst);
        }
        at = at.wrapping_add(1);
    }
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
    /// A delivery: signal, in a call, in a call that made no event, the child whose end
    /// raised it.
    Signal(c_int, bool, bool, Option<u32>),
    /// A non-blocking wait's outcome.
    Reaped(u32),
}

/// The next note, oldest first.
pub fn next_note() -> Option<Note> {
    let at = READ.load(SeqCst);
    if at == WRITTEN.load(SeqCst) {
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
    Some(Note::Signal(
        ((v >> 1) & 0x7f) as c_int,
        v & 1 == 1,
        v & NO_EVENT != 0,
        (ended != 0).then_some(ended),
    ))
}

/// Deliveries the ring had no room for, since the last call.
pub fn take_lost() -> u32 {
    LOST.swap(0, SeqCst)
}
