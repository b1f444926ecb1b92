//! An actor's variables at a point of its history: what simple predicates are evaluated over.
//!
//! After `k` events of actor `a` (the state the paper calls "just after a's k-th event"), its
//! variables are:
//!
//! * every probe variable (`ddbx_set("x", 1)`, a [`Record::Probe`]): the value of its last
//!   `Probe` among events `1..=k`; a variable never probed by then is **unset** (absent);
//! * the built-in counters, always present: `events` (= k), `recvs` (`Recv` records, end of
//!   stream included), `sends`, `accepts`, `forks` (`Fork` and `Spawn`), and `alive` (1 when
//!   the actor has been created, k ≥ 1, and has not exited by k; else 0). A probe with the
//!   name of a counter is shadowed by the counter.
//!
//! At k = 0 the actor does not exist yet: no probe is set and every counter is 0. A simple
//! predicate over an unset variable is false; so a predicate can hold at k = 0 only when it is
//! trivially true there (e.g. `events == 0`), and [`super::inf::inf`] takes `holds(a, 0)` at
//! its word.

use ddbx_wire::counters::Counters;
use ddbx_wire::{History, Record};
use std::collections::BTreeMap;

/// The variables of `history`'s actor after its first `k` events (`k` beyond the history's
/// end counts as its end).
pub fn variables_at(history: &History, k: u64) -> BTreeMap<String, i64> {
    let k = (k as usize).min(history.records.len());
    let mut vars: BTreeMap<String, i64> = BTreeMap::new();
    for r in &history.records[..k] {
        if let Record::Probe { name, value } = r {
            vars.insert(name.clone(), *value);
        }
    }
    for (name, value) in Counters::of(&history.records[..k]).all() {
        vars.insert(name.to_string(), value);
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn probes_and_counters_after_k_events() {
        let text = "Header(format: 1, actor: \"p1\")\n\
            Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n\
            Probe(name: \"x\", value: 1)\n\
            Recv(fd: 3, n: 0)\n\
            Probe(name: \"x\", value: 7)\n\
            Fork(index: 1)\n\
            Spawn(index: 2)\n\
            Send(fd: 3, n: 2)\n\
            Probe(name: \"events\", value: 99)\n\
            Exit(status: 0)\n";
        let h = History::parse(Path::new("t"), text).unwrap();
        let v0 = variables_at(&h, 0);
        assert_eq!(v0.get("x"), None);
        assert_eq!((v0["events"], v0["alive"]), (0, 0));
        let v2 = variables_at(&h, 2);
        assert_eq!(
            (v2["x"], v2["events"], v2["alive"], v2["recvs"]),
            (1, 2, 1, 0)
        );
        let v6 = variables_at(&h, 6);
        assert_eq!(
            (v6["x"], v6["recvs"], v6["forks"], v6["sends"]),
            (7, 1, 2, 0)
        );
        let v8 = variables_at(&h, 8);
        assert_eq!((v8["events"], v8["sends"], v8["alive"]), (8, 1, 1));
        let end = variables_at(&h, 100);
        assert_eq!((end["events"], end["alive"], end["accepts"]), (9, 0, 0));
    }
}
