//! The live halting property (issue 15, part 1): on many random message-passing programs
//! (`tests/progs/randprog.c SEED`), a live run halted where `pK.events >= N` first holds
//! (`ddbx run --break-if … --no-prompt`, which ends every process at the halt) stops at a
//! consistent global state, checked against the recording made during the run:
//!
//! * each stopped actor's history ends where the halted state says it stopped (it made no
//!   event while it stood);
//! * the cut of the stopped actors at their positions and of every other actor at the end of
//!   its history is consistent: every receive in it has its send in it (and every event that
//!   needs another's has it);
//! * the recording replays to its end.
//!
//! Seeds 1..=N (N = 200, or `DDBX_LIVE_CASES`), one random predicate each, on
//! `DDBX_PROPTEST_THREADS` threads (default 4). Every case runs even when some fail.

use ddbx::Recording;
use ddbx_supervisor::analysis::deps::Deps;
use ddbx_supervisor::analysis::inf::{Cut, is_consistent};
use ddbx_supervisor::wire::ActorId;
use ddbx_tests::{Ddbx, Seeds, SplitMix, TempDir, env_number, parse_json, path_str, progs};
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// What one case found.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// Halted, the cut checked.
    Halted,
    /// The predicate never held: the program ran to its end.
    NeverHeld,
}

/// `ddbx run` of `randprog SEED` with a random breakpoint, then the checks.
fn run_seed(seed: u64) -> Found {
    let mut rng = SplitMix(seed);
    let actor = 1 + rng.below(4);
    let events = 1 + rng.below(20);
    let pred = format!("p{actor}.events >= {events}");
    let tmp = TempDir::new("live-prop");
    let rec = tmp.join("run");
    let json_file = tmp.join("out.json");
    let seed_text = seed.to_string();
    let out = DDBX
        .run([
            "run",
            "--break-if",
            &pred,
            "--no-prompt",
            "--json",
            "--messages",
        ])
        .args([path_str(&json_file), "-o", path_str(&rec), "--"])
        .args([path_str(&progs().join("randprog")), seed_text.as_str()])
        .env("DDBX_JITTER", "3")
        .output();
    let text = std::fs::read_to_string(&json_file)
        .unwrap_or_else(|e| panic!("seed {seed} `{pred}`: no JSON ({e}): {}", out.stderr));
    let json = parse_json(&text, "ddbx run --json");
    assert_eq!(out.code, 0, "seed {seed} `{pred}`: {text}");
    let found = match json["outcome"].as_str() {
        Some("halted") => Found::Halted,
        Some("complete") => return Found::NeverHeld,
        other => panic!("seed {seed} `{pred}`: outcome {other:?}: {text}"),
    };
    let halt = &json["halts"][0];
    let stopped = halt["cut"].as_object().expect("cut");
    assert!(
        stopped.contains_key(&format!("p{actor}")),
        "seed {seed} `{pred}`: p{actor} is not stopped: {halt}"
    );
    check_cut(&rec, stopped, &format!("seed {seed} `{pred}`"));
    let replay_json = tmp.join("replay.json");
    DDBX.run(["replay", path_str(&rec), "--json", "--messages"])
        .args([path_str(&replay_json)])
        .output();
    let text = std::fs::read_to_string(&replay_json).expect("replay json");
    let r = parse_json(&text, "replay --json");
    assert_eq!(
        r["outcome"], "reached_end",
        "seed {seed} `{pred}`: the replay of the halted run: {text}"
    );
    found
}

/// The checks of the module doc on the recording `rec`, whose stopped actors stand at
/// `stopped`.
fn check_cut(rec: &Path, stopped: &serde_json::Map<String, serde_json::Value>, what: &str) {
    let recording = Recording::open(rec).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut cut = Cut::new();
    for info in &recording.manifest.actors {
        let length = recording
            .history(info.id)
            .map_or(0, |h| h.records.len() as u64);
        let name = info.id.to_string();
        let at = match stopped.get(&name).and_then(|v| v.as_u64()) {
            Some(at) => {
                assert_eq!(
                    length, at,
                    "{what}: {name} stopped after {at} events, its history has {length}"
                );
                at
            }
            None => length,
        };
        cut.insert(ActorId(info.id.0), at);
    }
    let deps = Deps::from_recording(&recording);
    if let Err(v) = is_consistent(&deps, &cut) {
        panic!(
            "{what}: the halted cut is not consistent: {}:{} needs {}:{}",
            v.event.0, v.event.1, v.needs.0, v.needs.1
        );
    }
}

#[test]
fn live_halts_stop_at_consistent_cuts() {
    let seeds = Seeds {
        first: env_number("DDBX_PROPTEST_FIRST", 1).max(1),
        count: env_number("DDBX_LIVE_CASES", 200),
        threads: env_number("DDBX_PROPTEST_THREADS", 4).max(1),
    };
    let outcomes = seeds.run(run_seed);
    let mut failures = Vec::new();
    let mut halted = 0;
    for o in &outcomes {
        match &o.result {
            Ok(Found::Halted) => halted += 1,
            Ok(Found::NeverHeld) => {}
            Err(e) => failures.push(format!("seed {}: {e}", o.seed)),
        }
    }
    eprintln!(
        "live halting: {} cases, {halted} halted, {} failed",
        outcomes.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        halted * 2 >= outcomes.len(),
        "only {halted} of {} cases halted: the predicates are too rarely true",
        outcomes.len()
    );
}
