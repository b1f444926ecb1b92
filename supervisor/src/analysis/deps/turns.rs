//! Needs through shared files: the turns that writes, reads and locks took in a file the
//! record's processes shared (value lines `~a`, `~f`, `~l` that name their file, `#5`).
//!
//! They are not events: a turn comes in the gap after an actor's event *k*, which a process
//! halted after *k* has made. So the needs are *k*'s, kept apart from the events' own needs
//! ([`Deps::turn_needs`]): a consistent cut that executes *k* has what the turns after it
//! saw, and a halting replay asks for it at *k*'s gate. Not in the happened-before order of
//! events (clocks, races): event *k* itself does not follow them.
//!
//! A file is treated as the paper treats a channel: a write is a send, and writes need
//! nothing of each other, as two sends do not (their order is a race, which a replay keeps,
//! but a halt does not hold a writer for: the lines several processes print into one output
//! and read at the end must not make a halted run go further than its messages need). What a
//! read sees is what was written before it: a read after *n* writes needs each of them (each
//! writer's last one among them), and a write needs the reads made after at most its turn's
//! writes (each reader's last one), which must not see it. Where a read saw only some of the
//! file's writes (a *partial* read; the last such count is the file's *horizon* *h*,
//! [`Deps::ordered_files`]), the writes up to turn *h* keep their order (the write of turn
//! *t* ≤ *h* needs the one before it), and a later write needs the write of turn *h*, so that
//! the count of writes a partial read waits for is the count of its writes.
//! A lock needs the lock of the turn before it (its holder let go of it first).
//!
//! Each need is on the gap's event (the event before the value; an actor's first gap is its
//! `Start`'s). A turn (a write too) that comes after a wait that reaped a recorded child in
//! the same gap (`~w3`: a shell writes into a log once its child has ended) also needs that
//! child's last event: the wait is no event either, and a halted process has made the turns
//! after its last event.

use super::{Deps, Event};
use ddbx_wire::ActorId;
use ddbx_wire::History;
use ddbx_wire::history::Origin;
use ddbx_wire::history::value::Value;
use std::collections::{BTreeMap, HashMap};

/// One file's turns, each at its actor's event.
#[derive(Default)]
struct FileTurns {
    /// Write turn → its event.
    writes: BTreeMap<u64, Event>,
    /// Write count → the reads made after that many writes.
    reads: BTreeMap<u64, Vec<Event>>,
    /// Lock turn → its event.
    locks: HashMap<u64, Event>,
}

/// What a turn needs of its file's other turns.
enum Kind {
    /// The write of this turn: the reads after at most as many writes as its turn.
    Write(u64),
    /// A read after this many writes: them.
    Read(u64),
    /// The lock of this turn: the one before.
    Lock(u64),
}

/// A turn whose needs are still to find: where it is, what it is, the children reaped
/// before it in its gap.
struct Taker {
    at: Event,
    file: u32,
    kind: Kind,
    reaped: Vec<ActorId>,
}

impl Deps {
    /// Adds the needs of every turn that names its file (see the module docs).
    pub(super) fn add_turn_needs(
        &mut self,
        histories: &[History],
        origins: &HashMap<ActorId, Origin>,
    ) {
        let (files, takers) = collect(histories, origins);
        self.ordered_files = files
            .iter()
            .filter_map(|(slot, f)| Some((*slot, f.horizon()?)))
            .collect();
        self.ordered_files.sort_unstable();
        let (seen_writes, seen_reads) = sweep(&files, &takers);
        for t in takers {
            let file = files.get(&t.file);
            let mut needs: Vec<Event> = match t.kind {
                Kind::Write(turn) => {
                    let mut needs = seen_reads
                        .get(&(t.file, turn + 1))
                        .cloned()
                        .unwrap_or_default();
                    let horizon = file.and_then(FileTurns::horizon);
                    let before = match horizon {
                        Some(h) if turn <= h => turn.checked_sub(1),
                        Some(h) => Some(h),
                        None => None,
                    };
                    needs.extend(before.and_then(|b| file?.writes.get(&b)));
                    needs
                }
                Kind::Read(n) => seen_writes.get(&(t.file, n)).cloned().unwrap_or_default(),
                Kind::Lock(turn) => turn
                    .checked_sub(1)
                    .and_then(|before| file?.locks.get(&before))
                    .into_iter()
                    .copied()
                    .collect(),
            };
            for &child in &t.reaped {
                let end = self.event_count(child);
                if end > 0 {
                    needs.push((child, end));
                }
            }
            for to in needs {
                self.add_turn_need(t.at, to);
            }
        }
    }

    /// Adds "the turns after `from` need `to`" unless both are the same actor's, or `from`
    /// is beyond its history.
    fn add_turn_need(&mut self, from: Event, to: Event) {
        if from.0 == to.0 || from.1 > self.event_count(from.0) {
            return;
        }
        let needs = self.turn_needs.entry(from).or_default();
        if !needs.contains(&to) {
            needs.push(to);
        }
    }

    /// The shared files (slots) that a read saw only some writes of, with their horizon (the
    /// last such read's count of writes): the writes up to that turn keep their order in a
    /// halting replay, and the later ones come after them (see the module docs).
    pub fn ordered_files(&self) -> &[(u32, u64)] {
        &self.ordered_files
    }

    /// What the shared-file turns in the gap after event `event` of `actor` need (see the
    /// module docs); empty for most events.
    pub fn turn_needs(&self, actor: ActorId, event: u64) -> &[Event] {
        self.turn_needs
            .get(&(actor, event))
            .map_or(&[], Vec::as_slice)
    }
}

/// Every turn that names its file, by file, and as takers of needs (with the children reaped
/// before each in its gap).
fn collect(
    histories: &[History],
    origins: &HashMap<ActorId, Origin>,
) -> (HashMap<u32, FileTurns>, Vec<Taker>) {
    let children = children_by_number(origins);
    let mut files: HashMap<u32, FileTurns> = HashMap::new();
    let mut takers = Vec::new();
    for h in histories {
        // The children reaped so far in the current gap.
        let mut reaped: (u64, Vec<ActorId>) = (0, Vec::new());
        for (gap, v) in &h.values {
            let at = (h.actor, (*gap).max(1));
            if reaped.0 != *gap {
                reaped = (*gap, Vec::new());
            }
            let (file, kind) = match *v {
                Value::Reaped { child } => {
                    reaped.1.extend(children.get(&(h.actor, child)));
                    continue;
                }
                Value::Appended {
                    turn,
                    file: Some(f),
                    ..
                } => {
                    files.entry(f).or_default().writes.insert(turn, at);
                    (f, Kind::Write(turn))
                }
                Value::ReadAfter {
                    writes,
                    file: Some(f),
                } => {
                    let reads = files.entry(f).or_default().reads.entry(writes);
                    reads.or_default().push(at);
                    (f, Kind::Read(writes))
                }
                Value::Locked {
                    turn: Ok(turn),
                    file: Some(f),
                } => {
                    files.entry(f).or_default().locks.insert(turn, at);
                    (f, Kind::Lock(turn))
                }
                _ => continue,
            };
            takers.push(Taker {
                at,
                file,
                kind,
                reaped: reaped.1.clone(),
            });
        }
    }
    (files, takers)
}

/// (file, limit) → each actor's last event among some of the file's turns below the limit.
type Seen = HashMap<(u32, u64), Vec<Event>>;

/// Seen by each file's reads and writes: (file, limit) → each actor's last event among the
/// writes below a read's count (limit: the count) and the reads up to a write's turn (limit:
/// the turn + 1), for the limits `takers` ask for.
#[allow(clippy::type_complexity)]
fn sweep(
    files: &HashMap<u32, FileTurns>,
    takers: &[Taker],
) -> (
    HashMap<(u32, u64), Vec<Event>>,
    HashMap<(u32, u64), Vec<Event>>,
) {
    // What the reads and writes of each file need: each actor's last write below a read's
    // count, its last read up to a write's turn (one sweep per file and kind).
    let mut seen_writes = Seen::new();
    let mut seen_reads = Seen::new();
    for (slot, f) in files {
        let (mut write_limits, mut read_limits): (Vec<u64>, Vec<u64>) = (vec![], vec![]);
        for t in takers.iter().filter(|t| t.file == *slot) {
            match t.kind {
                Kind::Read(n) => write_limits.push(n),
                Kind::Write(turn) => read_limits.push(turn + 1),
                Kind::Lock(_) => {}
            }
        }
        let writes: Vec<(u64, Event)> = f.writes.iter().map(|(k, e)| (*k, *e)).collect();
        let reads: Vec<(u64, Event)> = f
            .reads
            .iter()
            .flat_map(|(k, es)| es.iter().map(move |e| (*k, *e)))
            .collect();
        for (limit, lasts) in prefix_lasts(&writes, write_limits) {
            seen_writes.insert((*slot, limit), lasts);
        }
        for (limit, lasts) in prefix_lasts(&reads, read_limits) {
            seen_reads.insert((*slot, limit), lasts);
        }
    }
    (seen_writes, seen_reads)
}

impl FileTurns {
    /// The count of writes the last partial read saw (one that did not see every write).
    fn horizon(&self) -> Option<u64> {
        let total = self.writes.keys().next_back().map_or(0, |t| t + 1);
        self.reads.keys().rev().find(|n| **n < total).copied()
    }
}

/// For each of `limits`: each actor's last event among `items` (sorted by key) whose key is
/// below it; one sweep.
fn prefix_lasts(items: &[(u64, Event)], mut limits: Vec<u64>) -> Vec<(u64, Vec<Event>)> {
    limits.sort_unstable();
    limits.dedup();
    let mut last: BTreeMap<ActorId, u64> = BTreeMap::new();
    let mut next = items.iter().peekable();
    let mut out = Vec::with_capacity(limits.len());
    for limit in limits {
        while let Some(&&(key, (actor, gap))) = next.peek() {
            if key >= limit {
                break;
            }
            let e = last.entry(actor).or_default();
            *e = (*e).max(gap);
            next.next();
        }
        out.push((limit, last.iter().map(|(a, g)| (*a, *g)).collect()));
    }
    out
}

/// (parent, child number as its `Fork`/`Spawn` names it) → the child.
pub(super) fn children_by_number(
    origins: &HashMap<ActorId, Origin>,
) -> HashMap<(ActorId, u32), ActorId> {
    origins
        .iter()
        .filter_map(|(child, o)| match o {
            Origin::Fork { parent, index } | Origin::Spawn { parent, index } => {
                Some(((*parent, *index), *child))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Deps;
    use crate::analysis::testing::{START, hist, p};

    /// p1 and p2 append to one file (`#7`) and p3 reads it twice: after 1 write, then after
    /// all 3 (a partial read, then a full one). The first read needs p1's first write; the
    /// second, each writer's last; p2's write of turn 1 (the horizon) needs the partial read
    /// (which must not see it) and the write before it, turn 0; p1's write of turn 2 (past
    /// the horizon) needs the partial read too and the write at the horizon. Turns that name
    /// no file need nothing.
    #[test]
    fn reads_need_the_writes_they_saw_and_writes_the_reads_before_them() {
        let child = |n: u32| {
            format!(
                "Start(pid: {n}, ppid: 1, origin: Fork(parent: \"p1\", index: {}), argv: [\"a\"], host: \"h\")\n",
                n - 1
            )
        };
        let d = Deps::from_histories(&[
            hist(
                1,
                &format!(
                    "{START}Fork(index: 1)\n~a0#7\nFork(index: 2)\nProbe(name: \"x\", value: 1)\n~a2#7\n~a3\n"
                ),
            ),
            hist(
                2,
                &format!("{}Probe(name: \"x\", value: 2)\n~a1/1#7\n", child(2)),
            ),
            hist(
                3,
                &format!("{}~f1#7\nProbe(name: \"x\", value: 3)\n~f3#7\n", child(3)),
            ),
        ]);
        assert_eq!(d.ordered_files(), [(7, 1)]);
        // Reads: the first after p1's turn 0 (its gap 2), the second after all.
        assert_eq!(d.turn_needs(p(3), 1), [(p(1), 2)]);
        let mut full = d.turn_needs(p(3), 2).to_vec();
        full.sort();
        assert_eq!(full, [(p(1), 4), (p(2), 2)]);
        // p2's turn 1 (at the horizon): the partial read and turn 0.
        let mut w1 = d.turn_needs(p(2), 2).to_vec();
        w1.sort();
        assert_eq!(w1, [(p(1), 2), (p(3), 1)]);
        // p1's turn 2 (after the horizon): the partial read and the write at the horizon.
        let mut w2 = d.turn_needs(p(1), 4).to_vec();
        w2.sort();
        assert_eq!(w2, [(p(2), 2), (p(3), 1)]);
        // A turn without its file (`~a3`) and p1's first write need nothing of others.
        assert!(d.turn_needs(p(1), 2).is_empty());
    }
}
