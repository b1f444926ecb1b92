//! Locally-first and unaffected message races by Park & Jun's two-pass method (paper 004;
//! `../shared/notes/RACES.md` §3.5), kept apart from the exact analysis of [`super::races`] so
//! that the two can check each other.
//!
//! Both methods share the recording's happened-before ([`Deps`], [`Clocks`]) and the
//! *definitions* of the race model (what a receive-from-any watches, what its outcome was,
//! when a message could have been its outcome — written down in [`super::races`]'s module
//! docs). They share no code that finds races or the affects relation, and they go about it
//! in different directions:
//!
//! * the exact method walks the receives: for each receive-from-any it looks at the head of
//!   every channel it watched, then relates every pair of races through vector clocks;
//! * this method walks the **messages**.
//!
//! # Pass 1 (from the recorded execution, with vector clocks)
//!
//! For every message `m` (a `Send`'s bytes, or a successful `Connect`) and every actor `p`
//! that could have received it, find the receives-from-any `r'` of `p` that `m` could have
//! been delivered to instead: those that watched `m`'s channel (or listening address),
//! where `m` was at the head of its channel (every earlier byte consumed by receives that
//! happened before `r'`: a contiguous run of `p`'s receives, found by binary search, since
//! what happened before a receive only grows along program order), and that do not happen
//! before `m` was issued (`VC(issue m)[p] < r'`, again a suffix of that run). Each such `r'`
//! gets a vote. A receive whose outcome plus votes make two messages or more is a race; the
//! smallest one of `p` is `p`'s **cutoff** (its locally-first race), and the channel (or
//! listening address) of the message that first voted for it is its **first channel**.
//!
//! # Pass 2 (a deterministic re-execution carrying the affecting sets)
//!
//! Every actor `p` keeps an **Affecter** set `A_p` (a bitset of actors; the paper's
//! "affecting flag" is `A_p ≠ ∅`). Pass 2 re-executes the recording: here as a *simulated*
//! replay over the recorded histories, not a run of the programs. Events are processed in an
//! order consistent with happened-before (by the sum of their vector clocks, then actor and
//! event); every message carries, out of band, the set its sender had when it issued it, and
//! a receive merges the sets of what it needs (the sends holding the bytes it consumed,
//! matched by channel and byte offset; a connect and its accept exchange theirs, or the
//! accept takes the connect's when the connect completed first (see [`Clocks`]); a fork
//! hands the parent's set to the child; a ready set merges the messages it reported). When
//! `p` executes its cutoff receive `r_p`, the race's **RaceAffecters** set is `A_p` at that
//! point (without `p`), and `p` joins `A_p`: whatever `p` does from then on is affected by
//! its race. Pass 2 does **not** halt at the cutoffs (the 2006 follow-up's semantics: halting
//! cuts chains of affects): it runs to the end, and keeps collecting the racing messages of
//! each cutoff — every message of the watched channels that could have been delivered at
//! `r_p` — adding the set each carried to the race's RaceAffecters.
//!
//! A race is **unaffected** iff its RaceAffecters set is empty; every `q` in it gives an
//! **affects edge** `q → p` (`q`'s first race affects `p`'s first race).
//!
//! This finds only the locally-first races, which is what the method is for: every
//! unaffected race is locally-first, and whether a race of `q` affects a race of `p` is
//! decided by `q`'s first race (program order).

use crate::analysis::clock::Clocks;
use crate::analysis::deps::{ChannelId, Deps, Direction, Event};
use crate::analysis::races::{Component, Message, MessageKind, RaceKind, components};
use crate::recording::Recording;
use ddbx_wire::history::{Origin, Record};
use ddbx_wire::{ActorId, Errno, Events};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Pass 1's result for one actor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cutoff {
    /// The actor.
    pub actor: ActorId,
    /// Its locally-first race receive's event number.
    pub event: u64,
    /// The channel (`channel 3`) or listening address (`listening 127.0.0.1:4000`) of the
    /// message that first showed the receive to be a race.
    pub first_channel: String,
}

/// A locally-first race as the two-pass method finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstRace {
    /// 1, 2, … in actor order.
    pub id: usize,
    /// The cutoff receive.
    pub receive: Event,
    /// What kind of receive it is.
    pub kind: RaceKind,
    /// The message(s) it got.
    pub got: Vec<Message>,
    /// The other messages it could have got (collected in pass 2), by issuing event.
    pub could: Vec<Message>,
    /// RaceAffecters: the actors whose first race affects this one, sorted.
    pub affecters: Vec<ActorId>,
    /// Pass 1's first channel.
    pub first_channel: String,
}

impl FirstRace {
    /// Whether no other race affects it.
    pub fn unaffected(&self) -> bool {
        self.affecters.is_empty()
    }

    /// `M`: what it got, then what it could have got.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.got.iter().chain(&self.could)
    }

    /// The `--stop-at` argument that halts a replay right before the receive.
    pub fn stop_at(&self) -> String {
        format!("{}:{}", self.receive.0, self.receive.1 - 1)
    }
}

/// What the two-pass method finds in a recording.
#[derive(Debug, Clone, Default)]
pub struct TwoPass {
    /// Pass 1: each actor's cutoff, by actor.
    pub cutoffs: Vec<Cutoff>,
    /// Pass 2: the locally-first races, by actor (`races[i].id == i + 1`).
    pub races: Vec<FirstRace>,
    /// Affects edges `(q, p)`: `q`'s first race affects `p`'s, sorted.
    pub actor_edges: Vec<(ActorId, ActorId)>,
    /// Strongly connected components of those edges (as [`super::races::Races::components`]).
    pub components: Vec<Component>,
}

/// The bytes of one channel direction: sends and receives as `(start, end, event)`, by start.
#[derive(Default)]
struct Bytes {
    sends: Vec<(u64, u64, Event)>,
    recvs: Vec<(u64, u64, Event)>,
}

/// A receive-from-any of the model, with the votes pass 1 gives it.
struct Receive {
    at: Event,
    kind: RaceKind,
    got: Vec<Message>,
    /// Watched channel directions that it did not report (each receives on by its actor).
    quiet: BTreeSet<(ChannelId, Direction)>,
    /// Watched listening addresses.
    listening: BTreeSet<String>,
    /// Pass 1's votes: messages that could have been its outcome, with their channel.
    votes: BTreeMap<(MessageKind, Event), String>,
}

impl Receive {
    fn got_event(&self, e: Event) -> bool {
        self.got.iter().any(|g| g.event == Some(e))
    }

    fn is_race(&self) -> bool {
        match self.kind {
            RaceKind::Accept => !self.votes.is_empty(),
            RaceKind::Ready => self.got.len() + self.votes.len() >= 2,
        }
    }
}

/// A small bitset of actors (by position in [`Deps::actors`]).
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

/// Runs both passes on a recording. `deps` and `clocks` must be those of `rec`.
pub fn two_pass(rec: &Recording, deps: &Deps, clocks: &Clocks) -> TwoPass {
    let model = Model::build(rec, deps, clocks);
    let mut receives = model.receives();
    model.pass1(&mut receives);
    let cutoffs = model.cutoffs(&receives);
    model.pass2(&receives, &cutoffs)
}

/// What both passes read: the recording, its byte flows, its channel ends and connects.
struct Model<'a> {
    rec: &'a Recording,
    deps: &'a Deps,
    clocks: &'a Clocks,
    histories: BTreeMap<ActorId, &'a [Record]>,
    bytes: BTreeMap<(ChannelId, Direction), Bytes>,
    /// (actor, channel, incoming direction) for every actor that receives on a direction.
    receivers: BTreeSet<(ActorId, ChannelId, Direction)>,
    /// Connect or accept event → the channel end it made (channel, incoming direction).
    ends: HashMap<Event, (ChannelId, Direction)>,
    /// Connect → accept, and accept → connect.
    accept_of: HashMap<Event, Event>,
    connect_of: HashMap<Event, Event>,
    /// Successful connects by the address they connected to.
    connects: BTreeMap<String, Vec<Event>>,
}

impl<'a> Model<'a> {
    fn build(rec: &'a Recording, deps: &'a Deps, clocks: &'a Clocks) -> Model<'a> {
        let histories: BTreeMap<ActorId, &[Record]> = rec
            .histories
            .iter()
            .map(|h| (h.actor, h.records.as_slice()))
            .collect();
        let mut bytes: BTreeMap<(ChannelId, Direction), Bytes> = BTreeMap::new();
        let mut receivers = BTreeSet::new();
        let mut connects: BTreeMap<String, Vec<Event>> = BTreeMap::new();
        for (&a, records) in &histories {
            for (i, r) in records.iter().enumerate() {
                let e = (a, i as u64 + 1);
                match r {
                    Record::Connect {
                        err, local, remote, ..
                    } if (err.is_none() || *err == Some(Errno::EINPROGRESS)) && local != "?" => {
                        connects.entry(remote.clone()).or_default().push(e);
                    }
                    Record::Send { .. } | Record::Recv { .. } => {
                        let Some((ch, dir, start, end)) = deps.data_range(a, e.1) else {
                            continue;
                        };
                        let b = bytes.entry((ch, dir)).or_default();
                        if matches!(r, Record::Recv { .. }) {
                            receivers.insert((a, ch, dir));
                            if end > start {
                                b.recvs.push((start, end, e));
                            }
                        } else if end > start {
                            b.sends.push((start, end, e));
                        }
                    }
                    _ => {}
                }
            }
        }
        for b in bytes.values_mut() {
            b.sends.sort();
            b.recvs.sort();
        }
        let mut ends = HashMap::new();
        let mut accept_of = HashMap::new();
        let mut connect_of = HashMap::new();
        for c in &rec.channels {
            let conn = (c.connector.actor, c.connector.event);
            let acc = (c.acceptor.actor, c.acceptor.event);
            ends.insert(conn, (c.id, Direction::AcceptorToConnector));
            ends.insert(acc, (c.id, Direction::ConnectorToAcceptor));
            accept_of.insert(conn, acc);
            connect_of.insert(acc, conn);
        }
        Model {
            rec,
            deps,
            clocks,
            histories,
            bytes,
            receivers,
            ends,
            accept_of,
            connect_of,
            connects,
        }
    }

    fn hb(&self, a: Event, b: Event) -> bool {
        self.clocks.happened_before(a, b)
    }

    /// How many bytes of a direction were consumed by receives that happened before `r`.
    fn consumed(&self, flow: (ChannelId, Direction), r: Event) -> u64 {
        self.bytes.get(&flow).map_or(0, |b| {
            b.recvs
                .iter()
                .filter(|x| x.2 != r && self.hb(x.2, r))
                .map(|x| x.1)
                .max()
                .unwrap_or(0)
        })
    }

    /// The send holding byte `offset` of a direction.
    fn send_holding(&self, flow: (ChannelId, Direction), offset: u64) -> Option<Message> {
        let b = self.bytes.get(&flow)?;
        let i = b.sends.partition_point(|s| s.1 <= offset);
        let s = b.sends.get(i).filter(|s| s.0 <= offset)?;
        Some(self.send_message(flow, *s))
    }

    fn send_message(&self, flow: (ChannelId, Direction), s: (u64, u64, Event)) -> Message {
        let last = s.1 - 1;
        let received_by = self.bytes.get(&flow).and_then(|b| {
            let i = b.recvs.partition_point(|r| r.1 <= last);
            b.recvs.get(i).filter(|r| r.0 <= last).map(|r| r.2)
        });
        Message {
            kind: MessageKind::Send,
            event: Some(s.2),
            channel: Some(flow.0),
            bytes: Some((flow.1, s.0, s.1)),
            received_by,
        }
    }

    fn connect_message(&self, c: Event) -> Message {
        let acc = self.accept_of.get(&c).copied();
        Message {
            kind: MessageKind::Connect,
            event: Some(c),
            channel: acc.and_then(|a| self.ends.get(&a)).map(|e| e.0),
            bytes: None,
            received_by: acc,
        }
    }

    /// Whether connect `c` was still pending at receive `r` and not issued after it.
    fn pending_at(&self, c: Event, r: Event) -> bool {
        let m = self.connect_message(c);
        let taken_before = m
            .received_by
            .is_some_and(|acc| acc == r || (self.hb(acc, r) && !self.hb(r, acc)));
        let issued_after = m.issued_at().is_some_and(|i| self.hb(r, i));
        !taken_before && !issued_after
    }

    /// The receives-from-any of every actor with their outcome and watched sets (the model's
    /// definitions, [`super::races`]).
    fn receives(&self) -> Vec<Receive> {
        let origins: HashMap<ActorId, Origin> = self
            .rec
            .manifest
            .actors
            .iter()
            .map(|a| (a.id, a.origin))
            .collect();
        // Parents before children: a child starts with its parent's fds at the fork.
        let mut todo: Vec<ActorId> = self.histories.keys().copied().collect();
        let mut order: Vec<ActorId> = Vec::new();
        while !todo.is_empty() {
            let before = todo.len();
            todo.retain(|a| {
                let parent = match origins.get(a) {
                    Some(Origin::Fork { parent, .. } | Origin::Spawn { parent, .. }) => {
                        Some(*parent)
                    }
                    _ => None,
                };
                let waits = parent.is_some_and(|p| {
                    p != *a && !order.contains(&p) && self.histories.contains_key(&p)
                });
                if !waits {
                    order.push(*a);
                }
                waits
            });
            if todo.len() == before {
                order.append(&mut todo);
            }
        }
        let mut at_fork: HashMap<(ActorId, u32), BTreeMap<i32, (ChannelId, Direction)>> =
            HashMap::new();
        let mut out = Vec::new();
        for a in order {
            let records = self.histories[&a];
            let mut fds = match origins.get(&a) {
                Some(Origin::Fork { parent, index } | Origin::Spawn { parent, index }) => {
                    at_fork.remove(&(*parent, *index)).unwrap_or_default()
                }
                _ => BTreeMap::new(),
            };
            let roles = FdRoles::of(records);
            let accept_fds: BTreeSet<i32> = records
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
                    Record::Connect { fd, .. } => rebind(&mut fds, *fd, self.ends.get(&here)),
                    Record::Fork { index } | Record::Spawn { index } => {
                        at_fork.insert((a, *index), fds.clone());
                    }
                    Record::Accept { new_fd, local, .. } => {
                        let got = match self.connect_of.get(&here) {
                            Some(c) => self.connect_message(*c),
                            None => Message {
                                kind: MessageKind::External,
                                event: None,
                                channel: None,
                                bytes: None,
                                received_by: Some(here),
                            },
                        };
                        out.push(Receive {
                            at: here,
                            kind: RaceKind::Accept,
                            got: vec![got],
                            quiet: BTreeSet::new(),
                            listening: [local.clone()].into(),
                            votes: BTreeMap::new(),
                        });
                        rebind(&mut fds, *new_fd, self.ends.get(&here));
                    }
                    Record::Ready { fds: ready, .. } => {
                        let reported: BTreeSet<i32> = ready
                            .iter()
                            .filter(|f| f.ev.contains(Events::IN) || f.ev.contains(Events::HUP))
                            .map(|f| f.fd)
                            .collect();
                        let mut got: Vec<Message> = Vec::new();
                        let mut loud: BTreeSet<(ChannelId, Direction)> = BTreeSet::new();
                        let mut listening: BTreeSet<String> = BTreeSet::new();
                        for &fd in &reported {
                            if let Some(addr) = roles.listening(fd, k) {
                                listening.insert(addr.to_string());
                                let next = records[i + 1..].iter().position(
                                    |r| matches!(r, Record::Accept { fd: f, .. } if *f == fd),
                                );
                                if let Some(j) = next
                                    && let Some(c) = self.connect_of.get(&(a, k + 1 + j as u64))
                                {
                                    got.push(self.connect_message(*c));
                                }
                            } else if let Some(&flow) = fds.get(&fd) {
                                loud.insert(flow);
                                if let Some(m) = self.send_holding(flow, self.consumed(flow, here))
                                {
                                    got.push(m);
                                }
                            }
                        }
                        let quiet: BTreeSet<(ChannelId, Direction)> = fds
                            .iter()
                            .filter(|(fd, flow)| {
                                !reported.contains(fd)
                                    && roles.listening(**fd, k).is_none()
                                    && self.receivers.contains(&(a, flow.0, flow.1))
                                    && !loud.contains(flow)
                            })
                            .map(|(_, flow)| *flow)
                            .collect();
                        for &fd in &accept_fds {
                            if let Some(addr) = roles.listening(fd, k) {
                                listening.insert(addr.to_string());
                            }
                        }
                        out.push(Receive {
                            at: here,
                            kind: RaceKind::Ready,
                            got,
                            quiet,
                            listening,
                            votes: BTreeMap::new(),
                        });
                    }
                    _ => {}
                }
            }
        }
        out.sort_by_key(|r| r.at);
        out
    }

    /// Whether message `m` (issued, not yet received at `r`) could have been the outcome of
    /// receive `r` of the model: the check pass 2 makes on each message of a cutoff's
    /// watched channels.
    fn could_be(&self, r: &Receive, m: &Message) -> bool {
        let Some(e) = m.event else { return false };
        if r.got_event(e) {
            return false;
        }
        match m.kind {
            MessageKind::Send => {
                let (Some(ch), Some((dir, start, end))) = (m.channel, m.bytes) else {
                    return false;
                };
                let offset = self.consumed((ch, dir), r.at);
                r.quiet.contains(&(ch, dir))
                    && start <= offset
                    && offset < end
                    && !self.hb(r.at, e)
                    && m.received_by.is_none_or(|x| x.0 == r.at.0)
            }
            MessageKind::Connect => {
                let Some(addr) = self.connect_address(e) else {
                    return false;
                };
                r.listening.contains(addr) && self.pending_at(e, r.at)
            }
            MessageKind::External => false,
        }
    }

    fn connect_address(&self, c: Event) -> Option<&'a str> {
        match self.histories.get(&c.0)?.get(c.1 as usize - 1)? {
            Record::Connect { remote, .. } => Some(remote.as_str()),
            _ => None,
        }
    }

    /// Pass 1: every message votes for the receives it could have been delivered to.
    fn pass1(&self, receives: &mut [Receive]) {
        // Per (actor, watched direction): that actor's receives watching it quietly, in order.
        let mut watching: BTreeMap<(ChannelId, Direction), BTreeMap<ActorId, Vec<usize>>> =
            BTreeMap::new();
        let mut listening: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, r) in receives.iter().enumerate() {
            for flow in &r.quiet {
                watching
                    .entry(*flow)
                    .or_default()
                    .entry(r.at.0)
                    .or_default()
                    .push(i);
            }
            for addr in &r.listening {
                listening.entry(addr.as_str()).or_default().push(i);
            }
        }
        let mut votes: Vec<(usize, Event, MessageKind, String)> = Vec::new();
        // Sends: the receives of p where the send was the head of its channel form a run of
        // p's receives (what happened before a receive grows along program order); those
        // not before its issue are a suffix of that run.
        for (flow, by_actor) in &watching {
            let Some(b) = self.bytes.get(flow) else {
                continue;
            };
            for (&p, idx) in by_actor {
                let consumed: Vec<u64> = idx
                    .iter()
                    .map(|&i| self.consumed(*flow, receives[i].at))
                    .collect();
                for s in &b.sends {
                    let m = self.send_message(*flow, *s);
                    if m.received_by.is_some_and(|x| x.0 != p) {
                        continue;
                    }
                    let from = consumed.partition_point(|c| *c < s.0);
                    let to = consumed.partition_point(|c| *c < s.1);
                    let run = &idx[from..to];
                    let first = run.partition_point(|&i| self.hb(receives[i].at, s.2));
                    for &i in &run[first..] {
                        votes.push((i, s.2, MessageKind::Send, format!("channel {}", flow.0)));
                    }
                }
            }
        }
        // Connects: every receive watching the address they connected to.
        for (addr, cs) in &self.connects {
            for &i in listening.get(addr.as_str()).into_iter().flatten() {
                for &c in cs {
                    if !receives[i].got_event(c) && self.pending_at(c, receives[i].at) {
                        votes.push((i, c, MessageKind::Connect, format!("listening {addr}")));
                    }
                }
            }
        }
        for (i, e, kind, chan) in votes {
            receives[i].votes.entry((kind, e)).or_insert(chan);
        }
    }

    /// Each actor's smallest race receive and its first channel.
    fn cutoffs(&self, receives: &[Receive]) -> Vec<Cutoff> {
        let mut out: BTreeMap<ActorId, Cutoff> = BTreeMap::new();
        for r in receives.iter().filter(|r| r.is_race()) {
            out.entry(r.at.0).or_insert_with(|| Cutoff {
                actor: r.at.0,
                event: r.at.1,
                first_channel: r
                    .votes
                    .values()
                    .next()
                    .cloned()
                    .unwrap_or_else(|| "(its ready set)".into()),
            });
        }
        out.into_values().collect()
    }

    /// Pass 2: the simulated replay carrying the Affecter sets.
    fn pass2(&self, receives: &[Receive], cutoffs: &[Cutoff]) -> TwoPass {
        let actors = self.deps.actors();
        let pos = |a: ActorId| self.deps.actor_index(a);
        let cutoff_of: HashMap<ActorId, u64> = cutoffs.iter().map(|c| (c.actor, c.event)).collect();
        // An order consistent with happened-before: by the sum of the clock's entries (an
        // event's sum exceeds that of everything before it), then by actor and event.
        let mut order: Vec<(u64, Event)> = Vec::new();
        for &a in actors {
            for k in 1..=self.deps.event_count(a) {
                let sum = self.clocks.clock(a, k).map_or(0, |c| c.values().sum());
                order.push((sum, (a, k)));
            }
        }
        order.sort();
        // The set each event leaves behind (what its messages carry), and each actor's set.
        let mut left: HashMap<Event, ActorSet> = HashMap::new();
        let mut current: Vec<ActorSet> = vec![ActorSet::default(); actors.len()];
        let mut race_affecters: BTreeMap<ActorId, ActorSet> = BTreeMap::new();
        for &(_, e) in &order {
            if left.contains_key(&e) {
                continue;
            }
            // A connect and the accept it needs run together when each happened before the
            // other (see [`Clocks`]).
            let mut group = vec![e];
            for &n in self.deps.needs(e.0, e.1) {
                if !left.contains_key(&n) && self.hb(n, e) && self.hb(e, n) {
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
                        && let Some(s) = left.get(&n)
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
                    race_affecters.insert(a, mine);
                    joined.insert(i);
                }
            }
            for &(a, k) in &group {
                if let Some(i) = pos(a) {
                    current[i] = joined.clone();
                }
                left.insert((a, k), joined.clone());
            }
        }
        // Collect each cutoff's racing messages and the sets they carried.
        let mut races = Vec::new();
        for c in cutoffs {
            let Some(r) = receives.iter().find(|r| r.at == (c.actor, c.event)) else {
                continue;
            };
            let mut could: Vec<Message> = Vec::new();
            for flow in &r.quiet {
                if let Some(b) = self.bytes.get(flow) {
                    for s in &b.sends {
                        let m = self.send_message(*flow, *s);
                        if self.could_be(r, &m) {
                            could.push(m);
                        }
                    }
                }
            }
            for addr in &r.listening {
                for &k in self.connects.get(addr).into_iter().flatten() {
                    let m = self.connect_message(k);
                    if self.could_be(r, &m) && !could.contains(&m) {
                        could.push(m);
                    }
                }
            }
            could.sort_by_key(|m| m.event);
            let mut set = race_affecters.remove(&c.actor).unwrap_or_default();
            for m in r.got.iter().chain(&could) {
                if let Some(s) = m.issued_at().and_then(|i| left.get(&i)) {
                    set.union(s);
                }
            }
            if let Some(i) = pos(c.actor) {
                set.remove(i);
            }
            let affecters: Vec<ActorId> = set
                .members()
                .filter_map(|i| actors.get(i).copied())
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
}

/// Binds `fd` to a channel end, or unbinds it when the connect/accept made none.
fn rebind(
    fds: &mut BTreeMap<i32, (ChannelId, Direction)>,
    fd: i32,
    end: Option<&(ChannelId, Direction)>,
) {
    match end {
        Some(e) => {
            fds.insert(fd, *e);
        }
        None => {
            fds.remove(&fd);
        }
    }
}

/// For each fd number of an actor: its uses in event order, each with the listening address
/// when the use is an accept on it.
struct FdRoles<'a>(HashMap<i32, Vec<(u64, Option<&'a str>)>>);

impl<'a> FdRoles<'a> {
    fn of(records: &'a [Record]) -> FdRoles<'a> {
        let mut uses: HashMap<i32, Vec<(u64, Option<&str>)>> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            let k = i as u64 + 1;
            match r {
                Record::Accept {
                    fd, new_fd, local, ..
                } => {
                    uses.entry(*fd).or_default().push((k, Some(local.as_str())));
                    uses.entry(*new_fd).or_default().push((k, None));
                }
                Record::Connect { fd, .. }
                | Record::Recv { fd, .. }
                | Record::NoData { fd }
                | Record::Send { fd, .. } => uses.entry(*fd).or_default().push((k, None)),
                _ => {}
            }
        }
        FdRoles(uses)
    }

    /// The address `fd` listens on at event `k`, judged by its nearest later use (else its
    /// nearest earlier one); `None` when that use is as a stream.
    fn listening(&self, fd: i32, k: u64) -> Option<&'a str> {
        let u = self.0.get(&fd)?;
        let i = u.partition_point(|(e, _)| *e <= k);
        u.get(i).or_else(|| u.get(i.checked_sub(1)?))?.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::races::find_races;
    use ddbx_wire::History;
    use std::path::Path;

    fn p(n: u32) -> ActorId {
        ActorId(n)
    }

    fn hist(actor: u32, body: &str) -> History {
        let mut text = format!(
            "Header(format: 1, actor: \"p{actor}\")\n\
             Start(pid: {actor}, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n"
        );
        for line in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
            text.push_str(line);
            text.push('\n');
        }
        History::parse(Path::new("test.ron"), &text).unwrap()
    }

    fn recording(histories: Vec<History>) -> Recording {
        Recording::in_memory(histories)
    }

    fn accept(listen: u16, client: u16, new_fd: i32) -> String {
        format!(
            "Accept(fd: 3, new_fd: {new_fd}, local: \"127.0.0.1:{listen}\", remote: \"127.0.0.1:{client}\", peer_pid: None)"
        )
    }

    fn connect(fd: i32, me: u16, to: u16) -> String {
        format!(
            "Connect(fd: {fd}, err: None, local: \"127.0.0.1:{me}\", remote: \"127.0.0.1:{to}\")"
        )
    }

    #[test]
    fn a_race_affects_another_through_a_connect_made_after_it() {
        // p2 accepts p4 and p5 (a race), reads both, then connects to p1 and sends. p1
        // accepts p3 and p2 (a race whose other connect, p2's, was made after p2's race):
        // p2's first race is unaffected and affects p1's.
        let p1 = hist(
            1,
            &format!(
                "{}\n{}\nReady(call: Poll, fds: [(fd: 4, ev: \"in\")])\nRecv(fd: 4, n: 2)\nRecv(fd: 5, n: 2)",
                accept(80, 5003, 4),
                accept(80, 5002, 5)
            ),
        );
        let p2 = hist(
            2,
            &format!(
                "{}\n{}\nReady(call: Poll, fds: [(fd: 4, ev: \"in\")])\nRecv(fd: 4, n: 2)\nRecv(fd: 5, n: 2)\n{}\nSend(fd: 6, n: 2)",
                accept(90, 5004, 4),
                accept(90, 5005, 5),
                connect(6, 5002, 80)
            ),
        );
        let p3 = hist(3, &format!("{}\nSend(fd: 3, n: 2)", connect(3, 5003, 80)));
        let p4 = hist(4, &format!("{}\nSend(fd: 3, n: 2)", connect(3, 5004, 90)));
        let p5 = hist(5, &format!("{}\nSend(fd: 3, n: 2)", connect(3, 5005, 90)));
        let rec = recording(vec![p1, p2, p3, p4, p5]);
        let deps = Deps::from_recording(&rec);
        let clocks = Clocks::compute(&deps).unwrap();
        let tp = two_pass(&rec, &deps, &clocks);
        let cutoffs: Vec<(ActorId, u64, &str)> = tp
            .cutoffs
            .iter()
            .map(|c| (c.actor, c.event, c.first_channel.as_str()))
            .collect();
        assert_eq!(
            cutoffs,
            vec![
                (p(1), 2, "listening 127.0.0.1:80"),
                (p(2), 2, "listening 127.0.0.1:90")
            ]
        );
        let (r1, r2) = (&tp.races[0], &tp.races[1]);
        assert_eq!(r1.got[0].event, Some((p(3), 2)));
        assert_eq!(r1.could.len(), 1);
        assert_eq!(r1.could[0].event, Some((p(2), 7)));
        assert_eq!(r1.affecters, vec![p(2)]);
        assert!(r2.unaffected());
        assert_eq!(r2.messages().count(), 2);
        assert_eq!(tp.actor_edges, vec![(p(2), p(1))]);
        // The exact method agrees on the first races (it also finds p1's and p2's polls).
        let exact = find_races(&rec, &deps, &clocks);
        let first: Vec<(Event, bool)> = exact
            .races
            .iter()
            .filter(|r| r.locally_first)
            .map(|r| (r.receive, r.unaffected()))
            .collect();
        assert_eq!(first, vec![((p(1), 2), false), ((p(2), 2), true)]);
        assert_eq!(exact.races.len(), 4);
    }
}
