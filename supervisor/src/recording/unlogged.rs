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
//!   remote address) and which came from this host (from the address it was made to, or
//!   loopback to loopback: an outside client's accept is never it); of several, the earliest
//!   that returned after the intent (`at`).
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

use ddbx_wire::history::intent::ConnectIntent;
use ddbx_wire::history::{ConnectOutcome, connect_outcome};
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

/// Whether a TCP address is a loopback one.
fn is_loopback(addr: &str) -> bool {
    addr.starts_with("127.") || addr.starts_with("[::1]") || addr.starts_with("[::ffff:127.")
}

/// Whether a TCP connection from `remote` to `local` came from this host: a process connecting
/// to one of its host's addresses gets that address as its own (or a loopback one for a
/// loopback address), which an outside client never has.
fn from_this_host(local: &str, remote: &str) -> bool {
    let host = |a: &str| a.rsplit_once(':').map_or(a, |(h, _)| h).to_string();
    host(local) == host(remote) || (is_loopback(local) && is_loopback(remote))
}

/// One accept of the recording.
#[derive(Clone, Copy)]
struct AcceptSeen<'a> {
    at: Option<u64>,
    actor: ActorId,
    event: u64,
    local: &'a str,
    remote: &'a str,
    peer_pid: Option<i32>,
}

/// What the recording's histories say about accepts and connects.
#[derive(Default)]
struct Census<'a> {
    pid_of: HashMap<ActorId, i32>,
    /// Unmatched accepts: accepts minus successful connects, per TCP address pair
    /// (connector's local, acceptor's local) and per Unix (connector pid, path).
    tcp_surplus: HashMap<(&'a str, &'a str), i64>,
    unix_surplus: HashMap<(i32, &'a str), i64>,
    /// Every accept, in the order the calls returned.
    accepts: Vec<AcceptSeen<'a>>,
}

impl<'a> Census<'a> {
    fn of(tails: &[Tail<'a>]) -> Census<'a> {
        let mut c = Census::default();
        let mut unix_connects: Vec<(ActorId, &str)> = Vec::new();
        for t in tails {
            let records: Vec<Record> = t.kept.iter().map(|(_, r)| r.clone()).collect();
            for (i, (event, record)) in t.kept.iter().enumerate() {
                match record {
                    Record::Start { pid, .. } => {
                        c.pid_of.insert(t.actor, *pid);
                    }
                    Record::Connect { local, remote, .. }
                        if !matches!(connect_outcome(&records, i), ConnectOutcome::Failed(_)) =>
                    {
                        if is_unix(remote) {
                            unix_connects.push((t.actor, remote));
                        } else {
                            *c.tcp_surplus.entry((local, remote)).or_default() -= 1;
                        }
                    }
                    Record::Accept {
                        local,
                        remote,
                        peer_pid,
                        at,
                        ..
                    } => {
                        let seen = AcceptSeen {
                            at: *at,
                            actor: t.actor,
                            event: *event,
                            local,
                            remote,
                            peer_pid: *peer_pid,
                        };
                        if let Some(n) = c.surplus(&seen) {
                            *n += 1;
                        }
                        c.accepts.push(seen);
                    }
                    _ => {}
                }
            }
        }
        for (actor, path) in unix_connects {
            if let Some(pid) = c.pid_of.get(&actor) {
                *c.unix_surplus.entry((*pid, path)).or_default() -= 1;
            }
        }
        c.accepts.sort_by_key(|a| (a.at, a.actor, a.event));
        c
    }

    /// The count of unmatched accepts `a` is counted in (none for a Unix accept without a
    /// peer pid).
    fn surplus(&mut self, a: &AcceptSeen<'a>) -> Option<&mut i64> {
        if is_unix(a.local) {
            let pid = a.peer_pid?;
            Some(self.unix_surplus.entry((pid, a.local)).or_default())
        } else {
            Some(self.tcp_surplus.entry((a.remote, a.local)).or_default())
        }
    }

    /// The earliest unmatched accept that can be `intent`'s connection, made by the process
    /// `pid`; counted as matched from now on.
    fn take(&mut self, intent: &ConnectIntent, pid: Option<i32>) -> Option<(ActorId, u64, String)> {
        let fits = |a: &AcceptSeen<'_>| {
            let after = match (intent.at, a.at) {
                (Some(i), Some(a)) => a >= i,
                _ => true,
            };
            let from = if is_unix(&intent.remote) {
                a.peer_pid.is_some() && a.peer_pid == pid
            } else {
                from_this_host(a.local, a.remote)
            };
            after && from && a.local == intent.remote
        };
        let index = (0..self.accepts.len()).find(|i| {
            let a = &self.accepts[*i];
            fits(a) && {
                let a = *a;
                self.surplus(&a).is_some_and(|n| *n > 0)
            }
        })?;
        let a = self.accepts.remove(index);
        if let Some(n) = self.surplus(&a) {
            *n -= 1;
        }
        Some((a.actor, a.event, a.remote.to_string()))
    }
}

/// The connects to append, one per history whose intent a peer's otherwise unmatched accept
/// took.
pub fn unlogged_connects(tails: &[Tail<'_>]) -> Vec<Unlogged> {
    let mut intents: Vec<&Tail<'_>> = tails.iter().filter(|t| t.intent.is_some()).collect();
    if intents.is_empty() {
        return Vec::new();
    }
    let mut census = Census::of(tails);
    intents.sort_by_key(|t| (t.intent.and_then(|i| i.at), t.actor));
    let mut out = Vec::new();
    for t in intents {
        let Some(intent) = t.intent else { continue };
        let pid = census.pid_of.get(&t.actor).copied();
        let Some((actor, event, local)) = census.take(intent, pid) else {
            continue;
        };
        let err = (intent.nonblock && !is_unix(&intent.remote)).then_some(Errno::EINPROGRESS);
        out.push(Unlogged {
            actor: t.actor,
            event: t.events + 1,
            record: Record::Connect {
                fd: intent.fd,
                err,
                local,
                remote: intent.remote.clone(),
                at: intent.at,
            },
            acceptor: (actor, event),
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
    fn an_outside_clients_accept_is_never_taken() {
        let srv = "10.0.0.5:80";
        let server = vec![
            start(100),
            accept(2, srv, "10.0.0.9:7000", None, 30),
            accept(3, srv, "10.0.0.5:5001", None, 40),
        ];
        let killed = vec![start(102)];
        let wanted = intent(srv, false, 20);
        let tails = [
            Tail {
                actor: ActorId(1),
                kept: &server,
                events: 3,
                intent: None,
            },
            Tail {
                actor: ActorId(2),
                kept: &killed,
                events: 1,
                intent: Some(&wanted),
            },
        ];
        let got = unlogged_connects(&tails);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].acceptor, (ActorId(1), 3));
        assert!(from_this_host("[::1]:80", "[::1]:5000"));
        assert!(!from_this_host("127.0.0.1:80", "10.0.0.9:5000"));
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
