//! Whether the peer of a TCP connection is a recorded process, decided while recording, so
//! that the bytes of a channel between two recorded processes are never copied into a
//! history (replay regenerates them from the sender); only an outside peer's bytes are input.
//!
//! Each recorded end notes its endpoint as an empty file `<runtime dir>/ep/<local>><remote>`
//! (the session's runtime directory, beside the GD's socket), at its connect or accept, or
//! at its first send or receive when a non-blocking connect had no peer address yet: always
//! before the program can send a byte on it. The other end looks for `<remote>><local>`
//! (its own addresses, mirrored):
//!
//! * found: the peer is recorded, for good ([`fds::PEER_RECORDED`]);
//! * not found after a receive that returned bytes: the peer sent them, so it would have
//!   noted its endpoint before, had it been recorded: an outside peer, for good
//!   ([`fds::PEER_OUTSIDE`]);
//! * not found before that (a send before the peer accepted): not known yet, the bytes are
//!   kept, and the question is asked again at the next send or receive.
//!
//! A kept byte that was not needed is dropped by the pass at the end of the record
//! (`supervisor/src/session/strip.rs`), which runs only when some history kept bytes. The
//! note is removed when this process lets go of the connection (its last fd on it, a `Close`
//! event) and at its exit, so that an outside peer that reuses the address pair later in the
//! session is not taken for a recorded one; a process killed by SIGKILL leaves its notes (the
//! address pair would have to be reused by an outside peer within the same session). Removing
//! a note another process still needs (a fork shares the socket) only keeps bytes: the pass
//! drops them.
//!
//! Unix stream sockets, and optimal tracing (whose side channels decide), are left as they
//! were: bytes kept, the pass decides.

use crate::fds;
use crate::ld::Ld;
use libc::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

/// `<runtime>/ep` was made by this process image (or found).
static DIR_MADE: AtomicBool = AtomicBool::new(false);

/// Whether the bytes of a send (`received == false`) or of a receive that returned some
/// (`received == true`) on `fd` are to be kept in the history.
pub fn keeps_bytes(ld: &Ld, fd: c_int, received: bool) -> bool {
    let kind = fds::kind(fd);
    if kind & fds::PAIRED != 0 || kind & fds::PEER_RECORDED != 0 {
        return false;
    }
    if kind & fds::PEER_OUTSIDE != 0 || ld.trace.is_some() {
        return true;
    }
    let (local, remote) = (fds::socket_addr(fd, false), fds::socket_addr(fd, true));
    if remote == "?" {
        // No peer address yet (asked again next time).
        return true;
    }
    if !inet(&local) || !inet(&remote) {
        // A Unix socket: the pass decides.
        fds::update(fd, fds::PEER_OUTSIDE, 0);
        return true;
    }
    if kind & fds::ENDPOINT_NOTED == 0 {
        note(ld, fd, &local, &remote);
    }
    if exists(ld, &remote, &local) {
        fds::update(fd, fds::PEER_RECORDED, 0);
        return false;
    }
    if received {
        fds::update(fd, fds::PEER_OUTSIDE, 0);
    }
    true
}

/// After a connect or an accept that made connection `fd`: notes its endpoint, if its
/// addresses are known already (a TCP socket; full record only).
pub fn connected(ld: &Ld, fd: c_int) {
    if ld.trace.is_some() || fds::kind(fd) & fds::ENDPOINT_NOTED != 0 {
        return;
    }
    let (local, remote) = (fds::socket_addr(fd, false), fds::socket_addr(fd, true));
    if inet(&local) && inet(&remote) {
        note(ld, fd, &local, &remote);
    }
}

/// Before a send on `fd`: notes its endpoint if a non-blocking connect could not yet (the
/// note must come before the peer can receive a byte).
pub fn before_send(ld: &Ld, fd: c_int) {
    let undecided = fds::ENDPOINT_NOTED | fds::PEER_OUTSIDE | fds::PEER_RECORDED | fds::PAIRED;
    if fds::kind(fd) & undecided == 0 {
        connected(ld, fd);
    }
}

/// Before this process lets go of `fd` (its last fd on the connection): removes its note.
pub fn letting_go(ld: &Ld, fd: c_int) {
    if fds::kind(fd) & fds::ENDPOINT_NOTED == 0 {
        return;
    }
    let (local, remote) = (fds::socket_addr(fd, false), fds::socket_addr(fd, true));
    if let Some(path) = path(ld, &local, &remote) {
        let mut buf = [0u8; 512];
        if let Some(p) = crate::sys::cstr(&path, &mut buf) {
            // SAFETY: a NUL-terminated path.
            unsafe { libc::syscall(libc::SYS_unlinkat, libc::AT_FDCWD, p, 0) };
        }
    }
    fds::update(fd, 0, fds::ENDPOINT_NOTED);
}

/// At exit: removes the notes of every connection this process still holds.
pub fn exiting(ld: &Ld) {
    for fd in fds::with_bits(fds::ENDPOINT_NOTED) {
        letting_go(ld, fd);
    }
}

fn note(ld: &Ld, fd: c_int, local: &str, remote: &str) {
    let Some(path) = path(ld, local, remote) else {
        return;
    };
    let mut buf = [0u8; 512];
    let Some(p) = crate::sys::cstr(&path, &mut buf) else {
        return;
    };
    if !DIR_MADE.load(Ordering::Relaxed) {
        let dir = &path[..path.iter().rposition(|b| *b == b'/').unwrap_or(0)];
        let mut dbuf = [0u8; 512];
        if let Some(d) = crate::sys::cstr(dir, &mut dbuf) {
            // SAFETY: a NUL-terminated path.
            unsafe { libc::syscall(libc::SYS_mkdirat, libc::AT_FDCWD, d, 0o700) };
        }
        DIR_MADE.store(true, Ordering::Relaxed);
    }
    // SAFETY: a NUL-terminated path; an empty regular file, no fd.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mknodat,
            libc::AT_FDCWD,
            p,
            libc::S_IFREG | 0o600,
            0,
        )
    };
    if r == 0 || crate::sys::errno() == libc::EEXIST {
        fds::update(fd, fds::ENDPOINT_NOTED, 0);
    }
}

fn exists(ld: &Ld, local: &str, remote: &str) -> bool {
    let Some(path) = path(ld, local, remote) else {
        return false;
    };
    let mut buf = [0u8; 512];
    let Some(p) = crate::sys::cstr(&path, &mut buf) else {
        return false;
    };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::syscall(libc::SYS_faccessat, libc::AT_FDCWD, p, libc::F_OK, 0) == 0 }
}

/// `<runtime>/ep/<from>><to>`.
fn path(ld: &Ld, from: &str, to: &str) -> Option<Vec<u8>> {
    let mut path = ld.runtime_dir()?.to_vec();
    path.extend_from_slice(b"/ep/");
    path.extend_from_slice(from.as_bytes());
    path.push(b'>');
    path.extend_from_slice(to.as_bytes());
    Some(path)
}

/// An IPv4 (`1.2.3.4:5`) or IPv6 (`[::1]:5`) address.
fn inet(a: &str) -> bool {
    a.starts_with(|c: char| c.is_ascii_digit() || c == '[')
}
