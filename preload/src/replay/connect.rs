//! Replay of connect: a recorded refusal is refused; a recorded success waits until the peer
//! listens (retrying while it is not up yet), then tells the GD its address so that the
//! acceptor can recognise it.

use super::Backoff;
use super::io::unreachable_record;
use crate::ld::Ld;
use crate::{fds, real, sys};
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
    let rec = ld.follow(
        |r| matches!(r, Record::Connect { fd: f, .. } if *f == fd),
        || format!("a connect on fd {fd} to {remote}"),
    );
    let Record::Connect { err, .. } = rec else {
        unreachable_record(ld)
    };
    if let Some(e) = err
        && e != Errno::EINPROGRESS
    {
        let observed = crate::record::connect(fd, remote, -1, e.0);
        ld.advance(&observed);
        sys::set_errno(e.0);
        return -1;
    }
    let event = ld.events() + 1;
    let external = ld
        .replay
        .as_ref()
        .is_some_and(|r| r.external_connects.contains(&event));
    if external {
        // A server outside the session: the LD plays it.
        let nonblock = sys::fcntl(fd, libc::F_GETFL, 0) & libc::O_NONBLOCK != 0;
        super::external::open(ld, Some(fd), nonblock);
        ld.advance(&rec);
        return match err {
            None => 0,
            Some(e) => {
                sys::set_errno(e.0);
                -1
            }
        };
    }
    // Connect for real, blocking, until the peer is there.
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
        // SAFETY: as for connect.
        let r = unsafe { real::connect(fd, addr, len) };
        let e = sys::errno();
        if r == 0 || e == libc::EISCONN {
            break;
        }
        match e {
            libc::EINTR => {}
            libc::ECONNREFUSED | libc::ENOENT | libc::EAGAIN => backoff.pause(),
            _ => {
                let name = Errno(e);
                ld.diverge(&format!(
                    "a connect on fd {fd} to {remote} that failed with {name}"
                ));
            }
        }
    }
    if flags & libc::O_NONBLOCK != 0 {
        sys::fcntl(fd, libc::F_SETFL, flags as libc::c_long);
    }
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
    };
    ld.advance(&observed);
    match err {
        None => 0,
        Some(e) => {
            sys::set_errno(e.0);
            -1
        }
    }
}
