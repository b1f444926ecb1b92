//! Threads and locks (paper 000, ARL): thread actors and the per-object lock history.
//!
//! Nothing here runs until the process creates its first thread (`pthread_create`): until
//! then every lock call passes straight through after one relaxed load ([`threaded`]). From
//! the first creation on:
//!
//! * every thread has a logical id, the same in every run: the main thread is `t1`, and each
//!   `pthread_create` gives the next id *in the recorded order of creations* (object 0, the
//!   thread table, is ordered like any lock object, so replay creates threads in the record's
//!   order and each gets the id its creation had); the id is a thread-local, set by the
//!   trampoline the new thread starts in;
//! * every mutex and condition variable is an object, numbered in the order of first touch
//!   ([`table`]); the record appends each access (thread, op, result) to the lock history
//!   ([`log`]), and replay makes each access wait for its recorded turn ([`order`]).
//!
//! This state is separate from the LD's single-threaded `Ld`: atomics and thread-locals only,
//! set once by the LD's start (the mode and the file's path) and cleared in a forked child.

pub mod log;
pub mod order;
pub mod table;

use ddbx_wire::ActorId;
use ddbx_wire::locks::{Access, LockHistory, Op, header_line};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, Ordering};

use crate::sys;

/// Lock objects a process may have (beyond: passed through, unordered).
pub const MAX_OBJECTS: usize = 1 << 16;

/// Not recording or replaying locks.
pub const OFF: u8 = 0;
/// Recording.
pub const RECORD: u8 = 1;
/// Replaying.
pub const REPLAY: u8 = 2;

/// The LD's mode for locks (set at the LD's start).
static MODE: AtomicU8 = AtomicU8::new(OFF);
/// The process has created a thread: lock calls are recorded or replayed.
static THREADED: AtomicBool = AtomicBool::new(false);
/// Where the lock history is (record: written; replay: read), as set by the LD's start.
static PATH: AtomicPtr<(ActorId, Vec<u8>)> = AtomicPtr::new(std::ptr::null_mut());
/// Record: the next object to be born.
static NEXT_OBJECT: AtomicU32 = AtomicU32::new(1);
/// Record: the next thread id.
static NEXT_THREAD: AtomicU32 = AtomicU32::new(2);
/// Ordering gave up (a divergence): run freely from then on.
static FREE: AtomicBool = AtomicBool::new(false);
/// Where diagnostics go (the LD's log fd, -1: nowhere).
static LOG_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
/// Record: accesses so far per object (the next access's index).
static COUNTS: [AtomicU64; MAX_OBJECTS] = [ZERO; MAX_OBJECTS];

thread_local! {
    /// This thread's logical id (0: not known yet).
    static ME: Cell<u32> = const { Cell::new(0) };
}

/// Whether lock calls are recorded or replayed now (cheap: the hooks' first test).
#[inline]
pub fn threaded() -> bool {
    THREADED.load(Ordering::Relaxed)
}

/// The mode for locks.
pub fn mode() -> u8 {
    MODE.load(Ordering::Relaxed)
}

/// Set by the LD's start: this image records (`record`) or replays locks, with the lock
/// history at `path`.
pub fn configure(mode: u8, actor: ActorId, path: &str, log_fd: i32) {
    let old = PATH.swap(
        Box::into_raw(Box::new((actor, path.as_bytes().to_vec()))),
        Ordering::AcqRel,
    );
    if !old.is_null() {
        // SAFETY: from Box::into_raw above, swapped out, so nobody else holds it.
        drop(unsafe { Box::from_raw(old) });
    }
    LOG_FD.store(log_fd, Ordering::Relaxed);
    MODE.store(mode, Ordering::Release);
}

/// This thread's logical id; 0 for a thread the LD did not see created (its lock calls pass
/// through).
pub fn me() -> u32 {
    ME.try_with(|me| {
        if me.get() == 0 && sys::gettid() == sys::getpid() {
            me.set(1);
        }
        me.get()
    })
    .unwrap_or(0)
}

/// The calling thread is thread `id` (the trampoline of a new thread).
pub fn set_me(id: u32) {
    let _ = ME.try_with(|me| me.set(id));
}

/// Writes a diagnostic to the LD's log.
pub fn diag(msg: &str) {
    sys::diag(LOG_FD.load(Ordering::Relaxed), msg);
}

/// The first `pthread_create`: opens the lock history (record) or loads it (replay), and from
/// now on lock calls are ordered. False: threads run unrecorded (no mode, or the file could
/// not be made or read; said in the LD's log).
pub fn start_threads() -> bool {
    if threaded() {
        return true;
    }
    let p = PATH.load(Ordering::Acquire);
    if p.is_null() {
        return false;
    }
    // SAFETY: set by `configure` and only replaced there (by the LD's start, not now).
    let (actor, path) = unsafe { &*p };
    match mode() {
        RECORD => {
            if !log::open(path, header_line(*actor).as_bytes()) {
                diag("ddbx-ld: cannot create the lock history; threads run unrecorded");
                return false;
            }
            COUNTS[0].store(1, Ordering::Relaxed);
            log::append(0, 0, access(1, Op::New, ddbx_wire::locks::kind::THREADS));
        }
        REPLAY => {
            let path = std::path::Path::new(std::ffi::OsStr::new(
                std::str::from_utf8(path).unwrap_or(""),
            ));
            match LockHistory::load(path, *actor) {
                Ok(history) => order::install(history),
                Err(e) => {
                    diag(&format!("ddbx-ld: lock order not replayed: {e}"));
                    return false;
                }
            }
        }
        _ => return false,
    }
    THREADED.store(true, Ordering::Release);
    true
}

/// An access by thread `thread`.
pub fn access(thread: u32, op: Op, arg: u32) -> Access {
    Access { thread, op, arg }
}

/// Record: the object of the lock at `addr` (a new one, written as born, on first touch).
/// `None`: too many objects.
pub fn record_object(addr: usize, kind: u32, me: u32) -> Option<u32> {
    if let Some(id) = table::lookup(addr) {
        return Some(id);
    }
    table::exclusive(|| {
        if let Some(id) = table::lookup(addr) {
            return Some(id);
        }
        let id = NEXT_OBJECT.load(Ordering::Relaxed);
        if id as usize >= MAX_OBJECTS || !table::insert(addr, id) {
            return None;
        }
        NEXT_OBJECT.store(id + 1, Ordering::Relaxed);
        COUNTS[id as usize].store(1, Ordering::Relaxed);
        log::append(id, 0, access(me, Op::New, kind));
        Some(id)
    })
}

/// Record: appends the next access of `object`.
pub fn note(object: u32, access: Access) {
    let index = COUNTS[object as usize].fetch_add(1, Ordering::AcqRel);
    log::append(object, index, access);
}

/// Record: a new thread's id.
pub fn next_thread() -> u32 {
    NEXT_THREAD.fetch_add(1, Ordering::Relaxed)
}

/// Replay: the plan to follow, unless ordering gave up.
pub fn replay_plan() -> Option<&'static order::Plan> {
    if FREE.load(Ordering::Relaxed) {
        return None;
    }
    order::plan()
}

/// Replay: something did not come as recorded. Said once in the LD's log; locks run freely
/// from then on (the program goes on rather than hang).
pub fn give_up(why: &str) {
    if !FREE.swap(true, Ordering::Relaxed) {
        diag(&format!(
            "ddbx-ld: lock order diverged: {why}; locks run freely from here"
        ));
    }
}

/// In a forked child: the only thread left is the child's main thread, and none of its
/// parent's objects or threads carry over.
pub fn forked_child() {
    if !threaded() {
        set_me(1);
        return;
    }
    THREADED.store(false, Ordering::Relaxed);
    log::forget();
    let born = NEXT_OBJECT.swap(1, Ordering::Relaxed) as usize;
    for c in COUNTS.iter().take(born.min(MAX_OBJECTS)) {
        c.store(0, Ordering::Relaxed);
    }
    COUNTS[0].store(0, Ordering::Relaxed);
    NEXT_THREAD.store(2, Ordering::Relaxed);
    FREE.store(false, Ordering::Relaxed);
    table::clear();
    order::forget();
    set_me(1);
}

/// Threads remembered for `pthread_join` (a ring: the newest win).
const HANDLES: usize = 4096;
#[allow(clippy::declare_interior_mutable_const)]
const NO_HANDLE: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const NO_THREAD: AtomicU32 = AtomicU32::new(0);
static HANDLE_KEYS: [AtomicU64; HANDLES] = [NO_HANDLE; HANDLES];
static HANDLE_IDS: [AtomicU32; HANDLES] = [NO_THREAD; HANDLES];
static HANDLE_NEXT: AtomicU64 = AtomicU64::new(0);

/// Remembers that `handle` (a `pthread_t`) is thread `id`.
pub fn register_thread(handle: libc::pthread_t, id: u32) {
    let slot = (HANDLE_NEXT.fetch_add(1, Ordering::Relaxed) as usize) % HANDLES;
    HANDLE_IDS[slot].store(id, Ordering::Relaxed);
    HANDLE_KEYS[slot].store(handle, Ordering::Release);
}

/// The id of the thread with `handle` (0: not known), newest first.
pub fn thread_of(handle: libc::pthread_t) -> u32 {
    let next = HANDLE_NEXT.load(Ordering::Acquire) as usize;
    (0..next.min(HANDLES))
        .map(|back| (next - 1 - back) % HANDLES)
        .find(|&slot| HANDLE_KEYS[slot].load(Ordering::Acquire) == handle)
        .map_or(0, |slot| HANDLE_IDS[slot].load(Ordering::Relaxed))
}
