//! UDP sockets: the receives and sends of the read/recv/send families on a UDP socket
//! (`fds::DATAGRAM`), one datagram each, and recvmmsg/sendmmsg as one such call per message.

use super::buffers::{Buffers, ProgramReceive, give_address};
use crate::hooks::ld_for_io;
use crate::record::datagram::Got;
use crate::{fds, real, record, replay};
use ddbx_wire::proto::Mode;
use libc::{c_int, c_uint, iovec, mmsghdr, msghdr, sockaddr, socklen_t};

/// Where a send goes: the call's address and its length (null: the connected peer).
pub type Dest = (*const sockaddr, socklen_t);

/// No address: send and write, and sendmsg without a name.
pub const NO_DEST: Dest = (std::ptr::null(), 0);

/// A receive into the program's buffers `into` on the UDP socket `fd`; `call(n)` is the
/// program's own call on at most `n` bytes (when nothing is recorded); `gather(n)` copies the
/// first `n` bytes received.
pub fn recv(
    fd: c_int,
    into: &mut ProgramReceive,
    mut call: impl FnMut(usize) -> isize,
    gather: impl Fn(usize) -> Vec<u8>,
) -> isize {
    let len = into.len();
    let Some(ld) = ld_for_io(fd) else {
        return call(len);
    };
    match ld.mode {
        // SAFETY: `into` describes the program's buffers of this call (`ProgramReceive`).
        Mode::Record => record::datagram::recv(ld, fd, || unsafe { receive(fd, into, gather) }),
        Mode::Replay => replay::datagram::recv(ld, fd, len, into),
    }
}

/// The real receive of one datagram into the program's buffers, made with recvmsg so that the
/// sender's address and the ancillary data are seen whatever the program asked for; the
/// program gets what its own call would have given it.
///
/// # Safety
/// `into` must describe the program's buffers, msghdr and address buffer of this call.
unsafe fn receive(
    fd: c_int,
    into: &ProgramReceive,
    gather: impl Fn(usize) -> Vec<u8>,
) -> (isize, Got) {
    let mut iovs: Vec<iovec> = match into.buffers {
        Buffers::One(buf, len) => vec![iovec {
            iov_base: buf.cast(),
            iov_len: len,
        }],
        Buffers::Many(iovs) => iovs.part(0, iovs.total()),
    };
    // SAFETY: plain old data.
    let mut name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut m: msghdr = unsafe { std::mem::zeroed() };
    m.msg_name = (&mut name as *mut libc::sockaddr_storage).cast();
    m.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as socklen_t;
    m.msg_iov = iovs.as_mut_ptr();
    m.msg_iovlen = iovs.len() as _;
    if !into.msg.is_null() {
        // SAFETY: the program's msghdr; its control buffer takes what the kernel gives.
        unsafe {
            m.msg_control = (*into.msg).msg_control;
            m.msg_controllen = (*into.msg).msg_controllen;
        }
    }
    // SAFETY: `m` points to our name and the program's buffers.
    let r = unsafe { real::recvmsg(fd, &mut m, into.flags) };
    let err = crate::sys::errno();
    let mut got = Got {
        from: String::new(),
        data: Vec::new(),
        control: Vec::new(),
        flags: 0,
    };
    if r < 0 {
        crate::sys::set_errno(err);
        return (r, got);
    }
    let name_len = (m.msg_namelen as usize).min(std::mem::size_of::<libc::sockaddr_storage>());
    // SAFETY: the kernel wrote `name_len` bytes of `name`.
    let from = unsafe { std::slice::from_raw_parts(m.msg_name.cast::<u8>(), name_len) };
    // SAFETY: as above.
    got.from = unsafe { fds::format_addr(m.msg_name.cast(), m.msg_namelen) };
    got.data = gather((r as usize).min(into.len()));
    got.flags = m.msg_flags;
    if into.msg.is_null() {
        // SAFETY: recvfrom's address buffer and length, or nulls.
        unsafe { give_address(into.from.0.cast(), into.from.1, from) };
    } else {
        // SAFETY: the program's msghdr; the kernel filled `msg_controllen` bytes of its control
        // buffer.
        unsafe {
            let msg = &mut *into.msg;
            give_address(msg.msg_name, &mut msg.msg_namelen, from);
            msg.msg_controllen = m.msg_controllen;
            msg.msg_flags = m.msg_flags;
            if !m.msg_control.is_null() {
                got.control = std::slice::from_raw_parts(
                    m.msg_control.cast::<u8>(),
                    m.msg_controllen as usize,
                )
                .to_vec();
            }
        }
    }
    crate::sys::set_errno(err);
    (r, got)
}

/// A send of `len` bytes, one datagram, on the UDP socket `fd` to `to`; `call()` makes it,
/// `gather()` copies its bytes.
pub fn send(
    fd: c_int,
    len: usize,
    to: Dest,
    call: impl FnOnce() -> isize,
    gather: impl FnOnce() -> Vec<u8>,
) -> isize {
    let Some(ld) = ld_for_io(fd) else {
        return call();
    };
    let sum = ddbx_wire::history::datagram_sum(&gather());
    match ld.mode {
        Mode::Record => {
            let to = if to.0.is_null() {
                fds::socket_addr(fd, true)
            } else {
                // SAFETY: the program's address of `to.1` bytes (sendto's contract).
                unsafe { fds::format_addr(to.0, to.1) }
            };
            record::datagram::send(ld, fd, (to, sum), call)
        }
        Mode::Replay => replay::datagram::send(ld, fd, len, sum),
    }
}

/// recvmmsg(2) on a UDP socket: one receive per message, the first made as the program asked,
/// the others without waiting when it said `MSG_WAITFORONE` or gave a timeout (`timed`); ends
/// at the first that fails. The kernel checks a timeout only after each datagram, so a batch
/// that had to wait for it returns what came in time; this one returns what was there after
/// the first, the same in record and replay (a wait on the real clock would not be).
///
/// # Safety
/// `msgs` must point to `vlen` of the program's mmsghdrs.
pub unsafe fn recvmmsg(
    msgs: *mut mmsghdr,
    vlen: c_uint,
    (flags, timed): (c_int, bool),
    mut one: impl FnMut(*mut msghdr, c_int) -> isize,
) -> c_int {
    let mut done = 0;
    let mut flags_now = flags & !libc::MSG_WAITFORONE;
    while done < vlen {
        // SAFETY: `done < vlen`: one of the program's mmsghdrs.
        let m = unsafe { &mut *msgs.add(done as usize) };
        let r = one(&mut m.msg_hdr, flags_now);
        if r < 0 {
            break;
        }
        m.msg_len = r as c_uint;
        done += 1;
        if flags & libc::MSG_WAITFORONE != 0 || timed {
            flags_now |= libc::MSG_DONTWAIT;
        }
    }
    if done == 0 { -1 } else { done as c_int }
}

/// sendmmsg(2) on a UDP socket: one send per message; ends at the first that fails.
///
/// # Safety
/// `msgs` must point to `vlen` of the program's mmsghdrs.
pub unsafe fn sendmmsg(
    msgs: *mut mmsghdr,
    vlen: c_uint,
    mut one: impl FnMut(*const msghdr) -> isize,
) -> c_int {
    let mut done = 0;
    while done < vlen {
        // SAFETY: `done < vlen`: one of the program's mmsghdrs.
        let m = unsafe { &mut *msgs.add(done as usize) };
        let r = one(&m.msg_hdr);
        if r < 0 {
            break;
        }
        m.msg_len = r as c_uint;
        done += 1;
    }
    if done == 0 { -1 } else { done as c_int }
}

/// connect(2) of a UDP or Unix datagram socket: what it returned is a value (`~d`). A Unix
/// datagram socket's connect fails while its server has not bound its path: a race with the
/// server's start, which replay must not run again. Replay returns the record's error without
/// the call, or makes the call and returns success as the record's did (the socket's sends
/// are not made in replay: its peer's receives come from their histories).
///
/// # Safety
/// The program's arguments, valid for connect(2).
pub unsafe fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    let Some(ld) = crate::hooks::values::values_ld() else {
        // SAFETY: as the caller promises.
        return unsafe { real::connect(fd, addr, len) };
    };
    use ddbx_wire::history::value::Value;
    if ld.mode == Mode::Replay
        && let Some(err) = replay::values::take_linked(ld)
    {
        ld.log_value(&Value::Linked { err });
        if err != 0 {
            crate::sys::set_errno(err);
            return -1;
        }
        // SAFETY: as the caller promises.
        unsafe { real::connect(fd, addr, len) };
        return 0;
    }
    // SAFETY: as the caller promises.
    let r = unsafe { real::connect(fd, addr, len) };
    let err = if r == 0 { 0 } else { crate::sys::errno() };
    ld.log_value(&Value::Linked { err });
    crate::sys::set_errno(err);
    r
}
