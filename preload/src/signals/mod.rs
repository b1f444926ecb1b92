//! Asynchronous signals: the program's handlers, kept behind the LD's own
//! (`preload/src/hooks/signal.rs`), and what the LD's handler shares with the rest of the LD.
//!
//! Everything here is touched from a signal handler, so it is made of atomics only: no
//! allocation, no lock, no `Ld`. Three tables:
//!
//! * the program's disposition of each signal (handler, flags, mask), which the kernel never
//!   sees: it sees the LD's handler with the program's flags and mask;
//! * record (and replay, for its own history): the signals whose handler ran, in order, with
//!   whether the program was inside a hooked call then. A ring the LD empties into value lines
//!   before the next event's line (`preload/src/ld/journal.rs`);
//! * replay: the recorded deliveries of this image, in order (the gap and the signal), which
//!   of them have been delivered, and the signals that really arrived and wait for their
//!   recorded place (`preload/src/replay/signals.rs`).

mod deferred;
mod kids;
mod notes;

pub use deferred::{
    any_held, as_entry, count_entry, defer, disarm_watchdog, disposition_changed, entry_gap,
    entry_now, is_watchdog, main_event_made, main_mark, run_held, watchdog_fired,
};
pub use kids::{add_kid, being_forked, forking, kid_index, kid_pid};
pub use notes::{Note, next_note_before, note, note_closed, note_reaped, notes_pushed, take_lost};

use ddbx_wire::history::value::Value;
use libc::{c_int, siginfo_t};
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicU32, AtomicU64, AtomicUsize};

/// Signals 1 to 64, indexed by number.
pub const COUNT: usize = 65;

/// The program's handler (`sa_sigaction`) for each signal the LD stands in for; 0: none (the
/// kernel has the program's own disposition).
static HANDLER: [AtomicUsize; COUNT] = [const { AtomicUsize::new(0) }; COUNT];
/// The program's `sa_flags` for it.
static FLAGS: [AtomicI32; COUNT] = [const { AtomicI32::new(0) }; COUNT];
/// The program's `sa_mask` for it (signals 1 to 64, bit `sig - 1`).
static MASK: [AtomicU64; COUNT] = [const { AtomicU64::new(0) }; COUNT];

/// [`crate::ld::Ld::passthrough`] bit (after `hooks::passthrough`'s): a delivery outside any
/// hooked call.
pub const PASSTHROUGH_IN_COMPUTATION: u32 = 16;
/// [`crate::ld::Ld::passthrough`] bit: deliveries the ring had no room for.
pub const PASSTHROUGH_LOST: u32 = 32;

/// What the LD's handler does: pass the signal on at once.
pub const PASS: u8 = 0;
/// Note where it came, then pass it on.
pub const RECORD: u8 = 1;
/// Keep it until its recorded place.
pub const REPLAY: u8 = 2;
static MODE: AtomicU8 = AtomicU8::new(PASS);

/// The mode of the LD's handler.
pub fn mode() -> u8 {
    MODE.load(SeqCst)
}

/// Sets the mode of the LD's handler (when the LD joins its session).
pub fn set_mode(mode: u8) {
    MODE.store(mode, SeqCst);
}

/// Whether the LD orders deliveries of `sig`: asynchronous signals only. A fault (SIGSEGV,
/// SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS), an abort, a SIGPIPE (raised by the send that
/// fails, which is itself recorded) and a profiler's tick come where the program is, in every
/// run.
pub fn ordered(sig: c_int) -> bool {
    !matches!(
        sig,
        libc::SIGSEGV
            | libc::SIGBUS
            | libc::SIGFPE
            | libc::SIGILL
            | libc::SIGTRAP
            | libc::SIGSYS
            | libc::SIGABRT
            | libc::SIGPIPE
            | libc::SIGPROF
            | libc::SIGVTALRM
    ) && (1..COUNT as c_int).contains(&sig)
}

/// The program's disposition of one signal, as the LD keeps it.
#[derive(Clone, Copy)]
pub struct Disposition {
    /// `sa_sigaction` (a function, never SIG_DFL or SIG_IGN here).
    pub handler: usize,
    /// `sa_flags`.
    pub flags: c_int,
    /// `sa_mask`, signals 1 to 64.
    pub mask: u64,
}

/// Remembers the program's handler for `sig` (the kernel gets the LD's).
pub fn keep(sig: c_int, d: Disposition) {
    let i = sig as usize;
    FLAGS[i].store(d.flags, SeqCst);
    MASK[i].store(d.mask, SeqCst);
    HANDLER[i].store(d.handler, SeqCst);
}

/// Forgets the program's handler for `sig` (it set SIG_DFL or SIG_IGN, or SA_RESETHAND did).
pub fn drop_handler(sig: c_int) {
    HANDLER[sig as usize].store(0, SeqCst);
}

/// The program's handler for `sig`, if the LD stands in for one.
pub fn disposition(sig: c_int) -> Option<Disposition> {
    let i = usize::try_from(sig).ok().filter(|i| *i < COUNT)?;
    let handler = HANDLER[i].load(SeqCst);
    (handler != 0).then(|| Disposition {
        handler,
        flags: FLAGS[i].load(SeqCst),
        mask: MASK[i].load(SeqCst),
    })
}

// ---- Deliveries that happened, for the history (`notes.rs`) ----

/// The number (as in `Fork`) of the child of this image whose end raised this SIGCHLD (0:
/// another signal, another cause, or a child this image did not fork).
pub fn ended_child(sig: c_int, info: *const siginfo_t) -> u32 {
    if sig != libc::SIGCHLD || info.is_null() {
        return 0;
    }
    // SAFETY: the kernel's siginfo for a SIGCHLD (or one the LD kept from it).
    let (code, pid) = unsafe { ((*info).si_code, (*info).si_pid()) };
    match code {
        libc::CLD_EXITED | libc::CLD_KILLED | libc::CLD_DUMPED => kid_index(pid),
        _ => 0,
    }
}

/// A forked child starts afresh: no children of its own yet, no fork under way, no arrival
/// (the kernel does not pass pending signals to a child), and no delivery in progress. A
/// child forked by the program's handler while the LD delivered a signal inherited that
/// delivery as its own, and never delivered one (postgres's walwriter, forked from the
/// postmaster's SIGCHLD handler, never ran its SIGTERM handler and the shutdown hung).
pub fn forked_child() {
    kids::forget_all();
    for pending in &PENDING {
        pending.store(0, SeqCst);
    }
    BUSY.store(false, SeqCst);
    deferred::forked_child();
}

// ---- Replay: the recorded deliveries and the real arrivals ----

const PLAN: usize = 8192;
/// Each recorded delivery: `gap << 8 | sig << 1 | in_call`, in history order.
static PLANNED: [AtomicU64; PLAN] = [const { AtomicU64::new(0) }; PLAN];
/// The child number of each planned SIGCHLD's ended child (0: unknown).
static PLANNED_KID: [AtomicU32; PLAN] = [const { AtomicU32::new(0) }; PLAN];
/// How many recorded waits come before each planned delivery in the history.
static PLANNED_WAITS: [AtomicU32; PLAN] = [const { AtomicU32::new(0) }; PLAN];
/// How many clock reads of its gap come before each planned delivery in the history.
static PLANNED_CLOCKS: [AtomicU32; PLAN] = [const { AtomicU32::new(0) }; PLAN];
/// The entry into a hook each planned delivery runs at (`Planned::entry`; `u32::MAX`: none).
static PLANNED_ENTRY: [AtomicU32; PLAN] = [const { AtomicU32::new(u32::MAX) }; PLAN];
/// Replay: the gap of the clock reads counted in [`CLOCKS_TAKEN`], and how many of its
/// recorded clock values the program has read.
static CLOCKS_GAP: AtomicU64 = AtomicU64::new(0);
static CLOCKS_TAKEN: AtomicU32 = AtomicU32::new(0);
static PLAN_LEN: AtomicUsize = AtomicUsize::new(0);
static PLAN_NEXT: AtomicUsize = AtomicUsize::new(0);
/// Each recorded non-blocking wait: `gap << 32 | child`, in history order.
static WAITS: [AtomicU64; PLAN] = [const { AtomicU64::new(0) }; PLAN];
static WAITS_LEN: AtomicUsize = AtomicUsize::new(0);
static WAITS_NEXT: AtomicUsize = AtomicUsize::new(0);

/// The recorded outcome of the program's next non-blocking wait, after `events` events (a
/// child number, 0: none), if the record made one there or one event earlier (a handler the
/// record ran during a call, whose line came before that call's event, runs at the end of the
/// call in replay, after the event); older waits are dropped.
pub fn take_planned_wait(events: u64) -> Option<u32> {
    loop {
        let i = WAITS_NEXT.load(SeqCst);
        if i >= WAITS_LEN.load(SeqCst) {
            return None;
        }
        let v = WAITS[i].load(SeqCst);
        let gap = v >> 32;
        if gap > events {
            return None;
        }
        if WAITS_NEXT
            .compare_exchange(i, i + 1, SeqCst, SeqCst)
            .is_ok()
            && gap + 1 >= events
        {
            return Some(v as u32);
        }
    }
}

/// Real arrivals not delivered yet, per signal.
static PENDING: [AtomicU32; COUNT] = [const { AtomicU32::new(0) }; COUNT];
/// One delivery at a time: the LD's handler does not start one inside another.
static BUSY: AtomicBool = AtomicBool::new(false);

/// One recorded delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    /// After this many events.
    pub gap: u64,
    /// The signal.
    pub sig: c_int,
    /// Whether it came inside a hooked call.
    pub in_call: bool,
    /// For a SIGCHLD: the number of the child whose end raised it (0: unknown).
    pub kid: u32,
    /// How many of the image's recorded waits come before it in the history: it runs after
    /// them. (Deliveries and waits between the same two events are ordered by this alone: a
    /// shell's `wait` builtin makes them all between two forks, and a SIGCHLD that arrived
    /// while it reaped the first children ran its handler before its place, so the shell
    /// then slept in `sigsuspend` for a delivery already made.)
    pub waits_before: u32,
    /// How many clock reads (`~c`, `~u`, `~s`) of its gap come before it in the history: a
    /// delivery in the program's computation runs after as many of its gap's recorded clock
    /// values are read (an event loop reads its clock several times a turn; run at the start
    /// of the gap, Twisted's SIGTERM stopped the reactor a turn earlier than the record's).
    pub clocks_before: u32,
    /// A delivery the record made at the program's entry into a hook (it landed in the
    /// program's computation): which entry since the event before. Replay runs it there, not
    /// at the start of its gap.
    pub entry: Option<u32>,
}

/// Replay: the program read one of the recorded clock values of gap `gap`.
pub fn clock_taken(gap: u64) {
    if CLOCKS_GAP.swap(gap, SeqCst) != gap {
        CLOCKS_TAKEN.store(0, SeqCst);
    }
    CLOCKS_TAKEN.fetch_add(1, SeqCst);
}

/// Replay: how many of the recorded clock values of gap `gap` the program has read.
pub fn clocks_taken(gap: u64) -> u32 {
    if CLOCKS_GAP.load(SeqCst) == gap {
        CLOCKS_TAKEN.load(SeqCst)
    } else {
        0
    }
}

/// Replaces the plan with `deliveries` (a new image's history; at most 8,192 are kept, the
/// rest come when they come) and forgets every arrival (a forked child has none).
pub fn set_plan(deliveries: impl Iterator<Item = Planned>) {
    PLAN_LEN.store(0, SeqCst);
    PLAN_NEXT.store(0, SeqCst);
    let mut n = 0;
    for p in deliveries.take(PLAN) {
        PLANNED[n].store(
            p.gap << 8 | (p.sig as u64) << 1 | u64::from(p.in_call),
            SeqCst,
        );
        PLANNED_KID[n].store(p.kid, SeqCst);
        PLANNED_WAITS[n].store(p.waits_before, SeqCst);
        PLANNED_CLOCKS[n].store(p.clocks_before, SeqCst);
        PLANNED_ENTRY[n].store(p.entry.unwrap_or(u32::MAX), SeqCst);
        n += 1;
    }
    for p in &PENDING {
        p.store(0, SeqCst);
    }
    PLAN_LEN.store(n, SeqCst);
}

/// How many deliveries of `sig` the plan has (made or not).
pub fn planned_of(sig: c_int) -> usize {
    PLANNED[..PLAN_LEN.load(SeqCst)]
        .iter()
        .filter(|v| ((v.load(SeqCst) >> 1) & 0x7f) as c_int == sig)
        .count()
}

/// The next recorded delivery not made yet.
pub fn next_planned() -> Option<Planned> {
    let i = PLAN_NEXT.load(SeqCst);
    if i >= PLAN_LEN.load(SeqCst) {
        return None;
    }
    let v = PLANNED[i].load(SeqCst);
    Some(Planned {
        gap: v >> 8,
        sig: ((v >> 1) & 0x7f) as c_int,
        in_call: v & 1 == 1,
        kid: PLANNED_KID[i].load(SeqCst),
        waits_before: PLANNED_WAITS[i].load(SeqCst),
        clocks_before: PLANNED_CLOCKS[i].load(SeqCst),
        entry: Some(PLANNED_ENTRY[i].load(SeqCst)).filter(|e| *e != u32::MAX),
    })
}

/// How many recorded waits the program has made (or that were dropped as passed).
pub fn waits_taken() -> u32 {
    WAITS_NEXT.load(SeqCst).min(u32::MAX as usize) as u32
}

/// Whether the plan was too long to keep and is used up: later arrivals are passed on at once
/// (otherwise an arrival the record did not see waits for ever, as the record's never came).
pub fn overflowed() -> bool {
    let len = PLAN_LEN.load(SeqCst);
    len == PLAN && PLAN_NEXT.load(SeqCst) >= len
}

/// Whether a recorded delivery comes before event `events + 1` (a halting replay's actor then
/// needs what raised it).
pub fn due(events: u64) -> bool {
    mode() == REPLAY && next_planned().is_some_and(|p| p.gap <= events)
}

/// Whether a recorded delivery after the next one, due too (after at most `events` events), is
/// of a signal that has arrived and waits: then the next one's signal came earlier and was
/// merged into an earlier arrival (standard signals do not queue), or comes later; either way
/// it goes first.
pub fn later_arrived(events: u64) -> bool {
    let len = PLAN_LEN.load(SeqCst);
    let next = PLAN_NEXT.load(SeqCst);
    let Some(first) = next_planned() else {
        return false;
    };
    (next + 1..len)
        .take_while(|i| PLANNED[*i].load(SeqCst) >> 8 <= events)
        .any(|i| {
            let sig = ((PLANNED[i].load(SeqCst) >> 1) & 0x7f) as usize;
            sig != first.sig as usize
                && (PENDING[sig].load(SeqCst) > 0 || planned_child_ended(sig, i))
        })
}

/// Whether planned delivery `i` is a SIGCHLD whose child has ended: it has come, as far as
/// the program can tell, even if its arrival merged into an earlier one (four nginx workers
/// that ended while the master had SIGCHLD blocked raise one SIGCHLD; the SIGIO planned
/// before the second of the record's three never came either, and the master slept on).
fn planned_child_ended(sig: usize, i: usize) -> bool {
    sig == libc::SIGCHLD as usize
        && kid_pid(PLANNED_KID[i].load(SeqCst)).is_some_and(crate::sys::child_ended)
}

/// How many recorded deliveries have been made.
pub fn planned_made() -> usize {
    PLAN_NEXT.load(SeqCst)
}

/// The next recorded delivery is made.
pub fn planned_done() {
    PLAN_NEXT.fetch_add(1, SeqCst);
}

/// Record: deliveries that came inside a hook after its event, whose handler runs as the hook
/// returns (`crate::hooks::signal`): their signals, in order.
static STASHED: [AtomicU32; 8] = [const { AtomicU32::new(0) }; 8];

/// Record: keeps a delivery of `sig` (`info` with it) for [`take_stashed`]; false when there is
/// no room (the handler then runs at once).
pub fn stash(sig: c_int, info: *const siginfo_t) -> bool {
    let Some(slot) = STASHED
        .iter()
        .find(|s| s.compare_exchange(0, sig as u32, SeqCst, SeqCst).is_ok())
    else {
        return false;
    };
    debug_assert!(slot.load(SeqCst) == sig as u32);
    keep_info(sig, info);
    true
}

/// The next delivery [`stash`] kept, taken (its siginfo is [`info_of`]'s).
pub fn take_stashed() -> Option<c_int> {
    STASHED.iter().find_map(|s| match s.swap(0, SeqCst) {
        0 => None,
        sig => Some(sig as c_int),
    })
}

/// `sig` really arrived (`info` with it) and waits for its place.
pub fn arrived(sig: c_int, info: *const siginfo_t) {
    keep_info(sig, info);
    PENDING[sig as usize].fetch_add(1, SeqCst);
}

/// Keeps `info` as the last siginfo that came with `sig` ([`info_of`]).
fn keep_info(sig: c_int, info: *const siginfo_t) {
    let i = sig as usize;
    if !info.is_null() {
        // SAFETY: the kernel's siginfo for this delivery; the slot is only written here and
        // read by [`info_of`] when a delivery of this signal is made, both on the thread
        // that handles the program's signals.
        unsafe { (*INFO.0.get())[i] = MaybeUninit::new(*info) };
        HAS_INFO[i].store(true, SeqCst);
    }
}

/// Whether a real arrival of `sig` is waiting (not taken).
pub fn has_arrival(sig: c_int) -> bool {
    PENDING[sig as usize].load(SeqCst) > 0
}

/// Takes one real arrival of `sig`, if one is waiting.
pub fn take_arrival(sig: c_int) -> bool {
    PENDING[sig as usize]
        .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

/// The last siginfo that came with `sig` (zeroed but for the number if none did).
pub fn info_of(sig: c_int) -> siginfo_t {
    let i = sig as usize;
    if HAS_INFO[i].load(SeqCst) {
        // SAFETY: written by [`arrived`] before HAS_INFO was set.
        return unsafe { (*INFO.0.get())[i].assume_init() };
    }
    // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
    let mut info: siginfo_t = unsafe { std::mem::zeroed() };
    info.si_signo = sig;
    info
}

/// Enters the one delivery at a time; false when one is under way.
pub fn enter_delivery() -> bool {
    !BUSY.swap(true, SeqCst)
}

/// Leaves it.
pub fn leave_delivery() {
    BUSY.store(false, SeqCst);
}

struct Infos(UnsafeCell<[MaybeUninit<siginfo_t>; COUNT]>);
// SAFETY: see [`arrived`]: one slot per signal, written and read on the thread that takes
// the program's signals.
unsafe impl Sync for Infos {}
static INFO: Infos = Infos(UnsafeCell::new([const { MaybeUninit::uninit() }; COUNT]));
static HAS_INFO: [AtomicBool; COUNT] = [const { AtomicBool::new(false) }; COUNT];

/// Fills the plan from the values of a history just loaded, and takes the signal lines out
/// of the values (clock reads never take them). `done`: the events the actor executed before
/// this image (an exec'd image's history goes on from its earlier images'): their deliveries,
/// and those just before the `Exec` (the earlier image wrote them with it), are not this
/// image's.
pub fn load_plan(values: &mut Vec<(u64, Value)>, ordered: bool, done: u64) {
    let mine = |gap: u64| gap > done || done == 0;
    let mut waits = 0u32;
    // The clock reads of the current gap so far.
    let mut clocks = (u64::MAX, 0u32);
    let planned = values.iter().filter_map(|(gap, v)| {
        if clocks.0 != *gap {
            clocks = (*gap, 0);
        }
        match v {
            Value::Signal {
                sig,
                in_call,
                ended,
                entry,
            } if mine(*gap) => Some(Planned {
                gap: *gap,
                sig: *sig,
                in_call: *in_call,
                kid: ended.unwrap_or(0),
                waits_before: waits.min(PLAN as u32),
                clocks_before: clocks.1,
                entry: *entry,
            }),
            Value::Reaped { .. } if mine(*gap) => {
                waits = waits.saturating_add(1);
                None
            }
            Value::Clock { .. } | Value::TimeOfDay { .. } | Value::Time { .. } => {
                clocks.1 = clocks.1.saturating_add(1);
                None
            }
            _ => None,
        }
    });
    if ordered {
        set_plan(planned);
    } else {
        set_plan(std::iter::empty());
    }
    WAITS_LEN.store(0, SeqCst);
    WAITS_NEXT.store(0, SeqCst);
    let mut n = 0;
    if ordered {
        for (gap, v) in values.iter() {
            if let Value::Reaped { child } = v
                && mine(*gap)
                && n < PLAN
            {
                WAITS[n].store(gap << 32 | u64::from(*child), SeqCst);
                n += 1;
            }
        }
    }
    WAITS_LEN.store(n, SeqCst);
    values.retain(|(_, v)| !matches!(v, Value::Signal { .. } | Value::Reaped { .. }));
    set_mode(if ordered { REPLAY } else { PASS });
}

/// How many of the program's handlers the LD is running (nested).
static IN_HANDLER: AtomicU32 = AtomicU32::new(0);

/// How many of the LD's signal handlers are running now (nested): the LD's own work they
/// interrupted may be halfway through a message to the GD.
static IN_SIGNAL: AtomicU32 = AtomicU32::new(0);

/// Runs `f` as the LD's handler of an arrival (see [`in_signal_context`]).
pub fn in_signal(f: impl FnOnce()) {
    IN_SIGNAL.fetch_add(1, SeqCst);
    f();
    IN_SIGNAL.fetch_sub(1, SeqCst);
}

/// Whether the LD is inside its own signal handler, where it must not talk to the GD.
pub fn in_signal_context() -> bool {
    IN_SIGNAL.load(SeqCst) > 0
}

/// Whether the LD is running one of the program's signal handlers now.
pub fn in_program_handler() -> bool {
    IN_HANDLER.load(SeqCst) > 0
}

/// How many times the program's handlers have been called (see `crate::hooks::sleep`).
static HANDLERS_RUN: AtomicU64 = AtomicU64::new(0);

/// How many times [`call_handler`] has called a handler of the program.
pub fn handlers_run() -> u64 {
    HANDLERS_RUN.load(SeqCst)
}

/// Runs the program's handler `d` for `sig` as the kernel would: with `d.mask` and `sig`
/// itself (unless SA_NODEFER) blocked, as a one-shot handler with SA_RESETHAND.
pub fn call_handler(sig: c_int, d: Disposition, info: *mut siginfo_t, ctx: *mut libc::c_void) {
    if d.flags & libc::SA_RESETHAND != 0 {
        drop_handler(sig);
    }
    let mut block = d.mask;
    if d.flags & libc::SA_NODEFER == 0 {
        block |= 1 << (sig - 1);
    }
    let old = crate::sys::block_signals(block);
    IN_HANDLER.fetch_add(1, SeqCst);
    HANDLERS_RUN.fetch_add(1, SeqCst);
    if d.flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the program registered this function as an SA_SIGINFO handler.
        let f: extern "C" fn(c_int, *mut siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(d.handler) };
        f(sig, info, ctx);
    } else {
        // SAFETY: the program registered this function as a plain handler.
        let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(d.handler) };
        f(sig);
    }
    IN_HANDLER.fetch_sub(1, SeqCst);
    crate::sys::set_signal_mask(old);
}
