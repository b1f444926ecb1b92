//! Record: the lock history file, written by every thread at once without a lock.
//!
//! The file is mapped shared; a line is written at a place reserved with one `fetch_add` on
//! the write position, so no thread waits for another's write and a line costs no system
//! call. The file grows by doubling (`ftruncate` under a spin lock, rare); the mapping is
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

/// Appends access `index` of `object`.
pub fn append(object: u32, index: u64, access: Access) {
    let base = BASE.load(Ordering::Acquire);
    if base.is_null() {
        return;
    }
    let mut line = [0u8; MAX_LINE];
    let n = write_line(&mut line, object, index, access);
    let at = POS.fetch_add(n, Ordering::Relaxed);
    if at + n > MAX_BYTES {
        FULL.store(true, Ordering::Relaxed);
        return;
    }
    if at + n > SIZE.load(Ordering::Acquire) && !grow(at + n) {
        FULL.store(true, Ordering::Relaxed);
        return;
    }
    // SAFETY: [at, at + n) was reserved by this thread alone, inside the mapping and the file.
    unsafe { std::ptr::copy_nonoverlapping(line.as_ptr(), base.add(at), n) };
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
}
