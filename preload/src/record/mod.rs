//! Record: turning what a real call returned into the history record that says so.
//!
//! Mirrors `replay/`: whoever changes how an outcome is recorded sees here what replay must
//! reproduce, and there how it does.

use ddbx_wire::history::{Call, Data, ReadyFd, WaitCall};
use ddbx_wire::{Errno, Record};
use libc::c_int;

/// A receive returned `r` (errno `err` when negative); `data` is what it received, when the
/// bytes are to be kept (the peer may be outside the session).
pub fn recv(fd: c_int, r: isize, err: c_int, data: Option<Vec<u8>>) -> Record {
    if r >= 0 {
        Record::Recv {
            fd,
            n: r as u64,
            data: data.map(Data),
        }
    } else if err == libc::EAGAIN {
        Record::NoData { fd }
    } else {
        Record::Fail {
            call: Call::Recv,
            fd,
            err: Errno(err),
        }
    }
}

/// A send returned `r`; `data` is what it sent, when the bytes are to be kept.
pub fn send(fd: c_int, r: isize, err: c_int, data: Option<Vec<u8>>) -> Record {
    if r >= 0 {
        Record::Send {
            fd,
            n: r as u64,
            data: data.map(Data),
        }
    } else {
        Record::Fail {
            call: Call::Send,
            fd,
            err: Errno(err),
        }
    }
}

/// An accept on `fd` returned `r`.
pub fn accept(fd: c_int, r: c_int, err: c_int) -> Record {
    if r >= 0 {
        let local = crate::fds::socket_addr(r, false);
        let peer_pid = if local.starts_with("unix:") {
            crate::fds::peer_pid(r)
        } else {
            None
        };
        Record::Accept {
            fd,
            new_fd: r,
            local,
            remote: crate::fds::socket_addr(r, true),
            peer_pid,
        }
    } else {
        Record::Fail {
            call: Call::Accept,
            fd,
            err: Errno(err),
        }
    }
}

/// A connect on `fd` to `remote` returned `r`.
pub fn connect(fd: c_int, remote: String, r: c_int, err: c_int) -> Record {
    let err = if r == 0 { None } else { Some(Errno(err)) };
    let local = if err.is_none() || err == Some(Errno::EINPROGRESS) {
        crate::fds::socket_addr(fd, false)
    } else {
        "?".into()
    };
    Record::Connect {
        fd,
        err,
        local,
        remote,
    }
}

/// A readiness call returned `r` with these ready fds.
pub fn ready(call: WaitCall, r: c_int, err: c_int, fds: Vec<ReadyFd>) -> Record {
    if r < 0 {
        Record::Fail {
            call: Call::Wait,
            fd: -1,
            err: Errno(err),
        }
    } else {
        Record::Ready { call, fds }
    }
}
