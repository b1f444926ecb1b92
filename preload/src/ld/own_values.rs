//! In a process with threads: each thread's clock reads and random bytes (the values after a
//! `~T` line naming it), as replay loads them; `preload/src/replay/thread_values.rs` hands
//! them out.

use ddbx_wire::history::value::Value;

/// One thread's values, in the record's order.
#[derive(Debug, Default)]
pub struct OwnValues {
    /// The thread's logical id.
    pub t: u32,
    /// Each value with its gap (the thread's last event before it: its index plus one, 0 for
    /// none); `None` once handed out.
    pub list: Vec<(u64, Option<Value>)>,
    /// Everything before this index is handed out or dropped.
    pub cursor: usize,
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
        let Some(t) = of.filter(|_| v.key().by_thread()) else {
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
