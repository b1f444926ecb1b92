//! In a process with threads, which thread made which event of the history (its `~t` lines)
//! and which fds each thread made outside events (its `~n` lines): read as replay loads it
//! (`replay/threads.rs` makes each thread wait for its turn, `hooks::made_fd` moves each fd
//! onto its recorded number).

use ddbx_wire::history::Record;
use ddbx_wire::history::value::Value;

/// Takes the `~t` lines out of the history's `values`, and returns from which event on (an
/// index into `records`) which thread made the events: sorted, empty when the main thread
/// made them all. An exec'd image starts with its main thread again, at its `Exec`.
pub fn runs(values: &mut Vec<(u64, Value)>, records: &[Record]) -> Vec<(usize, u32)> {
    let mut switches = Vec::new();
    values.retain(|(after, v)| match v {
        Value::Thread { t } => {
            switches.push((*after as usize, *t));
            false
        }
        _ => true,
    });
    if switches.is_empty() {
        return Vec::new();
    }
    let mut runs: Vec<(usize, u32)> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Record::Exec { .. }))
        .map(|(i, _)| (i, 1))
        .collect();
    // At the same event, the image's start comes first and the switch after it.
    runs.extend(switches);
    runs.sort_by_key(|(at, _)| *at);
    runs
}

/// The thread that made event index `at` (0-based).
pub fn thread_of(runs: &[(usize, u32)], at: usize) -> u32 {
    let i = runs.partition_point(|(start, _)| *start <= at);
    if i == 0 { 1 } else { runs[i - 1].1 }
}

/// The fds the record's threads made and closed with calls that are not events (`~n` and `~x`
/// lines), in the record's order, each after the events before it: replay makes each at its
/// place (after those events, before the next one) and moves a made fd onto the recorded
/// number. The closes count as much as the opens: the number a close frees is the one the
/// next open, accept or pipe of any thread gets.
#[derive(Debug, Default)]
pub struct Made {
    /// (events before it, thread, fd, whether it is a close).
    list: Vec<(u64, u32, i32, bool)>,
    /// Made (or given up) already.
    taken: Vec<bool>,
    /// Per thread id: where its next one is looked for in `list`.
    next: Vec<usize>,
    /// Everything before this index is taken.
    settled: usize,
}

impl Made {
    /// Takes the `~n` and `~x` lines after event `done` out of the history's `values` (an
    /// exec'd image starts after the events of the images before it).
    pub fn take_from(values: &mut Vec<(u64, Value)>, done: u64) -> Made {
        let mut list = Vec::new();
        values.retain(|(after, v)| {
            let (t, fd, closes) = match v {
                Value::Opened { t, fd } => (*t, *fd, false),
                Value::Freed { t, fd } => (*t, *fd, true),
                _ => return true,
            };
            if *after >= done {
                list.push((*after, t, fd, closes));
            }
            false
        });
        Made {
            taken: vec![false; list.len()],
            list,
            next: Vec::new(),
            settled: 0,
        }
    }

    /// Thread `t`'s next fd change in the record, when it is of the kind asked for (a close
    /// or not): its index here, how many events came before it, and the fd. `None` when the
    /// thread's next one is of the other kind (the program took another path) or there is none.
    pub fn next_of(&mut self, t: u32, closes: bool) -> Option<(usize, u64, i32)> {
        let i = t as usize;
        if self.next.len() <= i {
            self.next.resize(i + 1, 0);
        }
        let from = self.next[i].min(self.list.len());
        let k = from + self.list[from..].iter().position(|(_, of, ..)| *of == t)?;
        let (gap, _, fd, is_close) = self.list[k];
        if is_close != closes {
            return None;
        }
        self.next[i] = k + 1;
        Some((k, gap, fd))
    }

    /// How many of the record's fd changes, from the first, are made (or given up) already.
    pub fn settled(&self) -> usize {
        self.settled
    }

    /// Entry `k` is made (or given up).
    pub fn done(&mut self, k: usize) {
        if let Some(t) = self.taken.get_mut(k) {
            *t = true;
        }
        while self.taken.get(self.settled).copied().unwrap_or(false) {
            self.settled += 1;
        }
    }

    /// Whether an fd change the record made after `events` events, before the next one, is
    /// still to be made.
    pub fn pending(&self, events: u64) -> bool {
        self.list
            .get(self.settled)
            .is_some_and(|(gap, ..)| *gap <= events)
    }

    /// Gives up the fd changes still to be made after `events` events (their threads never
    /// came).
    pub fn give_up(&mut self, events: u64) {
        while self.pending(events) {
            let k = self.settled;
            self.done(k);
        }
    }
}
