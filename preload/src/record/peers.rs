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
//!   kept, and the question is asked again at the next send or receive; but a connection to
//!   this host (the same address at both ends) on a port where a recorded process listens
//!   (its note `<runtime>/ep/listen:<port>`, made at its listen) is to a recorded process
//!   from the connect on: the accept will be one of the session's.
//!
//! A kept byte that was not needed is dropped by the pass at the end of the record
//! (`supervisor/src/session/strip.rs`), which runs only when some history kept bytes. The
//! note is removed when this process lets go of the connection (its last fd on it, a `Close`
//! event) and at its exit, so that an outside peer that reuses the address pair later in the
//! session is not taken for a recorded one (a listener's note goes when the process closes its
//! last fd on the listening socket, or exits); a process killed by SIGKILL leaves its notes
//! (the address pair, or the port, would have to be reused by an outside peer within the same
//! session), as do a listening socket closed by exec or dup2 and a connection closed by
//! close_range (those paths forget the fd without a note being looked for). Removing
//! a note another process still needs (a fork shares the socket) only keeps bytes: the pass
//! drops them.
//!
//! Unix stream sockets, and optimal tracing (whose side channels decide), are left as they
//! were: bytes kept, the pass decides.
//!
//! In a live run (`ddbx run`) a connection's note is as long as its maker's pid (a sparse
//! file: nothing is written), so that the other end can name the process it talks to
//! (`preload/src/ld/live.rs`).

use crate::fds::{self, inet};
use crate::ld::Ld;
use libc::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// `<runtime>/ep` was made by this process image (or found).
static DIR_MADE: AtomicBool = AtomicBool::new(false);

/// Some fd of this process (or of the parent it was forked from) has a note.
static NOTED: AtomicBool = AtomicBool::new(false);

/// The listener notes this process made: `pid << 16 | port` (0: free). A forked child inherits
/// the listening socket and this table, but not the notes: only their maker removes them (a
/// child that closes its copy, as prefork servers' children do, leaves the parent listening).
static LISTENERS: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

/// `pid << 16 | port` of this process's note of a listener on `port`.
fn listener_key(port: u16) -> u64 {
    (crate::sys::getpid() as u32 as u64) << 16 | u64::from(port)
}

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
    if exists(ld, &remote, &local) || to_recorded_listener(ld, &local, &remote) {
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

/// After a listen(2) on `fd` that worked: notes that a recorded process listens on its TCP
/// port, so that a connection made to it from this host is known to be between recorded
/// processes from its connect on (before the accept).
pub fn listening(ld: &Ld, fd: c_int) {
    if ld.trace.is_some() || fds::kind(fd) & fds::ENDPOINT_NOTED != 0 {
        return;
    }
    let e = crate::sys::errno();
    let local = fds::socket_addr(fd, false);
    let free = LISTENERS.iter().find(|k| k.load(Ordering::Relaxed) == 0);
    if inet(&local)
        && let Some(port) = port_of(&local)
        && let Some(free) = free
    {
        note_at(ld, fd, &listener(&local));
        free.store(listener_key(port), Ordering::Relaxed);
    }
    crate::sys::set_errno(e);
}

fn port_of(addr: &str) -> Option<u16> {
    addr.rsplit_once(':')?.1.parse().ok()
}

/// Before `fd` is closed and forgotten (the program's close, an exec): a connection's or a
/// listening socket's note goes when this process closes its last fd on it.
pub fn closing(ld: &Ld, fd: c_int) {
    let kind = fds::known_kind(fd);
    if kind & fds::ENDPOINT_NOTED != 0 && fds::is_last_ref(fd) {
        let e = crate::sys::errno();
        letting_go(ld, fd);
        crate::sys::set_errno(e);
    }
}

/// Before this process lets go of `fd` (its last fd on the connection, or on the listening
/// socket): removes its note.
pub fn letting_go(ld: &Ld, fd: c_int) {
    let kind = fds::known_kind(fd);
    if kind & fds::ENDPOINT_NOTED == 0 {
        return;
    }
    let local = fds::socket_addr(fd, false);
    let (from, to) = if kind & fds::LISTENING != 0 {
        // Only the process that made the note removes it.
        let key = port_of(&local).map(listener_key);
        let Some(mine) = LISTENERS
            .iter()
            .find(|k| Some(k.load(Ordering::Relaxed)) == key)
        else {
            return;
        };
        mine.store(0, Ordering::Relaxed);
        (listener(&local), String::new())
    } else {
        (local, fds::socket_addr(fd, true))
    };
    if let Some(path) = path(ld, &from, &to) {
        let mut buf = [0u8; 512];
        if let Some(p) = crate::sys::cstr(&path, &mut buf) {
            // SAFETY: a NUL-terminated path.
            unsafe { libc::syscall(libc::SYS_unlinkat, libc::AT_FDCWD, p, 0) };
        }
    }
    fds::update(fd, 0, fds::ENDPOINT_NOTED);
}

/// At exit: removes the notes of every connection this process still holds (none to look
/// for unless it, or the parent it was forked from, made one: the fd table is not scanned).
pub fn exiting(ld: &Ld) {
    if !NOTED.load(Ordering::Relaxed) {
        return;
    }
    for fd in fds::with_bits(fds::ENDPOINT_NOTED) {
        letting_go(ld, fd);
    }
}

fn note(ld: &Ld, fd: c_int, local: &str, remote: &str) {
    let mut name = String::with_capacity(local.len() + remote.len() + 1);
    name.push_str(local);
    name.push('>');
    name.push_str(remote);
    note_at(ld, fd, &name);
}

/// Makes the note `<runtime>/ep/<name>` for `fd`.
fn note_at(ld: &Ld, fd: c_int, name: &str) {
    let Some(path) = path(ld, name, "") else {
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
    if r == 0 && ld.live.is_some() {
        // A live run: the note's size is this process's pid (`peer_pid`); the file stays
        // sparse, nothing is written.
        // SAFETY: a NUL-terminated path.
        unsafe { libc::syscall(libc::SYS_truncate, p, crate::sys::getpid() as libc::off_t) };
    }
    if r == 0 || crate::sys::errno() == libc::EEXIST {
        fds::update(fd, fds::ENDPOINT_NOTED, 0);
        NOTED.store(true, Ordering::Relaxed);
    }
}

/// Whether the connection from `local` to `remote` goes to this host (same address at both
/// ends) on a port where a recorded process listens.
fn to_recorded_listener(ld: &Ld, local: &str, remote: &str) -> bool {
    let host = |a: &str| a.rsplit_once(':').map(|(h, _)| h.to_string());
    host(local).is_some() && host(local) == host(remote) && exists_at(ld, &listener(remote))
}

/// The name of the note of a listener on `addr`'s port.
fn listener(addr: &str) -> String {
    let port = addr.rsplit_once(':').map_or("", |(_, p)| p);
    format!("listen:{port}")
}

fn exists(ld: &Ld, local: &str, remote: &str) -> bool {
    let mut name = String::with_capacity(local.len() + remote.len() + 1);
    name.push_str(local);
    name.push('>');
    name.push_str(remote);
    exists_at(ld, &name)
}

fn exists_at(ld: &Ld, name: &str) -> bool {
    let Some(path) = path(ld, name, "") else {
        return false;
    };
    let mut buf = [0u8; 512];
    let Some(p) = crate::sys::cstr(&path, &mut buf) else {
        return false;
    };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::syscall(libc::SYS_faccessat, libc::AT_FDCWD, p, libc::F_OK, 0) == 0 }
}

/// `<runtime>/ep/<from>><to>`, or `<runtime>/ep/<from>` when `to` is empty.
fn path(ld: &Ld, from: &str, to: &str) -> Option<Vec<u8>> {
    ld.endpoint_note(from, to)
}
