//! What the LD knows about each fd: which are stream-socket channel ends (recorded), which are
//! other sockets or pipes (passed through), which block; and each epoll set's registrations.
//!
//! Lock-free fixed tables (no allocation, safe across fork and in signal handlers). An fd the
//! LD has not seen created (inherited across exec, made by a call we do not hook) is classified
//! once, lazily, with fstat/getsockopt, and forgotten again when it is closed or replaced.

use libc::c_int;
use std::sync::atomic::{AtomicI32, AtomicU16, AtomicU64, Ordering};

const MAX_FDS: usize = 65536;

/// The LD's own fds (GD connection, history, log, side channels) live at or above this number,
/// out of the program's way.
pub const HIGH_FD: c_int = 1000;
/// Connections replay accepted early and keeps for a later accept live at or above this number.
pub const KEPT_FDS: c_int = HIGH_FD + 100;
/// The LD's ends of connections to outside peers that replay plays live at or above this number.
pub const OUTSIDE_PEER_FDS: c_int = HIGH_FD + 200;

/// Classified (the other bits are meaningful).
pub const KNOWN: u16 = 1;
/// A TCP (IPv4/IPv6) or Unix stream socket: a channel end, recorded.
pub const STREAM: u16 = 2;
/// Another kind of socket (UDP, netlink, …): passed through.
pub const OTHER_SOCKET: u16 = 4;
/// A pipe or FIFO: passed through.
pub const PIPE: u16 = 8;
/// A listening socket.
pub const LISTENING: u16 = 16;
/// O_NONBLOCK is set.
pub const NONBLOCK: u16 = 32;
/// One of the LD's own fds (GD connection, history, stash): hidden from the program.
pub const OURS: u16 = 64;
/// An epoll set in which a stream socket was registered: its waits are recorded.
pub const WATCHES_STREAMS: u16 = 128;
/// One end of a socketpair: a channel inside the session, never to an outside peer.
pub const PAIRED: u16 = 256;
/// connect() was called on this socket and did not fail: another connect() on it continues
/// that one (it says how a non-blocking connect ended) instead of making a connection.
pub const CONNECTING: u16 = 512;

static TABLE: [AtomicU16; MAX_FDS] = [const { AtomicU16::new(0) }; MAX_FDS];

fn slot(fd: c_int) -> Option<&'static AtomicU16> {
    if fd < 0 {
        return None;
    }
    TABLE.get(fd as usize)
}

/// The fd's bits, classifying it first if needed.
pub fn kind(fd: c_int) -> u16 {
    let Some(s) = slot(fd) else { return 0 };
    let bits = s.load(Ordering::Relaxed);
    if bits & KNOWN != 0 {
        return bits;
    }
    let bits = classify(fd);
    s.store(bits, Ordering::Relaxed);
    bits
}

/// Whether reads and writes on `fd` are recorded.
pub fn is_stream(fd: c_int) -> bool {
    kind(fd) & STREAM != 0
}

/// Sets the fd's bits.
pub fn set(fd: c_int, bits: u16) {
    if let Some(s) = slot(fd) {
        s.store(bits | KNOWN, Ordering::Relaxed);
    }
}

/// Notes a connection just accepted with accept4 `flags`: a stream socket, non-blocking if
/// the flags say so.
pub fn set_accepted(fd: c_int, flags: c_int) {
    let nonblock = if flags & libc::SOCK_NONBLOCK != 0 {
        NONBLOCK
    } else {
        0
    };
    set(fd, STREAM | nonblock);
}

/// Adds or removes bits (the fd must be known).
pub fn update(fd: c_int, add: u16, remove: u16) {
    if let Some(s) = slot(fd) {
        let bits = kind(fd);
        s.store((bits | add) & !remove, Ordering::Relaxed);
    }
}

/// Forgets an fd (closed, or about to be replaced).
pub fn forget(fd: c_int) {
    if let Some(s) = slot(fd)
        && s.load(Ordering::Relaxed) & OURS == 0
    {
        s.store(0, Ordering::Relaxed);
    }
}

/// Copies what we know of `from` to `to` (dup and friends).
pub fn copy(from: c_int, to: c_int) {
    let bits = kind(from) & !OURS;
    set(to, bits);
}

/// Whether the fd is one of the LD's own.
pub fn is_ours(fd: c_int) -> bool {
    slot(fd).is_some_and(|s| s.load(Ordering::Relaxed) & OURS != 0)
}

fn classify(fd: c_int) -> u16 {
    // SAFETY: fstat/getsockopt/fcntl write only into our locals.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) != 0 {
            return 0; // not open: classify again when it is
        }
        let nonblock = if crate::sys::fcntl(fd, libc::F_GETFL, 0) & libc::O_NONBLOCK != 0 {
            NONBLOCK
        } else {
            0
        };
        match st.st_mode & libc::S_IFMT {
            libc::S_IFSOCK => {
                let ty = sockopt(fd, libc::SO_TYPE);
                let domain = sockopt(fd, libc::SO_DOMAIN);
                let accepting = sockopt(fd, libc::SO_ACCEPTCONN) == 1;
                KNOWN | nonblock | socket_bits(domain, ty) | if accepting { LISTENING } else { 0 }
            }
            libc::S_IFIFO => KNOWN | nonblock | PIPE,
            _ => KNOWN | nonblock,
        }
    }
}

/// The bits of a new socket of this domain and type (`ty` may carry SOCK_ flags).
pub fn socket_bits(domain: c_int, ty: c_int) -> u16 {
    let base = ty & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC);
    let stream_domain = matches!(domain, libc::AF_INET | libc::AF_INET6 | libc::AF_UNIX);
    let kind = if base == libc::SOCK_STREAM && stream_domain {
        STREAM
    } else {
        OTHER_SOCKET
    };
    let nonblock = if ty & libc::SOCK_NONBLOCK != 0 {
        NONBLOCK
    } else {
        0
    };
    kind | nonblock
}

fn sockopt(fd: c_int, opt: c_int) -> c_int {
    let mut v: c_int = -1;
    let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
    // SAFETY: writes one int.
    let r = unsafe {
        libc::syscall(
            libc::SYS_getsockopt,
            fd,
            libc::SOL_SOCKET,
            opt,
            &mut v as *mut c_int,
            &mut len as *mut libc::socklen_t,
        )
    };
    if r < 0 { -1 } else { v }
}

/// The connecting process of a Unix socket connection (SO_PEERCRED), if any.
pub fn peer_pid(fd: c_int) -> Option<i32> {
    let mut cred: libc::ucred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: writes one ucred.
    let r = unsafe {
        libc::syscall(
            libc::SYS_getsockopt,
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred,
            &mut len as *mut libc::socklen_t,
        )
    };
    (r == 0 && cred.pid > 0).then_some(cred.pid)
}

// ---------------------------------------------------------------------------------------------
// epoll registrations: (epoll fd, fd) -> (events, data), to turn epoll_wait's `data` back into
// an fd when recording and to give `data` back when replaying.

const EP_SLOTS: usize = 8192;
const EMPTY: i32 = -1;
const TOMBSTONE: i32 = -2;

struct EpSlot {
    epfd: AtomicI32,
    fd: AtomicI32,
    data: AtomicU64,
}

static EPOLL: [EpSlot; EP_SLOTS] = [const {
    EpSlot {
        epfd: AtomicI32::new(EMPTY),
        fd: AtomicI32::new(EMPTY),
        data: AtomicU64::new(0),
    }
}; EP_SLOTS];

fn ep_hash(epfd: c_int, fd: c_int) -> usize {
    ((epfd as u32 as usize).wrapping_mul(0x9E37_79B9) ^ (fd as u32 as usize)) % EP_SLOTS
}

/// Remembers `fd`'s registration in epoll set `epfd` (EPOLL_CTL_ADD/MOD).
pub fn ep_set(epfd: c_int, fd: c_int, data: u64) {
    let start = ep_hash(epfd, fd);
    let mut free = None;
    for i in 0..EP_SLOTS {
        let s = &EPOLL[(start + i) % EP_SLOTS];
        let e = s.epfd.load(Ordering::Relaxed);
        if e == epfd && s.fd.load(Ordering::Relaxed) == fd {
            s.data.store(data, Ordering::Relaxed);
            return;
        }
        if (e == TOMBSTONE || e == EMPTY) && free.is_none() {
            free = Some(s);
        }
        if e == EMPTY {
            break;
        }
    }
    if let Some(s) = free {
        s.data.store(data, Ordering::Relaxed);
        s.fd.store(fd, Ordering::Relaxed);
        s.epfd.store(epfd, Ordering::Relaxed);
    }
}

/// Forgets `fd`'s registration in `epfd` (EPOLL_CTL_DEL).
pub fn ep_remove(epfd: c_int, fd: c_int) {
    if let Some(s) = ep_find(epfd, fd) {
        s.epfd.store(TOMBSTONE, Ordering::Relaxed);
    }
}

fn ep_find(epfd: c_int, fd: c_int) -> Option<&'static EpSlot> {
    let start = ep_hash(epfd, fd);
    for i in 0..EP_SLOTS {
        let s = &EPOLL[(start + i) % EP_SLOTS];
        let e = s.epfd.load(Ordering::Relaxed);
        if e == EMPTY {
            return None;
        }
        if e == epfd && s.fd.load(Ordering::Relaxed) == fd {
            return Some(s);
        }
    }
    None
}

/// The `data` registered for `fd` in `epfd`.
pub fn ep_data(epfd: c_int, fd: c_int) -> Option<u64> {
    ep_find(epfd, fd).map(|s| s.data.load(Ordering::Relaxed))
}

/// The fd registered in `epfd` with this `data`.
pub fn ep_fd_of(epfd: c_int, data: u64) -> Option<c_int> {
    // Most programs put the fd itself in `data`: try that first.
    if data <= i32::MAX as u64
        && let Some(s) = ep_find(epfd, data as c_int)
        && s.data.load(Ordering::Relaxed) == data
    {
        return Some(data as c_int);
    }
    EPOLL.iter().find_map(|s| {
        (s.epfd.load(Ordering::Relaxed) == epfd && s.data.load(Ordering::Relaxed) == data)
            .then(|| s.fd.load(Ordering::Relaxed))
    })
}

// ---------------------------------------------------------------------------------------------
// Socket addresses as text.

/// Formats a sockaddr the way histories show it.
///
/// # Safety
/// `addr` must point to `len` readable bytes (or be null).
pub unsafe fn format_addr(addr: *const libc::sockaddr, len: libc::socklen_t) -> String {
    use std::fmt::Write;
    if addr.is_null() || (len as usize) < std::mem::size_of::<libc::sa_family_t>() {
        return "?".into();
    }
    let mut out = String::new();
    // SAFETY: the caller vouches for len bytes; we read each family's struct only when long enough.
    unsafe {
        match (*addr).sa_family as c_int {
            libc::AF_INET if len as usize >= std::mem::size_of::<libc::sockaddr_in>() => {
                let a = &*(addr as *const libc::sockaddr_in);
                let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                let _ = write!(out, "{}:{}", ip, u16::from_be(a.sin_port));
            }
            libc::AF_INET6 if len as usize >= std::mem::size_of::<libc::sockaddr_in6>() => {
                let a = &*(addr as *const libc::sockaddr_in6);
                let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
                let _ = write!(out, "[{}]:{}", ip, u16::from_be(a.sin6_port));
            }
            libc::AF_UNIX => {
                let a = &*(addr as *const libc::sockaddr_un);
                let off = std::mem::size_of::<libc::sa_family_t>();
                let n = (len as usize).saturating_sub(off).min(a.sun_path.len());
                let path: Vec<u8> = a.sun_path[..n].iter().map(|c| *c as u8).collect();
                out.push_str("unix:");
                match path.first() {
                    None => {}
                    Some(0) => {
                        out.push('@');
                        out.push_str(&String::from_utf8_lossy(&path[1..]));
                    }
                    Some(_) => {
                        let end = path.iter().position(|b| *b == 0).unwrap_or(path.len());
                        out.push_str(&String::from_utf8_lossy(&path[..end]));
                    }
                }
            }
            family => {
                let _ = write!(out, "family{family}");
            }
        }
    }
    out
}

/// The local (`peer == false`) or remote address of a socket, as text.
pub fn socket_addr(fd: c_int, peer: bool) -> String {
    // SAFETY: sockaddr_storage is large enough for any address.
    unsafe {
        let mut st: libc::sockaddr_storage = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        let p = &mut st as *mut libc::sockaddr_storage as *mut libc::sockaddr;
        let r = if peer {
            crate::real::getpeername(fd, p, &mut len)
        } else {
            crate::real::getsockname(fd, p, &mut len)
        };
        if r != 0 {
            return "?".into();
        }
        format_addr(p, len)
    }
}

/// Marks `fd` as one of the LD's own (hidden from the program); returns it.
pub fn mark_ours(fd: c_int) -> c_int {
    if fd >= 0 {
        set(fd, OURS);
    }
    fd
}

/// Forgets one of our own fds (we closed or moved it).
pub fn forget_ours(fd: c_int) {
    if let Some(s) = slot(fd) {
        s.store(0, Ordering::Relaxed);
    }
}
