//! Message races of a recording, computed exactly offline from vector clocks (Park & Jun's
//! message races, adapted to sockets).
//!
//! # Definitions (adapted to sockets)
//!
//! * A **receive-from-any** is an event whose outcome could have been one of several messages
//!   from several senders. ddbx's histories support two kinds:
//!   * a **`Ready`** record (select/poll/epoll returned): its outcome is the set of fds it
//!     reported; the alternatives are the other channels it watched;
//!   * an **`Accept`**: its outcome is the connection it returned; the alternatives are the
//!     other connects made to the same listening address;
//!   * a **`RecvDatagram`**: its outcome is the datagram it got (the `SendDatagram` the
//!     analysis paired with it, or a peer outside the recording); the alternatives are the
//!     other datagrams sent to the same socket (its port: the one its datagram was sent to,
//!     or that of the actor's other datagrams on that fd) that were not received before it by
//!     its actor, nor by another actor, and not sent after it. UDP keeps no order between
//!     senders, so no head of a queue limits them.
//!
//!   A blocking receive on one stream socket is not one: TCP is FIFO, so its outcome (which
//!   bytes) is fixed; how many bytes it returns is not a race between senders.
//! * A **message** is a `Send` on a channel direction (its bytes), a successful `Connect`
//!   (for accepts and for readiness of a listening socket), or a `SendDatagram`. A message is **issued** at its
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
//!
//! * `model`: the definitions above read off a recording (byte flows, channel ends, fd
//!   roles, messages), shared with the two-pass method of [`crate::analysis::twopass`];
//! * `exact`: the receives-from-any and what each got and could have got;
//! * `affects`: the affects relation and the abstract affects graph's components.

mod affects;
mod exact;
pub(crate) mod model;

pub(crate) use affects::components;

use crate::analysis::clock::Clocks;
use crate::analysis::deps::{ChannelId, DataRange, Deps, Event};
use crate::recording::Recording;
use ddbx_wire::ActorId;
use std::collections::BTreeSet;

/// What kind of message a [`Message`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageKind {
    /// Bytes of a `Send` on a channel.
    Send,
    /// A `Connect` to a listening socket.
    Connect,
    /// A connection or datagram from a peer outside the recording (no event of ours issued it).
    External,
    /// A UDP datagram (`SendDatagram`).
    Datagram,
}

impl MessageKind {
    /// `send`, `connect` or `external`.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Send => "send",
            MessageKind::Connect => "connect",
            MessageKind::External => "external",
            MessageKind::Datagram => "datagram",
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
    pub bytes: Option<DataRange>,
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
            MessageKind::Send | MessageKind::Datagram => Some((a, k)),
            MessageKind::Connect => Some((a, k.saturating_sub(1).max(1))),
            MessageKind::External => None,
        }
    }

    /// `p7 event 5 (Send, channel 2, bytes 0..25)`: the message as text.
    pub fn describe(&self) -> String {
        let what = match (self.kind, self.event) {
            (MessageKind::External, _) | (_, None) => "a peer outside the recording".to_string(),
            (kind, Some((a, k))) => {
                let word = match kind {
                    MessageKind::Send => "Send",
                    MessageKind::Datagram => "datagram",
                    _ => "Connect",
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
        if let Some(DataRange { start, end, .. }) = self.bytes {
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
    /// A `RecvDatagram`: which datagram a UDP socket's receive got.
    Datagram,
}

impl RaceKind {
    /// `ready` or `accept`.
    pub fn as_str(self) -> &'static str {
        match self {
            RaceKind::Ready => "ready",
            RaceKind::Accept => "accept",
            RaceKind::Datagram => "datagram",
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
        stop_before(self.receive)
    }
}

/// The `--stop-at` argument that halts a replay right before `event`: `p5:6` for event 7.
pub(crate) fn stop_before(event: Event) -> String {
    format!("{}:{}", event.0, event.1 - 1)
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

/// Finds every race of a recording (see the module docs for the definitions).
///
/// `deps` and `clocks` must be those of `rec` ([`Deps::from_recording`],
/// [`Clocks::compute`]).
pub fn find_races(rec: &Recording, deps: &Deps, clocks: &Clocks) -> Races {
    let model = model::RaceModel::of(rec, deps);
    let mut found = exact::receives_that_race(&model, clocks);
    found.sort_by_key(|f| f.receive);
    let mut races: Vec<Race> = Vec::with_capacity(found.len());
    let mut seen_actor: BTreeSet<ActorId> = BTreeSet::new();
    for (i, f) in found.into_iter().enumerate() {
        races.push(Race {
            id: i + 1,
            receive: f.receive,
            kind: f.kind,
            got: f.got,
            could: f.could,
            locally_first: seen_actor.insert(f.receive.0),
            affected_by: Vec::new(),
            affects: Vec::new(),
        });
    }
    affects::relate(&mut races, clocks);
    let actor_edges = affects::actor_edges(&races);
    let with_race: BTreeSet<ActorId> = races.iter().map(|r| r.receive.0).collect();
    let components = components(&with_race, &actor_edges);
    Races {
        races,
        actor_edges,
        components,
    }
}

/// What the receive-from-any `event` (a ready set, an accept, a datagram receive) got, race
/// or not; `None` when `event` is no such receive.
pub fn outcome_of(
    rec: &Recording,
    deps: &Deps,
    clocks: &Clocks,
    event: Event,
) -> Option<Vec<Message>> {
    let model = model::RaceModel::of(rec, deps);
    exact::receives_from_any(&model, clocks, true)
        .into_iter()
        .find(|f| f.receive == event)
        .map(|f| f.got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{hist, p};
    use ddbx_wire::History;

    fn start(pid: i32) -> String {
        format!("Start(pid: {pid}, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n")
    }

    fn recording(histories: Vec<History>) -> Recording {
        Recording::in_memory(histories)
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
        // A client of port 80 from port `me`, which sends 2 bytes, then does `then`.
        let client = |actor: u32, me: u16, then: &str| {
            let connect = format!(
                "Connect(fd: 3, err: None, local: \"127.0.0.1:{me}\", remote: \"127.0.0.1:80\")"
            );
            let start = start(actor as i32);
            hist(
                actor,
                &format!("{start}{connect}\nSend(fd: 3, n: 2)\n{then}"),
            )
        };
        let a = client(2, 5002, "Recv(fd: 3, n: 1)\n");
        let b = client(3, 5003, "");
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
