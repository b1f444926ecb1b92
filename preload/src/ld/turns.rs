//! The order of writes into a pipe that several processes write (`seq … | xargs -P 4 …`, two
//! children sharing their parent's pipe): the reader cannot tell whose bytes it got, so the
//! record numbers each write into a pipe of the session (its *turn*: how many writes into that
//! pipe came before it, `Record::Send::turn`) and replay makes every writer wait for its turn.
//!
//! Every process holding the pipe shares one counter: a page of a file named after the pipe's
//! inode in `<runtime dir of the GD>/pipes`, mapped shared (the process that makes the pipe
//! clears it; forked children keep the mapping; an exec'd image maps it again). While
//! recording, a write takes the page's lock, writes, and counts itself, so that the turn it
//! records is the order in which the pipe took the bytes. The lock is a futex word holding the
//! writer's pid; one whose holder died is taken over.

use super::Ld;
use crate::{fds, sys};
use libc::c_int;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// The shared counter of one pipe.
#[repr(C)]
struct Page {
    /// The pid of the writer holding the lock (0: free).
    lock: AtomicU32,
    /// Writes into the pipe so far (the next write's turn).
    writes: AtomicU32,
    /// Processes waiting on `lock` or `writes`: a writer wakes them only when there are some
    /// (a futex wake is a system call).
    waiters: AtomicU32,
}

const PAGE: usize = 4096;
/// Pipes whose page one process can have mapped at once (more: their writes get no turn).
const SLOTS: usize = 256;

/// Which description (its key) each mapped page belongs to, and the page's address.
static KEYS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
static PAGES: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

impl Ld {
    /// The page of the pipe `fd` is an end of, mapped if need be (`fresh`: cleared, for a pipe
    /// just made).
    fn turn_page(&self, fd: c_int, fresh: bool) -> Option<&'static Page> {
        let key = fds::id(fd)?.key();
        if !fresh && let Some(i) = KEYS.iter().position(|k| k.load(Ordering::Relaxed) == key) {
            let addr = PAGES[i].load(Ordering::Relaxed);
            // SAFETY: a page mapped shared below, unmapped only when its slot is reused.
            return (addr != 0).then(|| unsafe { &*(addr as *const Page) });
        }
        let ino = {
            // SAFETY: all-zero is a valid stat; fstat writes into it.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: `st` is ours.
            if unsafe { libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) } != 0 {
                return None;
            }
            st.st_ino
        };
        let cut = self.gd_path.iter().rposition(|b| *b == b'/')?;
        let mut path = self.gd_path[..cut].to_vec();
        path.extend_from_slice(b"/pipes");
        let mut buf = [0u8; 512];
        let dir = sys::cstr(&path, &mut buf)?;
        // SAFETY: a NUL-terminated path.
        unsafe { libc::mkdir(dir, 0o700) };
        path.extend_from_slice(format!("/{ino}").as_bytes());
        let trunc = if fresh { libc::O_TRUNC } else { 0 };
        let file = sys::open(
            &path,
            libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC | trunc,
            0o600,
        );
        if file < 0 {
            return None;
        }
        // SAFETY: ftruncate of the file just opened (no pointer).
        unsafe { libc::syscall(libc::SYS_ftruncate, file, PAGE as libc::off_t) };
        let p = map_shared(file, PAGE)?;
        // Reuse the slot of this key (a fresh pipe at a reused description), else a free or
        // dead one.
        let slot = KEYS
            .iter()
            .position(|k| k.load(Ordering::Relaxed) == key)
            .or_else(|| {
                (0..SLOTS).find(|&i| {
                    let k = KEYS[i].load(Ordering::Relaxed);
                    k == 0 || !fds::DescriptionId::from_key(k).is_live()
                })
            });
        let Some(i) = slot else {
            // No room to keep it: this pipe's writes get no turn.
            // SAFETY: the page mapped just above, used by nobody.
            unsafe { libc::munmap(p, PAGE) };
            return None;
        };
        KEYS[i].store(key, Ordering::Relaxed);
        let old = PAGES[i].swap(p as usize, Ordering::Relaxed);
        if old != 0 {
            // The page of a pipe this process no longer holds (or of the same description's
            // earlier pipe): nothing refers to it any more.
            // SAFETY: a page mapped here earlier, PAGE bytes; no reference to it outlives a call.
            unsafe { libc::munmap(old as *mut libc::c_void, PAGE) };
        }
        // SAFETY: mapped shared just above, PAGE bytes, unmapped only when its slot is reused.
        Some(unsafe { &*(p as *const Page) })
    }

    /// A pipe was just made with `fd` as one end: its counter starts at 0.
    pub fn pipe_made(&self, fd: c_int) {
        self.turn_page(fd, true);
    }

    /// Record: a write into the pipe `fd` writes into, made by `call` in turn. Returns what
    /// `call` returned and the write's turn (`None`: no shared counter, or nothing written).
    pub fn write_in_turn(&self, fd: c_int, call: impl FnOnce() -> isize) -> (isize, Option<u64>) {
        let Some(page) = self.turn_page(fd, false) else {
            return (call(), None);
        };
        lock(page, self.pid as u32);
        let r = call();
        let err = sys::errno();
        let turn = (r > 0).then(|| page.writes.fetch_add(1, Ordering::AcqRel) as u64);
        unlock(page);
        sys::set_errno(err);
        (r, turn)
    }

    /// Replay: waits until the writes into the pipe `fd` before turn `turn` are made.
    pub fn wait_for_turn(&self, fd: c_int, turn: u64) {
        let Some(page) = self.turn_page(fd, false) else {
            return;
        };
        loop {
            let now = page.writes.load(Ordering::Acquire);
            if now as u64 >= turn {
                return;
            }
            page.waiters.fetch_add(1, Ordering::AcqRel);
            futex_wait(&page.writes, now);
            page.waiters.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Replay: the write of its turn into the pipe `fd` is made; the next writer goes.
    pub fn turn_done(&self, fd: c_int) {
        if let Some(page) = self.turn_page(fd, false) {
            page.writes.fetch_add(1, Ordering::AcqRel);
            if page.waiters.load(Ordering::Acquire) > 0 {
                futex_wake(&page.writes);
            }
        }
    }
}

/// Takes the page's lock for the process `me`.
fn lock(page: &Page, me: u32) {
    lock_shared(&page.lock, &page.waiters, me, u64::MAX);
}

fn unlock(page: &Page) {
    unlock_shared(&page.lock, &page.waiters);
}

/// Takes a lock word in shared memory (the holder's pid; 0: free) for the process `me`,
/// taking it over from a holder that died; `waiters` counts the processes asleep on it.
/// `false` when a live holder kept it `patience` nanoseconds.
pub(super) fn lock_shared(lock: &AtomicU32, waiters: &AtomicU32, me: u32, patience: u64) -> bool {
    let since = sys::monotonic_ns();
    loop {
        match lock.compare_exchange(0, me, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(holder) => {
                let dead = sys::kill(holder as libc::pid_t, 0) != 0 && sys::errno() == libc::ESRCH;
                if dead
                    && lock
                        .compare_exchange(holder, me, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                {
                    return true;
                }
                if sys::monotonic_ns().saturating_sub(since) >= patience {
                    return false;
                }
                waiters.fetch_add(1, Ordering::AcqRel);
                futex_wait(lock, holder);
                waiters.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

/// Frees a lock word taken with [`lock_shared`], waking its sleepers if any.
pub(super) fn unlock_shared(lock: &AtomicU32, waiters: &AtomicU32) {
    lock.store(0, Ordering::Release);
    if waiters.load(Ordering::Acquire) > 0 {
        futex_wake(lock);
    }
}

/// Maps `size` bytes of the open file `file` shared, read-write, and closes `file` (the
/// mapping stays); its address.
pub(super) fn map_shared(file: c_int, size: usize) -> Option<*mut libc::c_void> {
    // SAFETY: a shared mapping of an fd we opened; it is closed once mapped.
    let p = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file,
            0,
        );
        libc::syscall(libc::SYS_close, file);
        p
    };
    (p != libc::MAP_FAILED).then_some(p)
}

/// Waits (at most 50 ms, then the caller looks again) while `word` holds `value`.
pub(super) fn futex_wait(word: &AtomicU32, value: u32) {
    let saved = sys::errno();
    let timeout = libc::timespec {
        tv_sec: 0,
        tv_nsec: 50_000_000,
    };
    // Another thread of the process may be the one to act: the baton is put down (`baton.rs`).
    crate::baton::put_down_for(|| {
        // SAFETY: `word` is a live u32 in a shared mapping; the timeout is ours.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT,
                value,
                &timeout as *const libc::timespec,
            )
        }
    });
    sys::set_errno(saved);
}

pub(super) fn futex_wake(word: &AtomicU32) {
    let saved = sys::errno();
    // SAFETY: `word` is a live u32 in a shared mapping.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX) };
    sys::set_errno(saved);
}
