//! The side channel of optimal tracing: for each direction of a TCP channel, a file in the
//! session's runtime dir (`<runtime>/vc/<from>><to>`) where the sender describes each send
//! BEFORE making it: the byte range it covers and the sender's vector clock. The receiver reads
//! the descriptions of the bytes it got. Nothing is added to the program's own stream.
//!
//! Both ends name the file after the channel's two addresses (the sender's local and remote
//! address are the receiver's remote and local one), so they agree without asking the GD.
//! Unix stream sockets have no such names: they have no side channel, and every receive on
//! them is logged (as are receives from peers outside the session, which never write one).
//!
//! Layout: one 4096-byte header page, mapped shared by every process that holds an end (a
//! forked child and an exec'd image share it through the file), then fixed 512-byte entries.
//! The header holds the stream offsets (bytes sent, bytes received, entries written, the entry
//! the receiver is in), so processes that share an fd also share the offsets.

use crate::sys;
use libc::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

/// Size of the mapped header page.
const HEAD: usize = 4096;
/// Size of one entry.
const ENTRY: usize = 512;
/// Vector clock components an entry can carry (the others are dropped, which only makes more
/// receives look racy: conservative).
pub const PAIRS: usize = 61;

/// The shared header of one channel direction.
#[repr(C)]
struct Head {
    sent: AtomicU64,
    entries: AtomicU64,
    recvd: AtomicU64,
    cursor: AtomicU64,
}

/// One component of a vector clock: an actor and how many of its events are known.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ClockPair {
    /// The actor.
    pub actor: u32,
    /// Its events known to the clock's owner.
    pub count: u32,
}

/// One send: bytes `[start, start + len)` and the sender's clock, sparse.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Entry {
    /// Stream offset of the send's first byte.
    pub start: u64,
    /// Bytes the send covers (fixed after the send if it took fewer).
    pub len: u64,
    /// The sending actor.
    pub actor: u32,
    /// How many of `pairs` are used.
    pub count: u32,
    /// The sender's vector clock, sparse.
    pub pairs: [ClockPair; PAIRS],
}

const _: () = assert!(std::mem::size_of::<Entry>() == ENTRY);

impl Entry {
    /// The clock component of `actor` (0 when absent).
    pub fn clock(&self, actor: u32) -> u32 {
        self.pairs[..(self.count as usize).min(PAIRS)]
            .iter()
            .find(|p| p.actor == actor)
            .map_or(0, |p| p.count)
    }
}

/// The entry that holds a stream offset.
pub struct Holding {
    /// Its index.
    pub index: u64,
    /// Stream offset of its first byte.
    pub start: u64,
    /// Where the next send starts (the end of this one, as far as receives are concerned).
    pub end: u64,
}

/// One channel direction, opened by this process.
pub struct Side {
    key: Vec<u8>,
    head: *mut Head,
    file: c_int,
}

impl Side {
    /// Opens (creating if needed) the file for `key` in `dir`.
    pub fn open(dir: &[u8], key: &[u8]) -> Option<Side> {
        let mut path = dir.to_vec();
        path.push(b'/');
        path.extend(key.iter().map(|b| if *b == b'/' { b'_' } else { *b }));
        let fd = sys::open(&path, libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC, 0o600);
        if fd < 0 {
            return None;
        }
        let fd = crate::fds::mark_ours(sys::move_high(fd, crate::fds::HIGH_FD));
        if (sys::file_size(fd) as usize) < HEAD {
            // Only ever growing: another process may have written entries already.
            // SAFETY: ftruncate of a file we just opened (no memory is involved).
            unsafe { libc::syscall(libc::SYS_ftruncate, fd, HEAD as libc::off_t) };
        }
        // SAFETY: mapping a file we just opened, at least HEAD bytes long.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                HEAD,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            crate::fds::forget_ours(fd);
            sys::close(fd);
            return None;
        }
        Some(Side {
            key: key.to_vec(),
            head: p.cast(),
            file: fd,
        })
    }

    /// The open file.
    pub fn fd(&self) -> c_int {
        self.file
    }

    /// Whether this is the file for `key`.
    pub fn is(&self, key: &[u8]) -> bool {
        self.key == key
    }

    fn head(&self) -> &Head {
        // SAFETY: mapped for the life of this process (never unmapped).
        unsafe { &*self.head }
    }

    /// Sender: describes a send of `len` bytes about to be made; returns its entry index.
    pub fn announce(&self, len: u64, actor: u32, pairs: &[ClockPair]) -> u64 {
        let head = self.head();
        let index = head.entries.load(Ordering::Acquire);
        let mut e = Entry {
            start: head.sent.load(Ordering::Acquire),
            len,
            actor,
            count: pairs.len().min(PAIRS) as u32,
            pairs: [ClockPair { actor: 0, count: 0 }; PAIRS],
        };
        let n = pairs.len().min(PAIRS);
        e.pairs[..n].copy_from_slice(&pairs[..n]);
        self.write_at(
            (HEAD + index as usize * ENTRY) as i64,
            &e as *const Entry as *const u8,
            ENTRY,
        );
        head.entries.store(index + 1, Ordering::Release);
        index
    }

    /// Sender: the send of entry `index` (announced with `len`) took `sent` bytes (< 0: none).
    pub fn sent(&self, index: u64, len: u64, sent: isize) {
        let took = sent.max(0) as u64;
        if took > 0 {
            self.head().sent.fetch_add(took, Ordering::AcqRel);
        }
        if took != len {
            self.write_at(
                (HEAD + index as usize * ENTRY + 8) as i64,
                &took as *const u64 as *const u8,
                8,
            );
        }
    }

    fn write_at(&self, off: i64, p: *const u8, n: usize) {
        let saved = sys::errno();
        // SAFETY: p points to n readable bytes.
        unsafe { libc::pwrite(self.file, p.cast(), n, off) };
        sys::set_errno(saved);
    }

    /// Entry `index`, if written.
    pub fn entry(&self, index: u64) -> Option<Entry> {
        if index >= self.head().entries.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: an all-integer struct; every bit pattern is valid.
        let mut e: Entry = unsafe { std::mem::zeroed() };
        let saved = sys::errno();
        // SAFETY: reading ENTRY bytes into e.
        let n = unsafe {
            libc::pread(
                self.file,
                (&mut e as *mut Entry).cast(),
                ENTRY,
                (HEAD + index as usize * ENTRY) as i64,
            )
        };
        sys::set_errno(saved);
        (n == ENTRY as isize).then_some(e)
    }

    /// Receiver: bytes received so far on this direction.
    pub fn received(&self) -> u64 {
        self.head().recvd.load(Ordering::Acquire)
    }

    /// The entry holding stream offset `at`. `None` if no written entry holds it yet.
    pub fn holding(&self, at: u64) -> Option<Holding> {
        let head = self.head();
        let n = head.entries.load(Ordering::Acquire);
        if n == 0 {
            return None;
        }
        let mut i = head.cursor.load(Ordering::Acquire).min(n - 1);
        let mut cur = self.entry(i)?;
        if cur.start > at {
            i = 0;
            cur = self.entry(0)?;
        }
        let mut next = self.entry(i + 1);
        while let Some(e) = next {
            if e.start > at {
                break;
            }
            i += 1;
            cur = e;
            next = self.entry(i + 1);
        }
        let end = next.map_or(cur.start + cur.len, |e| e.start);
        (cur.start <= at && at < end).then_some(Holding {
            index: i,
            start: cur.start,
            end,
        })
    }

    /// Receiver: `n` more bytes were received; `cursor` is the entry now being read.
    pub fn consumed(&self, n: u64, cursor: u64) {
        let head = self.head();
        head.recvd.fetch_add(n, Ordering::AcqRel);
        head.cursor.store(cursor, Ordering::Release);
    }
}
