//! End to end: tiny real programs with real races, run natively, recorded by `ddbx record`
//! (the real preload, the real CLI), and replayed by `ddbx replay`.
//!
//! Each race test first shows that the race exists (native runs differ), then that replays of
//! one recording are identical: same exit status, same output as the record, and the same
//! histories (pids and ports aside) as the record wrote.

use ddbx_tests::{Output, TempDir, histories, progs};
use ddbx_wire::Record;
use std::path::Path;

const DDBX: &str = env!("CARGO_BIN_EXE_ddbx");

/// Records `program args` with jitter, then replays it 3 times and checks each replay.
fn record_and_replay(program: &Path, args: &[&str], jitter: u32) -> (TempDir, Output) {
    ddbx_tests::record_and_replay(Path::new(DDBX), program, args, jitter, 3)
}

/// Shows the race natively (at least two different outputs), then records and replays.
fn race(name: &str, args: &[&str], jitter: u32) {
    ddbx_tests::race(Path::new(DDBX), &progs().join(name), args, jitter);
}

#[test]
fn accept_race_between_two_clients() {
    race("accept_race", &[], 5);
}

#[test]
fn accept_order_of_many_clients() {
    race("many_clients", &[], 5);
}

#[test]
fn receive_from_any_via_select() {
    race("select_any", &[], 5);
}

#[test]
fn receive_from_any_via_poll() {
    race("poll_any", &[], 5);
}

#[test]
fn receive_from_any_via_epoll_level_triggered() {
    race("epoll_any", &[], 5);
}

#[test]
fn receive_from_any_via_epoll_edge_triggered() {
    race("epoll_any", &["et"], 5);
}

#[test]
fn partial_reads() {
    race("partial_reads", &[], 2);
}

#[test]
fn partial_reads_on_a_connection_passed_over_a_unix_socket() {
    // SCM_RIGHTS: the worker reads a connection it did not accept; its reads are recorded and
    // replayed like any other.
    race("fd_passing", &[], 2);
}

#[test]
fn nonblocking_receive_that_finds_nothing() {
    race("nonblock_nodata", &[], 5);
}

#[test]
fn connect_refused_before_the_server_listens() {
    race("connect_refused", &[], 20);
}

#[test]
fn fork_of_a_child_that_inherits_a_connection() {
    let (tmp, recorded) = record_and_replay(&progs().join("fork_inherit"), &[], 5);
    assert_eq!(
        recorded.stdout,
        "handler exit status 16\nclient exit status 14\n"
    );
    // Parent, client child, grandchild and the server's handler child: four actors. The
    // grandchild and the handler send and receive on connections they inherited over fork.
    let h = histories(&tmp.join("rec"));
    assert_eq!(h.len(), 4, "actors: {:?}", h.keys().collect::<Vec<_>>());
    let uses_inherited_connection = |records: &Vec<Record>| {
        records.iter().any(|r| matches!(r, Record::Send { .. }))
            && records.iter().any(|r| matches!(r, Record::Recv { .. }))
            && !records
                .iter()
                .any(|r| matches!(r, Record::Connect { .. } | Record::Accept { .. }))
    };
    let inheritors = h.values().filter(|r| uses_inherited_connection(r)).count();
    assert_eq!(inheritors, 2, "{h:#?}");
}
