//! The layout shared by the three diagram views and the exports: one column per actor, each
//! event at the height of its *logical rank* (its depth in the longest path of the
//! happened-before graph: program order, the needs of [`Deps`], and the arrows drawn), so
//! that every arrow points downward.

use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::deps::{ChannelId, DataRange, Deps, Direction, Event};
use ddbx_supervisor::wire::ActorId;
use ddbx_supervisor::wire::history::{Origin, Record};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Horizontal distance between actor lines.
const COL: u64 = 96;
/// Vertical distance between logical ranks.
const ROW: u64 = 22;
/// Left margin before the first actor line.
const LEFT: u64 = 60;
/// Top margin (actor labels) before rank 0.
const TOP: u64 = 56;

/// What an arrow of the event view stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum ArrowKind {
    /// A send to the receive that consumed its last byte.
    Message,
    /// A connect to its accept.
    Connect,
    /// A fork or spawn to the child's start.
    Fork,
}

/// An arrow of the event view (ordered by its source, then its target, then its kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Arrow {
    pub from: Event,
    pub to: Event,
    pub kind: ArrowKind,
}

/// The bytes `[start, end)` one send or receive covered on a direction of a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ByteRange {
    start: u64,
    end: u64,
    event: Event,
}

/// The layout and drawable facts shared by the three diagram views.
pub(super) struct Diagram<'a> {
    pub rec: &'a Recording,
    pub actors: Vec<ActorId>,
    pub column: HashMap<ActorId, u64>,
    pub rank: HashMap<Event, u64>,
    pub max_rank: u64,
    /// Sorted.
    pub arrows: Vec<Arrow>,
    /// Every event, in a topological order of the graph the ranks are computed over.
    pub order: Vec<Event>,
    /// Each event's direct predecessors in that graph (deduplicated, sorted).
    pub preds: HashMap<Event, Vec<Event>>,
}

impl Diagram<'_> {
    /// The x of an actor's line.
    pub fn x(&self, a: ActorId) -> u64 {
        LEFT + self.column[&a] * COL
    }

    /// The y of an event.
    pub fn y(&self, e: Event) -> u64 {
        TOP + self.rank.get(&e).copied().unwrap_or(0) * ROW
    }

    /// The width of a diagram.
    pub fn width(&self) -> u64 {
        LEFT + self.actors.len() as u64 * COL
    }

    /// The height of a diagram.
    pub fn height(&self) -> u64 {
        TOP + (self.max_rank + 2) * ROW
    }
}

/// Computes ranks (longest-path depth) and arrows.
pub(super) fn layout<'a>(rec: &'a Recording, deps: &Deps) -> Result<Diagram<'a>, Error> {
    let actors: Vec<ActorId> = deps.actors().to_vec();
    let column: HashMap<ActorId, u64> = actors
        .iter()
        .enumerate()
        .map(|(i, a)| (*a, i as u64))
        .collect();
    let mut arrows = message_arrows(rec, deps, &actors);
    arrows.extend(creation_and_connection_arrows(rec, deps));
    let ranked = Graph::new(deps, &actors, &arrows)
        .rank()
        .map_err(|stuck| {
            Error::BadRecording(format!(
                "{}: cannot lay out the events: {} is on a dependency cycle (the recording is inconsistent)",
                rec.dir.display(),
                stuck.map(|e| deps.describe(e)).unwrap_or_default()
            ))
        })?;
    let max_rank = ranked.rank.values().copied().max().unwrap_or(0);
    Ok(Diagram {
        rec,
        actors,
        column,
        rank: ranked.rank,
        max_rank,
        arrows: arrows.into_iter().collect(),
        order: ranked.order,
        preds: ranked.direct,
    })
}

/// Each send → the receive that consumed its last byte.
fn message_arrows(rec: &Recording, deps: &Deps, actors: &[ActorId]) -> BTreeSet<Arrow> {
    /// The sends and the receives of one direction of a channel.
    #[derive(Default)]
    struct Flow {
        sends: Vec<ByteRange>,
        recvs: Vec<ByteRange>,
    }
    let mut flows: BTreeMap<(ChannelId, Direction), Flow> = BTreeMap::new();
    for &a in actors {
        let Some(h) = rec.history(a) else { continue };
        for (i, r) in h.records.iter().enumerate() {
            let event = (a, i as u64 + 1);
            if let Some(DataRange {
                channel,
                direction,
                start,
                end,
            }) = deps.data_range(a, event.1)
                && end > start
            {
                let f = flows.entry((channel, direction)).or_default();
                let range = ByteRange { start, end, event };
                match r {
                    Record::Send { .. } => f.sends.push(range),
                    Record::Recv { .. } => f.recvs.push(range),
                    _ => {}
                }
            }
        }
    }
    let mut arrows = BTreeSet::new();
    for flow in flows.values_mut() {
        flow.recvs.sort();
        for send in &flow.sends {
            let i = flow.recvs.partition_point(|r| r.end < send.end);
            if let Some(recv) = flow.recvs.get(i)
                && recv.start < send.end
            {
                arrows.insert(Arrow {
                    from: send.event,
                    to: recv.event,
                    kind: ArrowKind::Message,
                });
            }
        }
    }
    arrows
}

/// Each connect → its accept, each fork/spawn → the child's start.
fn creation_and_connection_arrows(rec: &Recording, deps: &Deps) -> Vec<Arrow> {
    let mut arrows = Vec::new();
    for c in deps.channels() {
        arrows.push(Arrow {
            from: (c.connector.actor, c.connector.event),
            to: (c.acceptor.actor, c.acceptor.event),
            kind: ArrowKind::Connect,
        });
    }
    for info in &rec.manifest.actors {
        if let Origin::Fork { parent, index } | Origin::Spawn { parent, index } = info.origin
            && let Some(h) = rec.history(parent)
            && let Some(i) = h.records.iter().position(|r| {
                matches!(r, Record::Fork { index: j } | Record::Spawn { index: j } if *j == index)
            })
            && rec.history(info.id).is_some()
        {
            arrows.push(Arrow {
                from: (parent, i as u64 + 1),
                to: (info.id, 1),
                kind: ArrowKind::Fork,
            });
        }
    }
    arrows
}

/// The graph the ranks are computed over: program order, the needs (a connect's need of its
/// accept left out: the connect comes first) and the arrows.
struct Graph {
    /// Every event, actor by actor.
    all: Vec<Event>,
    /// Each event's predecessors (with repeats).
    preds: HashMap<Event, Vec<Event>>,
}

/// The events of a [`Graph`] in order, with their ranks.
struct Ranked {
    /// Every event, in a topological order.
    order: Vec<Event>,
    /// Each event's longest-path depth.
    rank: HashMap<Event, u64>,
    /// Each event's direct predecessors (deduplicated, sorted).
    direct: HashMap<Event, Vec<Event>>,
}

impl Graph {
    fn new(deps: &Deps, actors: &[ActorId], arrows: &BTreeSet<Arrow>) -> Graph {
        let mut preds: HashMap<Event, Vec<Event>> = HashMap::new();
        let mut all: Vec<Event> = Vec::new();
        for &a in actors {
            for k in 1..=deps.event_count(a) {
                let e = (a, k);
                all.push(e);
                let p = preds.entry(e).or_default();
                if k > 1 {
                    p.push((a, k - 1));
                }
                let is_connect = deps.kind(a, k) == Some("Connect");
                for &n in deps.needs(a, k) {
                    if is_connect && deps.kind(n.0, n.1) == Some("Accept") {
                        continue;
                    }
                    p.push(n);
                }
            }
        }
        for arrow in arrows {
            preds.entry(arrow.to).or_default().push(arrow.from);
        }
        Graph { all, preds }
    }

    /// Ranks every event in a topological order (Kahn's, the smallest ready event first).
    /// Fails with the first event (if any) that is on a cycle, or after one.
    fn rank(&self) -> Result<Ranked, Option<Event>> {
        let mut indeg: HashMap<Event, usize> = HashMap::new();
        let mut succs: HashMap<Event, Vec<Event>> = HashMap::new();
        let mut direct: HashMap<Event, Vec<Event>> = HashMap::new();
        for e in &self.all {
            let ps: BTreeSet<Event> = self.preds[e]
                .iter()
                .copied()
                .filter(|p| self.preds.contains_key(p))
                .collect();
            indeg.insert(*e, ps.len());
            for &p in &ps {
                succs.entry(p).or_default().push(*e);
            }
            direct.insert(*e, ps.into_iter().collect());
        }
        let mut order: Vec<Event> = Vec::with_capacity(self.all.len());
        let mut rank: HashMap<Event, u64> = HashMap::new();
        let mut ready: BTreeSet<Event> =
            self.all.iter().copied().filter(|e| indeg[e] == 0).collect();
        while let Some(e) = ready.pop_first() {
            order.push(e);
            let r = self.preds[&e]
                .iter()
                .filter_map(|p| rank.get(p))
                .map(|r| r + 1)
                .max()
                .unwrap_or(0);
            rank.insert(e, r);
            for s in succs.get(&e).map_or(&[][..], Vec::as_slice) {
                let d = indeg.get_mut(s).expect("every event has an indegree");
                *d -= 1;
                if *d == 0 {
                    ready.insert(*s);
                }
            }
        }
        if rank.len() < self.all.len() {
            return Err(self.all.iter().find(|e| !rank.contains_key(e)).copied());
        }
        Ok(Ranked {
            order,
            rank,
            direct,
        })
    }
}
