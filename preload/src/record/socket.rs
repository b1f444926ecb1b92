//! Record of connections: connect and accept on stream sockets.

use crate::ld::Ld;
use crate::{fds, real, sys};
use ddbx_wire::history::intent::ConnectIntent;
use ddbx_wire::history::{Call, Shut};
use ddbx_wire::{Errno, Record};
use libc::{c_int, sockaddr, socklen_t};

/// A connect of `fd` to `addr`.
///
/// # Safety
/// `addr`/`len` as for connect(2): `addr` points to `len` readable bytes (or is null).
pub unsafe fn connect(ld: &mut Ld, fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    ld.steer_before();
    let again = fds::kind(fd) & fds::CONNECTING != 0;
    // A first connect: what the record will say it connected to, said before the call (the
    // peer may accept the connection before this process writes its record, or if it dies
    // first: `supervisor/wire/src/history/intent.rs`).
    let remote = (!again).then(|| {
        // SAFETY: `addr` points to `len` readable bytes, as the caller promises.
        let remote = unsafe { fds::format_addr(addr, len) };
        ld.log_intent(&ConnectIntent {
            fd,
            remote: remote.clone(),
            nonblock: fds::kind(fd) & fds::NONBLOCK != 0,
            at: Some(sys::monotonic_ns()),
        });
        remote
    });
    // SAFETY: the program's arguments, valid for connect(2) as the caller promises.
    let r = unsafe { real::connect(fd, addr, len) };
    let err = sys::errno();
    if ld.fault == b"connect" && remote.is_some() {
        sys::kill_self(libc::SIGKILL);
    }
    let rec = match remote {
        Some(remote) => connected(fd, remote, r, err),
        None => connected_again(fd, r, err),
    };
    let rec = stamped(rec);
    note_connect(fd, &rec);
    if r == 0 {
        super::peers::connected(ld, fd);
    }
    ld.emit(&rec);
    sys::set_errno(err);
    r
}

/// `getsockopt(fd, SOL_SOCKET, SO_ERROR, val, len)`: the pending error the program reads is
/// recorded (it says how a non-blocking connect ended).
///
/// # Safety
/// `val`/`len` as for getsockopt(2).
pub unsafe fn socket_error(
    ld: &mut Ld,
    fd: c_int,
    val: *mut libc::c_void,
    len: *mut socklen_t,
) -> c_int {
    // SAFETY: the program's arguments, valid for getsockopt(2) as the caller promises.
    let r = unsafe { real::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, val, len) };
    let err = sys::errno();
    let value = if r == 0 {
        // SAFETY: after a successful call, `val` holds `*len` bytes (the caller's buffer).
        unsafe { read_int(val, len) }
    } else {
        None
    };
    if let Some(value) = value {
        if value == 0 {
            super::peers::connected(ld, fd);
        }
        ld.emit(&Record::SocketError {
            fd,
            err: (value != 0).then_some(Errno(value)),
        });
    }
    sys::set_errno(err);
    r
}

/// The int a getsockopt returned in `val`, if the buffer holds one.
///
/// # Safety
/// `val`/`len` as after a successful getsockopt(2) (either may be null).
pub unsafe fn read_int(val: *const libc::c_void, len: *const socklen_t) -> Option<c_int> {
    // SAFETY: as the caller promises: `len` is null or readable, `val` holds `*len` bytes.
    unsafe {
        if val.is_null() || len.is_null() || (*len as usize) < std::mem::size_of::<c_int>() {
            return None;
        }
        Some(std::ptr::read_unaligned(val as *const c_int))
    }
}

/// Keeps track of whether `fd` has a connect under way or done (so that the next connect() on
/// it is a [`Record::ConnectAgain`]), after the connect or second connect `rec`.
pub fn note_connect(fd: c_int, rec: &Record) {
    match rec {
        Record::Connect { err, .. } if err.is_none() || *err == Some(Errno::EINPROGRESS) => {
            fds::update(fd, fds::CONNECTING, 0);
        }
        // The attempt ended in failure: the socket can connect anew.
        Record::ConnectAgain { err: Some(e), .. }
            if *e != Errno::EALREADY && *e != Errno::EISCONN =>
        {
            fds::update(fd, 0, fds::CONNECTING);
        }
        _ => {}
    }
}

/// The record of a connect on `fd`, whose connect was under way or done, that returned `r`.
pub fn connected_again(fd: c_int, r: c_int, err: c_int) -> Record {
    Record::ConnectAgain {
        fd,
        err: (r != 0).then_some(Errno(err)),
    }
}

/// accept4(2) on `fd`; in a process with threads, the connection is awaited with the baton put
/// down (`baton.rs`) and taken with it held. A blocking accept holds its fd number from its
/// start: made while other threads went on, it would give a socket they make meanwhile
/// another number than the replay's, where the accept comes at its logged place. A handler
/// that interrupts the wait leaves the accept to the real call (its EINTR or restart).
///
/// # Safety
/// As for accept4(2).
unsafe fn accept_in_order(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> c_int {
    // SAFETY: as the caller promises.
    let real = || unsafe { real::accept4(fd, addr, len, flags) };
    if !crate::baton::held() || sys::fcntl(fd, libc::F_GETFL, 0) & libc::O_NONBLOCK != 0 {
        return real();
    }
    // Another process sharing the socket may take the connection first: then wait again.
    while sys::poll_one(fd, libc::POLLIN, 0) <= 0 {
        let ready = crate::baton::put_down_for(|| sys::poll_one(fd, libc::POLLIN, -1));
        if ready < 0 {
            return crate::baton::put_down_for(real);
        }
    }
    real()
}

/// An accept on listening socket `fd` with accept4 `flags`.
///
/// # Safety
/// `addr`/`len` as for accept4(2): null, or `len` points to the size of the buffer at `addr`.
pub unsafe fn accept(
    ld: &mut Ld,
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> c_int {
    // SAFETY: the program's arguments, valid for accept4(2) as the caller promises.
    let r = unsafe { accept_in_order(fd, addr, len, flags) };
    let err = sys::errno();
    if ld.fault == b"accept" && r >= 0 {
        sys::kill_self(libc::SIGKILL);
    }
    if r >= 0 {
        fds::set_accepted(r, flags);
        super::peers::connected(ld, r);
    }
    ld.emit(&stamped(accepted(fd, r, err)));
    sys::set_errno(err);
    r
}

/// `rec` with the time its connect or accept returned (record only: a replay's own history
/// leaves it out), so that the analysis can pair the connections of a reused address pair in
/// the order they were made.
fn stamped(mut rec: Record) -> Record {
    if let Record::Connect { at, .. } | Record::Accept { at, .. } = &mut rec {
        *at = Some(sys::monotonic_ns());
    }
    rec
}

/// The record of an accept on `fd` that returned `r`.
pub fn accepted(fd: c_int, r: c_int, err: c_int) -> Record {
    if r >= 0 {
        let local = fds::socket_addr(r, false);
        let peer_pid = if local.starts_with("unix:") {
            fds::peer_pid(r)
        } else {
            None
        };
        Record::Accept {
            fd,
            new_fd: r,
            local,
            remote: fds::socket_addr(r, true),
            peer_pid,
            at: None,
        }
    } else {
        Record::Fail {
            call: Call::Accept,
            fd,
            err: Errno(err),
        }
    }
}

/// The record of a connect on `fd` to `remote` that returned `r`.
pub fn connected(fd: c_int, remote: String, r: c_int, err: c_int) -> Record {
    let err = if r == 0 { None } else { Some(Errno(err)) };
    let local = if err.is_none() || err == Some(Errno::EINPROGRESS) {
        fds::socket_addr(fd, false)
    } else {
        "?".into()
    };
    Record::Connect {
        fd,
        err,
        local,
        remote,
        at: None,
    }
}

/// The process lets go of the connection on `fd`, which `call` closes (close, close_range, a
/// dup2 over it, an exec): a `Close` event.
pub fn close(ld: &mut Ld, fd: c_int, call: impl FnOnce() -> c_int) -> c_int {
    super::peers::letting_go(ld, fd);
    let r = call();
    crate::guard::call_returned();
    let err = sys::errno();
    ld.emit(&Record::Close { fd });
    sys::set_errno(err);
    r
}

/// `shutdown(fd, how)`, made by `call`: a `Shutdown` event with its outcome.
pub fn shutdown(ld: &mut Ld, fd: c_int, how: Shut, call: impl FnOnce() -> c_int) -> c_int {
    let r = call();
    let err = sys::errno();
    ld.emit(&Record::Shutdown {
        fd,
        how,
        err: (r != 0).then_some(Errno(err)),
    });
    sys::set_errno(err);
    r
}
