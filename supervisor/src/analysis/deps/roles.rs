//! How each fd number of a history is used over time — as a listening socket or as a stream —
//! which decides what a ready set's `in` on it needs (the module docs of [`super`],
//! "readiness"): fd numbers are reused and closes are not always recorded.

use ddbx_wire::History;
use ddbx_wire::history::{Call, Record};
use std::collections::HashMap;

/// How an fd number is used by a record: as a listening socket or as a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Listening,
    Stream,
}

/// One use of an fd number: the event, and as what.
pub(super) type FdUse = (u64, Role);

/// For each fd number: the events that use it, and as what, in event order.
pub(super) fn fd_roles(h: &History) -> HashMap<i32, Vec<FdUse>> {
    let mut roles: HashMap<i32, Vec<FdUse>> = HashMap::new();
    for (i, r) in h.records.iter().enumerate() {
        let k = i as u64 + 1;
        let mut add = |fd: i32, role| roles.entry(fd).or_default().push((k, role));
        match r {
            Record::Accept { fd, new_fd, .. } => {
                add(*fd, Role::Listening);
                add(*new_fd, Role::Stream);
            }
            Record::Pair { fd, peer_fd } => {
                add(*fd, Role::Stream);
                add(*peer_fd, Role::Stream);
            }
            Record::Pipe { read_fd, write_fd } => {
                add(*read_fd, Role::Stream);
                add(*write_fd, Role::Stream);
            }
            Record::Fail {
                call: Call::Accept,
                fd,
                ..
            } => add(*fd, Role::Listening),
            Record::Fail {
                call: Call::Recv | Call::Send,
                fd,
                ..
            }
            | Record::Connect { fd, .. }
            | Record::ConnectAgain { fd, .. }
            | Record::SocketError { fd, .. }
            | Record::Recv { fd, .. }
            | Record::Peek { fd, .. }
            | Record::NoData { fd }
            | Record::Close { fd }
            | Record::Shutdown { fd, .. }
            | Record::Send { fd, .. } => add(*fd, Role::Stream),
            _ => {}
        }
    }
    roles
}

/// The role of `fd` at event `k`: that of its nearest later use, else its nearest earlier one.
pub(super) fn role_at(roles: &HashMap<i32, Vec<FdUse>>, fd: i32, k: u64) -> Option<Role> {
    let uses = roles.get(&fd)?;
    let i = uses.partition_point(|(e, _)| *e <= k);
    uses.get(i)
        .or_else(|| i.checked_sub(1).and_then(|j| uses.get(j)))
        .map(|(_, role)| *role)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::{START, hist};

    #[test]
    fn role_of_an_fd_comes_from_its_nearest_use() {
        let h = hist(
            1,
            &format!(
                "{START}Connect(fd: 3, err: None, local: \"127.0.0.1:1\", remote: \"127.0.0.1:2\")\n\
                 Ready(call: Poll, fds: [(fd: 3, ev: \"in\")])\n\
                 Accept(fd: 3, new_fd: 4, local: \"127.0.0.1:9\", remote: \"127.0.0.1:8\", peer_pid: None)\n\
                 Ready(call: Poll, fds: [(fd: 3, ev: \"in\")])\n"
            ),
        );
        let roles = fd_roles(&h);
        assert_eq!(role_at(&roles, 3, 1), Some(Role::Stream));
        assert_eq!(role_at(&roles, 3, 3), Some(Role::Listening));
        assert_eq!(role_at(&roles, 3, 5), Some(Role::Listening));
        assert_eq!(role_at(&roles, 4, 1), Some(Role::Stream));
        assert_eq!(role_at(&roles, 7, 1), None);
    }
}
