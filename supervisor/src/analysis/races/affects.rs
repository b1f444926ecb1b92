//! How races relate: the affects relation between races, and the abstract affects graph over
//! the actors with its strongly connected components (see the module docs of [`super`]).

use super::{Component, Message, Race};
use crate::analysis::clock::Clocks;
use crate::analysis::deps::Event;
use ddbx_wire::ActorId;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Fills every race's `affected_by` and `affects`: `r1` affects `r2` when `r1` happened before
/// `r2`, or before (or at) the issuing event of a message of `M2`.
pub(super) fn relate(races: &mut [Race], clocks: &Clocks) {
    let hb = |a: Event, b: Event| clocks.happened_before(a, b);
    // If a race of actor q affects R2, so does every earlier race of q (program order), so the
    // races of q that affect R2 are a prefix of q's races: found by binary search.
    let mut by_actor: BTreeMap<ActorId, Vec<(u64, usize)>> = BTreeMap::new();
    for r in races.iter() {
        by_actor
            .entry(r.receive.0)
            .or_default()
            .push((r.receive.1, r.id));
    }
    for race in races.iter_mut() {
        let (r2, me) = (race.receive, race.id);
        let mut targets: Vec<Event> = vec![r2];
        targets.extend(race.messages().filter_map(Message::issued_at));
        targets.sort_unstable();
        targets.dedup();
        let mut by = Vec::new();
        for (q, rs) in &by_actor {
            let reaches = |r1: Event| targets.iter().any(|x| hb(r1, *x) || (*x == r1 && *x != r2));
            let upto = rs.partition_point(|(k, _)| reaches((*q, *k)));
            by.extend(rs[..upto].iter().map(|(_, id)| *id).filter(|id| *id != me));
        }
        by.sort_unstable();
        race.affected_by = by;
    }
    for j in 0..races.len() {
        for b in races[j].affected_by.clone() {
            races[b - 1].affects.push(j + 1);
        }
    }
}

/// The abstract affects graph's edges: `(q, p)` when a race of `q` affects a race of `p`,
/// `q ≠ p`, sorted.
pub(super) fn actor_edges(races: &[Race]) -> Vec<(ActorId, ActorId)> {
    let mut edges: BTreeSet<(ActorId, ActorId)> = BTreeSet::new();
    for r in races {
        for b in &r.affected_by {
            let q = races[b - 1].receive.0;
            if q != r.receive.0 {
                edges.insert((q, r.receive.0));
            }
        }
    }
    edges.into_iter().collect()
}

/// The strongly connected components of the actor graph (Tarjan), in a topological order.
pub(crate) fn components(
    with_race: &BTreeSet<ActorId>,
    edges: &[(ActorId, ActorId)],
) -> Vec<Component> {
    let mut nodes: BTreeSet<ActorId> = with_race.clone();
    for (q, p) in edges {
        nodes.insert(*q);
        nodes.insert(*p);
    }
    let nodes: Vec<ActorId> = nodes.into_iter().collect();
    let index: HashMap<ActorId, usize> = nodes.iter().enumerate().map(|(i, a)| (*a, i)).collect();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (q, p) in edges {
        succ[index[q]].push(index[p]);
    }
    let sccs = tarjan(&succ);
    // Tarjan emits components in reverse topological order.
    let mut comp_of = vec![0usize; nodes.len()];
    let mut groups: Vec<Vec<usize>> = sccs.into_iter().rev().collect();
    for g in &mut groups {
        g.sort_unstable();
    }
    // A stable topological order: Kahn's algorithm, smallest first actor first.
    for (c, g) in groups.iter().enumerate() {
        for &v in g {
            comp_of[v] = c;
        }
    }
    let mut csucc: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); groups.len()];
    let mut indeg = vec![0usize; groups.len()];
    for (v, ss) in succ.iter().enumerate() {
        for &s in ss {
            let (a, b) = (comp_of[v], comp_of[s]);
            if a != b && csucc[a].insert(b) {
                indeg[b] += 1;
            }
        }
    }
    let mut ready: BTreeSet<(ActorId, usize)> = (0..groups.len())
        .filter(|c| indeg[*c] == 0)
        .map(|c| (nodes[groups[c][0]], c))
        .collect();
    let mut order: Vec<usize> = Vec::with_capacity(groups.len());
    while let Some(first) = ready.pop_first() {
        let c = first.1;
        order.push(c);
        for &s in &csucc[c] {
            indeg[s] -= 1;
            if indeg[s] == 0 {
                ready.insert((nodes[groups[s][0]], s));
            }
        }
    }
    let position: HashMap<usize, usize> = order.iter().enumerate().map(|(i, c)| (*c, i)).collect();
    order
        .iter()
        .map(|&c| {
            let actors: Vec<ActorId> = groups[c].iter().map(|v| nodes[*v]).collect();
            let mut affects: Vec<usize> = csucc[c].iter().map(|s| position[s]).collect();
            affects.sort_unstable();
            Component {
                has_race: actors.iter().any(|a| with_race.contains(a)),
                actors,
                affects,
            }
        })
        .collect()
}

/// Tarjan's strongly connected components (iterative); components in reverse topological
/// order.
fn tarjan(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = succ.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut next = 0usize;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, position of the next successor to look at)
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut pos)) = call.last_mut() {
            if let Some(&w) = succ[v].get(*pos) {
                *pos += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    out.push(comp);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::p;

    #[test]
    fn mutually_affecting_actors_make_one_component() {
        // p1 <-> p2, p2 -> p3, p4 has a race but no edge.
        let with_race: BTreeSet<ActorId> = [p(1), p(2), p(3), p(4)].into();
        let edges = [(p(1), p(2)), (p(2), p(1)), (p(2), p(3))];
        let c = components(&with_race, &edges);
        let actors: Vec<Vec<ActorId>> = c.iter().map(|c| c.actors.clone()).collect();
        assert_eq!(actors, vec![vec![p(1), p(2)], vec![p(3)], vec![p(4)]]);
        assert_eq!(c[0].affects, vec![1]);
        assert!(c[1].affects.is_empty() && c[2].affects.is_empty());
        assert!(c.iter().all(|c| c.has_race));
    }

    #[test]
    fn tarjan_finds_cycles_and_singletons() {
        // 0 -> 1 -> 2 -> 0, 2 -> 3, 3 -> 3
        let succ = vec![vec![1], vec![2], vec![0, 3], vec![3]];
        let mut sccs: Vec<Vec<usize>> = tarjan(&succ)
            .into_iter()
            .map(|mut c| {
                c.sort_unstable();
                c
            })
            .collect();
        assert_eq!(sccs[0], vec![3], "reverse topological order");
        sccs.sort();
        assert_eq!(sccs, vec![vec![0, 1, 2], vec![3]]);
    }
}
