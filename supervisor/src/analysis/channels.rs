//! Channel matching: pairing each accept of a recording with the connect that made it.
//!
//! A channel is one connected stream socket pair between two managed actors. Histories record
//! addresses, not channels, so the pairing is rebuilt here, from the loaded histories alone:
//!
//! * **TCP** (any address not starting with `unix:`): an `Accept{local: L, remote: R}` matches a
//!   `Connect{err: None | Some(EINPROGRESS), local: R, remote: L}` (exact string equality), unless
//!   the program saw that non-blocking connect fail later (refused: no connection was made).
//!   A second `connect()` that completes a non-blocking one is a `ConnectAgain`, not a connect:
//!   it makes no channel, and the fd stays the end of the first one's.
//!   When several connects share the same address pair (port reuse), accepts and connects are
//!   paired in the order of the times their calls returned (their `at`), each connect used
//!   once: a reused pair's connections exist one after the other (before `at`, recordings
//!   paired them in (actor, event) order, which is wrong when two clients reuse one port).
//! * **Unix sockets** (`unix:` addresses, `Accept.peer_pid = Some(pid)`): the connector is the
//!   actor whose `Start` record has that pid; the *k*-th accept on listening path `L` from that
//!   actor matches its *k*-th successful connect whose `remote == L`.
//!
//! Accepts with no managed connector (peers outside the session) are simply not in the result.

use ddbx_wire::history::{Addr, ConnectOutcome, Record, connect_outcome};
pub use ddbx_wire::history::{ChannelFilter, makes_channels};
use ddbx_wire::proto::AcceptPlan;
use ddbx_wire::{ActorId, History};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// One end of a channel: an actor and the number of its connect or accept event (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    /// The actor.
    pub actor: ActorId,
    /// Its event number (1-based index into its history's records).
    pub event: u64,
}

/// A connected stream between two managed actors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Channel {
    /// 1, 2, … in the order of (connector actor, connect event).
    pub id: u32,
    /// The connect that made it.
    pub connector: Endpoint,
    /// The accept that took it.
    pub acceptor: Endpoint,
}

/// Whether an address is a Unix-domain socket address.
pub fn is_unix(addr: &str) -> bool {
    addr.starts_with("unix:")
}

/// Whether the connect at `records[index]` made a connection: it connected, or was under way
/// (non-blocking) and the program did not see it fail later ([`connect_outcome`]).
fn connect_succeeded(records: &[Record], index: usize) -> bool {
    !matches!(connect_outcome(records, index), ConnectOutcome::Failed(_))
}

/// A connect, with the time it returned when the record has it.
type Timed = (Option<u64>, Endpoint);

/// Pairs the accepts and connects of a recording into channels.
///
/// `histories` may come in any order; each history's `actor` names it. The result is sorted by
/// channel id, i.e. by (connector actor, connect event).
pub fn match_channels(histories: &[History]) -> Vec<Channel> {
    let sparse: Vec<SparseHistory<'_>> = histories
        .iter()
        .map(|h| SparseHistory {
            actor: h.actor,
            records: h
                .records
                .iter()
                .enumerate()
                .filter(|(_, r)| makes_channels(r))
                .map(|(i, r)| (i as u64 + 1, r))
                .collect(),
        })
        .collect();
    match_sparse(&sparse)
}

/// The records of one history that channel matching reads ([`makes_channels`]), each with its
/// event number: what a pass that streams a history keeps of it.
#[derive(Debug, Clone)]
pub struct SparseHistory<'a> {
    /// Whose history.
    pub actor: ActorId,
    /// (event number, record), in event order.
    pub records: Vec<(u64, &'a Record)>,
}

/// [`match_channels`] over the records it reads only.
pub fn match_sparse(histories: &[SparseHistory<'_>]) -> Vec<Channel> {
    let mut ordered: Vec<&SparseHistory<'_>> = histories.iter().collect();
    ordered.sort_by_key(|h| h.actor);

    // Successful connects, in (actor, event) order, indexed two ways.
    let mut tcp_connects: HashMap<(&Addr, &Addr), VecDeque<Timed>> = HashMap::new();
    let mut unix_connects: HashMap<(ActorId, &Addr), VecDeque<Endpoint>> = HashMap::new();
    let mut actors_by_pid: BTreeMap<i32, Vec<ActorId>> = BTreeMap::new();
    for h in &ordered {
        // What decides a non-blocking connect's outcome is among them ([`ChannelFilter`]).
        let records: Vec<Record> = h.records.iter().map(|(_, r)| (*r).clone()).collect();
        for (i, &(event, record)) in h.records.iter().enumerate() {
            let here = Endpoint {
                actor: h.actor,
                event,
            };
            match record {
                Record::Start { pid, .. } => actors_by_pid.entry(*pid).or_default().push(h.actor),
                Record::Connect {
                    local, remote, at, ..
                } if connect_succeeded(&records, i) => {
                    if is_unix(remote) {
                        unix_connects
                            .entry((h.actor, remote))
                            .or_default()
                            .push_back(here);
                    } else {
                        tcp_connects
                            .entry((local, remote))
                            .or_default()
                            .push_back((*at, here));
                    }
                }
                _ => {}
            }
        }
    }

    // A reused address pair: its connections were made one after the other, so its connects
    // and its accepts are paired in the order of the times they returned (`at`; recordings
    // made before it have none and keep (actor, event) order).
    for list in tcp_connects.values_mut().filter(|l| l.len() > 1) {
        list.make_contiguous().sort();
    }
    let mut pairs: Vec<(Endpoint, Endpoint)> = Vec::new();
    for (acceptor, record) in accepts_in_time_order(&ordered) {
        let Record::Accept {
            local,
            remote,
            peer_pid,
            ..
        } = record
        else {
            continue;
        };
        let connector = if is_unix(local) {
            peer_pid
                .and_then(|pid| actors_by_pid.get(&pid))
                .and_then(|candidates| {
                    candidates.iter().find_map(|actor| {
                        unix_connects
                            .get_mut(&(*actor, local))
                            .and_then(VecDeque::pop_front)
                    })
                })
        } else {
            // The connector's local address is our remote one, and the other way round.
            tcp_connects
                .get_mut(&(remote, local))
                .and_then(VecDeque::pop_front)
                .map(|(_, connector)| connector)
        };
        if let Some(connector) = connector {
            pairs.push((connector, acceptor));
        }
    }
    pairs.sort();
    pairs
        .into_iter()
        .enumerate()
        .map(|(i, (connector, acceptor))| Channel {
            id: i as u32 + 1,
            connector,
            acceptor,
        })
        .collect()
}

/// Every accept of `histories`, in the order their calls returned (`at`), else in (actor,
/// event) order.
fn accepts_in_time_order<'a>(histories: &[&SparseHistory<'a>]) -> Vec<(Endpoint, &'a Record)> {
    let mut accepts: Vec<(Option<u64>, Endpoint, &Record)> = Vec::new();
    for h in histories {
        for &(event, record) in &h.records {
            if let Record::Accept { at, .. } = record {
                let acceptor = Endpoint {
                    actor: h.actor,
                    event,
                };
                accepts.push((*at, acceptor, record));
            }
        }
    }
    accepts.sort_by_key(|(at, acceptor, _)| (*at, *acceptor));
    accepts.into_iter().map(|(_, e, r)| (e, r)).collect()
}

/// The channel whose connect or accept is event `event` of `actor`.
pub fn channel_at(channels: &[Channel], actor: ActorId, event: u64) -> Option<&Channel> {
    let here = Endpoint { actor, event };
    channels
        .iter()
        .find(|c| c.connector == here || c.acceptor == here)
}

/// For each accept event of `actor`: the connecting actor and its connect event, as the replay
/// plan ([`ddbx_wire::proto::ReplayPlan::accepts`]) wants it, in accept-event order.
pub fn accepts_of(channels: &[Channel], actor: ActorId) -> Vec<AcceptPlan> {
    let mut accepts: Vec<AcceptPlan> = channels
        .iter()
        .filter(|c| c.acceptor.actor == actor)
        .map(|c| AcceptPlan {
            event: c.acceptor.event,
            peer: c.connector.actor,
            peer_event: c.connector.event,
        })
        .collect();
    accepts.sort();
    accepts
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddbx_wire::Errno;
    use ddbx_wire::history::Origin;

    fn start(pid: i32) -> Record {
        Record::Start {
            pid,
            ppid: 1,
            origin: Origin::Root,
            argv: vec!["./x".into()],
            host: "h".into(),
        }
    }

    fn connect(fd: i32, err: Option<Errno>, local: &str, remote: &str) -> Record {
        Record::Connect {
            fd,
            err,
            local: local.into(),
            remote: remote.into(),
            at: None,
        }
    }

    fn accept(local: &str, remote: &str, peer_pid: Option<i32>) -> Record {
        Record::Accept {
            fd: 3,
            new_fd: 4,
            local: local.into(),
            remote: remote.into(),
            peer_pid,
            at: None,
        }
    }

    fn history(actor: u32, records: Vec<Record>) -> History {
        History {
            actor: ActorId(actor),
            records,
            values: Vec::new(),
            truncated: false,
            unlogged_connect: None,
        }
    }

    fn ep(actor: u32, event: u64) -> Endpoint {
        Endpoint {
            actor: ActorId(actor),
            event,
        }
    }

    #[test]
    fn tcp_accepts_match_connects_by_address_pair() {
        let server = history(
            1,
            vec![
                start(100),
                accept("127.0.0.1:3000", "127.0.0.1:5002", None),
                accept("127.0.0.1:3000", "127.0.0.1:5001", None),
                accept("127.0.0.1:3000", "10.0.0.9:7000", None), // outside the session
            ],
        );
        let a = history(
            2,
            vec![
                start(101),
                connect(3, None, "127.0.0.1:5001", "127.0.0.1:3000"),
            ],
        );
        let b = history(
            3,
            vec![
                start(102),
                connect(3, Some(Errno::ECONNREFUSED), "?", "127.0.0.1:3000"),
                connect(
                    3,
                    Some(Errno::EINPROGRESS),
                    "127.0.0.1:5002",
                    "127.0.0.1:3000",
                ),
            ],
        );
        let channels = match_channels(&[b, server, a]);
        assert_eq!(
            channels,
            vec![
                Channel {
                    id: 1,
                    connector: ep(2, 2),
                    acceptor: ep(1, 3)
                },
                Channel {
                    id: 2,
                    connector: ep(3, 3),
                    acceptor: ep(1, 2)
                },
            ]
        );
        let plan = |event, peer, peer_event| AcceptPlan {
            event,
            peer: ActorId(peer),
            peer_event,
        };
        assert_eq!(
            accepts_of(&channels, ActorId(1)),
            vec![plan(2, 3, 3), plan(3, 2, 2)]
        );
    }

    #[test]
    fn reused_ports_pair_in_order() {
        let server = history(
            1,
            vec![
                start(100),
                accept("127.0.0.1:3000", "127.0.0.1:5001", None),
                accept("127.0.0.1:3000", "127.0.0.1:5001", None),
                accept("127.0.0.1:3000", "127.0.0.1:5001", None),
            ],
        );
        let client = history(
            2,
            vec![
                start(101),
                connect(3, None, "127.0.0.1:5001", "127.0.0.1:3000"),
                connect(3, None, "127.0.0.1:5001", "127.0.0.1:3000"),
            ],
        );
        let channels = match_channels(&[server, client]);
        assert_eq!(channels.len(), 2);
        assert_eq!(
            (channels[0].connector, channels[0].acceptor),
            (ep(2, 2), ep(1, 2))
        );
        assert_eq!(
            (channels[1].connector, channels[1].acceptor),
            (ep(2, 3), ep(1, 3))
        );
    }

    /// `record` with the time its call returned.
    fn at(mut record: Record, when: u64) -> Record {
        if let Record::Connect { at, .. } | Record::Accept { at, .. } = &mut record {
            *at = Some(when);
        }
        record
    }

    #[test]
    fn a_port_two_clients_reused_pairs_in_the_order_of_time() {
        // p3 used port 5001 first, then p2 got it again (conn_churn with 16 workers): (actor,
        // event) order would give the server's first accept p2's connect, which p2 makes only
        // after the server answered p2's earlier connections: a replay that waits for ever.
        let pair = ("127.0.0.1:5001", "127.0.0.1:3000");
        let server = history(
            1,
            vec![
                start(100),
                at(accept(pair.1, pair.0, None), 20),
                at(accept(pair.1, pair.0, None), 40),
            ],
        );
        let p2 = history(
            2,
            vec![start(101), at(connect(3, None, pair.0, pair.1), 30)],
        );
        let p3 = history(
            3,
            vec![start(102), at(connect(3, None, pair.0, pair.1), 10)],
        );
        let channels = match_channels(&[server, p2, p3]);
        let pairs: Vec<_> = channels.iter().map(|c| (c.connector, c.acceptor)).collect();
        assert_eq!(pairs, vec![(ep(2, 2), ep(1, 3)), (ep(3, 2), ep(1, 2))]);
    }

    #[test]
    fn unix_accepts_match_the_kth_connect_of_the_peer_pid() {
        let path = "unix:/tmp/s";
        let server = history(
            1,
            vec![
                start(100),
                accept(path, "unix:", Some(102)),
                accept(path, "unix:", Some(101)),
                accept(path, "unix:", Some(102)),
                accept(path, "unix:", Some(999)), // not one of ours
            ],
        );
        let a = history(2, vec![start(101), connect(3, None, "unix:", path)]);
        let b = history(
            3,
            vec![
                start(102),
                connect(3, None, "unix:", "unix:/tmp/other"),
                connect(4, None, "unix:", path),
                connect(5, Some(Errno(2)), "?", path),
                connect(5, None, "unix:", path),
            ],
        );
        let channels = match_channels(&[server, a, b]);
        let got: Vec<_> = channels
            .iter()
            .map(|c| (c.id, c.connector, c.acceptor))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, ep(2, 2), ep(1, 3)),
                (2, ep(3, 3), ep(1, 2)),
                (3, ep(3, 5), ep(1, 4))
            ]
        );
    }

    #[test]
    fn nothing_to_match_gives_no_channels() {
        assert!(match_channels(&[]).is_empty());
        let lonely = history(
            1,
            vec![start(1), connect(3, None, "127.0.0.1:1", "127.0.0.1:2")],
        );
        assert!(match_channels(&[lonely]).is_empty());
    }
}
