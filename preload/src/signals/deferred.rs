//! Record: a signal that lands in the program's computation runs its handler at the program's
//! next entry into a hook, not where it landed; replay runs it at the same entry.
//!
//! Where in a computation a signal lands is nothing a history can say: an event loop that
//! checks its flag halfway between two calls went round once more in the record when the
//! signal came after the check, and replay, which can only count calls, ran the handler at the
//! start of that computation and left the loop a turn early (Twisted's reactor, Node's libuv,
//! rsync's receiver at shutdown). So the record holds such a delivery back until the program
//! next enters a hook, counts the entries since the event before, runs the handler there and
//! notes it with that count (`~G15#2`); replay waits at the same entry for the signal and runs
//! the handler there. The program sees its handler run a little later than the kernel would
//! have run it, which a program cannot tell from a signal sent a little later.
//!
//! In a process with threads the LD passes every signal sent to the process on to the main
//! thread (`crate::hooks::signal`), which holds it back the same way: its entries are counted
//! since its own last event ([`main_mark`]), since other threads' events come in no fixed
//! order between them.
//!
//! Not held back (run where it lands, noted as before, and replayed between the same two
//! events): a signal that interrupts a system call the LD does not hook (the call's EINTR or
//! restart is the kernel's, and a loop that retries on EINTR must see the handler's flag), one
//! that comes on another thread than the main one, and one held back for [`WATCHDOG_MS`] without a hook being entered (a
//! computation that only ends when its handler has run: a watchdog timer raises
//! [`WATCHDOG_SIG`] and the handler runs then). Atomics and raw system calls only: this runs in
//! signal handlers.

use super::{call_handler, disposition, info_of, keep_info, note};
use libc::{c_int, siginfo_t};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

/// The signal the watchdog raises: the last real-time signal, which the C library leaves to
/// programs and few take. A program that handles it itself has no delivery held back.
pub const WATCHDOG_SIG: c_int = 64;
/// How long a delivery is held back at most (ms).
const WATCHDOG_MS: i64 = 200;

/// Deliveries held back, in the order they came: `ended << 8 | sig` (0: free).
static HELD: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];
/// How many of [`HELD`] are taken (a cheap test at every entry).
static HELD_COUNT: AtomicU32 = AtomicU32::new(0);

/// Entries into hooks by the actor's thread since event [`ENTRIES_GAP`].
static ENTRIES: AtomicU32 = AtomicU32::new(0);
static ENTRIES_GAP: AtomicU64 = AtomicU64::new(u64::MAX);
/// Replay: the entry being made now while a delivery planned at it runs, plus one (0: none).
static ENTRY_NOW: AtomicU32 = AtomicU32::new(0);
/// Replay: the gap of the delivery planned at the entry being made now (`u64::MAX`: none).
static ENTRY_GAP: AtomicU64 = AtomicU64::new(u64::MAX);
/// In a process with threads: the actor's event count just after the main thread's last
/// event (replay derives the record's from the history: `replay::threads::main_mark`).
static MAIN_MARK: AtomicU64 = AtomicU64::new(0);

/// The watchdog's kernel timer and the process that made it (timers are not inherited).
static TIMER: AtomicI32 = AtomicI32::new(-1);
static TIMER_PID: AtomicI32 = AtomicI32::new(0);

/// Record, from the LD's handler (`handler`: its address), on the actor's thread: holds back a
/// delivery of `sig` that landed in the program's computation (`ctx`: the kernel's context of
/// it) until the program's next entry into a hook. False: it runs now (see the module's note).
pub fn defer(
    sig: c_int,
    info: *const siginfo_t,
    ended: u32,
    ctx: *mut libc::c_void,
    handler: usize,
) -> bool {
    if ctx.is_null() || in_system_call(ctx) || !arm_watchdog(handler) {
        return false;
    }
    let value = u64::from(ended) << 8 | sig as u64;
    if !HELD
        .iter()
        .any(|h| h.compare_exchange(0, value, SeqCst, SeqCst).is_ok())
    {
        return false;
    }
    keep_info(sig, info);
    HELD_COUNT.fetch_add(1, SeqCst);
    true
}

/// Takes the oldest delivery held back whose signal `blocked` (the program's mask, signals 1
/// to 64) lets through: its signal and ended child.
fn take_held(blocked: u64) -> Option<(c_int, u32)> {
    if HELD_COUNT.load(SeqCst) == 0 {
        return None;
    }
    HELD.iter().find_map(|h| {
        let v = h.load(SeqCst);
        let sig = (v & 0xff) as c_int;
        if v == 0
            || blocked & 1 << (sig - 1) != 0
            || h.compare_exchange(v, 0, SeqCst, SeqCst).is_err()
        {
            return None;
        }
        HELD_COUNT.fetch_sub(1, SeqCst);
        Some((sig, (v >> 8) as u32))
    })
}

/// Record: the program changed its disposition of `sig` while a delivery of it was held back
/// (a worker that resets SIGTERM to its default action): the delivery is raised again, to
/// come under the new disposition as a signal sent a little later would (kept for the old
/// handler, it was dropped at the next entry, and the replay's worker never died).
pub fn disposition_changed(sig: c_int) {
    let mut raised = false;
    for h in &HELD {
        let v = h.load(SeqCst);
        if v != 0 && (v & 0xff) as c_int == sig && h.compare_exchange(v, 0, SeqCst, SeqCst).is_ok()
        {
            HELD_COUNT.fetch_sub(1, SeqCst);
            if !raised {
                crate::sys::tgkill(crate::sys::getpid(), crate::sys::gettid(), sig);
                raised = true;
            }
        }
    }
}

/// Whether deliveries are held back now.
pub fn any_held() -> bool {
    HELD_COUNT.load(Relaxed) > 0
}

/// Whether the signal interrupted a system call the LD does not hook, by the kernel's context
/// `ctx`: the program stands at a `syscall` instruction (the kernel moved it back there to
/// restart the call after the handler, SA_RESTART), or just after one that returned EINTR.
/// (One that just returned otherwise, a `stat` or a `write` to a file, was not interrupted:
/// the signal came in the computation after it.)
#[cfg(target_arch = "x86_64")]
fn in_system_call(ctx: *mut libc::c_void) -> bool {
    // SAFETY: the kernel's ucontext of this delivery (non-null, checked by the caller).
    let regs = unsafe { &(*ctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    let rip = regs[libc::REG_RIP as usize] as usize;
    let rax = regs[libc::REG_RAX as usize];
    let in_page = rip & 0xfff;
    if !(2..0xfff).contains(&in_page) {
        return true; // the bytes around it may be on another page: not looked at
    }
    // SAFETY: the program's code at its instruction pointer, and the two bytes before it, on
    // the same (executable, so readable) page.
    let (before, at) = unsafe {
        let p = rip as *const u8;
        ([*p.sub(2), *p.sub(1)], [*p, *p.add(1)])
    };
    const SYSCALL: [u8; 2] = [0x0f, 0x05];
    if at == SYSCALL && rax == libc::SYS_futex {
        // A futex wait the kernel restarts after the handler: a lock, a join or a condition
        // variable of the C library's (which waits again on EINTR whatever the handler did),
        // whose hooks enter no guard. Held back like a computation's (Node's main thread,
        // joining a helper thread at its exit when the second SIGTERM came, ran the handler
        // there and the replay, placing it earlier, read a lock pipe still open).
        return false;
    }
    at == SYSCALL || (before == SYSCALL && rax == -i64::from(libc::EINTR))
}

#[cfg(not(target_arch = "x86_64"))]
fn in_system_call(_ctx: *mut libc::c_void) -> bool {
    true
}

/// Counts one entry of the program into a hook, after `events` events: its number since the
/// event before (from 0).
pub fn count_entry(events: u64) -> u32 {
    if ENTRIES_GAP.load(Relaxed) != events {
        ENTRIES_GAP.store(events, Relaxed);
        ENTRIES.store(0, Relaxed);
    }
    ENTRIES.fetch_add(1, Relaxed)
}

/// Record: runs the handlers held back, noted at entry `entry` (None: where they are now, the
/// watchdog's), errno kept for the program; `blocked`: the program's signal mask there. As
/// the kernel would: not one whose signal the program blocks (it runs its own handler of that
/// signal, or masked it), and none inside a handler the LD runs (replay runs no delivery
/// inside another); those stay held, for a later entry or the watchdog.
pub fn run_held(entry: Option<u32>, blocked: u64) {
    if super::in_program_handler() {
        return;
    }
    let saved = crate::sys::errno();
    while let Some((sig, ended)) = take_held(blocked) {
        let Some(d) = disposition(sig) else {
            continue; // the program let go of its handler since (SIG_DFL, SIG_IGN)
        };
        note(sig, (false, false), ended, entry);
        let mut info = info_of(sig);
        call_handler(sig, d, &mut info, std::ptr::null_mut());
    }
    if any_held() {
        let _ = set_watchdog(WATCHDOG_MS);
    }
    crate::sys::set_errno(saved);
}

/// Replay: runs `f` as entry `n`, at which the planned delivery of gap `gap` runs
/// ([`entry_now`], [`entry_gap`]).
pub fn as_entry<R>(n: u32, gap: u64, f: impl FnOnce() -> R) -> R {
    ENTRY_GAP.store(gap, SeqCst);
    ENTRY_NOW.store(n.saturating_add(1), SeqCst);
    let r = f();
    ENTRY_NOW.store(0, SeqCst);
    ENTRY_GAP.store(u64::MAX, SeqCst);
    r
}

/// Replay: the entry being made now while its planned deliveries run.
pub fn entry_now() -> Option<u32> {
    ENTRY_NOW.load(SeqCst).checked_sub(1)
}

/// Replay: the gap of the delivery planned at the entry being made now. In a process with
/// threads the main thread comes to it once its own events before that gap are made, which
/// may be before the other threads' events of the gap.
pub fn entry_gap() -> Option<u64> {
    Some(ENTRY_GAP.load(SeqCst)).filter(|g| *g != u64::MAX)
}

/// The main thread made an event, after which the actor has made `events`.
#[inline]
pub fn main_event_made(events: u64) {
    MAIN_MARK.store(events, Relaxed);
}

/// In a process with threads: the actor's event count just after the main thread's last
/// event, from which its entries into hooks are counted.
pub fn main_mark() -> u64 {
    MAIN_MARK.load(Relaxed)
}

/// A forked child has no delivery held back, no watchdog and no entries counted.
pub fn forked_child() {
    for h in &HELD {
        h.store(0, SeqCst);
    }
    HELD_COUNT.store(0, SeqCst);
    ENTRIES_GAP.store(u64::MAX, SeqCst);
    MAIN_MARK.store(0, SeqCst);
    TIMER.store(-1, SeqCst);
    TIMER_PID.store(0, SeqCst);
}

/// Whether this arrival of `sig` is the watchdog's.
pub fn is_watchdog(sig: c_int, info: *const siginfo_t) -> bool {
    if sig != WATCHDOG_SIG || info.is_null() {
        return false;
    }
    // SAFETY: the kernel's siginfo of this delivery; a timer's puts its id after the code.
    let (code, timer) = unsafe { ((*info).si_code, *info.cast::<u8>().add(16).cast::<c_int>()) };
    code == libc::SI_TIMER && timer == TIMER.load(SeqCst) && TIMER_PID.load(SeqCst) != 0
}

/// The watchdog fired (`ctx`: the kernel's context; `in_hook`: the program is inside a hook):
/// the deliveries still held back run now, where the program is (no hook was entered for
/// [`WATCHDOG_MS`]), noted as the LD notes one that lands there.
pub fn watchdog_fired(ctx: *mut libc::c_void, in_hook: bool) {
    if in_hook || ctx.is_null() {
        // In a hook (whose entry found the signal blocked): its return or the next entry.
        let _ = set_watchdog(WATCHDOG_MS);
        return;
    }
    // SAFETY: the kernel's ucontext of this delivery: the program's mask where it was.
    let blocked =
        unsafe { *std::ptr::addr_of!((*ctx.cast::<libc::ucontext_t>()).uc_sigmask).cast::<u64>() };
    run_held(None, blocked);
}

/// Arms the watchdog (making it first, in this process, with the LD's `handler` taking its
/// signal); false if it cannot be had.
fn arm_watchdog(handler: usize) -> bool {
    if disposition(WATCHDOG_SIG).is_some() {
        return false;
    }
    let pid = crate::sys::getpid();
    if TIMER_PID.load(SeqCst) != pid && !make_watchdog(pid, handler) {
        return false;
    }
    set_watchdog(WATCHDOG_MS)
}

/// Disarms the watchdog (the deliveries held back run now).
pub fn disarm_watchdog() {
    if TIMER_PID.load(Relaxed) == crate::sys::getpid() {
        let _ = set_watchdog(0);
    }
}

/// Makes the watchdog's timer, which raises [`WATCHDOG_SIG`] on this thread, with the LD's
/// handler taking that signal (if the program has left it at its default action).
fn make_watchdog(pid: c_int, ours: usize) -> bool {
    // SAFETY: plain data; all zeroes is "no action", filled in below.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a query into our local.
    if unsafe { crate::real::sigaction(WATCHDOG_SIG, std::ptr::null(), &mut old) } != 0 {
        return false;
    }
    if old.sa_sigaction != ours {
        if old.sa_sigaction != libc::SIG_DFL {
            return false;
        }
        // SAFETY: as above.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = ours;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SAFETY: our local, a valid sigaction.
        if unsafe { crate::real::sigaction(WATCHDOG_SIG, &act, std::ptr::null_mut()) } != 0 {
            return false;
        }
    }
    // SAFETY: plain data; zeroes, then the fields a thread-directed signal needs.
    let mut ev: libc::sigevent = unsafe { std::mem::zeroed() };
    ev.sigev_notify = libc::SIGEV_THREAD_ID;
    ev.sigev_signo = WATCHDOG_SIG;
    ev.sigev_notify_thread_id = crate::sys::gettid();
    let mut id: c_int = -1;
    // SAFETY: timer_create(2) with a valid sigevent and a place for the kernel's timer id.
    let r = unsafe {
        libc::syscall(
            libc::SYS_timer_create,
            libc::CLOCK_MONOTONIC,
            &mut ev as *mut libc::sigevent,
            &mut id as *mut c_int,
        )
    };
    if r != 0 {
        return false;
    }
    TIMER.store(id, SeqCst);
    TIMER_PID.store(pid, SeqCst);
    true
}

/// Sets the watchdog to fire once in `ms` ms (0: disarms it).
fn set_watchdog(ms: i64) -> bool {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: ms / 1000,
            tv_nsec: (ms % 1000) * 1_000_000,
        },
    };
    // SAFETY: timer_settime(2) on our timer with a valid itimerspec, no old value asked.
    let r = unsafe {
        libc::syscall(
            libc::SYS_timer_settime,
            TIMER.load(SeqCst),
            0,
            &spec as *const libc::itimerspec,
            std::ptr::null_mut::<libc::itimerspec>(),
        )
    };
    r == 0
}
