//! Connects that a killed process made and never logged (issue #11, item 4).
//!
//! The LD writes a `Connect` record after the real call returns; a peer can accept the
//! connection, and exchange bytes on it, before that. A process SIGKILLed in between leaves a
//! peer's `Accept` that no history's `Connect` made, and its own history ends with the intent
//! line the LD wrote before the call (`supervisor/wire/src/history/intent.rs`). Here such a
//! history gets the `Connect` its record would have written, when a peer's accept of it is
//! otherwise unmatched:
//!
//! * **TCP**: an accept on the intent's address whose address pair has more accepts than
//!   successful connects (the connector's port, which the intent cannot know, is the accept's
//!   remote address); of several, the earliest that returned after the intent (`at`). A
//!   connection to a loopback address comes from one: an outside client's accept is not it.
//! * **Unix**: an accept on the intent's path from the killed process's pid
//!   (`Accept.peer_pid`), when that process has fewer successful connects to the path than the
//!   path accepted from it.
//!
//! The record is what the LD would have written: the intent's fd and address, the accept's
//! remote address as its local one, `EINPROGRESS` for a non-blocking TCP socket. Channel
//! matching then pairs it like any other; the replay's LD makes that connect at the end of the
//! history (`ReplayPlan::unlogged_tail`), and bytes the peer received on it are owed by the
//! killed process (`supervisor/src/session/owed.rs`). An intent no accept took (the process
//! died before the peer accepted, or the peer was outside the session) adds nothing: replay
//! ends the process at that connect, where its record ended.

use ddbx_wire::history::connect_outcome;
use ddbx_wire::history::intent::ConnectIntent;
use ddbx_wire::{ActorId, Errno, Record};
use std::collections::HashMap;

/// What reconciling reads of one history.
pub struct Tail<'a> {
    /// Whose history.
    pub actor: ActorId,
    /// The records channel matching reads (`ChannelFilter`), with their event numbers.
    pub kept: &'a [(u64, Record)],
    /// How many events the history has.
    pub events: u64,
    /// Its unsettled connect intent, if its last line is one.
    pub intent: Option<&'a ConnectIntent>,
}

/// A `Connect` to append to a history: event `event` of `actor`, which `acceptor`'s accept
/// (actor, event) took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unlogged {
    /// The killed process's actor.
    pub actor: ActorId,
    /// The event number the connect gets (its history's last plus one).
    pub event: u64,
    /// The record.
    pub record: Record,
    /// The accept that took the connection.
    pub acceptor: (ActorId, u64),
}

fn is_unix(addr: &str) -> bool {
    addr.starts_with("unix:")
}

/// Whether a TCP address is a loopback one: a connection to it comes from a loopback address
/// too, never from an outside client's.
fn is_loopback(addr: &str) -> bool {
    addr.starts_with("127.") || addr.starts_with("[::1]") || addr.starts_with("[::ffff:127.")
}

/// One accept of the recording.
struct AcceptSeen<'a> {
    at: Option<u64>,
    actor: ActorId,
    event: u64,
    local: &'a str,
    remote: &'a str,
    peer_pid: Option<i32>,
}

/// The connects to append, one per history whose intent a peer's otherwise unmatched accept
/// took.
pub fn unlogged_connects(tails: &[Tail<'_>]) -> Vec<Unlogged> {
    let mut intents: Vec<&Tail<'_>> = tails.iter().filter(|t| t.intent.is_some()).collect();
    if intents.is_empty() {
        return Vec::new();
    }
    let mut pid_of: HashMap<ActorId, i32> = HashMap::new();
    // Unmatched accepts so far: accepts minus successful connects, per TCP address pair
    // (connector's local, acceptor's local) and per Unix (connector pid, path).
    let mut tcp_surplus: HashMap<(&str, &str), i64> = HashMap::new();
    let mut unix_surplus: HashMap<(i32, &str), i64> = HashMap::new();
    let mut unix_connects: Vec<(ActorId, &str)> = Vec::new();
    let mut accepts: Vec<AcceptSeen<'_>> = Vec::new();
    for t in tails {
        let records: Vec<Record> = t.kept.iter().map(|(_, r)| r.clone()).collect();
        for (i, (event, record)) in t.kept.iter().enumerate() {
            match record {
                Record::Start { pid, .. } => {
                    pid_of.insert(t.actor, *pid);
                }
                Record::Connect { local, remote, .. }
                    if !matches!(
                        connect_outcome(&records, i),
                        ddbx_wire::history::ConnectOutcome::Failed(_)
                    ) =>
                {
                    if is_unix(remote) {
                        unix_connects.push((t.actor, remote));
                    } else {
                        *tcp_surplus.entry((local, remote)).or_default() -= 1;
                    }
                }
                Record::Accept {
                    local,
                    remote,
                    peer_pid,
                    at,
                    ..
                } => {
                    if is_unix(local) {
                        if let Some(pid) = peer_pid {
                            *unix_surplus.entry((*pid, local)).or_default() += 1;
                        }
                    } else {
                        *tcp_surplus.entry((remote, local)).or_default() += 1;
                    }
                    accepts.push(AcceptSeen {
                        at: *at,
                        actor: t.actor,
                        event: *event,
                        local,
                        remote,
                        peer_pid: *peer_pid,
                    });
                }
                _ => {}
            }
        }
    }
    for (actor, path) in unix_connects {
        if let Some(pid) = pid_of.get(&actor) {
            *unix_surplus.entry((*pid, path)).or_default() -= 1;
        }
    }
    accepts.sort_by_key(|a| (a.at, a.actor, a.event));
    intents.sort_by_key(|t| (t.intent.and_then(|i| i.at), t.actor));
    let mut taken: Vec<(ActorId, u64)> = Vec::new();
    let mut out = Vec::new();
    for t in intents {
        let Some(intent) = t.intent else { continue };
        let pid = pid_of.get(&t.actor).copied();
        let found = accepts.iter().find(|a| {
            let after = match (intent.at, a.at) {
                (Some(i), Some(a)) => a >= i,
                _ => true,
            };
            let fits = if is_unix(&intent.remote) {
                a.local == intent.remote
                    && a.peer_pid.is_some()
                    && a.peer_pid == pid
                    && unix_surplus
                        .get(&(a.peer_pid.unwrap_or(-1), a.local))
                        .is_some_and(|n| *n > 0)
            } else {
                a.local == intent.remote
                    && (!is_loopback(a.local) || is_loopback(a.remote))
                    && tcp_surplus
                        .get(&(a.remote, a.local))
                        .is_some_and(|n| *n > 0)
            };
            after && fits && !taken.contains(&(a.actor, a.event))
        });
        let Some(a) = found else { continue };
        if is_unix(a.local) {
            if let Some(n) = unix_surplus.get_mut(&(a.peer_pid.unwrap_or(-1), a.local)) {
                *n -= 1;
            }
        } else if let Some(n) = tcp_surplus.get_mut(&(a.remote, a.local)) {
            *n -= 1;
        }
        taken.push((a.actor, a.event));
        let err = (intent.nonblock && !is_unix(&intent.remote)).then_some(Errno::EINPROGRESS);
        out.push(Unlogged {
            actor: t.actor,
            event: t.events + 1,
            record: Record::Connect {
                fd: intent.fd,
                err,
                local: a.remote.to_string(),
                remote: intent.remote.clone(),
                at: intent.at,
            },
            acceptor: (a.actor, a.event),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddbx_wire::history::Origin;

    fn start(pid: i32) -> (u64, Record) {
        (
            1,
            Record::Start {
                pid,
                ppid: 1,
                origin: Origin::Root,
                argv: vec!["./x".into()],
                host: "h".into(),
            },
        )
    }

    fn accept(event: u64, local: &str, remote: &str, pid: Option<i32>, at: u64) -> (u64, Record) {
        (
            event,
            Record::Accept {
                fd: 3,
                new_fd: 4,
                local: local.into(),
                remote: remote.into(),
                peer_pid: pid,
                at: Some(at),
            },
        )
    }

    fn connect(event: u64, local: &str, remote: &str) -> (u64, Record) {
        (
            event,
            Record::Connect {
                fd: 3,
                err: None,
                local: local.into(),
                remote: remote.into(),
                at: None,
            },
        )
    }

    fn intent(remote: &str, nonblock: bool, at: u64) -> ConnectIntent {
        ConnectIntent {
            fd: 5,
            remote: remote.into(),
            nonblock,
            at: Some(at),
        }
    }

    #[test]
    fn a_tcp_intent_takes_the_unmatched_accept_on_its_address() {
        let srv = "127.0.0.1:3000";
        let server = vec![
            start(100),
            accept(2, srv, "127.0.0.1:5001", None, 10),
            accept(3, srv, "127.0.0.1:5002", None, 30),
            accept(4, "127.0.0.1:4000", "127.0.0.1:5003", None, 40),
        ];
        let live = vec![start(101), connect(2, "127.0.0.1:5001", srv)];
        let killed = vec![start(102)];
        let wanted = intent(srv, true, 20);
        let tails = [
            Tail {
                actor: ActorId(1),
                kept: &server,
                events: 4,
                intent: None,
            },
            Tail {
                actor: ActorId(2),
                kept: &live,
                events: 2,
                intent: None,
            },
            Tail {
                actor: ActorId(3),
                kept: &killed,
                events: 7,
                intent: Some(&wanted),
            },
        ];
        let got = unlogged_connects(&tails);
        assert_eq!(
            got,
            vec![Unlogged {
                actor: ActorId(3),
                event: 8,
                record: Record::Connect {
                    fd: 5,
                    err: Some(Errno::EINPROGRESS),
                    local: "127.0.0.1:5002".into(),
                    remote: srv.into(),
                    at: Some(20),
                },
                acceptor: (ActorId(1), 3),
            }]
        );
        // No unmatched accept on that address: nothing to add.
        let elsewhere = intent("127.0.0.1:9", false, 20);
        let tails = [
            Tail {
                intent: Some(&elsewhere),
                ..tails[2]
            },
            Tail { ..tails[0] },
        ];
        assert!(unlogged_connects(&tails).is_empty());
    }

    #[test]
    fn a_unix_intent_takes_an_accept_from_its_pid_only() {
        let path = "unix:/tmp/s";
        let server = vec![
            start(100),
            accept(2, path, "unix:", Some(101), 10),
            accept(3, path, "unix:", Some(102), 30),
        ];
        let live = vec![start(101), connect(2, "unix:", path)];
        let killed = vec![start(102)];
        let wanted = intent(path, true, 20);
        let tails = [
            Tail {
                actor: ActorId(1),
                kept: &server,
                events: 3,
                intent: None,
            },
            Tail {
                actor: ActorId(2),
                kept: &live,
                events: 2,
                intent: Some(&wanted),
            },
            Tail {
                actor: ActorId(3),
                kept: &killed,
                events: 1,
                intent: Some(&wanted),
            },
        ];
        let got = unlogged_connects(&tails);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].actor, ActorId(3));
        assert_eq!(got[0].acceptor, (ActorId(1), 3));
        assert!(matches!(got[0].record, Record::Connect { err: None, .. }));
    }
}
