//! A recording's histories as the tests read them: loaded by actor, blanked of run details for
//! comparisons, and compared record by record.

use ddbx_wire::{History, Record};
use std::collections::BTreeMap;
use std::path::Path;

/// Histories by actor id (`"p1"` → its records).
pub type Histories = BTreeMap<String, Vec<Record>>;

/// Every `DIR/history/*<suffix>` history by actor, its records passed through `each`.
fn load(dir: &Path, suffix: &str, each: fn(&Record) -> Record) -> Histories {
    let hist = dir.join("history");
    let entries = std::fs::read_dir(&hist).unwrap_or_else(|e| panic!("{}: {e}", hist.display()));
    let mut out = BTreeMap::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.to_string_lossy().ends_with(suffix) {
            continue;
        }
        let h = History::load(&path).unwrap_or_else(|e| panic!("{e}"));
        out.insert(h.actor.to_string(), h.records.iter().map(each).collect());
    }
    out
}

/// The histories of a recording (or of a replay's `--history-out`), by actor, as written.
pub fn raw_histories(dir: &Path) -> Histories {
    load(dir, ".ron", Record::clone)
}

/// The histories of a recording (or of a replay's `--history-out`), by actor, with run
/// details (pids, ports) blanked.
pub fn histories(dir: &Path) -> Histories {
    load(dir, ".ron", Record::without_run_details)
}

/// The full twin histories an optimal recording writes with `DDBX_TRACE_CHECK`
/// (`history/*.ron.full`), by actor, with run details blanked.
pub fn full_histories(dir: &Path) -> Histories {
    load(dir, ".ron.full", Record::without_run_details)
}

/// The history file at `path` as text with each short line (`r4 64`, written since history
/// format 2) written out as the RON record it stands for (`Recv(fd: 4, n: 64)`), so that a
/// test can look for a record's text; every other line as it is. "" if it cannot be read.
pub fn history_text(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = String::with_capacity(text.len() * 3);
    for piece in text.split_inclusive('\n') {
        let line = piece.trim_end_matches('\n');
        match ddbx_wire::history::fast::parse_line(line) {
            Some(record) => out.push_str(&record.to_line()),
            None => out.push_str(line),
        }
        if piece.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Asserts that two sets of histories are equal, naming the first difference.
pub fn assert_same_histories(a: &Histories, b: &Histories, what: &str) {
    let actors_a: Vec<&String> = a.keys().collect();
    let actors_b: Vec<&String> = b.keys().collect();
    assert_eq!(actors_a, actors_b, "{what}: different actors");
    for (actor, ra) in a {
        let rb = &b[actor];
        for (i, (x, y)) in ra.iter().zip(rb).enumerate() {
            assert_eq!(x, y, "{what}: {actor} event {} differs", i + 1);
        }
        assert_eq!(
            ra.len(),
            rb.len(),
            "{what}: {actor} has {} events vs {}",
            ra.len(),
            rb.len()
        );
    }
}

/// Whether a record is receive-like: an outcome optimal tracing may have to log (a receive, a
/// receive that found nothing, a ready set, an accept).
pub fn is_receive_like(r: &Record) -> bool {
    matches!(
        r,
        Record::Recv { .. } | Record::NoData { .. } | Record::Ready { .. } | Record::Accept { .. }
    )
}

/// How many receive-like events an optimal recording has, and how many of them it logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedReceives {
    /// Receive-like events in the full twin histories.
    pub total: usize,
    /// Those the optimal histories logged (not `Untraced`).
    pub logged: usize,
}

/// Counts [`LoggedReceives`] of an optimal recording from its histories and their full twins
/// ([`full_histories`]); the two must have the same actors and lengths.
pub fn logged_receives(optimal: &Histories, full: &Histories) -> LoggedReceives {
    let mut count = LoggedReceives {
        total: 0,
        logged: 0,
    };
    for (actor, full) in full {
        let opt = &optimal[actor];
        assert_eq!(
            opt.len(),
            full.len(),
            "{actor}: optimal and full differ in length"
        );
        for (f, o) in full.iter().zip(opt) {
            if is_receive_like(f) {
                count.total += 1;
                count.logged += usize::from(*o != Record::Untraced);
            }
        }
    }
    count
}
