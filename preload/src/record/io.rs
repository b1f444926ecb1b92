//! Record of data on channel ends: receives and sends (the read/write, recv/send families).

use crate::ld::Ld;
use crate::sys;
use crate::trace::Decision;
use ddbx_wire::history::{Call, Data};
use ddbx_wire::{Errno, Record};
use libc::c_int;

/// Whether the bytes on `fd` are kept while recording: a stream socket whose peer may be
/// outside the session (not one end of a socketpair or pipe, not a connection to a recorded
/// process: `record/peers.rs`). `received`: a receive that returned bytes.
fn keeps_bytes(ld: &Ld, fd: c_int, received: bool) -> bool {
    super::peers::keeps_bytes(ld, fd, received)
}

/// A receive of at most `len` bytes on `fd` with these `flags`; `call(n)` does the real
/// receive of at most `n`; `gather(n)` copies the first `n` bytes received; `passed()` reads
/// the fds that came with them (`SCM_RIGHTS`, recvmsg only), which the record names so that
/// the analysis knows what the new numbers are bound to.
pub fn recv(
    ld: &mut Ld,
    fd: c_int,
    (len, flags): (usize, c_int),
    mut call: impl FnMut(usize) -> isize,
    (gather, passed): (impl Fn(usize) -> Vec<u8>, impl Fn() -> Vec<c_int>),
) -> isize {
    ld.live_touch(fd, "a receive");
    let start = ld.live_wait_start();
    // Logged once it returns, with the baton put down meanwhile (`baton.rs`).
    let mut r = crate::baton::put_down_for(|| call(len));
    if r < 0
        && let Some(start) = start
    {
        r = recv_again(ld, fd, flags, start, || call(len)).unwrap_or(r);
    }
    let err = sys::errno();
    let passed = if r > 0 { passed() } else { Vec::new() };
    if flags & libc::MSG_PEEK != 0 && r >= 0 {
        // Seen, not taken: the receive that takes these bytes keeps them (an outside peer's)
        // and tells optimal tracing; a peek is always logged.
        ld.emit(&Record::Peek { fd, n: r as u64 });
        sys::set_errno(err);
        return r;
    }
    if ld.trace.is_some() {
        // Bytes are kept only from peers that describe none (outside the session).
        let (decision, described) = match ld.trace.as_mut() {
            Some(t) if r >= 0 => t.received(fd, len, r as usize),
            _ => (Decision::Logged, false),
        };
        let data = (r > 0 && !described && keeps_bytes(ld, fd, true)).then(|| gather(r as usize));
        // A receive that took fds binds new numbers: the analysis needs it in the history.
        let decision = if passed.is_empty() {
            decision
        } else {
            Decision::Logged
        };
        ld.emit_decided(&with_passed(received(fd, r, err, data), passed), decision);
    } else {
        let data = (r > 0 && keeps_bytes(ld, fd, true)).then(|| gather(r as usize));
        ld.emit(&with_passed(received(fd, r, err, data), passed));
    }
    sys::set_errno(err);
    r
}

/// A live run: a blocking receive on `fd` that timed out (`SO_RCVTIMEO`) with a halt in
/// between receives again for what is left of its timeout in virtual time, if its peer stood
/// in the halt. `None`: the timeout stands.
fn recv_again(
    ld: &mut Ld,
    fd: c_int,
    flags: c_int,
    start: crate::ld::live::WaitStart,
    mut call: impl FnMut() -> isize,
) -> Option<isize> {
    if sys::errno() != libc::EAGAIN || flags & libc::MSG_DONTWAIT != 0 {
        return None;
    }
    // SAFETY: F_GETFL reads the description's flags.
    let fl = unsafe { libc::syscall(libc::SYS_fcntl, fd, libc::F_GETFL) };
    if fl < 0 || fl as c_int & libc::O_NONBLOCK != 0 {
        return None;
    }
    let timeout = receive_timeout(fd)?;
    let mut r = None;
    while let Some(left) = ld.live_timed_out(start, &[fd], timeout, "a receive") {
        set_receive_timeout(fd, left);
        let got = crate::baton::put_down_for(&mut call);
        let err = sys::errno();
        set_receive_timeout(fd, timeout);
        sys::set_errno(err);
        r = Some(got);
        if got >= 0 || err != libc::EAGAIN {
            break;
        }
    }
    r
}

/// `fd`'s `SO_RCVTIMEO` in µs (`None`: none).
fn receive_timeout(fd: c_int) -> Option<u64> {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    let mut len = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
    // SAFETY: a timeval of ours and its length.
    let r = unsafe {
        libc::syscall(
            libc::SYS_getsockopt,
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &mut tv as *mut libc::timeval,
            &mut len as *mut libc::socklen_t,
        )
    };
    let us = tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    (r == 0 && us > 0).then_some(us)
}

/// Sets `fd`'s `SO_RCVTIMEO` to `us` µs.
fn set_receive_timeout(fd: c_int, us: u64) {
    let tv = libc::timeval {
        tv_sec: (us / 1_000_000) as libc::time_t,
        tv_usec: (us % 1_000_000) as libc::suseconds_t,
    };
    // SAFETY: a timeval of ours and its length.
    unsafe {
        libc::syscall(
            libc::SYS_setsockopt,
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const libc::timeval,
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
}

/// A send of `len` bytes on `fd` that passes the fds `passed` (`SCM_RIGHTS`, sendmsg only);
/// `call(offset, n)` sends bytes `offset..offset + n`; `gather(offset, n)` copies those bytes.
pub fn send(
    ld: &mut Ld,
    fd: c_int,
    (len, passed): (usize, Vec<c_int>),
    mut call: impl FnMut(usize, usize) -> isize,
    gather: impl Fn(usize, usize) -> Vec<u8>,
) -> isize {
    ld.steer_before();
    ld.live_touch(fd, "a send");
    if ld.trace.is_none() {
        super::peers::before_send(ld, fd);
        let (r, turn) = if crate::fds::pipes::is_recorded(fd) {
            ld.write_in_turn(fd, || call(0, len))
        } else {
            (call(0, len), None)
        };
        crate::guard::call_returned();
        let err = sys::errno();
        let data = (r > 0 && keeps_bytes(ld, fd, false))
            .then(|| gather(0, r as usize))
            .filter(|d| d.len() == r as usize); // sendfile's bytes are not at hand
        let rec = with_passed(with_turn(sent(fd, r, err, data), turn), passed);
        ld.emit(&rec);
        sys::set_errno(err);
        return r;
    }
    let events = ld.events() + 1;
    let token = ld
        .trace
        .as_mut()
        .and_then(|t| t.before_send(fd, len, events));
    let (r, turn) = if crate::fds::pipes::is_recorded(fd) {
        ld.write_in_turn(fd, || call(0, len))
    } else {
        (call(0, len), None)
    };
    let err = sys::errno();
    if let Some(t) = ld.trace.as_mut() {
        t.after_send(token, r);
    }
    if turn.is_some() {
        // A write into a pipe of the session: its turn orders it among the pipe's writers.
        ld.emit(&with_turn(sent(fd, r, err, None), turn));
    } else if r >= 0 && r as usize == len && len > 0 && passed.is_empty() {
        // A send that took everything is what replay does anyway; a partial or failed
        // one is logged, with its bytes when no side channel says the peer is ours.
        ld.emit_decided(&sent(fd, r, err, None), Decision::Untraced);
    } else {
        let data = (r > 0 && token.is_none() && keeps_bytes(ld, fd, false))
            .then(|| gather(0, r as usize))
            .filter(|d| d.len() == r as usize);
        ld.emit(&with_passed(sent(fd, r, err, data), passed));
    }
    sys::set_errno(err);
    r
}

/// The record of a receive that returned `r` (errno `err` when negative); `data` is what it
/// received, when the bytes are to be kept (the peer may be outside the session).
pub fn received(fd: c_int, r: isize, err: c_int, data: Option<Vec<u8>>) -> Record {
    if r >= 0 {
        Record::Recv {
            fd,
            n: r as u64,
            data: data.map(Data),
            passed: Vec::new(),
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

/// A send's record with its turn among the writers of a pipe (`turns.rs`).
fn with_turn(mut rec: Record, turn: Option<u64>) -> Record {
    if let Record::Send { turn: t, .. } = &mut rec {
        *t = turn;
    }
    rec
}

/// A send's or receive's record with the fds it passed or took (`SCM_RIGHTS`): only a send
/// or receive of at least one byte passes them.
fn with_passed(mut rec: Record, fds: Vec<c_int>) -> Record {
    match &mut rec {
        Record::Send { n, passed, .. } | Record::Recv { n, passed, .. } if *n > 0 => {
            *passed = fds;
        }
        _ => {}
    }
    rec
}

/// The record of a send that returned `r`; `data` is what it sent, when the bytes are kept.
pub fn sent(fd: c_int, r: isize, err: c_int, data: Option<Vec<u8>>) -> Record {
    if r >= 0 {
        Record::Send {
            fd,
            n: r as u64,
            data: data.map(Data),
            turn: None,
            passed: Vec::new(),
        }
    } else {
        Record::Fail {
            call: Call::Send,
            fd,
            err: Errno(err),
        }
    }
}

/// A read of the regular file `key`, made by `call`: when the session's writes into it take
/// turns, how many came before the read is logged (`~f12`; not again while it stays the
/// same for that file), so that replay reads between the same writes (`ld/appends.rs`).
pub fn file_read(
    ld: &mut Ld,
    key: u64,
    empty: impl FnOnce() -> bool,
    call: impl FnOnce() -> isize,
) -> isize {
    let (r, writes) = ld.read_between_turns(key, empty, call);
    if let Some((writes, file)) = writes {
        let err = sys::errno();
        ld.log_value(&ddbx_wire::history::value::Value::ReadAfter { writes, file });
        sys::set_errno(err);
    }
    r
}

/// A write into a regular file several processes may write (`fds::TURNS`, the file `key`),
/// made by `call`: its turn among the session's writes into that file is logged as a value
/// (`~a12`), so that replay writes in the same order (`ld/appends.rs`).
pub fn append(ld: &mut Ld, key: u64, call: impl FnOnce() -> isize) -> isize {
    let (r, turn) = ld.append_in_turn(key, call);
    let err = sys::errno();
    if let Some((turn, reads, file)) = turn {
        ld.log_value(&ddbx_wire::history::value::Value::Appended { turn, reads, file });
        // Written now, not with the next event's line: a process killed before its next
        // event (a server ended by SIGTERM after its last log line) keeps its turns, and the
        // writers after it in replay do not wait for turns that never come.
        ld.flush_values();
    }
    sys::set_errno(err);
    r
}

/// A lock on the regular file `key` (flock, fcntl's record locks, lockf), made by `call` (0:
/// taken): its turn among the session's locks on that file is logged as a value (`~l4`), or
/// the errno of a non-blocking lock the kernel refused (`~l-11`), so that replay takes the
/// locks in the same order (`ld/appends.rs`). Written at once, as a write's turn is.
pub fn lock(ld: &mut Ld, key: u64, call: impl FnOnce() -> c_int) -> c_int {
    // A lock may wait for another process: other threads record meanwhile.
    let (r, turn) = ld.lock_in_turn(key, || crate::baton::put_down_for(call));
    let err = sys::errno();
    let turn = match turn {
        Some((turn, file)) => Some((Ok(turn), file)),
        None if r != 0 && matches!(err, libc::EAGAIN | libc::EACCES) => Some((Err(err), None)),
        None => None,
    };
    if let Some((turn, file)) = turn {
        ld.log_value(&ddbx_wire::history::value::Value::Locked { turn, file });
        ld.flush_values();
    }
    sys::set_errno(err);
    r
}
