//! What a readiness call reports and what a receive gets, in replay: epoll `data` that is not
//! an fd (nginx, class 11 of the real-server corpus), one epoll instance behind several fd
//! numbers (mio and tokio, class 10), and receives whose bytes the kernel cannot hold at once
//! (a poll server under load, issue #11).
//!
//! Each is a tiny program recorded and replayed (its race shown natively first where it has
//! one), replayed under `--trace optimal`, and halted mid-run where the cut must be the one
//! `ddbx inf` computes.

use ddbx_tests::{Ddbx, Histories, TempDir, full_histories, histories, progs};
use ddbx_wire::Record;
use ddbx_wire::history::WaitCall;
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// The fds of every epoll ready set in `actor`'s history.
fn epoll_ready_fds(h: &Histories, actor: &str) -> Vec<Vec<i32>> {
    h[actor]
        .iter()
        .filter_map(|r| match r {
            Record::Ready {
                call: WaitCall::Epoll,
                fds,
            } => Some(fds.iter().map(|f| f.fd).collect()),
            _ => None,
        })
        .collect()
}

/// Records `program args` with `--trace optimal` (`DDBX_JITTER=jitter`, and the full twin
/// histories) and replays it twice: same exit code and output as the record, and each replay
/// observes event for event what the full history says happened.
fn optimal_record_and_replay(program: &Path, args: &[&str], jitter: u32) {
    let tmp = TempDir::new("readiness-opt");
    let rec = tmp.join("rec");
    let recorded = DDBX
        .record_with(&["--trace", "optimal"], &rec, program, args)
        .env("DDBX_JITTER", jitter.to_string())
        .env("DDBX_TRACE_CHECK", "1")
        .success();
    DDBX.assert_replays(&rec, &recorded, 2, &full_histories(&rec), &histories);
}

#[test]
fn epoll_data_shared_by_two_fds_names_the_socket_that_was_ready() {
    let program = progs().join("epoll_same_data");
    for args in [&[][..], &["distinct"]] {
        let (tmp, recorded) = DDBX.record_and_replay(&program, args, 0, 3);
        assert!(
            recorded
                .stdout
                .contains("ready: 1, rdhup: yes, data: the program's"),
            "{args:?}: {}",
            recorded.stdout
        );
        let socket: i32 = recorded
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("socket fd "))
            .and_then(|fd| fd.parse().ok())
            .unwrap_or_else(|| panic!("no socket fd in {}", recorded.stdout));
        let rec = tmp.join("rec");
        assert_eq!(
            epoll_ready_fds(&histories(&rec), "p1"),
            vec![vec![socket]],
            "{args:?}: the ready set names the socket, not the eventfd with the same data"
        );
        DDBX.halts_where_inf_says(&rec, "p1.events >= 1");
        optimal_record_and_replay(&program, args, 0);
    }
}

#[test]
fn an_epoll_instance_used_through_a_duplicate_is_recorded_and_replays() {
    // mio's way: register through a duplicate of the epoll fd, wait on the original; with
    // `et`, O_NONBLOCK set through a duplicate of each connection.
    let program = progs().join("epoll_any");
    for args in [&["dup"][..], &["et", "dup"]] {
        let (tmp, _) = DDBX.race(&program, args, 5);
        let rec = tmp.join("rec");
        let h = histories(&rec);
        let sets = epoll_ready_fds(&h, "p1");
        let reads = h["p1"]
            .iter()
            .filter(|r| matches!(r, Record::Recv { .. }))
            .count();
        assert!(
            !sets.is_empty() && reads > 0,
            "{args:?}: the waits on the original epoll fd are recorded: {:#?}",
            h["p1"]
        );
        let events = h["p1"].len();
        DDBX.halts_where_inf_says(&rec, &format!("p1.events >= {}", events / 2));
        optimal_record_and_replay(&program, args, 5);
    }
}

#[test]
fn a_poll_server_under_load_replays() {
    // Its receives are recorded with as many bytes as the kernel had gathered; in replay the
    // same bytes may come in smaller segments, which fill the receive memory first.
    let program = progs().join("load_poll");
    let (tmp, recorded) = DDBX.race(&program, &["4", "5000"], 0);
    assert!(
        recorded.stdout.starts_with("4 clients x 5000 messages: "),
        "{}",
        recorded.stdout
    );
    DDBX.halts_where_inf_says(&tmp.join("rec"), "p1.events >= 8");
    optimal_record_and_replay(&program, &["4", "5000"], 0);

    let (_, recorded) = DDBX.record_and_replay(&program, &["16", "5000"], 0, 1);
    assert!(recorded.stdout.starts_with("16 clients x 5000 messages: "));
}

#[test]
fn a_receive_larger_than_the_receive_buffer_replays() {
    // recv(MSG_WAITALL) of 64 KiB on connections with 8 KiB receive buffers: the kernel never
    // holds a recorded receive's bytes at once, so replay takes them as they come.
    let program = progs().join("load_poll");
    let (tmp, _) = DDBX.record_and_replay(&program, &["4", "5000", "waitall"], 0, 2);
    let h = histories(&tmp.join("rec"));
    let largest = h["p1"]
        .iter()
        .filter_map(|r| match r {
            Record::Recv { n, .. } => Some(*n),
            _ => None,
        })
        .max();
    assert_eq!(largest, Some(65536), "{:#?}", h["p1"]);
}
