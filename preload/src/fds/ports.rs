//! The ports a replayed program is shown for its sockets' ends: the record's.
//!
//! A connection's ephemeral port is the kernel's choice, another in every run: a server that
//! prints where a client came from (`accept`'s address, `getpeername`), a client that prints or
//! sends its own port (`getsockname`), a UDP socket that a send bound. Replay makes its
//! connections for real, on the kernel's ports, and shows the program the record's instead,
//! kept here per open file description from the replayed `Connect`, `Accept` and
//! `SendDatagram` (fds made from it by dup or fork show the same). Only the port is replaced;
//! the addresses themselves come out as the kernel gives them, as they did in the record.
//! Nothing is kept in record, so a recorded program sees the kernel's ports untouched. An
//! exec'd image inherits them through `DDBX_PORTS` (an inetd-style handler that asks who its
//! standard input's peer is).

use super::{FD_DESCRIPTION, MAX_DESCRIPTIONS, fd_slot};
use libc::{c_int, sockaddr, socklen_t};
use std::sync::atomic::{AtomicU32, Ordering};

/// Per description slot: the shown local port << 16 | the shown remote port (0: the kernel's).
static SHOWN: [AtomicU32; MAX_DESCRIPTIONS] = [const { AtomicU32::new(0) }; MAX_DESCRIPTIONS];

/// A new description in `slot` shows the kernel's ports.
pub(super) fn clear(slot: usize) {
    SHOWN[slot].store(0, Ordering::Relaxed);
}

/// The port in an address as the history writes it (`127.0.0.1:5000`, `[::1]:5000`); `None`
/// for a Unix socket's, an unknown one (`?`) or port 0.
pub fn port_of(addr: &str) -> Option<u16> {
    if addr.starts_with("unix:") {
        return None;
    }
    let (_, port) = addr.rsplit_once(':')?;
    port.parse().ok().filter(|p| *p != 0)
}

/// Replay: `fd`'s description shows the program these ports for its local and remote ends
/// (`None`: leaves that end as it was).
pub fn show(fd: c_int, local: Option<u16>, remote: Option<u16>) {
    let Some(slot) = slot_of(fd) else {
        return;
    };
    let _ = SHOWN[slot].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        let l = local.map_or(v >> 16, u32::from);
        let r = remote.map_or(v & 0xffff, u32::from);
        Some(l << 16 | r)
    });
}

/// The port the program is shown for `fd`'s local (`peer == false`) or remote end, if replay
/// set one.
pub fn shown(fd: c_int, peer: bool) -> Option<u16> {
    let v = SHOWN[slot_of(fd)?].load(Ordering::Relaxed);
    let port = if peer { v & 0xffff } else { v >> 16 };
    (port != 0).then_some(port as u16)
}

/// Puts the port replay shows for `fd`'s end into an address the kernel just wrote for it
/// (getsockname, getpeername, accept).
///
/// # Safety
/// `addr` is null or holds `*len` bytes the kernel wrote, within a buffer of at least `room`
/// bytes (the size the program gave).
pub unsafe fn put_shown(
    fd: c_int,
    peer: bool,
    addr: *mut sockaddr,
    len: *const socklen_t,
    room: socklen_t,
) {
    let Some(port) = shown(fd, peer) else {
        return;
    };
    if addr.is_null() || len.is_null() {
        return;
    }
    // SAFETY: as the caller promises; each family's port lies in its first 4 bytes.
    unsafe {
        let have = (*len).min(room) as usize;
        if have < 4 {
            return;
        }
        match (*addr).sa_family as c_int {
            libc::AF_INET => (*addr.cast::<libc::sockaddr_in>()).sin_port = port.to_be(),
            libc::AF_INET6 => (*addr.cast::<libc::sockaddr_in6>()).sin6_port = port.to_be(),
            _ => {}
        }
    }
}

/// `DDBX_PORTS` for an exec or a spawn now: every socket of this process with shown ports, as
/// `fd:inode:local:remote` separated by commas (empty when there is none: a record's).
pub fn for_exec() -> Vec<u8> {
    let mut out = String::new();
    for (fd, slot) in FD_DESCRIPTION.iter().enumerate() {
        let Some(s) = slot.load(Ordering::Relaxed).checked_sub(1) else {
            continue;
        };
        let v = SHOWN[s as usize].load(Ordering::Relaxed);
        let fd = fd as c_int;
        if v == 0 || super::is_ours(fd) {
            continue;
        }
        if let Some(ino) = socket_inode(fd) {
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(&format!("{fd}:{ino}:{}:{}", v >> 16, v & 0xffff));
        }
    }
    out.into_bytes()
}

/// At the start of an exec'd image: the sockets `DDBX_PORTS` lists (`value`) that are still
/// the same sockets, and fds 0 to 2 when they are one of them (a spawn's file actions may have
/// moved one there), show the ports they showed before the exec.
pub fn adopt(value: &[u8]) {
    let text = String::from_utf8_lossy(value);
    let listed: Vec<(c_int, u64, u32)> = text
        .split(',')
        .filter_map(|item| {
            let mut parts = item.split(':');
            let fd = parts.next()?.parse().ok()?;
            let ino = parts.next()?.parse().ok()?;
            let local: u32 = parts.next()?.parse().ok()?;
            let remote: u32 = parts.next()?.parse().ok()?;
            Some((fd, ino, (local & 0xffff) << 16 | (remote & 0xffff)))
        })
        .collect();
    let fds = listed.iter().map(|l| l.0).chain(0..3);
    for fd in fds {
        let Some(ino) = socket_inode(fd) else {
            continue;
        };
        let Some(&(_, _, v)) = listed.iter().find(|l| l.1 == ino) else {
            continue;
        };
        if super::is_ours(fd) || super::kind(fd) == 0 {
            continue;
        }
        if let Some(slot) = slot_of(fd) {
            SHOWN[slot].store(v, Ordering::Relaxed);
        }
    }
}

/// The inode of the socket `fd` is, if it is one.
fn socket_inode(fd: c_int) -> Option<u64> {
    // SAFETY: all-zero is a valid stat; fstat writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is ours.
    if unsafe { libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) } != 0 {
        return None;
    }
    (st.st_mode & libc::S_IFMT == libc::S_IFSOCK).then_some(st.st_ino)
}

/// The description slot `fd` refers to, if the LD knows it (never classifies).
fn slot_of(fd: c_int) -> Option<usize> {
    let known = fd_slot(fd)?.load(Ordering::Relaxed);
    known.checked_sub(1).map(|s| s as usize)
}

#[cfg(test)]
mod tests {
    use super::port_of;

    #[test]
    fn ports_are_read_from_the_history_s_addresses() {
        assert_eq!(port_of("127.0.0.1:40312"), Some(40312));
        assert_eq!(port_of("[::1]:8080"), Some(8080));
        assert_eq!(port_of("0.0.0.0:0"), None);
        assert_eq!(port_of("unix:/tmp/s:1"), None);
        assert_eq!(port_of("?"), None);
    }
}
