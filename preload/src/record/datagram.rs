//! Record of UDP and Unix datagram sockets: every datagram received (which one came, and from whom, differs from
//! run to run) with its bytes, its sender and its ancillary data, and every datagram sent.
//!
//! A UDP socket has no connection, so there is no channel to order in replay: the receiving
//! process gets each datagram from its own history (`replay/datagram.rs`), whoever sent it.

use crate::ld::Ld;
use crate::sys;
use ddbx_wire::history::{Call, Data};
use ddbx_wire::{Errno, Record};
use libc::c_int;

/// What a receive on a UDP socket got besides its result: the sender, the bytes the program's
/// buffers got, the ancillary data and recvmsg's `msg_flags`.
pub struct Got {
    /// The sender's address as text (`?`: none).
    pub from: String,
    /// The bytes received into the program's buffers.
    pub data: Vec<u8>,
    /// The whole cmsgs written into the program's control buffer.
    pub control: Vec<u8>,
    /// `msg_flags` on return.
    pub flags: c_int,
}

/// A receive on the UDP socket `fd`, made by `call` (which returns the result and what came).
pub fn recv(ld: &mut Ld, fd: c_int, call: impl FnOnce() -> (isize, Got)) -> isize {
    // Logged once it returns, with the baton put down meanwhile (`baton.rs`).
    let (r, got) = crate::baton::put_down_for(call);
    let err = sys::errno();
    ld.emit(&received(fd, r, err, got));
    sys::set_errno(err);
    r
}

/// The record of a receive on a UDP socket that returned `r` (errno `err` when negative).
pub fn received(fd: c_int, r: isize, err: c_int, got: Got) -> Record {
    if r >= 0 {
        Record::RecvDatagram {
            fd,
            n: r as u64,
            from: got.from,
            data: Data(got.data),
            control: (!got.control.is_empty()).then_some(Data(got.control)),
            flags: got.flags,
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

/// A send of one datagram on the UDP socket `fd` to `to` (text; the connected peer when the
/// call names none) whose bytes sum to `sum` (`datagram_sum`), made by `call`.
pub fn send(
    ld: &mut Ld,
    fd: c_int,
    (to, sum): (String, u64),
    call: impl FnOnce() -> isize,
) -> isize {
    ld.steer_before();
    let r = call();
    crate::guard::call_returned();
    let err = sys::errno();
    let rec = if r >= 0 {
        Record::SendDatagram {
            fd,
            n: r as u64,
            to,
            // Bound by now, if the send did not bind it.
            local: crate::fds::socket_addr(fd, false),
            sum,
        }
    } else {
        Record::Fail {
            call: Call::Send,
            fd,
            err: Errno(err),
        }
    };
    ld.emit(&rec);
    sys::set_errno(err);
    r
}
