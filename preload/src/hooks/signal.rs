//! Signals: kill(2) between recorded processes, and the program's signal handlers, which run
//! behind the LD's own so that record notes where each asynchronous signal came and replay
//! runs the handler there (`preload/src/signals/mod.rs`, `preload/src/replay/signals.rs`).
//!
//! kill(2):
//!
//! A process killed by a signal has no `Exit` record; replay otherwise ends it where its
//! history ends. When the signal came from another recorded process (socat's handler ending
//! its EXEC child, a script stopping its server), that is too early or needless: the sender's
//! replay sends it again at the same point of its own history. So while recording, each kill
//! is told to the GD, which notes it on the receiving actor in the manifest, and replay lets
//! such a process wait for its killer. In replay a SIGKILL, which no LD can hold, is sent only
//! once the GD says it lands where the record's did (`LdToGd::Kill`); not from a signal
//! handler (the LD may be talking to the GD there).

use super::active;
use crate::{real, record, signals, sys};
use ddbx_wire::proto::Mode;
use libc::{c_int, pid_t};

/// kill(2): noted for the GD while recording (a group kill, for each member), then sent as
/// asked. In replay the pid is the record's, turned into this run's first
/// (`preload/src/hooks/pids.rs`), and a SIGKILL waits until it lands where the record's did
/// (`LdToGd::Kill`): no LD can hold it.
///
/// Not a `hook!`: a kill made by the program's signal handler inside a hook is noted too (for
/// the program's next hook to tell, `record::process::kill_in_handler`).
///
/// # Safety
///
/// None needed: no pointer arguments (unsafe as every hook is).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn kill(pid: pid_t, sig: c_int) -> c_int {
    // The pid as the kernel knows it (in replay the program holds the record's).
    let pid = super::pids::real_for_program(pid);
    let Some(_guard) = crate::guard::Guard::enter() else {
        if signals::in_program_handler()
            && signals::mode() == signals::RECORD
            && sig > 0
            && pid != sys::getpid()
        {
            record::process::kill_in_handler(pid, sig);
        }
        // SAFETY: no pointer arguments.
        return counted(pid, sig, unsafe { real::kill(pid, sig) });
    };
    let _ = crate::replay::signals::at_call_of("kill");
    if pid != -1
        && sig > 0
        && pid != sys::getpid()
        && let Some(ld) = active()
    {
        match ld.mode {
            Mode::Record => record::process::kill(ld, pid, sig),
            Mode::Replay
                if pid > 0
                    && sig == libc::SIGKILL
                    && !signals::in_signal_context()
                    && crate::ld::gd::may_send() =>
            {
                let saved = sys::errno();
                let _ = crate::halting::request(ld, &ddbx_wire::proto::LdToGd::Kill { pid, sig });
                sys::set_errno(saved);
            }
            Mode::Replay => {}
        }
    }
    // SAFETY: no pointer arguments.
    counted(pid, sig, unsafe { real::kill(pid, sig) })
}

/// A kill of `pid` with `sig` returned `r`: in a replay, one that was made is counted for each
/// process it reached but this one (`crate::ld::sent`: two of them may arrive as one).
fn counted(pid: pid_t, sig: c_int, r: c_int) -> c_int {
    if r == 0 && signals::mode() == signals::REPLAY && (1..32).contains(&sig) && pid != -1 {
        let saved = sys::errno();
        record::process::targets(pid, |p| crate::ld::sent::count(p, sig));
        sys::set_errno(saved);
    }
    r
}

/// killpg(3): the kill of the group (`kill`'s hook translates it, and orders it in replay).
///
/// # Safety
/// None needed: no pointer arguments (unsafe as `kill`'s hook is).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn killpg(pgrp: pid_t, sig: c_int) -> c_int {
    if pgrp < 0 {
        sys::set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: no pointer arguments.
    unsafe { kill(-pgrp, sig) }
}

/// The first 64 signals of `set` (bit `sig - 1`): glibc's sigset_t begins with them.
fn mask_bits(set: &libc::sigset_t) -> u64 {
    // SAFETY: a sigset_t is at least 8 bytes of plain data.
    unsafe { *(set as *const libc::sigset_t).cast::<u64>() }
}

/// sigaction(2): the program's handler of an asynchronous signal goes behind the LD's own
/// ([`on_signal`]), with the program's flags and mask; what the program reads back is its own.
///
/// Not a `hook!`: a handler set from inside a hook (by a signal handler that interrupted one)
/// must go behind the LD's too, and nothing here touches the LD's state (atomics only).
///
/// # Safety
/// Called by the program in place of libc's, with arguments valid for it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    if !signals::ordered(sig) {
        // SAFETY: the program's arguments.
        return unsafe { real::sigaction(sig, act, old) };
    }
    let before = signals::disposition(sig);
    let r = if act.is_null() {
        // SAFETY: the program's arguments.
        unsafe { real::sigaction(sig, act, old) }
    } else {
        // SAFETY: the program's pointer to a valid sigaction.
        let mut ours = unsafe { *act };
        let handler = ours.sa_sigaction;
        if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
            // SAFETY: the program's arguments.
            let r = unsafe { real::sigaction(sig, act, old) };
            if r == 0 {
                signals::drop_handler(sig);
                if handler == libc::SIG_DFL {
                    hold(sig);
                } else {
                    crate::fatal::let_go(sig);
                }
            }
            r
        } else {
            signals::keep(
                sig,
                signals::Disposition {
                    handler,
                    flags: ours.sa_flags,
                    mask: mask_bits(&ours.sa_mask),
                },
            );
            ours.sa_sigaction = on_signal as *const () as usize;
            ours.sa_flags |= libc::SA_SIGINFO;
            // SAFETY: our copy of the program's sigaction; the program's `old`.
            let r = unsafe { real::sigaction(sig, &ours, old) };
            if r != 0 {
                match before {
                    Some(d) => signals::keep(sig, d),
                    None => signals::drop_handler(sig),
                }
            } else {
                // Only now: a held signal that is pending goes to the LD's handler, which
                // keeps it for its recorded place, not to the default action (a child forked
                // by a handler, SIGTERM pending, died as it installed its own handler).
                crate::fatal::let_go(sig);
            }
            r
        }
    };
    if r == 0 && !act.is_null() && signals::any_held() {
        signals::disposition_changed(sig);
    }
    if r == 0 && !old.is_null() {
        // SAFETY: the program's `old`, just filled by the kernel.
        let old = unsafe { &mut *old };
        if old.sa_sigaction == on_signal as *const () as usize
            && let Some(d) = before
        {
            old.sa_sigaction = d.handler;
            old.sa_flags = d.flags;
        }
    }
    r
}

/// Blocks `sig` if replay holds it and the history has events left (see
/// `crate::fatal::hold_default_fatal`).
fn hold(sig: c_int) {
    if crate::ld::running().is_some_and(|ld| ld.next_record().is_some()) {
        crate::fatal::hold(sig);
    }
}

/// signal(3): glibc's BSD semantics (SA_RESTART, the signal blocked in its handler), through
/// [`sigaction`] (glibc's own `signal` would not come back through the exported symbol).
///
/// # Safety
/// Called by the program in place of libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: plain data; zeroes are an empty mask and no flags.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = libc::SA_RESTART;
    // SAFETY: a valid set in our local.
    unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        if (1..65).contains(&sig) {
            libc::sigaddset(&mut act.sa_mask, sig);
        }
    }
    // SAFETY: our locals.
    if unsafe { sigaction(sig, &act, &mut old) } < 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}

/// The LD's handler of every asynchronous signal the program handles. Record: notes where it
/// came (in a hooked call or not) and runs the program's handler. Replay: keeps the arrival
/// for the place the record gave it (`preload/src/replay/signals.rs`). Async-signal-safe:
/// atomics, raw system calls, no allocation, no lock.
extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let saved = sys::errno();
    if signals::is_watchdog(sig, info) {
        signals::watchdog_fired(ctx, crate::guard::inside());
        sys::set_errno(saved);
        return;
    }
    if forwarded_to_main_thread(sig, info, ctx) {
        sys::set_errno(saved);
        return;
    }
    // SAFETY: the kernel's siginfo of this delivery (or null).
    unsafe { forwarded_info(sig, info) };
    if let Some(d) = signals::disposition(sig) {
        match signals::mode() {
            signals::RECORD => {
                let ended = signals::ended_child(sig, info);
                // In a clock read or a random draw: as in computation (`replay::kept::instant`).
                let instant = crate::replay::kept::in_instant();
                let in_call = crate::guard::inside_before_event() && !instant;
                let releasing = super::nohang::releasing();
                if (!crate::guard::inside() || instant)
                    && !releasing
                    && actors_thread()
                    && signals::defer(sig, info, ended, ctx, handler_address())
                {
                    // In the program's computation: its handler runs at the program's next
                    // entry into a hook, a place replay finds again (`signals/deferred.rs`).
                    sys::set_errno(saved);
                    return;
                }
                let after = (crate::guard::inside() && !in_call) || releasing;
                signals::note(sig, (in_call, after), ended, None);
                // Inside a hook after its event: the program takes it as the call returns,
                // where replay runs it (`~G`, as the hook is left). It runs there in the record
                // too, outside the guard, so that its calls are what replay sees: run here,
                // inside the guard, Node's libuv handler's read of its lock pipe passed
                // through, and was an event in replay (5 replays of 15 diverged).
                if after && !releasing && crate::guard::inside() && signals::stash(sig, info) {
                    crate::guard::at_this_leave(run_stashed);
                } else {
                    signals::call_handler(sig, d, info, ctx);
                }
            }
            signals::REPLAY if !signals::overflowed() => {
                crate::ld::sent::arrived(sig);
                signals::arrived(sig, info);
                signals::in_signal(|| crate::replay::signals::arrival(ctx));
            }
            _ => {
                if !info.is_null() {
                    // The sender as the program sees it (`preload/src/pids.rs`).
                    // SAFETY: the kernel's siginfo of this delivery, ours to change.
                    unsafe { *info = crate::pids::shown_siginfo(sig, *info) };
                }
                signals::call_handler(sig, d, info, ctx)
            }
        }
    }
    sys::set_errno(saved);
}

/// The LD's handler, as the kernel knows it (`sa_sigaction`).
fn handler_address() -> usize {
    on_signal as *const () as usize
}

/// Whether the program runs on the thread where a signal that lands in computation is held
/// back for the program's next entry into a hook (`preload/src/signals/deferred.rs`): the
/// thread whose calls are the actor's events in a process without threads; in a process
/// whose threads are ordered, the main thread, which every signal sent to the process is
/// passed on to ([`forwarded_to_main_thread`]). Elsewhere entries into hooks come in no fixed
/// order.
fn actors_thread() -> bool {
    let Some(ld) = crate::ld::running() else {
        return false;
    };
    if crate::locks::threaded() {
        crate::locks::known_me() == 1 && ld.threads_ordered()
    } else {
        ld.values_thread()
    }
}

/// At each entry of the program into a hook, outside the guard (`crate::guard::on_each_entry`):
/// counts the entry (on the actor's thread) and, while recording, runs the handlers held back
/// for it, noted with its number; in replay, runs the deliveries the record made at it.
pub extern "C" fn at_entry() {
    let mode = signals::mode();
    if mode == signals::PASS || !actors_thread() {
        return;
    }
    let Some(ld) = crate::ld::running() else {
        return;
    };
    // Entries are counted since the event before; in a process with threads, since the main
    // thread's own last event (a count of the actor's events just after it).
    let mark = if crate::locks::threaded() {
        signals::main_mark()
    } else {
        ld.events()
    };
    let n = signals::count_entry(mark);
    if mode == signals::RECORD {
        if signals::any_held() {
            signals::disarm_watchdog();
            signals::run_held(Some(n), sys::block_signals(0));
        }
    } else {
        crate::replay::signals::at_entry(ld, mark, n);
    }
}

/// Record: runs the handlers of the deliveries kept while the hook that just returned was past
/// its event (see [`on_signal`]), errno kept for the program.
extern "C" fn run_stashed() {
    let saved = sys::errno();
    while let Some(sig) = signals::take_stashed() {
        if let Some(d) = signals::disposition(sig) {
            let mut info = signals::info_of(sig);
            signals::call_handler(sig, d, &mut info, std::ptr::null_mut());
        }
    }
    sys::set_errno(saved);
}

/// sigsuspend(2): in replay, a delivery that is due and whose signal the LD kept runs first,
/// and ends the wait as the handler would have; a wait that a recorded delivery ended also
/// runs the deliveries the record made in the same call (see
/// `replay::signals::after_suspend`).
///
/// # Safety
/// Called by the program in place of libc's, with a valid mask.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigsuspend(mask: *const libc::sigset_t) -> c_int {
    suspend(|| {
        // The signals replay holds stay blocked in the wait too (they are let go, past the
        // history's end, before it: `suspend`).
        let ours = super::mask::with_held(libc::SIG_SETMASK, mask);
        let mask = ours.as_ref().map_or(mask, |m| m as *const libc::sigset_t);
        // SAFETY: the program's mask or our copy of it, valid for sigsuspend(2).
        unsafe { real::sigsuspend(mask) }
    })
}

/// pause(2): as sigsuspend.
///
/// # Safety
/// Called by the program in place of libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pause() -> c_int {
    // SAFETY: no arguments.
    suspend(|| unsafe { real::pause() })
}

/// A wait for a signal, `wait()` the real call. Not a `hook!`: a delivery kept for the
/// program's next call that runs at its entry ends the wait, as it would have ended it. A
/// halting replay first asks for what the next event needs, as before a wait for a child.
fn suspend(wait: impl FnOnce() -> c_int) -> c_int {
    let Some(_guard) = crate::guard::Guard::enter() else {
        return wait();
    };
    let made = crate::replay::signals::planned_made();
    let ran = crate::replay::signals::at_call();
    crate::replay::cursor::before_blocking(false);
    // A shell's `wait` (dash: SIGCHLD awaited in sigsuspend, then non-blocking waits): a
    // halting replay must make what the next event needs (the children's ends) run.
    if !ran
        && let Some(ld) = super::active()
        && ld.mode == ddbx_wire::proto::Mode::Replay
    {
        crate::replay::process::before_wait(ld);
    }
    let r = if ran || crate::replay::signals::before_suspend() {
        sys::set_errno(libc::EINTR);
        -1
    } else {
        crate::baton::put_down_for(wait)
    };
    let err = sys::errno();
    crate::replay::signals::after_suspend(made);
    sys::set_errno(err);
    r
}

/// What a forwarded signal's siginfo said (see [`forwarded_to_main_thread`]), per signal: bit
/// 63 set, the sender's pid in bits 32–62, `si_code` in bits 16–31, a SIGCHLD's `si_status`
/// in bits 0–15.
static FORWARDED: [std::sync::atomic::AtomicU64; 65] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 65];

/// In a process whose threads are ordered, an asynchronous signal the kernel gave another
/// thread than the main one is made the main thread's: where the record noted a delivery, and
/// where replay runs the program's handler, are places among the main thread's calls (a
/// worker's early run of memcached's SIGTERM handler let its main thread leave its loop
/// without the `epoll_wait` the record's signal had interrupted). The thread blocks the signal
/// from its handler's return on, and sends it to the main thread with `tgkill`, into that
/// thread's own pending set (sent to the process again, it could come back to another worker).
/// Its siginfo is kept for the main thread's handler. A signal sent to this thread itself
/// (`pthread_kill`, `tgkill`) stays. False: not forwarded. (Not in a process whose threads are
/// not ordered: there the record ran the handler on whichever thread the kernel chose, and its
/// calls on a thread other than the actor's passed through unrecorded; Node's libuv handler,
/// run on the main thread in replay, made a read of its lock pipe the record never had.)
fn forwarded_to_main_thread(
    sig: c_int,
    info: *mut libc::siginfo_t,
    ctx: *mut libc::c_void,
) -> bool {
    if !crate::locks::threaded() || ctx.is_null() || !(1..65).contains(&sig) {
        return false;
    }
    let pid = sys::getpid();
    if sys::gettid() == pid || crate::ld::running().is_none() {
        return false;
    }
    let (code, sender, status) = if info.is_null() {
        (libc::SI_USER, 0, 0)
    } else {
        // SAFETY: the kernel's siginfo of this delivery; si_pid and si_status are read as
        // libc reads them (a sent signal's or a SIGCHLD's).
        unsafe { ((*info).si_code, (*info).si_pid(), (*info).si_status()) }
    };
    if code <= libc::SI_TKILL {
        return false; // sent to this thread, or by a timer or an AIO of its own
    }
    FORWARDED[sig as usize].store(
        1 << 63
            | (sender as u32 as u64) << 32
            | ((code as u16) as u64) << 16
            | (status as u16) as u64,
        std::sync::atomic::Ordering::SeqCst,
    );
    // SAFETY: the kernel's ucontext of this delivery (checked non-null); the mask it restores
    // as the handler returns.
    unsafe {
        libc::sigaddset(&mut (*ctx.cast::<libc::ucontext_t>()).uc_sigmask, sig);
    }
    if sys::tgkill(pid, pid, sig) != 0 {
        // That thread is gone: the process again, which the kernel gives a thread that takes it.
        sys::kill(pid, sig);
    }
    true
}

/// On the main thread: a signal that [`forwarded_to_main_thread`] sent again gets back the
/// siginfo of its first delivery (the sender, a SIGCHLD's child and status).
///
/// # Safety
/// `info` is null or the kernel's siginfo of this delivery.
unsafe fn forwarded_info(sig: c_int, info: *mut libc::siginfo_t) {
    if info.is_null() || !(1..65).contains(&sig) {
        return;
    }
    let pid = sys::getpid();
    // SAFETY: as the caller promises; a sent signal's sender is read as libc reads it.
    let (code, sender) = unsafe { ((*info).si_code, (*info).si_pid()) };
    if !matches!(code, libc::SI_TKILL | libc::SI_USER) || sender != pid {
        return;
    }
    let kept = FORWARDED[sig as usize].swap(0, std::sync::atomic::Ordering::SeqCst);
    if kept >> 63 == 0 {
        return;
    }
    // SAFETY: as the caller promises: ours to change. For a sent signal and a SIGCHLD alike
    // the union begins with the sender's pid and uid; a SIGCHLD's status follows them.
    unsafe {
        (*info).si_code = c_int::from((kept >> 16) as u16 as i16);
        crate::pids::set_sender(&mut *info, ((kept >> 32) & 0x7fff_ffff) as libc::pid_t);
        if sig == libc::SIGCHLD {
            *(info.cast::<u8>().add(SI_STATUS_AT).cast::<c_int>()) =
                c_int::from(kept as u16 as i16);
        }
    }
}

/// Where a SIGCHLD's `si_status` is in a `siginfo_t`: after the sender's pid and uid.
const SI_STATUS_AT: usize = if std::mem::size_of::<usize>() == 8 {
    24
} else {
    20
};
