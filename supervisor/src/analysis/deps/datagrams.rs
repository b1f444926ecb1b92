//! Datagrams: a `RecvDatagram` needs the `SendDatagram` that sent it, and a ready set that
//! reported a UDP socket readable needs the send of the datagram the actor received next on it.
//!
//! A UDP socket has no connection to pair, so each received datagram is paired with a send
//! by what both sides saw: the sender's port is the port of the receive's `from`, the lengths
//! are equal, and the sums of the bytes are ([`datagram_sum`]; not checked when the receive
//! kept fewer bytes than the datagram had, `MSG_TRUNC`). Of the sends that fit, the first one
//! not yet paired is taken, in (actor, event) order: the datagrams one socket sends to one
//! receiver arrive in the order they were sent, and one lost (a full receive buffer) leaves its
//! send unpaired. A datagram from outside the session has no send and needs nothing.
//!
//! A ready set needs nothing for a socket several actors received datagrams on (forked
//! workers sharing one socket): the datagram that made it readable may be one another took.

use super::{Deps, Event};
use ddbx_wire::history::{Call, Record, datagram_sum};
use ddbx_wire::{ActorId, Events, History};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// What names a datagram socket's end in an address as histories write it: the port of
/// `127.0.0.1:53` or `[::1]:53`, the path of `unix:/run/log` (or `unix:@name`). `None` for an
/// unnamed Unix socket (`unix:`: a socketpair's end, a client that did not bind), whose
/// datagrams cannot be told apart by their sender.
pub fn port(addr: &str) -> Option<Endpoint> {
    if let Some(path) = addr.strip_prefix("unix:") {
        return (!path.is_empty()).then(|| Endpoint::Path(path.to_string()));
    }
    addr.rsplit_once(':')?.1.parse().ok().map(Endpoint::Port)
}

/// A datagram socket's end: a UDP port or a Unix socket's path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    /// A UDP port.
    Port(u16),
    /// A Unix datagram socket's path (`@name` in the abstract namespace).
    Path(String),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Port(p) => write!(f, "port {p}"),
            Endpoint::Path(path) => write!(f, "{path}"),
        }
    }
}

/// One send that a receive may pair with.
struct Sent {
    event: Event,
    sum: u64,
    /// The port (or path) it was sent to.
    to: Option<Endpoint>,
    paired: bool,
}

/// Each received datagram's send (receive → (send, the port it was sent to)).
fn pair(by_actor: &BTreeMap<ActorId, &History>) -> HashMap<Event, (Event, Option<Endpoint>)> {
    let mut sends: HashMap<(Endpoint, u64), Vec<Sent>> = HashMap::new();
    for (&a, h) in by_actor {
        for (i, r) in h.records.iter().enumerate() {
            if let Record::SendDatagram {
                n, to, local, sum, ..
            } = r
                && let Some(from) = port(local)
            {
                sends.entry((from, *n)).or_default().push(Sent {
                    event: (a, i as u64 + 1),
                    sum: *sum,
                    to: port(to),
                    paired: false,
                });
            }
        }
    }
    let mut pairs = HashMap::new();
    for (&a, h) in by_actor {
        for (i, r) in h.records.iter().enumerate() {
            let Record::RecvDatagram { n, from, data, .. } = r else {
                continue;
            };
            let Some(candidates) = port(from).and_then(|p| sends.get_mut(&(p, *n))) else {
                continue;
            };
            let whole = data.0.len() as u64 == *n;
            let sum = datagram_sum(&data.0);
            if let Some(s) = candidates
                .iter_mut()
                .find(|s| !s.paired && (!whole || s.sum == sum))
            {
                s.paired = true;
                pairs.insert((a, i as u64 + 1), (s.event, s.to.clone()));
            }
        }
    }
    pairs
}

/// For each received datagram of `histories` paired with a send (see the module docs): that
/// send. A datagram from outside the session is not in the result.
pub fn datagram_senders(histories: &[History]) -> HashMap<Event, Event> {
    let by_actor: BTreeMap<ActorId, &History> = histories.iter().map(|h| (h.actor, h)).collect();
    pair(&by_actor)
        .into_iter()
        .map(|(recv, (send, _))| (recv, send))
        .collect()
}

/// The event of the receive that comes next on `fd` after record `i` of `h`, if it got a
/// datagram.
fn next_datagram(h: &History, i: usize, fd: i32) -> Option<u64> {
    for (j, r) in h.records.iter().enumerate().skip(i + 1) {
        match r {
            Record::RecvDatagram { fd: f, .. } if *f == fd => return Some(j as u64 + 1),
            Record::NoData { fd: f }
            | Record::Fail {
                call: Call::Recv,
                fd: f,
                ..
            } if *f == fd => return None,
            _ => {}
        }
    }
    None
}

impl Deps {
    /// Datagrams: see the module docs.
    pub(super) fn add_datagram_needs(&mut self, by_actor: &BTreeMap<ActorId, &History>) {
        let pairs = pair(by_actor);
        let mut receivers: HashMap<&Endpoint, BTreeSet<ActorId>> = HashMap::new();
        for (&(a, _), (_, to)) in &pairs {
            if let Some(to) = to {
                receivers.entry(to).or_default().insert(a);
            }
        }
        let shared: HashSet<Endpoint> = receivers
            .into_iter()
            .filter(|(_, actors)| actors.len() > 1)
            .map(|(p, _)| p.clone())
            .collect();
        for (&a, h) in by_actor {
            for (i, r) in h.records.iter().enumerate() {
                let here = (a, i as u64 + 1);
                match r {
                    Record::RecvDatagram { .. } => {
                        if let Some(&(send, _)) = pairs.get(&here) {
                            self.add_need(here, send);
                        }
                    }
                    Record::Ready { fds, .. } => {
                        for f in fds.iter().filter(|f| f.ev.contains(Events::IN)) {
                            let next = next_datagram(h, i, f.fd).map(|k| (a, k));
                            if let Some((send, to)) = next.and_then(|e| pairs.get(&e))
                                && !to.as_ref().is_some_and(|p| shared.contains(p))
                            {
                                self.add_need(here, *send);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        self.datagrams = pairs;
    }
}
