//! Replay of a process with threads: each thread waits for the events before its own.
//!
//! The record logs a process's events in the order its threads made them, one thread at a
//! time (`baton.rs`), and a `~t` line before each event of another thread than the last
//! one's. Replay follows the same sequence: a thread about to make an event waits, with the
//! baton put down, until every event before its next one has happened; the threads then make
//! the process's events in the recorded order, and each gets the outcomes its own events had.

use crate::ld::Ld;
use crate::ld::threads::thread_of;
use ddbx_wire::history::Record;
use ddbx_wire::proto::Mode;

/// Replay, in a process with threads: waits until the next event of the history is the
/// calling thread's. Past the history's end there is nothing to wait for, unless it ended with
/// the process's exit: then the exit is under way, and the thread waits for it.
pub fn await_turn(ld: &mut Ld) {
    if ld.mode != Mode::Replay || !ld.threads_ordered() {
        return;
    }
    let me = crate::locks::me();
    loop {
        let seen = crate::baton::events_seen();
        let Some(replay) = ld.replay.as_ref() else {
            return;
        };
        let next = ld.events() as usize;
        if next >= replay.records.len() {
            if matches!(ld.last_record(), Some(Record::Exit { .. })) {
                // Another thread has made the process's exit, which is under way: this one
                // was in a wait the record never saw return (memcached's workers in
                // `epoll_wait` as its main thread exits). It waits for the end.
                crate::baton::await_event(seen);
                continue;
            }
            return;
        }
        if thread_of(&replay.threads, next) == me {
            return;
        }
        crate::baton::await_event(seen);
    }
}
