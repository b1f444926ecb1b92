//! How a non-blocking connect ended, as its program learned it later in its history.
//!
//! A `Connect` with `EINPROGRESS` does not say whether it connected: the program finds out
//! later, by a ready set (`out`, or `out|err|hup`), `getsockopt(SO_ERROR)`
//! ([`Record::SocketError`]), a second `connect()` ([`Record::ConnectAgain`]), or by using the
//! socket. Replay makes the connect come out that way (a refusal is refused for real, so that
//! every later observation is the kernel's own), and channel matching leaves refused connects
//! out. Both read it here, from the history alone.

use super::{Call, Record};
use crate::{Errno, Events};
use std::collections::HashMap;

/// What became of a non-blocking connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectOutcome {
    /// It connected.
    Connected,
    /// It failed with this error (`ECONNREFUSED` when only a ready set said so).
    Failed(Errno),
    /// The history does not say (the program never looked before the fd was reused or the
    /// history ended).
    Unknown,
}

/// Errors that end a connect attempt (as opposed to errors of a connection that was made).
fn ends_the_attempt(e: Errno) -> bool {
    matches!(e.0, 110 | 111 | 113 | 101) // ETIMEDOUT, ECONNREFUSED, EHOSTUNREACH, ENETUNREACH
}

/// The outcome of the connect at `records[index]` (0-based), from the records after it on the
/// same fd. A connect that did not return `EINPROGRESS` is its own outcome.
pub fn connect_outcome(records: &[Record], index: usize) -> ConnectOutcome {
    let Some(Record::Connect { fd, err, .. }) = records.get(index) else {
        return ConnectOutcome::Unknown;
    };
    match err {
        None => return ConnectOutcome::Connected,
        Some(e) if *e != Errno::EINPROGRESS => return ConnectOutcome::Failed(*e),
        Some(_) => {}
    }
    let fd = *fd;
    for r in records.iter().skip(index + 1) {
        let decided = match r {
            Record::ConnectAgain { fd: f, err } if *f == fd => match err {
                None => Some(ConnectOutcome::Connected),
                Some(e) if *e == Errno::EISCONN => Some(ConnectOutcome::Connected),
                Some(e) if *e == Errno::EALREADY => None,
                Some(e) => Some(ConnectOutcome::Failed(*e)),
            },
            Record::SocketError {
                fd: f,
                err: Some(e),
            } if *f == fd => Some(ConnectOutcome::Failed(*e)),
            Record::Ready { fds, .. } => fds.iter().find(|r| r.fd == fd).and_then(|r| {
                if r.ev.0 & Events::ERR != 0 {
                    Some(ConnectOutcome::Failed(Errno::ECONNREFUSED))
                } else if r.ev.0 & Events::OUT != 0 {
                    Some(ConnectOutcome::Connected)
                } else {
                    None
                }
            }),
            Record::Recv { fd: f, .. }
            | Record::Peek { fd: f, .. }
            | Record::Send { fd: f, .. }
            | Record::NoData { fd: f }
                if *f == fd =>
            {
                Some(ConnectOutcome::Connected)
            }
            Record::Fail {
                call: Call::Recv | Call::Send,
                fd: f,
                err,
            } if *f == fd => {
                if ends_the_attempt(*err) {
                    Some(ConnectOutcome::Failed(*err))
                } else if *err == Errno::EAGAIN {
                    None
                } else {
                    Some(ConnectOutcome::Connected)
                }
            }
            // The fd now names another socket.
            Record::Connect { fd: f, .. } if *f == fd => Some(ConnectOutcome::Unknown),
            Record::Accept { new_fd, .. } if *new_fd == fd => Some(ConnectOutcome::Unknown),
            _ => None,
        };
        if let Some(outcome) = decided {
            return outcome;
        }
    }
    ConnectOutcome::Unknown
}

/// Whether channel matching reads this record: `Start` (a pid), `Connect`, `Accept`.
pub fn makes_channels(record: &Record) -> bool {
    matches!(
        record,
        Record::Start { .. } | Record::Connect { .. } | Record::Accept { .. }
    )
}

/// Which records of a history, read in order, channel matching needs (`match_sparse` in `supervisor/src/analysis/channels.rs`): those that make
/// channels ([`makes_channels`]), and for a non-blocking connect (`EINPROGRESS`) the later
/// record of its fd that tells how it ended (a ready set, `SO_ERROR`, a second connect, a
/// transfer).
#[derive(Default)]
pub struct ChannelFilter {
    /// Connects under way, by fd.
    pending: HashMap<i32, Record>,
}

impl ChannelFilter {
    /// Whether `record` (the next of the history) is needed.
    pub fn keep(&mut self, record: &Record) -> bool {
        if makes_channels(record) {
            match record {
                Record::Connect {
                    fd, err: Some(e), ..
                } if *e == Errno::EINPROGRESS => {
                    self.pending.insert(*fd, record.clone());
                }
                Record::Connect { fd, .. } | Record::Accept { new_fd: fd, .. } => {
                    self.pending.remove(fd);
                }
                _ => {}
            }
            return true;
        }
        let fds: Vec<i32> = match record {
            Record::Ready { fds, .. } => fds.iter().map(|f| f.fd).collect(),
            Record::ConnectAgain { fd, .. }
            | Record::SocketError { fd, .. }
            | Record::Recv { fd, .. }
            | Record::Peek { fd, .. }
            | Record::Send { fd, .. }
            | Record::NoData { fd }
            | Record::Fail { fd, .. } => vec![*fd],
            _ => Vec::new(),
        };
        let mut kept = false;
        for fd in fds {
            if let Some(connect) = self.pending.get(&fd) {
                kept = true;
                let pair = [connect.clone(), record.clone()];
                if connect_outcome(&pair, 0) != ConnectOutcome::Unknown {
                    self.pending.remove(&fd);
                }
            }
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{ReadyFd, WaitCall};

    fn connect(fd: i32, err: Option<Errno>) -> Record {
        Record::Connect {
            fd,
            err,
            local: "127.0.0.1:5000".into(),
            remote: "127.0.0.1:80".into(),
            at: None,
        }
    }

    fn ready(fd: i32, ev: u32) -> Record {
        Record::Ready {
            call: WaitCall::Poll,
            fds: vec![ReadyFd { fd, ev: Events(ev) }],
        }
    }

    const OUT_ERR_HUP: u32 = Events::OUT | Events::ERR | Events::HUP;

    const IN_PROGRESS: Option<Errno> = Some(Errno::EINPROGRESS);

    #[test]
    fn a_blocking_connect_is_its_own_outcome() {
        assert_eq!(
            connect_outcome(&[connect(3, None)], 0),
            ConnectOutcome::Connected
        );
        assert_eq!(
            connect_outcome(&[connect(3, Some(Errno::ECONNREFUSED))], 0),
            ConnectOutcome::Failed(Errno::ECONNREFUSED)
        );
    }

    #[test]
    fn hiredis_learns_it_by_connecting_again() {
        let refused = [
            connect(3, IN_PROGRESS),
            ready(3, OUT_ERR_HUP),
            Record::ConnectAgain {
                fd: 3,
                err: Some(Errno::ECONNREFUSED),
            },
        ];
        assert_eq!(
            connect_outcome(&refused, 0),
            ConnectOutcome::Failed(Errno::ECONNREFUSED)
        );
        let connected = [
            connect(3, IN_PROGRESS),
            Record::ConnectAgain {
                fd: 3,
                err: Some(Errno::EALREADY),
            },
            Record::ConnectAgain { fd: 3, err: None },
        ];
        assert_eq!(connect_outcome(&connected, 0), ConnectOutcome::Connected);
    }

    #[test]
    fn libpq_learns_it_from_so_error_or_the_ready_set() {
        let refused = [
            connect(3, IN_PROGRESS),
            Record::SocketError {
                fd: 3,
                err: Some(Errno::ECONNREFUSED),
            },
        ];
        assert_eq!(
            connect_outcome(&refused, 0),
            ConnectOutcome::Failed(Errno::ECONNREFUSED)
        );
        let polled = [connect(3, IN_PROGRESS), ready(3, OUT_ERR_HUP)];
        assert_eq!(
            connect_outcome(&polled, 0),
            ConnectOutcome::Failed(Errno::ECONNREFUSED)
        );
        let connected = [
            connect(3, IN_PROGRESS),
            ready(3, Events::OUT),
            Record::SocketError { fd: 3, err: None },
        ];
        assert_eq!(connect_outcome(&connected, 0), ConnectOutcome::Connected);
    }

    #[test]
    fn other_fds_and_a_reused_fd_say_nothing() {
        let records = [
            connect(3, IN_PROGRESS),
            ready(4, Events::OUT | Events::ERR),
            Record::Send {
                fd: 4,
                n: 1,
                data: None,
                turn: None,
                passed: Vec::new(),
            },
            connect(3, None),
            Record::Send {
                fd: 3,
                n: 1,
                data: None,
                turn: None,
                passed: Vec::new(),
            },
        ];
        assert_eq!(connect_outcome(&records, 0), ConnectOutcome::Unknown);
        assert_eq!(
            connect_outcome(&[connect(3, IN_PROGRESS)], 0),
            ConnectOutcome::Unknown
        );
        let used = [
            connect(3, IN_PROGRESS),
            Record::Send {
                fd: 3,
                n: 1,
                data: None,
                turn: None,
                passed: Vec::new(),
            },
        ];
        assert_eq!(connect_outcome(&used, 0), ConnectOutcome::Connected);
    }
}
