//! Replay: each lock object's accesses come in the recorded order.
//!
//! Every object has a turn (the index of its next access). A thread that wants to touch the
//! object waits until the access at the turn is its own, does the call, and moves the turn
//! on. The orders come from one real run, so waiting for them never deadlocks: there is an
//! order of all accesses (the record's) that each thread's program order and each object's
//! order agree with. Waiting spins briefly, yields, then sleeps on a futex on the turn.
//!
//! New objects come in the recorded order of births too: a thread that touches an address
//! with no object waits until either another thread's birth gives the address its object (the
//! record had that thread touch it first) or the next birth is this thread's own next one.

use ddbx_wire::locks::{Access, LockHistory, Op, Run, access_at};
use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use super::{MAX_OBJECTS, table};
use crate::sys;

/// What replay follows, loaded at the first `pthread_create` (read only afterwards).
pub struct Plan {
    /// Per object, its accesses (as runs of equal ones).
    pub objects: Vec<Vec<Run>>,
    /// Per thread (index = thread id), the objects it made, in order.
    pub births: Vec<Vec<u32>>,
}

static PLAN: AtomicPtr<Plan> = AtomicPtr::new(std::ptr::null_mut());

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU32 = AtomicU32::new(0);
/// Each object's turn.
static TURNS: [AtomicU32; MAX_OBJECTS] = [ZERO; MAX_OBJECTS];
/// The next object to be born.
static NEXT_BIRTH: AtomicU32 = AtomicU32::new(1);
/// Threads sleeping on some turn (the one who moves a turn wakes them only if some are).
static SLEEPERS: AtomicU32 = AtomicU32::new(0);
/// How long a thread waits for a birth another thread should make before it gives up
/// ordering that object; and after how long a thread still waiting for its turn says so in
/// the LD's log (it goes on waiting: the thread whose turn it is may be held by a halting
/// replay, or wait for a peer, as long as it takes).
const PATIENCE_NS: u64 = 20_000_000_000;

/// Threads of the process alive in this replay (the main thread, and each one created since
/// the plan was installed, until it ends).
static LIVE: AtomicU32 = AtomicU32::new(1);
/// Threads waiting now for a turn, a birth, an event or the baton, or blocked in a mutex their
/// turn let them take ([`Waiting`]).
static WAITING: AtomicU32 = AtomicU32::new(0);
/// Moves whenever a turn, a birth or an event of the process does.
static PROGRESS: AtomicU32 = AtomicU32::new(0);
/// How long every live thread may wait without anything moving before the order of locks is
/// given up as one that cannot be followed.
const STALL_NS: u64 = 2_000_000_000;

/// A thread counted as waiting ([`WAITING`]) while this lives.
pub struct Waiting(());

impl Waiting {
    /// Counts the calling thread as waiting until the result is dropped.
    pub fn now() -> Waiting {
        WAITING.fetch_add(1, Ordering::SeqCst);
        Waiting(())
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Something moved: a turn, a birth, or an event of the process.
pub fn progressed() {
    PROGRESS.fetch_add(1, Ordering::SeqCst);
}

/// Replay: a thread was created (it counts among the live ones until [`ended`]).
pub fn started() {
    LIVE.fetch_add(1, Ordering::SeqCst);
}

/// Watches one wait for a stall: every live thread of the process waiting, and nothing moving
/// for [`STALL_NS`]. The record's order of locks cannot then be followed (a thread took a
/// lock more or fewer times than in the record, so its later accesses are matched with the
/// wrong recorded ones): a cycle of threads each waiting for a turn another holds.
struct Stall {
    seen: u32,
    since: u64,
}

impl Stall {
    fn new() -> Stall {
        Stall {
            seen: PROGRESS.load(Ordering::SeqCst),
            since: sys::monotonic_ns(),
        }
    }

    /// Whether the process is stalled now.
    fn stalled(&mut self) -> bool {
        let now = sys::monotonic_ns();
        let p = PROGRESS.load(Ordering::SeqCst);
        if p != self.seen {
            self.seen = p;
            self.since = now;
            return false;
        }
        WAITING.load(Ordering::SeqCst) >= LIVE.load(Ordering::SeqCst)
            && now.saturating_sub(self.since) >= STALL_NS
    }
}

/// Threads that have ended in this replay, a bit per thread id (ids from 4096 up are not
/// kept: their accesses are waited for as before).
static ENDED: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

/// Replay: thread `t` has ended. The record's accesses of it that are still to come can never
/// be made, and the other threads' turns step over them (see [`wait_turn`]).
pub fn ended(t: u32) {
    let bit = 1 << (t % 64);
    let first = ENDED
        .get(t as usize / 64)
        .is_none_or(|word| word.fetch_or(bit, Ordering::AcqRel) & bit == 0);
    if first {
        LIVE.fetch_sub(1, Ordering::SeqCst);
    }
    progressed();
}

/// Whether thread `t` has ended in this replay.
fn has_ended(t: u32) -> bool {
    ENDED
        .get(t as usize / 64)
        .is_some_and(|w| w.load(Ordering::Acquire) & (1 << (t % 64)) != 0)
}

thread_local! {
    /// How many of its recorded births this thread has made.
    static BORN: Cell<u32> = const { Cell::new(0) };
}

/// Installs the plan of `history` (single-threaded: the first `pthread_create`).
pub fn install(history: LockHistory) {
    let mut births: Vec<Vec<u32>> = Vec::new();
    for (o, list) in history.objects.iter().enumerate().skip(1) {
        if let Some(first) = list.first() {
            let t = first.access.thread as usize;
            if births.len() <= t {
                births.resize_with(t + 1, Vec::new);
            }
            births[t].push(o as u32);
        }
    }
    let plan = Box::new(Plan {
        objects: history.objects,
        births,
    });
    TURNS[0].store(1, Ordering::Relaxed);
    NEXT_BIRTH.store(1, Ordering::Relaxed);
    LIVE.store(1, Ordering::Relaxed);
    PLAN.store(Box::into_raw(plan), Ordering::Release);
}

/// The plan, when replay orders locks.
pub fn plan() -> Option<&'static Plan> {
    let p = PLAN.load(Ordering::Acquire);
    // SAFETY: set once from a leaked Box and never freed (a forked child drops the pointer).
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Forgets the plan (a forked child: nothing of its parent's threads is replayed in it).
pub fn forget() {
    let born = NEXT_BIRTH.swap(1, Ordering::Relaxed) as usize;
    for t in TURNS.iter().take(born.min(MAX_OBJECTS)) {
        t.store(0, Ordering::Relaxed);
    }
    for w in &ENDED {
        w.store(0, Ordering::Relaxed);
    }
    PLAN.store(std::ptr::null_mut(), Ordering::Relaxed);
    let _ = BORN.try_with(|b| b.set(0));
}

/// Waits until `ready` holds, watching `word` (moved by whoever can make it hold). `give_up`:
/// false once the wait lasted [`PATIENCE_NS`]; otherwise `late(false)` is said then, and the
/// wait goes on. A stall (see [`Stall`]) gives the order up: `late(true)` says where this
/// thread waited, and the wait ends with what `ready` says then.
fn wait_on(
    word: &AtomicU32,
    mut ready: impl FnMut() -> bool,
    give_up: bool,
    late: &dyn Fn(bool),
) -> bool {
    for _ in 0..64 {
        if ready() {
            return true;
        }
        std::hint::spin_loop();
    }
    let _waiting = Waiting::now();
    let mut stall = Stall::new();
    let start = sys::monotonic_ns();
    let mut said = false;
    loop {
        for _ in 0..4 {
            if ready() {
                return true;
            }
            // SAFETY: no arguments.
            unsafe { libc::syscall(libc::SYS_sched_yield) };
        }
        let seen = word.load(Ordering::SeqCst);
        SLEEPERS.fetch_add(1, Ordering::SeqCst);
        if !ready() {
            let timeout = libc::timespec {
                tv_sec: 0,
                tv_nsec: 50_000_000,
            };
            // SAFETY: a futex word of ours and a valid timespec.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    word.as_ptr(),
                    libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                    seen,
                    &timeout as *const libc::timespec,
                )
            };
        }
        SLEEPERS.fetch_sub(1, Ordering::SeqCst);
        if ready() {
            return true;
        }
        if stall.stalled() {
            late(true);
            super::give_up_stalled();
            return ready();
        }
        if !said && sys::monotonic_ns() - start > PATIENCE_NS {
            if give_up {
                return false;
            }
            late(false);
            said = true;
        }
    }
}

/// Moves `word` to `value` and wakes its sleepers.
fn publish(word: &AtomicU32, value: u32) {
    word.store(value, Ordering::SeqCst);
    wake(word);
}

/// Wakes the sleepers on `word` (it moved).
fn wake(word: &AtomicU32) {
    progressed();
    if SLEEPERS.load(Ordering::SeqCst) > 0 {
        // SAFETY: a futex word of ours.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            )
        };
    }
}

/// What waiting for a turn gave.
pub enum Turn {
    /// The access at the turn is this thread's: do it, then [`advance`].
    Mine(u32, Access),
    /// The object's history is over (or was never recorded): run freely.
    Free,
    /// The access at the turn is this thread's, but not the call it makes.
    Diverged(Mismatch),
}

/// An access replay found where the record has another.
pub struct Mismatch {
    /// The object.
    pub object: u32,
    /// The access's index.
    pub at: u32,
    /// The thread.
    pub me: u32,
    /// What the record has there.
    pub expected: Op,
    /// What the thread does.
    pub found: Op,
}

/// Waits until the turn of `object` is an access of thread `me`.
///
/// An access of a thread that has ended in this replay is stepped over: the thread made fewer
/// accesses than the record's did, and none of them can come any more. Python's threads take
/// the interpreter's lock again when they notice another thread's request to drop it, a
/// memory flag that no call shows, so a thread may end having taken it a time or two less
/// than in the record; waiting for its missing turns hung every thread of the process.
pub fn wait_turn(plan: &Plan, object: u32, me: u32, op: Op) -> Turn {
    let Some(list) = plan.objects.get(object as usize) else {
        return Turn::Free;
    };
    if has_ended(me) {
        // A thread-local destructor's call after the thread's end: its turns were given away.
        return Turn::Free;
    }
    let turn = &TURNS[object as usize];
    let late = |stalled: bool| {
        let at = turn.load(Ordering::Acquire) as u64;
        if let Some(a) = access_at(list, at) {
            let mut text = super::StackText::new();
            let how = if stalled {
                "waits, with every live thread, "
            } else {
                "has waited 20 s "
            };
            let _ = std::fmt::Write::write_fmt(
                &mut text,
                format_args!(
                    "ddbx-ld: t{me} {how}for its turn on object {object}: access {at} is t{}'s {}",
                    a.thread,
                    a.op.name()
                ),
            );
            super::diag(text.as_str());
        }
    };
    // The thread table stays ordered when the other objects' order is given up, for its
    // creations only (they give the new threads their ids): an exit or a join waiting for its
    // turn then could wait for a thread that waits for a lock the waiting one holds (Python's
    // main thread creates a thread holding the interpreter lock, which an ending thread needs).
    let ordered = || (object == 0 && op == Op::Create) || !super::free();
    let skippable = |a: &Access| {
        a.thread != me
            && (has_ended(a.thread) || (object == 0 && a.op != Op::Create && super::free()))
    };
    let ready = || {
        loop {
            if !ordered() {
                return true;
            }
            let at = turn.load(Ordering::Acquire);
            match access_at(list, at as u64) {
                Some(a) if skippable(&a) => {
                    if turn
                        .compare_exchange(at, at + 1, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        wake(turn);
                    }
                }
                next => return next.is_none_or(|a| a.thread == me),
            }
        }
    };
    wait_on(turn, ready, false, &late);
    if !ordered() {
        return Turn::Free;
    }
    let at = turn.load(Ordering::Acquire);
    let Some(access) = access_at(list, at as u64).filter(|a| a.thread == me) else {
        // No more accesses, or a stall on the thread table: on without it.
        return Turn::Free;
    };
    let same = access.op == op || (family(op) != 0 && family(access.op) == family(op));
    if !same {
        return Turn::Diverged(Mismatch {
            object,
            at,
            me,
            expected: access.op,
            found: op,
        });
    }
    Turn::Mine(at, access)
}

/// The acquisitions that may stand for one another (a lock, a trylock and a timed lock of the
/// same kind: the record's succeeded, replay's takes it as a lock); 0 for the other ops.
fn family(op: Op) -> u8 {
    match op {
        Op::Lock | Op::TryLock | Op::TimedLock => 1,
        Op::RdLock | Op::TryRdLock | Op::TimedRdLock => 2,
        Op::WrLock | Op::TryWrLock | Op::TimedWrLock => 3,
        _ => 0,
    }
}

/// Access `at` of `object` is done: the next one may come.
pub fn advance(object: u32, at: u32) {
    publish(&TURNS[object as usize], at + 1);
}

/// The object of `addr` for thread `me`: known, or born now in the recorded order of births.
/// `None`: the record has no such birth (run freely).
pub fn object_of(plan: &Plan, addr: usize, me: u32) -> Option<u32> {
    if let Some(id) = table::lookup(addr) {
        return Some(id);
    }
    let mine = plan
        .births
        .get(me as usize)
        .and_then(|b| b.get(BORN.with(|n| n.get()) as usize))
        .copied();
    let mut found = None;
    let ready = || {
        if let Some(id) = table::lookup(addr) {
            found = Some(id);
            return true;
        }
        loop {
            if super::free() {
                return true;
            }
            // A birth of a thread that has ended without making it never comes.
            let next = NEXT_BIRTH.load(Ordering::Acquire);
            let by = plan.objects.get(next as usize).and_then(|l| l.first());
            match by {
                Some(run) if run.access.thread != me && has_ended(run.access.thread) => {
                    if NEXT_BIRTH
                        .compare_exchange(next, next + 1, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        wake(&NEXT_BIRTH);
                    }
                }
                _ => return mine.is_some_and(|id| next == id),
            }
        }
    };
    wait_on(&NEXT_BIRTH, ready, true, &|_| {});
    if found.is_some() {
        return found;
    }
    let id = mine?;
    if NEXT_BIRTH.load(Ordering::Acquire) != id || (id as usize) >= MAX_OBJECTS {
        return None;
    }
    table::exclusive(|| table::insert(addr, id));
    BORN.with(|n| n.set(n.get() + 1));
    TURNS[id as usize].store(1, Ordering::Release);
    publish(&NEXT_BIRTH, id + 1);
    Some(id)
}
