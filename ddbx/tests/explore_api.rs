//! The embedding API of race flipping (`ddbx::explore`): a recording made through the API,
//! its unaffected race flipped in this process, the new run judged and replayed through the
//! API.
//!
//! Its own test binary, one test: a session reaps with `waitpid(-1)`, so nothing else in this
//! process may have children while one runs. (Why `late_winner` never fails natively:
//! `ddbx/tests/explore.rs`.)

use ddbx::{ExploreOptions, Messages, OutcomeKind, RecordOptions, ReplayOptions};
use ddbx_tests::{TempDir, path_str, progs};

#[test]
fn a_rust_harness_flips_the_race_and_replays_the_failure() {
    let tmp = TempDir::new("explore-api");
    let rec = tmp.join("rec");
    let recorded = ddbx::record(RecordOptions {
        command: vec![path_str(&progs().join("late_winner")).to_string()],
        out_dir: Some(rec.clone()),
        messages: Messages::Quiet,
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("record: {e}"));
    assert_eq!(recorded.exit_code, 0, "{:?}", recorded.messages);

    let outcome = ddbx::explore(ExploreOptions {
        recording: rec.clone(),
        out_dir: Some(tmp.join("flips")),
        messages: Messages::Quiet,
        fail_if: Some("p1.first == 2".into()),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("explore: {e}"));
    assert_eq!(outcome.flips.len(), 1, "{outcome:?}");
    assert!(outcome.skipped.is_empty(), "{outcome:?}");
    let flip = &outcome.flips[0];
    assert!(flip.flipped, "{flip:?}");
    assert!(flip.failed, "{flip:?}");
    assert_eq!(flip.fail_if_held, Some(true));
    assert_eq!(flip.record.exit_code, 3, "{:?}", flip.record.messages);
    assert_eq!(flip.path, vec![flip.race]);
    assert!(flip.notes.is_empty(), "{flip:?}");

    let replayed = ddbx::replay(ReplayOptions {
        dir: flip.record.dir.clone(),
        messages: Messages::Quiet,
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("replay: {e}"));
    assert_eq!(replayed.kind, OutcomeKind::ReachedEnd);
    assert_eq!(replayed.exit_code, 3);
}
