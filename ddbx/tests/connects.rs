//! Connects in replay (issue #10): a non-blocking connect comes out as the record saw it,
//! however the program learns the outcome — a ready set and `getsockopt(SO_ERROR)` (libpq,
//! curl), or `connect()` again (hiredis) — refusals included (class 2); and a second `connect()`
//! that completes a non-blocking one is part of that connection, not a new one (class 12).
//!
//! Each mode of the matrix: the race natively, record, replay ×3 with identical histories, a
//! halting replay at the cut `ddbx inf` computes, and `--trace optimal`.

use ddbx_tests::{
    Ddbx, Output, TempDir, full_histories, histories, native_outputs, path_str, progs,
};
use ddbx_wire::{Errno, Record};
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const JITTER: &str = "20";

/// Records `connect_nonblock MODE` (with `--trace optimal` and its full twin if `optimal`)
/// until the client was refused at least once in the record (with 20 ms of jitter before the
/// listen, nearly always the first time). Returns the directory, the recording and its output.
fn record_refused(mode: &str, optimal: bool) -> (TempDir, std::path::PathBuf, Output) {
    let program = progs().join("connect_nonblock");
    let tmp = TempDir::new("connects");
    for attempt in 1..=5 {
        let rec = tmp.join(&format!("rec{attempt}"));
        let options: &[&str] = if optimal {
            &["--trace", "optimal"]
        } else {
            &[]
        };
        let out = DDBX
            .record_with(options, &rec, &program, &[mode])
            .env("DDBX_JITTER", JITTER)
            .env("DDBX_TRACE_CHECK", "1")
            .success();
        if !out.stdout.contains("refused 0 times") {
            return (tmp, rec, out);
        }
    }
    panic!("connect_nonblock {mode}: 5 records without a refused connect");
}

/// The client's (p2's) history.
fn client(rec: &Path) -> Vec<Record> {
    histories(rec).remove("p2").unwrap_or_default()
}

/// Halts a replay of `rec` at `p2:event` and checks the cut against `ddbx inf`'s.
fn assert_halts_at_inf(rec: &Path, event: u64) {
    DDBX.halts_at_where_inf_says(rec, &format!("p2:{event}"));
}

/// The whole matrix for one way of learning the outcome; `learnt` recognises the record that
/// tells the client its connect was refused.
fn refused_connects(mode: &str, learnt: fn(&Record) -> bool) {
    let program = progs().join("connect_nonblock");
    let outputs = native_outputs(&program, &[mode], 20, 2, 30);
    assert!(
        outputs.len() >= 2,
        "30 native runs printed the same: {outputs:?}"
    );

    let (_tmp, rec, recorded) = record_refused(mode, false);
    let h = client(&rec);
    assert!(h.iter().any(learnt), "no refusal learnt this way: {h:#?}");
    DDBX.assert_replays(&rec, &recorded, 3, &histories(&rec), &histories);

    // Halt at the ready set after the connect that was accepted (before the end of the
    // stream, whose close is not an event yet).
    let connected = h
        .iter()
        .rposition(|r| matches!(r, Record::Connect { .. }))
        .unwrap_or_else(|| panic!("no connect: {h:#?}"));
    assert_halts_at_inf(&rec, connected as u64 + 2);

    // Optimal tracing: each replay observes what the full twin says.
    let (_tmp, rec, recorded) = record_refused(mode, true);
    DDBX.assert_replays(&rec, &recorded, 3, &full_histories(&rec), &histories);
}

#[test]
fn refused_nonblocking_connect_learnt_from_so_error() {
    refused_connects(
        "sockopt",
        |r| matches!(r, Record::SocketError { err: Some(e), .. } if *e == Errno::ECONNREFUSED),
    );
}

#[test]
fn refused_nonblocking_connect_learnt_by_connecting_again() {
    refused_connects(
        "again",
        |r| matches!(r, Record::ConnectAgain { err: Some(e), .. } if *e == Errno::ECONNREFUSED),
    );
}

#[test]
fn a_second_connect_that_completes_the_first_is_one_channel() {
    let program = progs().join("connect_twice");
    let (tmp, recorded) = DDBX.record_and_replay(&program, &[], 0, 3);
    assert_eq!(recorded.stdout, "second connect: 0, got: pong\n");
    let rec = tmp.join("rec");
    let h = histories(&rec);
    let client = &h["p1"];
    assert!(
        client
            .iter()
            .any(|r| matches!(r, Record::ConnectAgain { err: None, .. })),
        "{client:#?}"
    );
    // Matched with the server's accept: its bytes were dropped at the end of the record (a
    // channel between two recorded processes), and the analysis finds every byte sent.
    assert!(
        client
            .iter()
            .all(|r| !matches!(r, Record::Send { data: Some(_), .. })),
        "the client's send kept its bytes, as if the server were outside: {client:#?}"
    );
    let races = DDBX.run(["races", path_str(&rec)]).success();
    assert!(
        !races.stdout.contains("unsent_bytes") && !races.stderr.contains("unsent_bytes"),
        "{}{}",
        races.stdout,
        races.stderr
    );
    let show = DDBX.run(["show", path_str(&rec), "p1"]).success();
    assert!(show.stdout.contains("(channel 1)"), "{}", show.stdout);
}

/// A datagram socket that is only connected (a route probe: haproxy's default resolver, a
/// library learning its source address) moves nothing, so `record` reports nothing unrecorded
/// (before: "not recorded: datagram sockets" for haproxy); one that moves a datagram has it
/// recorded (`SendDatagram`, `RecvDatagram`: before UDP was recorded, it was reported). The
/// accept race beside it replays either way.
#[test]
fn a_connected_datagram_socket_that_moves_nothing_is_not_reported() {
    let program = progs().join("udp_probe");
    let (_tmp, recorded) = DDBX.race(&program, &[], 20);
    assert!(recorded.stdout.starts_with("udp: probed\naccepted: "));
    assert!(
        !recorded.stderr.contains("not recorded"),
        "{}",
        recorded.stderr
    );
    let (tmp, recorded) = DDBX.record_and_replay(&program, &["send"], 20, 1);
    assert!(recorded.stdout.starts_with("udp: 4 bytes back\naccepted: "));
    assert!(
        !recorded.stderr.contains("not recorded"),
        "{}",
        recorded.stderr
    );
    let kinds: Vec<&str> = histories(&tmp.join("rec"))["p1"]
        .iter()
        .map(Record::kind)
        .collect();
    assert_eq!(kinds[1..3], ["SendDatagram", "RecvDatagram"], "{kinds:?}");
}
