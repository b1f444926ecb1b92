//! Record of readiness: select, poll and epoll_wait on sets that watch a channel end.

use crate::ld::Ld;
use crate::readiness::ReadinessCall;
use crate::sys;
use crate::trace::Decision;
use ddbx_wire::history::{Call, ReadyFd, WaitCall};
use ddbx_wire::{Errno, Record};
use libc::c_int;

/// Makes the readiness call and records the ready set it reported. Under optimal tracing a
/// call that reported one fd readable, out of fds watched for reading only, may go unlogged.
pub fn wait<C: ReadinessCall>(ld: &mut Ld, call: &mut C) -> c_int {
    // Logged once it returns, with the baton put down meanwhile (`baton.rs`).
    let r = crate::baton::put_down_for(|| call.call());
    let err = sys::errno();
    let ready = match call.ready_fds(r) {
        Ok(ready) => ready,
        Err(what) => ld.unsupported(what),
    };
    if ld.trace.is_some() {
        let decision = match (ld.trace.as_mut(), ready.as_slice()) {
            (Some(t), [one]) if call.reads_one(one) => t.ready_one(&call.watched(), one.fd),
            _ => Decision::Logged,
        };
        ld.emit_decided(&ready_set(C::KIND, r, err, ready), decision);
    } else {
        ld.emit(&ready_set(C::KIND, r, err, ready));
    }
    sys::set_errno(err);
    r
}

/// The record of a readiness call that returned `r` with these ready fds.
pub fn ready_set(call: WaitCall, r: c_int, err: c_int, fds: Vec<ReadyFd>) -> Record {
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
