//! Pre-fork workers sharing one listening socket (issue #10, class 9): in replay the kernel
//! hands each connection to whichever worker accepts first, not to the one that accepted it in
//! the record; the LDs pass it on through the GD (`SCM_RIGHTS`) to the worker whose recorded
//! accept returned it. Workers woken together for one connection (epoll without
//! `EPOLLEXCLUSIVE`) whose accept then found nothing must find nothing again.
//!
//! `tests/progs/prefork.c`: 4 workers, 8 clients, in three modes. Each: the race natively
//! (which worker served whom), record, 5 replays with the record's output and histories, and
//! an optimal-tracing record replayed twice. (A halting replay of it waits for issue #10's
//! class 7: the ready set of a listening socket must need the connect of the connection the
//! next accept returns.)

use ddbx_tests::{Ddbx, Histories, TempDir, full_histories, histories, native_outputs, progs};
use ddbx_wire::Record;
use ddbx_wire::history::Call;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const JITTER: &str = "5";

/// How many times a worker was woken for a connection that another took first: a ready set
/// directly followed by a failed accept.
fn woken_for_nothing(h: &Histories) -> usize {
    h.values()
        .map(|records| {
            records
                .windows(2)
                .filter(|w| {
                    matches!(w[0], Record::Ready { .. })
                        && matches!(
                            w[1],
                            Record::Fail {
                                call: Call::Accept,
                                ..
                            }
                        )
                })
                .count()
        })
        .sum()
}

/// The matrix for one mode; with `losers`, records until some worker was woken for nothing.
fn prefork(mode: &str, losers: bool) {
    let program = progs().join("prefork");
    let outputs = native_outputs(&program, &[mode], 5, 2, 30);
    assert!(
        outputs.len() >= 2,
        "30 native runs, the same workers: {outputs:?}"
    );

    let tmp = TempDir::new("prefork");
    let mut attempt = 0;
    let (rec, recorded) = loop {
        attempt += 1;
        let rec = tmp.join(&format!("rec{attempt}"));
        let recorded = DDBX
            .record(&rec, &program, &[mode])
            .env("DDBX_JITTER", JITTER)
            .success();
        if !losers || woken_for_nothing(&histories(&rec)) > 0 {
            break (rec, recorded);
        }
        assert!(attempt < 5, "5 records and no worker woken for nothing");
    };
    DDBX.assert_replays(&rec, &recorded, 5, &histories(&rec), &histories);

    let tmp = TempDir::new("prefork-optimal");
    let optimal = tmp.join("rec");
    let recorded = DDBX
        .record_with(&["--trace", "optimal"], &optimal, &program, &[mode])
        .env("DDBX_JITTER", JITTER)
        .env("DDBX_TRACE_CHECK", "1")
        .success();
    DDBX.assert_replays(
        &optimal,
        &recorded,
        2,
        &full_histories(&optimal),
        &histories,
    );
}

#[test]
fn prefork_workers_woken_together_by_epoll() {
    prefork("epoll", true);
}

#[test]
fn prefork_workers_with_epollexclusive() {
    prefork("excl", false);
}

#[test]
fn prefork_workers_blocking_in_accept() {
    prefork("block", false);
}
