//! Record of connections: connect and accept on stream sockets.

use crate::ld::Ld;
use crate::{fds, real, sys};
use ddbx_wire::history::Call;
use ddbx_wire::{Errno, Record};
use libc::{c_int, sockaddr, socklen_t};

/// A connect of `fd` to `addr`.
///
/// # Safety
/// `addr`/`len` as for connect(2): `addr` points to `len` readable bytes (or is null).
pub unsafe fn connect(ld: &mut Ld, fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    // SAFETY: the program's arguments, valid for connect(2) as the caller promises.
    let r = unsafe { real::connect(fd, addr, len) };
    let err = sys::errno();
    // SAFETY: `addr` points to `len` readable bytes, as the caller promises.
    let remote = unsafe { fds::format_addr(addr, len) };
    ld.emit(&connected(fd, remote, r, err));
    sys::set_errno(err);
    r
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
    let r = unsafe { real::accept4(fd, addr, len, flags) };
    let err = sys::errno();
    if r >= 0 {
        fds::set_accepted(r, flags);
    }
    ld.emit(&accepted(fd, r, err));
    sys::set_errno(err);
    r
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
    }
}
