//! Replay-time channel matching: which connect made the connection an LD just accepted.
//!
//! Connecting LDs report `Connected{actor, event, local, remote}` right after their connect
//! returns; accepting LDs ask `WhoIs{local, remote, peer_pid}`. This module is the pure table
//! behind the answer; the session blocks a `WhoIs` until [`ConnectTable::who_is`] finds one.

use ddbx_wire::ActorId;
use ddbx_wire::history::Addr;

/// One reported connect.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Connected {
    actor: ActorId,
    event: u64,
    local: Addr,
    remote: Addr,
    claimed: bool,
}

/// The connects reported so far in a replay.
#[derive(Debug, Default, Clone)]
pub struct ConnectTable {
    connects: Vec<Connected>,
}

impl ConnectTable {
    /// Stores a `Connected` report.
    pub fn connected(&mut self, actor: ActorId, event: u64, local: Addr, remote: Addr) {
        self.connects.push(Connected {
            actor,
            event,
            local,
            remote,
            claimed: false,
        });
    }

    /// Answers a `WhoIs` if the connect is known yet, and marks it used.
    ///
    /// * TCP (`peer_pid` is `None`): the unused connect with `local == remote_of_accepted` and
    ///   `remote == local_of_accepted`.
    /// * Unix (`peer_pid` is `Some`): `peer_actor` (the actor whose live pid is `peer_pid`, looked
    ///   up by the caller) and its earliest unused connect whose `remote == local`.
    ///
    /// `None` means "not reported yet": the caller waits and asks again.
    pub fn who_is(
        &mut self,
        local: &str,
        remote: &str,
        peer_pid: Option<i32>,
        peer_actor: Option<ActorId>,
    ) -> Option<(ActorId, u64)> {
        let found = match peer_pid {
            None => self
                .connects
                .iter_mut()
                .find(|c| !c.claimed && c.local == remote && c.remote == local),
            Some(_) => {
                let actor = peer_actor?;
                self.connects
                    .iter_mut()
                    .filter(|c| !c.claimed && c.actor == actor && c.remote == local)
                    .min_by_key(|c| c.event)
            }
        }?;
        found.claimed = true;
        Some((found.actor, found.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_matches_crossed_addresses_once() {
        let mut t = ConnectTable::default();
        assert_eq!(t.who_is("127.0.0.1:80", "127.0.0.1:5000", None, None), None);
        t.connected(
            ActorId(2),
            4,
            "127.0.0.1:5000".into(),
            "127.0.0.1:80".into(),
        );
        t.connected(
            ActorId(3),
            2,
            "127.0.0.1:5001".into(),
            "127.0.0.1:80".into(),
        );
        assert_eq!(
            t.who_is("127.0.0.1:80", "127.0.0.1:5001", None, None),
            Some((ActorId(3), 2))
        );
        assert_eq!(
            t.who_is("127.0.0.1:80", "127.0.0.1:5000", None, None),
            Some((ActorId(2), 4))
        );
        assert_eq!(t.who_is("127.0.0.1:80", "127.0.0.1:5000", None, None), None);
    }

    #[test]
    fn unix_takes_the_earliest_unclaimed_connect_of_the_peer() {
        let mut t = ConnectTable::default();
        t.connected(ActorId(2), 7, "unix:".into(), "unix:/s".into());
        t.connected(ActorId(2), 3, "unix:".into(), "unix:/s".into());
        t.connected(ActorId(2), 5, "unix:".into(), "unix:/other".into());
        assert_eq!(t.who_is("unix:/s", "unix:", Some(9), None), None);
        assert_eq!(
            t.who_is("unix:/s", "unix:", Some(9), Some(ActorId(2))),
            Some((ActorId(2), 3))
        );
        assert_eq!(
            t.who_is("unix:/s", "unix:", Some(9), Some(ActorId(2))),
            Some((ActorId(2), 7))
        );
        assert_eq!(
            t.who_is("unix:/s", "unix:", Some(9), Some(ActorId(2))),
            None
        );
    }
}
