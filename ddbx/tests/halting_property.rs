//! The halting property (DESIGN §4): on many random message-passing programs
//! (`tests/progs/randprog.c SEED`), the global state a halting replay stops at
//! (`ddbx replay --stop-if P`) is the one `ddbx inf` computes offline from the recording, on
//! every actor; and when P never holds, the replay runs to the end.
//!
//! Seeds 1..=N (N = 50, or `DDBX_PROPTEST_CASES`), 4 random conjunctive predicates per
//! recording. Odd seeds run `randprog SEED log`: the actors also share a log file that some
//! write a line into after each round's sends and some read after its receives (`z`, the
//! lines they saw: a read of a shared file, which needs the writes it saw, is no event). Some actors are forked through a relay that only forks (no socket event): it is
//! held at its cut like the others. The cases run on several threads (`DDBX_PROPTEST_THREADS`, default 8: the replays
//! mostly wait). Every case runs even when some fail; the failures are listed together at the
//! end, each with what reproduces it and (for the first 8) the tail of a `DDBX_TRACE_HALT=1`
//! replay. With
//! `DDBX_PROPTEST_KEEP=DIR` the recordings of failing cases are copied to `DIR/seed<N>`.

use ddbx_tests::{
    Ddbx, Seeds, SplitMix, TempDir, cut_of, parse_json, path_str, progs, raw_histories,
};
use ddbx_wire::Record;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// Predicates per recording.
const PER_RECORDING: usize = 4;

/// Relays (processes that only fork an actor and wait for it) in the recordings so far.
static RELAYS: AtomicU64 = AtomicU64::new(0);
/// Reads of the shared log (`z` probes) in the recordings so far.
static LOG_READS: AtomicU64 = AtomicU64::new(0);

/// One recording's histories, by actor number (`p3` → 3).
fn load_histories(rec: &Path) -> BTreeMap<u32, Vec<Record>> {
    raw_histories(rec)
        .into_iter()
        .map(|(id, records)| {
            let n: u32 = id[1..]
                .parse()
                .unwrap_or_else(|_| panic!("odd actor id {id}"));
            (n, records)
        })
        .collect()
}

/// The values an actor's probe `name` takes in its history.
fn probe_values(records: &[Record], name: &str) -> Vec<i64> {
    let set: BTreeSet<i64> = records
        .iter()
        .filter_map(|r| match r {
            Record::Probe { name: n, value } if n == name => Some(*value),
            _ => None,
        })
        .collect();
    set.into_iter().collect()
}

/// One condition over actor `p<actor>`.
fn condition(actor: u32, records: &[Record], rng: &mut SplitMix) -> String {
    let xs = probe_values(records, "x");
    let ys = probe_values(records, "y");
    let zs = probe_values(records, "z");
    let recvs = records
        .iter()
        .filter(|r| matches!(r, Record::Recv { .. }))
        .count();
    loop {
        match rng.index(5) {
            0 if !xs.is_empty() => {
                // Sometimes a value the actor never sets (randprog's values are 0..5).
                let v = if rng.index(8) == 0 {
                    9
                } else {
                    xs[rng.index(xs.len())]
                };
                return format!("p{actor}.x == {v}");
            }
            1 if recvs > 0 => {
                let m = 1 + rng.index(recvs);
                return format!("p{actor}.recvs >= {m}");
            }
            2 => {
                let e = 1 + rng.index(records.len());
                return format!("p{actor}.events >= {e}");
            }
            3 if !ys.is_empty() => {
                let r = ys[rng.index(ys.len())];
                return format!("p{actor}.y == {r}");
            }
            4 if !zs.is_empty() => {
                let z = zs[rng.index(zs.len())];
                return format!("p{actor}.z >= {z}");
            }
            _ => continue,
        }
    }
}

/// A random conjunctive predicate over 1..=3 distinct actors (one condition each, sometimes
/// two).
fn predicate(hist: &BTreeMap<u32, Vec<Record>>, rng: &mut SplitMix) -> String {
    let mut actors: Vec<u32> = hist.keys().copied().collect();
    // Fisher-Yates.
    for i in (1..actors.len()).rev() {
        let j = rng.index(i + 1);
        actors.swap(i, j);
    }
    let n = 1 + rng.index(actors.len().min(3));
    let mut chosen: Vec<u32> = actors[..n].to_vec();
    chosen.sort_unstable();
    let mut parts = Vec::new();
    for a in chosen {
        let records = &hist[&a];
        parts.push(condition(a, records, rng));
        if rng.index(5) == 0 {
            parts.push(condition(a, records, rng));
        }
    }
    parts.join(" && ")
}

fn show_cut(c: &Option<BTreeMap<String, u64>>) -> String {
    match c {
        None => "none".into(),
        Some(c) => {
            let mut v: Vec<(u32, u64)> = c
                .iter()
                .map(|(k, n)| (k[1..].parse().unwrap_or(0), *n))
                .collect();
            v.sort_unstable();
            v.iter()
                .map(|(a, n)| format!("p{a}:{n}"))
                .collect::<Vec<_>>()
                .join(" ")
        }
    }
}

/// What one case found.
struct Case {
    held: bool,
    /// Wall time of the halting replay (when P held).
    halt_time: Option<Duration>,
    /// A description of the disagreement, if any.
    failure: Option<String>,
}

/// The tail of a `DDBX_TRACE_HALT=1` replay of `rec` with `pred` (for failure reports).
fn trace_tail(rec: &Path, pred: &str) -> String {
    let traced = std::panic::catch_unwind(|| {
        DDBX.run(["replay", path_str(rec), "--stop-if", pred])
            .env("DDBX_TRACE_HALT", "1")
            .output()
    });
    match traced {
        Ok(out) => {
            let lines: Vec<&str> = out.stderr.lines().collect();
            let from = lines.len().saturating_sub(40);
            format!(
                "DDBX_TRACE_HALT=1 replay (exit {}), last lines:\n{}",
                out.code,
                lines[from..].join("\n")
            )
        }
        Err(_) => "DDBX_TRACE_HALT=1 replay: did not finish in time".into(),
    }
}

/// One predicate on one recording: inf, then the halting replay, compared.
fn run_case(seed: u64, index: usize, rec: &Path, pred: &str, recorded_stdout: &str) -> Case {
    let dir = path_str(rec);
    let inf = DDBX.run(["inf", dir, pred, "--json"]).output();
    assert!(
        inf.code == 0 || inf.code == 1,
        "seed {seed}: ddbx inf '{pred}' exited {}:\n{}",
        inf.code,
        inf.stderr
    );
    let inf_json = parse_json(&inf.stdout, "ddbx inf --json");
    let holds = inf_json["holds"].as_bool().unwrap_or(false);
    assert_eq!(
        holds,
        inf.code == 0,
        "seed {seed}: inf's exit code and holds disagree"
    );
    let inf_cut = cut_of(&inf_json["cut"]);

    let messages = rec
        .parent()
        .unwrap_or(rec)
        .join(format!("messages-{index}.json"));
    let started = Instant::now();
    let replay = std::panic::catch_unwind(|| {
        let json = ["--json", "--messages", path_str(&messages)];
        DDBX.run(["replay", dir, "--stop-if", pred])
            .args(json)
            .output()
    });
    let elapsed = started.elapsed();
    let mut problems = Vec::new();
    let mut replay_cut = None;
    let mut outcome = String::from("?");
    match &replay {
        Err(_) => problems.push(format!(
            "the replay did not finish within the harness's limit ({elapsed:?})"
        )),
        Ok(out) => {
            let text = std::fs::read_to_string(&messages).unwrap_or_default();
            if text.trim().is_empty() {
                problems.push(format!(
                    "the replay (exit {}) wrote no JSON; stderr:\n{}",
                    out.code, out.stderr
                ));
            } else {
                let json = parse_json(&text, "ddbx replay --json");
                outcome = json["outcome"].as_str().unwrap_or("?").to_string();
                replay_cut = cut_of(&json["cut"]);
                if holds {
                    if outcome != "halted" {
                        problems.push(format!(
                            "inf says it holds, the replay's outcome is {outcome:?} (exit {}); messages: {}",
                            out.code, json["messages"]
                        ));
                    } else if replay_cut != inf_cut {
                        problems.push("the halted cut differs from inf's".to_string());
                    }
                } else {
                    if outcome == "halted" {
                        problems.push("inf says it never holds, the replay halted".into());
                    } else if outcome != "reached_end" || out.code != 0 {
                        problems.push(format!(
                            "inf says it never holds; the replay's outcome is {outcome:?}, exit {} (expected reached_end, 0); messages: {}",
                            out.code, json["messages"]
                        ));
                    }
                    if out.stdout != recorded_stdout {
                        problems.push(format!(
                            "the replay to the end printed something else:\n{}",
                            out.stdout
                        ));
                    }
                }
            }
        }
    }
    let failure = if problems.is_empty() {
        None
    } else {
        let mut s = format!(
            "seed {seed}, predicate `{pred}`:\n  {}\n  inf:    holds={holds} cut {}\n  replay: outcome {outcome} cut {} ({elapsed:.1?})\n  ",
            problems.join("\n  "),
            show_cut(&inf_cut),
            show_cut(&replay_cut),
        );
        // A traced rerun for the first few failures only (a hang costs the program's 20 s
        // alarm once more).
        static TRACED: AtomicU64 = AtomicU64::new(0);
        if TRACED.fetch_add(1, Ordering::Relaxed) < 8 {
            s.push_str(&trace_tail(rec, pred).replace('\n', "\n    "));
        } else {
            s.push_str("(run the replay with DDBX_TRACE_HALT=1 to see the protocol)");
        }
        if let Some(keep) = std::env::var_os("DDBX_PROPTEST_KEEP") {
            let to = PathBuf::from(keep).join(format!("seed{seed}"));
            let _ = std::fs::create_dir_all(to.parent().unwrap_or(Path::new(".")));
            let _ = std::process::Command::new("cp")
                .arg("-r")
                .arg(rec)
                .arg(&to)
                .status();
            s.push_str(&format!("\n  recording kept in {}", to.display()));
        }
        Some(s)
    };
    let _ = std::fs::remove_file(&messages);
    Case {
        held: holds,
        halt_time: (holds && replay.is_ok()).then_some(elapsed),
        failure,
    }
}

/// Records `randprog SEED` (odd seeds: `randprog SEED log`) and runs its predicates.
fn run_seed(seed: u64, program: &Path) -> Vec<Case> {
    let tmp = TempDir::new("halting-prop");
    let rec = tmp.join("rec");
    let seed_arg = seed.to_string();
    let args: &[&str] = if seed % 2 == 1 {
        &[&seed_arg, "log"]
    } else {
        &[&seed_arg]
    };
    let recorded = DDBX
        .record(&rec, program, args)
        .env("DDBX_JITTER", "2")
        .output();
    assert_eq!(
        recorded.code, 0,
        "seed {seed}: record failed:\n{}",
        recorded.stderr
    );
    let hist = load_histories(&rec);
    // 2..=5 actors, and a relay (a process that only forks: no socket event) for some.
    let relays = hist
        .values()
        .filter(|records| ddbx_wire::history::is_bystander(records))
        .count();
    assert!(
        (2..=5).contains(&(hist.len() - relays)) && relays < hist.len() - 1,
        "seed {seed}: {} actors, {relays} relays",
        hist.len()
    );
    RELAYS.fetch_add(relays as u64, Ordering::Relaxed);
    let log_reads = hist
        .values()
        .flatten()
        .filter(|r| matches!(r, Record::Probe { name, .. } if name == "z"))
        .count();
    LOG_READS.fetch_add(log_reads as u64, Ordering::Relaxed);
    let mut rng = SplitMix(seed.wrapping_mul(0x5851_f42d_4c95_7f2d) ^ 0x1405_7b7e_f767_814f);
    (0..PER_RECORDING)
        .map(|index| {
            let pred = predicate(&hist, &mut rng);
            run_case(seed, index, &rec, &pred, &recorded.stdout)
        })
        .collect()
}

#[test]
fn halting_replay_stops_where_inf_says_on_random_programs() {
    let seeds = Seeds::from_env();
    let program = progs().join("randprog");
    let started = Instant::now();
    let mut results: Vec<(u64, Vec<Case>)> = Vec::new();
    let mut setup_failures: Vec<String> = Vec::new();
    for outcome in seeds.run(|seed| run_seed(seed, &program)) {
        match outcome.result {
            Ok(cases) => results.push((outcome.seed, cases)),
            Err(why) => setup_failures.push(format!("seed {}: {why}", outcome.seed)),
        }
    }
    let cases: Vec<&Case> = results.iter().flat_map(|(_, c)| c).collect();
    let held = cases.iter().filter(|c| c.held).count();
    let times: Vec<Duration> = cases.iter().filter_map(|c| c.halt_time).collect();
    let mean = if times.is_empty() {
        Duration::ZERO
    } else {
        times.iter().sum::<Duration>() / times.len() as u32
    };
    let failures: Vec<&String> = cases.iter().filter_map(|c| c.failure.as_ref()).collect();
    let max = times.iter().max().copied().unwrap_or_default();
    eprintln!(
        "halting property: {} cases on {} recordings ({} relays, {} reads of a shared log, {} threads): {} held, {} agree with inf, {} disagree; mean halt time {mean:.2?} (max {max:.2?}); total {:.1?}",
        cases.len(),
        results.len(),
        RELAYS.load(Ordering::Relaxed),
        LOG_READS.load(Ordering::Relaxed),
        seeds.threads,
        held,
        cases.len() - failures.len(),
        failures.len(),
        started.elapsed()
    );
    let mut report = String::new();
    for f in &setup_failures {
        report.push_str(&format!("\n{f}\n"));
    }
    for f in &failures {
        report.push_str(&format!("\n{f}\n"));
    }
    assert!(
        setup_failures.is_empty() && failures.is_empty(),
        "{} of {} cases disagree ({} recordings failed before any case):{report}",
        failures.len(),
        cases.len(),
        setup_failures.len()
    );
    assert!(
        cases.len() as u64 >= seeds.count * PER_RECORDING as u64,
        "only {} cases ran",
        cases.len()
    );
    // About one actor in three past the root has a relay: with 50 seeds, dozens.
    assert!(
        seeds.count < 10 || RELAYS.load(Ordering::Relaxed) > 0,
        "no recording had a relay"
    );
    // Half the seeds share a log, which half their actors read after each round.
    assert!(
        seeds.count < 10 || LOG_READS.load(Ordering::Relaxed) > 0,
        "no recording read the shared log"
    );
}
