//! Pass 1, from the recorded execution with vector clocks: the receives-from-any of every
//! actor with their outcome and watched sets, every message's votes for the receives it could
//! have been delivered to, and each actor's cutoff (see the module docs of [`super`]).

use super::{Cutoff, Passes, Receive};
use crate::analysis::deps::Endpoint;
use crate::analysis::deps::{ChannelId, Direction, Event};
use crate::analysis::races::model::{End, FdUses, accept_fds, bind, reported_fds};
use crate::analysis::races::{Message, MessageKind, RaceKind};
use ddbx_wire::ActorId;
use ddbx_wire::history::{ReadyFd, Record};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A message's vote for a receive: pass 1 found it could have been that receive's outcome.
struct Vote {
    /// The receive, by position in the list of receives.
    receive: usize,
    /// The message's `Send` or `Connect`.
    event: Event,
    kind: MessageKind,
    /// Its channel (`channel 3`) or listening address (`listening 127.0.0.1:4000`).
    channel: String,
}

impl Passes<'_, '_> {
    /// The receives-from-any of every actor with their outcome and watched sets (the model's
    /// definitions, [`crate::analysis::races`]), by event.
    // The exact method walks the same receives its own way, to check this one.
    pub(super) fn receives(&self) -> Vec<Receive> {
        let mut at_fork: HashMap<(ActorId, u32), BTreeMap<i32, End>> = HashMap::new();
        let mut out = Vec::new();
        for a in self.model.parents_first() {
            let records = self.model.histories[&a];
            let mut fds = self.model.inherited(a, &mut at_fork);
            let roles = FdUses::of(records);
            let accept_fds = accept_fds(records);
            for (i, r) in records.iter().enumerate() {
                let here = (a, i as u64 + 1);
                match r {
                    Record::Connect { fd, .. } => bind(&mut fds, *fd, self.model.ends.get(&here)),
                    Record::Fork { index } | Record::Spawn { index } => {
                        at_fork.insert((a, *index), fds.clone());
                    }
                    Record::Accept { new_fd, local, .. } => {
                        out.push(Receive {
                            at: here,
                            kind: RaceKind::Accept,
                            got: vec![self.model.accepted(here)],
                            quiet: BTreeSet::new(),
                            listening: [local.clone()].into(),
                            port: None,
                            votes: BTreeMap::new(),
                        });
                        bind(&mut fds, *new_fd, self.model.ends.get(&here));
                    }
                    Record::Ready { fds: ready, .. } => {
                        out.push(self.ready(here, ready, &fds, &roles, &accept_fds));
                    }
                    Record::RecvDatagram { .. } => {
                        let (got, port) = self.model.datagram_received(here);
                        out.push(Receive {
                            at: here,
                            kind: RaceKind::Datagram,
                            got: vec![got],
                            quiet: BTreeSet::new(),
                            listening: BTreeSet::new(),
                            port,
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

    /// The `Ready` event `here` as a receive-from-any: what it reported, the channels it
    /// watched without reporting them, and the addresses it listened on.
    fn ready(
        &self,
        here: Event,
        ready: &[ReadyFd],
        fds: &BTreeMap<i32, End>,
        roles: &FdUses<'_>,
        accept_fds: &BTreeSet<i32>,
    ) -> Receive {
        let (a, k) = here;
        let reported = reported_fds(ready);
        let mut got: Vec<Message> = Vec::new();
        let mut loud: BTreeSet<(ChannelId, Direction)> = BTreeSet::new();
        let mut listening: BTreeSet<String> = BTreeSet::new();
        for &fd in &reported {
            if let Some(addr) = roles.listening(fd, k) {
                listening.insert(addr.to_string());
                if let Some(c) = self.model.next_accepted(a, k, fd) {
                    got.push(self.model.connect_message(c));
                }
            } else if let Some(end) = fds.get(&fd) {
                let flow = end.flow();
                loud.insert(flow);
                if let Some(m) = self.send_holding(flow, self.consumed(flow, here)) {
                    got.push(m);
                }
            }
        }
        let quiet: BTreeSet<(ChannelId, Direction)> = fds
            .iter()
            .filter(|(fd, end)| {
                !reported.contains(fd)
                    && roles.listening(**fd, k).is_none()
                    && self
                        .model
                        .receives_on
                        .contains(&(a, end.channel, end.incoming))
                    && !loud.contains(&end.flow())
            })
            .map(|(_, end)| end.flow())
            .collect();
        for &fd in accept_fds {
            if let Some(addr) = roles.listening(fd, k) {
                listening.insert(addr.to_string());
            }
        }
        Receive {
            at: here,
            kind: RaceKind::Ready,
            got,
            quiet,
            listening,
            port: None,
            votes: BTreeMap::new(),
        }
    }

    /// Pass 1: every message votes for the receives it could have been delivered to.
    pub(super) fn pass1(&self, receives: &mut [Receive]) {
        let mut votes = self.send_votes(receives);
        votes.extend(self.connect_votes(receives));
        votes.extend(self.datagram_votes(receives));
        for v in votes {
            receives[v.receive]
                .votes
                .entry((v.kind, v.event))
                .or_insert(v.channel);
        }
    }

    /// The votes of sends. The receives of p where a send was the head of its channel form a
    /// run of p's receives (what happened before a receive grows along program order); those
    /// not before its issue are a suffix of that run.
    fn send_votes(&self, receives: &[Receive]) -> Vec<Vote> {
        // Per watched direction and actor: that actor's receives watching it quietly, in order.
        let mut watching: BTreeMap<(ChannelId, Direction), BTreeMap<ActorId, Vec<usize>>> =
            BTreeMap::new();
        for (i, r) in receives.iter().enumerate() {
            for flow in &r.quiet {
                watching
                    .entry(*flow)
                    .or_default()
                    .entry(r.at.0)
                    .or_default()
                    .push(i);
            }
        }
        let mut votes = Vec::new();
        for (flow, by_actor) in &watching {
            let Some(f) = self.model.flows.get(flow) else {
                continue;
            };
            for (&p, idx) in by_actor {
                let consumed: Vec<u64> = idx
                    .iter()
                    .map(|&i| self.consumed(*flow, receives[i].at))
                    .collect();
                for s in &f.sends {
                    let m = self.model.send_message(*flow, *s);
                    if m.received_by.is_some_and(|x| x.0 != p) {
                        continue;
                    }
                    let from = consumed.partition_point(|c| *c < s.start);
                    let to = consumed.partition_point(|c| *c < s.end);
                    let run = &idx[from..to];
                    let first = run.partition_point(|&i| self.hb(receives[i].at, s.event));
                    votes.extend(run[first..].iter().map(|&i| Vote {
                        receive: i,
                        event: s.event,
                        kind: MessageKind::Send,
                        channel: format!("channel {}", flow.0),
                    }));
                }
            }
        }
        votes
    }

    /// The votes of connects: for every receive watching the address they connected to.
    fn connect_votes(&self, receives: &[Receive]) -> Vec<Vote> {
        let mut listening: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, r) in receives.iter().enumerate() {
            for addr in &r.listening {
                listening.entry(addr.as_str()).or_default().push(i);
            }
        }
        let mut votes = Vec::new();
        for (addr, cs) in &self.model.connects {
            for &i in listening.get(addr).into_iter().flatten() {
                for &c in cs {
                    if !receives[i].got_event(c) && self.pending_at(c, receives[i].at) {
                        votes.push(Vote {
                            receive: i,
                            event: c,
                            kind: MessageKind::Connect,
                            channel: format!("listening {addr}"),
                        });
                    }
                }
            }
        }
        votes
    }
}

impl Passes<'_, '_> {
    /// The votes of datagrams: each send, for every datagram receive on the socket it was sent
    /// to that it could have reached (its own receive, if any, comes later in that actor, and
    /// it was not sent after the receive).
    fn datagram_votes(&self, receives: &[Receive]) -> Vec<Vote> {
        let mut on_port: BTreeMap<Endpoint, Vec<usize>> = BTreeMap::new();
        for (i, r) in receives.iter().enumerate() {
            if let Some(p) = r.port.as_ref().filter(|_| r.kind == RaceKind::Datagram) {
                on_port.entry(p.clone()).or_default().push(i);
            }
        }
        let mut votes = Vec::new();
        for (port, sends) in &self.model.datagrams_to {
            for &s in sends {
                let m = self.model.datagram_message(s);
                for &i in on_port.get(port).into_iter().flatten() {
                    let r = &receives[i];
                    let later = m.received_by.is_none_or(|x| x.0 == r.at.0 && x.1 > r.at.1);
                    if !r.got_event(s) && later && !self.hb(r.at, s) {
                        votes.push(Vote {
                            receive: i,
                            event: s,
                            kind: MessageKind::Datagram,
                            channel: format!("datagrams to {port}"),
                        });
                    }
                }
            }
        }
        votes
    }
}

/// Each actor's smallest race receive and its first channel.
pub(super) fn cutoffs(receives: &[Receive]) -> Vec<Cutoff> {
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
