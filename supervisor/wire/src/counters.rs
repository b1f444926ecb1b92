//! The built-in counters every actor has (`p3.recvs`, `p3.events`, …): their names and how a
//! history's records count towards them — defined once, for the LD (which evaluates its own
//! simple predicate live), the offline analysis (`ddbx inf`, races) and the debugger's cut
//! search.
//!
//! After `k` events of an actor: `events` = k; `recvs` counts `Recv` and `RecvDatagram` records
//! (end of stream included; a `Peek` takes nothing and is not counted), `sends` `Send` and
//! `SendDatagram` records, `accepts` `Accept` records, `forks` `Fork` and `Spawn`
//! records; `alive` is 1 when the actor has been created (k ≥ 1) and has not exited by k, else
//! 0. A probe with the name of a counter is shadowed by the counter.

use crate::history::Record;

/// The names of the built-in counters, in the order they are printed.
pub const NAMES: [&str; 6] = ["events", "recvs", "sends", "accepts", "forks", "alive"];

/// Whether `name` is a built-in counter.
pub fn is_counter(name: &str) -> bool {
    NAMES.contains(&name)
}

/// The counters of one actor after some prefix of its history, advanced record by record.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// Events executed (the prefix's length).
    pub events: i64,
    /// `Recv` and `RecvDatagram` records (end of stream included).
    pub recvs: i64,
    /// `Send` and `SendDatagram` records.
    pub sends: i64,
    /// `Accept` records.
    pub accepts: i64,
    /// `Fork` and `Spawn` records: children created.
    pub forks: i64,
    /// An `Exit` record has been counted.
    pub exited: bool,
}

impl Counters {
    /// Counts one more event, `record`.
    pub fn count(&mut self, record: &Record) {
        self.events += 1;
        match record {
            Record::Recv { .. } | Record::RecvDatagram { .. } => self.recvs += 1,
            Record::Send { .. } | Record::SendDatagram { .. } => self.sends += 1,
            Record::Accept { .. } => self.accepts += 1,
            Record::Fork { .. } | Record::Spawn { .. } => self.forks += 1,
            Record::Exit { .. } => self.exited = true,
            _ => {}
        }
    }

    /// The counters after `records`, counted from nothing.
    pub fn of(records: &[Record]) -> Counters {
        let mut c = Counters::default();
        for r in records {
            c.count(r);
        }
        c
    }

    /// The value of the counter `name`; `None` if `name` is not a counter.
    pub fn get(&self, name: &str) -> Option<i64> {
        Some(match name {
            "events" => self.events,
            "recvs" => self.recvs,
            "sends" => self.sends,
            "accepts" => self.accepts,
            "forks" => self.forks,
            "alive" => i64::from(self.events >= 1 && !self.exited),
            _ => return None,
        })
    }

    /// Every counter with its value, in [`NAMES`] order.
    pub fn all(&self) -> impl Iterator<Item = (&'static str, i64)> + '_ {
        NAMES
            .iter()
            .filter_map(move |name| self.get(name).map(|v| (*name, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::History;
    use std::path::Path;

    #[test]
    fn counts_and_alive() {
        let text = "Header(format: 1, actor: \"p1\")\n\
            Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n\
            Recv(fd: 3, n: 0)\n\
            Fork(index: 1)\n\
            Spawn(index: 2)\n\
            Send(fd: 3, n: 2)\n\
            Exit(status: 0)\n";
        let h = History::parse(Path::new("t"), text).unwrap();
        assert_eq!(Counters::default().get("alive"), Some(0));
        let c = Counters::of(&h.records[..4]);
        assert_eq!(
            c.all().collect::<Vec<_>>(),
            [
                ("events", 4),
                ("recvs", 1),
                ("sends", 0),
                ("accepts", 0),
                ("forks", 2),
                ("alive", 1)
            ]
        );
        let end = Counters::of(&h.records);
        assert_eq!((end.get("sends"), end.get("alive")), (Some(1), Some(0)));
        assert_eq!(end.get("x"), None);
    }
}
