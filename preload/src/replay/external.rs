//! Replay of a peer outside the session (a client that was not under ddbx, a server it
//! connected to): the LD plays it.
//!
//! The program gets one end of a socketpair where the record had the real connection; the LD
//! keeps the other end. Before each recorded receive (or a ready set that needs the next one)
//! it writes the recorded bytes into its end, closes it where the record saw the end of the
//! stream, and reads back what the program sends, which must be what it sent in the record.

use super::cursor;
use crate::ld::{Ld, OutsidePeer};
use crate::{fds, sys};
use ddbx_wire::Record;
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
