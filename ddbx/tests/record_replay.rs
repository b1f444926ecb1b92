//! End to end: tiny real programs with real races, run natively, recorded by `ddbx record`
//! (the real preload, the real CLI), and replayed by `ddbx replay`.
//!
//! Each race test first shows that the race exists (native runs differ), then that replays of
//! one recording are identical: same exit status, same output as the record, and the same
//! histories (pids and ports aside) as the record wrote.

use ddbx_tests::{Output, Run, TempDir, assert_same_histories, histories, native_outputs, progs};
use ddbx_wire::Record;
use std::path::Path;

const DDBX: &str = env!("CARGO_BIN_EXE_ddbx");

/// Replays per recording.
const REPLAYS: usize = 3;

fn ddbx(args: &[&str]) -> Output {
    Run::new(DDBX).args(args).output()
}

/// Records `program args` with jitter, then replays it `REPLAYS` times and checks each replay.
fn record_and_replay(program: &Path, args: &[&str], jitter: u32) -> (TempDir, Output) {
    let tmp = TempDir::new("rr");
    let rec = tmp.join("rec");
    let mut cmd = vec!["record", "-o", rec.to_str().unwrap_or_default(), "--"];
    let prog = program.to_str().unwrap_or_default();
    cmd.push(prog);
    cmd.extend_from_slice(args);
    let recorded = Run::new(DDBX)
        .args(&cmd)
        .env("DDBX_JITTER", jitter.to_string())
        .output();
    assert_eq!(recorded.code, 0, "record failed:\n{}", recorded.stderr);
    assert!(
        !recorded.stdout.is_empty(),
        "the program printed nothing under record"
    );
    let recorded_histories = histories(&rec);
    for i in 1..=REPLAYS {
        let out_dir = tmp.join(&format!("replay{i}"));
        let replayed = ddbx(&[
            "replay",
            "--history-out",
            out_dir.to_str().unwrap_or_default(),
            rec.to_str().unwrap_or_default(),
        ]);
        assert_eq!(
            replayed.code, recorded.code,
            "replay {i} exit code differs from the record's; stderr:\n{}",
            replayed.stderr
        );
        assert_eq!(
            replayed.stdout, recorded.stdout,
            "replay {i} printed something else than the record"
        );
        assert_same_histories(
            &recorded_histories,
            &histories(&out_dir),
            &format!("record vs replay {i}"),
        );
    }
    (tmp, recorded)
}

/// Shows the race natively (at least two different outputs), then records and replays.
fn race(name: &str, args: &[&str], jitter: u32) {
    let program = progs().join(name);
    let outputs = native_outputs(&program, args, jitter, 2, 30);
    assert!(
        outputs.len() >= 2,
        "{name}: 30 native runs all printed the same output, so this test would show nothing:\n{}",
        outputs[0]
    );
    record_and_replay(&program, args, jitter);
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
