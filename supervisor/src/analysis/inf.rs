//! Consistent global states (cuts) and Inf(P) for conjunctive predicates, computed offline.
//!
//! This is the oracle the online halting algorithm (the GD's, in `crate::session`) is tested
//! against.
//!
//! * A **cut** ([`Cut`]) maps each actor to how many of its events it has executed (0: not
//!   created yet; an actor missing from the map counts as 0). It is the paper's global state
//!   (Def. 2) "just after each actor's last executed event".
//! * A cut is **consistent** iff every executed event's needs ([`Deps::needs`], and
//!   [`Deps::turn_needs`] for the turns in shared files that come after it, plus program
//!   order, which a count respects by construction) are executed too — equivalently, no
//!   executed event needs an unexecuted one. A connect and its accept need each other, so a
//!   consistent cut has both or neither.
//! * Cuts are ordered entry-wise (Def. 3). Consistent cuts are closed under entry-wise min and
//!   max, so every cut `C` has a least consistent cut `≥ C`, its **closure** ([`close`]).
//! * For a conjunctive predicate `P = ∧ SP_a` (one simple predicate per constrained actor a),
//!   **Inf(P)** (Def. 4) is the least consistent cut where every `SP_a` holds at `C[a]`
//!   ([`inf`]); it is unique because the satisfying consistent cuts are closed under min.
//!
//! Events beyond an actor's history do not exist: counts above a history's length are treated
//! as its length.

use crate::analysis::deps::{Deps, Event};
use ddbx_wire::ActorId;
use std::collections::BTreeMap;

/// A global state: how many events each actor has executed.
pub type Cut = BTreeMap<ActorId, u64>;

/// Positions of every actor of a [`Deps`], raised to their closure incrementally: each event's
/// needs are applied once, however often the positions move.
struct Closer<'a> {
    deps: &'a Deps,
    pos: Vec<u64>,
    /// Events `1..=applied[i]` of actor i have had their needs applied.
    applied: Vec<u64>,
    /// Also apply creation: an executed fork has created its child (see [`inf_online`]).
    creation: bool,
}

impl<'a> Closer<'a> {
    fn new(deps: &'a Deps) -> Closer<'a> {
        let n = deps.actors().len();
        Closer {
            deps,
            pos: vec![0; n],
            applied: vec![0; n],
            creation: false,
        }
    }

    /// A closer for cuts as a replay can reach them (see [`inf_online`]): creation applied,
    /// the root created.
    fn online(deps: &'a Deps) -> Closer<'a> {
        let mut c = Closer::new(deps);
        c.creation = true;
        if let Some(i) = deps.actor_index(ActorId::ROOT) {
            c.raise(i, deps.creation_events(ActorId::ROOT));
        }
        c
    }

    /// Raises actor `i` to at least `k` (clamped to its history).
    fn raise(&mut self, i: usize, k: u64) {
        let k = k.min(self.deps.event_count(self.deps.actors()[i]));
        self.pos[i] = self.pos[i].max(k);
    }

    /// Raises positions until every executed event's needs are executed.
    fn settle(&mut self) {
        let mut work: Vec<usize> = (0..self.pos.len())
            .filter(|&i| self.applied[i] < self.pos[i])
            .collect();
        while let Some(i) = work.pop() {
            let a = self.deps.actors()[i];
            while self.applied[i] < self.pos[i] {
                self.applied[i] += 1;
                let (created, waited) = if self.creation {
                    (
                        self.deps
                            .creates(a, self.applied[i])
                            .map(|c| c.last_event()),
                        self.deps.child_exits(a, self.applied[i]),
                    )
                } else {
                    (None, Vec::new())
                };
                for &(b, j) in self
                    .deps
                    .needs(a, self.applied[i])
                    .iter()
                    .chain(self.deps.turn_needs(a, self.applied[i]))
                    .chain(created.as_ref())
                    .chain(&waited)
                {
                    if let Some(bi) = self.deps.actor_index(b)
                        && self.pos[bi] < j
                    {
                        self.pos[bi] = j;
                        work.push(bi);
                    }
                }
            }
        }
    }

    fn cut(&self) -> Cut {
        self.deps
            .actors()
            .iter()
            .zip(&self.pos)
            .map(|(a, k)| (*a, *k))
            .collect()
    }
}

/// Why a cut is not consistent: an executed event needs one that is not executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Violation {
    /// The executed event.
    pub event: Event,
    /// The event of another actor it needs, which the cut does not execute.
    pub needs: Event,
}

/// Whether `cut` is consistent; if not, the first [`Violation`] in (actor, event) order.
/// Entries for actors without a history are ignored.
pub fn is_consistent(deps: &Deps, cut: &Cut) -> Result<(), Violation> {
    let at = |a: &ActorId| cut.get(a).copied().unwrap_or(0);
    for &a in deps.actors() {
        for k in 1..=at(&a).min(deps.event_count(a)) {
            for &(b, j) in deps.needs(a, k).iter().chain(deps.turn_needs(a, k)) {
                if at(&b) < j {
                    return Err(Violation {
                        event: (a, k),
                        needs: (b, j),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The least consistent cut `≥ cut`. The result has an entry for every actor with a history
/// (0 included), and none for others.
pub fn close(deps: &Deps, cut: Cut) -> Cut {
    let mut c = Closer::new(deps);
    for (a, k) in cut {
        if let Some(i) = deps.actor_index(a) {
            c.raise(i, k);
        }
    }
    c.settle();
    c.cut()
}

/// Inf(P) for the conjunctive predicate "`holds(a, C[a])` for every `a` in `actors`": the least
/// consistent cut satisfying it, or `None` when there is none in this recording.
///
/// `holds(a, k)` evaluates a's simple predicate after its `k`-th event; at `k = 0` (before
/// creation) it should be false unless the predicate is trivially true there (see
/// [`super::vars`]). Actors not in `actors` are unconstrained. The result has an entry for
/// every actor with a history; a constrained actor without one has no events, so its predicate
/// must hold at 0.
///
/// The classic loop: put each constrained actor at its first `k ≥ 0` where it holds; close the
/// cut; move each constrained actor whose predicate does not hold at its new position to its
/// next `k` where it does; repeat until nothing moves.
///
/// *Termination*: every round but the last strictly raises at least one position (closing only
/// raises positions, and a moved actor moves forward), positions never exceed the history
/// lengths, and a round that would need to go past a history's end returns `None`: at most
/// `1 + Σ lengths` rounds. Each event's needs are applied once over all rounds (closing is
/// incremental), and `holds` is called at most `Σ lengths + rounds × |actors|` times.
///
/// *Leastness*: invariant — every consistent cut `D` satisfying P is `≥ C`. It holds at the
/// start (`D[a]` is a position where `a`'s predicate holds, hence ≥ the first one); closing
/// keeps it (`D` is consistent and `≥ C`, so `≥ close(C)`); moving keeps it (`D[a] ≥ C[a]`,
/// the predicate holds at `D[a]` and not at `C[a]`, so `D[a]` is at least the next position
/// where it holds). At the fixpoint `C` is consistent and satisfies P, so it is the least; if
/// an actor runs out of events, no `D` exists.
pub fn inf(deps: &Deps, actors: &[ActorId], holds: &dyn Fn(ActorId, u64) -> bool) -> Option<Cut> {
    inf_with(Closer::new(deps), deps, actors, holds)
}

/// Inf(P) as a replay can reach it, which is what `ddbx replay --stop-if` halts at: [`inf`],
/// where moreover the root actor exists, every executed `Fork`/`Spawn` has created its child
/// (its `Start`, and its `Exec` if that follows at once: a fork+exec is not held in the
/// middle), and a parent's `Exit` comes after its children's (see [`Deps::child_exits`]). Those events are part of the creation in a real run; the paper counts a child's
/// creation as its initial state, which it has in any global state.
pub fn inf_online(
    deps: &Deps,
    actors: &[ActorId],
    holds: &dyn Fn(ActorId, u64) -> bool,
) -> Option<Cut> {
    inf_with(Closer::online(deps), deps, actors, holds)
}

/// [`inf_online`] among the states `≥ floor`: the least consistent cut, as a replay can reach
/// it, that is `≥ floor` and satisfies the predicate. This is where a replay halted at `floor`
/// halts when it continues towards a new predicate (`floor` should itself be such a cut).
pub fn inf_online_from(
    deps: &Deps,
    floor: &Cut,
    actors: &[ActorId],
    holds: &dyn Fn(ActorId, u64) -> bool,
) -> Option<Cut> {
    let mut c = Closer::online(deps);
    for (a, k) in floor {
        if let Some(i) = deps.actor_index(*a) {
            c.raise(i, *k);
        }
    }
    inf_with(c, deps, actors, holds)
}

/// The least consistent cut `≥ cut` as a replay can reach it: [`close`], where moreover the
/// root exists and every executed fork has created its child (see [`inf_online`]).
pub fn close_online(deps: &Deps, cut: &Cut) -> Cut {
    inf_online_from(deps, cut, &[], &|_, _| true).unwrap_or_default()
}

/// [`close_online`] of `closed` with `actor` raised to at least `k`, where `closed` is already
/// such a closure: only the needs of the events added are applied, so a step costs what it
/// adds (the observation chain of general predicates takes many such steps).
pub fn close_online_raised(deps: &Deps, closed: &Cut, actor: ActorId, k: u64) -> Cut {
    let mut c = Closer::new(deps);
    c.creation = true;
    for (a, n) in closed {
        if let Some(i) = deps.actor_index(*a) {
            c.raise(i, *n);
            c.applied[i] = c.pos[i];
        }
    }
    if let Some(i) = deps.actor_index(actor) {
        c.raise(i, k);
    }
    c.settle();
    c.cut()
}

fn inf_with(
    mut c: Closer<'_>,
    deps: &Deps,
    actors: &[ActorId],
    holds: &dyn Fn(ActorId, u64) -> bool,
) -> Option<Cut> {
    let mut constrained: Vec<usize> = Vec::new();
    for &a in actors {
        match deps.actor_index(a) {
            Some(i) => constrained.push(i),
            None if holds(a, 0) => {}
            None => return None,
        }
    }
    constrained.sort_unstable();
    constrained.dedup();
    // The next position >= from where actor i's predicate holds.
    let next = |i: usize, from: u64| -> Option<u64> {
        let a = deps.actors()[i];
        (from..=deps.event_count(a)).find(|&k| holds(a, k))
    };
    for &i in &constrained {
        let k = next(i, c.pos[i])?;
        c.raise(i, k);
    }
    loop {
        c.settle();
        let mut moved = false;
        for &i in &constrained {
            let a = deps.actors()[i];
            if !holds(a, c.pos[i]) {
                let k = next(i, c.pos[i] + 1)?;
                c.raise(i, k);
                moved = true;
            }
        }
        if !moved {
            return Some(c.cut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{hist, p};

    fn cut(entries: &[(u32, u64)]) -> Cut {
        entries.iter().map(|(a, k)| (p(*a), *k)).collect()
    }

    /// p2 is forked by p1 at p1's event 3.
    fn forked() -> Deps {
        let parent = hist(
            1,
            "Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n\
             Probe(name: \"x\", value: 1)\n\
             Fork(index: 1)\n\
             Probe(name: \"x\", value: 2)\n",
        );
        let child = hist(
            2,
            "Start(pid: 2, ppid: 1, origin: Fork(parent: \"p1\", index: 1), argv: [\"a\"], host: \"h\")\n\
             Probe(name: \"y\", value: 1)\n",
        );
        Deps::from_histories(&[parent, child])
    }

    #[test]
    fn raising_a_closed_cut_closes_like_closing_from_scratch() {
        let d = forked();
        let start = close_online(&d, &Cut::new());
        for (actor, k) in [(1, 2), (1, 3), (2, 1), (2, 2), (1, 9)] {
            let mut raised = start.clone();
            raised.insert(p(actor), k);
            assert_eq!(
                close_online_raised(&d, &start, p(actor), k),
                close_online(&d, &raised),
                "p{actor} to {k}"
            );
        }
    }

    #[test]
    fn closing_pulls_in_the_fork() {
        let d = forked();
        assert_eq!(d.needs(p(2), 1), &[(p(1), 3)]);
        assert_eq!(
            is_consistent(&d, &cut(&[(2, 1)])),
            Err(Violation {
                event: (p(2), 1),
                needs: (p(1), 3)
            })
        );
        assert_eq!(close(&d, cut(&[(2, 1)])), cut(&[(1, 3), (2, 1)]));
        assert_eq!(close(&d, cut(&[(1, 9), (7, 1)])), cut(&[(1, 4), (2, 0)]));
        assert_eq!(is_consistent(&d, &cut(&[(1, 3), (2, 2)])), Ok(()));
    }

    #[test]
    fn inf_moves_an_actor_whose_predicate_closing_broke() {
        let d = forked();
        // x == 1 only at p1's event 2..=3; y == 1 at p2's 2: Inf = (3, 2).
        let x: [i64; 5] = [0, 0, 1, 1, 2];
        let holds = |a: ActorId, k: u64| match a.0 {
            1 => x[k as usize] == 1,
            2 => k >= 2,
            _ => false,
        };
        assert_eq!(inf(&d, &[p(1), p(2)], &holds), Some(cut(&[(1, 3), (2, 2)])));
        // x == 2 and y == 1: p1 goes to 4.
        let holds2 = |a: ActorId, k: u64| if a.0 == 1 { k == 4 } else { k >= 2 };
        assert_eq!(
            inf(&d, &[p(1), p(2)], &holds2),
            Some(cut(&[(1, 4), (2, 2)]))
        );
        // x == 1 at p1's event 2 only, but p2's predicate forces p1 to 3: none.
        let holds3 = |a: ActorId, k: u64| if a.0 == 1 { k == 2 } else { k >= 2 };
        assert_eq!(inf(&d, &[p(1), p(2)], &holds3), None);
        // An actor without a history must hold at 0.
        assert_eq!(inf(&d, &[p(9)], &|_, _| false), None);
        assert_eq!(inf(&d, &[p(9)], &|_, _| true), Some(cut(&[(1, 0), (2, 0)])));
    }
}
