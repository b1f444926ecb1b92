//! Halting at Inf(P): the LD's part of the paper's algorithm (Fig. 5 of the halting paper; see
//! `docs/ARCHITECTURE.md`).
//!
//! In a halting replay every actor is either *active* (it runs) or *passive* (it waits at the
//! entry of its next event). An actor is active while its simple predicate is false, or while
//! it owes another actor something: the GD's `RunUntil` target (a fork, a connect/accept, the
//! bytes of a send, routed to it by the GD). Before an event that waits for another actor (a
//! receive, an accept, a connect, a ready set) the LD tells the GD what it is about to do
//! (`Need`), and the GD makes the actors it depends on run that far. When every actor is
//! passive and no request is in flight, the GD has found the program halted at Inf(P).
//!
//! The replay cursor (`replay/cursor.rs`) calls [`gate`] at the entry of each event and
//! [`after_event`] after it; every place that reads from the GD hands the messages the GD sent
//! on its own initiative to [`control`]. The state lives in the LD ([`HaltState`]).

use crate::ld::variables::{lookup, variable, variables};
use crate::ld::{HaltState, Ld};
use ddbx_wire::history::value::Value as Logged;
use ddbx_wire::history::{Call, Record};
use ddbx_wire::pred::{self, Value, VarRef};
use ddbx_wire::proto::{GdToLd, LdToGd};

/// Whether this actor's simple predicate holds now (`None`: it has none).
fn satisfied(ld: &mut Ld) -> Option<bool> {
    let sp = ld.halt.as_ref()?.sp.clone()?;
    let mut lookup = |v: &VarRef| lookup(ld, v).map(Value::Int);
    Some(pred::holds(&sp, &mut lookup))
}

/// The memory variables the predicate names, with their current values.
fn memory_variables(ld: &mut Ld) -> Vec<(String, i64)> {
    let Some(sp) = ld.halt.as_ref().and_then(|h| h.sp.clone()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for v in sp.vars() {
        if variable(ld, &v.name).is_none()
            && let Some(value) = ld.symbols.read(&v.name, v.ty)
        {
            out.push((v.name.clone(), value));
        }
    }
    out
}

/// Whether the actor runs freely (no halting, or halting is over, or it cannot be held).
fn runs_freely(halt: Option<&HaltState>) -> bool {
    halt.is_none_or(HaltState::runs_freely)
}

/// At the entry of the next event of a halting replay: wait while passive, then, if the
/// event waits for another actor, tell the GD what it needs. Called by the replay cursor's
/// gate (after it has reported the observed globals).
pub fn gate(ld: &mut Ld) {
    // A Retarget or RunUntil already sent (while the program was blocked elsewhere) counts
    // before this actor decides it is passive.
    drain_control(ld);
    loop {
        if runs_freely(ld.halt.as_ref()) {
            return;
        }
        let owed = ld.halt.as_ref().is_some_and(|h| ld.events() < h.target);
        let sp_false = satisfied(ld) == Some(false);
        if owed || sp_false {
            break;
        }
        wait_while_passive(ld);
    }
    let waits = matches!(
        ld.next_record(),
        Some(
            Record::Recv { .. }
                | Record::Peek { .. }
                | Record::RecvDatagram { .. }
                | Record::Accept { .. }
                | Record::Connect { err: None, .. }
                | Record::Ready { .. }
                | Record::Send { turn: Some(_), .. }
        )
    ) || matches!(
        ld.next_record(),
        Some(Record::Connect { err: Some(e), .. }) if *e == ddbx_wire::Errno::EINPROGRESS
    ) || matches!(
        // A send or receive that found the peer's end closed needs that close (the analysis's
        // `resets`): replayed from the history, it would not wait for it, and a halt left
        // vsftpd's session at its exit while its curl client, whose close the session's
        // EPIPE saw, stayed three events short of `ddbx inf`'s cut.
        ld.next_record(),
        Some(Record::Fail { call: Call::Send | Call::Recv, err, .. })
            if *err == ddbx_wire::Errno::EPIPE || *err == ddbx_wire::Errno::ECONNRESET
    );
    // A signal the record delivered before this event: what raised it (a child's end).
    let waits = waits || crate::signals::due(ld.events());
    // Turns in a shared file after this event: the writes a read saw, the lock before a
    // lock, children reaped before a turn (the GD knows which).
    let next = ld.events() + 1;
    let waits = waits || turns_after(ld, next);
    if waits {
        let msg = LdToGd::Need {
            actor: ld.actor,
            event: ld.events() + 1,
        };
        ld.send(&msg);
    }
}

/// At the image's first event (`Start`, or `Exec`), which has no gate: the program runs on
/// from it to its next event, active or not, so the reads and locks of shared files it makes
/// on the way need others' writes and locks now (a `grep` that reads a log as it starts). Said before the event is
/// counted, so that the GD hears it before the actor is passive after it.
pub fn at_start(ld: &mut Ld) {
    if runs_freely(ld.halt.as_ref()) {
        return;
    }
    let event = ld.events() + 1;
    if turns_after(ld, event) {
        let msg = LdToGd::Need {
            actor: ld.actor,
            event,
        };
        ld.send(&msg);
    }
}

/// Whether the record logged, after event `event`, a turn in a shared file that names its
/// file: in a halting replay the event may then need other actors' writes or locks of that
/// file, or the ends of children reaped before the turn (the GD knows), so its gate tells
/// the GD.
fn turns_after(ld: &mut Ld, event: u64) -> bool {
    let Some(replay) = ld.replay.as_mut() else {
        return false;
    };
    let values = &replay.values;
    values.list[values.cursor.min(values.list.len())..]
        .iter()
        .skip_while(|(after, _)| *after < event)
        .take_while(|(after, _)| *after == event)
        .any(|(_, v)| {
            matches!(
                v,
                Some(
                    Logged::Appended { file: Some(_), .. }
                        | Logged::ReadAfter { file: Some(_), .. }
                        | Logged::Locked { file: Some(_), .. }
                )
            )
        })
}

/// Passive at the gate: says so (once), then handles the GD's next message.
fn wait_while_passive(ld: &mut Ld) {
    let events = ld.events();
    let actor = ld.actor;
    if let Some(halt) = ld.halt.as_mut()
        && !halt.at_gate_sent
    {
        halt.passive_sent = true;
        halt.at_gate_sent = true;
        let msg = LdToGd::Passive {
            actor,
            events,
            target: halt.target,
            at_gate: true,
            epoch: halt.epoch,
        };
        ld.send(&msg);
    }
    match ld.receive() {
        Some(msg) => {
            control(ld, msg);
        }
        None => ld.gd_gone(),
    }
}

/// After an event of a halting replay: once nothing is owed and the predicate holds, say
/// so at once (the program may next block outside any event, in waitpid or on a pipe).
pub fn after_event(ld: &mut Ld) {
    drain_control(ld);
    let Some(halt) = ld.halt.as_ref() else {
        return;
    };
    if halt.runs_freely() || halt.passive_sent {
        return;
    }
    let (events, target, epoch) = (ld.events(), halt.target, halt.epoch);
    if events < target || satisfied(ld) == Some(false) {
        return;
    }
    // A fork+exec is one creation: the image about to exec is not passive yet.
    if matches!(ld.next_record(), Some(Record::Exec { .. })) {
        return;
    }
    if let Some(halt) = ld.halt.as_mut() {
        halt.passive_sent = true;
    }
    let msg = LdToGd::Passive {
        actor: ld.actor,
        events,
        target,
        at_gate: false,
        epoch,
    };
    ld.send(&msg);
}

/// Handles the control messages that arrived while the actor was running (a `RunUntil`
/// sent while it was active must count before it says it is passive).
fn drain_control(ld: &mut Ld) {
    if ld.halt.is_none() {
        return;
    }
    while ld.gd_has_input() {
        match ld.receive() {
            Some(msg) => {
                control(ld, msg);
            }
            None => return,
        }
    }
}

/// Before the program blocks in a call that is not an event (waitpid…): whatever its next
/// event needs from others must be under way, or the program may wait forever.
pub fn before_blocking(ld: &mut Ld) {
    let Some(halt) = ld.halt.as_ref() else {
        return;
    };
    if halt.runs_freely() || ld.next_record().is_none() {
        return;
    }
    // Only an active actor will execute its next event; a passive one asks for nothing.
    let owed = ld.events() < halt.target;
    if !owed && satisfied(ld) != Some(false) {
        return;
    }
    let msg = LdToGd::Need {
        actor: ld.actor,
        event: ld.events() + 1,
    };
    ld.send(&msg);
}

/// Sends a request and waits for its answer; `None` if the GD is gone. Control messages
/// that arrive meanwhile are handled on the way.
pub fn request(ld: &mut Ld, msg: &LdToGd) -> Option<GdToLd> {
    ld.send(msg);
    loop {
        let reply = ld.receive()?;
        if let GdToLd::RunUntil { .. }
        | GdToLd::Report
        | GdToLd::Release
        | GdToLd::Retarget { .. }
        | GdToLd::Deliver { .. } = reply
        {
            control(ld, reply);
            continue;
        }
        return Some(reply);
    }
}

/// Handles a message the GD sent on its own initiative; false if it was not one.
pub fn control(ld: &mut Ld, msg: GdToLd) -> bool {
    match msg {
        GdToLd::RunUntil { event } => {
            if let Some(halt) = ld.halt.as_mut()
                && event > halt.target
            {
                halt.target = event;
                halt.passive_sent = false;
                halt.at_gate_sent = false;
            }
            true
        }
        GdToLd::Report => {
            report(ld);
            true
        }
        GdToLd::Retarget { sp, epoch } => {
            if let Some(halt) = ld.halt.as_mut() {
                halt.epoch = halt.epoch.max(epoch);
                halt.sp = sp;
                halt.passive_sent = false;
                halt.at_gate_sent = false;
            }
            true
        }
        GdToLd::Release => {
            if let Some(halt) = ld.halt.as_mut() {
                halt.released = true;
            }
            true
        }
        _ => false,
    }
}

/// Answers `Report`: the actor's state where it halted.
fn report(ld: &mut Ld) {
    let next = ld.next_record().map(Record::to_line);
    let mut vars = memory_variables(ld);
    vars.extend(variables(ld));
    let msg = LdToGd::State {
        actor: ld.actor,
        events: ld.events(),
        next,
        vars,
        satisfied: satisfied(ld),
    };
    ld.send(&msg);
}
