//! Clocks and randomness in replay (issue #10, class 4): what `clock_gettime`,
//! `gettimeofday`, `time`, `getrandom`, `getentropy` and reads of `/dev/urandom` returned is
//! recorded as value lines (not events) and handed back in replay at the same place, so a
//! program that decides from the clock or from randomness takes the same path; reads the record
//! did not log fall back to the real clock without going backwards and never diverge.
//!
//! Modes: natively the decisions differ; record; replay ×3 with the same output and histories
//! (whose event numbers the value lines do not shift); a halting replay at `ddbx inf`'s cut.

use ddbx_tests::{Ddbx, Output, TempDir, histories, native_outputs, path_str, progs};
use ddbx_wire::Record;
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// Records `clock_retry` until its decision was `decision` ("late" or "early"); 10 tries.
fn record_deciding(tmp: &TempDir, decision: &str) -> (std::path::PathBuf, Output) {
    let program = progs().join("clock_retry");
    for attempt in 1..=10 {
        let rec = tmp.join(&format!("rec-{decision}-{attempt}"));
        let out = DDBX
            .record(&rec, &program, &[])
            .env("DDBX_JITTER", "10")
            .success();
        if out.stdout.starts_with(decision) {
            return (rec, out);
        }
    }
    panic!("clock_retry: 10 records without deciding {decision}");
}

#[test]
fn a_retry_loop_that_decides_from_the_clock_replays_its_decisions() {
    // Natively: both decisions, and a different count of empty selects.
    let outputs = native_outputs(&progs().join("clock_retry"), &[], 10, 30, 30);
    let decided = |d: &str| outputs.iter().any(|o| o.starts_with(d));
    assert!(
        decided("late") && decided("early"),
        "30 native runs did not take both ways: {outputs:?}"
    );
    let counts: std::collections::BTreeSet<&str> = outputs
        .iter()
        .filter_map(|o| o.split(" empty selects").next())
        .collect();
    assert!(counts.len() >= 2, "{outputs:?}");

    for decision in ["late", "early"] {
        let tmp = TempDir::new("values");
        let (rec, recorded) = record_deciding(&tmp, decision);
        let h = histories(&rec);
        // Value lines are not events: p1's events are what the program did with sockets.
        let text = std::fs::read_to_string(rec.join("history/p1.ron")).unwrap();
        assert!(text.contains("\n~c1="), "no clock value in:\n{text}");
        assert!(text.contains("\n~r"), "no random value in:\n{text}");
        let events = text.lines().skip(1).filter(|l| !l.starts_with('~')).count();
        assert_eq!(h["p1"].len(), events, "{text}");
        // The replay's peer sleeps other times than the record's (its jitter is seeded from the
        // clock's system call, which is not replayed): the replay runs at another pace, and
        // still decides the same.
        DDBX.assert_replays(&rec, &recorded, 3, &h, &histories);

        // `ddbx show` sums up the values between events.
        let shown = DDBX.run(["show", path_str(&rec), "p1"]).success().stdout;
        assert!(shown.contains("· values: monotonic ×"), "{shown}");
        assert!(shown.contains("random ×3 (12 bytes)"), "{shown}");

        // A halting replay at the ready set that ends the select loop (early) or at the last
        // empty one (late) stops at `ddbx inf`'s cut.
        let at = h["p1"]
            .iter()
            .rposition(|r| matches!(r, Record::Ready { .. }))
            .unwrap_or_else(|| panic!("no ready set: {:#?}", h["p1"]));
        DDBX.halts_at_where_inf_says(&rec, &format!("p1:{}", at + 1));
    }
}

#[test]
fn clock_reads_the_record_did_not_log_do_not_diverge() {
    // Loops of 0.2 ms and 2 ms in turns: the first replay reads the clock far more often
    // than the record, the second about as often, the third far more again; the reads in
    // the exit handler come after the last event, those in the destructor after the exit.
    let tmp = TempDir::new("values-extra");
    let runs = tmp.join("runs");
    let rec = tmp.join("rec");
    let program = progs().join("clock_extra");
    let recorded = DDBX.record(&rec, &program, &[path_str(&runs)]).success();
    assert_eq!(recorded.stdout, "ok\n");
    let text = std::fs::read_to_string(rec.join("history/p1.ron")).unwrap();
    let values = text.lines().filter(|l| l.starts_with("~c1")).count();
    assert!(values > 10, "{text}");
    DDBX.assert_replays(&rec, &recorded, 3, &histories(&rec), &histories);
    // Replay 1 and 3 looped ten times as long as the record: they read the clock more often
    // (the values past the record's are the real clock's, continued); replay 2 as long.
    let reads = |dir: &Path| {
        let text = std::fs::read_to_string(dir.join("history/p1.ron")).unwrap();
        text.lines().filter(|l| l.starts_with("~c1")).count()
    };
    let replayed = reads(&tmp.join("replay1"));
    assert!(
        replayed > values,
        "replay 1 read the clock {replayed} times, the record {values}"
    );
}

/// `abs_sleep`: a loop that sleeps until "now + 5 ms" of the monotonic clock (the program's
/// clock, which replay hands back from the record) until a file the child makes after 100 ms
/// exists. Each replay reads the clock about as often as the record did: its sleeps last 5 ms.
/// (The deadline, computed from the record's clock, was in the real clock's past: every
/// sleep returned at once and the loop read the clock thousands of times, as gunicorn's
/// arbiter did for 30 s in `time.sleep`.)
#[test]
fn sleeps_until_a_time_of_the_replayed_clock_last_as_long_as_meant() {
    let tmp = TempDir::new("values-abs-sleep");
    let file = tmp.join("made");
    let rec = tmp.join("rec");
    let program = progs().join("abs_sleep");
    let recorded = DDBX.record(&rec, &program, &[path_str(&file)]).success();
    assert_eq!(recorded.stdout, "done\n");
    let reads = |dir: &Path| {
        let text = std::fs::read_to_string(dir.join("history/p1.ron")).unwrap();
        text.lines().filter(|l| l.starts_with("~c1")).count()
    };
    let values = reads(&rec);
    assert!(values >= 5, "the record read the clock {values} times");
    DDBX.assert_replays(&rec, &recorded, 3, &histories(&rec), &histories);
    for i in 1..=3 {
        let replayed = reads(&tmp.join(&format!("replay{i}")));
        assert!(
            replayed <= 4 * values + 20,
            "replay {i} read the clock {replayed} times, the record {values}: its sleeps did not sleep"
        );
    }
}

/// OpenSSL's `RAND_bytes` (its generator mixes the CPU's time stamp counter into every draw, so
/// recording its getrandom seeds is not enough): the ids three clients draw with it come out as
/// recorded. Before, every replay printed other ids (ldns's drill, a held-out DNS client, drew
/// its query ids so and its replay diverged at the first send to a played server).
#[test]
fn openssl_random_bytes_are_values() {
    let (_tmp, recorded) = DDBX.race(&progs().join("openssl_rand"), &[], 20);
    assert_eq!(recorded.stdout.lines().count(), 3, "{}", recorded.stdout);
}

/// The ports the kernel chose for connections and for a UDP socket a send bound, as accept,
/// getpeername and getsockname tell them, come out in replay as the record's (they differ in
/// every native run), and agree with each other and with what the clients said over the wire.
#[test]
fn ephemeral_ports_the_program_is_told_are_the_record_s() {
    let (tmp, recorded) = DDBX.race(&progs().join("ports"), &[], 10);
    assert!(
        recorded.stdout.ends_with("\nconsistent\n"),
        "{}",
        recorded.stdout
    );
    assert_eq!(recorded.stdout.matches("accepted from port").count(), 3);
    DDBX.halts_where_inf_says(&tmp.join("rec"), "p1.events >= 12");
}

/// The same ports reach an image that an exec made with the connection on its standard input
/// (inetd's way).
#[test]
fn ephemeral_ports_reach_an_exec_d_handler() {
    let (_tmp, recorded) = DDBX.race(&progs().join("ports"), &["exec"], 10);
    assert_eq!(
        recorded.stdout.matches("handler: peer port").count(),
        3,
        "{}",
        recorded.stdout
    );
    assert!(
        recorded.stdout.ends_with("\nconsistent\n"),
        "{}",
        recorded.stdout
    );
}

/// Names that mkstemp, mkostemp, mkstemps and mkdtemp make, arc4random's numbers and clock()'s
/// processor time (glibc reads randomness and that clock inside itself, past the getrandom and
/// clock_gettime hooks) come out in replay as the record's, the files and directory made for
/// real (mkostemp's flags kept).
#[test]
fn temporary_names_and_arc4random_are_values() {
    let dir = TempDir::new("temp-names");
    let (_tmp, recorded) = DDBX.race(&progs().join("temp_names"), &[path_str(dir.path())], 0);
    assert_eq!(
        recorded.stdout.matches(" there\n").count(),
        4,
        "{}",
        recorded.stdout
    );
    assert!(
        recorded.stdout.contains("mkostemp O_APPEND set\n"),
        "{}",
        recorded.stdout
    );
}
