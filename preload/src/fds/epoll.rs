//! epoll registrations: which fds each epoll instance watches, and with what `data`.
//!
//! An epoll event's `data` is the program's opaque value, not an fd: nginx registers its
//! eventfd and a socket with the same pointer, and mio registers with a token of its own. So the
//! kernel never gets the program's `data`: `hooks/wait.rs` registers a [`token`] that names the
//! fd instead, and remembers the program's `data` here, keyed by the epoll instance's open file
//! description (shared by every duplicate of the epoll fd) and the fd. An event the kernel
//! reports names its fd exactly ([`token_fd`]), and the program gets its own `data` back
//! ([`data_of`]).
//!
//! The kernel keys a registration by the registered fd's number and file; so does this table,
//! by number only. A registration made by another image (before an exec) or by a process
//! without the LD carries the program's own `data`: [`fd_of`] looks for it by value.

use super::{DescriptionId, id};
use libc::c_int;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// The high half of a [`token`]: a kernel-half address, which no program registers as data.
const TOKEN_TAG: u64 = 0xDDB0_E90A;

/// The `data` the kernel gets for a registration of `fd`.
pub fn token(fd: c_int) -> u64 {
    TOKEN_TAG << 32 | fd as u32 as u64
}

/// The fd a kernel event's `data` names, when it is one of our [`token`]s.
pub fn token_fd(data: u64) -> Option<c_int> {
    (data >> 32 == TOKEN_TAG).then_some(data as u32 as c_int)
}

const SLOTS: usize = 65536;
/// A slot never used: a search ends here.
const EMPTY: u64 = u64::MAX;
/// A slot given up: a search goes on past it, and a new registration may take it.
const TOMBSTONE: u64 = u64::MAX - 1;

/// One registration: the epoll instance's description ([`DescriptionId::key`]), the fd, the
/// program's data.
struct Registration {
    epoll: AtomicU64,
    fd: AtomicI32,
    data: AtomicU64,
}

static REGISTRATIONS: [Registration; SLOTS] = [const {
    Registration {
        epoll: AtomicU64::new(EMPTY),
        fd: AtomicI32::new(-1),
        data: AtomicU64::new(0),
    }
}; SLOTS];

fn hash(epoll: u64, fd: c_int) -> usize {
    (epoll.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ fd as u32 as u64) as usize % SLOTS
}

/// Whether a slot holds nothing current: never used, given up, or a registration in an epoll
/// instance that is closed (its description id is never used again).
fn is_free(key: u64) -> bool {
    key == EMPTY || key == TOMBSTONE || !live(key)
}

fn live(key: u64) -> bool {
    DescriptionId {
        slot: (key >> 32) as u32,
        generation: key as u32,
    }
    .is_live()
}

/// The registration of `fd` in the epoll instance `ep` refers to.
fn find(ep: c_int, fd: c_int) -> Option<&'static Registration> {
    let key = id(ep)?.key();
    let start = hash(key, fd);
    for i in 0..SLOTS {
        let r = &REGISTRATIONS[(start + i) % SLOTS];
        let k = r.epoll.load(Ordering::Relaxed);
        if k == EMPTY {
            return None;
        }
        if k == key && r.fd.load(Ordering::Relaxed) == fd {
            return Some(r);
        }
    }
    None
}

/// A place for `fd`'s registration in `ep`: its current one (`true`), or a free slot claimed
/// for it (`false`; [`unclaim`] it if the registration fails). `None`: the table is full.
pub fn claim(ep: c_int, fd: c_int) -> Option<(Slot, bool)> {
    if let Some(r) = find(ep, fd) {
        return Some((Slot(r), true));
    }
    let key = id(ep)?.key();
    let start = hash(key, fd);
    for i in 0..SLOTS {
        let r = &REGISTRATIONS[(start + i) % SLOTS];
        let k = r.epoll.load(Ordering::Relaxed);
        if is_free(k)
            && r.epoll
                .compare_exchange(k, key, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            r.fd.store(fd, Ordering::Relaxed);
            return Some((Slot(r), false));
        }
    }
    None
}

/// A registration's place in the table.
pub struct Slot(&'static Registration);

impl Slot {
    /// The registration is made: the program's `data` for it.
    pub fn fill(&self, data: u64) {
        self.0.data.store(data, Ordering::Relaxed);
    }

    /// The registration failed: the slot is free again.
    pub fn unclaim(&self) {
        self.0.epoll.store(TOMBSTONE, Ordering::Relaxed);
    }
}

/// Forgets `fd`'s registration in `ep` (EPOLL_CTL_DEL).
pub fn remove(ep: c_int, fd: c_int) {
    if let Some(r) = find(ep, fd) {
        Slot(r).unclaim();
    }
}

/// The program's `data` for `fd` in `ep`.
pub fn data_of(ep: c_int, fd: c_int) -> Option<u64> {
    find(ep, fd).map(|r| r.data.load(Ordering::Relaxed))
}

/// The fd registered in `ep` with the program's own `data` (a registration the LD did not
/// make with a token): the first one found.
pub fn fd_of(ep: c_int, data: u64) -> Option<c_int> {
    let key = id(ep)?.key();
    // Most programs put the fd itself in `data`: try that first.
    if data <= i32::MAX as u64 && data_of(ep, data as c_int) == Some(data) {
        return Some(data as c_int);
    }
    REGISTRATIONS.iter().find_map(|r| {
        (r.epoll.load(Ordering::Relaxed) == key && r.data.load(Ordering::Relaxed) == data)
            .then(|| r.fd.load(Ordering::Relaxed))
    })
}

/// Every fd registered in `ep` (a scan of the whole table: for the rare waits that need it).
pub fn registered(ep: c_int) -> Vec<c_int> {
    let Some(key) = id(ep).map(|i| i.key()) else {
        return Vec::new();
    };
    REGISTRATIONS
        .iter()
        .filter(|r| r.epoll.load(Ordering::Relaxed) == key)
        .map(|r| r.fd.load(Ordering::Relaxed))
        .collect()
}
