//! The exact method's search: every receive-from-any of every actor, what it got, and what it
//! could have got instead — the head of each other channel it watched, and each connect still
//! pending on an address it listened on — decided with vector clocks at the receive.
//!
//! The two-pass method ([`crate::analysis::twopass`]) finds the same races the other way
//! round, from the messages; the walks are kept apart on purpose, so that each checks the
//! other.

use super::model::{End, FdUses, FlowId, RaceModel, accept_fds, bind, reported_fds};
use super::{Message, RaceKind};
use crate::analysis::clock::{Clocks, VectorClock};
use crate::analysis::deps::{ChannelId, Direction, Event};
use ddbx_wire::ActorId;
use ddbx_wire::history::{ReadyFd, Record};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A receive-from-any that raced, before races are numbered and related.
pub(super) struct Found {
    pub(super) receive: Event,
    pub(super) kind: RaceKind,
    pub(super) got: Vec<Message>,
    pub(super) could: Vec<Message>,
}

/// Every receive-from-any of the recording whose outcome could have been another message, in
/// no particular order.
pub(super) fn receives_that_race(model: &RaceModel<'_>, clocks: &Clocks) -> Vec<Found> {
    receives_from_any(model, clocks, false)
}

/// Every receive-from-any, with what it got; with `all`, also those that could have got
/// nothing else.
pub(super) fn receives_from_any(model: &RaceModel<'_>, clocks: &Clocks, all: bool) -> Vec<Found> {
    let search = Search { model, clocks, all };
    let mut at_fork: HashMap<(ActorId, u32), BTreeMap<i32, End>> = HashMap::new();
    let mut found = Vec::new();
    for a in model.parents_first() {
        search.actor(a, &mut at_fork, &mut found);
    }
    found
}

struct Search<'m, 'a> {
    model: &'m RaceModel<'a>,
    clocks: &'m Clocks,
    /// Keep every receive-from-any, not only those that race.
    all: bool,
}

impl Search<'_, '_> {
    fn hb(&self, a: Event, b: Event) -> bool {
        self.clocks.happened_before(a, b)
    }

    /// Walks actor `a`'s fd bindings and examines its `Ready` and `Accept` records.
    fn actor(
        &self,
        a: ActorId,
        at_fork: &mut HashMap<(ActorId, u32), BTreeMap<i32, End>>,
        found: &mut Vec<Found>,
    ) {
        let records = self.model.histories[&a];
        let mut fds = self.model.inherited(a, at_fork);
        let uses = FdUses::of(records);
        let listeners = accept_fds(records);
        for (i, r) in records.iter().enumerate() {
            let here = (a, i as u64 + 1);
            match r {
                Record::Connect { fd, .. } => bind(&mut fds, *fd, self.model.ends.get(&here)),
                Record::Accept { new_fd, local, .. } => {
                    let got = self.model.accepted(here);
                    let could: Vec<Message> = self
                        .pending_connects(local, here)
                        .into_iter()
                        .filter(|m| m.event != got.event)
                        .collect();
                    if !could.is_empty() || self.all {
                        found.push(Found {
                            receive: here,
                            kind: RaceKind::Accept,
                            got: vec![got],
                            could,
                        });
                    }
                    bind(&mut fds, *new_fd, self.model.ends.get(&here));
                }
                Record::Fork { index } | Record::Spawn { index } => {
                    at_fork.insert((a, *index), fds.clone());
                }
                Record::Ready { fds: ready, .. } => {
                    found.extend(self.ready(here, ready, &fds, &uses, &listeners));
                }
                Record::RecvDatagram { .. } => found.extend(self.datagram(here)),
                _ => {}
            }
        }
    }

    /// The `Ready` event `here`, reporting `ready`, with the actor's fd bindings `fds` at that
    /// point, its fd uses and its listening fds: a race when it got or could have got two
    /// messages or more.
    fn ready(
        &self,
        here: Event,
        ready: &[ReadyFd],
        fds: &BTreeMap<i32, End>,
        uses: &FdUses<'_>,
        listeners: &BTreeSet<i32>,
    ) -> Option<Found> {
        let (a, k) = here;
        let vc = self.clocks.clock(a, k).unwrap_or_default();
        let mut got: Vec<Message> = Vec::new();
        let mut could: Vec<Message> = Vec::new();
        let mut seen_ends: BTreeSet<(ChannelId, Direction)> = BTreeSet::new();
        let mut seen_listeners: BTreeSet<String> = BTreeSet::new();
        let reported = reported_fds(ready);
        // Reported fds: the outcome.
        for &fd in &reported {
            match uses.listening(fd, k) {
                Some(addr) => {
                    seen_listeners.insert(addr.to_string());
                    if let Some(c) = self.model.next_accepted(a, k, fd) {
                        got.push(self.model.connect_message(c));
                    }
                }
                None => {
                    if let Some(end) = fds.get(&fd) {
                        seen_ends.insert(end.flow());
                        if let Some(m) = self.head_at(end.flow(), here, &vc) {
                            got.push(m);
                        }
                    }
                }
            }
        }
        // Other watched channels: their FIFO heads.
        for (&fd, end) in fds {
            if reported.contains(&fd)
                || uses.listening(fd, k).is_some()
                || !self
                    .model
                    .receives_on
                    .contains(&(a, end.channel, end.incoming))
                || !seen_ends.insert(end.flow())
            {
                continue;
            }
            if let Some(m) = self.head_at(end.flow(), here, &vc)
                && !m.issued_at().is_some_and(|s| self.hb(here, s))
                && m.received_by.is_none_or(|rcv| rcv.0 == a)
                && !got.contains(&m)
            {
                could.push(m);
            }
        }
        // Other watched listening sockets: their pending connects.
        for &fd in listeners {
            let Some(addr) = uses.listening(fd, k) else {
                continue;
            };
            if !reported.contains(&fd) && !seen_listeners.insert(addr.to_string()) {
                continue;
            }
            for m in self.pending_connects(addr, here) {
                if !got.contains(&m) && !could.contains(&m) {
                    could.push(m);
                }
            }
        }
        (got.len() + could.len() >= 2 || self.all).then_some(Found {
            receive: here,
            kind: RaceKind::Ready,
            got,
            could,
        })
    }

    /// The `RecvDatagram` event `here`: a race when another datagram sent to its socket could
    /// have been its outcome (not sent after it, not received before it or by another actor).
    fn datagram(&self, here: Event) -> Option<Found> {
        let (got, port) = self.model.datagram_received(here);
        let could: Vec<Message> = self
            .model
            .datagrams_to
            .get(&port?)
            .into_iter()
            .flatten()
            .filter(|s| got.event != Some(**s) && !self.hb(here, **s))
            .map(|s| self.model.datagram_message(*s))
            .filter(|m| m.received_by.is_none_or(|x| x.0 == here.0 && x.1 > here.1))
            .collect();
        (!could.is_empty() || self.all).then_some(Found {
            receive: here,
            kind: RaceKind::Datagram,
            got: vec![got],
            could,
        })
    }

    /// The FIFO head of a direction at receive `r`: the send holding the first byte not
    /// consumed by a receive that happened before `r`. `vc` is the clock of `r`: a receive x
    /// happened before r iff VC(r)[actor(x)] >= event(x).
    fn head_at(&self, flow_id: FlowId, r: Event, vc: &VectorClock) -> Option<Message> {
        let flow = self.model.flows.get(&flow_id)?;
        let before = |x: &super::model::Transfer| {
            x.event != r && vc.get(&x.event.0).is_some_and(|k| *k >= x.event.1)
        };
        let offset = match flow.receiver {
            // One receiving actor: its receives in byte order are in event order, so those
            // that happened before r are a prefix.
            Some(_) => {
                let n = flow.recvs.partition_point(before);
                n.checked_sub(1).map_or(0, |i| flow.recvs[i].end)
            }
            None => flow
                .recvs
                .iter()
                .filter(|x| before(x))
                .map(|x| x.end)
                .max()
                .unwrap_or(0),
        };
        flow.send_at(offset)
            .map(|s| self.model.send_message(flow_id, s))
    }

    /// Connects to `addr` still pending at `r` and not issued after it.
    // The two-pass method's `pending_at` decides the same on its own, to check this one.
    fn pending_connects(&self, addr: &str, r: Event) -> Vec<Message> {
        self.model
            .connects
            .get(addr)
            .into_iter()
            .flatten()
            .map(|c| self.model.connect_message(*c))
            .filter(|m| {
                let accepted_before = m
                    .received_by
                    .is_some_and(|acc| acc == r || self.hb(acc, r) && !self.hb(r, acc));
                let issued_after = m.issued_at().is_some_and(|i| self.hb(r, i));
                !accepted_before && !issued_after
            })
            .collect()
    }
}
