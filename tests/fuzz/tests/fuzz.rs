//! The fuzzer inside `cargo test`: every corpus file replayed (regression cases included), then
//! a bounded fuzz of each target with a fixed seed (`DDBX_FUZZ_EXECS`, default 10,000
//! executions: a few seconds each in a debug build), which must find no crash and no hang. And the engine itself: it finds a planted
//! panic and a planted hang, and minimises them.

use ddbx_fuzz::{BUDGET, Exec, Mutator, Run, Target, config, corpus, fuzz, replay};
use std::sync::Arc;
use std::time::Duration;

fn execs() -> u64 {
    std::env::var("DDBX_FUZZ_EXECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

fn check(target: Target, seed: u64) {
    let files = corpus(&target.corpus_dir());
    assert!(
        files.len() >= 5,
        "{}: the corpus has {} files",
        target.corpus_dir().display(),
        files.len()
    );
    let run: Run = Arc::new(move |input: &[u8]| target.run(input));
    let bad = replay(&run, &files, BUDGET);
    assert!(bad.is_empty(), "corpus replay:\n{}", bad.join("\n"));
    // Findings of a CI run are written where they do not change the repository.
    let save = std::env::temp_dir().join(format!("ddbx-fuzz-findings-{}", target.name()));
    let report = fuzz(&config(target, seed, execs(), Some(save)));
    eprintln!("{}", report.summary(target.name(), seed));
    let findings: Vec<String> = report
        .crashes
        .iter()
        .chain(&report.hangs)
        .map(|f| {
            format!(
                "{}\n  minimised input: {:?}\n  saved: {:?}",
                f.what,
                String::from_utf8_lossy(&f.minimised[..f.minimised.len().min(400)]),
                f.saved
            )
        })
        .collect();
    assert!(findings.is_empty(), "{}", findings.join("\n"));
    assert!(
        report.outcomes.len() >= 5,
        "only {} distinct outcomes: {:?}",
        report.outcomes.len(),
        report.outcomes
    );
}

#[test]
fn fuzz_history_reader() {
    check(Target::History, 1);
}

#[test]
fn fuzz_manifest_reader() {
    check(Target::Manifest, 1);
}

#[test]
fn fuzz_predicate_parser() {
    check(Target::Predicate, 1);
}

#[test]
fn fuzz_stop_at_parser() {
    check(Target::StopAt, 1);
}

/// The engine reports a panic with its site and a minimised input, and an input that never
/// finishes as a hang (the planted hang blocks without using the CPU).
#[test]
fn the_engine_finds_planted_bugs() {
    let run: Run = Arc::new(|input: &[u8]| {
        let text = String::from_utf8_lossy(input);
        if text.contains("((") {
            panic!("planted panic");
        }
        if text.contains("!!") {
            let (_keep, never) = std::sync::mpsc::channel::<()>();
            let _ = never.recv_timeout(Duration::from_secs(3600));
        }
        "ok".into()
    });
    let pool = vec![b"a (b) c ! d".to_vec()];
    let mut c = config(Target::Predicate, 3, 400, None);
    c.run = run;
    c.corpus = pool.clone();
    c.mutator = Mutator::new(&["(", "!"], &[("(", ")")], &pool);
    c.budget = Duration::from_millis(50);
    let report = fuzz(&c);
    let crash = report.crashes.first().expect("the planted panic is found");
    assert!(crash.what.contains("planted panic"), "{}", crash.what);
    assert!(
        crash.what.contains("tests/fuzz.rs:"),
        "names the site: {}",
        crash.what
    );
    assert_eq!(crash.minimised, b"((", "minimised");
    assert_eq!(report.crashes.len(), 1, "one crash per site");
    let hang = report.hangs.first().expect("the planted hang is found");
    assert_eq!(hang.minimised, b"!!");
    assert!(matches!(Exec::Hang, Exec::Hang));
}
