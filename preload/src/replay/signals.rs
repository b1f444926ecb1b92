//! Replay of asynchronous signals: the program's handler runs where the record ran it.
//!
//! The record noted each delivery as a value line in the gap between two events, saying
//! whether it came inside a hooked call (a blocking call it interrupted, the LD's own work) or
//! in the program's computation (`ddbx_wire::history::value`). In replay the kernel calls the
//! LD's handler when the signal really arrives; it keeps the arrival (`preload/src/signals/mod.rs`)
//! and the program's handler runs at the recorded place:
//!
//! * **at once**, when the arrival comes where the record's delivery is due (the actor has
//!   executed as many events as the record had), whatever the program is doing then: blocked
//!   in a call ddbx passes through (a read of its self-pipe, `sigsuspend`, `pause`), in its
//!   computation, or in a replayed call; except that one the record took inside a call, if
//!   it finds the program outside any hook (sleeping, computing), waits for the program's
//!   next hooked call or sleep ([`at_call`]; a sleep goes on, `crate::hooks::sleep`);
//! * otherwise **at the entry of the next event** once it is due ([`at_gate`]): an arrival
//!   that came too early waits for it, and an event whose gap has a delivery waits for the
//!   signal to arrive. The call that follows comes out as recorded: the EINTR the record's
//!   interrupted call returned, or its result where SA_RESTART restarted it.
//!
//! A signal that arrives where the record had no delivery of it is kept for ever (a timer that
//! fired in the replay but not in the record must not decide). A handler the record ran
//! outside any hooked call runs at the gate with the guard left, so that its calls are
//! replayed as they were recorded; one the record ran inside a hooked call runs inside the
//! guard, its calls unrecorded, as they were.

use super::kept;
use crate::guard;
use crate::halting;
use crate::ld::{self, Ld};
use crate::signals::{self, Planned};
use crate::sys;
use ddbx_wire::history::Record;
use libc::{c_int, timespec};

/// What [`deliver_due`] stopped at.
enum Due {
    /// Nothing is due now.
    Nothing,
    /// This delivery is due but its signal has not arrived.
    Waiting(Planned),
}

/// Runs the handlers of the recorded deliveries that are due and whose signal has arrived, in
/// the record's order. `at_gate`: from the entry of an event (else from the LD's handler or
/// the end of an event, inside the hook).
fn deliver_due(at_gate: bool, ctx: *mut libc::c_void) -> Due {
    deliver_due_forcing(at_gate, ctx, 0)
}

/// [`deliver_due`], delivering the next due delivery of signal `force` even if it has not
/// arrived.
fn deliver_due_forcing(at_gate: bool, ctx: *mut libc::c_void, force: libc::c_int) -> Due {
    if !super::threads::on_handlers_thread() {
        return Due::Nothing;
    }
    if !signals::enter_delivery() {
        return Due::Nothing;
    }
    let due = loop {
        let Some(p) = signals::next_planned() else {
            break Due::Nothing;
        };
        let events = ld::running().map_or(0, |ld| ld.events());
        let early = p.gap > events && signals::entry_gap() != Some(p.gap);
        if early || (p.gap == events && signals::waits_taken() < p.waits_before) {
            break Due::Nothing;
        }
        if let Some(entry) = p.entry
            && !at_gate
            && signals::entry_now().is_none_or(|now| now < entry)
        {
            // The record ran it at the program's entry into a hook ([`at_entry`]) (or a later
            // one, if the replay's entries were fewer before it), or at the next event's gate
            // at the latest.
            break Due::Nothing;
        }
        if !at_gate
            && !p.in_call
            && p.entry.is_none()
            && p.gap == events
            && signals::clocks_taken(events) < p.clocks_before
        {
            // The record's came after more of this gap's clock reads than made so far; at the
            // next event's gate at the latest.
            break Due::Nothing;
        }
        if !at_gate && !p.in_call && guard::inside() {
            // The record ran it in the program's computation, so its calls were hooked: it
            // runs as soon as the program is back from the hook it is in.
            guard::defer();
            break Due::Nothing;
        }
        let past_this_event = p.gap == events && guard::inside() && guard::past_event();
        let in_sleep = kept::in_sleep();
        let in_hook = guard::inside() && !kept::in_instant();
        if !at_gate
            && p.in_call
            && ((!in_hook && !in_sleep) || past_this_event)
            && ld::running().is_some_and(|ld| ld.values_thread())
        {
            // Or it arrived as the hook of the event before that call returns (after the
            // event's line): run there, the program would see the flag as that hook returns
            // (vsftpd's session parent sent its child a byte, the child exited, and the
            // SIGCHLD that interrupted the parent's next read in the record came before the
            // send's hook returned: the replay exited before that read, 2 replays of 8).
            // The record took it inside a call, and the program sleeps or computes before
            // that call: run now, the program would see the handler's flag before the call
            // (a sleep's loop ended a turn early; vsftpd's session parent exited before the
            // read the record's signal interrupted). Kept for the program's next hooked call
            // or sleep ([`at_call`]); a sleep goes on (`crate::hooks::sleep`). The program
            // reaches that call without the handler, as the record's did: what the record
            // notes "in a call" came after the program had entered it (a delivery after the
            // call's event, as the program leaves the hook, is noted in computation:
            // `crate::guard::inside_before_event`).
            kept::keep();
            break Due::Nothing;
        }
        if !came(&p) && p.sig != force && !signals::later_arrived(events) {
            // Each later hooked call looks again ([`at_call`]; one made in computation runs
            // as the program leaves that hook): a kill that merged into an earlier arrival
            // counts only once its sender has counted it (a group kill, after a look at
            // `/proc`), and nothing else would look again while the program sleeps in a loop
            // that waits for the handler (gunicorn's arbiter waited out its graceful timeout;
            // `tests/progs/sig_merged.c`).
            kept::keep();
            break Due::Waiting(p);
        }
        signals::planned_done();
        run_delivery(&p, at_gate, in_sleep, ctx);
    };
    signals::leave_delivery();
    due
}

/// Runs the program's handler for delivery `p`, made now: at an event's gate outside the
/// guard (the record ran it in computation), inside it for one the record took in a call.
fn run_delivery(p: &Planned, at_gate: bool, in_sleep: bool, ctx: *mut libc::c_void) {
    // The sender as the program sees it (`preload/src/pids.rs`).
    let mut info = crate::pids::shown_siginfo(p.sig, signals::info_of(p.sig));
    if p.sig == libc::SIGCHLD
        && info.si_code > 0
        && let Some(kid) = signals::kid_pid(p.kid).filter(|_| p.kid > 0)
    {
        // The record's delivery was of this child's end: its handler reads that child's
        // pid, whichever end arrived last here.
        crate::pids::set_sender(&mut info, crate::pids::shown(kid));
    }
    signals::note(p.sig, (p.in_call, false), p.kid, p.entry);
    let Some(d) = signals::disposition(p.sig) else {
        // The program has let go of its handler since the signal arrived.
        return;
    };
    let info: *mut libc::siginfo_t = &mut info;
    let run = || signals::call_handler(p.sig, d, info, ctx);
    match (at_gate, p.in_call) {
        (true, false) => guard::outside(run),
        // In a sleep, the guard held as by the call the record took it in, without
        // entering a hook (no entry of the program's to count).
        (false, true) if in_sleep => guard::held(run),
        (false, true) => {
            let _inside = guard::Guard::enter();
            run()
        }
        _ => run(),
    }
}

/// Whether the signal of delivery `p` has come (an arrival is taken for it).
///
/// A SIGCHLD need not arrive: several children's ends may come as one arrival (the kernel
/// keeps one pending SIGCHLD). One the record raised by a child this image knows has come once
/// that child has ended (not reaped: that is the handler's), whatever arrived: an arrival may
/// be another child's, which ended earlier than in the record (postgres's startup process
/// before the backend of the first connection), and the handler, run on it, waited in the
/// recorded wait for a child still running. One raised by a child the record did not know
/// comes at once. What its handler can observe, the waits, is replayed on its own
/// (`preload/src/hooks/nohang.rs`).
fn came(p: &Planned) -> bool {
    let came = has_come(p);
    if came && !signals::take_arrival(p.sig) && p.sig != libc::SIGCHLD {
        crate::ld::sent::take_merged(p.sig);
    }
    came
}

/// [`came`], without taking the arrival. A signal that another of the session's processes
/// sent more often than it arrived has come too: two kills merged into one arrival
/// (`crate::ld::sent`).
fn has_come(p: &Planned) -> bool {
    if p.sig != libc::SIGCHLD {
        return signals::has_arrival(p.sig) || crate::ld::sent::merged(p.sig);
    }
    match signals::kid_pid(p.kid) {
        Some(pid) if p.kid > 0 => sys::child_ended(pid),
        // Its fork has not returned yet (the fork's event is replayed before fork returns
        // the pid): the child has not ended. A SIGCHLD the record had right after that event
        // would otherwise run its handler there, before the child could end (postgres's
        // postmaster reaped nothing and never started its background processes).
        None if signals::being_forked(p.kid) => false,
        _ => true,
    }
}

/// [`at_call`] at the entry of the hook of `name` (nothing for one `super::kept` calls instant).
#[inline]
pub fn at_call_of(name: &str) -> bool {
    kept::for_call(name) && at_call()
}

/// At the entry of a hooked call, inside the guard: an arrival kept for it is delivered, as
/// the record's was, inside a call. True if a handler of the program ran (a wait for a
/// signal, `pause`, is then over).
#[inline]
pub fn at_call() -> bool {
    if kept::take() {
        let ran = signals::handlers_run();
        deliver_due(false, std::ptr::null_mut());
        return signals::handlers_run() != ran;
    }
    false
}

/// From the LD's handler, just after an arrival: delivers what is due.
pub fn arrival(ctx: *mut libc::c_void) {
    guard::on_leave(left_hook);
    deliver_due(false, ctx);
    deliver_past_the_end(ctx);
}

/// After the history's last event nothing is left to order a signal against: an arrival that
/// no delivery of the record waits for runs the program's handler at once. (A `timeout` that
/// the script's `kill` stops after its last event forwards the signal to its child and ends
/// by it: its record died before the delivery's line was written, and kept for ever the
/// signal would leave the replay waiting for a process that never ends.)
fn deliver_past_the_end(ctx: *mut libc::c_void) -> bool {
    let at_end = ld::running().is_some_and(|ld| ld.next_record().is_none());
    if !at_end || signals::next_planned().is_some() || !signals::enter_delivery() {
        return false;
    }
    let mut ran = false;
    for sig in 1..65 {
        while signals::take_arrival(sig) {
            if let Some(d) = signals::disposition(sig) {
                let mut info = crate::pids::shown_siginfo(sig, signals::info_of(sig));
                signals::call_handler(sig, d, &mut info, ctx);
                ran = true;
            }
        }
    }
    signals::leave_delivery();
    ran
}

/// Before the program waits for a signal (`sigsuspend`, `pause`: calls that are not events,
/// from inside their hook): runs the handlers of the deliveries that are due and whose signal
/// has already arrived. True if one ran: the wait is over, as a handler ends it (the arrival
/// was kept by the LD, so the real wait would never see it; a shell's `wait` builtin slept
/// for ever in sigsuspend with its children's SIGCHLDs kept).
pub fn before_suspend() -> bool {
    if signals::mode() != signals::REPLAY {
        return false;
    }
    let made = signals::planned_made();
    deliver_due(true, std::ptr::null_mut());
    let past = deliver_past_the_end(std::ptr::null_mut());
    past || signals::planned_made() != made
}

/// How many recorded deliveries have been made (see [`after_suspend`]).
pub fn planned_made() -> usize {
    signals::planned_made()
}

/// After `sigsuspend` or `pause` returned, in replay: if a recorded delivery ended the wait
/// (`made`: how many had been made before the call), the deliveries the record made during
/// the same call — the next ones, inside a call, in the same gap between events, after the
/// waits recorded before them — run too before the call returns, each waiting for its signal.
/// The kernel runs every pending handler before the wait returns; the LD, delivering at
/// arrival, would end it after the first (nginx's master, woken by a SIGIO and a SIGCHLD in
/// one `sigsuspend` in the record, went on after the SIGIO alone and told a worker the
/// record had reaped to terminate).
pub fn after_suspend(made: usize) {
    if signals::mode() != signals::REPLAY || signals::planned_made() == made {
        return;
    }
    let Some(ld) = ld::running() else {
        return;
    };
    let events = ld.events();
    settle(ld, false, |p, _| p.in_call && p.gap == events);
}

/// The program is back from a hook during which a delivery was due: the program is in its
/// computation, so only the deliveries the record made in computation run, and only while the
/// program does not block their signal. One the record made inside a call waits for the next
/// call (a parent that keeps SIGCHLD blocked but in `sigsuspend` and clears its flag before
/// each would otherwise lose the wakeup and sleep for ever).
extern "C" fn left_hook() {
    let blocked = sys::block_signals(0);
    if signals::next_planned().is_some_and(|p| p.in_call || blocked & (1u64 << (p.sig - 1)) != 0) {
        return;
    }
    deliver_due(false, std::ptr::null_mut());
}

/// At the entry of an event: runs every delivery the record made before it, waiting for each
/// signal to arrive (while answering the GD). A delivery the record made inside a hooked call
/// is not waited for here unless the event is the EINTR it caused: the record's signal may
/// have come during the call, even after its real call returned (the line is written before
/// the event's), so [`after_event`] waits for it at the end of the event instead.
pub fn at_gate(ld: &mut Ld) {
    if signals::mode() != signals::REPLAY {
        return;
    }
    let eintr = matches!(
        ld.next_record(),
        Some(Record::Fail { err, .. }) if err.0 == libc::EINTR
    );
    settle(ld, true, |p, events| !p.in_call || p.gap < events || eintr);
}

/// The next record is not one the call the program makes now can make, and the record ran a
/// handler inside a call in this gap between events: the records ahead are the handler's
/// (postgres's postmaster forks its background processes from its SIGCHLD handler, inside
/// the `select` the signal interrupted). Waits for those deliveries and runs them here.
pub fn inside_this_call(ld: &mut Ld) {
    if signals::mode() != signals::REPLAY {
        return;
    }
    settle(ld, false, |p, events| p.in_call && p.gap == events);
}

/// Before a wait of the program's main line whose outcome the record logged: the deliveries
/// the record made before it (after the waits before them) run first, each waiting for its
/// signal, so that the handler's own waits take the outcomes the record's handler got. A
/// program that reaps both in its SIGCHLD handler and in its main line (bash: its handler and
/// its `wait` builtin) otherwise had its main line take the handler's outcomes when the signal
/// came later than in the record: the children each one reaped differed in every replay of
/// `tests/progs/sig_reapboth.c`, a blocking wait took a recorded "none yet" and reaped a child
/// the record's handler reaped later (`lost: 1`), and bash's `wait` failed (its script went to
/// its `EXIT` trap where the record went on).
pub fn before_planned_wait(ld: &mut Ld) {
    settle(ld, true, |_, _| true);
}

/// At the end of an event, before the hook returns to the program: a delivery the record made
/// inside this event's call has come by now.
pub fn after_event(ld: &mut Ld) {
    if signals::mode() != signals::REPLAY {
        return;
    }
    guard::on_leave(left_hook);
    settle(ld, false, |p, events| p.in_call && p.gap < events);
    await_computation_delivery(ld);
    deliver_past_the_end(std::ptr::null_mut());
}

/// At the end of an event whose gap has a delivery the record made in the program's
/// computation (and the program does not block its signal): waits for the signal to arrive
/// (at most [`AWAIT_MS`]), so that the handler runs as the program leaves the hook
/// ([`left_hook`]). The record's handler ran before the program's next hooked call; left to
/// the entry of the next event, a signal that came later than in the record (a script's
/// `kill`, slower under load) found the program already in a call the record never made:
/// mosquitto, its SIGTERM handler clearing its loop's flag, was in another `epoll_wait`
/// where the record closed its listener (`tests/progs/sig_computing.c`).
fn await_computation_delivery(ld: &mut Ld) {
    let Some(p) = signals::next_planned() else {
        return;
    };
    let blocked = sys::block_signals(0) & (1u64 << (p.sig - 1)) != 0;
    if p.in_call
        || p.entry.is_some()
        || p.gap != ld.events()
        || signals::waits_taken() < p.waits_before
        || signals::clocks_taken(p.gap) != p.clocks_before
        || blocked
    {
        return;
    }
    if p.sig == libc::SIGCHLD && signals::being_forked(p.kid) {
        // The SIGCHLD of the child this very event forks: the child cannot end before the
        // fork returns its pid, after the event (sig_malloc waited 5 s at 3 of its 300 forks,
        // whose children exit at once). Its arrival runs the handler then, in computation.
        return;
    }
    let mut waited_ms = 0;
    while !has_come(&p) && waited_ms < AWAIT_MS {
        wait_for(ld, p.sig);
        waited_ms += WAIT_MS;
    }
}

/// After the program read a recorded clock value: a delivery the record made in computation
/// right after as many of this gap's clock reads is awaited now (as at the end of an event,
/// [`await_computation_delivery`]) and runs as the clock's hook returns ([`left_hook`]).
///
/// Its signal may have arrived earlier, when nothing was due (a SIGCHLD whose child ended
/// sooner than in the record), and the handler then runs as this hook returns too, here or at
/// a later read if this one was too early for it (the waits of an earlier handler not taken
/// yet). Left to the next event's gate, it never ran in a loop that reads the time until its
/// handler has run: gunicorn's arbiter read it until its 30 s graceful timeout, its workers'
/// SIGCHLDs kept (`tests/progs/sig_clock_loop.c`).
pub fn after_clock(ld: &mut Ld) {
    if signals::mode() != signals::REPLAY {
        return;
    }
    let Some(p) = signals::next_planned() else {
        return;
    };
    if p.in_call || p.entry.is_some() || p.clocks_before == 0 || p.gap != ld.events() {
        return;
    }
    let taken = signals::clocks_taken(p.gap);
    if taken < p.clocks_before {
        return;
    }
    if taken == p.clocks_before {
        await_computation_delivery(ld);
    }
    guard::on_leave(left_hook);
    if has_come(&p) && signals::waits_taken() >= p.waits_before {
        guard::defer();
    }
}

/// After the program's mask call unblocked the signals `unblocked` (`sigprocmask`,
/// `pthread_sigmask`): when the next delivery is one of them, due now, and the record made it
/// in computation, it is awaited here (at most [`AWAIT_MS`]) and runs as the mask call
/// returns. The end of the event before it ([`after_event`]) did not wait, the program blocking
/// the signal then; the record's came pending and ran at this unblock, or later in the same
/// computation. Left to the program's next hooked call, it ran where the program's state was
/// another: bash blocks SIGCHLD around each fork and its `wait` builtin tells its handler not
/// to reap; the record's handler, run at the unblock, reaped five children, the replay's, run
/// in the builtin's first `waitpid`, reaped none, and the builtin's waits took the handler's
/// outcomes (`tests/servers/tokio.sh`: the script ended at its `wait`, 1 replay in 3 of one
/// record under load; `tests/progs/sig_unblock.c`).
pub fn at_unblock(unblocked: u64) {
    if unblocked == 0 || signals::mode() != signals::REPLAY || guard::inside() {
        return;
    }
    let Some(ld) = ld::running() else {
        return;
    };
    let Some(p) = signals::next_planned() else {
        return;
    };
    let bit = 1u64 << (p.sig - 1);
    if !ld.values_thread()
        || p.in_call
        || p.entry.is_some()
        || p.gap != ld.events()
        || signals::waits_taken() < p.waits_before
        || unblocked & bit == 0
        || (p.sig == libc::SIGCHLD && signals::being_forked(p.kid))
    {
        return;
    }
    {
        let Some(_inside) = guard::Guard::enter() else {
            return;
        };
        // Held while the LD talks to the GD; `wait_for` lets it in.
        let old = sys::block_signals(bit);
        let mut waited_ms = 0;
        while !has_come(&p) && waited_ms < AWAIT_MS && signals::next_planned() == Some(p) {
            wait_for(ld, p.sig);
            waited_ms += WAIT_MS;
        }
        sys::set_signal_mask(old);
    }
    deliver_due(false, std::ptr::null_mut());
}

/// At the program's entry `n` into a hook since event `events` (outside the guard), where the
/// record ran the handlers of deliveries that had landed in its computation: waits for each signal (at most [`AWAIT_MS`], answering the GD)
/// and runs its handler here, as the record did. One that has not come by then runs at the
/// next event's gate ([`at_gate`]).
pub fn at_entry(ld: &mut Ld, mark: u64, n: u32) {
    // At its entry, or past it (a replay that made fewer entries before it: late rather than
    // never, for a program that computes until the handler has run).
    loop {
        let Some(p) = signals::next_planned().filter(|p| {
            p.entry.is_some_and(|e| e <= n) && super::threads::main_mark(ld, p.gap) == mark
        }) else {
            return;
        };
        if signals::waits_taken() < p.waits_before {
            return;
        }
        guard::held(|| {
            if !ld.halt.as_ref().is_none_or(|h| h.runs_freely()) {
                // A halting replay may hold the actor before this call: its gate, where the
                // GD learns what the event needs, waits for the signal ([`at_gate`]).
                return;
            }
            // Held while the LD talks to the GD; `wait_for` lets it in.
            let old = sys::block_signals(1u64 << (p.sig - 1));
            let mut waited_ms = 0;
            while !has_come(&p) && waited_ms < AWAIT_MS && signals::next_planned() == Some(p) {
                wait_for(ld, p.sig);
                waited_ms += WAIT_MS;
            }
            sys::set_signal_mask(old);
        });
        let made = signals::planned_made();
        let _ = crate::signals::as_entry(n, p.gap, || deliver_due(false, std::ptr::null_mut()));
        if signals::planned_made() == made {
            return;
        }
    }
}

/// How long the end of an event awaits a delivery the record made in computation right after
/// it (ms): longer than a gate's [`MAX_WAIT_MS`], since going on without it is a divergence
/// (the program makes a call the record never made), while a signal that coalesced with
/// another only costs this wait. mosquitto's SIGTERM, sent by a script's `kill` that came more
/// than 500 ms after the broker's last event in 1 replay of about 20, diverged with 500.
const AWAIT_MS: u64 = 5000;

/// How long a due delivery waits for its signal at most (ms). Standard signals coalesce: two
/// SIGIOs raised while the program had them blocked arrive once, where the record, blocking
/// them at other moments, saw two. The handler runs at its place either way; the wait only
/// keeps it after what raised the signal, which the handler's own replayed calls wait for
/// anyway.
const MAX_WAIT_MS: u64 = 500;

/// Delivers what is due, waiting for the arrivals that `must` come now.
fn settle(ld: &mut Ld, at_gate: bool, must: impl Fn(&Planned, u64) -> bool) {
    let mut waited_ms = 0;
    let mut force = 0;
    loop {
        match deliver_due_forcing(at_gate, std::ptr::null_mut(), force) {
            Due::Nothing => return,
            Due::Waiting(p) if must(&p, ld.events()) => {
                if waited_ms >= MAX_WAIT_MS {
                    force = p.sig;
                    waited_ms = 0;
                    continue;
                }
                wait_for(ld, p.sig);
                waited_ms += WAIT_MS;
            }
            Due::Waiting(_) => return,
        }
    }
}

/// One wait of [`wait_for`], in ms.
const WAIT_MS: u64 = 20;

/// Waits a little for `sig` to arrive (unblocked for the wait, as the record had it unblocked
/// where it came), or for a message from the GD, which is handled.
fn wait_for(ld: &mut Ld, sig: libc::c_int) {
    if !ld.gd_message_buffered() {
        let old = sys::block_signals(0);
        sys::set_signal_mask(old & !(1u64 << (sig - 1)));
        // Not for ever: the arrival may come between the check and the wait.
        let r = ld.poll_gd(WAIT_MS as libc::c_int);
        sys::set_signal_mask(old);
        if r <= 0 {
            return;
        }
    }
    match ld.receive() {
        Some(msg) => {
            halting::control(ld, msg);
        }
        None => sys::exit_group(ddbx_wire::exit::DIVERGED),
    }
}

/// Makes one sleep call: `call(left)` sleeps for (or until) `left` and returns the error
/// number, 0 when it slept to its end, with what is left of a relative sleep in `left`.
/// In replay, an interruption that ran no handler of the program is slept through.
pub fn asleep(left: &mut timespec, mut call: impl FnMut(&mut timespec) -> c_int) -> c_int {
    if signals::mode() != signals::REPLAY {
        return call(left);
    }
    // A delivery kept during an earlier sleep runs now, as in a call (the record took it in
    // one): a loop that sleeps until its handler has run would otherwise sleep for ever.
    // Outside the guard it was kept again at each sleep (gunicorn's arbiter slept out its
    // 30 s graceful timeout, the SIGCHLDs of its workers behind its second SIGTERM).
    if !guard::inside() {
        let _ = kept::sleeping(at_call);
    }
    loop {
        let ran = signals::handlers_run();
        let err = call(left);
        if err != libc::EINTR || signals::handlers_run() != ran {
            return err;
        }
    }
}
