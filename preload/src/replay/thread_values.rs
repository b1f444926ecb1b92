//! Replay of the clock reads and random bytes of a process with threads: each thread gets its
//! own (the values after a `~T` line naming it), resynchronised at its own events.
//!
//! A thread's values cannot be placed by the process's event count, as a single thread's are
//! (`replay/values.rs`): between two of its own events a thread runs as fast as it runs, while
//! the other threads make their events, so the process's count at its clock read differs from
//! the record's. What does not differ is the thread's own last event before the read, an
//! index that is the same in every replay. Each value is filed under that index (its "gap"):
//! a thread is handed, in order, the values the record's thread read after the same event of
//! its own; one left over when the thread makes its next event is dropped, and a read the
//! record did not make gets the real clock's continuation, as in `replay/values.rs`.

use crate::ld::Ld;
use crate::ld::own_values::last_own;
use ddbx_wire::history::value::Value;

/// Replay: whether the calling thread's values are its own (the history has `~T` lines and
/// the process's threads are ordered). Then [`take`] answers for it, and the process's list
/// of values must not.
pub fn owned(ld: &Ld) -> bool {
    ld.threads_ordered() && ld.replay.as_ref().is_some_and(|r| !r.values.own.is_empty())
}

/// The calling thread's next value of its current gap that `fits`, taken out of its list
/// (`take`) or left in it (values of earlier gaps are dropped on the way).
pub fn find(ld: &mut Ld, fits: impl Fn(&Value) -> bool, take: bool) -> Option<Value> {
    let me = crate::locks::me();
    let events = ld.events();
    let replay = ld.replay.as_mut()?;
    let gap = last_own(&replay.threads, me, events);
    let own = replay.values.own.iter_mut().find(|o| o.t == me)?;
    while let Some((g, v)) = own.list.get(own.cursor) {
        if *g < gap || v.is_none() {
            own.cursor += 1;
        } else {
            break;
        }
    }
    let mut i = own.cursor;
    while let Some((g, v)) = own.list.get_mut(i) {
        if *g != gap {
            return None;
        }
        if v.as_ref().is_some_and(&fits) {
            return if take { v.take() } else { v.clone() };
        }
        i += 1;
    }
    None
}
