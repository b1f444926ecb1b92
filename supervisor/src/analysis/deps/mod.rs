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
//!     acceptor end, and a `Pair{fd, peer_fd}` (a stream socketpair) makes a channel of its own
//!     (numbered after every matched one) and binds `fd` to its connector end and `peer_fd` to
//!     its acceptor end; a connect or accept that matched no channel (refused, external peer)
//!     unbinds the fd number. A forked/spawned child starts with a copy of its parent's
//!     bindings as they were at the parent's `Fork`/`Spawn` event; `Exec` keeps them
//!     (`dup` is not recorded: fds never bound are skipped; a `Close` unbinds). Each channel has two
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
//!     A `Peek{n}` (a receive with `MSG_PEEK`) consumes nothing: it sees bytes `[o, o+n)`,
//!     `o` being the bytes the receives before it consumed, and needs the `Send` of byte
//!     `o+n-1` (a `Peek{n: 0}` is an end of stream, like `Recv{n: 0}`); it has no
//!     [`DataRange`], since it covers no bytes of its own.
//!   * **ends of streams**: an actor *holds* a channel end from the connect or accept that
//!     bound it (or, for a forked child, from its creation; a spawned child only once it uses
//!     the fd, since the fds an exec closes are not in its history) until it lets go of it: its
//!     `Close` of that fd (written by the LD when the process closes its last fd on the
//!     connection, by close, close_range, dup2 over it, or an exec that closes it), a new
//!     connection on the same fd number (a close the history does not have), or its last
//!     event (its exit closes everything; a killed process ends there too). An event that saw
//!     the end of the stream an end sends — a `Recv{n: 0}`, a ready set with `in` on a fd
//!     whose every sent byte was consumed, or with `hup`/`rdhup` — needs the `Shutdown` of
//!     that end's sending side when a holder made one (each such holder's first), else every
//!     holder's letting go — except holders the seeing actor forks after that event: they got
//!     the end from it, so the actor held the sending end itself and what it saw came from its
//!     own writes (a self-pipe's, which are not events). A send or receive that failed with `EPIPE`/`ECONNRESET` needs
//!     every holder of the other end letting go of it.
//!   * **readiness**: for each fd of a `Ready` record with the `in` bit:
//!     * if the fd is a **listening** socket at that point, the event needs the connector's
//!       event *just before* the `Connect` matched to the actor's next `Accept` on that fd
//!       (the connector has reached its connect) — unless another actor accepts on the same
//!       listening address (pre-fork workers sharing a socket): then the connection that made
//!       it readable may be one another actor took, and the ready set needs nothing. Not the `Connect` itself: the connect needs
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
//!   * **signals**: a SIGCHLD that the end of a recorded child raised (a value line
//!     `~g17@N`, N being the child's number, as in its parent's `Fork`) ran the handler
//!     before the actor's next event, which needs that child's last event (its exit, or where
//!     it was killed); when that event is a `Send` or `Close` and the signal came during it
//!     (`~g`), the event after it needs the child's end instead: the signal may have come as
//!     the call returned, raised by a child that read those bytes and exited (vsftpd's
//!     session parent sends its child one byte, the child exits on it).
//!   * **passed descriptors**: a `Recv` that took fds (`passed: [..]`, `SCM_RIGHTS`) binds
//!     each new number to what the sender had bound the number it passed to (the *k*-th send
//!     that passed fds on a channel direction pairs with the *k*-th receive that took fds).
//!
//!   * **datagrams** (UDP): a `RecvDatagram` needs the `SendDatagram` it is paired with (by
//!     the sender's port, the length and the sum of the bytes; `datagrams.rs`), and a ready
//!     set with `in` on a UDP socket needs the send of the datagram the actor received next on
//!     it (unless several actors received on that socket).
//!
//!   * **shared files**: the turns that writes, reads and locks took in a file the processes
//!     shared come after an event, not as one; what they need is kept apart
//!     ([`Deps::turn_needs`], `turns.rs`).
//!
//! Needs on one's own actor that the rules produce (a connection to oneself) are dropped.

mod build;
mod datagrams;
mod roles;
mod stream;
mod turns;

pub use datagrams::{Endpoint, datagram_senders, port as endpoint};

use crate::analysis::channels::{Channel, match_channels};
use crate::recording::Recording;
use ddbx_wire::history::{Origin, Record};
use ddbx_wire::manifest::Manifest;
use ddbx_wire::{ActorId, History};
use std::collections::{BTreeSet, HashMap};

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

/// What a `Send`/`Recv` covered: bytes `[start, end)` of one direction of a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataRange {
    /// The channel.
    pub channel: ChannelId,
    /// Which way the bytes went.
    pub direction: Direction,
    /// The offset of the first byte (a direction's bytes are numbered 0, 1, 2, … in sending
    /// order).
    pub start: u64,
    /// The offset just after the last byte (`start` for an empty send or an end of stream).
    pub end: u64,
}

/// The child a `Fork`/`Spawn` event creates, and how many of its events make up its creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Creation {
    /// The child actor.
    pub child: ActorId,
    /// Its `Start` and the `Exec`s that follow at once (see [`Deps::creation_events`]).
    pub events: u64,
}

impl Creation {
    /// The child's last event of its creation: where a replay has created it.
    pub fn last_event(&self) -> Event {
        (self.child, self.events)
    }
}

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
    /// The channels the needs were found with.
    channels: Vec<Channel>,
    /// What the shared-file turns after an event need (`turns.rs`).
    turn_needs: HashMap<Event, Vec<Event>>,
    /// The shared files a read saw only some writes of, with their horizon (`turns.rs`).
    ordered_files: Vec<(u32, u64)>,
    /// Each received datagram's send and the port it was sent to (`datagrams.rs`).
    datagrams: HashMap<Event, (Event, Option<Endpoint>)>,
}

impl Deps {
    /// The dependencies of a loaded recording, its channels matched here.
    pub fn from_recording(rec: &Recording) -> Deps {
        let channels = match_channels(&rec.histories);
        Deps::from_parts(&rec.manifest, &rec.histories, &channels)
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
        deps.add_reaps(manifest);
        deps
    }

    /// The dependencies of `histories` alone: origins from their `Start` records, channels
    /// matched here. Handy for hand-made histories.
    pub fn from_histories(histories: &[History]) -> Deps {
        let channels = match_channels(histories);
        Deps::build(&start_origins(histories), histories, &channels)
    }

    /// A SIGCHLD raised by a recorded child's end: the receiver's next event needs the child's
    /// last event.
    fn add_signal_needs(&mut self, histories: &[History], origins: &HashMap<ActorId, Origin>) {
        use ddbx_wire::history::value::Value;
        let by_number = turns::children_by_number(origins);
        for h in histories {
            for (gap, v) in &h.values {
                let Value::Signal {
                    ended: Some(number),
                    in_call,
                    ..
                } = v
                else {
                    continue;
                };
                let Some(&child) = by_number.get(&(h.actor, *number)) else {
                    continue;
                };
                // Taken in a send or close that went through: the signal may have come as the
                // call returned, raised by a child that read those bytes (or saw that end) and
                // exited. What it changed, the program sees from the event after.
                let at = match h.records.get(*gap as usize) {
                    Some(Record::Send { .. } | Record::Close { .. }) if *in_call => gap + 2,
                    _ => gap + 1,
                };
                let end = self.event_count(child);
                if end > 0 && at <= h.records.len() as u64 {
                    self.add_need((h.actor, at), (child, end));
                }
            }
        }
    }

    /// A wait that reaped a child: the parent's next event needs the child's last one.
    fn add_reaps(&mut self, manifest: &Manifest) {
        for a in &manifest.actors {
            for reap in &a.reaps {
                let end = self.event_count(reap.child);
                if end == 0 || reap.child == a.id {
                    continue;
                }
                if let Some(&i) = self.index.get(&a.id)
                    && let Some(needs) = self.needs[i].get_mut(reap.after as usize)
                    && !needs.contains(&(reap.child, end))
                {
                    needs.push((reap.child, end));
                }
            }
        }
    }

    /// The child that event `k` of `a` creates (a `Fork`/`Spawn` with a child in the
    /// recording), with the number of events that make up the child's creation: its `Start`,
    /// and the `Exec`s that come right after (a fork+exec: replay does not hold a process
    /// between them).
    pub fn creates(&self, a: ActorId, k: u64) -> Option<Creation> {
        let (&child, _) = self.forked_at.iter().find(|(_, e)| **e == (a, k))?;
        Some(Creation {
            child,
            events: self.creation_events(child),
        })
    }

    /// If event `k` of `a` is its `Exit`: the `Exit` events of its forked/spawned children that
    /// exited. A parent usually waits for its children before it exits (waitpid is not an
    /// event), so a halting replay treats a parent's exit as needing theirs.
    pub fn child_exits(&self, a: ActorId, k: u64) -> Vec<Event> {
        if self.kind(a, k) != Some("Exit") {
            return Vec::new();
        }
        let mut out: Vec<Event> = self
            .forked_at
            .iter()
            .filter(|(_, (parent, _))| *parent == a)
            .filter_map(|(child, _)| {
                let n = self.event_count(*child);
                (self.kind(*child, n) == Some("Exit")).then_some((*child, n))
            })
            .collect();
        out.sort();
        out
    }

    /// The number of events that make up `actor`'s creation: its `Start`, and the `Exec`s that
    /// follow at once (a fork+exec, and the execs a launcher chains: `env`, a shell wrapper,
    /// pyenv's shims): replay holds a process at none of them, only before the next event.
    pub fn creation_events(&self, actor: ActorId) -> u64 {
        let mut k = 1;
        while self.kind(actor, k + 1) == Some("Exec") {
            k += 1;
        }
        k.min(self.event_count(actor))
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

    /// For each received datagram (`RecvDatagram`) paired with a send: that `SendDatagram`
    /// and the port it was sent to (the receiving socket's).
    pub fn datagram_pairs(&self) -> &HashMap<Event, (Event, Option<Endpoint>)> {
        &self.datagrams
    }

    /// The cross-actor events that event `event` of `actor` needs, sorted (program order is
    /// implicit). Empty for an event that does not exist.
    pub fn needs(&self, actor: ActorId, event: u64) -> &[Event] {
        self.index
            .get(&actor)
            .and_then(|&i| self.needs[i].get((event as usize).checked_sub(1)?))
            .map_or(&[], Vec::as_slice)
    }

    /// The channel, direction and byte range that event `event` of `actor` sent or received,
    /// when it is a `Send`/`Recv` on a fd bound to a channel end.
    pub fn data_range(&self, actor: ActorId, event: u64) -> Option<DataRange> {
        self.data.get(&(actor, event)).copied()
    }

    /// The channels between the recording's actors that the needs were found with (as
    /// [`match_channels`] made them), by id.
    pub fn channels(&self) -> &[Channel] {
        &self.channels
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

/// Actors as `p1, p3`, for diagnostics.
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
    use crate::analysis::testing::{START, hist};

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
    fn a_peek_needs_the_sends_of_what_it_saw_and_consumes_nothing() {
        // p1 makes a socketpair and forks p2, which sends 5 bytes twice on its end; p1 peeks
        // and reads each 5 bytes in turn, then peeks at the end of the stream.
        let child = "Start(pid: 2, ppid: 1, origin: Fork(parent: \"p1\", index: 1), argv: [\"a\"], host: \"h\")\n";
        let d = Deps::from_histories(&[
            hist(
                1,
                &format!(
                    "{START}Pair(fd: 3, peer_fd: 4)\nFork(index: 1)\nClose(fd: 4)\n\
                     Peek(fd: 3, n: 5)\nRecv(fd: 3, n: 5)\nPeek(fd: 3, n: 5)\nRecv(fd: 3, n: 5)\n\
                     Peek(fd: 3, n: 0)\n"
                ),
            ),
            hist(
                2,
                &format!(
                    "{child}Close(fd: 3)\nSend(fd: 4, n: 5)\nSend(fd: 4, n: 5)\nExit(status: 0)\n"
                ),
            ),
        ]);
        let p2 = ActorId(2);
        assert_eq!(d.needs(ActorId(1), 5), [(p2, 3)]);
        assert_eq!(d.needs(ActorId(1), 6), [(p2, 3)]);
        assert_eq!(d.needs(ActorId(1), 7), [(p2, 4)]);
        assert_eq!(d.needs(ActorId(1), 8), [(p2, 4)]);
        // The end of the stream: the last send, and the sender letting go (its exit).
        assert_eq!(d.needs(ActorId(1), 9), [(p2, 4), (p2, 5)]);
        assert_eq!(d.data_range(ActorId(1), 5), None, "a peek covers no bytes");
        let second = d.data_range(ActorId(1), 8).unwrap();
        assert_eq!((second.start, second.end), (5, 10));
        assert!(d.diagnostics().is_empty(), "{:?}", d.diagnostics());
    }

    /// p1 makes a socketpair, forks p2 and sends it a byte; p2 reads it and exits; the
    /// SIGCHLD came during p1's send (`~g17@1`, noted before its line): the event after the
    /// send needs p2's end, not the send (which p2's end needs: a cycle).
    #[test]
    fn a_sigchld_taken_in_a_send_is_needed_after_it() {
        let child = "Start(pid: 2, ppid: 1, origin: Fork(parent: \"p1\", index: 1), argv: [\"a\"], host: \"h\")\n";
        let d = Deps::from_histories(&[
            hist(
                1,
                &format!(
                    "{START}Pair(fd: 3, peer_fd: 4)\nFork(index: 1)\nClose(fd: 4)\n~g17@1\n\
                     Send(fd: 3, n: 1)\nClose(fd: 3)\n"
                ),
            ),
            hist(
                2,
                &format!("{child}Close(fd: 3)\nRecv(fd: 4, n: 1)\nExit(status: 0)\n"),
            ),
        ]);
        let (p1, p2) = (ActorId(1), ActorId(2));
        assert_eq!(d.needs(p2, 3), [(p1, 5)]);
        assert!(d.needs(p1, 5).is_empty(), "{:?}", d.needs(p1, 5));
        assert!(d.needs(p1, 6).contains(&(p2, 4)), "{:?}", d.needs(p1, 6));
    }

    /// p1 accepts a connection from p3 and passes it to p2 over their socketpair
    /// (`SCM_RIGHTS`); p2's reads of the new number need p3's sends.
    #[test]
    fn a_passed_connection_binds_the_number_it_got() {
        let forked = |pid: u32, index: u32| {
            format!(
                "Start(pid: {pid}, ppid: 1, origin: Fork(parent: \"p1\", index: {index}), argv: [\"a\"], host: \"h\")\n"
            )
        };
        let d = Deps::from_histories(&[
            hist(
                1,
                &format!(
                    "{START}Pair(fd: 4, peer_fd: 5)\nFork(index: 1)\nClose(fd: 5)\nFork(index: 2)\n\
                     Accept(fd: 3, new_fd: 5, local: \"127.0.0.1:80\", remote: \"127.0.0.1:5000\", peer_pid: None)\n\
                     Send(fd: 4, n: 1, passed: [5])\nClose(fd: 5)\nExit(status: 0)\n"
                ),
            ),
            hist(
                2,
                &format!(
                    "{}Close(fd: 4)\nRecv(fd: 5, n: 1, passed: [6])\nRecv(fd: 6, n: 3)\nRecv(fd: 6, n: 2)\nExit(status: 0)\n",
                    forked(2, 1)
                ),
            ),
            hist(
                3,
                &format!(
                    "{}Close(fd: 4)\nConnect(fd: 6, err: None, local: \"127.0.0.1:5000\", remote: \"127.0.0.1:80\")\n\
                     Send(fd: 6, n: 3)\nSend(fd: 6, n: 2)\nExit(status: 0)\n",
                    forked(3, 2)
                ),
            ),
        ]);
        let (p1, p2, p3) = (ActorId(1), ActorId(2), ActorId(3));
        assert_eq!(d.needs(p2, 3), [(p1, 7)]);
        assert_eq!(d.needs(p2, 4), [(p3, 4)]);
        assert_eq!(d.needs(p2, 5), [(p3, 5)]);
        assert!(d.diagnostics().is_empty(), "{:?}", d.diagnostics());
    }

    /// Workers p2 and p3 share p1's listening socket. p2's ready set reports it readable and
    /// its accept then takes p5's connection: the readiness may have been p4's connection,
    /// which p3 took, so it needs no connect (needing p5's made a cycle in a pre-fork nginx
    /// whose p5 came later than what p2 sent). A listener of one actor keeps the need.
    #[test]
    fn a_ready_listener_shared_by_workers_needs_no_connect() {
        let worker = |pid: u32, index: u32, remote: u32| {
            format!(
                "Start(pid: {pid}, ppid: 1, origin: Fork(parent: \"p1\", index: {index}), argv: [\"a\"], host: \"h\")\n\
                 Ready(call: Poll, fds: [(fd: 3, ev: \"in\")])\n\
                 Accept(fd: 3, new_fd: 5, local: \"127.0.0.1:80\", remote: \"127.0.0.1:{remote}\", peer_pid: None)\n\
                 Exit(status: 0)\n"
            )
        };
        let client = |port: u32| {
            format!(
                "{START}Connect(fd: 6, err: None, local: \"127.0.0.1:{port}\", remote: \"127.0.0.1:80\")\n\
                 Exit(status: 0)\n"
            )
        };
        let parent = format!("{START}Fork(index: 1)\nFork(index: 2)\nExit(status: 0)\n");
        let shared = Deps::from_histories(&[
            hist(1, &parent),
            hist(2, &worker(2, 1, 5001)),
            hist(3, &worker(3, 2, 5000)),
            hist(4, &client(5000)),
            hist(5, &client(5001)),
        ]);
        assert!(
            shared.needs(ActorId(2), 2).is_empty(),
            "{:?}",
            shared.needs(ActorId(2), 2)
        );
        assert!(shared.needs(ActorId(3), 2).is_empty());
        assert_eq!(
            shared.needs(ActorId(2), 3),
            [(ActorId(5), 2)],
            "the accept keeps its connect"
        );

        let alone = Deps::from_histories(&[
            hist(1, &parent),
            hist(2, &worker(2, 1, 5001)),
            hist(5, &client(5001)),
        ]);
        assert_eq!(alone.needs(ActorId(2), 2), [(ActorId(5), 1)]);
    }

    #[test]
    fn a_send_on_an_unbound_fd_is_skipped() {
        let d = Deps::from_histories(&[hist(1, &format!("{START}Send(fd: 1, n: 5)\n"))]);
        assert_eq!(d.data_range(ActorId(1), 2), None);
    }
}
