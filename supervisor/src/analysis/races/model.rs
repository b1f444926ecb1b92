//! The race model's facts about a recording, read off it once for both race methods (the exact
//! one of [`super`] and [`crate::analysis::twopass`]): the bytes each send and receive covered
//! on each channel direction, the channel end each connect and accept created, the successful
//! connects by address, each fd's listening address over time, and the [`Message`] each send
//! or connect is.
//!
//! These are the definitions of [`super`]'s module docs, not a way of finding races: the two
//! methods share them, and find races (and what affects them) each in its own way, so that
//! they check each other.

use super::{Message, MessageKind};
use crate::analysis::deps::Endpoint;
use crate::analysis::deps::{ChannelId, DataRange, Deps, Direction, Event};
use crate::recording::Recording;
use ddbx_wire::history::{ConnectOutcome, Origin, ReadyFd, Record, connect_outcome};
use ddbx_wire::{ActorId, Events};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The bytes `[start, end)` of a direction that one send or receive covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Transfer {
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// The `Send` or `Recv`.
    pub(crate) event: Event,
}

/// One channel direction's sends and receives (those that moved bytes), sorted by start.
#[derive(Debug, Default)]
pub(crate) struct Flow {
    pub(crate) sends: Vec<Transfer>,
    pub(crate) recvs: Vec<Transfer>,
    /// The actor that made every receive, when there is only one.
    pub(crate) receiver: Option<ActorId>,
}

impl Flow {
    /// The send holding byte `b`.
    pub(crate) fn send_at(&self, b: u64) -> Option<Transfer> {
        let i = self.sends.partition_point(|s| s.end <= b);
        self.sends.get(i).copied().filter(|s| s.start <= b)
    }

    /// The receive that consumed byte `b`.
    pub(crate) fn recv_at(&self, b: u64) -> Option<Event> {
        let i = self.recvs.partition_point(|r| r.end <= b);
        self.recvs.get(i).filter(|r| r.start <= b).map(|r| r.event)
    }
}

/// A channel direction: the channel and which way its bytes go.
pub(crate) type FlowId = (ChannelId, Direction);

/// A channel end as seen by one actor's fd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct End {
    pub(crate) channel: ChannelId,
    /// The direction this end receives.
    pub(crate) incoming: Direction,
}

impl End {
    /// The direction this end receives, as a [`FlowId`].
    pub(crate) fn flow(self) -> FlowId {
        (self.channel, self.incoming)
    }
}

/// What both race methods read from a recording (see the module docs).
pub(crate) struct RaceModel<'a> {
    /// Each actor's records.
    pub(crate) histories: BTreeMap<ActorId, &'a [Record]>,
    /// Each channel direction's bytes.
    pub(crate) flows: BTreeMap<FlowId, Flow>,
    /// (actor, channel, direction) for every actor that receives on a direction at some point.
    pub(crate) receives_on: BTreeSet<(ActorId, ChannelId, Direction)>,
    /// Connect or accept event → the channel end it created.
    pub(crate) ends: HashMap<Event, End>,
    /// Connect → the accept that took it.
    pub(crate) accept_of: HashMap<Event, Event>,
    /// Accept → the connect it took.
    pub(crate) connect_of: HashMap<Event, Event>,
    /// Every successful connect, by the address it connected to.
    pub(crate) connects: BTreeMap<&'a str, Vec<Event>>,
    /// Each actor's origin, from the manifest.
    pub(crate) origins: HashMap<ActorId, Origin>,
    /// Every `SendDatagram` paired with a receive or not, by the port it was sent to, in
    /// (actor, event) order.
    pub(crate) datagrams_to: BTreeMap<Endpoint, Vec<Event>>,
    /// Each received datagram's send (from the dependencies' pairing) and the receiving
    /// socket's port.
    datagram_got: HashMap<Event, (Option<Event>, Option<Endpoint>)>,
    /// The receive that got each paired datagram.
    datagram_received_by: HashMap<Event, Event>,
}

impl<'a> RaceModel<'a> {
    /// Reads the model of `rec`, whose dependencies are `deps`.
    pub(crate) fn of(rec: &'a Recording, deps: &Deps) -> RaceModel<'a> {
        let histories: BTreeMap<ActorId, &[Record]> = rec
            .histories
            .iter()
            .map(|h| (h.actor, h.records.as_slice()))
            .collect();
        let mut model = RaceModel {
            flows: BTreeMap::new(),
            receives_on: BTreeSet::new(),
            ends: HashMap::new(),
            accept_of: HashMap::new(),
            connect_of: HashMap::new(),
            connects: BTreeMap::new(),
            origins: rec
                .manifest
                .actors
                .iter()
                .map(|a| (a.id, a.origin))
                .collect(),
            histories,
            datagrams_to: BTreeMap::new(),
            datagram_got: HashMap::new(),
            datagram_received_by: HashMap::new(),
        };
        model.read_flows(deps);
        model.read_channels(deps);
        model.read_datagrams(deps);
        model
    }

    /// The datagrams: every send by the port it went to, and each receive's send and port (an
    /// unpaired receive, from outside, takes the port of its actor's paired receives on the
    /// same fd).
    fn read_datagrams(&mut self, deps: &Deps) {
        let pairs = deps.datagram_pairs();
        for (&a, records) in &self.histories {
            let mut port_of_fd: HashMap<i32, Endpoint> = HashMap::new();
            for (i, r) in records.iter().enumerate() {
                let e = (a, i as u64 + 1);
                match r {
                    Record::SendDatagram { to, .. } => {
                        if let Some(p) = crate::analysis::deps::endpoint(to) {
                            self.datagrams_to.entry(p).or_default().push(e);
                        }
                    }
                    Record::RecvDatagram { fd, .. } => {
                        if let Some((_, Some(p))) = pairs.get(&e) {
                            port_of_fd.entry(*fd).or_insert_with(|| p.clone());
                        }
                    }
                    _ => {}
                }
            }
            for (i, r) in records.iter().enumerate() {
                if let Record::RecvDatagram { fd, .. } = r {
                    let e = (a, i as u64 + 1);
                    let (send, port) = pairs
                        .get(&e)
                        .map_or((None, None), |(s, p)| (Some(*s), p.clone()));
                    let port = port.or_else(|| port_of_fd.get(fd).cloned());
                    self.datagram_got.insert(e, (send, port));
                    if let Some(s) = send {
                        self.datagram_received_by.insert(s, e);
                    }
                }
            }
        }
    }

    /// The message of datagram send `s`.
    pub(crate) fn datagram_message(&self, s: Event) -> Message {
        Message {
            kind: MessageKind::Datagram,
            event: Some(s),
            channel: None,
            bytes: None,
            received_by: self.datagram_received_by.get(&s).copied(),
        }
    }

    /// What datagram receive `here` got (its send, or a peer outside the recording), and the
    /// port of its socket when known.
    pub(crate) fn datagram_received(&self, here: Event) -> (Message, Option<Endpoint>) {
        match self.datagram_got.get(&here) {
            Some((Some(s), port)) => (self.datagram_message(*s), port.clone()),
            other => (
                Message {
                    kind: MessageKind::External,
                    event: None,
                    channel: None,
                    bytes: None,
                    received_by: Some(here),
                },
                other.and_then(|(_, p)| p.clone()),
            ),
        }
    }

    /// The byte flows of every channel direction, and who receives on each.
    fn read_flows(&mut self, deps: &Deps) {
        for (&a, records) in &self.histories {
            for (i, r) in records.iter().enumerate() {
                let e = (a, i as u64 + 1);
                let Some(DataRange {
                    channel,
                    direction,
                    start,
                    end,
                }) = deps.data_range(e.0, e.1)
                else {
                    continue;
                };
                let flow = self.flows.entry((channel, direction)).or_default();
                let transfer = Transfer {
                    start,
                    end,
                    event: e,
                };
                match r {
                    Record::Send { .. } if end > start => flow.sends.push(transfer),
                    Record::Recv { .. } => {
                        self.receives_on.insert((a, channel, direction));
                        if end > start {
                            flow.recvs.push(transfer);
                        }
                    }
                    _ => {}
                }
            }
        }
        for f in self.flows.values_mut() {
            f.sends.sort();
            f.recvs.sort();
            let first = f.recvs.first().map(|x| x.event.0);
            f.receiver = first.filter(|a| f.recvs.iter().all(|x| x.event.0 == *a));
        }
    }

    /// The channel ends made by connects and accepts, and every successful connect.
    fn read_channels(&mut self, deps: &Deps) {
        for c in deps.channels() {
            let conn = (c.connector.actor, c.connector.event);
            let acc = (c.acceptor.actor, c.acceptor.event);
            let end = |incoming| End {
                channel: c.id,
                incoming,
            };
            self.ends.insert(conn, end(Direction::AcceptorToConnector));
            self.ends.insert(acc, end(Direction::ConnectorToAcceptor));
            self.accept_of.insert(conn, acc);
            self.connect_of.insert(acc, conn);
        }
        for (&a, records) in &self.histories {
            for (i, r) in records.iter().enumerate() {
                if let Record::Connect { remote, local, .. } = r
                    && !matches!(connect_outcome(records, i), ConnectOutcome::Failed(_))
                    && local != "?"
                {
                    self.connects
                        .entry(remote.as_str())
                        .or_default()
                        .push((a, i as u64 + 1));
                }
            }
        }
    }

    /// The actors with a history, parents before children (a child starts with its parent's
    /// fd bindings at the fork).
    pub(crate) fn parents_first(&self) -> Vec<ActorId> {
        crate::analysis::parents_first(self.histories.keys().copied(), |a| {
            match self.origins.get(&a) {
                Some(Origin::Fork { parent, .. } | Origin::Spawn { parent, .. }) => Some(*parent),
                _ => None,
            }
        })
    }

    /// The fd bindings an actor starts with: its parent's at the fork that created it.
    pub(crate) fn inherited(
        &self,
        a: ActorId,
        at_fork: &mut HashMap<(ActorId, u32), BTreeMap<i32, End>>,
    ) -> BTreeMap<i32, End> {
        match self.origins.get(&a) {
            Some(Origin::Fork { parent, index } | Origin::Spawn { parent, index }) => {
                at_fork.remove(&(*parent, *index)).unwrap_or_default()
            }
            _ => BTreeMap::new(),
        }
    }

    /// The message of a send that covered `s` on direction `flow`.
    pub(crate) fn send_message(&self, flow: FlowId, s: Transfer) -> Message {
        let (channel, direction) = flow;
        Message {
            kind: MessageKind::Send,
            event: Some(s.event),
            channel: Some(channel),
            bytes: Some(DataRange {
                channel,
                direction,
                start: s.start,
                end: s.end,
            }),
            received_by: self.flows.get(&flow).and_then(|f| f.recv_at(s.end - 1)),
        }
    }

    /// The message of connect `c`.
    pub(crate) fn connect_message(&self, c: Event) -> Message {
        let acc = self.accept_of.get(&c).copied();
        Message {
            kind: MessageKind::Connect,
            event: Some(c),
            channel: acc.and_then(|a| self.ends.get(&a)).map(|e| e.channel),
            bytes: None,
            received_by: acc,
        }
    }

    /// What accept `here` got: its connect, or a peer outside the recording.
    pub(crate) fn accepted(&self, here: Event) -> Message {
        match self.connect_of.get(&here) {
            Some(c) => self.connect_message(*c),
            None => Message {
                kind: MessageKind::External,
                event: None,
                channel: None,
                bytes: None,
                received_by: Some(here),
            },
        }
    }

    /// The connect that the first `Accept` on `fd` after event `k` of `a` took, when that
    /// accept took a connect of the recording: what a listening socket reported readable at
    /// event `k` delivered.
    pub(crate) fn next_accepted(&self, a: ActorId, k: u64, fd: i32) -> Option<Event> {
        let records = self.histories.get(&a)?;
        let m = records
            .iter()
            .skip(k as usize)
            .position(|r| matches!(r, Record::Accept { fd: f, .. } if *f == fd))?;
        self.connect_of.get(&(a, k + 1 + m as u64)).copied()
    }
}

/// Binds `fd` to `end`, or unbinds it when the connect/accept made no channel.
pub(crate) fn bind(fds: &mut BTreeMap<i32, End>, fd: i32, end: Option<&End>) {
    match end {
        Some(e) => {
            fds.insert(fd, *e);
        }
        None => {
            fds.remove(&fd);
        }
    }
}

/// One use of an fd number: the event, and the listening address when it is an accept on it
/// (`None`: a use as a stream).
type FdUse<'a> = (u64, Option<&'a str>);

/// For each fd number of an actor: its uses in event order.
pub(crate) struct FdUses<'a>(HashMap<i32, Vec<FdUse<'a>>>);

impl<'a> FdUses<'a> {
    /// The uses of every fd number in `records`.
    pub(crate) fn of(records: &'a [Record]) -> FdUses<'a> {
        let mut uses: HashMap<i32, Vec<FdUse<'a>>> = HashMap::new();
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
                | Record::Peek { fd, .. }
                | Record::NoData { fd }
                | Record::Send { fd, .. } => add(*fd, None),
                _ => {}
            }
        }
        FdUses(uses)
    }

    /// The address `fd` listens on at event `k`, judged by its nearest later use (else its
    /// nearest earlier one); `None` when that use is as a stream.
    pub(crate) fn listening(&self, fd: i32, k: u64) -> Option<&'a str> {
        let u = self.0.get(&fd)?;
        let i = u.partition_point(|(e, _)| *e <= k);
        u.get(i).or_else(|| u.get(i.checked_sub(1)?))?.1
    }
}

/// The fds a `Ready` record reported readable (`in`) or hung up (`hup`): its outcome.
pub(crate) fn reported_fds(ready: &[ReadyFd]) -> BTreeSet<i32> {
    ready
        .iter()
        .filter(|f| f.ev.contains(Events::IN) || f.ev.contains(Events::HUP))
        .map(|f| f.fd)
        .collect()
}

/// The fds of an actor that it ever accepts on: the listening sockets a readiness call may
/// watch.
pub(crate) fn accept_fds(records: &[Record]) -> BTreeSet<i32> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Accept { fd, .. } => Some(*fd),
            _ => None,
        })
        .collect()
}
