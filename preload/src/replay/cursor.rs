//! Where replay stands in the actor's history, and the three moves every replayed event makes:
//! [`follow`] (the next record must be what the program does now), [`advance`] (it happened),
//! and [`diverge`] (it did something else: the replay stops).
//!
//! The entry of every event goes through [`gate`]: the globals the GD observes are reported,
//! and a halting replay may hold the actor there (`halting.rs`). So a halting replay sees
//! every event, whichever call family it belongs to.

use crate::halting;
use crate::ld::Ld;
use crate::sys;
use ddbx_wire::history::Record;
use ddbx_wire::proto::{LdToGd, Mode};

/// At the entry of the next event: reports the observed globals that changed, then lets a
/// halting replay hold the actor. Nothing while recording.
pub fn gate(ld: &mut Ld) {
    if ld.mode != Mode::Replay {
        return;
    }
    super::reads::end_read_run(ld);
    super::threads::await_turn(ld);
    observe_memory(ld);
    halting::gate(ld);
    super::signals::at_gate(ld);
}

/// The next record, which must satisfy `fits`; otherwise the replay diverged here (`found`
/// says what the program did), or the record ended here with a kill.
pub fn follow(ld: &mut Ld, fits: impl Fn(&Record) -> bool, found: impl Fn() -> String) -> Record {
    gate(ld);
    if !ld.next_record().is_some_and(&fits) {
        // The records ahead may be a signal handler's, which the record ran inside this call.
        let before = ld.events();
        super::signals::inside_this_call(ld);
        if ld.events() != before {
            // This call's own event comes after the handler's: its entry is here (a halting
            // replay holds the actor before it, not after).
            gate(ld);
        }
    }
    match ld.next_record() {
        Some(r) if fits(r) => r.clone(),
        _ => diverge(ld, &found()),
    }
}

/// The next record, which must be `expected` exactly; otherwise the replay diverged here.
pub fn follow_exactly(ld: &mut Ld, expected: &Record) {
    follow(ld, |r| r == expected, || expected.to_line());
}

/// The event has happened as recorded; `observed` goes to the replay's history.
pub fn advance(ld: &mut Ld, observed: &Record) {
    ld.emit(observed);
    super::signals::after_event(ld);
    // A halting replay may hold the actor here first: a held actor is not at its end.
    halting::after_event(ld);
    if ld.mode == Mode::Replay && ld.next_record().is_none() {
        // Before the GD hears of the end: the GD may then end this process with its
        // recorded signal, which must not stay pending behind the held mask (fault matrix
        // seed 545: "p1 ended with signal 9, the record with signal 15", 4 replays in 40).
        crate::fatal::at_end();
        nothing_left(ld);
    }
}

/// The last event of a history that ends without `Exit` has happened (and the sends its
/// record made but never logged, if any, are made): the recorded process was killed
/// somewhere after it. Tells the GD at once, so that a process that now blocks in
/// a call that is not an event (a wait for a child, a sleep, `pause`) still counts as at its
/// end; its next event, if it makes one, waits there as [`diverge`] says.
pub fn nothing_left(ld: &mut Ld) {
    let Some(replay) = ld.replay.as_ref() else {
        return;
    };
    let owes = replay.owed.iter().any(|(_, n)| *n > 0);
    if owes || matches!(ld.last_record(), Some(Record::Exit { .. })) {
        return;
    }
    let msg = LdToGd::AtEnd {
        actor: ld.actor,
        events: ld.events(),
    };
    ld.send(&msg);
}

/// The program did `found`, which its history does not expect. Reports to the GD (which
/// stops every actor) and never returns.
pub fn diverge(ld: &mut Ld, found: &str) -> ! {
    // The values read since the last event, for whoever reads the replay's history.
    ld.flush_values();
    let event = ld.events() + 1;
    let events = ld.events();
    let killed_by = ld.replay.as_ref().and_then(|r| r.killed_by);
    if ld.in_wait && ld.exits_next() {
        // In the record, a signal ended the process while it waited in this very call
        // (its handler exited): wait here, with signals delivered, for the same to happen.
        wait_here_for_the_end(ld, events);
    }
    let expected = match ld.next_record() {
        Some(r) => r.to_line(),
        None => {
            // A signal that came before the end, held until now, ends the process where
            // the record's ended: in the call after its last event.
            crate::fatal::release_held();
            if let Some(sig) = killed_by {
                // The recorded process died here: so does this one.
                sys::kill_self(sig);
                sys::kill_self(libc::SIGKILL);
            }
            let ended_by_exit = matches!(ld.last_record(), Some(Record::Exit { .. }));
            if !ended_by_exit {
                // The recorded process was killed here (by another process, or ddbx
                // stopped): wait here, as it did, until the same happens again or the
                // replay ends.
                wait_here_for_the_end(ld, events);
            }
            "the end of the history (the recorded process did nothing more)".into()
        }
    };
    let msg = LdToGd::Diverged {
        actor: ld.actor,
        event,
        expected,
        found: found.to_string(),
    };
    ld.send(&msg);
    ld.wait_for_the_end(ddbx_wire::exit::DIVERGED)
}

/// The record ended here, after `events` events: tells the GD this actor is at its end and
/// waits for the session to end.
///
/// The kill it waits for may have come already, merged into an earlier arrival of its signal
/// that the program's handler took (`crate::ld::sent`): a gunicorn worker took `timeout`'s
/// SIGTERM in its handler, reset it to its default action and died of the arbiter's, which in
/// replay arrived as one with the first; it waited here, its arbiter waited for it, and the
/// replay took the arbiter's 30 s graceful timeout. Such a kill ends the process here.
fn wait_here_for_the_end(ld: &mut Ld, events: u64) -> ! {
    let msg = LdToGd::AtEnd {
        actor: ld.actor,
        events,
    };
    ld.send(&msg);
    let ended_by = ld.replay.as_ref().and_then(|r| r.ended_by_signal);
    ld.wait_for_the_end_checking(ddbx_wire::exit::DIVERGED, || die_of_a_merged_kill(ended_by))
}

/// The program is about to block in a call that is not an event (`sleep`: a sleep, which the
/// LD's own sleeps go through too): past the history's end, the call where the record's
/// process was killed. The signals held until then act (`crate::fatal::before_blocking`), and
/// so does a kill that merged into an earlier arrival ([`die_of_a_merged_kill`]).
pub fn before_blocking(sleep: bool) {
    if sleep && crate::guard::inside() {
        return;
    }
    crate::fatal::before_blocking();
    if crate::fatal::past_the_end() {
        let ended_by = crate::ld::running()
            .and_then(|ld| ld.replay.as_ref())
            .and_then(|r| r.ended_by_signal);
        die_of_a_merged_kill(ended_by);
    }
}

/// Past the history's end: dies of a default-fatal signal left to its default action that the
/// session's processes sent more often than it arrived, that arrived and was kept, or, when the
/// record died of it (`ended_by`), that they sent more often than the record's handler ran.
/// In replay a kill may come while the program still has its handler, which runs for it, and
/// the program then gives the signal back to its default action: the record's kill came after
/// that and ended the process (gunicorn's workers, each sent SIGTERM by `timeout` and by the
/// arbiter).
fn die_of_a_merged_kill(ended_by: Option<i32>) {
    for sig in crate::fatal::DEFAULT_FATAL {
        // SAFETY: plain data, filled by the query.
        let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a query into our local.
        let default = unsafe { crate::real::sigaction(sig, std::ptr::null(), &mut cur) } == 0
            && cur.sa_sigaction == libc::SIG_DFL;
        if !default {
            continue;
        }
        let all_made = ended_by == Some(sig)
            && crate::ld::sent::since_start(sig) as usize > crate::signals::planned_of(sig);
        // Or one that came early, while the program still had its handler, and that no
        // delivery of the record took (the LD keeps it).
        if all_made || crate::ld::sent::merged(sig) || crate::signals::take_arrival(sig) {
            crate::fatal::release_held();
            let old = sys::block_signals(0);
            sys::set_signal_mask(old & !(1u64 << (sig - 1)));
            sys::kill_self(sig);
        }
    }
}

/// [`follow`] only returns records its predicate accepted; this is for the compiler.
pub fn unreachable_record(ld: &mut Ld) -> ! {
    diverge(
        ld,
        "an internal inconsistency in ddbx's replay (please report)",
    )
}

/// The process calls a readiness wait where its history ends with its exit, so in the record
/// a signal came during this call and the program exited because of it (socat's SIGTERM
/// handler only notes the signal; the interrupted select returns EINTR and socat exits). Tells
/// the GD this actor is at its end, then waits until a signal handler of the program has run
/// (returns: the caller fails the call with EINTR, not recorded, as a record ending there has
/// nothing after it) or the replay ends (never returns).
///
/// The signal may have come already, before the process reached this call (socat then only
/// finds out in its loop): a program with signal handlers is also woken every 100 ms with
/// EINTR, which it must expect from such a call anyway, so that it looks again. This is a
/// liveness check, not an ordering: nothing is recorded or compared for it.
pub fn wait_for_a_signal(ld: &mut Ld) {
    let msg = LdToGd::AtEnd {
        actor: ld.actor,
        events: ld.events(),
    };
    ld.send(&msg);
    loop {
        if !ld.gd_message_buffered() {
            // ppoll is never restarted after a handler: EINTR says one ran.
            let handlers = sys::has_signal_handlers();
            let r = ld.poll_gd(if handlers { 100 } else { -1 });
            if (r < 0 && sys::errno() == libc::EINTR) || (r == 0 && handlers) {
                return;
            }
            if r <= 0 {
                continue;
            }
        }
        match ld.receive() {
            Some(msg) => {
                halting::control(ld, msg);
            }
            None => sys::exit_group(ddbx_wire::exit::DIVERGED),
        }
    }
}

/// At the entry of an event: reads the globals the GD asked to observe and reports those that
/// changed, as their values after the events executed so far (the GD evaluates traces and
/// predicates over memory from these values; a halting LD evaluates its own predicate at the
/// same point).
fn observe_memory(ld: &mut Ld) {
    if ld.replay.as_ref().is_none_or(|r| r.observe.is_empty()) {
        return;
    }
    let events = ld.events();
    let actor = ld.actor;
    let Some(replay) = ld.replay.as_mut() else {
        return;
    };
    let mut notes = Vec::new();
    for global in &mut replay.observe {
        let value = ld.symbols.read(&global.name, global.ty);
        if let Some(v) = value
            && global.last != Some(v)
        {
            global.last = Some(v);
            notes.push(LdToGd::Observed {
                actor,
                events,
                name: global.name.clone(),
                value: v,
            });
        }
    }
    let saved = sys::errno();
    for note in &notes {
        ld.send(note);
    }
    sys::set_errno(saved);
}
