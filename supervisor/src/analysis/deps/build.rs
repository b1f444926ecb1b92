//! How [`Deps`] finds the needs of a recording, in the order of the module docs: creation,
//! connect ↔ accept, then one walk over every actor's fd bindings that sorts each send, receive
//! and readiness query to its channel direction (numbered in [`super::stream`]) and finds what
//! the readiness of a listening socket needs.

mod passing;

use super::roles::{FdUse, Role, fd_roles, role_at};
use super::stream::{Stream, StreamUse};
use super::{ChannelId, Deps, Direction, Event};
use crate::analysis::channels::Channel;
use crate::analysis::parents_first;
use ddbx_wire::history::value::Value;
use ddbx_wire::history::{Addr, Call, Origin, Record};
use ddbx_wire::{ActorId, Errno, Events, History};
use passing::{Passing, Received};
use std::collections::{BTreeMap, HashMap, HashSet};

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
    /// The other end of the channel.
    fn peer(self) -> End {
        End {
            channel: self.channel,
            side: match self.side {
                Side::Connector => Side::Acceptor,
                Side::Acceptor => Side::Connector,
            },
        }
    }

    /// The end that sends in `dir`.
    fn sending(channel: ChannelId, dir: Direction) -> End {
        let side = match dir {
            Direction::ConnectorToAcceptor => Side::Connector,
            Direction::AcceptorToConnector => Side::Acceptor,
        };
        End { channel, side }
    }

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

/// Each channel direction's sends, receives and readiness queries.
type Streams = BTreeMap<(ChannelId, Direction), Stream>;

impl Deps {
    /// Finds every need of `histories` (see the module docs), children found through
    /// `origins`.
    pub(super) fn build(
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
        let kinds: Vec<Vec<&'static str>> = by_actor
            .values()
            .map(|h| h.records.iter().map(Record::kind).collect())
            .collect();
        let mut deps = Deps {
            needs: kinds.iter().map(|k| vec![Vec::new(); k.len()]).collect(),
            index: actors.iter().enumerate().map(|(i, a)| (*a, i)).collect(),
            actors,
            kinds,
            data: HashMap::new(),
            diagnostics,
            forked_at: HashMap::new(),
            channels: channels.to_vec(),
            turn_needs: HashMap::new(),
            ordered_files: Vec::new(),
            datagrams: HashMap::new(),
        };
        let origin_of = |a: ActorId| origins.get(&a).copied().unwrap_or(Origin::Root);

        deps.add_creation_needs(&by_actor, &origin_of);
        deps.add_signal_needs(histories, origins);
        deps.add_turn_needs(histories, origins);
        let ends = deps.add_connection_needs(&by_actor, channels);
        deps.add_datagram_needs(&by_actor);
        let parent_of = |a| match origin_of(a) {
            Origin::Fork { parent, .. } | Origin::Spawn { parent, .. }
                if by_actor.contains_key(&parent) =>
            {
                Some(parent)
            }
            _ => None,
        };
        // Walked again while the fds passed over Unix sockets bind differently (`passing`).
        let (mut received, mut round) = (Received::new(), 0);
        let mut walk = loop {
            let mut walk = BindingWalk::new(&ends, channels, received);
            walk.round = round;
            round += 1;
            for a in parents_first(by_actor.keys().copied(), parent_of) {
                walk.actor(a, by_actor[&a], origin_of(a));
            }
            let found = walk.passing.received();
            if found == walk.received || walk.rounds_left(&mut deps.diagnostics) == 0 {
                break walk;
            }
            received = found;
        };
        let shared = shared_listeners(&by_actor);
        for (ready, accept, connector) in std::mem::take(&mut walk.listening_needs) {
            if !accepted_on(&by_actor, accept).is_some_and(|addr| shared.contains(addr)) {
                deps.add_need(ready, connector);
            }
        }
        let streams = std::mem::take(&mut walk.streams);
        for ((channel, dir), mut s) in streams {
            for seen in deps.settle_stream(channel, dir, &mut s) {
                deps.add_end_needs(seen, End::sending(channel, dir), &walk, true);
            }
        }
        for &(seen, end) in &walk.resets {
            deps.add_end_needs(seen, end, &walk, false);
        }
        for per_actor in &mut deps.needs {
            for needs in per_actor {
                needs.sort();
                needs.dedup();
            }
        }
        deps
    }

    /// Creation: the child's `Start` needs the parent's `Fork`/`Spawn`.
    fn add_creation_needs(
        &mut self,
        by_actor: &BTreeMap<ActorId, &History>,
        origin_of: &dyn Fn(ActorId) -> Origin,
    ) {
        for &child in by_actor.keys() {
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
                    self.add_need((child, 1), (parent, i as u64 + 1));
                    self.forked_at.insert(child, (parent, i as u64 + 1));
                }
                None => self.diagnostics.push(format!(
                    "missing_fork: {child} is child {index} of {parent}, whose history has no such Fork/Spawn"
                )),
            }
        }
    }

    /// An event that saw `end` gone (the end of the stream it sends, or a reset because it was
    /// closed) needs what made it go: a `Shutdown` of its sending side by one of its holders
    /// when `by_shutdown` and there is one, else every holder letting go of it (`Close`, or
    /// the holder's last event: an exit closes everything).
    fn add_end_needs(&mut self, seen: Event, end: End, walk: &BindingWalk<'_>, by_shutdown: bool) {
        let shutdowns = walk
            .shutdowns
            .get(&end)
            .filter(|s| by_shutdown && !s.is_empty());
        let causes = shutdowns.or_else(|| walk.releases.get(&end));
        for &cause in causes.into_iter().flatten() {
            // A holder the seeing actor forks after it saw the end got the end from it, so the
            // actor held the end itself: what it saw came from its own writes (a self-pipe's,
            // which are not events: dnsmasq's event pipe, inherited by the TCP children it
            // forks later), and cannot wait for that child.
            if self.forked_after(seen.0, seen.1, cause.0) {
                continue;
            }
            self.add_need(seen, cause);
        }
    }

    /// Connect ↔ accept: each channel's two events need each other. Returns the channel end
    /// each of them creates.
    fn add_connection_needs(
        &mut self,
        by_actor: &BTreeMap<ActorId, &History>,
        channels: &[Channel],
    ) -> HashMap<Event, End> {
        let record = |e: Event| -> Option<&Record> {
            by_actor
                .get(&e.0)
                .and_then(|h| h.records.get((e.1 as usize).checked_sub(1)?))
        };
        let mut ends: HashMap<Event, End> = HashMap::new();
        for c in channels {
            let conn = (c.connector.actor, c.connector.event);
            let acc = (c.acceptor.actor, c.acceptor.event);
            let ok = matches!(record(conn), Some(Record::Connect { .. }))
                && matches!(record(acc), Some(Record::Accept { .. }));
            if !ok {
                self.diagnostics.push(format!(
                    "bad_channel: channel {} pairs {} event {} with {} event {}, which are not a Connect and an Accept",
                    c.id, conn.0, conn.1, acc.0, acc.1
                ));
                continue;
            }
            let end = |side| End {
                channel: c.id,
                side,
            };
            ends.insert(conn, end(Side::Connector));
            ends.insert(acc, end(Side::Acceptor));
            self.add_need(conn, acc);
            self.add_need(acc, conn);
        }
        ends
    }
}

/// The walk over every actor's fd bindings over time (parents first: a child starts with a
/// copy of its parent's bindings at its `Fork`/`Spawn`; `Exec` keeps them).
struct BindingWalk<'a> {
    /// The channel end each connect or accept event creates.
    ends: &'a HashMap<Event, End>,
    /// Accept → the connect it took.
    connector_of: HashMap<Event, Event>,
    /// A parent's bindings at each of its `Fork`/`Spawn` events, by (parent, child index).
    snapshots: HashMap<(ActorId, u32), HashMap<i32, End>>,
    /// What was found on each channel direction.
    streams: Streams,
    /// The readiness of a listening socket: (the `Ready` event, the actor's next accept on it,
    /// the connector's event that accept's connection needs).
    listening_needs: Vec<(Event, Event, Event)>,
    /// For each channel end, where each of its holders let go of it (one event per holder and
    /// binding).
    releases: HashMap<End, Vec<Event>>,
    /// For each channel end, its `Shutdown`s of the sending side (each holder's first).
    shutdowns: HashMap<End, Vec<Event>>,
    /// Events that found an end closed (`EPIPE`, `ECONNRESET`), with that end.
    resets: Vec<(Event, End)>,
    /// The id the next socketpair's channel gets (after every matched channel's).
    next_pair: ChannelId,
    /// What the fds each receive took are bound to, as the walk before found it.
    received: Received,
    /// The passing this walk saw.
    passing: Passing,
    /// How many walks came before this one.
    round: u32,
}

impl<'a> BindingWalk<'a> {
    /// A walk from scratch, the fds of each receive bound as `received` says.
    fn new(ends: &'a HashMap<Event, End>, channels: &[Channel], received: Received) -> Self {
        BindingWalk {
            ends,
            connector_of: channels
                .iter()
                .map(|c| {
                    (
                        (c.acceptor.actor, c.acceptor.event),
                        (c.connector.actor, c.connector.event),
                    )
                })
                .collect(),
            snapshots: HashMap::new(),
            streams: Streams::new(),
            listening_needs: Vec::new(),
            releases: HashMap::new(),
            shutdowns: HashMap::new(),
            resets: Vec::new(),
            next_pair: channels.iter().map(|c| c.id).max().unwrap_or(0) + 1,
            received,
            passing: Passing::default(),
            round: 0,
        }
    }

    /// Walks the history `h` of actor `a`.
    fn actor(&mut self, a: ActorId, h: &History, origin: Origin) {
        let mut fds: HashMap<i32, End> = match origin {
            Origin::Fork { parent, index } | Origin::Spawn { parent, index } => {
                self.snapshots.remove(&(parent, index)).unwrap_or_default()
            }
            _ => HashMap::new(),
        };
        // A spawned child keeps only the fds without FD_CLOEXEC, which the history does not
        // say: it holds an inherited end only once it uses it. A forked child holds them all.
        let mut unused: HashSet<i32> = match origin {
            Origin::Spawn { .. } => fds.keys().copied().collect(),
            _ => HashSet::new(),
        };
        let roles = fd_roles(h);
        // Ends a handler closed inside a hooked call (`~h`): let go of at that call's event.
        let mut closes = handler_closes(h).peekable();
        for (i, r) in h.records.iter().enumerate() {
            let here = (a, i as u64 + 1);
            while let Some((_, fd)) = closes.next_if(|(gap, _)| *gap <= i as u64) {
                self.let_go(&mut fds, &mut unused, fd, here);
            }
            if let Some(fd) = used_fd(r) {
                unused.remove(&fd);
            }
            if self.fd_table(&mut fds, &mut unused, r, (here, release_at(h, a, i))) {
                continue;
            }
            self.pass(&mut fds, &mut unused, r, here);
            match r {
                Record::Connect { fd, .. } => {
                    self.let_go(&mut fds, &mut unused, *fd, here);
                    bind(&mut fds, *fd, self.ends.get(&here));
                }
                Record::Accept { new_fd, .. } => {
                    self.let_go(&mut fds, &mut unused, *new_fd, here);
                    bind(&mut fds, *new_fd, self.ends.get(&here));
                }
                Record::Shutdown {
                    fd, how, err: None, ..
                } if how.ends_sending() => {
                    if let Some(end) = fds.get(fd) {
                        let first = self.shutdowns.entry(*end).or_default();
                        if !first.iter().any(|e| e.0 == a) {
                            first.push(here);
                        }
                    }
                }
                Record::Fail {
                    call: Call::Send | Call::Recv,
                    fd,
                    err,
                } if *err == Errno::EPIPE || *err == Errno::ECONNRESET => {
                    if let Some(end) = fds.get(fd) {
                        self.resets.push((here, end.peer()));
                    }
                }
                Record::Fork { index } | Record::Spawn { index } => {
                    self.snapshots.insert((a, *index), fds.clone());
                }
                Record::Send { fd, n, turn, .. } => {
                    if let Some(end) = fds.get(fd) {
                        let stream = self.stream(end.channel, end.outgoing());
                        let mut send = StreamUse::of(here, *n);
                        send.turn = *turn;
                        stream.sends.push(send);
                    }
                }
                Record::Recv { fd, n, .. } | Record::Peek { fd, n } => {
                    if let Some(end) = fds.get(fd) {
                        let stream = self.stream(end.channel, end.incoming());
                        let uses = match r {
                            Record::Peek { .. } => &mut stream.peeks,
                            _ => &mut stream.recvs,
                        };
                        uses.push(StreamUse::of(here, *n));
                    }
                }
                Record::Ready { fds: ready, .. } => {
                    for rf in ready.iter().filter(|f| f.ev.contains(Events::IN)) {
                        self.ready_fd(h, &roles, &fds, here, rf.fd);
                    }
                    let hangup = Events::HUP | Events::RDHUP;
                    for rf in ready.iter().filter(|f| f.ev.intersects(hangup)) {
                        if let Some(end) = fds.get(&rf.fd) {
                            let stream = self.stream(end.channel, end.incoming());
                            stream.hangups.push(here);
                        }
                    }
                }
                _ => {}
            }
        }
        // What it still held when its history ended, its exit (or its death) let go of.
        let last = (a, h.records.len() as u64);
        for (fd, end) in fds {
            if !unused.contains(&fd) {
                self.releases.entry(end).or_default().push(last);
            }
        }
    }

    /// What `r`, at event `here`, does to the actor's fd table (`Close`, `Dup`, `Pair`,
    /// `Pipe`); `false`: nothing (another kind of record). A `Close` lets go at `release` (see
    /// [`release_at`]).
    fn fd_table(
        &mut self,
        fds: &mut HashMap<i32, End>,
        unused: &mut HashSet<i32>,
        r: &Record,
        (here, release): (Event, Event),
    ) -> bool {
        match r {
            Record::Close { fd } => {
                // The process's last fd on that end: any other number bound to it was
                // closed unrecorded before.
                let end = fds.get(fd).copied();
                self.let_go(fds, unused, *fd, release);
                fds.retain(|_, e| Some(*e) != end);
            }
            Record::Dup { fd, new_fd } if fd != new_fd => {
                // A dup over the last fd on another end wrote its `Close` first.
                let end = fds.get(fd).copied();
                fds.remove(new_fd);
                unused.remove(new_fd);
                if let Some(end) = end {
                    unused.remove(fd);
                    fds.insert(*new_fd, end);
                }
            }
            Record::Pair { fd, peer_fd } => {
                // Both ends of a new channel, made here: the first end sends as a
                // connector would.
                let channel = self.next_pair;
                self.next_pair += 1;
                for (f, side) in [(*fd, Side::Connector), (*peer_fd, Side::Acceptor)] {
                    self.let_go(fds, unused, f, here);
                    fds.insert(f, End { channel, side });
                }
            }
            Record::Pipe { read_fd, write_fd } => {
                // A one-way channel: its write end sends as a connector would, its read
                // end receives as the acceptor.
                let channel = self.next_pair;
                self.next_pair += 1;
                for (f, side) in [(*write_fd, Side::Connector), (*read_fd, Side::Acceptor)] {
                    self.let_go(fds, unused, f, here);
                    fds.insert(f, End { channel, side });
                }
            }
            _ => return false,
        }
        true
    }

    /// The actor stops holding what `fd` was bound to, at event `here` (a `Close`; or a new
    /// connection on the same number, whose close the history does not have).
    fn let_go(
        &mut self,
        fds: &mut HashMap<i32, End>,
        unused: &mut HashSet<i32>,
        fd: i32,
        here: Event,
    ) {
        if let Some(end) = fds.remove(&fd)
            && !unused.remove(&fd)
        {
            self.releases.entry(end).or_default().push(here);
        }
    }

    /// An fd reported readable by the `Ready` event `here` of history `h`.
    fn ready_fd(
        &mut self,
        h: &History,
        roles: &HashMap<i32, Vec<FdUse>>,
        fds: &HashMap<i32, End>,
        here: Event,
        fd: i32,
    ) {
        let (a, k) = here;
        if role_at(roles, fd, k) == Some(Role::Listening) {
            // Events after `here` start at index k.
            let next_accept = h
                .records
                .iter()
                .enumerate()
                .skip(k as usize)
                .find(|(_, r)| matches!(r, Record::Accept { fd: f, .. } if *f == fd));
            if let Some((m, _)) = next_accept
                && let Some(&(c, j)) = self.connector_of.get(&(a, m as u64 + 1))
                && j > 1
            {
                self.listening_needs
                    .push((here, (a, m as u64 + 1), (c, j - 1)));
            }
        } else if let Some(end) = fds.get(&fd) {
            self.stream(end.channel, end.incoming()).readies.push(here);
        }
    }

    fn stream(&mut self, channel: ChannelId, dir: Direction) -> &mut Stream {
        self.streams.entry((channel, dir)).or_default()
    }
}

/// The channel ends the program's handler closed inside a hooked call (`~h` value lines),
/// with the gap each came in.
fn handler_closes(h: &History) -> impl Iterator<Item = (u64, i32)> + '_ {
    h.values.iter().filter_map(|(gap, v)| match v {
        Value::Closed { fd } => Some((*gap, *fd)),
        _ => None,
    })
}

/// The listening addresses that more than one actor accepts on (pre-fork workers sharing one
/// listening socket): a ready set there may report a connection that another actor accepts, so
/// it needs no connect of its own.
fn shared_listeners<'h>(by_actor: &BTreeMap<ActorId, &'h History>) -> HashSet<&'h Addr> {
    let mut first: HashMap<&Addr, ActorId> = HashMap::new();
    let mut shared = HashSet::new();
    for (&a, h) in by_actor {
        for r in &h.records {
            if let Record::Accept { local, .. } = r
                && *first.entry(local).or_insert(a) != a
            {
                shared.insert(local);
            }
        }
    }
    shared
}

/// The listening address of accept event `accept` (an `Accept` record).
fn accepted_on<'h>(by_actor: &BTreeMap<ActorId, &'h History>, (a, k): Event) -> Option<&'h Addr> {
    match by_actor.get(&a)?.records.get(k as usize - 1)? {
        Record::Accept { local, .. } => Some(local),
        _ => None,
    }
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

/// The fd a record uses as a channel end (which makes a spawned child a holder of what the fd
/// is bound to).
fn used_fd(r: &Record) -> Option<i32> {
    match r {
        Record::Recv { fd, .. }
        | Record::Peek { fd, .. }
        | Record::Send { fd, .. }
        | Record::NoData { fd }
        | Record::Close { fd }
        | Record::Shutdown { fd, .. }
        | Record::Fail {
            call: Call::Recv | Call::Send,
            fd,
            ..
        } => Some(*fd),
        _ => None,
    }
}

/// Where the `Close` at index `i` of `h` (actor `a`) really lets go: at the `Exec` that follows
/// it when only closes come in between (the LD writes the closes an exec makes, of its
/// `FD_CLOEXEC` fds, before the `Exec`; the fd stays open until the exec is made), else there.
fn release_at(h: &History, a: ActorId, i: usize) -> Event {
    let next = h.records[i + 1..]
        .iter()
        .position(|r| !matches!(r, Record::Close { .. }))
        .map(|k| i + 1 + k);
    match next {
        Some(j) if matches!(h.records[j], Record::Exec { .. }) => (a, j as u64 + 1),
        _ => (a, i as u64 + 1),
    }
}
