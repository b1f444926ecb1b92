//! The embedding API of live halting (`ddbx::run_live`): a Rust harness runs a program live,
//! is called at the halt, looks again at the state (which changes while it stands: the
//! heartbeat client stops when it next sends to the stopped server), and continues; the run
//! then completes as if nobody had stopped.
//!
//! Its own test binary, one test: a session reaps with `waitpid(-1)`, so nothing else in this
//! process may have children while one runs. (The program: `ddbx/tests/live.rs`.)

use ddbx::{HaltAction, HaltedState, Messages, OutcomeKind, RecordOptions, Resume, RunOptions};
use ddbx_tests::{TempDir, path_str, progs};
use std::time::{Duration, Instant};

/// How long the harness looks again for the second stopped process at most.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn a_rust_harness_is_called_at_the_live_halt_and_continues() {
    let tmp = TempDir::new("live-api");
    let mut calls = 0;
    let mut started: Option<Instant> = None;
    let driver = Box::new(move |state: &HaltedState| {
        calls += 1;
        let since = *started.get_or_insert_with(Instant::now);
        // Look again until a second process stands (the heartbeat client, at its next send
        // to the stopped server, 20 ms at most after the halt).
        if state.cut.len() < 2 && since.elapsed() < PATIENCE {
            std::thread::sleep(Duration::from_millis(1));
            return HaltAction::Refresh;
        }
        assert!(calls > 1 || state.cut.len() >= 2);
        HaltAction::Resume(Resume::ToEnd)
    });
    let outcome = ddbx::run_live(RunOptions {
        record: RecordOptions {
            command: vec![path_str(&progs().join("lazy_halt")).to_string()],
            out_dir: Some(tmp.join("run")),
            messages: Messages::Quiet,
            ..Default::default()
        },
        break_if: "p1.asked == 1".into(),
        driver: Some(driver),
        hold: false,
    })
    .unwrap_or_else(|e| panic!("run_live: {e}"));
    let record = &outcome.record;
    assert_eq!(record.kind, OutcomeKind::Complete, "{:?}", record.messages);
    assert_eq!(record.exit_code, 0, "{:?}", record.messages);
    assert_eq!(outcome.halts.len(), 1, "{outcome:?}");
    let halt = &outcome.halts[0];
    assert_eq!(halt.predicate, "p1.asked == 1");
    let p1 = halt.actors.iter().find(|a| a.actor.0 == 1).expect("p1");
    assert_eq!(p1.status, "stopped (break)", "{halt:?}");
    assert!(
        halt.actors
            .iter()
            .any(|a| a.status == "stopped (delayed by p1)"),
        "{halt:?}"
    );
    let replayed = ddbx::replay(ddbx::ReplayOptions {
        dir: record.dir.clone(),
        messages: Messages::Quiet,
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("replay: {e}"));
    assert_eq!(replayed.kind, OutcomeKind::ReachedEnd);
    assert_eq!(replayed.exit_code, 0);
}
