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
/// receive of at most `n`; `gather(n)` copies the first `n` bytes received.
pub fn recv(
    ld: &mut Ld,
    fd: c_int,
    (len, flags): (usize, c_int),
    mut call: impl FnMut(usize) -> isize,
    gather: impl Fn(usize) -> Vec<u8>,
) -> isize {
    let r = call(len);
    let err = sys::errno();
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
        ld.emit_decided(&received(fd, r, err, data), decision);
    } else {
        let data = (r > 0 && keeps_bytes(ld, fd, true)).then(|| gather(r as usize));
        ld.emit(&received(fd, r, err, data));
    }
    sys::set_errno(err);
    r
}

/// A send of `len` bytes on `fd`; `call(offset, n)` sends bytes `offset..offset + n`;
/// `gather(offset, n)` copies those bytes.
pub fn send(
    ld: &mut Ld,
    fd: c_int,
    len: usize,
    mut call: impl FnMut(usize, usize) -> isize,
    gather: impl Fn(usize, usize) -> Vec<u8>,
) -> isize {
    if ld.trace.is_none() {
        super::peers::before_send(ld, fd);
        let (r, turn) = if crate::fds::pipes::is_recorded(fd) {
            ld.write_in_turn(fd, || call(0, len))
        } else {
            (call(0, len), None)
        };
        let err = sys::errno();
        let data = (r > 0 && keeps_bytes(ld, fd, false))
            .then(|| gather(0, r as usize))
            .filter(|d| d.len() == r as usize); // sendfile's bytes are not at hand
        ld.emit(&with_turn(sent(fd, r, err, data), turn));
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
    } else if r >= 0 && r as usize == len && len > 0 {
        // A send that took everything is what replay does anyway; a partial or failed
        // one is logged, with its bytes when no side channel says the peer is ours.
        ld.emit_decided(&sent(fd, r, err, None), Decision::Untraced);
    } else {
        let data = (r > 0 && token.is_none() && keeps_bytes(ld, fd, false))
            .then(|| gather(0, r as usize))
            .filter(|d| d.len() == r as usize);
        ld.emit(&sent(fd, r, err, data));
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

/// The record of a send that returned `r`; `data` is what it sent, when the bytes are kept.
pub fn sent(fd: c_int, r: isize, err: c_int, data: Option<Vec<u8>>) -> Record {
    if r >= 0 {
        Record::Send {
            fd,
            n: r as u64,
            data: data.map(Data),
            turn: None,
        }
    } else {
        Record::Fail {
            call: Call::Send,
            fd,
            err: Errno(err),
        }
    }
}

/// A write into a regular file several processes may write (`fds::TURNS`, the file `key`),
/// made by `call`: its turn among the session's writes into that file is logged as a value
/// (`~a12`), so that replay writes in the same order (`ld/appends.rs`).
pub fn append(ld: &mut Ld, key: u64, call: impl FnOnce() -> isize) -> isize {
    let (r, turn) = ld.append_in_turn(key, call);
    let err = sys::errno();
    if let Some(turn) = turn {
        ld.log_value(&ddbx_wire::history::value::Value::Appended { turn });
        // Written now, not with the next event's line: a process killed before its next
        // event (a server ended by SIGTERM after its last log line) keeps its turns, and the
        // writers after it in replay do not wait for turns that never come.
        ld.flush_values();
    }
    sys::set_errno(err);
    r
}
