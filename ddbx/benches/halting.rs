//! The halting benchmark (`cargo bench -p ddbx --bench halting`; results in BENCHMARKS.md).
//!
//! Not part of the test suite. It builds the Figure 1 programs and `tests/progs/randprog.c`
//! with `gcc -O2` into `target/ddbx-bench/`, records each scenario once with the embedding API
//! (`DDBX_JITTER=2`), computes Inf(P) offline from the recording, then replays it with
//! `ddbx::HaltingReplay` RUNS times and measures, per run:
//!
//! * the time from the start of the replay to the halt (`HaltingReplay::start` until
//!   `next_halt` returns: the state collected, every process held);
//! * events executed beyond Inf(P): over the actors a replay can hold (recorded ones), the sum
//!   of (halted − Inf) where positive — the algorithm's promise is 0 — and the events short of
//!   it (also 0 when the halt is exactly at Inf);
//! * actors created in the replay vs actors Inf(P) needs (events > 0 there) vs recorded;
//! * GD control messages (requests, notes, reports; `session::halting::control_messages`)
//!   during the run, and per second of the time to halt.
//!
//! Scenarios: the paper's Figure 1 halted at `x1 == 1 && x4 == 1` (client_a and the server_x
//! child serving it); `randprog 7 64`, a generated 64-actor message-passing program, halted at
//! one early probe (few actors needed), and at the second-to-last event of 8 actors (most of the
//! program: the synthetic load for control messages per second).
//!
//! Environment: `DDBX_BENCH_RUNS` (default 5).

use ddbx::debugger::Debugger;
use ddbx::halt::Watch;
use ddbx::{HaltingReplay, Messages, RecordOptions, ReplayOptions};
use ddbx_supervisor::analysis::cut::CutSearch;
use ddbx_supervisor::session::halting::control_messages;
use ddbx_supervisor::wire::{ActorId, Record};
use ddbx_tests::{target_dir, workspace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn fail(msg: &str) -> ! {
    eprintln!("halting bench: {msg}");
    std::process::exit(1);
}

fn gcc(out: &Path, src: &Path, name: &str) -> PathBuf {
    let bin = out.join(name);
    let ws = workspace();
    let status = Command::new("gcc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(ws.join("preload/probe/include"))
        .arg("-I")
        .arg(ws.join("examples/figure1"))
        .arg("-I")
        .arg(ws.join("tests/progs"))
        .arg("-o")
        .arg(&bin)
        .arg(src)
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot run gcc: {e}")));
    if !status.success() {
        fail(&format!("gcc failed on {}", src.display()));
    }
    bin
}

fn record(command: Vec<String>, out: &Path) -> ddbx::Recording {
    let _ = std::fs::remove_dir_all(out);
    let recorded = ddbx::record(RecordOptions {
        command,
        out_dir: Some(out.to_path_buf()),
        messages: Messages::Quiet,
        ..Default::default()
    })
    .unwrap_or_else(|e| fail(&format!("record: {e}")));
    if recorded.exit_code != 0 {
        fail(&format!(
            "record exited {}: {:?}",
            recorded.exit_code, recorded.messages
        ));
    }
    ddbx::Recording::open(out).unwrap_or_else(|e| fail(&format!("{e}")))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

struct Row {
    name: String,
    predicate: String,
    times: Vec<f64>,
    beyond: Vec<u64>,
    short: Vec<u64>,
    created: Vec<usize>,
    needed: usize,
    actors: usize,
    messages: Vec<u64>,
}

fn scenario(name: &str, rec: &ddbx::Recording, predicate: &str, runs: u64) -> Row {
    let watch = Watch::new(rec, predicate, "bench").unwrap_or_else(|e| fail(&format!("{e}")));
    let search = CutSearch::new(rec.clone());
    let inf = search
        .first(watch.goal(), &search.initial())
        .unwrap_or_else(|| fail(&format!("{name}: `{predicate}` never holds")));
    // The predicate must be one the replay halts at.
    Debugger::new(rec, &[predicate.to_string()], &[], &[], None)
        .unwrap_or_else(|e| fail(&format!("{e}")));
    let bystander = |a: &ActorId| rec.history(*a).is_none();
    let mut row = Row {
        name: name.into(),
        predicate: predicate.into(),
        times: Vec::new(),
        beyond: Vec::new(),
        short: Vec::new(),
        created: Vec::new(),
        needed: inf.values().filter(|k| **k > 0).count(),
        actors: rec.manifest.actors.len(),
        messages: Vec::new(),
    };
    for _ in 0..runs {
        let before = control_messages();
        let started = Instant::now();
        let mut replay = HaltingReplay::start(ReplayOptions {
            dir: rec.dir.clone(),
            messages: Messages::Quiet,
            stop_if: vec![predicate.to_string()],
            ..Default::default()
        })
        .unwrap_or_else(|e| fail(&format!("{e}")));
        let state = replay
            .next_halt()
            .unwrap_or_else(|| fail(&format!("{name}: the replay did not halt")));
        row.times.push(started.elapsed().as_secs_f64());
        row.messages.push(control_messages() - before);
        let halted: BTreeMap<ActorId, u64> = state.cut.clone();
        let (mut beyond, mut short) = (0, 0);
        for (a, want) in &inf {
            if bystander(a) {
                continue;
            }
            let got = halted.get(a).copied().unwrap_or(0);
            beyond += got.saturating_sub(*want);
            short += want.saturating_sub(got);
        }
        row.beyond.push(beyond);
        row.short.push(short);
        row.created
            .push(state.actors.iter().filter(|a| a.events > 0).count());
        let _ = replay.kill();
        let _ = replay.finish();
    }
    row
}

fn main() {
    let runs = std::env::var("DDBX_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5u64);
    let out = target_dir().join("ddbx-bench");
    let fig1 = out.join("figure1");
    std::fs::create_dir_all(&fig1).unwrap_or_else(|e| fail(&format!("{e}")));
    let ws = workspace();
    for p in ["client_a", "client_b", "server_x", "server_y"] {
        gcc(&fig1, &ws.join(format!("examples/figure1/{p}.c")), p);
    }
    let randprog = gcc(&out, &ws.join("tests/progs/randprog.c"), "randprog");
    // SAFETY: single-threaded here; the recorded programs read these.
    unsafe {
        std::env::set_var("DDBX_JITTER", "2");
        std::env::set_var("FIG1_BIN", &fig1);
    }

    let mut rows = Vec::new();
    let rec = record(
        vec![ws.join("examples/figure1/run").display().to_string()],
        &out.join("rec-figure1"),
    );
    // x1: client_a's x; x4: x of the server_x child serving client_a (the child forked after
    // server_x accepted client_a's connection).
    let id_of = |rec: &ddbx::Recording, program: &str| -> Vec<ActorId> {
        rec.manifest
            .actors
            .iter()
            .filter(|a| rec.program_names(a.id).iter().any(|n| n == program))
            .map(|a| a.id)
            .collect()
    };
    let client_a = id_of(&rec, "client_a")[0];
    let child_a = serving_child(&rec, client_a);
    rows.push(scenario(
        "Figure 1",
        &rec,
        &format!("{client_a}.x == 1 && {child_a}.x == 1"),
        runs,
    ));

    let rec = record(
        vec![randprog.display().to_string(), "7".into(), "64".into()],
        &out.join("rec-randprog64"),
    );
    // One early probe: the first x set by an actor other than the root.
    let early = rec
        .histories
        .iter()
        .filter(|h| h.actor != ActorId::ROOT)
        .find_map(|h| {
            h.records.iter().find_map(|r| match r {
                Record::Probe { name, value } if name == "x" => {
                    Some(format!("{}.x == {value}", h.actor))
                }
                _ => None,
            })
        })
        .unwrap_or_else(|| fail("randprog 7 64 sets no x"));
    rows.push(scenario(
        "randprog 7 64, one early probe",
        &rec,
        &early,
        runs,
    ));
    let mut last: Vec<&ddbx_supervisor::wire::History> = rec.histories.iter().collect();
    last.sort_by_key(|h| std::cmp::Reverse(h.actor));
    let late: Vec<String> = last
        .iter()
        .take(8)
        .map(|h| {
            format!(
                "{}.events >= {}",
                h.actor,
                h.records.len().saturating_sub(1)
            )
        })
        .collect();
    rows.push(scenario(
        "randprog 7 64, 8 actors near their end",
        &rec,
        &late.join(" && "),
        runs,
    ));

    println!("runs per scenario: {runs}; median (min–max) over runs\n");
    println!(
        "| scenario | time to halt, s | events beyond Inf(P) | events short of it | actors created / needed / recorded | control messages | messages/s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let min = r.times.iter().copied().fold(f64::INFINITY, f64::min);
        let max = r.times.iter().copied().fold(0.0, f64::max);
        let med = median(r.times.clone());
        let msgs = median(r.messages.iter().map(|m| *m as f64).collect());
        let rate = median(
            r.messages
                .iter()
                .zip(&r.times)
                .map(|(m, t)| *m as f64 / t)
                .collect(),
        );
        println!(
            "| {} | {med:.3} ({min:.3}–{max:.3}) | {} | {} | {} / {} / {} | {msgs:.0} | {rate:.0} |",
            r.name,
            r.beyond.iter().max().unwrap_or(&0),
            r.short.iter().max().unwrap_or(&0),
            median(r.created.iter().map(|c| *c as f64).collect()),
            r.needed,
            r.actors,
        );
    }
    println!();
    for r in &rows {
        println!("* {}: `{}`", r.name, r.predicate);
    }
}

/// The server_x child that serves `client`: the child of the Fork that follows server_x's
/// Accept of client's connection (by the ports in the histories).
fn serving_child(rec: &ddbx::Recording, client: ActorId) -> ActorId {
    let local_ports: Vec<String> = rec
        .history(client)
        .map(|h| {
            h.records
                .iter()
                .filter_map(|r| match r {
                    Record::Connect { local, .. } => Some(format!("{local:?}")),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    for h in &rec.histories {
        let mut served = false;
        for r in &h.records {
            match r {
                Record::Accept { remote, .. } => {
                    served = local_ports.contains(&format!("{remote:?}"));
                }
                Record::Fork { index } if served => {
                    if let Some(child) = rec.manifest.actors.iter().find(|a| {
                        matches!(a.origin, ddbx_supervisor::wire::history::Origin::Fork { parent, index: i } if parent == h.actor && i == *index)
                    }) {
                        return child.id;
                    }
                }
                _ => {}
            }
        }
    }
    fail("no server_x child serves client_a")
}
