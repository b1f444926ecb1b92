//! Message races of a recording, computed exactly offline from vector clocks (paper 004,
//! Park & Jun; `../shared/notes/RACES.md` §3.3 and `../shared/DESIGN.md` §5).
//!
//! # Definitions (adapted to sockets)
//!
//! * A **receive-from-any** is an event whose outcome could have been one of several messages
//!   from several senders. ddbx's histories support two kinds:
//!   * a **`Ready`** record (select/poll/epoll returned): its outcome is the set of fds it
//!     reported; the alternatives are the other channels it watched;
//!   * an **`Accept`**: its outcome is the connection it returned; the alternatives are the
//!     other connects made to the same listening address.
//!
//!   A blocking receive on one stream socket is not one: TCP is FIFO, so its outcome (which
//!   bytes) is fixed; how many bytes it returns is not a race between senders.
//! * A **message** is a `Send` on a channel direction (its bytes), or a successful `Connect`
//!   (for accepts and for readiness of a listening socket). A message is **issued** at its
//!   `Send`, or, for a connect, at the connector's event *just before* the `Connect`: the
//!   connect and its accept need each other, so the `Connect` itself always "happens after"
//!   every event that precedes its accept, which would hide every accept race.
//! * The **watched set** of a `Ready` is not recorded (only what was reported is), so it is
//!   approximated from the data: the fds it reported, every fd bound at that point to a channel
//!   end the actor itself receives from at some point of its history (fds the actor only sends
//!   on, or that it inherited and never reads, are left out), and every listening socket the
//!   actor accepts on. This can name a channel the program did not pass to that call.
//! * The **outcome** of a `Ready` (`got`): for each reported fd with `in`, the message holding
//!   the next unconsumed byte of that channel (the FIFO head at that point), or, for a
//!   listening socket, the connect that the actor's next accept on it returned. Of an
//!   `Accept`: its connect (or an outside peer, [`MessageKind::External`]).
//! * The **alternatives** (`could`): for each other watched channel, its FIFO head at `r` —
//!   the send holding the first byte not consumed by a receive that happened before `r` —
//!   when that send does not happen after `r` and is not received by another actor; for each
//!   other watched listening address (and for an accept, its own), every successful connect to
//!   that address whose accept did not happen before `r` and which was not issued after `r`.
//!   "Happened before" is [`Clocks::happened_before`].
//! * A **race** `<r, M>` is such an `r` with `M = got ∪ could` of two messages or more.
//! * The **locally-first** race of an actor is its first race (smallest event number).
//! * Race `R1` **affects** race `R2 ≠ R1` when `r1` happened before `r2`, or some message of
//!   `M2` was issued after `r1` (`r1` happened before its issuing event). A race affected by
//!   no other race is **unaffected**: it occurs in every run with the same input, and should be
//!   debugged first. Every unaffected race is locally-first.
//! * The **abstract affects graph** has the actors as nodes and an edge `q → p` when a race of
//!   `q` affects a race of `p` (`q ≠ p`); its strongly connected components are groups of
//!   mutually affecting actors ([`Races::components`], Tarjan's algorithm).
//!
//! Everything here is deterministic: the same recording gives the same races in the same
//! order, numbered 1, 2, … by (actor, event).

use crate::analysis::clock::{Clocks, VectorClock};
use crate::analysis::deps::{ChannelId, Deps, Direction, Event};
use crate::recording::Recording;
use ddbx_wire::history::{Origin, Record};
use ddbx_wire::{ActorId, Errno, Events};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What kind of message a [`Message`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageKind {
    /// Bytes of a `Send` on a channel.
    Send,
    /// A `Connect` to a listening socket.
    Connect,
    /// A connection from a peer outside the recording (no event of ours issued it).
    External,
}

impl MessageKind {
    /// `send`, `connect` or `external`.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Send => "send",
            MessageKind::Connect => "connect",
            MessageKind::External => "external",
        }
    }
}

/// A message that was, or could have been, the outcome of a race's receive.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Message {
    /// Send, connect or outside peer.
    pub kind: MessageKind,
    /// The `Send` or `Connect` event (`None` for an outside peer).
    pub event: Option<Event>,
    /// The channel it travels on (`None` for a connect that no accept took, or an outside
    /// peer).
    pub channel: Option<ChannelId>,
    /// For a send: its direction and byte range `[start, end)` on the channel.
    pub bytes: Option<(Direction, u64, u64)>,
    /// The event that received it: the receive that consumed its last byte, or the accept of
    /// a connect (`None`: never received).
    pub received_by: Option<Event>,
}

impl Message {
    /// The event whose occurrence means the message was issued: the `Send`, or the event just
    /// before a `Connect` (see the module docs). `None` for an outside peer.
    pub fn issued_at(&self) -> Option<Event> {
        let (a, k) = self.event?;
        match self.kind {
            MessageKind::Send => Some((a, k)),
            MessageKind::Connect => Some((a, k.saturating_sub(1).max(1))),
            MessageKind::External => None,
        }
    }

    /// `p7 event 5 (Send, channel 2, bytes 0..25)`: the message as text.
    pub fn describe(&self) -> String {
        let what = match (self.kind, self.event) {
            (MessageKind::External, _) | (_, None) => "a peer outside the recording".to_string(),
            (kind, Some((a, k))) => {
                let word = if kind == MessageKind::Send {
                    "Send"
                } else {
                    "Connect"
                };
                format!("{a} event {k} ({word}")
            }
        };
        if self.event.is_none() || self.kind == MessageKind::External {
            return what;
        }
        let mut s = what;
        if let Some(c) = self.channel {
            s.push_str(&format!(", channel {c}"));
        }
        if let Some((_, start, end)) = self.bytes {
            s.push_str(&format!(", bytes {start}..{end}"));
        }
        s.push(')');
        s
    }
}

/// Which receive-from-any a race's receive is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RaceKind {
    /// A `Ready` record (select/poll/epoll).
    Ready,
    /// An `Accept`.
    Accept,
}

impl RaceKind {
    /// `ready` or `accept`.
    pub fn as_str(self) -> &'static str {
        match self {
            RaceKind::Ready => "ready",
            RaceKind::Accept => "accept",
        }
    }
}

/// One message race `<r, M>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Race {
    /// 1, 2, … in (actor, event) order.
    pub id: usize,
    /// The receive `r`.
    pub receive: Event,
    /// What kind of receive it is.
    pub kind: RaceKind,
    /// The message(s) it got (a ready set can report several).
    pub got: Vec<Message>,
    /// The other messages it could have got.
    pub could: Vec<Message>,
    /// Whether it is its actor's first race.
    pub locally_first: bool,
    /// The ids of the races that affect it (sorted).
    pub affected_by: Vec<usize>,
    /// The ids of the races it affects (sorted).
    pub affects: Vec<usize>,
}

impl Race {
    /// Whether no other race affects it.
    pub fn unaffected(&self) -> bool {
        self.affected_by.is_empty()
    }

    /// `M`: what it got, then what it could have got.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.got.iter().chain(&self.could)
    }

    /// The `--stop-at` argument that halts a replay right before the receive: `p5:6`.
    pub fn stop_at(&self) -> String {
        format!("{}:{}", self.receive.0, self.receive.1 - 1)
    }
}

/// A strongly connected component of the abstract affects graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// Its actors, sorted.
    pub actors: Vec<ActorId>,
    /// Indexes (into [`Races::components`]) of the components it has an edge to, sorted.
    pub affects: Vec<usize>,
    /// Whether one of its actors has a race.
    pub has_race: bool,
}

/// All races of a recording and the relations between them.
#[derive(Debug, Clone, Default)]
pub struct Races {
    /// Every race, by id (`races[i].id == i + 1`).
    pub races: Vec<Race>,
    /// Abstract affects graph: `(q, p)` when a race of `q` affects a race of `p`, `q ≠ p`,
    /// sorted.
    pub actor_edges: Vec<(ActorId, ActorId)>,
    /// Its strongly connected components, in a topological order (a component comes before
    /// the ones it affects; ties by smallest actor id). Only actors with a race or an edge.
    pub components: Vec<Component>,
}

impl Races {
    /// The race with this id.
    pub fn get(&self, id: usize) -> Option<&Race> {
        id.checked_sub(1).and_then(|i| self.races.get(i))
    }

    /// The race whose receive is this event.
    pub fn at(&self, e: Event) -> Option<&Race> {
        self.races.iter().find(|r| r.receive == e)
    }
}

/// A channel end as seen by one actor's fd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct End {
    channel: ChannelId,
    /// The direction this end receives.
    incoming: Direction,
}

/// Per-direction byte ranges of sends and receives, sorted by start.
#[derive(Default)]
struct Flow {
    /// (start, end, event)
    sends: Vec<(u64, u64, Event)>,
    /// (start, end, event)
    recvs: Vec<(u64, u64, Event)>,
    /// The actor that made every receive, when there is only one.
    receiver: Option<ActorId>,
}

impl Flow {
    /// The send holding byte `b`.
    fn send_at(&self, b: u64) -> Option<(u64, u64, Event)> {
        let i = self.sends.partition_point(|s| s.1 <= b);
        self.sends.get(i).copied().filter(|s| s.0 <= b)
    }

    /// The receive that consumed byte `b`.
    fn recv_at(&self, b: u64) -> Option<Event> {
        let i = self.recvs.partition_point(|r| r.1 <= b);
        self.recvs.get(i).filter(|r| r.0 <= b).map(|r| r.2)
    }
}

/// Finds every race of a recording (see the module docs for the definitions).
///
/// `deps` and `clocks` must be those of `rec` ([`Deps::from_recording`],
/// [`Clocks::compute`]).
pub fn find_races(rec: &Recording, deps: &Deps, clocks: &Clocks) -> Races {
    let hb = |a: Event, b: Event| clocks.happened_before(a, b);
    let histories: BTreeMap<ActorId, &[Record]> = rec
        .histories
        .iter()
        .map(|h| (h.actor, h.records.as_slice()))
        .collect();

    // Byte flows of every channel direction.
    let mut flows: BTreeMap<(ChannelId, Direction), Flow> = BTreeMap::new();
    // The directions each actor receives from.
    let mut receives_on: BTreeSet<(ActorId, ChannelId, Direction)> = BTreeSet::new();
    for (&a, records) in &histories {
        for (i, r) in records.iter().enumerate() {
            let e = (a, i as u64 + 1);
            let Some((ch, dir, start, end)) = deps.data_range(e.0, e.1) else {
                continue;
            };
            let flow = flows.entry((ch, dir)).or_default();
            match r {
                Record::Send { .. } if end > start => flow.sends.push((start, end, e)),
                Record::Recv { .. } => {
                    receives_on.insert((a, ch, dir));
                    if end > start {
                        flow.recvs.push((start, end, e));
                    }
                }
                _ => {}
            }
        }
    }
    for f in flows.values_mut() {
        f.sends.sort();
        f.recvs.sort();
        let first = f.recvs.first().map(|x| x.2.0);
        f.receiver = first.filter(|a| f.recvs.iter().all(|x| x.2.0 == *a));
    }

    // Channel ends created by connects and accepts.
    let mut ends: HashMap<Event, End> = HashMap::new();
    let mut accepted_by: HashMap<Event, Event> = HashMap::new();
    let mut connect_of: HashMap<Event, Event> = HashMap::new();
    for c in &rec.channels {
        let conn = (c.connector.actor, c.connector.event);
        let acc = (c.acceptor.actor, c.acceptor.event);
        ends.insert(
            conn,
            End {
                channel: c.id,
                incoming: Direction::AcceptorToConnector,
            },
        );
        ends.insert(
            acc,
            End {
                channel: c.id,
                incoming: Direction::ConnectorToAcceptor,
            },
        );
        accepted_by.insert(conn, acc);
        connect_of.insert(acc, conn);
    }

    // Every successful connect, by the address it connected to.
    let mut connects: BTreeMap<&str, Vec<Event>> = BTreeMap::new();
    for (&a, records) in &histories {
        for (i, r) in records.iter().enumerate() {
            if let Record::Connect {
                err, remote, local, ..
            } = r
                && (err.is_none() || *err == Some(Errno::EINPROGRESS))
                && local != "?"
            {
                connects
                    .entry(remote.as_str())
                    .or_default()
                    .push((a, i as u64 + 1));
            }
        }
    }

    let send_message = |ch: ChannelId, dir: Direction, s: (u64, u64, Event)| -> Message {
        let received_by = flows.get(&(ch, dir)).and_then(|f| f.recv_at(s.1 - 1));
        Message {
            kind: MessageKind::Send,
            event: Some(s.2),
            channel: Some(ch),
            bytes: Some((dir, s.0, s.1)),
            received_by,
        }
    };
    let connect_message = |c: Event| -> Message {
        let acc = accepted_by.get(&c).copied();
        let channel = acc.and_then(|acc| ends.get(&acc)).map(|e| e.channel);
        Message {
            kind: MessageKind::Connect,
            event: Some(c),
            channel,
            bytes: None,
            received_by: acc,
        }
    };
    // The FIFO head of a direction at receive `r`: the send holding the first byte not
    // consumed by a receive that happened before `r`.
    // `vc` is the clock of `r`: a receive x happened before r iff VC(r)[actor(x)] >= event(x).
    let head_at = |ch: ChannelId, dir: Direction, r: Event, vc: &VectorClock| -> Option<Message> {
        let flow = flows.get(&(ch, dir))?;
        let before =
            |x: &(u64, u64, Event)| x.2 != r && vc.get(&x.2.0).is_some_and(|k| *k >= x.2.1);
        let offset = match flow.receiver {
            // One receiving actor: its receives in byte order are in event order, so those
            // that happened before r are a prefix.
            Some(_) => {
                let n = flow.recvs.partition_point(before);
                n.checked_sub(1).map_or(0, |i| flow.recvs[i].1)
            }
            None => flow
                .recvs
                .iter()
                .filter(|x| before(x))
                .map(|x| x.1)
                .max()
                .unwrap_or(0),
        };
        flow.send_at(offset).map(|s| send_message(ch, dir, s))
    };
    // Connects to `addr` still pending at `r` and not issued after it.
    let pending_connects = |addr: &str, r: Event| -> Vec<Message> {
        connects
            .get(addr)
            .into_iter()
            .flatten()
            .map(|c| connect_message(*c))
            .filter(|m| {
                let accepted_before = m
                    .received_by
                    .is_some_and(|acc| acc == r || hb(acc, r) && !hb(r, acc));
                let issued_after = m.issued_at().is_some_and(|i| hb(r, i));
                !accepted_before && !issued_after
            })
            .collect()
    };

    // Walk each actor's fd bindings (parents before children: a child starts with its
    // parent's bindings at the fork) and examine its Ready and Accept records.
    let origins: HashMap<ActorId, Origin> = rec
        .manifest
        .actors
        .iter()
        .map(|a| (a.id, a.origin))
        .collect();
    let depth = |a: ActorId| {
        let mut d = 0;
        let mut cur = a;
        while let Some(Origin::Fork { parent, .. } | Origin::Spawn { parent, .. }) =
            origins.get(&cur)
        {
            if d > origins.len() {
                break;
            }
            d += 1;
            cur = *parent;
        }
        d
    };
    let mut order: Vec<(usize, ActorId)> = histories.keys().map(|a| (depth(*a), *a)).collect();
    order.sort();
    let mut snapshots: HashMap<(ActorId, u32), BTreeMap<i32, End>> = HashMap::new();
    let mut found: Vec<(Event, RaceKind, Vec<Message>, Vec<Message>)> = Vec::new();
    for (_, a) in order {
        let records = histories[&a];
        let mut fds: BTreeMap<i32, End> = match origins.get(&a) {
            Some(Origin::Fork { parent, index } | Origin::Spawn { parent, index }) => {
                snapshots.remove(&(*parent, *index)).unwrap_or_default()
            }
            _ => BTreeMap::new(),
        };
        let uses = fd_uses(records);
        let listeners: BTreeSet<i32> = records
            .iter()
            .filter_map(|r| match r {
                Record::Accept { fd, .. } => Some(*fd),
                _ => None,
            })
            .collect();
        for (i, r) in records.iter().enumerate() {
            let k = i as u64 + 1;
            let here = (a, k);
            match r {
                Record::Connect { fd, .. } => bind(&mut fds, *fd, ends.get(&here)),
                Record::Accept { new_fd, local, .. } => {
                    let got = match connect_of.get(&here) {
                        Some(c) => connect_message(*c),
                        None => Message {
                            kind: MessageKind::External,
                            event: None,
                            channel: None,
                            bytes: None,
                            received_by: Some(here),
                        },
                    };
                    let could: Vec<Message> = pending_connects(local, here)
                        .into_iter()
                        .filter(|m| m.event != got.event)
                        .collect();
                    if !could.is_empty() {
                        found.push((here, RaceKind::Accept, vec![got], could));
                    }
                    bind(&mut fds, *new_fd, ends.get(&here));
                }
                Record::Fork { index } | Record::Spawn { index } => {
                    snapshots.insert((a, *index), fds.clone());
                }
                Record::Ready { fds: ready, .. } => {
                    let vc = clocks.clock(a, k).unwrap_or_default();
                    let mut got: Vec<Message> = Vec::new();
                    let mut could: Vec<Message> = Vec::new();
                    let mut seen_ends: BTreeSet<(ChannelId, Direction)> = BTreeSet::new();
                    let mut seen_listeners: BTreeSet<String> = BTreeSet::new();
                    let reported: BTreeSet<i32> = ready
                        .iter()
                        .filter(|f| f.ev.contains(Events::IN) || f.ev.contains(Events::HUP))
                        .map(|f| f.fd)
                        .collect();
                    // Reported fds: the outcome.
                    for &fd in &reported {
                        match listener_at(&uses, fd, k) {
                            Some(addr) => {
                                seen_listeners.insert(addr.to_string());
                                let next_accept = records.iter().enumerate().skip(i + 1).find(
                                    |(_, r)| matches!(r, Record::Accept { fd: f, .. } if *f == fd),
                                );
                                if let Some((m, _)) = next_accept
                                    && let Some(c) = connect_of.get(&(a, m as u64 + 1))
                                {
                                    got.push(connect_message(*c));
                                }
                            }
                            None => {
                                if let Some(end) = fds.get(&fd) {
                                    seen_ends.insert((end.channel, end.incoming));
                                    if let Some(m) = head_at(end.channel, end.incoming, here, &vc) {
                                        got.push(m);
                                    }
                                }
                            }
                        }
                    }
                    // Other watched channels: their FIFO heads.
                    for (&fd, end) in &fds {
                        if reported.contains(&fd)
                            || listener_at(&uses, fd, k).is_some()
                            || !receives_on.contains(&(a, end.channel, end.incoming))
                            || !seen_ends.insert((end.channel, end.incoming))
                        {
                            continue;
                        }
                        if let Some(m) = head_at(end.channel, end.incoming, here, &vc)
                            && !m.issued_at().is_some_and(|s| hb(here, s))
                            && m.received_by.is_none_or(|rcv| rcv.0 == a)
                            && !got.contains(&m)
                        {
                            could.push(m);
                        }
                    }
                    // Other watched listening sockets: their pending connects.
                    for &fd in &listeners {
                        let Some(addr) = listener_at(&uses, fd, k) else {
                            continue;
                        };
                        let reported_here = reported.contains(&fd);
                        if !reported_here && !seen_listeners.insert(addr.to_string()) {
                            continue;
                        }
                        for m in pending_connects(addr, here) {
                            if !got.contains(&m) && !could.contains(&m) {
                                could.push(m);
                            }
                        }
                    }
                    if got.len() + could.len() >= 2 {
                        found.push((here, RaceKind::Ready, got, could));
                    }
                }
                _ => {}
            }
        }
    }
    found.sort_by_key(|f| f.0);

    let mut races: Vec<Race> = Vec::with_capacity(found.len());
    let mut seen_actor: BTreeSet<ActorId> = BTreeSet::new();
    for (i, (receive, kind, got, could)) in found.into_iter().enumerate() {
        races.push(Race {
            id: i + 1,
            receive,
            kind,
            got,
            could,
            locally_first: seen_actor.insert(receive.0),
            affected_by: Vec::new(),
            affects: Vec::new(),
        });
    }
    // Affects: r1 happened before r2, or r1 happened before (or is) the issuing event of a
    // message of M2. If a race of actor q does, so does every earlier race of q (program
    // order), so the races of q that affect R2 are a prefix of q's races: found by binary
    // search.
    let mut by_actor: BTreeMap<ActorId, Vec<(u64, usize)>> = BTreeMap::new();
    for r in &races {
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
    let mut edges: BTreeSet<(ActorId, ActorId)> = BTreeSet::new();
    for r in &races {
        for b in &r.affected_by {
            let q = races[b - 1].receive.0;
            if q != r.receive.0 {
                edges.insert((q, r.receive.0));
            }
        }
    }
    let actor_edges: Vec<(ActorId, ActorId)> = edges.into_iter().collect();
    let with_race: BTreeSet<ActorId> = races.iter().map(|r| r.receive.0).collect();
    let components = components(&with_race, &actor_edges);
    Races {
        races,
        actor_edges,
        components,
    }
}

/// Binds `fd` to `end`, or unbinds it when the connect/accept made no channel.
fn bind(fds: &mut BTreeMap<i32, End>, fd: i32, end: Option<&End>) {
    match end {
        Some(e) => {
            fds.insert(fd, *e);
        }
        None => {
            fds.remove(&fd);
        }
    }
}

/// For each fd number: the events that use it, in order, with the listening address when the
/// use is an accept on it (`None`: used as a stream).
fn fd_uses(records: &[Record]) -> HashMap<i32, Vec<(u64, Option<&str>)>> {
    let mut uses: HashMap<i32, Vec<(u64, Option<&str>)>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let k = i as u64 + 1;
        let mut add = |fd: i32, addr| uses.entry(fd).or_default().push((k, addr));
        match r {
            Record::Accept {
                fd, new_fd, local, ..
            } => {
                add(*fd, Some(local.as_str()));
                add(*new_fd, None);
            }
            Record::Connect { fd, .. }
            | Record::Recv { fd, .. }
            | Record::NoData { fd }
            | Record::Send { fd, .. } => add(*fd, None),
            _ => {}
        }
    }
    uses
}

/// The listening address of `fd` at event `k` when its nearest later use (else its nearest
/// earlier one) is an accept on it.
fn listener_at<'a>(
    uses: &HashMap<i32, Vec<(u64, Option<&'a str>)>>,
    fd: i32,
    k: u64,
) -> Option<&'a str> {
    let u = uses.get(&fd)?;
    let i = u.partition_point(|(e, _)| *e <= k);
    u.get(i)
        .or_else(|| i.checked_sub(1).and_then(|j| u.get(j)))?
        .1
}

/// The strongly connected components of the actor graph (Tarjan), in a topological order.
fn components(with_race: &BTreeSet<ActorId>, edges: &[(ActorId, ActorId)]) -> Vec<Component> {
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
    use ddbx_wire::History;
    use std::path::Path;

    fn p(n: u32) -> ActorId {
        ActorId(n)
    }

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

    fn hist(actor: u32, body: &str) -> History {
        let text = format!("Header(format: 1, actor: \"p{actor}\")\n{body}");
        History::parse(Path::new("test.ron"), &text).unwrap()
    }

    fn start(pid: i32) -> String {
        format!("Start(pid: {pid}, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n")
    }

    /// A recording without a manifest on disk: only what `find_races` reads.
    fn recording(histories: Vec<History>) -> Recording {
        use ddbx_wire::manifest::{ActorInfo, Manifest, SessionState};
        let actors = histories
            .iter()
            .map(|h| ActorInfo {
                id: h.actor,
                origin: Origin::Root,
                pid: h.actor.0 as i32,
                argv: vec!["a".into()],
                host: "h".into(),
                exit: None,
                signalled_by: Vec::new(),
            })
            .collect();
        let channels = crate::analysis::channels::match_channels(&histories);
        Recording {
            dir: "/nonexistent".into(),
            manifest: Manifest {
                format: ddbx_wire::FORMAT_VERSION,
                ddbx_version: "0".into(),
                command: vec!["a".into()],
                cwd: "/".into(),
                env: vec![],
                host: "h".into(),
                state: SessionState::Complete,
                actors,
                passthrough: vec![],
                problem: None,
            },
            histories,
            channels,
            warnings: vec![],
        }
    }

    #[test]
    fn a_select_over_two_senders_is_a_race_and_a_reply_is_not() {
        // p1 accepts p2 and p3, selects: p2's message reported, p3's could have been.
        // Then p1 answers p2, which reads it with a blocking receive: no race there.
        let server = hist(
            1,
            &format!(
                "{}Accept(fd: 3, new_fd: 4, local: \"127.0.0.1:80\", remote: \"127.0.0.1:5002\", peer_pid: None)\n\
                 Accept(fd: 3, new_fd: 5, local: \"127.0.0.1:80\", remote: \"127.0.0.1:5003\", peer_pid: None)\n\
                 Ready(call: Poll, fds: [(fd: 4, ev: \"in\")])\n\
                 Recv(fd: 4, n: 2)\n\
                 Recv(fd: 5, n: 2)\n\
                 Send(fd: 4, n: 1)\n",
                start(1)
            ),
        );
        let a = hist(
            2,
            &format!(
                "{}Connect(fd: 3, err: None, local: \"127.0.0.1:5002\", remote: \"127.0.0.1:80\")\n\
                 Send(fd: 3, n: 2)\n\
                 Recv(fd: 3, n: 1)\n",
                start(2)
            ),
        );
        let b = hist(
            3,
            &format!(
                "{}Connect(fd: 3, err: None, local: \"127.0.0.1:5003\", remote: \"127.0.0.1:80\")\n\
                 Send(fd: 3, n: 2)\n",
                start(3)
            ),
        );
        let rec = recording(vec![server, a, b]);
        let deps = Deps::from_recording(&rec);
        let clocks = Clocks::compute(&deps).unwrap();
        let races = find_races(&rec, &deps, &clocks);
        let at: Vec<(Event, usize)> = races
            .races
            .iter()
            .map(|r| (r.receive, r.messages().count()))
            .collect();
        // The first accept (p2's or p3's connect) and the poll.
        assert_eq!(at, vec![((p(1), 2), 2), ((p(1), 4), 2)]);
        let poll = &races.races[1];
        assert_eq!(poll.got[0].event, Some((p(2), 3)));
        assert_eq!(poll.could[0].event, Some((p(3), 3)));
        assert_eq!(poll.could[0].received_by, Some((p(1), 6)));
        assert!(races.races[0].locally_first && races.races[0].unaffected());
        assert!(!poll.locally_first);
        assert_eq!(poll.affected_by, vec![1]);
        assert_eq!(poll.stop_at(), "p1:3");
        assert_eq!(races.components.len(), 1);
    }
}
