//! The messages an LD sends after its handshake, handled by kind: replay matching
//! (`Connected`, `WhoIs`, `Kill`, `AtEnd`), facts about the processes (`Signal`, `Passthrough`,
//! `Reaped`, `Exiting`, `Observed`, `Execing`, `ExecFailed`), a steered record's `Hold` and
//! `Did`, problems that stop the session (`Diverged`,
//! `Unsupported`), and the halting notes (`Need`, `Passive`, `State`).

use super::note;
use crate::session::events::{MainEvent, SessionEvent};
use crate::session::gd_state::{GdState, Passthrough};
use crate::session::halted::{HaltedActor, Observation};
use crate::session::halting::PassiveNote;
use crate::session::live::{BreakAnswer, TouchAnswer};
use crate::session::outcome::{Divergence, End};
use crate::session::procs;
use crate::session::steer::StepAt;
use ddbx_wire::ActorId;
use ddbx_wire::history::Addr;
use ddbx_wire::manifest::ExitStatus;
use ddbx_wire::proto::{GdToLd, LdToGd};
use std::time::Instant;

/// Who is at the other end of a connection.
pub(super) struct Connection {
    /// The actor its `Hello` was welcomed as.
    pub(super) actor: ActorId,
    /// Its process.
    pub(super) pid: i32,
    /// Its halting incarnation (see `HaltingWelcome`).
    pub(super) incarnation: u64,
}

/// Handles one message after the handshake; returns the answer, if it is a request.
pub(super) fn handle(gd: &GdState, from: &Connection, message: LdToGd) -> Option<GdToLd> {
    match message {
        LdToGd::Hello { .. } | LdToGd::Handover { .. } => out_of_place(gd, from, &message),
        LdToGd::Connected {
            actor,
            event,
            local,
            remote,
        } => connected(gd, actor, event, local, remote),
        LdToGd::WhoIs {
            local,
            remote,
            peer_pid,
        } => return Some(who_is(gd, &local, &remote, peer_pid)),
        LdToGd::Kill { pid, sig } => return Some(kill_now(gd, pid, sig)),
        LdToGd::Hold { actor, event } => return Some(hold(gd, actor, event)),
        LdToGd::Did { actor, event } => did(gd, actor, event),
        m @ (LdToGd::Break { .. } | LdToGd::Touch { .. }) => return live_message(gd, m),
        LdToGd::AtEnd { actor, events: _ } => at_end(gd, actor),
        LdToGd::Signal { actor, pid, sig } => gd.lock().registry.signalled(pid, actor, sig),
        LdToGd::Passthrough { actor, what } => passthrough(gd, actor, what),
        LdToGd::RunsUnrecorded { actor, what } => gd.lock().execs.unrecorded(actor, from.pid, what),
        LdToGd::Reaped {
            actor: _,
            events,
            pid: child,
            status,
        } => reaped(gd, from, events, child, status),
        LdToGd::Exiting {
            actor: _,
            events,
            status,
        } => exiting(gd, from, events, status),
        LdToGd::Observed {
            actor,
            events,
            name,
            value,
        } => gd.lock().observed.push(Observation {
            actor,
            after: events,
            name,
            value,
        }),
        LdToGd::Diverged {
            actor,
            event,
            expected,
            found,
        } => diverged(gd, actor, event, expected, found),
        LdToGd::Unsupported { actor, what } => gd.send(MainEvent::Stop(End::Unsupported {
            actor: Some(actor),
            what,
        })),
        LdToGd::Execing { .. } | LdToGd::ExecFailed { .. } | LdToGd::Spawned { .. } => {
            must_join(gd, from, message);
        }
        LdToGd::Need { actor, event } => {
            if let Some(h) = gd.lock().halting.as_mut() {
                h.need(actor, event);
            }
        }
        LdToGd::Passive {
            actor,
            events,
            target,
            at_gate,
            epoch,
        } => passive(
            gd,
            PassiveNote {
                actor,
                incarnation: from.incarnation,
                events,
                target,
                at_gate,
                epoch,
            },
        ),
        LdToGd::State {
            actor,
            events,
            next,
            vars,
            satisfied,
        } => state(gd, from, actor, events, next, vars, satisfied),
    }
    None
}

/// Halting: an LD's answer to `Report`.
fn state(
    gd: &GdState,
    from: &Connection,
    actor: ActorId,
    events: u64,
    next: Option<String>,
    vars: Vec<(String, i64)>,
    satisfied: Option<bool>,
) {
    report(
        gd,
        HaltedActor {
            actor,
            events,
            next,
            vars: HaltedActor::in_order(vars),
            satisfied,
            pid: Some(from.pid),
            status: "passive".into(),
        },
    )
}

/// A message that never comes here: a second `Hello`, or a `Handover` (its descriptor is the
/// reader's, so the connection's thread passes it on itself).
fn out_of_place(gd: &GdState, from: &Connection, message: &LdToGd) {
    let me = from.actor;
    let what = match message {
        LdToGd::Hello { .. } => "said `Hello` twice on one connection",
        _ => "handed over a connection that was not passed on",
    };
    note(gd, format!("ddbx: internal: {me} {what}"));
}

/// An exec or a spawn announced, or an exec that failed: the new image must say `Hello`.
fn must_join(gd: &GdState, from: &Connection, message: LdToGd) {
    let mut tables = gd.lock();
    match message {
        LdToGd::Execing {
            actor,
            program,
            uid,
        } => tables.execs.announced(actor, from.pid, program, uid),
        LdToGd::ExecFailed { actor } => tables.execs.failed(actor, from.pid),
        LdToGd::Spawned {
            actor,
            index,
            program,
            uid,
        } => tables.execs.spawned(actor, index, program, uid),
        _ => {}
    }
}

// Replay matching.

/// A connect returned in replay: a `WhoIs` may be waiting for it.
fn connected(gd: &GdState, actor: ActorId, event: u64, local: Addr, remote: Addr) {
    let mut tables = gd.lock();
    tables.connects.connected(actor, event, local, remote);
    gd.changed.notify_all();
}

/// Which connect made the connection just accepted: waits until it is reported, or the
/// session ends (`peer: None`).
fn who_is(gd: &GdState, local: &str, remote: &str, peer_pid: Option<i32>) -> GdToLd {
    let mut tables = gd.lock();
    loop {
        let peer_actor = peer_pid.and_then(|p| tables.registry.live_actor(p));
        if let Some(peer) = tables.connects.who_is(local, remote, peer_pid, peer_actor) {
            return GdToLd::Peer { peer: Some(peer) };
        }
        if tables.ending {
            return GdToLd::Peer { peer: None };
        }
        tables = gd.wait(tables);
    }
}

/// Replay: a SIGKILL may be sent once it lands where the record's did.
fn kill_now(gd: &GdState, pid: i32, sig: i32) -> GdToLd {
    gd.await_kill_target(pid, sig);
    GdToLd::KillNow
}

/// Asking whether a process has died, without waiting.
const NO_WAIT: std::time::Duration = std::time::Duration::ZERO;

/// `actor` waits at the end of a history that ends without `Exit` (or died without a word, see
/// `lost`); when every live process does, the replay is over.
pub(super) fn at_end(gd: &GdState, actor: ActorId) {
    let mut tables = gd.lock();
    if !tables.at_end.contains(&actor) {
        tables.at_end.push(actor);
    }
    // A live process at its end has created every child its record has, which must have
    // joined; a dead one (see `lost`), and one that exited, every child its history creates
    // (a child forked just before its parent died or exited may not have said hello yet:
    // ending the replay then would kill it before its first event).
    // None live: every process exited as recorded (one may still be on its way out after its
    // `Exiting`): nothing to end.
    let live = tables.registry.live_pids();
    let joined = |a, logged| gd.children_joined(&tables.registry, a, logged);
    let all_at_end = !live.is_empty()
        && live.iter().all(|pid| {
            tables.registry.live_actor(*pid).is_some_and(|a| {
                tables.at_end.contains(&a)
                    && (joined(a, false) || (procs::has_died(*pid, NO_WAIT) && joined(a, true)))
            })
        })
        && tables.registry.exited_pids().iter().all(|pid| {
            tables
                .registry
                .actor_of_pid(*pid)
                .is_none_or(|a| joined(a, true))
        });
    if all_at_end {
        let spare = tables.registry.exited_pids();
        let first = live
            .iter()
            .filter_map(|pid| {
                let actor = tables.registry.live_actor(*pid)?;
                Some((*pid, gd.recorded_signal(actor)?))
            })
            .collect();
        gd.send(MainEvent::AllAtEnd { spare, first });
    }
}

// Facts about the processes.

/// `actor` did I/O that is not recorded (`what`).
fn passthrough(gd: &GdState, actor: ActorId, what: String) {
    let mut tables = gd.lock();
    match tables.passthrough.iter_mut().find(|p| p.what == what) {
        Some(known) => {
            if !known.actors.contains(&actor) {
                known.actors.push(actor);
            }
        }
        None => tables.passthrough.push(Passthrough {
            what,
            actors: vec![actor],
        }),
    }
}

/// Record: the process reaped its child `child` after `events` events.
fn reaped(gd: &GdState, from: &Connection, events: u64, child: i32, status: Option<ExitStatus>) {
    let mut tables = gd.lock();
    if gd.plans.is_none() {
        tables.registry.reaped(from.pid, events, child);
        // A child killed by a signal wrote no `Exiting`: this is all that says how it ended.
        // And a child's `Exiting` may be read after its parent's reap (two connections, two
        // threads): whichever comes first announces the exit.
        let actor = tables.registry.live_actor(child);
        tables.registry.exited(child, status);
        if let (Some(actor), Some(status)) = (actor, status) {
            gd.send(MainEvent::Event(SessionEvent::ActorExited {
                actor,
                pid: child,
                status,
            }));
        }
        return;
    }
    // Replay: a child killed by a signal its record does not have stops the replay.
    let actor = tables.registry.actor_of_pid(child);
    drop(tables);
    if let (Some(actor), Some(status)) = (actor, status)
        && let Some(kill) = gd.unrecorded_kill(actor, status)
    {
        gd.send(MainEvent::UnrecordedKill(kill));
    }
}

/// The process is exiting with `status` after `events` events.
fn exiting(gd: &GdState, from: &Connection, events: u64, status: ExitStatus) {
    let mut tables = gd.lock();
    // After a reap, waitpid's status stands.
    if tables.registry.live_actor(from.pid) == Some(from.actor) {
        tables.registry.exited(from.pid, Some(status));
        gd.send(MainEvent::Event(SessionEvent::ActorExited {
            actor: from.actor,
            pid: from.pid,
            status,
        }));
    }
    if let Some(h) = tables.halting.as_mut() {
        h.exited(from.actor, events);
        if h.check() {
            gd.send(MainEvent::Halted);
        }
    }
    gd.changed.notify_all();
}

// Problems that stop the session.

/// Replay: `actor` did not follow its history at `event`.
fn diverged(gd: &GdState, actor: ActorId, event: u64, expected: String, found: String) {
    let message = format!(
        "ddbx: replay diverged: {actor} at event {event}: expected `{expected}`, found `{found}`"
    );
    gd.send(MainEvent::Stop(End::Diverged(Divergence {
        actor: Some(actor),
        event: Some(event),
        expected,
        found,
        message,
    })));
}

// Halting notes.

/// An actor is passive: the program may have halted.
fn passive(gd: &GdState, note: PassiveNote) {
    let mut tables = gd.lock();
    if let Some(h) = tables.halting.as_mut() {
        h.passive(note);
        if h.check() {
            gd.send(MainEvent::Halted);
        }
    }
}

/// An actor's answer to `Report`: where it stands at the halt.
fn report(gd: &GdState, actor: HaltedActor) {
    let mut tables = gd.lock();
    if let Some(h) = tables.halting.as_mut() {
        h.state(actor);
    }
    gd.changed.notify_all();
}

/// Steered record: `actor` made `event` (`Did`): the events held for it may go.
fn did(gd: &GdState, actor: ActorId, event: u64) {
    gd.lock().steered.done.insert((actor, event));
    gd.changed.notify_all();
}

/// Steered record: `actor` is about to make `event` (`Hold`): waits until every receive it is
/// ordered after was made (or its actor has exited), at most
/// [`crate::session::Steering::patience`]; then `Go`.
fn hold(gd: &GdState, actor: ActorId, event: u64) -> GdToLd {
    let Some(steering) = gd.steer.as_ref() else {
        return GdToLd::Go { event };
    };
    let firsts: Vec<StepAt> = steering
        .orders
        .iter()
        .filter(|o| o.then == (actor, event))
        .map(|o| o.first)
        .collect();
    let deadline = Instant::now() + steering.patience;
    let mut tables = gd.lock();
    loop {
        let missing: Vec<StepAt> = firsts
            .iter()
            .copied()
            .filter(|f| !tables.steered.done.contains(f) && !tables.registry.has_exited(f.0))
            .collect();
        if missing.is_empty() {
            return GdToLd::Go { event };
        }
        match gd.wait_until(tables, deadline) {
            Ok(t) => tables = t,
            Err(t) => {
                drop(t);
                let list: Vec<String> = missing.iter().map(|(a, k)| format!("{a}:{k}")).collect();
                gd.send(MainEvent::Note(format!(
                    "ddbx: {actor}'s event {event} was held {:.1} s for {}, which did not \
                     come: it went on (the run took another way)",
                    steering.patience.as_secs_f64(),
                    list.join(", ")
                )));
                return GdToLd::Go { event };
            }
        }
    }
}

/// Live run: a `Break` or a `Touch`; the answer, if one is due.
fn live_message(gd: &GdState, message: LdToGd) -> Option<GdToLd> {
    match message {
        LdToGd::Break {
            actor,
            events,
            holds,
            vars,
        } => live_break(gd, actor, events, holds, vars),
        LdToGd::Touch {
            actor,
            events,
            peer,
            timed_out,
            doing,
            vars,
        } => Some(touch(gd, actor, events, peer, (timed_out, doing), vars)),
        _ => None,
    }
}

/// Live run: `actor`'s simple predicate became true or false (`Break`). When it became true
/// and completes the predicate, a halt starts with this actor stopped: the answer waits until
/// the halt is over (or the session ends).
fn live_break(
    gd: &GdState,
    actor: ActorId,
    events: u64,
    holds: bool,
    vars: Vec<(String, i64)>,
) -> Option<GdToLd> {
    let mut tables = gd.lock();
    let live = tables.live.as_mut()?;
    let answer = live.on_break(actor, events, holds, vars);
    if !holds {
        return None;
    }
    let BreakAnswer::Halts(number) = answer else {
        return Some(GdToLd::Proceed {
            peer_stopped: false,
        });
    };
    gd.send(MainEvent::Event(SessionEvent::ActorStopped {
        actor,
        events,
        why: "break".into(),
    }));
    gd.send(MainEvent::Halted);
    wait_for_halt_end(gd, tables, number);
    Some(GdToLd::Proceed {
        peer_stopped: false,
    })
}

/// Live run, during a halt: `actor` is about to interact with process `peer`, or its wait
/// for it timed out (`Touch`). Delayed until the halt is over if the peer stands.
fn touch(
    gd: &GdState,
    actor: ActorId,
    events: u64,
    peer: i32,
    doing: (bool, String),
    vars: Vec<(String, i64)>,
) -> GdToLd {
    let mut tables = gd.lock();
    let peer = tables.registry.live_actor(peer);
    let Some(live) = tables.live.as_mut() else {
        return GdToLd::Proceed {
            peer_stopped: false,
        };
    };
    match live.on_touch(actor, peer, events, doing, vars) {
        TouchAnswer::Proceed(peer_stopped) => GdToLd::Proceed { peer_stopped },
        TouchAnswer::Delayed(number) => {
            let why = format!(
                "delayed by {}",
                peer.map(|p| p.to_string()).unwrap_or_default()
            );
            gd.send(MainEvent::Event(SessionEvent::ActorStopped {
                actor,
                events,
                why,
            }));
            gd.changed.notify_all();
            wait_for_halt_end(gd, tables, number);
            GdToLd::Proceed { peer_stopped: true }
        }
    }
}

/// Waits until halt `number` is over (`cont`) or the session ends.
fn wait_for_halt_end(
    gd: &GdState,
    mut tables: std::sync::MutexGuard<'_, crate::session::gd_state::Tables>,
    number: u64,
) {
    while !tables.ending && tables.live.as_ref().and_then(|l| l.halt_on()) == Some(number) {
        tables = gd.wait(tables);
    }
}
