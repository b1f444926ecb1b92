//! The dependency graph of a recording: which event of one actor cannot have happened unless
//! some event of another actor has.
//!
//! This is the paper's happened-before (ddbx-p, §2.1, Definition 1) made concrete for ddbx's
//! histories; [`super::clock`] turns it into vector clocks and [`super::inf`] into consistent
//! global states and Inf(P).
//!
//! # Definitions
//!
//! * **Event** *k* of actor *a* is the *k*-th record of *a*'s history (1-based; `Start` is
//!   event 1, the actor's creation). Written `(a, k)` ([`Event`]).
//! * **"(a,k) needs (b,j)"**: (a,k) cannot have happened unless (b,j) has. Within an actor this
//!   is program order ((a,k) needs (a,k-1)), which [`Deps::needs`] leaves implicit; across
//!   actors it is one of:
//!   * **creation**: the child's `Start` needs the parent's `Fork{index}` / `Spawn{index}`
//!     event, the child being the actor whose origin is `Fork/Spawn{parent, index}` (looked up
//!     in the manifest, else in the child's `Start`). Children with an `Unhooked` origin have no
//!     parent event and need nothing.
//!   * **connect ↔ accept** (Def. 1(3)): a successful (or `EINPROGRESS`) `Connect` and the
//!     `Accept` channel matching paired it with need each other (mutual). A connection an
//!     actor makes to itself gets no cross-actor need (program order already orders it).
//!   * **data**: every stream fd of an actor is bound to a channel end over time: `Connect{fd}`
//!     binds `fd` to the connector end of its channel, `Accept{new_fd}` binds `new_fd` to the
//!     acceptor end; a connect or accept that matched no channel (refused, external peer)
//!     unbinds the fd number. A forked/spawned child starts with a copy of its parent's
//!     bindings as they were at the parent's `Fork`/`Spawn` event; `Exec` keeps them
//!     (`close`/`dup` are not recorded: fds never bound are skipped). Each channel has two
//!     [`Direction`]s whose bytes are numbered 0, 1, 2, … in sending order: each `Send{fd, n}`
//!     of an actor holding the sending end takes the next `n` bytes, sends being ordered by
//!     (actor, event) when several actors send on the same end. That order is exact when each
//!     actor's sends all come before the fork that (directly or through its descendants)
//!     created the next actor — the hand-off "send a greeting, fork, let the child go on";
//!     otherwise it is a guess, reported as diagnostic `shared_send_end`. Likewise receives
//!     take the consumption offsets of their direction in (actor, event) order (diagnostic
//!     `shared_recv_end` when several actors receive and it is not a hand-off). A
//!     `Recv{n > 0}` consuming bytes `[o, o+n)` needs the `Send` that sent byte `o+n-1`; a
//!     `Recv{n: 0}` (end of stream) needs the last `Send` of the direction, if any.
//!   * **readiness**: for each fd of a `Ready` record with the `in` bit:
//!     * if the fd is a **listening** socket at that point, the event needs the connector's
//!       event *just before* the `Connect` matched to the actor's next `Accept` on that fd
//!       (the connector has reached its connect). Not the `Connect` itself: the connect needs
//!       that accept (mutual), which comes after the `Ready` in program order, so needing the
//!       connect would make every "select, then accept" a cycle.
//!       The fd's role is decided by the nearest later record of the actor that uses the fd
//!       number (`Accept{fd}` or a failed accept ⇒ listening; a send, receive, `Connect{fd}`
//!       or `Accept{new_fd}` ⇒ stream), else by the nearest earlier one: fd numbers are reused
//!       over time and closes are not recorded.
//!     * else, if the fd is bound to a channel end, the event needs the `Send` of the next
//!       unconsumed byte of the incoming direction (the byte at the consumption offset of that
//!       point), or the direction's last `Send` when every sent byte was consumed (end of
//!       stream).
//!     * `out`-only entries need nothing.
//!
//! Needs on one's own actor that the rules produce (a connection to oneself) are dropped.

use crate::analysis::channels::{Channel, match_channels};
use crate::recording::Recording;
use ddbx_wire::history::{Call, Origin, Record};
use ddbx_wire::manifest::Manifest;
use ddbx_wire::{ActorId, Events, History};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// An event: an actor and a 1-based event number.
pub type Event = (ActorId, u64);

/// A channel, by [`Channel::id`].
pub type ChannelId = u32;

/// One direction of a channel's byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Bytes sent on the connector's end, received on the acceptor's.
    ConnectorToAcceptor,
    /// Bytes sent on the acceptor's end, received on the connector's.
    AcceptorToConnector,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::ConnectorToAcceptor => "connector→acceptor",
            Direction::AcceptorToConnector => "acceptor→connector",
        })
    }
}

/// Which end of a channel an fd is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Side {
    Connector,
    Acceptor,
}

/// A channel end: what a stream fd is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct End {
    channel: ChannelId,
    side: Side,
}

impl End {
    /// The direction in which this end sends.
    fn outgoing(self) -> Direction {
        match self.side {
            Side::Connector => Direction::ConnectorToAcceptor,
            Side::Acceptor => Direction::AcceptorToConnector,
        }
    }

    /// The direction from which this end receives.
    fn incoming(self) -> Direction {
        match self.side {
            Side::Connector => Direction::AcceptorToConnector,
            Side::Acceptor => Direction::ConnectorToAcceptor,
        }
    }
}

/// How an fd number is used by a record: as a listening socket or as a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Listening,
    Stream,
}

/// What a `Send`/`Recv` covered: channel, direction, and byte range `[start, end)`.
pub type DataRange = (ChannelId, Direction, u64, u64);

/// The cross-actor dependencies of every event of a recording (see the module docs).
#[derive(Debug, Clone)]
pub struct Deps {
    actors: Vec<ActorId>,
    index: HashMap<ActorId, usize>,
    kinds: Vec<Vec<&'static str>>,
    needs: Vec<Vec<Vec<Event>>>,
    data: HashMap<Event, DataRange>,
    diagnostics: Vec<String>,
    /// For each forked/spawned child: its parent and the parent's Fork/Spawn event.
    forked_at: HashMap<ActorId, Event>,
}

/// The sends, receives and readiness queries of one direction of one channel.
#[derive(Default)]
struct Stream {
    /// (actor, event, bytes)
    sends: Vec<(ActorId, u64, u64)>,
    /// (actor, event, bytes)
    recvs: Vec<(ActorId, u64, u64)>,
    /// (actor, event) of `Ready` records reporting `in` on a receiving end.
    readies: Vec<Event>,
}

impl Deps {
    /// The dependencies of a loaded recording.
    pub fn from_recording(rec: &Recording) -> Deps {
        Deps::from_parts(&rec.manifest, &rec.histories, &rec.channels)
    }

    /// The dependencies of `histories`, with children found through `manifest`'s actors (an
    /// actor missing from the manifest: through its `Start` record) and `channels` as
    /// [`match_channels`] made them.
    pub fn from_parts(manifest: &Manifest, histories: &[History], channels: &[Channel]) -> Deps {
        let mut origins = start_origins(histories);
        for a in &manifest.actors {
            origins.insert(a.id, a.origin);
        }
        let mut deps = Deps::build(&origins, histories, channels);
        // A wait that reaped a child: the parent's next event needs the child's last one.
        for a in &manifest.actors {
            for reap in &a.reaps {
                let end = deps.event_count(reap.child);
                if end == 0 || reap.child == a.id {
                    continue;
                }
                if let Some(&i) = deps.index.get(&a.id)
                    && let Some(needs) = deps.needs[i].get_mut(reap.after as usize)
                    && !needs.contains(&(reap.child, end))
                {
                    needs.push((reap.child, end));
                }
            }
        }
        deps
    }

    /// The dependencies of `histories` alone: origins from their `Start` records, channels
    /// matched here. Handy for hand-made histories.
    pub fn from_histories(histories: &[History]) -> Deps {
        let channels = match_channels(histories);
        Deps::build(&start_origins(histories), histories, &channels)
    }

    fn build(
        origins: &HashMap<ActorId, Origin>,
        histories: &[History],
        channels: &[Channel],
    ) -> Deps {
        let mut diagnostics = Vec::new();
        let mut by_actor: BTreeMap<ActorId, &History> = BTreeMap::new();
        for h in histories {
            if by_actor.insert(h.actor, h).is_some() {
                diagnostics.push(format!(
                    "duplicate_history: {} has several histories; using the last one",
                    h.actor
                ));
            }
        }
        let actors: Vec<ActorId> = by_actor.keys().copied().collect();
        let index: HashMap<ActorId, usize> =
            actors.iter().enumerate().map(|(i, a)| (*a, i)).collect();
        let kinds: Vec<Vec<&'static str>> = by_actor
            .values()
            .map(|h| h.records.iter().map(Record::kind).collect())
            .collect();
        let mut deps = Deps {
            needs: kinds.iter().map(|k| vec![Vec::new(); k.len()]).collect(),
            actors,
            index,
            kinds,
            data: HashMap::new(),
            diagnostics,
            forked_at: HashMap::new(),
        };
        let record = |e: Event| -> Option<&Record> {
            by_actor
                .get(&e.0)
                .and_then(|h| h.records.get((e.1 as usize).checked_sub(1)?))
        };

        // Creation: the child's Start needs the parent's Fork/Spawn.
        let origin_of = |a: ActorId| origins.get(&a).copied().unwrap_or(Origin::Root);
        for (&child, _) in by_actor.iter() {
            let (Origin::Fork { parent, index } | Origin::Spawn { parent, index }) =
                origin_of(child)
            else {
                continue;
            };
            let fork = by_actor.get(&parent).and_then(|h| {
                h.records.iter().position(|r| {
                    matches!(r, Record::Fork { index: i } | Record::Spawn { index: i } if *i == index)
                })
            });
            match fork {
                Some(i) => {
                    deps.add_need((child, 1), (parent, i as u64 + 1));
                    deps.forked_at.insert(child, (parent, i as u64 + 1));
                }
                None => deps.diagnostics.push(format!(
                    "missing_fork: {child} is child {index} of {parent}, whose history has no such Fork/Spawn"
                )),
            }
        }

        // Connect <-> accept, and where channel ends are created.
        let mut ends: HashMap<Event, End> = HashMap::new();
        for c in channels {
            let conn = (c.connector.actor, c.connector.event);
            let acc = (c.acceptor.actor, c.acceptor.event);
            let ok = matches!(record(conn), Some(Record::Connect { .. }))
                && matches!(record(acc), Some(Record::Accept { .. }));
            if !ok {
                deps.diagnostics.push(format!(
                    "bad_channel: channel {} pairs {} event {} with {} event {}, which are not a Connect and an Accept",
                    c.id, conn.0, conn.1, acc.0, acc.1
                ));
                continue;
            }
            ends.insert(
                conn,
                End {
                    channel: c.id,
                    side: Side::Connector,
                },
            );
            ends.insert(
                acc,
                End {
                    channel: c.id,
                    side: Side::Acceptor,
                },
            );
            deps.add_need(conn, acc);
            deps.add_need(acc, conn);
        }
        let connector_of: HashMap<Event, Event> = channels
            .iter()
            .map(|c| {
                (
                    (c.acceptor.actor, c.acceptor.event),
                    (c.connector.actor, c.connector.event),
                )
            })
            .collect();

        // Fd bindings over time, parents before children.
        let mut order: Vec<(usize, ActorId)> = by_actor
            .keys()
            .map(|&a| {
                let mut depth = 0;
                let mut cur = a;
                while let Origin::Fork { parent, .. } | Origin::Spawn { parent, .. } =
                    origin_of(cur)
                {
                    if !by_actor.contains_key(&parent) || depth > by_actor.len() {
                        break;
                    }
                    depth += 1;
                    cur = parent;
                }
                (depth, a)
            })
            .collect();
        order.sort();
        let mut snapshots: HashMap<(ActorId, u32), HashMap<i32, End>> = HashMap::new();
        let mut streams: BTreeMap<(ChannelId, Direction), Stream> = BTreeMap::new();
        for (_, a) in order {
            let h = by_actor[&a];
            let mut fds: HashMap<i32, End> = match origin_of(a) {
                Origin::Fork { parent, index } | Origin::Spawn { parent, index } => {
                    snapshots.remove(&(parent, index)).unwrap_or_default()
                }
                _ => HashMap::new(),
            };
            let roles = fd_roles(h);
            for (i, r) in h.records.iter().enumerate() {
                let k = i as u64 + 1;
                match r {
                    Record::Connect { fd, .. } => bind(&mut fds, *fd, ends.get(&(a, k))),
                    Record::Accept { new_fd, .. } => bind(&mut fds, *new_fd, ends.get(&(a, k))),
                    Record::Fork { index } | Record::Spawn { index } => {
                        snapshots.insert((a, *index), fds.clone());
                    }
                    Record::Send { fd, n, .. } => {
                        if let Some(end) = fds.get(fd) {
                            streams
                                .entry((end.channel, end.outgoing()))
                                .or_default()
                                .sends
                                .push((a, k, *n));
                        }
                    }
                    Record::Recv { fd, n, .. } => {
                        if let Some(end) = fds.get(fd) {
                            streams
                                .entry((end.channel, end.incoming()))
                                .or_default()
                                .recvs
                                .push((a, k, *n));
                        }
                    }
                    Record::Ready { fds: ready, .. } => {
                        for rf in ready.iter().filter(|f| f.ev.contains(Events::IN)) {
                            if role_at(&roles, rf.fd, k) == Some(Role::Listening) {
                                let next_accept = h.records.iter().enumerate().skip(i + 1).find(
                                    |(_, r)| matches!(r, Record::Accept { fd, .. } if *fd == rf.fd),
                                );
                                if let Some((m, _)) = next_accept
                                    && let Some(&(c, j)) = connector_of.get(&(a, m as u64 + 1))
                                    && j > 1
                                {
                                    deps.add_need((a, k), (c, j - 1));
                                }
                            } else if let Some(end) = fds.get(&rf.fd) {
                                streams
                                    .entry((end.channel, end.incoming()))
                                    .or_default()
                                    .readies
                                    .push((a, k));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }

        for ((channel, dir), mut s) in streams {
            deps.settle_stream(channel, dir, &mut s);
        }
        for per_actor in &mut deps.needs {
            for needs in per_actor {
                needs.sort();
                needs.dedup();
            }
        }
        deps
    }

    /// Numbers the bytes of one direction and adds the data and readiness needs.
    fn settle_stream(&mut self, channel: ChannelId, dir: Direction, s: &mut Stream) {
        s.sends.sort();
        s.recvs.sort();
        s.readies.sort();
        if !self.handed_off(&s.sends) {
            let senders: BTreeSet<ActorId> = s.sends.iter().map(|x| x.0).collect();
            self.diagnostics.push(format!(
                "shared_send_end: channel {channel} {dir} is sent on by {}; bytes numbered by actor then event (not exact)",
                list(&senders)
            ));
        }
        if !self.handed_off(&s.recvs) {
            let receivers: BTreeSet<ActorId> = s.recvs.iter().map(|x| x.0).collect();
            self.diagnostics.push(format!(
                "shared_recv_end: channel {channel} {dir} is received from by {}; bytes consumed by actor then event (not exact)",
                list(&receivers)
            ));
        }
        // ends[i]: the offset after send i; byte b was sent by the first send with end > b.
        let mut ends: Vec<(u64, Event)> = Vec::with_capacity(s.sends.len());
        let mut total = 0;
        for &(a, k, n) in &s.sends {
            self.data.insert((a, k), (channel, dir, total, total + n));
            total += n;
            ends.push((total, (a, k)));
        }
        let sender_of = |byte: u64| -> Option<Event> {
            let i = ends.partition_point(|(end, _)| *end <= byte);
            ends.get(i).map(|(_, e)| *e)
        };
        let last_send = ends.iter().rev().find(|(end, _)| *end > 0).map(|(_, e)| *e);
        let mut consumed = 0;
        let mut prefix = Vec::with_capacity(s.recvs.len() + 1);
        prefix.push(0);
        for &(a, k, n) in &s.recvs {
            self.data
                .insert((a, k), (channel, dir, consumed, consumed + n));
            let need = if n == 0 {
                if consumed < total {
                    self.diagnostics.push(format!(
                        "early_eof: {a} event {k} saw the end of channel {channel} {dir} at byte {consumed}, but {total} bytes were sent"
                    ));
                }
                last_send
            } else if consumed + n <= total {
                sender_of(consumed + n - 1)
            } else {
                self.diagnostics.push(format!(
                    "unsent_bytes: {a} event {k} received bytes [{consumed}, {}) of channel {channel} {dir}, but only {total} were sent",
                    consumed + n
                ));
                if total > 0 {
                    sender_of((consumed + n).min(total) - 1)
                } else {
                    None
                }
            };
            if let Some(e) = need {
                self.add_need((a, k), e);
            }
            consumed += n;
            prefix.push(consumed);
        }
        for &(a, k) in &s.readies {
            let before = s.recvs.partition_point(|r| (r.0, r.1) < (a, k));
            let offset = prefix[before];
            let need = if offset < total {
                sender_of(offset)
            } else {
                last_send
            };
            if let Some(e) = need {
                self.add_need((a, k), e);
            }
        }
    }

    /// Whether uses of an end sorted by (actor, event) are in their real order: one actor
    /// only, or each actor's last use comes before the fork by which the next actor descends
    /// from it.
    fn handed_off(&self, uses: &[(ActorId, u64, u64)]) -> bool {
        uses.windows(2).all(|w| {
            let ((x, last, _), (y, _, _)) = (w[0], w[1]);
            x == y || self.forked_after(x, last, y)
        })
    }

    /// Whether `y` descends from `x` through a fork or spawn that `x` made after its event
    /// `event`.
    fn forked_after(&self, x: ActorId, event: u64, y: ActorId) -> bool {
        let mut cur = y;
        for _ in 0..=self.actors.len() {
            match self.forked_at.get(&cur) {
                Some(&(parent, fork)) if parent == x => return fork > event,
                Some(&(parent, _)) => cur = parent,
                None => return false,
            }
        }
        false
    }

    /// The child that event `k` of `a` creates (a `Fork`/`Spawn` with a child in the
    /// recording), with the number of events that make up the child's creation: its `Start`,
    /// and its `Exec` when that comes right after (a fork+exec: replay does not hold a process
    /// between the two).
    pub fn creates(&self, a: ActorId, k: u64) -> Option<(ActorId, u64)> {
        let (&child, _) = self.forked_at.iter().find(|(_, e)| **e == (a, k))?;
        Some((child, self.creation_events(child)))
    }

    /// If event `k` of `a` is its `Exit`: the `Exit` events of its forked/spawned children that
    /// exited. A parent usually waits for its children before it exits (waitpid is not an
    /// event), so a halting replay treats a parent's exit as needing theirs.
    pub fn child_exits(&self, a: ActorId, k: u64) -> Vec<Event> {
        let is_exit = self
            .actor_index(a)
            .and_then(|i| self.kinds.get(i))
            .and_then(|kinds| kinds.get((k as usize).checked_sub(1)?))
            == Some(&"Exit");
        if !is_exit {
            return Vec::new();
        }
        let mut out: Vec<Event> = self
            .forked_at
            .iter()
            .filter(|(_, (parent, _))| *parent == a)
            .filter_map(|(child, _)| {
                let n = self.event_count(*child);
                let kinds = self.kinds.get(self.actor_index(*child)?)?;
                (kinds.last() == Some(&"Exit")).then_some((*child, n))
            })
            .collect();
        out.sort();
        out
    }

    /// The number of events that make up `actor`'s creation: 1 (`Start`), or 2 when an `Exec`
    /// follows at once.
    pub fn creation_events(&self, actor: ActorId) -> u64 {
        let exec_next = self
            .actor_index(actor)
            .and_then(|i| self.kinds.get(i))
            .is_some_and(|k| k.get(1) == Some(&"Exec"));
        if exec_next { 2 } else { 1 }.min(self.event_count(actor))
    }

    /// Adds "`from` needs `to`" unless both are the same actor.
    fn add_need(&mut self, from: Event, to: Event) {
        if from.0 == to.0 {
            return;
        }
        if let Some(&i) = self.index.get(&from.0)
            && let Some(v) = self.needs[i].get_mut(from.1 as usize - 1)
        {
            v.push(to);
        }
    }

    /// The cross-actor events that event `event` of `actor` needs, sorted (program order is
    /// implicit). Empty for an event that does not exist.
    pub fn needs(&self, actor: ActorId, event: u64) -> &[Event] {
        self.index
            .get(&actor)
            .and_then(|&i| self.needs[i].get((event as usize).checked_sub(1)?))
            .map_or(&[], Vec::as_slice)
    }

    /// The channel, direction and byte range `[start, end)` that event `event` of `actor`
    /// sent or received, when it is a `Send`/`Recv` on a fd bound to a channel end.
    pub fn data_range(&self, actor: ActorId, event: u64) -> Option<DataRange> {
        self.data.get(&(actor, event)).copied()
    }

    /// Things the analysis could not do exactly, one line each, starting with a keyword:
    /// `shared_send_end`, `shared_recv_end`, `unsent_bytes`, `early_eof`, `missing_fork`,
    /// `bad_channel`, `duplicate_history`.
    pub fn diagnostics(&self) -> &[String] {
        &self.diagnostics
    }

    /// Every actor with a history, in id order.
    pub fn actors(&self) -> &[ActorId] {
        &self.actors
    }

    /// The position of `actor` in [`Deps::actors`].
    pub fn actor_index(&self, actor: ActorId) -> Option<usize> {
        self.index.get(&actor).copied()
    }

    /// How many events `actor`'s history has (0 for an unknown actor).
    pub fn event_count(&self, actor: ActorId) -> u64 {
        self.index
            .get(&actor)
            .map_or(0, |&i| self.kinds[i].len() as u64)
    }

    /// The record kind of an event (`Recv`, `Accept`, …), for messages.
    pub fn kind(&self, actor: ActorId, event: u64) -> Option<&'static str> {
        self.index
            .get(&actor)
            .and_then(|&i| self.kinds[i].get((event as usize).checked_sub(1)?))
            .copied()
    }

    /// `p3 event 5 (Recv)`: an event as text.
    pub fn describe(&self, e: Event) -> String {
        match self.kind(e.0, e.1) {
            Some(kind) => format!("{} event {} ({kind})", e.0, e.1),
            None => format!("{} event {}", e.0, e.1),
        }
    }
}

/// Each actor's origin as its `Start` record tells it.
fn start_origins(histories: &[History]) -> HashMap<ActorId, Origin> {
    histories
        .iter()
        .filter_map(|h| match h.records.first() {
            Some(Record::Start { origin, .. }) => Some((h.actor, *origin)),
            _ => None,
        })
        .collect()
}

/// Binds `fd` to `end`, or unbinds it when the connect/accept made no channel.
fn bind(fds: &mut HashMap<i32, End>, fd: i32, end: Option<&End>) {
    match end {
        Some(e) => {
            fds.insert(fd, *e);
        }
        None => {
            fds.remove(&fd);
        }
    }
}

/// For each fd number: the events that use it, and as what, in event order.
fn fd_roles(h: &History) -> HashMap<i32, Vec<(u64, Role)>> {
    let mut roles: HashMap<i32, Vec<(u64, Role)>> = HashMap::new();
    for (i, r) in h.records.iter().enumerate() {
        let k = i as u64 + 1;
        let mut add = |fd: i32, role| roles.entry(fd).or_default().push((k, role));
        match r {
            Record::Accept { fd, new_fd, .. } => {
                add(*fd, Role::Listening);
                add(*new_fd, Role::Stream);
            }
            Record::Fail {
                call: Call::Accept,
                fd,
                ..
            } => add(*fd, Role::Listening),
            Record::Fail {
                call: Call::Recv | Call::Send,
                fd,
                ..
            }
            | Record::Connect { fd, .. }
            | Record::Recv { fd, .. }
            | Record::NoData { fd }
            | Record::Send { fd, .. } => add(*fd, Role::Stream),
            _ => {}
        }
    }
    roles
}

/// The role of `fd` at event `k`: that of its nearest later use, else its nearest earlier one.
fn role_at(roles: &HashMap<i32, Vec<(u64, Role)>>, fd: i32, k: u64) -> Option<Role> {
    let uses = roles.get(&fd)?;
    let i = uses.partition_point(|(e, _)| *e <= k);
    uses.get(i)
        .or_else(|| i.checked_sub(1).and_then(|j| uses.get(j)))
        .map(|(_, role)| *role)
}

fn list(actors: &BTreeSet<ActorId>) -> String {
    actors
        .iter()
        .map(ActorId::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn hist(actor: u32, body: &str) -> History {
        let text = format!("Header(format: 1, actor: \"p{actor}\")\n{body}");
        History::parse(Path::new("test.ron"), &text).unwrap()
    }

    const START: &str = "Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n";

    #[test]
    fn role_of_an_fd_comes_from_its_nearest_use() {
        let h = hist(
            1,
            &format!(
                "{START}Connect(fd: 3, err: None, local: \"127.0.0.1:1\", remote: \"127.0.0.1:2\")\n\
                 Ready(call: Poll, fds: [(fd: 3, ev: \"in\")])\n\
                 Accept(fd: 3, new_fd: 4, local: \"127.0.0.1:9\", remote: \"127.0.0.1:8\", peer_pid: None)\n\
                 Ready(call: Poll, fds: [(fd: 3, ev: \"in\")])\n"
            ),
        );
        let roles = fd_roles(&h);
        assert_eq!(role_at(&roles, 3, 1), Some(Role::Stream));
        assert_eq!(role_at(&roles, 3, 3), Some(Role::Listening));
        assert_eq!(role_at(&roles, 3, 5), Some(Role::Listening));
        assert_eq!(role_at(&roles, 4, 1), Some(Role::Stream));
        assert_eq!(role_at(&roles, 7, 1), None);
    }

    #[test]
    fn unknown_events_need_nothing() {
        let d = Deps::from_histories(&[hist(1, START)]);
        assert!(d.needs(ActorId(1), 0).is_empty());
        assert!(d.needs(ActorId(1), 2).is_empty());
        assert!(d.needs(ActorId(9), 1).is_empty());
        assert_eq!(d.event_count(ActorId(1)), 1);
        assert_eq!(d.describe((ActorId(1), 1)), "p1 event 1 (Start)");
        assert!(d.diagnostics().is_empty());
    }

    #[test]
    fn a_send_on_an_unbound_fd_is_skipped() {
        let d = Deps::from_histories(&[hist(1, &format!("{START}Send(fd: 1, n: 5)\n"))]);
        assert_eq!(d.data_range(ActorId(1), 2), None);
    }
}
