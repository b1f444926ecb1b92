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
        self.ordered_files = files
            .iter()
            .filter_map(|(slot, f)| Some((*slot, f.horizon()?)))
            .collect();
        self.ordered_files.sort_unstable();
        for t in takers {
            let file = files.get(&t.file);
            let mut needs: Vec<Event> = match t.kind {
                Kind::Write(turn) => {
                    let mut needs = last_reads(file, turn);
                    let horizon = file.and_then(FileTurns::horizon);
                    let before = match horizon {
                        Some(h) if turn <= h => turn.checked_sub(1),
                        Some(h) => Some(h),
                        None => None,
                    };
                    needs.extend(before.and_then(|b| file?.writes.get(&b)));
                    needs
                }
                Kind::Read(n) => last_writes(file, n),
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

/// Each writer's last event among the first `n` writes into `file`.
fn last_writes(file: Option<&FileTurns>, n: u64) -> Vec<Event> {
    let mut last: BTreeMap<ActorId, u64> = BTreeMap::new();
    for (_, &(actor, gap)) in file.into_iter().flat_map(|f| f.writes.range(..n)) {
        let e = last.entry(actor).or_default();
        *e = (*e).max(gap);
    }
    last.into_iter().collect()
}

impl FileTurns {
    /// The count of writes the last partial read saw (one that did not see every write).
    fn horizon(&self) -> Option<u64> {
        let total = self.writes.keys().next_back().map_or(0, |t| t + 1);
        self.reads.keys().rev().find(|n| **n < total).copied()
    }
}

/// Each reader's last event among the reads of `file` made after at most `turn` writes.
fn last_reads(file: Option<&FileTurns>, turn: u64) -> Vec<Event> {
    let mut last: BTreeMap<ActorId, u64> = BTreeMap::new();
    for &(actor, gap) in file
        .into_iter()
        .flat_map(|f| f.reads.range(..=turn))
        .flat_map(|(_, r)| r)
    {
        let e = last.entry(actor).or_default();
        *e = (*e).max(gap);
    }
    last.into_iter().collect()
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
