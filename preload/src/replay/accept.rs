//! Replay of accepts: each returns the connection its record returned, whatever order
//! connections arrive in and whichever process the kernel hands them to.
//!
//! The connection an accept event wants is named by its *connector*: the connecting actor and
//! its connect event (from the replay plan), or, for a client outside the session, this actor
//! and the accept event itself (the LD makes that connection, `external.rs`). The LD takes
//! connections from the listening queue until the one it wants is there ([`obtain`]):
//!
//! * a connection that a later accept of this actor returns is kept (at high fd numbers, out
//!   of the program's way) and handed out by that accept: the paper's dummy accept;
//! * a connection that another actor's accept returns (processes sharing one listening socket:
//!   pre-fork workers) is handed to the GD (`Handover`, `SCM_RIGHTS`), which delivers it to
//!   that actor's LD; the one this LD wants may likewise come from the GD (`Deliver`).
//!
//! A ready set that reports a listening socket readable does not wait for it
//! ([`listener_ready`]): the accept that follows waits for its own connection, and a worker
//! woken with the others whose accept found nothing must be told `in` all the same. For an
//! outside client, the ready set makes the LD's connection, so the listener is readable for
//! real.

use super::cursor::{self, unreachable_record};
use super::external;
use crate::fds::ports::port_of;
use crate::halting;
use crate::ld::{Connector, KeptConnection, Ld};
use crate::record::socket::accepted;
use crate::{fds, real, sys};
use ddbx_wire::history::Call;
use ddbx_wire::proto::{GdToLd, LdToGd};
use ddbx_wire::{Events, Record};
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
    let rec = cursor::follow(
        ld,
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
            cursor::advance(ld, &rec);
            sys::set_errno(err.0);
            return -1;
        }
        Record::Accept { new_fd, .. } => new_fd,
        _ => unreachable_record(ld),
    };
    let event = ld.events() + 1;
    let got = match take(ld, fd, event) {
        Some(kept) => lowest_fd(kept),
        // An outside client whose stand-in cannot connect to the listener: a socketpair.
        None if outside(ld, event) => external::open(ld, None, false),
        None => {
            let err = sys::errno();
            cursor::diverge(
                ld,
                &format!("an accept on fd {fd} that failed (errno {err})"),
            );
        }
    };
    if got < 0 {
        let err = sys::errno();
        cursor::diverge(
            ld,
            &format!("an accept on fd {fd} that failed (errno {err})"),
        );
    }
    let got = if got != new_fd && ld.threads_ordered() {
        super::threads::onto_number(got, new_fd)
    } else {
        got
    };
    set_accept_flags(got, flags);
    if got != new_fd {
        cursor::diverge(
            ld,
            &format!(
                "an accept on fd {fd} that returned fd {got} where the record had fd {new_fd}"
            ),
        );
    }
    if outside(ld, event) && !external::is_outside(ld, got) {
        external::adopt(ld, got, event);
    }
    let external = external::is_outside(ld, got);
    if let Record::Accept { local, remote, .. } = &rec {
        fds::ports::show(got, port_of(local), port_of(remote));
    }
    if !addr.is_null() && !len.is_null() {
        // SAFETY: the program's buffers, as for accept4.
        unsafe {
            let room = *len;
            if real::getpeername(got, addr, len) == 0 {
                fds::ports::put_shown(got, true, addr, len, room);
            }
        }
    }
    if external && let Record::Accept { remote, .. } = &rec {
        // The recorded peer's address, as the program saw it.
        // SAFETY: the program's buffers, as for accept4.
        unsafe { fill_addr(remote, addr, len) };
    }
    let observed = if external {
        rec.clone()
    } else {
        accepted(fd, got, 0)
    };
    cursor::advance(ld, &observed);
    got
}

/// A replayed ready set reports `fd` with `ev`. True if `fd` is a listening socket reported
/// readable: the ready set must not wait for the kernel to call it readable. Its next accept
/// waits for the connection it returns anyway, wherever that comes from; and the kernel's
/// readiness cannot be waited for: the connection that made it readable in the record may be
/// taken by another process, or accepted early, or (a worker woken with the others) the record's
/// accept found nothing. Waiting at the ready set for the accept's own connection instead would
/// deadlock a process whose accept gets a connection made only after its later events. For a
/// client outside the session the LD makes its connection now, so that the listener is
/// readable for real. False for any other fd.
pub fn listener_ready(ld: &mut Ld, fd: c_int, ev: Events) -> bool {
    if fds::kind(fd) & fds::LISTENING == 0 || ev.0 & Events::IN == 0 {
        return false;
    }
    if let Some(event) = next_accept(ld, fd)
        && outside(ld, event)
    {
        external::make_peer(ld, fd, event);
    }
    true
}

/// The event number of the next accept on listening socket `fd`, if the next accept there
/// returned a connection.
fn next_accept(ld: &Ld, fd: c_int) -> Option<u64> {
    let replay = ld.replay.as_ref()?;
    let from = ld.events() as usize + 1;
    replay
        .records
        .iter()
        .enumerate()
        .skip(from)
        .find_map(|(i, r)| match r {
            Record::Accept { fd: f, .. } if *f == fd => Some(Some(i as u64 + 1)),
            Record::Fail {
                call: Call::Accept,
                fd: f,
                ..
            } if *f == fd => Some(None),
            _ => None,
        })
        .flatten()
}

/// Whether accept `event` returned a client outside the session.
fn outside(ld: &Ld, event: u64) -> bool {
    ld.replay
        .as_ref()
        .is_some_and(|r| !r.accepts.iter().any(|a| a.event == event))
}

/// Who made the connection that accept `event` returns (see the module doc).
fn connector_of(ld: &Ld, event: u64) -> Connector {
    ld.replay
        .as_ref()
        .and_then(|r| r.accepts.iter().find(|a| a.event == event))
        .map_or(
            Connector {
                actor: ld.actor,
                event,
            },
            |a| Connector {
                actor: a.peer,
                event: a.peer_event,
            },
        )
}

/// The connection of accept `event` on `listener`, taken out of the kept ones (an LD fd, at
/// a high number); `None` if it cannot be had.
fn take(ld: &mut Ld, listener: c_int, event: u64) -> Option<c_int> {
    let want = connector_of(ld, event);
    if outside(ld, event) && !external::make_peer(ld, listener, event) {
        return None;
    }
    if !obtain(ld, listener, want) {
        return None;
    }
    let replay = ld.replay.as_mut()?;
    let i = replay.kept.iter().position(|k| k.connector == Some(want))?;
    let kept = replay.kept.remove(i);
    Some(kept.fd)
}

/// The kept connection `kept` at the lowest free fd, as the real accept would have given it.
fn lowest_fd(kept: c_int) -> c_int {
    fds::forget_ours(kept);
    let got = sys::fcntl(kept, libc::F_DUPFD, 0);
    sys::close(kept);
    got
}

/// Waits until the connection `want` made is among the kept ones: takes connections from
/// `listener` (keeping this actor's, handing others' to the GD) and reads what the GD
/// delivers. False if the listener fails.
fn obtain(ld: &mut Ld, listener: c_int, want: Connector) -> bool {
    loop {
        if ld
            .replay
            .as_ref()
            .is_some_and(|r| r.kept.iter().any(|k| k.connector == Some(want)))
        {
            return true;
        }
        if ld.gd_message_buffered() {
            read_gd(ld);
            continue;
        }
        let mut waits = [
            libc::pollfd {
                fd: listener,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: ld.gd_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        if sys::poll(&mut waits, 1000) <= 0 {
            continue;
        }
        if waits[1].revents != 0 {
            read_gd(ld);
        }
        if waits[0].revents & libc::POLLIN != 0 {
            let got = accept_now(listener);
            if got == -2 {
                return false;
            }
            if got >= 0 {
                sort(ld, listener, got);
            }
        }
    }
}

/// Handles the GD's next message (a delivered connection joins the kept ones as it is read).
fn read_gd(ld: &mut Ld) {
    match ld.receive() {
        Some(msg) => {
            halting::control(ld, msg);
        }
        None => ld.gd_gone(),
    }
}

/// Accepts a pending connection on `fd` (close-on-exec, non-blocking): the connection, -1 if
/// there was none after all (another process took it), -2 if the listener failed.
///
/// A blocking listener is made non-blocking for good: between the poll and this accept,
/// another process may take the connection, and a blocking accept would then wait for the
/// next one, deaf to the GD. In replay only the LDs accept for real, so this changes nothing
/// the program does (its own view of the flag, in `fds`, is unchanged).
fn accept_now(fd: c_int) -> c_int {
    let fl = sys::fcntl(fd, libc::F_GETFL, 0);
    if fl >= 0 && fl & libc::O_NONBLOCK == 0 {
        sys::fcntl(fd, libc::F_SETFL, (fl | libc::O_NONBLOCK) as libc::c_long);
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
    match sys::errno() {
        libc::EAGAIN | libc::EINTR | libc::ECONNABORTED => -1,
        _ => -2,
    }
}

/// A connection just taken from `listener`: kept if an accept of this actor returns it (or
/// nobody can tell whose it is), else handed to the GD for the actor whose accept does.
fn sort(ld: &mut Ld, listener: c_int, conn: c_int) {
    let connector = match external::made_for(ld, listener, conn) {
        Some(event) => Some(Connector {
            actor: ld.actor,
            event,
        }),
        None => who_is(ld, conn),
    };
    if let Some(c) = connector
        && !accepted_here(ld, c)
    {
        let note = LdToGd::Handover {
            actor: ld.actor,
            connector: (c.actor, c.event),
        };
        if ld.send_with_fd(&note, conn) {
            sys::close(conn);
            return;
        }
    }
    let kept = fds::mark_ours(sys::move_high(conn, fds::KEPT_FDS));
    if let Some(replay) = ld.replay.as_mut() {
        replay.kept.push(KeptConnection {
            fd: kept,
            connector,
        });
    }
}

/// Whether an accept of this actor returns the connection `c` made.
fn accepted_here(ld: &Ld, c: Connector) -> bool {
    let Some(replay) = ld.replay.as_ref() else {
        return true;
    };
    let planned = replay
        .accepts
        .iter()
        .any(|a| a.peer == c.actor && a.peer_event == c.event);
    // An outside client's stand-in is named by this actor's accept event.
    let own_outside = c.actor == ld.actor
        && matches!(
            replay.records.get((c.event as usize).wrapping_sub(1)),
            Some(Record::Accept { .. })
        )
        && !replay.accepts.iter().any(|a| a.event == c.event);
    planned || own_outside
}

/// Gives an accepted connection the flags the program's accept4 asked for (non-blocking,
/// close-on-exec), and notes it as a channel end.
fn set_accept_flags(got: c_int, flags: c_int) {
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
    fds::set_accepted(got, flags);
}

/// Writes a recorded `ip:port` address into an accept's address buffer (a Unix address is left
/// as the kernel gave it).
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

/// Asks the GD which actor's connect made this connection.
fn who_is(ld: &mut Ld, fd: c_int) -> Option<Connector> {
    let local = fds::socket_addr(fd, false);
    let remote = fds::socket_addr(fd, true);
    let peer_pid = if local.starts_with("unix:") {
        fds::peer_pid(fd)
    } else {
        None
    };
    let question = LdToGd::WhoIs {
        local,
        remote,
        peer_pid,
    };
    match halting::request(ld, &question) {
        Some(GdToLd::Peer {
            peer: Some((actor, event)),
        }) => Some(Connector { actor, event }),
        _ => None,
    }
}
