//! `ddbx explore` (issue 15, part 3): flipping a race makes a new run reached on purpose.
//!
//! `tests/progs/late_winner.c` has a bug that shows only when its slow client (300 ms late)
//! wins the accept race, which it never does natively. `explore --all` holds the fast client's
//! connect until the accept has taken the slow one: the new run fails, and its recording
//! replays the failure every time. Paper 004's Figure 1 (`race_fig004.c`): its one unaffected
//! race is a select that reported two messages; flipped, it reports the other one alone.

use ddbx_tests::{Ddbx, TempDir, parse_json, path_str, progs};
use serde_json::Value;
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const BUG: &str = "bug: client 2 came first";
/// Native runs that must all pass (the slow client never wins natively).
const NATIVE_RUNS: usize = 100;

/// Records `prog` into `dir`; its stdout.
fn record(dir: &Path, prog: &str) -> String {
    let out = DDBX
        .run([
            "record",
            "-o",
            path_str(dir),
            "--",
            path_str(&progs().join(prog)),
        ])
        .output();
    assert_eq!(out.code, 0, "record {prog}: {}", out.stderr);
    out.stdout
}

/// `ddbx explore ARGS --json --messages FILE` (the programs' own output stays apart): its exit
/// code and JSON object.
fn explore(args: &[&str]) -> (i32, Value) {
    let tmp = TempDir::new("explore-json");
    let json = tmp.join("out.json");
    let out = DDBX
        .run(["explore"])
        .args(args)
        .args(["--json", "--messages", path_str(&json)])
        .output();
    let value = match std::fs::read_to_string(&json) {
        Ok(text) => parse_json(&text, "explore --json"),
        Err(_) => Value::Null,
    };
    assert!(out.code != 0 || !value.is_null(), "no JSON: {}", out.stderr);
    (out.code, value)
}

/// Native runs at once (each waits 300 ms for its slow client; the fast one connects at once).
const AT_ONCE: usize = 5;

#[test]
fn the_late_client_never_wins_natively() {
    for _ in 0..NATIVE_RUNS / AT_ONCE {
        let runs: Vec<_> = (0..AT_ONCE)
            .map(|_| {
                std::thread::spawn(|| ddbx_tests::Run::new(progs().join("late_winner")).output())
            })
            .collect();
        for run in runs {
            let out = run
                .join()
                .unwrap_or_else(|_| panic!("a native run's thread panicked"));
            assert_eq!(out.code, 0, "a native run failed: {}", out.stderr);
            assert_eq!(out.stdout, "accepted: 1 2\n");
        }
    }
}

#[test]
fn explore_all_finds_the_bug_of_the_late_winner_and_its_run_replays_it() {
    let tmp = TempDir::new("explore-late");
    let rec = tmp.join("rec");
    assert_eq!(record(&rec, "late_winner"), "accepted: 1 2\n");
    let out = tmp.join("flips");
    let (code, json) = explore(&[path_str(&rec), "--all", "-o", path_str(&out)]);
    assert_eq!(code, 0, "{json}");
    let flips = json["flips"].as_array().expect("flips");
    assert_eq!(flips.len(), 1, "one unaffected race: {json}");
    let flip = &flips[0];
    assert_eq!(flip["actor"], "p1", "{flip}");
    assert_eq!(flip["flipped"], true, "{flip}");
    assert_eq!(flip["failed"], true, "{flip}");
    assert_eq!(flip["exit_code"], 3, "{flip}");
    assert_eq!(json["failing"], serde_json::json!([flip["name"].clone()]));
    // The fast client's connect was what got held.
    let held = flip["held"].as_array().expect("held");
    assert_eq!(held.len(), 1, "{flip}");
    let new = flip["recording"].as_str().expect("recording").to_string();
    for _ in 0..5 {
        let replay = DDBX.run(["replay", &new]).output();
        assert_eq!(
            replay.code, 3,
            "the flipped run replays its failure: {}",
            replay.stderr
        );
        assert!(replay.stderr.contains(BUG), "{}", replay.stderr);
    }
    // The original recording is untouched: it still replays the passing run.
    let replay = DDBX.run(["replay", path_str(&rec)]).output();
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    assert_eq!(replay.stdout, "accepted: 1 2\n");
}

#[test]
fn a_fail_if_over_a_probe_marks_the_flipped_run() {
    let tmp = TempDir::new("explore-failif");
    let rec = tmp.join("rec");
    record(&rec, "late_winner");
    let out = tmp.join("flips");
    let (code, json) = explore(&[
        path_str(&rec),
        "--race",
        "1",
        "-o",
        path_str(&out),
        "--fail-if",
        "p1.first == 2",
    ]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["flips"][0]["fail_if"], true, "{json}");
    assert!(out.join("race-1/manifest.ron").is_file());
}

/// The line of `race_fig004`'s output that says what P2's select (race x) reported.
fn x_line(out: &str) -> String {
    out.lines()
        .find(|l| l.starts_with("x:"))
        .unwrap_or_else(|| panic!("no x line: {out}"))
        .to_string()
}

#[test]
fn the_unaffected_race_of_paper_004s_figure_1_is_flipped() {
    let tmp = TempDir::new("explore-fig004");
    let rec = tmp.join("rec");
    // P2's select reported x1, x2 or both, whichever came first in this run.
    let recorded = x_line(&record(&rec, "race_fig004"));
    let out = tmp.join("flips");
    let (code, json) = explore(&[path_str(&rec), "--all", "-o", path_str(&out)]);
    assert_eq!(code, 0, "{json}");
    let flips = json["flips"].as_array().expect("flips");
    assert_eq!(flips.len(), 1, "only race x is unaffected: {json}");
    assert_eq!(flips[0]["flipped"], true, "{json}");
    let new = flips[0]["recording"]
        .as_str()
        .expect("recording")
        .to_string();
    let replay = DDBX.run(["replay", &new]).output();
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    // The other message, alone: `x: x2` after `x: x1` or `x: x1 x2`, `x: x1` after `x: x2`.
    let flipped = x_line(&replay.stdout);
    assert_ne!(flipped, recorded, "{}", replay.stdout);
    assert_eq!(
        flipped.split_whitespace().count(),
        2,
        "one message: {flipped}"
    );
}

#[test]
fn a_race_that_does_not_exist_is_a_usage_error_and_makes_nothing() {
    let tmp = TempDir::new("explore-bad");
    let rec = tmp.join("rec");
    record(&rec, "late_winner");
    let out = tmp.join("flips");
    let run = DDBX
        .run([
            "explore",
            path_str(&rec),
            "--race",
            "7",
            "-o",
            path_str(&out),
        ])
        .output();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--race 7: expected a race of"),
        "{}",
        run.stderr
    );
    assert!(!out.exists(), "nothing was made");
    let missing = DDBX
        .run(["explore", path_str(&tmp.join("nope")), "--all"])
        .output();
    assert_eq!(missing.code, 102, "{}", missing.stderr);
    // An optimal recording has no sends: no race can be found in it, so none is flipped.
    let optimal = tmp.join("optimal");
    let out = DDBX
        .run([
            "record",
            "--trace",
            "optimal",
            "-o",
            path_str(&optimal),
            "--",
        ])
        .args([path_str(&progs().join("late_winner"))])
        .output();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let refused = DDBX.run(["explore", path_str(&optimal), "--all"]).output();
    assert_eq!(refused.code, 102, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("expected a full recording"),
        "{}",
        refused.stderr
    );
}

#[test]
fn depth_two_on_paper_004s_figure_1_flips_the_races_next_in_line() {
    let tmp = TempDir::new("explore-depth");
    let rec = tmp.join("rec");
    record(&rec, "race_fig004");
    let out = tmp.join("flips");
    let (code, json) = explore(&[
        path_str(&rec),
        "--all",
        "--depth",
        "2",
        "-o",
        path_str(&out),
    ]);
    assert_eq!(code, 0, "{json}");
    let flips = json["flips"].as_array().expect("flips");
    // Race x, then, in its run, races w and y (which only x affects).
    let depth = |n: usize| {
        flips
            .iter()
            .filter(move |f| f["path"].as_array().map(Vec::len) == Some(n))
    };
    assert_eq!(depth(1).count(), 1, "{json}");
    assert_eq!(depth(2).count(), 2, "{json}");
    for f in flips {
        assert_eq!(f["flipped"], true, "{f}");
        let name = f["name"].as_str().expect("name");
        assert!(
            out.join(format!("race-{name}/manifest.ron")).is_file(),
            "{name}"
        );
    }
    let first = depth(1).next().expect("depth 1")["name"]
        .as_str()
        .expect("name")
        .to_string();
    for f in depth(2) {
        let name = f["name"].as_str().expect("name");
        assert!(
            name.starts_with(&format!("{first}.")),
            "{name} comes from run {first}"
        );
    }
}
