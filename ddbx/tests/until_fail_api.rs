//! The embedding API of flaky-run capture (`ddbx::Recorder::until_fail`): the runs recorded in
//! this process one after the other, and two at a time as `ddbx record` processes; the
//! failing run kept, told to the `on_run` callback, and replayed through the API.
//!
//! Its own test binary, one test: a session reaps with `waitpid(-1)`, so nothing else in this
//! process may have children while one runs. (How often `flaky_accept` fails, and why 340 runs
//! are enough: `ddbx/tests/until_fail.rs`.)

use ddbx::{Failure, Messages, OutcomeKind, RecordOptions, Recorder, ReplayOptions, UntilFail};
use ddbx_tests::{TempDir, path_str, progs};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// `flaky_accept 10` with `DDBX_JITTER=5`, through env(1) (the environment of this process
/// is left alone).
fn command() -> Vec<String> {
    let flaky = progs().join("flaky_accept");
    ["/usr/bin/env", "DDBX_JITTER=5", path_str(&flaky), "10"]
        .map(String::from)
        .to_vec()
}

/// Records until a run fails into `rec`; checks what the outcome and the callback say.
fn capture(rec: &Path, jobs: u32, ddbx: Option<PathBuf>) {
    let told = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&told);
    let outcome = Recorder::new(RecordOptions {
        command: command(),
        out_dir: Some(rec.to_path_buf()),
        messages: Messages::Quiet,
        ..Default::default()
    })
    .until_fail(UntilFail {
        runs: 340,
        jobs,
        ddbx,
        on_run: Some(Arc::new(move |report| {
            seen.lock()
                .unwrap_or_else(|e| panic!("{e}"))
                .push((report.ended, report.failure.clone()));
        })),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("until_fail: {e}"));
    assert_eq!(outcome.exit_code, 0, "{:?}", outcome.messages);
    let failing = outcome.failing.unwrap_or_else(|| panic!("no failing run"));
    assert_eq!(failing.failure, Failure::Exit(1));
    assert_eq!(failing.dir, rec);
    let told = told.lock().unwrap_or_else(|e| panic!("{e}")).clone();
    assert_eq!(
        told.len() as u32,
        outcome.runs,
        "one report per run that ended"
    );
    assert_eq!(
        told.last().map(|t| t.1.clone()),
        Some(Some(Failure::Exit(1)))
    );
    assert!(
        told[..told.len() - 1].iter().all(|t| t.1.is_none()),
        "every run before the failing one passed: {told:?}"
    );
    assert!(rec.join("manifest.ron").is_file());
    assert!(
        !rec.join(".until-fail").exists(),
        "the passing runs are gone"
    );
    for _ in 0..2 {
        let replayed = ddbx::replay(ReplayOptions {
            dir: rec.to_path_buf(),
            messages: Messages::Quiet,
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("replay: {e}"));
        assert_eq!(replayed.kind, OutcomeKind::ReachedEnd);
        assert_eq!(replayed.exit_code, 1, "the replay fails as the run did");
    }
}

#[test]
fn the_api_captures_a_failing_run_in_this_process_and_in_ddbx_processes() {
    let tmp = TempDir::new("until-fail-api");
    capture(&tmp.join("here"), 1, None);
    capture(
        &tmp.join("jobs"),
        2,
        Some(PathBuf::from(env!("CARGO_BIN_EXE_ddbx"))),
    );

    // More than one run at once needs the binary; nothing is made then.
    let e = Recorder::new(RecordOptions {
        command: command(),
        out_dir: Some(tmp.join("refused")),
        messages: Messages::Quiet,
        ..Default::default()
    })
    .until_fail(UntilFail {
        jobs: 2,
        ..Default::default()
    })
    .err()
    .unwrap_or_else(|| panic!("jobs 2 without a binary was accepted"));
    assert_eq!(e.exit_code(), ddbx::exit::USAGE, "{e}");
    assert!(!tmp.join("refused").exists());
}
