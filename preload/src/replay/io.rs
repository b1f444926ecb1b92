//! Replay of receives and sends on channel ends: a receive gets exactly the recorded bytes
//! once they have arrived (taken from the kernel as they come, `held.rs`), a send sends what
//! the record sent.

use super::cursor::{self, unreachable_record};
use super::held::{self, Receiver};
use crate::ld::Ld;
use crate::sys;
use ddbx_wire::Record;
use ddbx_wire::history::Call;
use ddbx_wire::history::value::FileSlot;
use libc::c_int;

/// A receive of at most `len` bytes on `fd` into the program's buffers (`receiver`); `call(n)`
/// does the real receive of at most `n` (only for out-of-band data, which is not in the
/// stream).
pub fn recv(
    ld: &mut Ld,
    fd: c_int,
    len: usize,
    receiver: &mut impl Receiver,
    mut call: impl FnMut(usize) -> isize,
) -> isize {
    ld.in_wait = true;
    let peek = receiver.flags() & libc::MSG_PEEK != 0;
    let rec = cursor::follow(
        ld,
        |r| match r {
            // A recording made before peeks had their record logged them as `Recv`.
            Record::Recv { fd: f, .. } | Record::NoData { fd: f } => *f == fd,
            Record::Peek { fd: f, .. } => *f == fd && peek,
            Record::Fail {
                call: Call::Recv,
                fd: f,
                ..
            } => *f == fd,
            Record::Untraced => true,
            _ => false,
        },
        || {
            let what = if peek { "a peek" } else { "a receive" };
            format!("{what} of up to {len} bytes on fd {fd}")
        },
    );
    ld.in_wait = false;
    match rec {
        Record::Untraced => untraced_recv(ld, fd, len, receiver),
        Record::Peek { n, .. } => peek_recv(ld, fd, (len, n as usize), receiver, &rec),
        Record::Recv { n, .. } => {
            let n = n as usize;
            if n > len {
                cursor::diverge(
                    ld,
                    &format!("a receive of up to {len} bytes on fd {fd} (the record got {n})"),
                );
            }
            if super::external::is_outside(ld, fd) {
                let index = ld.events() as usize;
                super::external::feed(ld, fd, index);
            }
            let r = if receiver.flags() & libc::MSG_OOB != 0 {
                sys::restart_on_eintr(|| call(n))
            } else {
                held::wait_for(ld, fd, n, receiver.flags());
                held::hand_over(ld, fd, n, receiver)
            };
            if r != n as isize {
                let err = sys::errno();
                cursor::diverge(
                    ld,
                    &format!(
                        "a receive on fd {fd} that returned {r} (errno {err}) although {n} bytes were waiting"
                    ),
                );
            }
            if let Some(t) = ld.trace.as_mut() {
                t.replayed(fd, r);
            }
            cursor::advance(ld, &rec);
            r
        }
        Record::NoData { .. } => {
            cursor::advance(ld, &rec);
            sys::set_errno(libc::EAGAIN);
            -1
        }
        Record::Fail { err, .. } => {
            cursor::advance(ld, &rec);
            sys::set_errno(err.0);
            -1
        }
        _ => unreachable_record(ld),
    }
}

/// A `Peek` of `n` bytes (the program's buffers hold `len`): the same `n` bytes, once they
/// have arrived, left held for the receive that takes them (`held.rs`).
fn peek_recv(
    ld: &mut Ld,
    fd: c_int,
    (len, n): (usize, usize),
    receiver: &mut impl Receiver,
    rec: &Record,
) -> isize {
    if n > len {
        cursor::diverge(
            ld,
            &format!("a peek of up to {len} bytes on fd {fd} (the record saw {n})"),
        );
    }
    if super::external::is_outside(ld, fd) {
        super::external::feed_peeked(ld, fd, n);
    }
    held::wait_for(ld, fd, n, receiver.flags());
    let r = held::hand_over(ld, fd, n, receiver);
    if r != n as isize {
        cursor::diverge(
            ld,
            &format!("a peek on fd {fd} that returned {r} although {n} bytes were waiting"),
        );
    }
    cursor::advance(ld, rec);
    r
}

/// Optimal tracing: a receive whose outcome was not logged. It gets what the record rule
/// gives: up to the end of the send that holds the next byte (or `len`), once those bytes are
/// there; or the end of the stream.
fn untraced_recv(ld: &mut Ld, fd: c_int, len: usize, receiver: &mut impl Receiver) -> isize {
    let ended = (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) as c_int;
    let n = loop {
        if let Some(want) = ld.trace.as_mut().and_then(|t| t.untraced_count(fd, len)) {
            break want;
        }
        // Nothing described yet: the peer has not sent it, or closed.
        let held = held::held_bytes(ld, fd);
        let timeout = if held > 0 { 0 } else { 1000 };
        // Baton down while it waits: another thread may read a clock meanwhile.
        let revents = crate::baton::put_down_for(|| {
            sys::poll_one(fd, libc::POLLIN | libc::POLLRDHUP, timeout)
        });
        let waiting = sys::bytes_available(fd).max(0) as usize + held;
        if revents > 0 && revents & ended != 0 && waiting == 0 {
            break 0;
        }
        if (revents > 0 || held > 0) && waiting > 0 {
            // Bytes that no side channel describes: a peer optimal tracing cannot replay.
            if ld
                .trace
                .as_mut()
                .and_then(|t| t.untraced_count(fd, len))
                .is_none()
            {
                cursor::diverge(
                    ld,
                    &format!(
                        "undescribed bytes on fd {fd} where the record received bytes from a traced peer"
                    ),
                );
            }
        }
    };
    ld.in_wait = true;
    held::wait_for(ld, fd, n, receiver.flags());
    ld.in_wait = false;
    let r = held::hand_over(ld, fd, n, receiver);
    if r != n as isize {
        cursor::diverge(
            ld,
            &format!("an untraced receive on fd {fd} that returned {r} where {n} bytes were due"),
        );
    }
    if let Some(t) = ld.trace.as_mut() {
        t.replayed(fd, r);
    }
    cursor::advance(
        ld,
        &Record::Recv {
            fd,
            n: r as u64,
            data: None,
            passed: Vec::new(),
        },
    );
    r
}

/// At the end of the history of an actor that was killed: a send on `fd` that its record made
/// but never logged (killed in between), whose bytes peers received (`ReplayState::owed`).
/// Sends up to what is owed and returns how much, without an event (the history has none);
/// `None`: not such a send.
fn owed_send(
    ld: &mut Ld,
    fd: c_int,
    len: usize,
    call: &mut impl FnMut(usize, usize) -> isize,
) -> Option<isize> {
    if ld.next_record().is_some() {
        return None;
    }
    let owed = ld
        .replay
        .as_mut()?
        .owed
        .iter_mut()
        .find(|(f, n)| *f == fd && *n > 0)?;
    let n = len.min(owed.1 as usize);
    owed.1 -= n as u64;
    let (sent, _) = send_through(fd, n, call);
    // All paid: the process is where its record was killed (the GD may wake it there, see
    // `crate::fatal::at_end`).
    cursor::nothing_left(ld);
    Some(sent as isize)
}

/// Sends bytes `0..n` of the program's data through `call(offset, n)`, waiting while the
/// socket is full, with no SIGPIPE (the receiver may have ended at its history's end, where
/// its record was killed): how much went, and the errno of a send that failed otherwise.
fn send_through(
    fd: c_int,
    n: usize,
    call: &mut impl FnMut(usize, usize) -> isize,
) -> (usize, Option<c_int>) {
    let mut sent = 0;
    while sent < n {
        let r = sys::without_sigpipe(|| call(sent, n - sent));
        if r > 0 {
            sent += r as usize;
            continue;
        }
        let err = sys::errno();
        if r < 0 && (err == libc::EAGAIN || err == libc::EINTR) {
            crate::baton::put_down_for(|| sys::poll_one(fd, libc::POLLOUT, 1000));
            continue;
        }
        return (sent, Some(err));
    }
    (sent, None)
}

/// A send of `len` bytes on `fd`; `call(offset, n)` sends bytes `offset..offset + n` of the
/// program's data.
pub fn send(
    ld: &mut Ld,
    fd: c_int,
    len: usize,
    mut call: impl FnMut(usize, usize) -> isize,
) -> isize {
    if let Some(sent) = owed_send(ld, fd, len, &mut call) {
        return sent;
    }
    let rec = cursor::follow(
        ld,
        |r| match r {
            Record::Send { fd: f, .. } => *f == fd,
            Record::Fail {
                call: Call::Send,
                fd: f,
                ..
            } => *f == fd,
            Record::Untraced => true,
            _ => false,
        },
        || format!("a send of {len} bytes on fd {fd}"),
    );
    let rec = match rec {
        // Optimal tracing: the record sent everything.
        Record::Untraced => Record::Send {
            fd,
            n: len as u64,
            data: None,
            turn: None,
            passed: Vec::new(),
        },
        other => other,
    };
    match rec {
        Record::Send { n, turn, .. } => {
            let n = n as usize;
            if let Some(turn) = turn {
                // Several writers share this pipe: the earlier writes go first.
                ld.wait_for_turn(fd, turn);
            }
            let events = ld.events() + 1;
            let token = ld.trace.as_mut().and_then(|t| t.before_send(fd, n, events));
            if n > len {
                cursor::diverge(
                    ld,
                    &format!("a send of {len} bytes on fd {fd} (the record sent {n})"),
                );
            }
            match send_through(fd, n, &mut call) {
                (_, None) => {}
                // The receiving actor already ended where its history ends (killed there):
                // no receive of its replay needs these bytes, which in the record went to its
                // socket before it died. The send went through.
                (_, Some(libc::EPIPE | libc::ECONNRESET)) => {}
                (_, Some(err)) => cursor::diverge(
                    ld,
                    &format!(
                        "a send on fd {fd} that failed (errno {err}) where the record sent {n} bytes"
                    ),
                ),
            }
            if let Some(t) = ld.trace.as_mut() {
                t.after_send(token, n as isize);
            }
            if turn.is_some() {
                ld.turn_done(fd);
            }
            if super::external::is_outside(ld, fd) {
                let expected = match &rec {
                    Record::Send { data: Some(d), .. } => Some(d.0.clone()),
                    _ => None,
                };
                super::external::check_sent(ld, fd, n, expected.as_deref());
            }
            cursor::advance(ld, &rec);
            n as isize
        }
        Record::Fail { err, .. } => {
            cursor::advance(ld, &rec);
            sys::set_errno(err.0);
            -1
        }
        _ => unreachable_record(ld),
    }
}

/// A read of the regular file `key`, made by `call`: when the record logged how many of the
/// file's shared writes came before such a read in this gap, it waits for as many (a
/// script's `grep` of the log that a server's workers write as they end). A halting replay
/// waits only when the record named the file: the GD then made the writers run that far
/// (the event before asked it to), where others may be held at the halt.
pub fn file_read(
    ld: &mut Ld,
    key: u64,
    empty: impl Fn() -> bool,
    mut call: impl FnMut() -> isize,
) -> isize {
    if !ld.is_turn_file(key) {
        // Not a file whose writes take turns (yet): the record logged a read of it only when
        // the read found it empty, before its first write (`Ld::read_between_turns`), or when
        // it was one, and nothing for the program's reads of other files in the same gaps.
        // So the replay knows after the read whether the record logged it: a `/proc` file is
        // empty before its read (its size is 0) and not after it (grep reads
        // `/proc/self/maps`, which took the count of the server's log that it reads next, and
        // that read waited 5 s).
        let mut r = call();
        if r != 0 || !empty() {
            return r;
        }
        let mut err = sys::errno();
        if let Some((writes, file)) = super::values::take_read_after(ld) {
            if writes > 0 && waits_for_turns(ld, file) {
                // The record's read came after writes into this file; none is made yet in
                // this replay (its writers are slower, or held until the GD, which this
                // read's event asked, lets them run): wait for them, and read again from
                // the start, where the empty read left the file.
                ld.claim_turn_file(key);
                ld.wait_for_writes(key, writes, ld.halt.is_some());
                r = call();
                err = sys::errno();
            }
            super::reads::read_made(ld, key, writes, r);
            ld.log_value(&ddbx_wire::history::value::Value::ReadAfter { writes, file });
        }
        sys::set_errno(err);
        return r;
    }
    let Some((writes, file)) = super::values::take_read_after(ld) else {
        let r = call();
        if r == 0 && super::reads::unfinished_read_of(ld) == Some(key) {
            // The end of the file: the run of reads that the logged one began is over.
            let err = sys::errno();
            super::reads::end_read_run(ld);
            sys::set_errno(err);
        }
        return r;
    };
    super::reads::end_read_run(ld);
    if waits_for_turns(ld, file) {
        ld.wait_for_writes(key, writes, ld.halt.is_some());
    }
    let r = call();
    let err = sys::errno();
    super::reads::read_made(ld, key, writes, r);
    ld.log_value(&ddbx_wire::history::value::Value::ReadAfter { writes, file });
    sys::set_errno(err);
    r
}

/// Whether a read or lock of the shared file `file` waits for the turns before it: always, but
/// in a halting replay only when the record named the file (then the GD made the actors those
/// turns belong to run to them; otherwise they may be held at the halt).
fn waits_for_turns(ld: &Ld, file: FileSlot) -> bool {
    ld.halt.is_none() || file.is_some()
}

/// How many writes into the shared file `file` a write of turn `turn` waits for, and whether
/// it waits for the reads before it too: its turn and yes, but in a halting replay only in a
/// file whose writes keep their order (`HaltPlan::ordered_files`: a read saw only some of
/// them), up to its horizon; a later write waits for the writes up to the horizon only, and
/// writes into other files do not wait (the lines several processes print into an output
/// race as sends to one receiver do, and a halt holds neither writer for the other).
fn write_waits_for(ld: &Ld, file: FileSlot, turn: u64) -> Option<(u64, bool)> {
    let Some(halt) = &ld.halt else {
        return Some((turn, true));
    };
    let (_, horizon) = halt.ordered_files.iter().find(|(f, _)| Some(*f) == file)?;
    Some(if turn <= *horizon {
        (turn, true)
    } else {
        (horizon + 1, false)
    })
}

/// A write into a regular file several processes may write (`fds::TURNS`, the file `key`),
/// made by `call`: it waits for the turn the record logged for it in this gap, if any
/// (`ld/appends.rs`), as [`write_waits_for`] says; a write the record did not make does not.
pub fn append(ld: &mut Ld, key: u64, call: impl FnOnce() -> isize) -> isize {
    let Some((turn, reads, file)) = super::values::take_turn(ld) else {
        return call();
    };
    if let Some((count, and_reads)) = write_waits_for(ld, file, turn) {
        ld.wait_for_append_turn(key, count);
        if and_reads {
            ld.wait_for_reads(key, turn, reads);
        }
    }
    let r = call();
    let err = sys::errno();
    ld.append_turn_done(key, turn);
    ld.log_value(&ddbx_wire::history::value::Value::Appended { turn, reads, file });
    sys::set_errno(err);
    r
}

/// A lock on the regular file `key` (flock, fcntl's record locks, lockf): one the record's
/// kernel refused is refused again without asking (`call` is not made); one it granted is
/// taken in its recorded turn, by `blocking` (the same lock, waiting for it: a non-blocking
/// one granted in the record must not be refused now because its predecessor lets go of it
/// later than in the record). A halting replay waits as [`waits_for_turns`] says.
pub fn lock(
    ld: &mut Ld,
    key: u64,
    call: impl FnOnce() -> c_int,
    blocking: impl FnOnce() -> c_int,
) -> c_int {
    let Some((turn, file)) = super::values::take_lock(ld) else {
        return call();
    };
    let value = ddbx_wire::history::value::Value::Locked { turn, file };
    let turn = match turn {
        Err(errno) => {
            ld.log_value(&value);
            sys::set_errno(errno);
            return -1;
        }
        Ok(turn) => turn,
    };
    let in_turn = waits_for_turns(ld, file);
    let r = crate::baton::put_down_for(|| {
        if in_turn {
            ld.wait_for_lock_turn(key, turn);
        }
        blocking()
    });
    let err = sys::errno();
    ld.lock_turn_done(key, turn);
    ld.log_value(&value);
    sys::set_errno(err);
    r
}

/// Before a lock for writing is taken on the shared file `key`: waits for the turn of the next
/// write the record made in this gap, if any (the write the lock guards).
pub fn before_lock(ld: &mut Ld, key: u64) {
    if let Some((turn, file)) = super::values::next_turn(ld)
        && let Some((count, _)) = write_waits_for(ld, file, turn)
    {
        ld.wait_for_append_turn(key, count);
    }
}
