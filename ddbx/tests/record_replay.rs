//! End to end: tiny real programs with real races, run natively, recorded by `ddbx record`
//! (the real preload, the real CLI), and replayed by `ddbx replay`.
//!
//! Each race test first shows that the race exists (native runs differ), then that replays of
//! one recording are identical: same exit status, same output as the record, and the same
//! histories (pids and ports aside) as the record wrote.

use ddbx_tests::{Ddbx, TempDir, histories, path_str, progs};
use ddbx_wire::Record;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// The program matrix: one test per race program (`test: "program" [args], jitter N`), each
/// showing the race natively, then recording once and replaying 3 times ([`Ddbx::race`]).
macro_rules! race_tests {
    ($($(#[$doc:meta])* $test:ident: $program:literal $args:expr, jitter $jitter:literal;)*) => {
        $(
            $(#[$doc])*
            #[test]
            fn $test() {
                DDBX.race(&progs().join($program), $args, $jitter);
            }
        )*
    };
}

race_tests! {
    accept_race_between_two_clients: "accept_race" &[], jitter 5;
    accept_order_of_many_clients: "many_clients" &[], jitter 5;
    receive_from_any_via_select: "select_any" &[], jitter 5;
    receive_from_any_via_poll: "poll_any" &[], jitter 5;
    receive_from_any_via_epoll_level_triggered: "epoll_any" &[], jitter 5;
    receive_from_any_via_epoll_edge_triggered: "epoll_any" &["et"], jitter 5;
    partial_reads: "partial_reads" &[], jitter 2;
    /// SCM_RIGHTS: the worker reads a connection it did not accept; its reads are recorded and
    /// replayed like any other.
    partial_reads_on_a_connection_passed_over_a_unix_socket: "fd_passing" &[], jitter 2;
    /// Each read is a MSG_PEEK, then a recvmsg into two buffers: replay hands the peeked
    /// bytes again to the read that follows.
    partial_reads_after_peeks: "partial_reads" &["peek"], jitter 2;
    /// recvmmsg on a stream socket, received as one recvmsg.
    partial_reads_with_recvmmsg: "partial_reads" &["mmsg"], jitter 2;
    /// Reads alternate between the connection's fd and a dup of it: one open file, two numbers.
    partial_reads_through_a_dup: "partial_reads" &["dup"], jitter 2;
    nonblocking_receive_that_finds_nothing: "nonblock_nodata" &[], jitter 5;
    connect_refused_before_the_server_listens: "connect_refused" &[], jitter 20;
}

#[test]
fn fork_of_a_child_that_inherits_a_connection() {
    let (tmp, recorded) = DDBX.record_and_replay(&progs().join("fork_inherit"), &[], 5, 3);
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

/// The bytes of a channel between two recorded processes are not kept in the histories even
/// while the program runs (`preload/src/record/peers.rs`: each end finds that its peer is
/// recorded), instead of being kept and dropped when the record ends: the program counts the
/// lines holding bytes in its own recording before it exits. The client's first send comes
/// before the server's accept may have returned: the server's listening socket, noted at its
/// listen, already says the peer is recorded. The replay still regenerates every byte from its
/// sender.
#[test]
fn bytes_between_recorded_processes_are_not_kept_while_recording() {
    let tmp = TempDir::new("peer-bytes");
    let rec = tmp.join("rec");
    let program = progs().join("peer_bytes");
    let recorded = DDBX
        .record(&rec, &program, &[path_str(&rec), "50"])
        .success();
    let kept: u64 = recorded
        .stdout
        .trim()
        .strip_prefix("kept ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("expected `kept N`, found {:?}", recorded.stdout));
    // 50 round trips: 200 receives and sends, each of which kept its bytes before.
    assert_eq!(kept, 0, "lines that kept bytes during the record");
    let text: String = histories(&rec)
        .values()
        .flatten()
        .map(|r| format!("{r:?}"))
        .collect();
    assert!(!text.contains("data: Some"), "bytes left in the histories");
    // The parent's read of a file that took the number of the connection it closed is no
    // event: closing a connection whose endpoint was noted must not leave the number known as
    // a socket.
    let h = histories(&rec);
    let closed_then_read = h.values().any(|records| {
        records.iter().enumerate().any(|(i, r)| {
            matches!(r, Record::Close { fd } if records[i + 1..].iter().any(
                |later| matches!(later, Record::Recv { fd: f, .. } if f == fd)))
        })
    });
    assert!(!closed_then_read, "a read after a Close on its fd: {h:?}");
    DDBX.run(["replay", path_str(&rec)]).success();
}

/// SCM_RIGHTS, halting: the record names the descriptors a send passed and the numbers the
/// receive that took them gave them, so the analysis binds the worker's passed fd to the
/// connection its parent accepted, and a halting replay amid the worker's reads of it halts at
/// `ddbx inf`'s cut (before, those reads needed nothing: the worker read while the client was
/// held before its sends, and the halt hung). Replays write the same histories (checked by
/// `record_and_replay`), `passed` included.
#[test]
fn a_halt_amid_reads_of_a_passed_connection_halts_where_inf_says() {
    let (tmp, _) = DDBX.record_and_replay(&progs().join("fd_passing"), &[], 2, 1);
    let rec = tmp.join("rec");
    let h = histories(&rec);
    let passes = |records: &Vec<Record>, sending: bool| {
        records.iter().any(|r| match r {
            Record::Send { passed, .. } if sending => passed.len() == 1,
            Record::Recv { passed, .. } if !sending => passed.len() == 1,
            _ => false,
        })
    };
    let (Some(parent), Some(worker)) = (
        h.iter().find(|(_, r)| passes(r, true)).map(|(a, _)| a),
        h.iter().find(|(_, r)| passes(r, false)).map(|(a, _)| a),
    ) else {
        panic!("no send that passed a descriptor and receive that took it: {h:#?}");
    };
    assert_ne!(parent, worker);
    // Halfway through the worker's 20 or so reads.
    let reads = h[worker].len() as u64;
    DDBX.halts_at_where_inf_says(&rec, &format!("{worker}:{}", reads / 2));
}
