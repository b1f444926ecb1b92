//! The cut search: where a predicate holds, or becomes true again, among the consistent global
//! states of a recording, evaluated over the values the recording saved (probes and built-in
//! counters) and the memory globals a replay observed.
//!
//! A halted replay asks it where `cont` goes next (the next time the primary predicate becomes
//! true), where each secondary `stop if` first holds, and at which states each `trace`'s
//! condition becomes true (`ddbx help predicates`, "Several predicates"). Unlike the halting
//! algorithm, which finds Inf(P) online by running the processes, it reads the histories only.
//!
//! * A **conjunctive** predicate (one simple predicate per actor) first holds at Inf(P) above a
//!   floor ([`inf_online_from`]); it becomes true *again* when one of its actors leaves, then
//!   re-enters, the stretch of events where its simple predicate holds.
//! * A **general** predicate is evaluated along the *observation chain*: from a closed cut,
//!   repeatedly execute the next event of the actor that adds the fewest events (with whatever
//!   that event needs), ties going to the actors in turn.
//!
//! It depends only on the recording ([`Recording`], [`Deps`]) and the predicate language of
//! [`ddbx_wire::pred`]; the CLI's debugger (`ddbx/src/debugger/mod.rs`) keeps the user's
//! predicates and drives it.

use crate::analysis::deps::Deps;
use crate::analysis::inf::{Cut, close_online, close_online_raised, inf_online_from};
use crate::recording::Recording;
use ddbx_wire::counters::Counters;
use ddbx_wire::pred::{self, EvalError, Expr, Value, VarRef};
use ddbx_wire::{ActorId, History, Record};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// A predicate as the search looks for it: the whole expression, and, when it is conjunctive,
/// its simple predicates, one per actor (`None`: a general predicate).
#[derive(Debug, Clone, Copy)]
pub struct Goal<'a> {
    /// The predicate.
    pub expr: &'a Expr,
    /// Its simple predicates per actor, when it is conjunctive.
    pub parts: Option<&'a [(ActorId, Expr)]>,
}

/// Predicates evaluated over a recording's saved values at consistent global states, as a
/// replay reaches them.
///
/// The dependencies and the per-event variables are built at their first use: a replay with
/// no predicate never builds them (they cost hundreds of bytes per recorded event: 270 MB for
/// a recording of 1,000,000 messages, when a replay only needs its plans).
pub struct CutSearch {
    recording: Recording,
    deps: OnceLock<Deps>,
    vars: OnceLock<BTreeMap<ActorId, ActorVars>>,
}

/// A value an actor's variable takes from an event on: (event number, value).
type Assignment = (u64, i64);

/// One actor's variables at every point of its history, as
/// [`variables_at`](crate::analysis::vars::variables_at) defines them, indexed so that a lookup
/// costs O(log n) instead of a pass over the history.
struct ActorVars {
    /// The built-in counters after k events (index k).
    counts: Vec<Counters>,
    /// Per probe name: its assignments, in event order.
    probes: BTreeMap<String, Vec<Assignment>>,
    /// Per global observed in memory by the replay: its assignments, in event order.
    memory: BTreeMap<String, Vec<Assignment>>,
}

impl ActorVars {
    fn new(history: &History) -> ActorVars {
        let mut counts = vec![Counters::default()];
        let mut probes: BTreeMap<String, Vec<Assignment>> = BTreeMap::new();
        for (i, r) in history.records.iter().enumerate() {
            let mut c = counts[i];
            c.count(r);
            if let Record::Probe { name, value } = r {
                probes
                    .entry(name.clone())
                    .or_default()
                    .push((i as u64 + 1, *value));
            }
            counts.push(c);
        }
        ActorVars {
            counts,
            probes,
            memory: BTreeMap::new(),
        }
    }

    /// The value of `name` after `k` events (`k` beyond the end counts as the end).
    fn get(&self, name: &str, k: u64) -> Option<i64> {
        let k = k.min(self.counts.len() as u64 - 1);
        if let Some(v) = self.counts[k as usize].get(name) {
            return Some(v);
        }
        let values = self.probes.get(name).or_else(|| self.memory.get(name))?;
        let set = values.partition_point(|(at, _)| *at <= k);
        set.checked_sub(1).map(|i| values[i].1)
    }
}

/// One candidate step of the observation chain.
struct Step {
    /// Events the step adds to the cut.
    added: u64,
    /// The index (in [`Deps::actors`]) of the actor that executes its next event.
    actor_index: usize,
    /// The cut after the step.
    cut: Cut,
}

impl CutSearch {
    /// The search over a recording.
    pub fn new(recording: Recording) -> CutSearch {
        CutSearch {
            recording,
            deps: OnceLock::new(),
            vars: OnceLock::new(),
        }
    }

    /// The recording's dependencies, built at the first call.
    fn deps(&self) -> &Deps {
        self.deps
            .get_or_init(|| Deps::from_recording(&self.recording))
    }

    /// Every actor's variables, built at the first call.
    fn vars(&self) -> &BTreeMap<ActorId, ActorVars> {
        self.vars.get_or_init(|| {
            self.recording
                .histories
                .iter()
                .map(|h| (h.actor, ActorVars::new(h)))
                .collect()
        })
    }

    /// [`CutSearch::vars`], to change.
    fn vars_mut(&mut self) -> &mut BTreeMap<ActorId, ActorVars> {
        self.vars();
        self.vars.get_mut().expect("vars() initialised it")
    }

    /// The recording.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    /// Forgets the memory values observed so far (before [`observe`](CutSearch::observe)s
    /// give them all again).
    pub fn forget_observations(&mut self) {
        for vars in self.vars.get_mut().into_iter().flat_map(|v| v.values_mut()) {
            vars.memory.clear();
        }
    }

    /// Takes a global that the replay read in `actor`'s memory: `name` is `value` from its
    /// `after`-th event on (until a later observation of the same global).
    pub fn observe(&mut self, actor: ActorId, after: u64, name: &str, value: i64) {
        if let Some(vars) = self.vars_mut().get_mut(&actor) {
            let values = vars.memory.entry(name.to_string()).or_default();
            // After the values observed at or before `after`: the order of arrival among
            // observations of one event.
            let at = values.partition_point(|(k, _)| *k <= after);
            values.insert(at, (after, value));
        }
    }

    fn lookup(&self, cut: &Cut, v: &VarRef) -> Option<Value> {
        let actor = v.actor_id()?;
        // Not created (k = 0): no probe is set, and every counter is 0.
        let k = cut.get(&actor).copied().unwrap_or(0);
        self.vars().get(&actor)?.get(&v.name, k).map(Value::Int)
    }

    /// Whether `expr` holds in the global state `cut`.
    pub fn holds(&self, expr: &Expr, cut: &Cut) -> bool {
        pred::holds(expr, &mut |v| self.lookup(cut, v))
    }

    /// The value of `expr` in the global state `cut`.
    pub fn eval(&self, expr: &Expr, cut: &Cut) -> Result<Value, EvalError> {
        pred::eval(expr, &mut |v| self.lookup(cut, v))
    }

    /// Whether `actor`'s simple predicate `sp` holds after its `k`-th event (never before it
    /// exists).
    fn simple_holds(&self, sp: &Expr, actor: ActorId, k: u64) -> bool {
        k > 0
            && self
                .vars()
                .get(&actor)
                .is_some_and(|vars| pred::holds(sp, &mut |v| vars.get(&v.name, k).map(Value::Int)))
    }

    /// Where every replay starts: the root created.
    pub fn initial(&self) -> Cut {
        close_online(self.deps(), &Cut::new())
    }

    /// The observation chain's step after `cut`: the actor whose next event, with whatever
    /// that event needs, adds the fewest events executes it; ties go to the actors in turn, in
    /// id order from `turn`.
    fn step(&self, cut: &Cut, turn: &mut usize) -> Option<Cut> {
        let actors = self.deps().actors();
        let total = |c: &Cut| c.values().sum::<u64>();
        let mut best: Option<Step> = None;
        for i in 0..actors.len() {
            let actor_index = (*turn + i) % actors.len();
            let a = actors[actor_index];
            let k = cut.get(&a).copied().unwrap_or(0);
            if k < self.deps().event_count(a) {
                let next = close_online_raised(self.deps(), cut, a, k + 1);
                let added = total(&next) - total(cut);
                if best.as_ref().is_none_or(|b| added < b.added) {
                    best = Some(Step {
                        added,
                        actor_index,
                        cut: next,
                    });
                }
            }
        }
        let best = best?;
        *turn = best.actor_index + 1;
        Some(best.cut)
    }

    /// The first global state `≥ floor` where `goal` holds: for a conjunctive predicate the
    /// least consistent one (Inf(P) above `floor`); for a general one, the first on the
    /// observation chain from `floor`.
    pub fn first(&self, goal: Goal, floor: &Cut) -> Option<Cut> {
        match goal.parts {
            Some(parts) => {
                let actors: Vec<ActorId> = parts.iter().map(|(a, _)| *a).collect();
                let holds = |actor: ActorId, k: u64| {
                    parts
                        .iter()
                        .find(|(a, _)| *a == actor)
                        .is_none_or(|(_, sp)| self.simple_holds(sp, actor, k))
                };
                inf_online_from(self.deps(), floor, &actors, &holds)
            }
            None => {
                let mut cut = close_online(self.deps(), floor);
                let mut turn = 0;
                loop {
                    if self.holds(goal.expr, &cut) {
                        return Some(cut);
                    }
                    cut = self.step(&cut, &mut turn)?;
                }
            }
        }
    }

    /// The next time `goal` becomes true after `current` (see `ddbx help predicates`): if it
    /// does not hold at `current`, [`first`](CutSearch::first); else, for a conjunctive
    /// predicate, the least state `≥ current` where it holds with at least one of its actors
    /// in a later stretch of its simple predicate (it became false, then true again), the
    /// smallest such state over its actors (fewest events, then id order); for a general one,
    /// the next state on the observation chain where it holds after one where it does not.
    pub fn next(&self, goal: Goal, current: &Cut) -> Option<Cut> {
        if !self.holds(goal.expr, current) {
            return self.first(goal, current);
        }
        match goal.parts {
            Some(parts) => self.next_conjunctive(goal, parts, current),
            None => {
                let mut cut = current.clone();
                let mut turn = 0;
                while self.holds(goal.expr, &cut) {
                    cut = self.step(&cut, &mut turn)?;
                }
                while !self.holds(goal.expr, &cut) {
                    cut = self.step(&cut, &mut turn)?;
                }
                Some(cut)
            }
        }
    }

    /// [`next`](CutSearch::next) of a conjunctive predicate that holds at `current`.
    fn next_conjunctive(
        &self,
        goal: Goal,
        parts: &[(ActorId, Expr)],
        current: &Cut,
    ) -> Option<Cut> {
        let mut best: Option<Cut> = None;
        for (a, sp) in parts {
            let len = self.deps().event_count(*a);
            let at = current.get(a).copied().unwrap_or(0);
            let Some(falls) = (at + 1..=len).find(|&k| !self.simple_holds(sp, *a, k)) else {
                continue;
            };
            let Some(rises) = (falls + 1..=len).find(|&k| self.simple_holds(sp, *a, k)) else {
                continue;
            };
            let mut floor = current.clone();
            floor.insert(*a, rises);
            if let Some(candidate) = self.first(goal, &floor) {
                let key = |c: &Cut| {
                    (
                        c.values().sum::<u64>(),
                        c.values().copied().collect::<Vec<_>>(),
                    )
                };
                if best.as_ref().is_none_or(|b| key(&candidate) < key(b)) {
                    best = Some(candidate);
                }
            }
        }
        best
    }

    /// Every state where `goal` becomes true, from the start (at most `limit`).
    pub fn satisfactions(&self, goal: Goal, limit: usize) -> Vec<Cut> {
        let mut out: Vec<Cut> = Vec::new();
        let mut at = self.first(goal, &self.initial());
        while let Some(cut) = at {
            if out.len() >= limit {
                break;
            }
            at = self.next(goal, &cut);
            out.push(cut);
        }
        out
    }
}

/// Whether `a ≤ b` entry-wise (the state `a` is at or before `b`).
pub fn at_or_before(a: &Cut, b: &Cut) -> bool {
    a.iter()
        .all(|(actor, k)| *k <= b.get(actor).copied().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::ActorVars;
    use crate::analysis::vars::variables_at;
    use ddbx_wire::History;
    use std::path::Path;

    #[test]
    fn indexed_variables_agree_with_variables_at() {
        let text = "Header(format: 1, actor: \"p1\")\n\
            Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n\
            Probe(name: \"x\", value: 1)\n\
            Recv(fd: 3, n: 0)\n\
            Probe(name: \"x\", value: 7)\n\
            Fork(index: 1)\n\
            Spawn(index: 2)\n\
            Send(fd: 3, n: 2)\n\
            Probe(name: \"events\", value: 99)\n\
            Probe(name: \"y\", value: -3)\n\
            Exit(status: 0)\n";
        let h = History::parse(Path::new("t"), text).unwrap();
        let indexed = ActorVars::new(&h);
        for k in 0..=12 {
            let want = variables_at(&h, k);
            for name in [
                "x", "y", "z", "events", "recvs", "sends", "accepts", "forks", "alive",
            ] {
                assert_eq!(
                    indexed.get(name, k),
                    want.get(name).copied(),
                    "{name} after {k} events"
                );
            }
        }
    }
}
