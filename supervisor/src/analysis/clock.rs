//! Vector clocks over a recording's dependency graph ([`Deps`]): happened-before as numbers.
//!
//! The graph has an edge from each event to what it needs: its predecessor in its own actor
//! (program order) and its cross-actor needs ([`Deps::needs`]). Event (a,k) gets the clock
//! `VC(a,k)`: the join (entry-wise maximum) of the clocks of everything it needs, with its own
//! entry set to `k`. Then, for events `e ≠ f`, `e` happened before `f` iff
//! `VC(f)[actor(e)] ≥ event(e)`.
//!
//! A connect and its accept need each other (the paper's Def. 1(3)): such a mutual pair is one
//! node of the graph; both events get the same clock, the join of both predecessors' clocks
//! with each one's own entry ticked, so each happened before the other. TCP does not always
//! work that way: a connect completes as soon as the listening socket's backlog takes it, and
//! the connector may go on (send, connect elsewhere, make another actor reach its accepts)
//! before the acceptor calls `accept`. When mutual pairs close a dependency cycle, their
//! connects are taken to have completed first: for every pair of the cycle's nodes the accept
//! needs the connect, the connect not the accept (repeated until no cycle is left, or until a
//! cycle without such a pair is found). This can make one-way a pair that the cycle only
//! passed through by one of its events; that is still what TCP allows. Any other cycle means
//! the recording is corrupt or inconsistent (a receive of bytes that were sent after it, a
//! child that started before its fork…): [`Clocks::compute`] reports it as a [`CycleError`]
//! naming the events, and never loops.
//!
//! Clocks are stored densely (one `u64` per actor per event).

use crate::analysis::deps::{Deps, Event};
use ddbx_wire::ActorId;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A vector clock: for each actor, how many of its events happened before or at this one
/// (actors with 0 left out).
pub type VectorClock = BTreeMap<ActorId, u64>;

/// A dependency cycle other than a connect/accept pair: the recording is inconsistent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CycleError {
    /// The events of the cycle, each needing the next (transitively, through program order),
    /// the last needing the first.
    pub events: Vec<Event>,
    /// The cycle as text, naming each event and its kind.
    pub message: String,
}

/// The vector clock of every event of a recording.
#[derive(Debug, Clone)]
pub struct Clocks {
    actors: Vec<ActorId>,
    index: HashMap<ActorId, usize>,
    /// Node number of event (a, 1) for each actor index; node (a,k) = base[a] + k - 1.
    base: Vec<usize>,
    lens: Vec<u64>,
    /// `actors.len()` entries per node.
    data: Vec<u64>,
}

/// A small union-find over node numbers.
struct Groups(Vec<usize>);

impl Groups {
    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.0[a.max(b)] = a.min(b);
        }
    }
}

/// A connect that completed before its accept: the connect does not need the accept (the accept
/// still needs the connect).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct OneWay {
    connect: Event,
    accept: Event,
}

/// The dependency graph with one node per event, numbered actor by actor: node (a,k) is
/// `base[a] + k - 1`.
struct Graph<'a> {
    deps: &'a Deps,
    one_way: &'a HashSet<OneWay>,
    actors: Vec<ActorId>,
    index: HashMap<ActorId, usize>,
    /// Node number of event (a, 1) for each actor index.
    base: Vec<usize>,
    lens: Vec<u64>,
    /// The event of each node.
    event_of: Vec<Event>,
}

/// The node groups: mutual needs (connect ⇄ accept) make one group, every other node is a
/// group of its own. Keyed by the group's representative node.
type Members = HashMap<usize, Vec<usize>>;

impl<'a> Graph<'a> {
    fn new(deps: &'a Deps, one_way: &'a HashSet<OneWay>) -> Graph<'a> {
        let actors = deps.actors().to_vec();
        let index: HashMap<ActorId, usize> =
            actors.iter().enumerate().map(|(i, a)| (*a, i)).collect();
        let lens: Vec<u64> = actors.iter().map(|a| deps.event_count(*a)).collect();
        let mut base = Vec::with_capacity(actors.len());
        let mut nodes = 0usize;
        for &l in &lens {
            base.push(nodes);
            nodes += l as usize;
        }
        let mut event_of = Vec::with_capacity(nodes);
        for (i, &a) in actors.iter().enumerate() {
            for k in 1..=lens[i] {
                event_of.push((a, k));
            }
        }
        Graph {
            deps,
            one_way,
            actors,
            index,
            base,
            lens,
            event_of,
        }
    }

    /// The cross-actor needs of `e`, without those of [`OneWay`] connects.
    fn needs(&self, e: Event) -> Vec<Event> {
        self.deps
            .needs(e.0, e.1)
            .iter()
            .copied()
            .filter(|n| {
                !self.one_way.contains(&OneWay {
                    connect: e,
                    accept: *n,
                })
            })
            .collect()
    }

    fn node(&self, e: Event) -> Option<usize> {
        let i = *self.index.get(&e.0)?;
        (e.1 >= 1 && e.1 <= self.lens[i]).then(|| self.base[i] + e.1 as usize - 1)
    }

    /// Everything a node needs: its predecessor in program order and its cross-actor needs.
    fn preds(&self, n: usize) -> Vec<usize> {
        let (_, k) = self.event_of[n];
        let mut p: Vec<usize> = self
            .needs(self.event_of[n])
            .iter()
            .filter_map(|e| self.node(*e))
            .collect();
        if k > 1 {
            p.push(n - 1);
        }
        p
    }

    /// Mutual needs (connect ⇄ accept) make one group.
    fn groups(&self) -> (Groups, Members) {
        let nodes = self.event_of.len();
        let mut groups = Groups((0..nodes).collect());
        for (n, &e) in self.event_of.iter().enumerate() {
            for other in self.needs(e) {
                if self.needs(other).contains(&e)
                    && let Some(m) = self.node(other)
                {
                    groups.union(n, m);
                }
            }
        }
        let mut members: Members = HashMap::new();
        for n in 0..nodes {
            let g = groups.find(n);
            members.entry(g).or_default().push(n);
        }
        (groups, members)
    }

    fn describe_group(&self, ms: &[usize]) -> String {
        ms.iter()
            .map(|m| self.deps.describe(self.event_of[*m]))
            .collect::<Vec<_>>()
            .join(" ⇄ ")
    }

    /// A group with two events of one actor is a cycle through program order.
    fn check_groups(&self, members: &Members) -> Result<(), CycleError> {
        for ms in members.values() {
            let mut seen: Vec<ActorId> = ms.iter().map(|m| self.event_of[*m].0).collect();
            seen.sort();
            if seen.windows(2).any(|w| w[0] == w[1]) {
                return Err(CycleError {
                    message: format!(
                        "dependency cycle: {} need each other but are events of one actor: the recording is inconsistent",
                        self.describe_group(ms)
                    ),
                    events: ms.iter().map(|m| self.event_of[*m]).collect(),
                });
            }
        }
        Ok(())
    }

    /// Every event's clock, by Kahn's algorithm over the groups; or the cycle that stops it.
    fn clocks(self) -> Result<Clocks, CycleError> {
        let (mut groups, members) = self.groups();
        self.check_groups(&members)?;
        let mut group_preds: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut succs: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut indegree: HashMap<usize, usize> = HashMap::new();
        for (&g, ms) in &members {
            let mut ps: Vec<usize> = ms
                .iter()
                .flat_map(|m| self.preds(*m))
                .map(|p| groups.find(p))
                .filter(|p| *p != g)
                .collect();
            ps.sort_unstable();
            ps.dedup();
            indegree.insert(g, ps.len());
            for &p in &ps {
                succs.entry(p).or_default().push(g);
            }
            group_preds.insert(g, ps);
        }
        let width = self.actors.len();
        let mut data = vec![0u64; self.event_of.len() * width];
        let mut ready: Vec<usize> = indegree
            .iter()
            .filter(|(_, d)| **d == 0)
            .map(|(g, _)| *g)
            .collect();
        let mut done = 0usize;
        let mut vc = vec![0u64; width];
        while let Some(g) = ready.pop() {
            done += 1;
            vc.iter_mut().for_each(|x| *x = 0);
            for &p in &group_preds[&g] {
                // Every node of a group holds the group's clock; the representative will do.
                let from = &data[p * width..(p + 1) * width];
                for (x, y) in vc.iter_mut().zip(from) {
                    *x = (*x).max(*y);
                }
            }
            for &m in &members[&g] {
                let (a, k) = self.event_of[m];
                let i = self.index[&a];
                vc[i] = vc[i].max(k);
            }
            for &m in &members[&g] {
                data[m * width..(m + 1) * width].copy_from_slice(&vc);
            }
            for &s in succs.get(&g).map_or(&[][..], Vec::as_slice) {
                let d = indegree.get_mut(&s).expect("every group has an indegree");
                *d -= 1;
                if *d == 0 {
                    ready.push(s);
                }
            }
        }
        if done < members.len() {
            return Err(self.cycle_left(&members, &group_preds, &indegree));
        }
        Ok(Clocks {
            actors: self.actors,
            index: self.index,
            base: self.base,
            lens: self.lens,
            data,
        })
    }

    /// The cycle among the groups Kahn's algorithm could not reach: every group left has a
    /// predecessor that is left too, so walking back from one repeats a group.
    fn cycle_left(
        &self,
        members: &Members,
        group_preds: &HashMap<usize, Vec<usize>>,
        indegree: &HashMap<usize, usize>,
    ) -> CycleError {
        let left = |g: &usize| indegree[g] > 0;
        let mut g = *indegree
            .keys()
            .filter(|g| left(g))
            .min()
            .expect("some group is left");
        let mut path: Vec<usize> = Vec::new();
        let mut at: HashMap<usize, usize> = HashMap::new();
        while !at.contains_key(&g) {
            at.insert(g, path.len());
            path.push(g);
            g = *group_preds[&g]
                .iter()
                .find(|p| left(p))
                .expect("a group left has a predecessor left");
        }
        let cycle = &path[at[&g]..];
        let mut events = Vec::new();
        let mut text = Vec::new();
        for c in cycle {
            events.extend(members[c].iter().map(|m| self.event_of[*m]));
            text.push(self.describe_group(&members[c]));
        }
        text.push(self.describe_group(&members[&cycle[0]]));
        CycleError {
            message: format!(
                "dependency cycle: {}: the recording is inconsistent",
                text.join(" needs ")
            ),
            events,
        }
    }
}

impl Clocks {
    /// Computes every event's clock, or finds a dependency cycle.
    ///
    /// A connect and its accept need each other unless that closes a cycle (see the module
    /// docs): then the accept needs the connect and not the other way round.
    pub fn compute(deps: &Deps) -> Result<Clocks, CycleError> {
        let mut one_way: HashSet<OneWay> = HashSet::new();
        loop {
            match Graph::new(deps, &one_way).clocks() {
                Ok(c) => return Ok(c),
                Err(e) => {
                    // Mutual pairs on the cycle: the connect completed (in the listening
                    // socket's backlog) before the accept took it.
                    let before = one_way.len();
                    for &x in &e.events {
                        if deps.kind(x.0, x.1) != Some("Connect") {
                            continue;
                        }
                        for &y in deps.needs(x.0, x.1) {
                            if e.events.contains(&y) && deps.needs(y.0, y.1).contains(&x) {
                                one_way.insert(OneWay {
                                    connect: x,
                                    accept: y,
                                });
                            }
                        }
                    }
                    if one_way.len() == before {
                        return Err(e);
                    }
                }
            }
        }
    }

    fn slot(&self, e: Event) -> Option<&[u64]> {
        let i = *self.index.get(&e.0)?;
        if e.1 == 0 || e.1 > self.lens[i] {
            return None;
        }
        let n = self.base[i] + e.1 as usize - 1;
        let w = self.actors.len();
        Some(&self.data[n * w..(n + 1) * w])
    }

    /// The clock of event `event` of `actor` (None for an event that does not exist).
    pub fn clock(&self, actor: ActorId, event: u64) -> Option<VectorClock> {
        let s = self.slot((actor, event))?;
        Some(
            self.actors
                .iter()
                .zip(s)
                .filter(|(_, k)| **k > 0)
                .map(|(a, k)| (*a, *k))
                .collect(),
        )
    }

    /// Whether `a` happened before `b` (strictly: false for `a == b`; true both ways for a
    /// connect and its accept). False when either event does not exist.
    pub fn happened_before(&self, a: Event, b: Event) -> bool {
        if a == b || self.slot(a).is_none() {
            return false;
        }
        match (self.slot(b), self.index.get(&a.0)) {
            (Some(vb), Some(&i)) => vb[i] >= a.1,
            _ => false,
        }
    }

    /// Whether neither of two distinct events happened before the other.
    pub fn concurrent(&self, a: Event, b: Event) -> bool {
        a != b && !self.happened_before(a, b) && !self.happened_before(b, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{START, hist, p};

    #[test]
    fn connect_and_accept_share_a_clock() {
        let server = hist(
            1,
            &format!(
                "{START}Probe(name: \"x\", value: 1)\n\
                 Accept(fd: 3, new_fd: 4, local: \"127.0.0.1:3000\", remote: \"127.0.0.1:5000\", peer_pid: None)\n"
            ),
        );
        let client = hist(
            2,
            &format!(
                "{START}Connect(fd: 3, err: None, local: \"127.0.0.1:5000\", remote: \"127.0.0.1:3000\")\n\
                 Send(fd: 3, n: 1)\n"
            ),
        );
        let deps = Deps::from_histories(&[server, client]);
        let c = Clocks::compute(&deps).unwrap();
        let both: VectorClock = [(p(1), 3), (p(2), 2)].into();
        assert_eq!(c.clock(p(1), 3), Some(both.clone()));
        assert_eq!(c.clock(p(2), 2), Some(both));
        assert!(c.happened_before((p(1), 3), (p(2), 2)));
        assert!(c.happened_before((p(2), 2), (p(1), 3)));
        assert!(c.happened_before((p(1), 2), (p(2), 3)));
        assert!(!c.happened_before((p(2), 3), (p(1), 3)));
        assert!(c.concurrent((p(1), 1), (p(2), 1)));
        assert!(!c.happened_before((p(1), 1), (p(1), 1)));
        assert_eq!(c.clock(p(1), 4), None);
    }

    #[test]
    fn a_receive_before_its_send_is_a_cycle() {
        // p1 receives what p2 sends, but p2 only sends after p1 sent to it after receiving.
        let a = hist(
            1,
            &format!(
                "{START}Accept(fd: 3, new_fd: 4, local: \"127.0.0.1:3000\", remote: \"127.0.0.1:5000\", peer_pid: None)\n\
                 Recv(fd: 4, n: 1)\n\
                 Send(fd: 4, n: 1)\n"
            ),
        );
        let b = hist(
            2,
            &format!(
                "{START}Connect(fd: 3, err: None, local: \"127.0.0.1:5000\", remote: \"127.0.0.1:3000\")\n\
                 Recv(fd: 3, n: 1)\n\
                 Send(fd: 3, n: 1)\n"
            ),
        );
        let deps = Deps::from_histories(&[a, b]);
        let e = Clocks::compute(&deps).unwrap_err();
        assert!(e.message.starts_with("dependency cycle: "), "{e}");
        assert!(e.events.contains(&(p(1), 3)), "{e}");
        assert!(e.events.contains(&(p(2), 3)), "{e}");
        assert!(e.message.contains("(Recv)"), "{e}");
    }

    #[test]
    fn a_connect_that_completed_before_its_accept_breaks_the_cycle() {
        // p1 connects to p2 (the backlog takes it), then to p3, and sends to p3; p2 connects
        // to p3 before it accepts p1; p3 accepts p1, reads, then accepts p2. With every
        // connect/accept pair mutual this is a cycle; in TCP it is an ordinary run.
        let p1 = hist(
            1,
            &format!(
                "{START}Connect(fd: 3, err: None, local: \"127.0.0.1:5001\", remote: \"127.0.0.1:2000\")\n\
                 Connect(fd: 4, err: None, local: \"127.0.0.1:5002\", remote: \"127.0.0.1:3000\")\n\
                 Send(fd: 4, n: 1)\n"
            ),
        );
        let p2 = hist(
            2,
            &format!(
                "{START}Connect(fd: 3, err: None, local: \"127.0.0.1:5003\", remote: \"127.0.0.1:3000\")\n\
                 Accept(fd: 4, new_fd: 5, local: \"127.0.0.1:2000\", remote: \"127.0.0.1:5001\", peer_pid: None)\n"
            ),
        );
        let p3 = hist(
            3,
            &format!(
                "{START}Accept(fd: 3, new_fd: 4, local: \"127.0.0.1:3000\", remote: \"127.0.0.1:5002\", peer_pid: None)\n\
                 Recv(fd: 4, n: 1)\n\
                 Accept(fd: 3, new_fd: 5, local: \"127.0.0.1:3000\", remote: \"127.0.0.1:5003\", peer_pid: None)\n"
            ),
        );
        let deps = Deps::from_histories(&[p1, p2, p3]);
        let c = Clocks::compute(&deps).unwrap();
        // p1's first connect happened before p2's accept of it, not the other way round.
        assert!(c.happened_before((p(1), 2), (p(2), 3)));
        assert!(!c.happened_before((p(2), 3), (p(1), 2)));
        // The data still orders p1's send before p3's receive.
        assert!(c.happened_before((p(1), 4), (p(3), 3)));
        // p1's second connect and p3's first accept were on the cycle's nodes too (the
        // cycle passed through the connect only): now one-way as well.
        assert!(c.happened_before((p(1), 3), (p(3), 2)));
        assert!(!c.happened_before((p(3), 2), (p(1), 3)));
    }
}
