//! Replay of accept: the recorded peer's connection, whatever order connections arrive in.
//!
//! Connections that arrive early are kept (at high fd numbers, out of the program's way) and
//! handed out by the later accept they belong to: the paper's dummy accept.

use super::io::unreachable_record;
use crate::ld::{HIGH_FD, Ld};
use crate::{fds, real, sys};
use ddbx_wire::history::Call;
use ddbx_wire::proto::{GdToLd, LdToGd};
use ddbx_wire::{ActorId, Record};
use libc::{c_int, sockaddr, socklen_t};

/// An accept on listening socket `fd` with accept4 `flags`.
///
/// # Safety
/// `addr`/`len` as for accept4.
pub unsafe fn accept(
    ld: &mut Ld,
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> c_int {
    ld.in_wait = true;
    let rec = ld.follow(
        |r| match r {
            Record::Accept { fd: f, .. } => *f == fd,
            Record::Fail {
                call: Call::Accept,
                fd: f,
                ..
            } => *f == fd,
            _ => false,
        },
        || format!("an accept on fd {fd}"),
    );
    ld.in_wait = false;
    let new_fd = match rec {
        Record::Fail { err, .. } => {
            ld.advance(&rec);
            sys::set_errno(err.0);
            return -1;
        }
        Record::Accept { new_fd, .. } => new_fd,
        _ => unreachable_record(ld),
    };
    let event = ld.events() + 1;
    let expected = ld
        .replay
        .as_ref()
        .and_then(|r| r.accepts.iter().find(|a| a.event == event))
        .map(|a| (a.peer, a.peer_event));
    let got = match expected {
        Some(peer) => take_connection_from(ld, fd, peer),
        // A peer outside the session: the LD plays it.
        None => super::external::open(ld, None, false),
    };
    if got < 0 {
        let err = sys::errno();
        ld.diverge(&format!("an accept on fd {fd} that failed (errno {err})"));
    }
    // The program's flags: non-blocking and close-on-exec as it asked.
    let fl = sys::fcntl(got, libc::F_GETFL, 0);
    let fl = if flags & libc::SOCK_NONBLOCK != 0 {
        fl | libc::O_NONBLOCK
    } else {
        fl & !libc::O_NONBLOCK
    };
    sys::fcntl(got, libc::F_SETFL, fl as libc::c_long);
    let cloexec = if flags & libc::SOCK_CLOEXEC != 0 {
        libc::FD_CLOEXEC
    } else {
        0
    };
    sys::fcntl(got, libc::F_SETFD, cloexec as libc::c_long);
    fds::set(
        got,
        fds::STREAM
            | if flags & libc::SOCK_NONBLOCK != 0 {
                fds::NONBLOCK
            } else {
                0
            },
    );
    if got != new_fd {
        ld.diverge(&format!(
            "an accept on fd {fd} that returned fd {got} where the record had fd {new_fd}"
        ));
    }
    let external = super::external::is_external(ld, got);
    if !addr.is_null() && !len.is_null() && !external {
        // SAFETY: the program's buffers, as for accept4.
        unsafe { real::getpeername(got, addr, len) };
    }
    if external && let Record::Accept { remote, .. } = &rec {
        // The recorded peer's address, as the program saw it.
        // SAFETY: the program's buffers, as for accept4.
        unsafe { fill_addr(remote, addr, len) };
    }
    let observed = if external {
        rec.clone()
    } else {
        crate::record::accept(fd, got, 0)
    };
    ld.advance(&observed);
    got
}

/// Writes a recorded `ip:port` address into an accept's address buffer.
///
/// # Safety
/// `addr`/`len` as for accept4 (null allowed).
unsafe fn fill_addr(text: &str, addr: *mut sockaddr, len: *mut socklen_t) {
    if addr.is_null() || len.is_null() {
        return;
    }
    let Ok(parsed) = text.parse::<std::net::SocketAddr>() else {
        return;
    };
    // SAFETY: writing at most *len bytes into the program's buffer.
    unsafe {
        let room = *len as usize;
        match parsed {
            std::net::SocketAddr::V4(v4) => {
                let mut sa: libc::sockaddr_in = std::mem::zeroed();
                sa.sin_family = libc::AF_INET as libc::sa_family_t;
                sa.sin_port = v4.port().to_be();
                sa.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
                let size = std::mem::size_of::<libc::sockaddr_in>();
                std::ptr::copy_nonoverlapping(
                    &sa as *const _ as *const u8,
                    addr as *mut u8,
                    size.min(room),
                );
                *len = size as socklen_t;
            }
            std::net::SocketAddr::V6(v6) => {
                let mut sa: libc::sockaddr_in6 = std::mem::zeroed();
                sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sa.sin6_port = v6.port().to_be();
                sa.sin6_addr.s6_addr = v6.ip().octets();
                let size = std::mem::size_of::<libc::sockaddr_in6>();
                std::ptr::copy_nonoverlapping(
                    &sa as *const _ as *const u8,
                    addr as *mut u8,
                    size.min(room),
                );
                *len = size as socklen_t;
            }
        }
    }
}

/// Accepts until the connection made by `peer`'s connect event arrives; keeps the others.
fn take_connection_from(ld: &mut Ld, fd: c_int, peer: (ActorId, u64)) -> c_int {
    loop {
        if let Some(replay) = ld.replay.as_mut()
            && let Some(i) = replay
                .stash
                .iter()
                .position(|(_, l, p)| *l == fd && *p == Some(peer))
        {
            let (kept, _, _) = replay.stash.remove(i);
            fds::forget_ours(kept);
            // The lowest free fd, as the real accept would have given.
            let got = sys::fcntl(kept, libc::F_DUPFD, 0);
            sys::close(kept);
            return got;
        }
        let got = accept_any(fd);
        if got < 0 {
            return got;
        }
        let who = who_is(ld, got);
        if who == Some(peer) {
            return got;
        }
        let kept = sys::move_high(got, HIGH_FD + 100);
        fds::set(kept, fds::OURS);
        if let Some(replay) = ld.replay.as_mut() {
            replay.stash.push((kept, fd, who));
        }
    }
}

/// Waits for and accepts any connection on `fd` (close-on-exec, blocking mode unchanged).
fn accept_any(fd: c_int) -> c_int {
    loop {
        // Only accept when a connection is pending: on a blocking listener, accept4 would
        // otherwise block in the kernel (SOCK_NONBLOCK is for the new socket only).
        if sys::poll_one(fd, libc::POLLIN, 1000) <= 0 {
            continue;
        }
        // SAFETY: null address buffers are allowed.
        let got = unsafe {
            real::accept4(
                fd,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            )
        };
        if got >= 0 {
            return got;
        }
        let err = sys::errno();
        if err != libc::EAGAIN && err != libc::EINTR && err != libc::ECONNABORTED {
            return -1;
        }
    }
}

/// Asks the GD which actor's connect made this connection.
fn who_is(ld: &mut Ld, fd: c_int) -> Option<(ActorId, u64)> {
    let local = fds::socket_addr(fd, false);
    let remote = fds::socket_addr(fd, true);
    let peer_pid = if local.starts_with("unix:") {
        fds::peer_pid(fd)
    } else {
        None
    };
    match ld.request(&LdToGd::WhoIs {
        local,
        remote,
        peer_pid,
    }) {
        Some(GdToLd::Peer { peer }) => peer,
        _ => None,
    }
}
