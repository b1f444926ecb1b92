//! getsockname(2) and getpeername(2): in replay, the ports the record's program was told
//! (`fds::ports`).

use super::hook;
use crate::{fds, real};
use libc::{c_int, sockaddr, socklen_t};

hook! {
    /// getsockname(2): in replay, the record's port for a connection's or a UDP socket's
    /// ephemeral port (`fds::ports`).
    fn getsockname(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
        // SAFETY: the program's arguments (getsockname's contract), then the address the
        // kernel wrote into its buffer.
        unsafe { named(fd, addr, len, false) }
    }
}

hook! {
    /// getpeername(2): in replay, the record's port for the peer's end (`fds::ports`).
    fn getpeername(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
        // SAFETY: as for getsockname.
        unsafe { named(fd, addr, len, true) }
    }
}

/// getsockname (`peer == false`) or getpeername, with the port replay shows for that end.
///
/// # Safety
/// The program's arguments, valid for the call.
unsafe fn named(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, peer: bool) -> c_int {
    // SAFETY: a non-null `len` points to the buffer's size (the call's contract).
    let room = if len.is_null() { 0 } else { unsafe { *len } };
    // SAFETY: the program's arguments, passed on unchanged.
    let r = unsafe {
        if peer {
            real::getpeername(fd, addr, len)
        } else {
            real::getsockname(fd, addr, len)
        }
    };
    if r == 0 {
        // SAFETY: the kernel wrote `*len` bytes (at most `room` of them into the buffer).
        unsafe { fds::ports::put_shown(fd, peer, addr, len, room) };
    }
    r
}
