//! What the LD knows about each fd: which are stream-socket channel ends (recorded), which are
//! other sockets or pipes (passed through), which block; and each epoll set's registrations
//! ([`epoll`]).
//!
//! An fd number refers to an open file description, which the kernel shares between every fd
//! made from it (dup, dup2/dup3, `F_DUPFD`/`F_DUPFD_CLOEXEC`, fork; a descriptor passed over a
//! Unix socket is another reference to the sender's). What belongs to the file, its kind, its
//! O_NONBLOCK flag, an epoll instance's interest list, is kept here per description, so that
//! what the program does through one number is seen through all of them (mio registers its
//! sockets through a duplicate of its epoll fd and waits on the original).
//!
//! Lock-free fixed tables (no allocation, safe across fork and in signal handlers). An fd the
//! LD has not seen created (inherited across exec, made by a call we do not hook) is classified
//! once, lazily, with fstat/getsockopt, as a description of its own, and forgotten again when
//! it is closed or replaced. A description lives while some fd of this process refers to it.

pub mod epoll;
pub mod pipes;
pub mod ports;

use libc::c_int;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const MAX_FDS: usize = 65536;
/// Open file descriptions known at once (each is referred to by at least one fd).
const MAX_DESCRIPTIONS: usize = 65536;

/// The LD's own fds (GD connection, history, log, side channels) live at or above this number,
/// out of the program's way.
pub const HIGH_FD: c_int = 1000;
/// Connections replay accepted early and keeps for a later accept live at or above this number.
pub const KEPT_FDS: c_int = HIGH_FD + 100;
/// The LD's ends of connections to outside peers that replay plays live at or above this number.
pub const OUTSIDE_PEER_FDS: c_int = HIGH_FD + 200;

/// Classified (the other bits are meaningful).
pub const KNOWN: u32 = 1;
/// A TCP (IPv4/IPv6) or Unix stream socket: a channel end, recorded.
pub const STREAM: u32 = 2;
/// Another kind of socket (UDP, netlink, …): passed through.
pub const OTHER_SOCKET: u32 = 4;
/// A pipe or FIFO: passed through, unless [`STREAM`] is set too (a pipe made by a recorded
/// process, `pipes.rs`): then it is a channel end, recorded.
pub const PIPE: u32 = 8;
/// A listening socket.
pub const LISTENING: u32 = 16;
/// O_NONBLOCK is set.
pub const NONBLOCK: u32 = 32;
/// One of the LD's own fds (GD connection, history, stash): hidden from the program.
pub const OURS: u32 = 64;
/// An epoll set in which a stream socket was registered: its waits are recorded.
pub const WATCHES_STREAMS: u32 = 128;
/// One end of a socketpair: a channel inside the session, never to an outside peer.
pub const PAIRED: u32 = 256;
/// connect() was called on this socket and did not fail: another connect() on it continues
/// that one (it says how a non-blocking connect ended) instead of making a connection.
pub const CONNECTING: u32 = 512;
/// An epoll instance.
pub const EPOLL: u32 = 1024;
/// `/dev/urandom` or `/dev/random`: what a read returns is recorded as a value.
pub const RANDOM: u32 = 2048;
/// Record: the peer of this TCP connection is a recorded process (`record/peers.rs`): its
/// bytes are not kept.
pub const PEER_RECORDED: u32 = 4096;
/// Record: the peer of this connection is outside the session, or a Unix socket's (its bytes
/// are kept; `record/peers.rs`).
pub const PEER_OUTSIDE: u32 = 8192;
/// Record: this process noted the connection's endpoint for its peer (`record/peers.rs`).
pub const ENDPOINT_NOTED: u32 = 16384;
/// A file that several processes may write, whose writes take turns (`ld/appends.rs`): a
/// regular file opened with O_APPEND, or a process's standard output or error when it is a
/// regular file, or a pipe or terminal from outside the session (ddbx's own output: the order
/// in which the processes' lines reach it is what the user sees).
pub const TURNS: u32 = 32768;
/// A datagram socket: UDP (IPv4 or IPv6) or a Unix datagram socket ([`OTHER_SOCKET`] is set
/// too): its datagrams are recorded (`record/datagram.rs`).
pub const DATAGRAM: u32 = 65536;
/// A signalfd this process made: which signals a read takes is recorded (`hooks/sigwait.rs`).
pub const SIGNAL_FD: u32 = 131072;

/// One open file description: its bits, and how many fds of this process refer to it.
struct Description {
    bits: AtomicU32,
    /// 0: the slot is free.
    refs: AtomicU32,
    /// Counts the slot's uses, so that an id of a closed description never names a new one.
    generation: AtomicU32,
}

/// Which description each fd refers to: its slot + 1 (0: not known yet).
static FD_DESCRIPTION: [AtomicU32; MAX_FDS] = [const { AtomicU32::new(0) }; MAX_FDS];

static DESCRIPTIONS: [Description; MAX_DESCRIPTIONS] = [const {
    Description {
        bits: AtomicU32::new(0),
        refs: AtomicU32::new(0),
        generation: AtomicU32::new(0),
    }
}; MAX_DESCRIPTIONS];

/// Each description's file, when it is a regular file ([`file_key`]) or an output from
/// outside the session ([`turn_key`], with [`OUTPUT`] set); 0: neither.
static FILE_KEY: [AtomicU64; MAX_DESCRIPTIONS] = [const { AtomicU64::new(0) }; MAX_DESCRIPTIONS];

/// Where the search for a free description slot starts.
static NEXT_FREE: AtomicU32 = AtomicU32::new(0);

/// An open file description, as long as some fd refers to it (the ids of closed descriptions
/// are never reused).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DescriptionId {
    slot: u32,
    generation: u32,
}

impl DescriptionId {
    /// The id as one number (for tables keyed by description).
    pub fn key(self) -> u64 {
        (self.slot as u64) << 32 | self.generation as u64
    }

    /// The id whose [`DescriptionId::key`] is `key`.
    pub fn from_key(key: u64) -> DescriptionId {
        DescriptionId {
            slot: (key >> 32) as u32,
            generation: key as u32,
        }
    }

    /// Whether some fd still refers to this description.
    pub fn is_live(self) -> bool {
        DESCRIPTIONS.get(self.slot as usize).is_some_and(|d| {
            d.refs.load(Ordering::Relaxed) > 0
                && d.generation.load(Ordering::Relaxed) == self.generation
        })
    }
}

fn fd_slot(fd: c_int) -> Option<&'static AtomicU32> {
    if fd < 0 {
        return None;
    }
    FD_DESCRIPTION.get(fd as usize)
}

/// A new description with these bits, referred to once; `None` when every slot is taken.
fn allocate(bits: u32) -> Option<u32> {
    let start = NEXT_FREE.load(Ordering::Relaxed) as usize;
    for i in 0..MAX_DESCRIPTIONS {
        let slot = (start + i) % MAX_DESCRIPTIONS;
        let d = &DESCRIPTIONS[slot];
        if d.refs
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            d.generation.fetch_add(1, Ordering::Relaxed);
            pipes::unlink(slot);
            ports::clear(slot);
            d.bits.store(bits, Ordering::Relaxed);
            FILE_KEY[slot].store(0, Ordering::Relaxed);
            NEXT_FREE.store((slot + 1) as u32, Ordering::Relaxed);
            return Some(slot as u32);
        }
    }
    None
}

/// One reference fewer to the description in `slot`.
fn release(slot: u32) {
    if let Some(d) = DESCRIPTIONS.get(slot as usize) {
        let _ = d
            .refs
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |r| r.checked_sub(1));
    }
}

/// Makes `fd` refer to the description in `slot` (`None`: to nothing known), dropping its
/// reference to the one it referred to before.
fn point(fd: c_int, slot: Option<u32>) {
    if let Some(s) = fd_slot(fd) {
        let old = s.swap(slot.map_or(0, |d| d + 1), Ordering::AcqRel);
        if old != 0 {
            release(old - 1);
        }
    } else if let Some(d) = slot {
        release(d);
    }
}

/// The description `fd` refers to, classifying the fd first if needed.
fn description(fd: c_int) -> Option<&'static Description> {
    let s = fd_slot(fd)?;
    let known = s.load(Ordering::Relaxed);
    if known != 0 {
        return DESCRIPTIONS.get(known as usize - 1);
    }
    let (bits, file) = classify(fd);
    if bits == 0 {
        return None; // not open: classify again when it is
    }
    let slot = allocate(bits)?;
    FILE_KEY[slot as usize].store(file, Ordering::Relaxed);
    point(fd, Some(slot));
    DESCRIPTIONS.get(slot as usize)
}

/// The description `fd` refers to (classifying it first if needed).
pub fn id(fd: c_int) -> Option<DescriptionId> {
    let d = description(fd)?;
    let slot = fd_slot(fd)?.load(Ordering::Relaxed).checked_sub(1)?;
    Some(DescriptionId {
        slot,
        generation: d.generation.load(Ordering::Relaxed),
    })
}

/// The fd's bits, classifying it first if needed.
pub fn kind(fd: c_int) -> u32 {
    description(fd).map_or(0, |d| d.bits.load(Ordering::Relaxed))
}

/// The bits of `fd`'s description if the LD knows it already (0 otherwise): never classifies
/// (an fd being closed, forgotten already, must not be classified again).
pub fn known_kind(fd: c_int) -> u32 {
    let known = fd_slot(fd).map_or(0, |s| s.load(Ordering::Relaxed));
    known
        .checked_sub(1)
        .and_then(|s| DESCRIPTIONS.get(s as usize))
        .map_or(0, |d| d.bits.load(Ordering::Relaxed))
}

/// Whether reads and writes on `fd` are recorded.
pub fn is_stream(fd: c_int) -> bool {
    kind(fd) & STREAM != 0
}

/// Whether `fd` is a UDP socket, whose datagrams are recorded.
pub fn is_datagram(fd: c_int) -> bool {
    kind(fd) & DATAGRAM != 0
}

/// Whether what `fd` reports in a ready set is recorded: a stream socket or a UDP socket.
pub fn is_recorded_socket(fd: c_int) -> bool {
    kind(fd) & (STREAM | DATAGRAM) != 0
}

/// `fd` now refers to a new open file description with these bits (a socket, an accepted
/// connection, an epoll instance just made).
pub fn set(fd: c_int, bits: u32) {
    if fd_slot(fd).is_some() {
        point(fd, allocate(bits | KNOWN));
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

/// Adds or removes bits of the description `fd` refers to (seen through every fd that refers
/// to it).
pub fn update(fd: c_int, add: u32, remove: u32) {
    if let Some(d) = description(fd) {
        let bits = d.bits.load(Ordering::Relaxed);
        d.bits.store((bits | add) & !remove, Ordering::Relaxed);
    }
}

/// Forgets an fd (closed, or about to be replaced); the LD's own are kept.
pub fn forget(fd: c_int) {
    if !is_ours(fd) {
        point(fd, None);
    }
}

/// Whether closing `fd` lets go of a connection: `fd` is the last fd of this process that
/// refers to a stream socket that is not listening (classified first if need be).
pub fn is_last_connection_ref(fd: c_int) -> bool {
    let Some(d) = description(fd) else {
        return false;
    };
    let bits = d.bits.load(Ordering::Relaxed);
    bits & STREAM != 0 && bits & (LISTENING | OURS) == 0 && d.refs.load(Ordering::Relaxed) == 1
}

/// Whether `fd` is the last fd of this process on its open file description.
pub fn is_last_ref(fd: c_int) -> bool {
    description(fd).is_some_and(|d| d.refs.load(Ordering::Relaxed) == 1)
}

/// The fds whose description has all of `bits`.
pub fn with_bits(bits: u32) -> Vec<c_int> {
    known_descriptions()
        .filter(|(_, d)| d.bits.load(Ordering::Relaxed) & bits == bits)
        .map(|(fd, _)| fd)
        .collect()
}

/// Every fd the LD knows, with its description.
fn known_descriptions() -> impl Iterator<Item = (c_int, &'static Description)> {
    FD_DESCRIPTION.iter().enumerate().filter_map(|(fd, slot)| {
        let d = slot
            .load(Ordering::Relaxed)
            .checked_sub(1)
            .and_then(|s| DESCRIPTIONS.get(s as usize))?;
        Some((fd as c_int, d))
    })
}

/// The fds of stream sockets (not listening) that have `FD_CLOEXEC` set: those an exec closes.
pub fn cloexec_connections() -> Vec<c_int> {
    let mut out = Vec::new();
    for (fd, d) in known_descriptions() {
        let bits = d.bits.load(Ordering::Relaxed);
        if bits & STREAM == 0 || bits & (LISTENING | OURS) != 0 {
            continue;
        }
        // SAFETY: no pointer arguments.
        let flags = unsafe { crate::real::fcntl(fd, libc::F_GETFD, 0) };
        if flags >= 0 && flags & libc::FD_CLOEXEC != 0 {
            out.push(fd);
        }
    }
    out
}

/// `to` now refers to the description `from` refers to (dup, dup2, dup3, `F_DUPFD`). A copy
/// of one of the LD's own fds is the program's, with a description of its own.
pub fn dup(from: c_int, to: c_int) {
    if from == to {
        return;
    }
    if is_ours(from) {
        set(to, kind(from) & !OURS);
        return;
    }
    let Some(slot) = description(from).and(fd_slot(from)) else {
        forget(to);
        return;
    };
    let shared = slot.load(Ordering::Relaxed).checked_sub(1);
    if let Some(d) = shared.and_then(|s| DESCRIPTIONS.get(s as usize)) {
        d.refs.fetch_add(1, Ordering::AcqRel);
    }
    point(to, shared);
    if (to == 1 || to == 2) && turn_key(to).is_some() {
        // A regular file made a process's output (`cmd >log 2>&1`): its children share it.
        update(to, TURNS, 0);
    }
}

/// Whether the fd is one of the LD's own.
pub fn is_ours(fd: c_int) -> bool {
    let Some(s) = fd_slot(fd) else { return false };
    let known = s.load(Ordering::Relaxed);
    known != 0
        && DESCRIPTIONS
            .get(known as usize - 1)
            .is_some_and(|d| d.bits.load(Ordering::Relaxed) & OURS != 0)
}

fn classify(fd: c_int) -> (u32, u64) {
    // SAFETY: fstat/getsockopt/fcntl write only into our locals.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) != 0 {
            return (0, 0); // not open: classify again when it is
        }
        let flags = crate::sys::fcntl(fd, libc::F_GETFL, 0);
        let nonblock = if flags & libc::O_NONBLOCK != 0 {
            NONBLOCK
        } else {
            0
        };
        if st.st_mode & libc::S_IFMT == libc::S_IFREG {
            let shared = flags & libc::O_APPEND != 0 || fd == 1 || fd == 2;
            let turns = if shared { TURNS } else { 0 };
            return (KNOWN | nonblock | turns, file_key_of(&st) & !OUTPUT);
        }
        // A standard output or error that is a pipe or a terminal as the image starts: ddbx's
        // own (a session pipe there becomes a channel end as the image adopts it, and its
        // writes are sends), which every process of the session may write into.
        let output = (fd == 1 || fd == 2) && is_pipe_or_terminal(&st);
        let (turns, key) = if output {
            (TURNS, file_key_of(&st) | OUTPUT)
        } else {
            (0, 0)
        };
        let bits = match st.st_mode & libc::S_IFMT {
            libc::S_IFSOCK => {
                let ty = sockopt(fd, libc::SO_TYPE);
                let domain = sockopt(fd, libc::SO_DOMAIN);
                let accepting = sockopt(fd, libc::SO_ACCEPTCONN) == 1;
                KNOWN | nonblock | socket_bits(domain, ty) | if accepting { LISTENING } else { 0 }
            }
            libc::S_IFIFO => KNOWN | nonblock | PIPE,
            // /dev/random (1, 8) and /dev/urandom (1, 9).
            libc::S_IFCHR
                if libc::major(st.st_rdev) == 1 && matches!(libc::minor(st.st_rdev), 8 | 9) =>
            {
                KNOWN | nonblock | RANDOM
            }
            _ => KNOWN | nonblock,
        };
        (bits | turns, key)
    }
}

/// Set in the key of an output from outside the session (not a regular file).
const OUTPUT: u64 = 1 << 63;

/// A pipe, or a terminal (`/dev/tty*`, `/dev/pts/*`, the console): not `/dev/null`, whose
/// writes nobody sees.
fn is_pipe_or_terminal(st: &libc::stat) -> bool {
    match st.st_mode & libc::S_IFMT {
        libc::S_IFIFO => true,
        libc::S_IFCHR => matches!(libc::major(st.st_rdev), 4 | 5 | 136..=143),
        _ => false,
    }
}

/// A file's identity as one non-zero number (its device and inode).
fn file_key_of(st: &libc::stat) -> u64 {
    let key = st.st_dev.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ st.st_ino;
    key.max(1)
}

/// The regular file `fd` refers to, as one non-zero number (its device and inode); `None`:
/// not a regular file.
pub fn file_key(fd: c_int) -> Option<u64> {
    turn_key(fd).filter(|key| key & OUTPUT == 0)
}

/// The file whose writes take turns that `fd` refers to ([`TURNS`]), as one non-zero number:
/// a regular file's [`file_key`], or an output from outside the session's.
pub fn turn_key(fd: c_int) -> Option<u64> {
    let slot = fd_slot(fd)?.load(Ordering::Relaxed).checked_sub(1)?;
    let key = FILE_KEY.get(slot as usize)?.load(Ordering::Relaxed);
    (key != 0).then_some(key)
}

/// The bits of a new socket of this domain and type (`ty` may carry SOCK_ flags).
pub fn socket_bits(domain: c_int, ty: c_int) -> u32 {
    let base = ty & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC);
    let stream_domain = matches!(domain, libc::AF_INET | libc::AF_INET6 | libc::AF_UNIX);
    let kind = if base == libc::SOCK_STREAM && stream_domain {
        STREAM
    } else if base == libc::SOCK_DGRAM && stream_domain {
        OTHER_SOCKET | DATAGRAM
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

/// An IPv4 (`1.2.3.4:5`) or IPv6 (`[::1]:5`) address, as [`socket_addr`] writes them.
pub fn inet(a: &str) -> bool {
    a.starts_with(|c: char| c.is_ascii_digit() || c == '[')
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
    point(fd, None);
}
