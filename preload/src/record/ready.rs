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
    let start = ld.live_wait_start();
    let mut r = crate::baton::put_down_for(|| call.call());
    if r == 0
        && let (Some(start), Some(timeout)) = (start, call.timeout_us().filter(|t| *t > 0))
    {
        r = wait_again(ld, call, start, timeout);
    }
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

/// A live run: a timed wait that timed out with a halt in between waits again for what is
/// left of its timeout in virtual time, if a peer it waits for stood in the halt.
fn wait_again<C: ReadinessCall>(
    ld: &mut Ld,
    call: &mut C,
    start: crate::ld::live::WaitStart,
    timeout: u64,
) -> c_int {
    let what = call.describe();
    loop {
        let fds = call.waits_on();
        let Some(left) = ld.live_timed_out(start, &fds, timeout, &what) else {
            return 0;
        };
        match crate::baton::put_down_for(|| call.call_for(left)) {
            Some(0) => continue,
            Some(r) => return r,
            None => return 0,
        }
    }
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
