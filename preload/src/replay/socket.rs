//! Replay of connects (accepts: `accept.rs`).
//!
//! A recorded refusal is refused. A non-blocking connect (`EINPROGRESS`) comes out as the
//! program learned it later in the record ([`connect_outcome`]): refused for real (the socket
//! connects to a loopback port the LD bound without listening, so every later observation is
//! the kernel's own), or connected. A recorded success waits until the peer listens (retrying
//! while it is not up yet), then tells the GD its address so that the acceptor can recognise
//! it. A second connect on the same socket, and `SO_ERROR`, say what the record said.

use super::Backoff;
use super::cursor::{self, unreachable_record};
use crate::ld::Ld;
use crate::record::socket::{connected, note_connect, read_int};
use crate::{fds, real, sys};
use ddbx_wire::history::{ConnectOutcome, Shut, connect_outcome};
use ddbx_wire::proto::LdToGd;
use ddbx_wire::{Errno, Record};
use libc::{c_int, sockaddr, socklen_t};

/// A connect of `fd` to `addr`.
///
/// # Safety
/// `addr`/`len` as for connect.
pub unsafe fn connect(ld: &mut Ld, fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    // SAFETY: the program's address, as for connect.
    let remote = unsafe { fds::format_addr(addr, len) };
    if fds::kind(fd) & fds::CONNECTING != 0 {
        return connect_again(ld, fd, &remote);
    }
    let rec = cursor::follow(
        ld,
        |r| matches!(r, Record::Connect { fd: f, .. } if *f == fd),
        || format!("a connect on fd {fd} to {remote}"),
    );
    let Record::Connect { err, .. } = rec else {
        unreachable_record(ld)
    };
    if let Some(e) = err
        && e != Errno::EINPROGRESS
    {
        let observed = connected(fd, remote, -1, e.0);
        cursor::advance(ld, &observed);
        sys::set_errno(e.0);
        return -1;
    }
    let event = ld.events() + 1;
    let outcome = ld.replay.as_ref().map_or(ConnectOutcome::Unknown, |r| {
        connect_outcome(&r.records, event as usize - 1)
    });
    if let ConnectOutcome::Failed(_) = outcome {
        // SAFETY: the program's address, as the caller promises.
        let family = unsafe { addr.as_ref() }.map_or(libc::AF_INET, |a| a.sa_family as c_int);
        refuse(ld, fd, family);
        show_recorded_port(fd, &rec);
        let observed = connected(fd, remote, -1, libc::EINPROGRESS);
        finish_connect(ld, fd, &observed);
        sys::set_errno(libc::EINPROGRESS);
        return -1;
    }
    let external = ld
        .replay
        .as_ref()
        .is_some_and(|r| r.external_connects.contains(&event));
    if external {
        // A server outside the session: the LD plays it.
        let nonblock = sys::fcntl(fd, libc::F_GETFL, 0) & libc::O_NONBLOCK != 0;
        super::external::open(ld, Some(fd), nonblock);
        show_recorded_port(fd, &rec);
        finish_connect(ld, fd, &rec);
        return match err {
            None => 0,
            Some(e) => {
                sys::set_errno(e.0);
                -1
            }
        };
    }
    // SAFETY: as the caller promises.
    unsafe { connect_when_listening(ld, fd, addr, len, &remote) };
    show_recorded_port(fd, &rec);
    let local = fds::socket_addr(fd, false);
    let note = LdToGd::Connected {
        actor: ld.actor,
        event,
        local: local.clone(),
        remote: remote.clone(),
    };
    ld.send(&note);
    let observed = Record::Connect {
        fd,
        err,
        local,
        remote,
        at: None,
    };
    finish_connect(ld, fd, &observed);
    match err {
        None => 0,
        Some(e) => {
            sys::set_errno(e.0);
            -1
        }
    }
}

/// The connect (or second connect) `observed` has happened.
fn finish_connect(ld: &mut Ld, fd: c_int, observed: &Record) {
    note_connect(fd, observed);
    cursor::advance(ld, observed);
}

/// The program is shown the record's port for its end of the connection `rec` made.
fn show_recorded_port(fd: c_int, rec: &Record) {
    if let Record::Connect { local, .. } = rec {
        fds::ports::show(fd, fds::ports::port_of(local), None);
    }
}

/// A connect on `fd`, whose connect is under way or done: the program learns the outcome the
/// record learned (no real call: the replayed socket connected, or was refused, already).
fn connect_again(ld: &mut Ld, fd: c_int, remote: &str) -> c_int {
    let rec = cursor::follow(
        ld,
        |r| matches!(r, Record::ConnectAgain { fd: f, .. } if *f == fd),
        || format!("a second connect on fd {fd} to {remote} (to learn how the first ended)"),
    );
    let Record::ConnectAgain { err, .. } = rec else {
        unreachable_record(ld)
    };
    finish_connect(ld, fd, &rec);
    match err {
        None => 0,
        Some(e) => {
            sys::set_errno(e.0);
            -1
        }
    }
}

/// `getsockopt(fd, SOL_SOCKET, SO_ERROR, …)`: the recorded error. The real call is made too
/// (reading SO_ERROR clears the socket's pending error, as it did in the record).
///
/// # Safety
/// `val`/`len` as for getsockopt(2).
pub unsafe fn socket_error(
    ld: &mut Ld,
    fd: c_int,
    val: *mut libc::c_void,
    len: *mut socklen_t,
) -> c_int {
    let rec = cursor::follow(
        ld,
        |r| matches!(r, Record::SocketError { fd: f, .. } if *f == fd),
        || format!("getsockopt(SO_ERROR) on fd {fd}"),
    );
    let Record::SocketError { err, .. } = rec else {
        unreachable_record(ld)
    };
    // SAFETY: the program's arguments, valid for getsockopt(2) as the caller promises.
    let r = unsafe { real::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, val, len) };
    // SAFETY: as the caller promises; after a successful call `len` says how much `val` holds.
    if r != 0 || unsafe { read_int(val, len) }.is_none() {
        let e = Errno(sys::errno());
        cursor::diverge(
            ld,
            &format!("getsockopt(SO_ERROR) on fd {fd} that failed ({e}) or returned no int"),
        );
    }
    let value = err.map_or(0, |e| e.0);
    // SAFETY: the call succeeded with at least an int's room in `val` (checked above).
    unsafe { std::ptr::write_unaligned(val as *mut c_int, value) };
    cursor::advance(ld, &rec);
    0
}

/// Makes the kernel refuse `fd`'s non-blocking connect for real, as the record's was refused:
/// it connects to a loopback port of the LD's that is bound but never listens. Every later
/// observation (`out|err|hup`, `SO_ERROR`, a second connect's `ECONNREFUSED`) is then the
/// kernel's own.
fn refuse(ld: &mut Ld, fd: c_int, family: c_int) {
    let Some((target, target_len)) = refuser(ld, family) else {
        cursor::diverge(
            ld,
            &format!(
                "a connect on fd {fd} that the record saw refused: ddbx could not make a loopback port to refuse it"
            ),
        );
    };
    // SAFETY: `target` is a sockaddr_storage holding `target_len` bytes of an address.
    let r = unsafe { real::connect(fd, (&raw const target).cast(), target_len) };
    let e = sys::errno();
    if r == 0 || (e != libc::EINPROGRESS && e != libc::ECONNREFUSED) {
        cursor::diverge(
            ld,
            &format!(
                "a connect on fd {fd} that the record saw refused, but which {}",
                if r == 0 {
                    "connected".to_string()
                } else {
                    format!("failed with {}", Errno(e))
                }
            ),
        );
    }
}

/// The address of the LD's refusing port for an address `family` (made on first use).
fn refuser(ld: &mut Ld, family: c_int) -> Option<(libc::sockaddr_storage, socklen_t)> {
    let v6 = family == libc::AF_INET6;
    let replay = ld.replay.as_mut()?;
    let slot = &mut replay.refusers[usize::from(v6)];
    if *slot < 0 {
        *slot = sys::bound_loopback(v6);
        if *slot < 0 {
            return None;
        }
        *slot = fds::mark_ours(sys::move_high(*slot, fds::HIGH_FD));
    }
    // SAFETY: zeroed sockaddr_storage is a valid (empty) address buffer.
    let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as socklen_t;
    // SAFETY: getsockname writes at most `len` bytes into our buffer.
    let r = unsafe { real::getsockname(*slot, (&raw mut st).cast(), &mut len) };
    (r == 0).then_some((st, len))
}

/// Connects `fd` to `addr` for real, blocking, retrying until the peer listens (it may not be
/// up yet); the program's blocking mode is restored afterwards.
///
/// # Safety
/// `addr`/`len` as for connect(2).
unsafe fn connect_when_listening(
    ld: &mut Ld,
    fd: c_int,
    addr: *const sockaddr,
    len: socklen_t,
    remote: &str,
) {
    let flags = sys::fcntl(fd, libc::F_GETFL, 0);
    if flags & libc::O_NONBLOCK != 0 {
        sys::fcntl(
            fd,
            libc::F_SETFL,
            (flags & !libc::O_NONBLOCK) as libc::c_long,
        );
    }
    let mut backoff = Backoff::new();
    loop {
        // SAFETY: the program's address, as the caller promises.
        let r = unsafe { real::connect(fd, addr, len) };
        let e = sys::errno();
        if r == 0 || e == libc::EISCONN {
            break;
        }
        match e {
            libc::EINTR => {}
            libc::ECONNREFUSED | libc::ENOENT | libc::EAGAIN => {
                crate::baton::put_down_for(|| backoff.pause())
            }
            _ => {
                let name = Errno(e);
                cursor::diverge(
                    ld,
                    &format!("a connect on fd {fd} to {remote} that failed with {name}"),
                );
            }
        }
    }
    if flags & libc::O_NONBLOCK != 0 {
        sys::fcntl(fd, libc::F_SETFL, flags as libc::c_long);
    }
}

/// The process lets go of the connection on `fd`, which `call` closes (close, close_range, a
/// dup2 over it, an exec): the history's `Close` event. A halting replay may hold the process
/// before it, so that its peer does not see the end of the stream before the cut.
pub fn close(ld: &mut Ld, fd: c_int, call: impl FnOnce() -> c_int) -> c_int {
    let expected = Record::Close { fd };
    cursor::follow(
        ld,
        |r| *r == expected,
        || format!("a close of fd {fd} (this process's last fd on its connection)"),
    );
    let r = call();
    let err = sys::errno();
    cursor::advance(ld, &expected);
    sys::set_errno(err);
    r
}

/// `shutdown(fd, how)`, made by `call`: it must come where the history has it, and gives what
/// the record got.
pub fn shutdown(ld: &mut Ld, fd: c_int, how: Shut, call: impl FnOnce() -> c_int) -> c_int {
    let rec = cursor::follow(
        ld,
        |r| matches!(r, Record::Shutdown { fd: f, how: h, .. } if *f == fd && *h == how),
        || format!("shutdown({fd}, {how:?})"),
    );
    let Record::Shutdown { err, .. } = rec else {
        unreachable_record(ld)
    };
    call();
    cursor::advance(ld, &rec);
    match err {
        None => 0,
        Some(e) => {
            sys::set_errno(e.0);
            -1
        }
    }
}

/// Before a stream socketpair: its `Pair` event must come now (a halting replay may hold the
/// process here).
pub fn before_pair(ld: &mut Ld) {
    cursor::follow(
        ld,
        |r| matches!(r, Record::Pair { .. }),
        || "a stream socketpair".to_string(),
    );
}

/// Before a pipe of the session: its `Pipe` event must come now.
pub fn before_pipe(ld: &mut Ld) {
    cursor::follow(
        ld,
        |r| matches!(r, Record::Pipe { .. }),
        || "a pipe".to_string(),
    );
}

/// The socketpair (or pipe) made the pair `observed`.
pub fn after_pair(ld: &mut Ld, observed: &Record) {
    cursor::advance(ld, observed);
}

/// A dup of a channel end made `observed` (its `Dup` event; the dup is made already).
pub fn dup(ld: &mut Ld, observed: &Record) {
    cursor::follow_exactly(ld, observed);
    cursor::advance(ld, observed);
}
