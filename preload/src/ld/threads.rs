//! In a process with threads, which thread made which event of the history: read from its
//! `~t` lines as replay loads it (`replay/threads.rs` makes each thread wait for its turn).

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
