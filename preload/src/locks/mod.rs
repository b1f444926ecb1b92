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

/// A message built without allocating: lock hooks may run inside the program's allocator
/// (jemalloc takes pthread mutexes), where a `malloc` of ours would re-enter it.
pub struct StackText {
    buf: [u8; 240],
    len: usize,
}

impl StackText {
    /// Empty.
    pub const fn new() -> StackText {
        StackText {
            buf: [0; 240],
            len: 0,
        }
    }

    /// The text so far.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("?")
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let mut n = s.len().min(self.buf.len() - self.len);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

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

/// A thread the LD did not see created (made before the first `pthread_create` was hooked, or
/// with a raw `clone`): its lock calls pass through.
const UNKNOWN: u32 = u32::MAX;

/// This thread's logical id; 0 for a thread the LD did not see created.
///
/// A new thread learns its id on its first call here: the thread that created it registered
/// its handle with the id once `pthread_create` returned ([`register_thread`]), and while a
/// creation is under way an unregistered thread waits for that. There is no start trampoline:
/// a thread that ends with `pthread_exit` or is cancelled unwinds its stack, and the preload,
/// built with `panic = "abort"`, aborts when an unwind crosses one of its frames.
pub fn me() -> u32 {
    let id = ME.try_with(|me| me.get()).unwrap_or(UNKNOWN);
    match id {
        UNKNOWN => 0,
        0 => identify(),
        id => id,
    }
}

/// The calling thread's id if it is known already (0: not yet, or never): [`me`] without
/// finding it, for the entry of every hook (`crate::hooks::signal::at_entry`), which must not
/// wait for a creation under way.
pub fn known_me() -> u32 {
    match ME.try_with(|me| me.get()).unwrap_or(UNKNOWN) {
        UNKNOWN => 0,
        id => id,
    }
}

/// Finds the calling thread's id (see [`me`]) and remembers it.
fn identify() -> u32 {
    if sys::gettid() == sys::getpid() {
        set_me(1);
        return 1;
    }
    // SAFETY: no arguments.
    let handle = unsafe { libc::pthread_self() };
    loop {
        let creating = IN_FLIGHT.load(Ordering::Acquire);
        let id = thread_of(handle, false);
        if id != 0 {
            set_me(id);
            // The thread's end is noted by its exit note's destructor (it runs after a return
            // from the start routine and after pthread_exit alike).
            let _ = EXIT_NOTE.try_with(|n| n.set(true));
            return id;
        }
        if creating == 0 {
            set_me(UNKNOWN);
            return 0;
        }
        // SAFETY: no arguments.
        unsafe { libc::syscall(libc::SYS_sched_yield) };
    }
}

/// A creation is under way (between the real `pthread_create` and [`register_thread`]).
pub fn creating(starts: bool) {
    if starts {
        IN_FLIGHT.fetch_add(1, Ordering::AcqRel);
    } else {
        IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Creations under way.
static IN_FLIGHT: AtomicU32 = AtomicU32::new(0);

/// Notes a thread's end when its thread-locals are destroyed.
struct ExitNote(Cell<bool>);

impl ExitNote {
    fn set(&self, armed: bool) {
        self.0.set(armed);
    }
}

impl Drop for ExitNote {
    fn drop(&mut self) {
        if !self.0.get() || !threaded() {
            return;
        }
        let me = ME.try_with(|me| me.get()).unwrap_or(0);
        if me != 0 && me != UNKNOWN {
            thread_table(me, Op::Exit, 0);
            if mode() == REPLAY {
                order::ended(me);
            }
            log::thread_ends();
            // SAFETY: no arguments.
            thread_ended(unsafe { libc::pthread_self() });
        }
    }
}

thread_local! {
    /// Armed once the thread knows its id.
    static EXIT_NOTE: ExitNote = const { ExitNote(Cell::new(false)) };
}

/// An access to the thread table (object 0) by `me`: recorded, or waited for in replay.
/// Returns the recorded access (replay), whose `arg` decides the outcome.
///
/// The thread table stays ordered after the other objects' order gave up ([`give_up`]): a
/// thread created then still gets its recorded id, by which replay gives each thread its own
/// events (without one, its socket I/O was refused as a second thread's, exit 103).
pub fn thread_table(me: u32, op: Op, arg: u32) -> Option<Access> {
    if mode() == REPLAY {
        let plan = order::plan()?;
        return match order::wait_turn(plan, 0, me, op) {
            order::Turn::Mine(at, a) => {
                order::advance(0, at);
                Some(a)
            }
            order::Turn::Free => None,
            order::Turn::Diverged(why) => {
                give_up(&why);
                None
            }
        };
    }
    note(0, access(me, op, arg));
    None
}

/// The calling thread is thread `id`.
pub fn set_me(id: u32) {
    let _ = ME.try_with(|me| me.set(id));
}

/// `dladdr1`'s request for the symbol table entry (glibc's `<dlfcn.h>`).
const RTLD_DL_SYMENT: libc::c_int = 1;

/// An ELF64 symbol table entry (`Elf64_Sym` of `<elf.h>`).
#[repr(C)]
struct Elf64Sym {
    st_name: u32,
    st_info: u8,
    st_other: u8,
    st_shndx: u16,
    st_value: u64,
    st_size: u64,
}

/// Writes a diagnostic to the LD's log.
pub fn diag(msg: &str) {
    sys::diag(LOG_FD.load(Ordering::Relaxed), msg);
}

/// Whether the program's `malloc` is another allocator than glibc's (jemalloc in redis,
/// tcmalloc). Such an allocator takes pthread mutexes inside `malloc`, and the LD's own
/// allocations (which differ between a record and its replay) go through it too, so the
/// order of its locks in replay cannot follow the record's: a replay of redis waited for ever
/// for a jemalloc lock's turn. Lock order is then neither recorded nor replayed.
pub fn foreign_allocator() -> bool {
    static SEEN: AtomicU8 = AtomicU8::new(0);
    match SEEN.load(Ordering::Relaxed) {
        1 => return false,
        2 => return true,
        _ => {}
    }
    // SAFETY: a NUL-terminated name; dladdr1 fills the zeroed Dl_info we pass and points
    // `sym` at the symbol table entry it found (or leaves it null).
    let foreign = unsafe {
        let p = libc::dlsym(libc::RTLD_DEFAULT, c"malloc".as_ptr());
        let mut info: libc::Dl_info = std::mem::zeroed();
        let mut sym: *mut libc::c_void = std::ptr::null_mut();
        if p.is_null()
            || libc::dladdr1(p, &mut info, &mut sym, RTLD_DL_SYMENT) == 0
            || info.dli_fname.is_null()
        {
            false
        } else {
            let name = std::ffi::CStr::from_ptr(info.dli_fname).to_bytes();
            // A program built without -fPIE that takes malloc's address (Debian's python3)
            // has a `malloc` of its own that is only a PLT entry leading to libc's: its
            // symbol is undefined in the program (section index 0), not another allocator.
            let undefined = !sym.is_null() && (*sym.cast::<Elf64Sym>()).st_shndx == 0;
            !undefined && !name.windows(7).any(|w| w == b"libc.so")
        }
    };
    SEEN.store(if foreign { 2 } else { 1 }, Ordering::Relaxed);
    foreign
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
            log::append(0, 0, access(1, Op::New, ddbx_wire::locks::kind::THREADS), 1);
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
        if id as usize >= MAX_OBJECTS {
            return None;
        }
        // Access 0 (`new`) is taken before the object can be found: another thread that
        // looks it up as soon as it is in the table notes its access as 1 or later (once, it
        // took 0 too, and the history did not load).
        COUNTS[id as usize].store(1, Ordering::Release);
        if !table::insert(addr, id) {
            return None;
        }
        NEXT_OBJECT.store(id + 1, Ordering::Relaxed);
        log::append(id, 0, access(me, Op::New, kind), 1);
        Some(id)
    })
}

/// Record: appends the next access of `object`.
pub fn note(object: u32, access: Access) {
    let index = COUNTS[object as usize].fetch_add(1, Ordering::AcqRel);
    log::append(object, index, access, 1);
}

/// Record: the runs not written yet, per object: the run's (thread, op) as
/// `thread << 8 | op + 1` (0: none), its first index and its length.
static RUN_KEY: [AtomicU64; MAX_OBJECTS] = [ZERO; MAX_OBJECTS];
static RUN_FIRST: [AtomicU64; MAX_OBJECTS] = [ZERO; MAX_OBJECTS];
static RUN_COUNT: [AtomicU64; MAX_OBJECTS] = [ZERO; MAX_OBJECTS];

/// Record: appends an acquisition of a mutex (the calling thread holds it when it succeeded).
/// Consecutive successful acquisitions by one
/// thread are one run, written as one line when another access of the object comes, when the
/// object is forgotten, or at the exit ([`flush_runs`]): the mutex is held, so nobody else
/// touches its run meanwhile.
pub fn note_acquired(object: u32, access: Access) {
    if access.arg != 0 {
        // Failed: perhaps while another thread holds the mutex, so its run is not ours to
        // touch. Its index comes between that run's accesses and the next.
        note(object, access);
        return;
    }
    let o = object as usize;
    let index = COUNTS[o].fetch_add(1, Ordering::AcqRel);
    let key = (access.thread as u64) << 8 | (access.op as u64 + 1);
    let count = RUN_COUNT[o].load(Ordering::Relaxed);
    if RUN_KEY[o].load(Ordering::Relaxed) == key
        && RUN_FIRST[o].load(Ordering::Relaxed) + count == index
    {
        // Only the holder writes it: no read-modify-write needed.
        RUN_COUNT[o].store(count + 1, Ordering::Relaxed);
        return;
    }
    flush_run(object);
    RUN_FIRST[o].store(index, Ordering::Relaxed);
    RUN_COUNT[o].store(1, Ordering::Relaxed);
    RUN_KEY[o].store(key, Ordering::Release);
}

/// Writes the run of `object` not written yet, if any.
pub fn flush_run(object: u32) {
    let o = object as usize;
    let key = RUN_KEY[o].swap(0, Ordering::AcqRel);
    if key == 0 {
        return;
    }
    let op = Op::from_u8(((key & 0xff) - 1) as u8).unwrap_or(Op::Lock);
    let run = access((key >> 8) as u32, op, 0);
    let first = RUN_FIRST[o].load(Ordering::Relaxed);
    log::append(object, first, run, RUN_COUNT[o].load(Ordering::Relaxed));
}

/// Writes every run not written yet (the process exits). A thread still running may be
/// extending one: its later accesses are then missing, which the reader accepts when the file
/// has places never written, as it has while threads run (their pieces are not padded).
pub fn flush_runs() {
    if mode() != RECORD || !threaded() {
        return;
    }
    let born = NEXT_OBJECT.load(Ordering::Acquire) as usize;
    for o in 1..born.min(MAX_OBJECTS) {
        flush_run(o as u32);
    }
}

/// `addr` holds no object any more (`pthread_mutex_init`, `destroy`): its run is written.
pub fn forget(addr: usize) {
    if let Some(o) = table::lookup(addr)
        && mode() == RECORD
    {
        flush_run(o);
    }
    table::forget(addr);
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
pub fn give_up(why: &order::Mismatch) {
    if !FREE.swap(true, Ordering::Relaxed) {
        let mut text = StackText::new();
        let _ = std::fmt::Write::write_fmt(
            &mut text,
            format_args!(
                "ddbx-ld: lock order diverged: object {} access {}: expected t{}'s {} (the \
                 record), found t{}'s {}; locks run freely from here",
                why.object,
                why.at,
                why.me,
                why.expected.name(),
                why.me,
                why.found.name()
            ),
        );
        diag(text.as_str());
    }
}

/// Replay: every live thread waits and nothing moves (`order::wait_turn`): the recorded
/// order of locks cannot be followed. Said once in the LD's log; locks run freely from then
/// on, while the events keep their recorded order.
pub fn give_up_stalled() {
    if !FREE.swap(true, Ordering::Relaxed) {
        diag(
            "ddbx-ld: lock order stalled: every thread waits for a turn another holds; \
             locks run freely from here",
        );
    }
}

/// Replay: whether the order of locks was given up.
pub fn free() -> bool {
    FREE.load(Ordering::Relaxed)
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
    for k in RUN_KEY.iter().take(born.min(MAX_OBJECTS)) {
        k.store(0, Ordering::Relaxed);
    }
    COUNTS[0].store(0, Ordering::Relaxed);
    NEXT_THREAD.store(2, Ordering::Relaxed);
    FREE.store(false, Ordering::Relaxed);
    table::clear();
    order::forget();
    forget_threads();
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

/// A registered thread that has ended (its entry stays for `pthread_join`).
const ENDED: u32 = 1 << 31;

/// The newest slot registered for `handle`.
fn slot_of(handle: libc::pthread_t) -> Option<usize> {
    let next = HANDLE_NEXT.load(Ordering::Acquire) as usize;
    (0..next.min(HANDLES))
        .map(|back| (next - 1 - back) % HANDLES)
        .find(|&slot| HANDLE_KEYS[slot].load(Ordering::Acquire) == handle)
}

/// The thread with `handle` ended: a new thread that gets the same handle must not take its
/// id, but `pthread_join` still finds it.
pub fn thread_ended(handle: libc::pthread_t) {
    if let Some(slot) = slot_of(handle) {
        HANDLE_IDS[slot].fetch_or(ENDED, Ordering::AcqRel);
    }
}

/// Forgets `handle` (its thread was joined).
pub fn forget_thread(handle: libc::pthread_t) {
    if let Some(slot) = slot_of(handle) {
        HANDLE_KEYS[slot].store(0, Ordering::Release);
    }
}

/// The id of the thread with `handle` (0: not known); `ended`: also one that has ended.
pub fn thread_of(handle: libc::pthread_t, ended: bool) -> u32 {
    let Some(slot) = slot_of(handle) else {
        return 0;
    };
    let id = HANDLE_IDS[slot].load(Ordering::Acquire);
    match id & ENDED {
        0 => id,
        _ if ended => id & !ENDED,
        _ => 0,
    }
}

/// Forgets every handle (a forked child).
fn forget_threads() {
    let next = HANDLE_NEXT.swap(0, Ordering::Relaxed) as usize;
    for key in HANDLE_KEYS.iter().take(next.min(HANDLES)) {
        key.store(0, Ordering::Relaxed);
    }
    IN_FLIGHT.store(0, Ordering::Relaxed);
}
