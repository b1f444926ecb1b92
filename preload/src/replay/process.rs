//! Replay of the process family: the image's start (or exec), fork, posix_spawn and exit must
//! come where the history has them; a halting replay may hold the actor before a fork, and
//! makes sure that what the actor waits for outside its events (a child's exit) is under way.

use super::cursor;
use crate::halting;
use crate::ld::Ld;
use ddbx_wire::history::{Call, Record};
use libc::c_int;

/// The image's first event (`Start`, or `Exec` for an exec'd image). The program must be the
/// same; its arguments may carry run details that ddbx does not replay yet (a mktemp name, a
/// pid).
pub fn start(ld: &mut Ld, first: &Record) {
    let fits = match (first, ld.next_record()) {
        (Record::Exec { argv: now }, Some(Record::Exec { argv })) => argv.first() == now.first(),
        (Record::Start { .. }, Some(Record::Start { .. })) => true,
        _ => false,
    };
    if !fits {
        cursor::diverge(ld, &first.to_line());
    }
    halting::at_start(ld);
    cursor::advance(ld, first);
}

/// Before a fork: a halting replay may hold the actor at it. Past the end of a history that
/// was cut short (the recorded process was killed before this fork: a live run ended at its
/// halt), the fork must not make a child the record never had: the process waits here for the
/// end, as at any other event past its end (`cursor::diverge`).
pub fn before_fork(ld: &mut Ld) {
    cursor::gate(ld);
    if ld.next_record().is_none() {
        let index = ld.peek_next_child();
        let unlogged = ld
            .replay
            .as_ref()
            .is_some_and(|r| r.unlogged_children.contains(&index));
        if !unlogged {
            cursor::diverge(ld, &Record::Fork { index }.to_line());
        }
    }
}

/// After a fork, in the parent: the fork of child number `ld.fork_index`.
pub fn fork(ld: &mut Ld) {
    let record = Record::Fork {
        index: ld.fork_index,
    };
    created(ld, ld.fork_index, &record);
}

/// A posix_spawn of child number `index`.
pub fn spawn(ld: &mut Ld, index: u32) {
    let record = Record::Spawn { index };
    created(ld, index, &record);
}

/// Child number `index` was created (`record`): the history's next event, or a child the
/// record created after its last record (see `ReplayState::unlogged_children`).
fn created(ld: &mut Ld, index: u32, record: &Record) {
    let unlogged = ld.next_record().is_none()
        && ld
            .replay
            .as_ref()
            .is_some_and(|r| r.unlogged_children.contains(&index));
    if !unlogged {
        cursor::follow_exactly(ld, record);
    }
    cursor::advance(ld, record);
}

/// The exit of this process with `status`: the history must end with the same exit.
pub fn exit(ld: &mut Ld, status: c_int) {
    if let Some(interrupted) = interrupted_before_exit(ld, status) {
        cursor::advance(ld, &interrupted);
    }
    cursor::follow(
        ld,
        |r| matches!(r, Record::Exit { status: s } if *s == status),
        || format!("exit with status {status}"),
    );
    cursor::advance(ld, &Record::Exit { status });
}

/// The record's process made a readiness wait that a signal interrupted (EINTR), then exited
/// with `status` because of that signal (its handler set a flag the loop then read). In this
/// run the signal came before the wait, and the program saw the flag without waiting: the same
/// end, reached one call earlier. The interrupted wait, to be counted as made. (Its mirror, a
/// wait that replay makes where the record's process exited instead, waits for the signal:
/// `cursor::wait_for_a_signal`.)
fn interrupted_before_exit(ld: &Ld, status: c_int) -> Option<Record> {
    let next = ld.next_record()?;
    let after = ld.replay.as_ref()?.records.get(ld.events() as usize + 1)?;
    let interrupted = matches!(
        next,
        Record::Fail { call: Call::Wait, err, .. } if err.0 == libc::EINTR
    );
    let exits = matches!(after, Record::Exit { status: s } if *s == status);
    (interrupted && exits).then(|| next.clone())
}

/// Before the program blocks waiting for a child (not an event): whatever the actor's next
/// event needs (its children's exits, for its own exit) must be under way.
pub fn before_wait(ld: &mut Ld) {
    super::reads::end_read_run(ld);
    halting::before_blocking(ld);
}
