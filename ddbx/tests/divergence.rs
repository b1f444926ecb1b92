//! A program that changed between record and replay is reported as a divergence: which actor,
//! which event, what the history expected and what happened; a distinct exit code; nothing
//! left running.

use ddbx_tests::{Ddbx, TempDir, path_str, progs};

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const DIVERGED: i32 = 101;

#[test]
fn a_changed_program_is_reported_as_a_divergence() {
    let tmp = TempDir::new("diverge");
    let bin = tmp.join("prog");
    std::fs::copy(progs().join("diverge1"), &bin).unwrap_or_else(|e| panic!("{e}"));
    let rec = tmp.join("rec");
    DDBX.record(&rec, &bin, &[]).success();

    // The same recording replays cleanly with the same binary …
    DDBX.run(["replay", path_str(&rec)]).success();

    // … but not once the program has changed: variant 2 sends one message more.
    std::fs::copy(progs().join("diverge2"), &bin).unwrap_or_else(|e| panic!("{e}"));
    let changed = DDBX.run(["replay", path_str(&rec)]).output();
    assert_eq!(
        changed.code, DIVERGED,
        "stdout:\n{}\nstderr:\n{}",
        changed.stdout, changed.stderr
    );
    let msg = &changed.stderr;
    assert!(msg.contains("diverged"), "{msg}");
    assert!(msg.contains("expected"), "{msg}");
    assert!(
        msg.contains("a send of 6 bytes"),
        "the report names the unexpected send: {msg}"
    );
    assert!(
        msg.contains("Recv("),
        "the report shows the expected record: {msg}"
    );
    assert!(
        regex_like_actor_event(msg),
        "the report names the actor and the event number: {msg}"
    );
}

/// A program that makes one readiness wait more where its record exits (`extra_wait FILE`,
/// recorded with 0, replayed with 1): the replay waits there for a signal that could have
/// ended the record's process in that wait, then ends it. That is a divergence at the exit,
/// said so (before, it was reported as a SIGKILL "from outside the session").
#[test]
fn a_call_where_the_record_exits_is_reported_as_a_divergence_at_the_exit() {
    let tmp = TempDir::new("extra_wait");
    let file = tmp.join("extra");
    std::fs::write(&file, "0").unwrap();
    let rec = tmp.join("rec");
    let bin = progs().join("extra_wait");
    DDBX.record(&rec, &bin, &[path_str(&file)]).success();
    std::fs::write(&file, "1").unwrap();
    let out = DDBX.run(["replay", path_str(&rec)]).output();
    assert_eq!(
        out.code, DIVERGED,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    let msg = &out.stderr;
    assert!(
        msg.contains("expected its exit, found a call its record did not make"),
        "{msg}"
    );
    assert!(!msg.contains("from outside the session"), "{msg}");
    assert!(regex_like_actor_event(msg), "{msg}");
}

/// Whether `msg` contains "p<N> at event <M>".
fn regex_like_actor_event(msg: &str) -> bool {
    msg.split_whitespace()
        .collect::<Vec<_>>()
        .windows(4)
        .any(|w| {
            w[0].trim_end_matches(':')
                .strip_prefix('p')
                .is_some_and(|n| n.parse::<u32>().is_ok())
                && w[1] == "at"
                && w[2] == "event"
                && w[3].trim_end_matches(':').parse::<u64>().is_ok()
        })
}
