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
use ddbx_wire::history::value::Value;

/// One thread's values, in the record's order.
#[derive(Debug, Default)]
pub struct OwnValues {
    /// The thread's logical id.
    pub t: u32,
    /// Each value with its gap (the thread's last event before it: its index plus one, 0 for
    /// none); `None` once handed out.
    list: Vec<(u64, Option<Value>)>,
    /// Everything before this index is handed out or dropped.
    cursor: usize,
}

/// Takes the values that a `~T` line gave a thread (clocks and randomness after it, in this
/// image: after event `done`) out of `values`, per thread. `runs`: which thread made which
/// event (`ld::threads::runs`). Empty when the history has no `~T` line: the values are then
/// the thread's that did the socket I/O, as before threads had their own.
pub fn split(values: &mut Vec<(u64, Value)>, runs: &[(usize, u32)], done: u64) -> Vec<OwnValues> {
    let mut own: Vec<OwnValues> = Vec::new();
    let mut of: Option<u32> = None;
    values.retain(|(after, v)| {
        if *after < done {
            return !matches!(v, Value::ValuesOf { .. });
        }
        if let Value::ValuesOf { t } = v {
            of = Some(*t);
            return false;
        }
        let Some(t) = of.filter(|_| crate::record::values::by_thread(v.key())) else {
            return true;
        };
        let gap = last_own(runs, t, *after);
        let i = match own.iter().position(|o| o.t == t) {
            Some(i) => i,
            None => {
                own.push(OwnValues {
                    t,
                    ..OwnValues::default()
                });
                own.len() - 1
            }
        };
        own[i].list.push((gap, Some(v.clone())));
        false
    });
    own
}

/// Thread `t`'s last event among the process's first `events` (its index plus one; 0: none).
pub fn last_own(runs: &[(usize, u32)], t: u32, events: u64) -> u64 {
    let mut end = events as usize;
    while end > 0 {
        // The run that event `end - 1` is in: from `start` on, thread `who`'s.
        let i = runs.partition_point(|(start, _)| *start < end);
        let (start, who) = if i == 0 { (0, 1) } else { runs[i - 1] };
        if who == t {
            return end as u64;
        }
        end = start;
    }
    0
}

/// Replay: whether the calling thread's values are its own (the history has `~T` lines and
/// the process's threads are ordered). Then [`take`] answers for it, and the process's list
/// of values must not.
pub fn owned(ld: &Ld) -> bool {
    ld.threads_ordered() && ld.replay.as_ref().is_some_and(|r| !r.values.own.is_empty())
}

/// The calling thread's next value of its current gap that `fits`, taken out of its list
/// (values of earlier gaps are dropped on the way).
pub fn take(ld: &mut Ld, fits: impl Fn(&Value) -> bool) -> Option<Value> {
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
            return v.take();
        }
        i += 1;
    }
    None
}
