//! Locally-first and unaffected message races by Park & Jun's two-pass method, kept apart from
//! the exact analysis of [`super::races`] so that the two can check each other.
//!
//! Both methods share the recording's happened-before ([`Deps`], [`Clocks`]) and the
//! *definitions* of the race model (what a receive-from-any watches, what its outcome was,
//! when a message could have been its outcome — written down in [`super::races`]'s module
//! docs, and read off the recording by `races::model`). They share no code that finds
//! races or the affects relation, and they go about it in different directions:
//!
//! * the exact method walks the receives: for each receive-from-any it looks at the head of
//!   every channel it watched, then relates every pair of races through vector clocks;
//! * this method walks the **messages**.
//!
//! # Pass 1 (from the recorded execution, with vector clocks)
//!
//! For every message `m` (a `Send`'s bytes, a successful `Connect`, or a `SendDatagram`,
//! which votes for every datagram receive on the socket it was sent to whose actor had not
//! received it yet and which it was not sent after) and every actor `p`
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
//!
//! `pass1` finds the receives-from-any and their votes, `pass2` the Affecter sets.

mod pass1;
mod pass2;

use crate::analysis::clock::Clocks;
use crate::analysis::deps::Endpoint;
use crate::analysis::deps::{ChannelId, DataRange, Deps, Direction, Event};
use crate::analysis::races::model::{FlowId, RaceModel};
use crate::analysis::races::{Component, Message, MessageKind, RaceKind, stop_before};
use crate::recording::Recording;
use ddbx_wire::ActorId;
use ddbx_wire::history::Record;
use std::collections::{BTreeMap, BTreeSet};

/// Pass 1's result for one actor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cutoff {
    /// The actor.
    pub actor: ActorId,
    /// Its locally-first race receive's event number.
    pub event: u64,
    /// The channel (`channel 3`), listening address (`listening 127.0.0.1:4000`) or UDP port
    /// (`datagrams to port 53`) of the message that first showed the receive to be a race.
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

// The questions `races::Race` answers, on this method's own type: the two methods share no
// race type, so that each can change without the other.
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
        stop_before(self.receive)
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

/// A receive-from-any of the model, with the votes pass 1 gives it.
struct Receive {
    at: Event,
    kind: RaceKind,
    got: Vec<Message>,
    /// Watched channel directions that it did not report (each receives on by its actor).
    quiet: BTreeSet<(ChannelId, Direction)>,
    /// Watched listening addresses.
    listening: BTreeSet<String>,
    /// A datagram receive's socket, by its port.
    port: Option<Endpoint>,
    /// Pass 1's votes: messages that could have been its outcome, with their channel.
    votes: BTreeMap<(MessageKind, Event), String>,
}

impl Receive {
    fn got_event(&self, e: Event) -> bool {
        self.got.iter().any(|g| g.event == Some(e))
    }

    fn is_race(&self) -> bool {
        match self.kind {
            RaceKind::Accept | RaceKind::Datagram => !self.votes.is_empty(),
            RaceKind::Ready => self.got.len() + self.votes.len() >= 2,
        }
    }
}

/// Runs both passes on a recording. `deps` and `clocks` must be those of `rec`.
pub fn two_pass(rec: &Recording, deps: &Deps, clocks: &Clocks) -> TwoPass {
    let model = RaceModel::of(rec, deps);
    let passes = Passes {
        model: &model,
        deps,
        clocks,
    };
    let mut receives = passes.receives();
    passes.pass1(&mut receives);
    let cutoffs = pass1::cutoffs(&receives);
    passes.pass2(&receives, &cutoffs)
}

/// What both passes read: the recording's race model and its happened-before.
struct Passes<'m, 'a> {
    model: &'m RaceModel<'a>,
    deps: &'m Deps,
    clocks: &'m Clocks,
}

impl<'a> Passes<'_, 'a> {
    fn hb(&self, a: Event, b: Event) -> bool {
        self.clocks.happened_before(a, b)
    }

    /// How many bytes of a direction were consumed by receives that happened before `r`.
    fn consumed(&self, flow: FlowId, r: Event) -> u64 {
        self.model.flows.get(&flow).map_or(0, |f| {
            f.recvs
                .iter()
                .filter(|x| x.event != r && self.hb(x.event, r))
                .map(|x| x.end)
                .max()
                .unwrap_or(0)
        })
    }

    /// The send holding byte `offset` of a direction.
    fn send_holding(&self, flow: FlowId, offset: u64) -> Option<Message> {
        let s = self.model.flows.get(&flow)?.send_at(offset)?;
        Some(self.model.send_message(flow, s))
    }

    /// Whether connect `c` was still pending at receive `r` and not issued after it.
    // The exact method's `pending_connects` decides the same on its own, to check this one.
    fn pending_at(&self, c: Event, r: Event) -> bool {
        let m = self.model.connect_message(c);
        let taken_before = m
            .received_by
            .is_some_and(|acc| acc == r || (self.hb(acc, r) && !self.hb(r, acc)));
        let issued_after = m.issued_at().is_some_and(|i| self.hb(r, i));
        !taken_before && !issued_after
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
                let Some(DataRange {
                    channel,
                    direction,
                    start,
                    end,
                }) = m.bytes
                else {
                    return false;
                };
                let offset = self.consumed((channel, direction), r.at);
                r.quiet.contains(&(channel, direction))
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
            MessageKind::Datagram => {
                r.port
                    .as_ref()
                    .is_some_and(|p| self.datagram_to(e).as_ref() == Some(p))
                    && !self.hb(r.at, e)
                    && m.received_by.is_none_or(|x| x.0 == r.at.0 && x.1 > r.at.1)
            }
            MessageKind::External => false,
        }
    }

    /// The port datagram send `s` went to.
    fn datagram_to(&self, s: Event) -> Option<Endpoint> {
        match self.model.histories.get(&s.0)?.get(s.1 as usize - 1)? {
            Record::SendDatagram { to, .. } => crate::analysis::deps::endpoint(to),
            _ => None,
        }
    }

    /// The address connect `c` connected to.
    fn connect_address(&self, c: Event) -> Option<&'a str> {
        match self.model.histories.get(&c.0)?.get(c.1 as usize - 1)? {
            Record::Connect { remote, .. } => Some(remote.as_str()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::races::find_races;
    use crate::analysis::testing::p;
    use ddbx_wire::History;
    use std::path::Path;

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

    #[test]
    fn two_datagrams_to_one_socket_race_at_the_first_receive_only() {
        // p2 and p3 each send a datagram to p1's port 53; p1 receives p3's, then p2's, and
        // answers p2. The first receive could have got p2's datagram; the second could not
        // have got p3's, received before it.
        let send = |me: u16, sum: u64| {
            format!(
                "SendDatagram(fd: 3, n: 2, to: \"127.0.0.1:53\", local: \"127.0.0.1:{me}\", sum: {sum})"
            )
        };
        let recv = |from: u16, data: &str| {
            format!("RecvDatagram(fd: 3, n: 2, from: \"127.0.0.1:{from}\", data: \"{data}\")")
        };
        // "YzI=" and "YzM=" are the bytes "c2" and "c3".
        let (c2, c3) = (
            ddbx_wire::history::datagram_sum(b"c2"),
            ddbx_wire::history::datagram_sum(b"c3"),
        );
        let p1 = hist(
            1,
            &format!(
                "{}\n{}\n{}",
                recv(5003, "YzM="),
                recv(5002, "YzI="),
                send(53, 7)
            ),
        );
        let p2 = hist(2, &send(5002, c2));
        let p3 = hist(3, &send(5003, c3));
        let rec = recording(vec![p1, p2, p3]);
        let deps = Deps::from_recording(&rec);
        assert_eq!(deps.needs(p(1), 2), [(p(3), 2)]);
        assert_eq!(deps.needs(p(1), 3), [(p(2), 2)]);
        let clocks = Clocks::compute(&deps).unwrap();
        let exact = find_races(&rec, &deps, &clocks);
        let races: Vec<(Event, Option<Event>, Vec<Option<Event>>)> = exact
            .races
            .iter()
            .map(|r| {
                (
                    r.receive,
                    r.got[0].event,
                    r.could.iter().map(|m| m.event).collect(),
                )
            })
            .collect();
        assert_eq!(
            races,
            vec![((p(1), 2), Some((p(3), 2)), vec![Some((p(2), 2))])]
        );
        assert_eq!(exact.races[0].kind, RaceKind::Datagram);
        let tp = two_pass(&rec, &deps, &clocks);
        assert_eq!(tp.races.len(), 1);
        assert_eq!(tp.races[0].receive, (p(1), 2));
        assert_eq!(tp.races[0].could, exact.races[0].could);
        assert_eq!(tp.cutoffs[0].first_channel, "datagrams to port 53");
        assert!(tp.races[0].unaffected() && exact.races[0].unaffected());
    }
}
