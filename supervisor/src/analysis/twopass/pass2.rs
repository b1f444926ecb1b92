//! Pass 2, a simulated replay carrying the Affecter sets: each event, in an order consistent
//! with happened-before, takes the sets of what it needs; each cutoff records its
//! RaceAffecters and its actor joins its own set; then each cutoff's racing messages add the
//! sets they carried (see the module docs of [`super`]).

use super::{Cutoff, FirstRace, Passes, Receive, TwoPass};
use crate::analysis::deps::Event;
use crate::analysis::races::{Message, components};
use ddbx_wire::ActorId;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A small bitset of actors (by position in [`crate::analysis::deps::Deps::actors`]).
#[derive(Clone, Default, PartialEq, Eq)]
struct ActorSet(Vec<u64>);

impl ActorSet {
    fn insert(&mut self, i: usize) {
        if self.0.len() <= i / 64 {
            self.0.resize(i / 64 + 1, 0);
        }
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn remove(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w &= !(1 << (i % 64));
        }
    }

    fn union(&mut self, other: &ActorSet) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= *b;
        }
    }

    fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }
}

/// What the simulated replay leaves behind.
struct Replayed {
    /// The set each event left behind (what its messages carry).
    left: HashMap<Event, ActorSet>,
    /// Each cutoff's RaceAffecters as its actor had them at the cutoff, by actor.
    race_affecters: BTreeMap<ActorId, ActorSet>,
}

impl Passes<'_, '_> {
    /// Pass 2: the simulated replay, then each cutoff's race.
    pub(super) fn pass2(&self, receives: &[Receive], cutoffs: &[Cutoff]) -> TwoPass {
        let mut replayed = self.replay(cutoffs);
        let mut races = Vec::new();
        for c in cutoffs {
            let Some(r) = receives.iter().find(|r| r.at == (c.actor, c.event)) else {
                continue;
            };
            let could = self.racing_messages(r);
            let mut set = replayed.race_affecters.remove(&c.actor).unwrap_or_default();
            for m in r.got.iter().chain(&could) {
                if let Some(s) = m.issued_at().and_then(|i| replayed.left.get(&i)) {
                    set.union(s);
                }
            }
            if let Some(i) = self.deps.actor_index(c.actor) {
                set.remove(i);
            }
            let affecters: Vec<ActorId> = set
                .members()
                .filter_map(|i| self.deps.actors().get(i).copied())
                .collect();
            races.push(FirstRace {
                id: races.len() + 1,
                receive: r.at,
                kind: r.kind,
                got: r.got.clone(),
                could,
                affecters,
                first_channel: c.first_channel.clone(),
            });
        }
        let mut edges: BTreeSet<(ActorId, ActorId)> = BTreeSet::new();
        for r in &races {
            for q in &r.affecters {
                edges.insert((*q, r.receive.0));
            }
        }
        let actor_edges: Vec<(ActorId, ActorId)> = edges.into_iter().collect();
        let with_race: BTreeSet<ActorId> = races.iter().map(|r| r.receive.0).collect();
        TwoPass {
            cutoffs: cutoffs.to_vec(),
            components: components(&with_race, &actor_edges),
            races,
            actor_edges,
        }
    }

    /// The simulated replay: every event, in an order consistent with happened-before, carrying
    /// the Affecter sets.
    fn replay(&self, cutoffs: &[Cutoff]) -> Replayed {
        let pos = |a: ActorId| self.deps.actor_index(a);
        let cutoff_of: HashMap<ActorId, u64> = cutoffs.iter().map(|c| (c.actor, c.event)).collect();
        let mut current: Vec<ActorSet> = vec![ActorSet::default(); self.deps.actors().len()];
        let mut out = Replayed {
            left: HashMap::new(),
            race_affecters: BTreeMap::new(),
        };
        for e in self.happened_before_order() {
            if out.left.contains_key(&e) {
                continue;
            }
            // A connect and the accept it needs run together when each happened before the
            // other (see [`crate::analysis::clock::Clocks`]).
            let mut group = vec![e];
            for &n in self.deps.needs(e.0, e.1) {
                if !out.left.contains_key(&n) && self.hb(n, e) && self.hb(e, n) {
                    group.push(n);
                }
            }
            let mut set = ActorSet::default();
            for &(a, k) in &group {
                if let Some(i) = pos(a) {
                    set.union(&current[i]);
                }
                for &n in self.deps.needs(a, k) {
                    if self.hb(n, (a, k))
                        && let Some(s) = out.left.get(&n)
                    {
                        set.union(s);
                    }
                }
            }
            let mut joined = set.clone();
            for &(a, k) in &group {
                if cutoff_of.get(&a) == Some(&k)
                    && let Some(i) = pos(a)
                {
                    let mut mine = set.clone();
                    mine.remove(i);
                    out.race_affecters.insert(a, mine);
                    joined.insert(i);
                }
            }
            for &(a, k) in &group {
                if let Some(i) = pos(a) {
                    current[i] = joined.clone();
                }
                out.left.insert((a, k), joined.clone());
            }
        }
        out
    }

    /// Every event, in an order consistent with happened-before: by the sum of its clock's
    /// entries (an event's sum exceeds that of everything before it), then by actor and event.
    fn happened_before_order(&self) -> Vec<Event> {
        let mut order: Vec<(u64, Event)> = Vec::new();
        for &a in self.deps.actors() {
            for k in 1..=self.deps.event_count(a) {
                let sum = self.clocks.clock(a, k).map_or(0, |c| c.values().sum());
                order.push((sum, (a, k)));
            }
        }
        order.sort();
        order.into_iter().map(|(_, e)| e).collect()
    }

    /// The messages of a cutoff's watched channels and addresses that could have been its
    /// outcome, by issuing event.
    fn racing_messages(&self, r: &Receive) -> Vec<Message> {
        let mut could: Vec<Message> = Vec::new();
        for flow in &r.quiet {
            if let Some(f) = self.model.flows.get(flow) {
                for s in &f.sends {
                    let m = self.model.send_message(*flow, *s);
                    if self.could_be(r, &m) {
                        could.push(m);
                    }
                }
            }
        }
        for addr in &r.listening {
            for &k in self.model.connects.get(addr.as_str()).into_iter().flatten() {
                let m = self.model.connect_message(k);
                if self.could_be(r, &m) && !could.contains(&m) {
                    could.push(m);
                }
            }
        }
        if let Some(port) = &r.port {
            for &s in self.model.datagrams_to.get(port).into_iter().flatten() {
                let m = self.model.datagram_message(s);
                if self.could_be(r, &m) {
                    could.push(m);
                }
            }
        }
        could.sort_by_key(|m| m.event);
        could
    }
}
