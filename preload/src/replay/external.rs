//! Replay of a peer outside the session (a client that was not under ddbx, a server it
//! connected to): the LD plays it.
//!
//! For a client outside, the LD itself connects to the program's listening socket
//! ([`make_peer`]) as soon as a ready set or the accept needs the connection: the listener is
//! then readable for real (poll, select, epoll, edge-triggered too), and the accept returns the
//! connection, with the recorded peer's address. For a server outside, the program's socket is
//! replaced by one end of a socketpair (also the fallback when the listener cannot be
//! connected to). Either way the LD keeps the other end. Before each recorded receive (or a
//! ready set that needs the next one) it writes the recorded bytes into its end, closes it
//! where the record saw the end of the stream, and reads back what the program sends, which
//! must be what it sent in the record.

use super::cursor;
use crate::ld::{Ld, OutsidePeer, PendingPeer};
use crate::{fds, real, sys};
use ddbx_wire::Record;
use ddbx_wire::proto::LdToGd;
use libc::c_int;

/// Whether `fd` is a connection to an outside peer played by the LD.
pub fn is_outside(ld: &Ld, fd: c_int) -> bool {
    ld.replay
        .as_ref()
        .is_some_and(|r| r.outside_peers.iter().any(|p| p.fd == fd))
}

/// A new played connection. `at`: make it this fd (a connect replaces the program's socket);
/// `None`: the lowest free fd (an accept). Returns the program's fd, or -1.
pub fn open(ld: &mut Ld, at: Option<c_int>, nonblock: bool) -> c_int {
    let mut pair = [0 as c_int; 2];
    // SAFETY: a plain socketpair into our array.
    let r = unsafe {
        libc::syscall(
            libc::SYS_socketpair,
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            pair.as_mut_ptr(),
        )
    };
    if r != 0 {
        return -1;
    }
    let ld_end = fds::mark_ours(sys::move_high(pair[1], fds::OUTSIDE_PEER_FDS));
    let program = match at {
        Some(fd) => {
            // SAFETY: dup3 of our new fd onto the program's own socket fd, replacing it (no
            // memory is involved).
            unsafe { libc::syscall(libc::SYS_dup3, pair[0], fd, 0) };
            sys::close(pair[0]);
            fd
        }
        // socketpair took the lowest free fd for this end: what accept would have returned.
        None => pair[0],
    };
    if nonblock {
        let fl = sys::fcntl(program, libc::F_GETFL, 0);
        sys::fcntl(
            program,
            libc::F_SETFL,
            (fl | libc::O_NONBLOCK) as libc::c_long,
        );
    }
    fds::set(
        program,
        fds::STREAM | if nonblock { fds::NONBLOCK } else { 0 },
    );
    forget(ld, program);
    if let Some(r) = ld.replay.as_mut() {
        r.outside_peers.push(OutsidePeer {
            fd: program,
            ld_end,
            fed: Vec::new(),
        });
    }
    program
}

/// Makes the connection that accept `event` on `listener` returns, standing for the outside
/// client the record accepted there: the LD connects to the listener (once). The GD hears of
/// it as a connect of this actor at `event`, so that another process sharing the listener can
/// name it (and hand it over). False if the listener cannot be connected to (an unnamed Unix
/// socket): the accept then falls back to a socketpair.
pub fn make_peer(ld: &mut Ld, listener: c_int, event: u64) -> bool {
    let Some(replay) = ld.replay.as_ref() else {
        return false;
    };
    if replay.pending_peers.iter().any(|p| p.event == event) {
        return true;
    }
    let Some(end) = connect_to_listener(listener) else {
        return false;
    };
    let ld_end = fds::mark_ours(sys::move_high(end, fds::OUTSIDE_PEER_FDS));
    let local = fds::socket_addr(ld_end, false);
    let note = LdToGd::Connected {
        actor: ld.actor,
        event,
        local: local.clone(),
        remote: fds::socket_addr(ld_end, true),
    };
    ld.send(&note);
    if let Some(replay) = ld.replay.as_mut() {
        replay.pending_peers.push(PendingPeer {
            listener,
            event,
            ld_end,
            local,
        });
    }
    true
}

/// A new socket connected to `listener`'s address (a wildcard address becomes loopback), or
/// `None`.
fn connect_to_listener(listener: c_int) -> Option<c_int> {
    // SAFETY: zeroed sockaddr_storage is a valid (empty) address buffer.
    let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: getsockname writes at most `len` bytes into our buffer.
    if unsafe { real::getsockname(listener, (&raw mut st).cast(), &mut len) } != 0 {
        return None;
    }
    let family = c_int::from(st.ss_family);
    match family {
        libc::AF_INET => {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let a = unsafe { &mut *(&raw mut st).cast::<libc::sockaddr_in>() };
            if a.sin_addr.s_addr == 0 {
                a.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            }
        }
        libc::AF_INET6 => {
            // SAFETY: an AF_INET6 address is a sockaddr_in6.
            let a = unsafe { &mut *(&raw mut st).cast::<libc::sockaddr_in6>() };
            if a.sin6_addr.s6_addr == [0; 16] {
                a.sin6_addr.s6_addr = std::net::Ipv6Addr::LOCALHOST.octets();
            }
        }
        // An unnamed Unix socket has no address to connect to.
        libc::AF_UNIX if len as usize > std::mem::size_of::<libc::sa_family_t>() => {}
        _ => return None,
    }
    // SAFETY: plain syscalls on the address we just read and fixed.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_socket,
            family,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
        ) as c_int;
        if fd < 0 {
            return None;
        }
        loop {
            let r = libc::syscall(libc::SYS_connect, fd, (&raw const st).cast::<u8>(), len);
            if r == 0 {
                return Some(fd);
            }
            if sys::errno() != libc::EINTR {
                sys::close(fd);
                return None;
            }
        }
    }
}

/// The accept event whose made connection `conn` (just accepted on `listener`) is, if it is
/// one the LD made: its peer's address is the LD's end's (or, on a Unix socket, where every
/// client is unnamed, its peer is this very process: the oldest one made).
pub fn made_for(ld: &Ld, listener: c_int, conn: c_int) -> Option<u64> {
    let replay = ld.replay.as_ref()?;
    let mut made = replay
        .pending_peers
        .iter()
        .filter(|p| p.listener == listener);
    let remote = fds::socket_addr(conn, true);
    if remote.starts_with("unix:") {
        if fds::peer_pid(conn) != Some(sys::getpid()) {
            return None;
        }
        return made.next().map(|p| p.event);
    }
    made.find(|p| p.local == remote).map(|p| p.event)
}

/// The accept of `event` returned `fd`, the program's end of a connection the LD made: from
/// now on the LD plays its peer.
pub fn adopt(ld: &mut Ld, fd: c_int, event: u64) {
    forget(ld, fd);
    let Some(r) = ld.replay.as_mut() else { return };
    if let Some(i) = r.pending_peers.iter().position(|p| p.event == event) {
        let peer = r.pending_peers.remove(i);
        r.outside_peers.push(OutsidePeer {
            fd,
            ld_end: peer.ld_end,
            fed: Vec::new(),
        });
    }
}

/// The program closed (or replaced) `fd`: stop playing its peer.
pub fn forget(ld: &mut Ld, fd: c_int) {
    if let Some(r) = ld.replay.as_mut()
        && let Some(i) = r.outside_peers.iter().position(|p| p.fd == fd)
    {
        let peer = r.outside_peers.remove(i);
        fds::forget_ours(peer.ld_end);
        sys::close(peer.ld_end);
    }
}

/// Feeds the bytes of the receive at history index `index` (a `Recv` on `fd`), once.
pub fn feed(ld: &mut Ld, fd: c_int, index: usize) {
    let Some(r) = ld.replay.as_mut() else { return };
    let Some(peer) = r.outside_peers.iter_mut().find(|p| p.fd == fd) else {
        return;
    };
    if peer.fed.contains(&index) {
        return;
    }
    peer.fed.push(index);
    let ld_end = peer.ld_end;
    match r.records.get(index) {
        Some(Record::Recv { n: 0, .. }) => {
            // SAFETY: shutdown of our own socket (no memory is involved).
            unsafe { libc::syscall(libc::SYS_shutdown, ld_end, libc::SHUT_WR) };
        }
        Some(Record::Recv { data: Some(d), .. }) => {
            sys::write_all(ld_end, &d.0);
        }
        Some(Record::Recv { n, data: None, .. }) => {
            let n = *n;
            cursor::diverge(
                ld,
                &format!(
                    "a receive from an outside peer on fd {fd} whose {n} bytes the recording does not hold"
                ),
            );
        }
        _ => {}
    }
}

/// A `Peek` of `n` bytes on `fd`: feed the receives after it that take those bytes (the
/// record kept them there), each once; a peek of the end of the stream feeds up to it.
pub fn feed_peeked(ld: &mut Ld, fd: c_int, n: usize) {
    let Some(r) = ld.replay.as_ref() else { return };
    let from = ld.events() as usize;
    let mut covered = 0u64;
    let mut due = Vec::new();
    for (i, rec) in r.records.iter().enumerate().skip(from) {
        match rec {
            Record::Recv { fd: f, n: m, .. } if *f == fd => {
                due.push(i);
                covered += m;
                if (n > 0 && covered >= n as u64) || *m == 0 {
                    break;
                }
            }
            Record::Accept { new_fd, .. } if *new_fd == fd => break,
            Record::Connect { fd: f, .. } if *f == fd => break,
            _ => {}
        }
    }
    for i in due {
        feed(ld, fd, i);
    }
}

/// A ready set reports `fd` readable: feed its next receive, if the history has one before the
/// fd is used for another connection.
pub fn feed_next(ld: &mut Ld, fd: c_int) {
    let Some(r) = ld.replay.as_ref() else { return };
    let from = ld.events() as usize;
    let next = r
        .records
        .iter()
        .enumerate()
        .skip(from)
        .find_map(|(i, rec)| match rec {
            Record::Recv { fd: f, .. } if *f == fd => Some(Some(i)),
            Record::Accept { new_fd, .. } if *new_fd == fd => Some(None),
            Record::Connect { fd: f, .. } if *f == fd => Some(None),
            _ => None,
        });
    if let Some(Some(i)) = next {
        feed(ld, fd, i);
    }
}

/// The program sent `n` bytes on `fd`: read them from the LD's end; they must be the bytes the
/// record sent (`expected`, when the recording holds them).
pub fn check_sent(ld: &mut Ld, fd: c_int, n: usize, expected: Option<&[u8]>) {
    let Some(ld_end) = ld
        .replay
        .as_ref()
        .and_then(|r| r.outside_peers.iter().find(|p| p.fd == fd))
        .map(|p| p.ld_end)
    else {
        return;
    };
    let mut got = vec![0u8; n];
    let mut have = 0;
    while have < n {
        let r = sys::read(ld_end, &mut got[have..]);
        if r < 0 && sys::errno() == libc::EINTR {
            continue;
        }
        if r <= 0 {
            break;
        }
        have += r as usize;
    }
    got.truncate(have);
    if let Some(expected) = expected
        && got != expected
    {
        let at = got
            .iter()
            .zip(expected)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(expected.len()));
        cursor::diverge(
            ld,
            &format!(
                "{n} bytes sent to an outside peer on fd {fd} that differ from the record's at byte {at}: \
             sent {:?}, recorded {:?}",
                String::from_utf8_lossy(&got[at..(at + 40).min(got.len())]),
                String::from_utf8_lossy(&expected[at..(at + 40).min(expected.len())])
            ),
        );
    }
}
