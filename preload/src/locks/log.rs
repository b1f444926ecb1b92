//! Record: the lock history file, written by every thread at once without a lock.
//!
//! The file is mapped shared; each thread reserves a piece of it ([`PIECE`] bytes, one
//! `fetch_add` on the write position) and writes its lines there, so no thread waits for
//! another's write, threads do not share the position's cache line on every line, and a line
//! costs no system call. What a thread leaves of a piece is padded with newlines (empty lines,
//! which the reader skips). The file grows by doubling (`ftruncate` under a spin lock, rare); the mapping is
//! reserved whole at the start (`MAX_BYTES` of address space, no memory), so it never moves.
//! The file keeps its grown size at the end: threads may still write while the process
//! exits, and a write past a shrunk file would be SIGBUS. The reader ignores the NUL bytes
//! after the last line (`ddbx_wire::locks`).

use ddbx_wire::locks::{Access, MAX_LINE, write_line};
use libc::c_int;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use crate::sys;

/// The most bytes one process's lock history may hold (address space reserved, not memory).
const MAX_BYTES: usize = 1 << 32;
/// The file's first size.
const FIRST_SIZE: usize = 1 << 16;
/// The piece of the file a thread reserves at a time.
const PIECE: usize = 4096;

thread_local! {
    /// This thread's piece: the next byte to write and the piece's end (0, 0: none yet).
    static MINE: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// The mapping (null: not recording).
static BASE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
/// The next free byte.
static POS: AtomicUsize = AtomicUsize::new(0);
/// The file's size now.
static SIZE: AtomicUsize = AtomicUsize::new(0);
/// The file.
static FD: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Held while the file grows.
static GROWING: AtomicBool = AtomicBool::new(false);
/// Lines were dropped: the history is longer than [`MAX_BYTES`].
pub static FULL: AtomicBool = AtomicBool::new(false);

/// Creates the lock history at `path` with its header and maps it; false when it cannot.
pub fn open(path: &[u8], header: &[u8]) -> bool {
    let fd = sys::open(
        path,
        libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
        0o600,
    );
    if fd < 0 {
        return false;
    }
    let fd = sys::move_high(fd, crate::fds::HIGH_FD);
    crate::fds::mark_ours(fd);
    // SAFETY: a fresh private reservation of address space, no fixed address.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            MAX_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_NORESERVE,
            fd,
            0,
        )
    };
    if base == libc::MAP_FAILED || !truncate(fd, FIRST_SIZE) {
        sys::close(fd);
        return false;
    }
    SIZE.store(FIRST_SIZE, Ordering::Relaxed);
    FD.store(fd as usize, Ordering::Relaxed);
    // SAFETY: the mapping covers the file's first FIRST_SIZE bytes, more than a header.
    unsafe { std::ptr::copy_nonoverlapping(header.as_ptr(), base.cast::<u8>(), header.len()) };
    POS.store(header.len(), Ordering::Relaxed);
    BASE.store(base.cast(), Ordering::Release);
    true
}

fn truncate(fd: c_int, size: usize) -> bool {
    // SAFETY: no pointers.
    unsafe { libc::syscall(libc::SYS_ftruncate, fd, size as libc::off_t) == 0 }
}

/// Appends accesses `index` to `index + count - 1` of `object` (one line): formatted straight
/// into this thread's piece.
pub fn append(object: u32, index: u64, access: Access, count: u64) {
    let base = BASE.load(Ordering::Acquire);
    if base.is_null() {
        return;
    }
    let Ok((mut at, mut end)) = MINE.try_with(|m| m.get()) else {
        return;
    };
    if at + MAX_LINE > end {
        pad(base, at, end);
        at = POS.fetch_add(PIECE, Ordering::Relaxed);
        end = at + PIECE;
        if end > MAX_BYTES || (end > SIZE.load(Ordering::Acquire) && !grow(end)) {
            FULL.store(true, Ordering::Relaxed);
            let _ = MINE.try_with(|m| m.set((0, 0)));
            return;
        }
    }
    // SAFETY: [at, at + MAX_LINE) is in this thread's own piece, inside the mapping and the
    // file, and nobody else writes or reads it while the process runs.
    let line = unsafe { std::slice::from_raw_parts_mut(base.add(at), MAX_LINE) };
    let n = write_line(line, object, index, access, count);
    let _ = MINE.try_with(|m| m.set((at + n, end)));
}

/// Fills the rest of a piece, `[at, end)`, with newlines.
fn pad(base: *mut u8, at: usize, end: usize) {
    if at < end {
        // SAFETY: the calling thread's own piece, inside the mapping and the file.
        unsafe { std::ptr::write_bytes(base.add(at), b'\n', end - at) };
    }
}

/// The calling thread ends: the rest of its piece becomes empty lines.
pub fn thread_ends() {
    let base = BASE.load(Ordering::Acquire);
    if let Ok((at, end)) = MINE.try_with(|m| m.replace((0, 0)))
        && !base.is_null()
    {
        pad(base, at, end);
    }
}

/// Makes the file at least `end` bytes long.
fn grow(end: usize) -> bool {
    while GROWING
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    let mut ok = true;
    let mut size = SIZE.load(Ordering::Relaxed);
    while size < end {
        let next = (size * 2).min(MAX_BYTES);
        if !truncate(FD.load(Ordering::Relaxed) as c_int, next) {
            ok = false;
            break;
        }
        size = next;
        SIZE.store(size, Ordering::Release);
    }
    GROWING.store(false, Ordering::Release);
    ok
}

/// Forgets the parent's file in a forked child (the mapping goes, the fd is closed).
pub fn forget() {
    let base = BASE.swap(std::ptr::null_mut(), Ordering::Relaxed);
    if !base.is_null() {
        // SAFETY: our own mapping of MAX_BYTES; nothing in this (single-threaded) child uses it.
        unsafe { libc::munmap(base.cast(), MAX_BYTES) };
        let fd = FD.swap(usize::MAX, Ordering::Relaxed) as c_int;
        crate::fds::forget_ours(fd);
        sys::close(fd);
    }
    POS.store(0, Ordering::Relaxed);
    SIZE.store(0, Ordering::Relaxed);
    GROWING.store(false, Ordering::Relaxed);
    let _ = MINE.try_with(|m| m.set((0, 0)));
}
