//! Replay of UDP and Unix datagram sockets: each receive gets the recorded datagram from the history (its bytes,
//! its sender's address, its ancillary data), and each send returns what the record's did
//! without sending anything.
//!
//! Datagrams are not ordered between processes like a connection's bytes: a receiver is not
//! held until its sender has sent (there is no channel to say who the sender was, and a
//! datagram may come from outside the session). The kernel's own datagrams on the socket (what
//! a sender outside the session sends now) are dropped as the program receives, so that they
//! never fill its buffer.

use super::cursor::{self, unreachable_record};
use super::held::Receiver;
use crate::ld::Ld;
use crate::sys;
use ddbx_wire::Record;
use ddbx_wire::history::Call;
use libc::c_int;

/// A receive of at most `len` bytes on the UDP socket `fd` into the program's buffers.
pub fn recv(ld: &mut Ld, fd: c_int, len: usize, receiver: &mut impl Receiver) -> isize {
    ld.in_wait = true;
    let rec = cursor::follow(
        ld,
        |r| match r {
            Record::RecvDatagram { fd: f, .. } | Record::NoData { fd: f } => *f == fd,
            Record::Fail {
                call: Call::Recv,
                fd: f,
                ..
            } => *f == fd,
            _ => false,
        },
        || format!("a receive of up to {len} bytes on UDP socket fd {fd}"),
    );
    ld.in_wait = false;
    drop_waiting(fd);
    match &rec {
        Record::RecvDatagram {
            n,
            from,
            data,
            control,
            flags,
            ..
        } => {
            let n = *n as isize;
            receiver.fill(&data.0[..data.0.len().min(len)]);
            let control = control.as_ref().map_or(&[][..], |c| &c.0[..]);
            receiver.finish(control, &sockaddr_of(from));
            receiver.add_flags(*flags);
            cursor::advance(ld, &rec);
            n
        }
        Record::NoData { .. } => {
            cursor::advance(ld, &rec);
            sys::set_errno(libc::EAGAIN);
            -1
        }
        Record::Fail { err, .. } => {
            let err = err.0;
            cursor::advance(ld, &rec);
            sys::set_errno(err);
            -1
        }
        _ => unreachable_record(ld),
    }
}

/// A send of `len` bytes on the UDP socket `fd` whose bytes sum to `sum` (`datagram_sum`):
/// returns what the record's returned, sending nothing (its receivers get it from their
/// histories; one outside the session is not there). Other bytes than the record's are a
/// divergence: what the receivers got from their histories answers the record's datagram
/// (a DNS answer names its query's id).
pub fn send(ld: &mut Ld, fd: c_int, len: usize, sum: u64) -> isize {
    let rec = cursor::follow(
        ld,
        |r| match r {
            Record::SendDatagram { fd: f, .. } => *f == fd,
            Record::Fail {
                call: Call::Send,
                fd: f,
                ..
            } => *f == fd,
            _ => false,
        },
        || format!("a send of {len} bytes on UDP socket fd {fd}"),
    );
    drop_waiting(fd);
    bind_as_a_send_would(fd);
    match &rec {
        Record::SendDatagram {
            n,
            sum: want,
            local,
            ..
        } => {
            crate::fds::ports::show(fd, crate::fds::ports::port_of(local), None);
            if *want != sum && *n as usize == len {
                cursor::diverge(
                    ld,
                    &format!(
                        "a send of {len} bytes on datagram socket fd {fd} whose bytes differ from the record's"
                    ),
                );
            }
            let n = *n as isize;
            cursor::advance(ld, &rec);
            n
        }
        Record::Fail { err, .. } => {
            let err = err.0;
            cursor::advance(ld, &rec);
            sys::set_errno(err);
            -1
        }
        _ => unreachable_record(ld),
    }
}

/// Binds an unbound socket to a port of the kernel's choosing, as the record's send did: a
/// program that asks for its address afterwards (to print it, or to tell a peer) finds one.
fn bind_as_a_send_would(fd: c_int) {
    // SAFETY: plain old data, then a sockaddr_storage of its own size for getsockname.
    unsafe {
        let mut st: libc::sockaddr_storage = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        let p = (&mut st as *mut libc::sockaddr_storage).cast::<libc::sockaddr>();
        if libc::syscall(
            libc::SYS_getsockname,
            fd,
            p,
            &mut len as *mut libc::socklen_t,
        ) != 0
        {
            return;
        }
        let port = match st.ss_family as c_int {
            libc::AF_INET => (*p.cast::<libc::sockaddr_in>()).sin_port,
            libc::AF_INET6 => (*p.cast::<libc::sockaddr_in6>()).sin6_port,
            _ => return,
        };
        if port == 0 {
            // The address getsockname gave (the wildcard, or the one the socket is bound to),
            // port 0.
            libc::syscall(libc::SYS_bind, fd, p, len);
        }
    }
}

/// Drops the datagrams the kernel holds for `fd` (a receive of one byte takes a whole
/// datagram), without waiting.
fn drop_waiting(fd: c_int) {
    let mut byte = 0u8;
    for _ in 0..4096 {
        // SAFETY: one writable byte; no address wanted.
        let r = unsafe {
            libc::syscall(
                libc::SYS_recvfrom,
                fd,
                &mut byte as *mut u8,
                1usize,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut::<libc::sockaddr>(),
                std::ptr::null_mut::<libc::socklen_t>(),
            )
        };
        if r < 0 && sys::errno() != libc::EINTR {
            break;
        }
    }
}

/// The sockaddr bytes of an address as histories write it (`127.0.0.1:53`, `[::1]:53`,
/// `unix:/run/log`, `unix:@abstract`, `unix:` for an unnamed sender); none for `?` or anything
/// else.
fn sockaddr_of(addr: &str) -> Vec<u8> {
    if let Some(path) = addr.strip_prefix("unix:") {
        return unix_sockaddr(path);
    }
    let Ok(a) = addr.parse::<std::net::SocketAddr>() else {
        return Vec::new();
    };
    // SAFETY: plain old data, zeroed then filled.
    unsafe {
        match a {
            std::net::SocketAddr::V4(v4) => {
                let mut s: libc::sockaddr_in = std::mem::zeroed();
                s.sin_family = libc::AF_INET as libc::sa_family_t;
                s.sin_port = v4.port().to_be();
                s.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
                bytes_of(&s)
            }
            std::net::SocketAddr::V6(v6) => {
                let mut s: libc::sockaddr_in6 = std::mem::zeroed();
                s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                s.sin6_port = v6.port().to_be();
                s.sin6_addr.s6_addr = v6.ip().octets();
                bytes_of(&s)
            }
        }
    }
}

/// A Unix socket address: `path` (`@name`: in the abstract namespace; empty: unnamed), as
/// long as the kernel would have given it.
fn unix_sockaddr(path: &str) -> Vec<u8> {
    let family = (libc::AF_UNIX as libc::sa_family_t).to_ne_bytes();
    let mut out = family.to_vec();
    match path.strip_prefix('@') {
        Some(name) => {
            out.push(0);
            out.extend_from_slice(name.as_bytes());
        }
        None if path.is_empty() => {}
        None => {
            out.extend_from_slice(path.as_bytes());
            out.push(0);
        }
    }
    out.truncate(std::mem::size_of::<libc::sockaddr_un>());
    out
}

/// The bytes of a plain C struct.
fn bytes_of<T>(v: &T) -> Vec<u8> {
    // SAFETY: `v` is `size_of::<T>()` readable bytes.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
        .to_vec()
}
