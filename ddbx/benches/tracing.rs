//! The tracing benchmark (`cargo bench -p ddbx --bench tracing`; results in BENCHMARKS.md):
//! how much optimal tracing (`ddbx record --trace optimal`) logs, against a full record.
//!
//! For each workload it records once in full and once with `--trace optimal` (with
//! `DDBX_TRACE_CHECK=1`, so that the optimal record also writes its full twin history), checks
//! that the optimal recording replays with the same output, and prints a markdown table:
//! receive-like events (receives, ready sets, accepts; from the twin), how many optimal tracing
//! logged, and history bytes per event of both records (`history/*.ron` only; the twins are
//! not counted).
//!
//! Workloads: race-light ping-pong and pipeline (`tests/progs/bench_pingpong.c`,
//! `bench_pipeline.c`), the Figure 1 example, random programs (`randprog`), and race-heavy ones
//! (`bench_selectloop`: 16 clients streaming to one select loop; `select_any`, `poll_any`: 3
//! clients to one select/poll loop; `many_clients`: one accept loop).
//! Uses the test programs built by the test harness and `target/release/ddbx` (`DDBX_BIN`
//! overrides; built if missing). `DDBX_BENCH_ROUNDS` (default 10000) sets the ping-pong round
//! trips and pipeline messages.

use ddbx_tests::{
    LoggedReceives, figure1, full_histories, histories, logged_receives, progs, raw_histories,
    release_ddbx,
};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fail(msg: &str) -> ! {
    eprintln!("tracing bench: {msg}");
    std::process::exit(1);
}

/// One workload: a name, the program, its arguments and environment.
struct Workload {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// Bytes of `history/*.ron` and their events.
fn size(dir: &Path) -> (u64, u64) {
    let bytes = std::fs::read_dir(dir.join("history"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .map(|p| std::fs::metadata(&p).unwrap().len())
        .sum();
    let events = raw_histories(dir).values().map(Vec::len).sum::<usize>();
    (bytes, events as u64)
}

fn record(ddbx: &Path, w: &Workload, dir: &Path, optimal: bool) -> String {
    let _ = std::fs::remove_dir_all(dir);
    let mut cmd = Command::new(ddbx);
    cmd.arg("record");
    if optimal {
        cmd.args(["--trace", "optimal"])
            .env("DDBX_TRACE_CHECK", "1");
    } else {
        cmd.arg("--full");
    }
    cmd.arg("-o")
        .arg(dir)
        .arg("--")
        .arg(&w.program)
        .args(&w.args);
    cmd.envs(w.env.iter().map(|(k, v)| (k, v)));
    let out = cmd.output().unwrap_or_else(|e| fail(&format!("{e}")));
    if !out.status.success() {
        fail(&format!(
            "{}: record failed: {}",
            w.name,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn main() {
    let ddbx = release_ddbx();
    let rounds: u64 = std::env::var("DDBX_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10000);
    let p = progs();
    let w = |name: &str, prog: &str, args: &[&str], env: &[(&str, &str)]| Workload {
        name: name.to_string(),
        program: p.join(prog),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    let r = rounds.to_string();
    let (fig1_run, fig1_bin) = figure1();
    let fig1_bin = fig1_bin.to_string_lossy().into_owned();
    let mut fig1 = w("figure1 example", "", &[], &[("DDBX_JITTER", "20")]);
    fig1.program = fig1_run;
    fig1.env.push(("FIG1_BIN".into(), fig1_bin));
    let workloads = vec![
        w(
            &format!("ping-pong ({r} round trips, 64 B)"),
            "bench_pingpong",
            &[&r, "64"],
            &[],
        ),
        w(
            &format!("pipeline (4 stages, {r} messages, 64 B)"),
            "bench_pipeline",
            &[&r, "4", "64"],
            &[],
        ),
        fig1,
        w("randprog 1", "randprog", &["1"], &[]),
        w("randprog 2", "randprog", &["2"], &[]),
        w(
            &format!(
                "bench_selectloop (16 clients x {} messages, one select loop)",
                rounds / 50
            ),
            "bench_selectloop",
            &["16", &(rounds / 50).to_string(), "32"],
            &[],
        ),
        w(
            "select_any (3 clients, one select loop)",
            "select_any",
            &[],
            &[("DDBX_JITTER", "5")],
        ),
        w(
            "poll_any (3 clients, one poll loop)",
            "poll_any",
            &[],
            &[("DDBX_JITTER", "5")],
        ),
        w(
            "many_clients (8 clients, one accept loop)",
            "many_clients",
            &[],
            &[("DDBX_JITTER", "5")],
        ),
    ];
    let tmp = std::env::temp_dir().join(format!("ddbx-tracing-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    println!(
        "| workload | events | receive-like events | logged by optimal | fraction logged | bytes/event full | bytes/event optimal | history bytes optimal/full |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for w in &workloads {
        let full_dir = tmp.join("full");
        let opt_dir = tmp.join("opt");
        record(&ddbx, w, &full_dir, false);
        let printed = record(&ddbx, w, &opt_dir, true);
        let replay = Command::new(&ddbx)
            .arg("replay")
            .arg(&opt_dir)
            .output()
            .unwrap_or_else(|e| fail(&format!("{e}")));
        if !replay.status.success() || String::from_utf8_lossy(&replay.stdout) != printed {
            fail(&format!(
                "{}: the optimal recording did not replay: {}",
                w.name,
                String::from_utf8_lossy(&replay.stderr)
            ));
        }
        let (full_bytes, full_events) = size(&full_dir);
        let (opt_bytes, opt_events) = size(&opt_dir);
        let LoggedReceives { total, logged } =
            logged_receives(&histories(&opt_dir), &full_histories(&opt_dir));
        println!(
            "| {} | {} | {} | {} | {:.2} % | {:.2} | {:.2} | {:.4} |",
            w.name,
            opt_events,
            total,
            logged,
            100.0 * logged as f64 / total.max(1) as f64,
            full_bytes as f64 / full_events.max(1) as f64,
            opt_bytes as f64 / opt_events.max(1) as f64,
            opt_bytes as f64 / full_bytes.max(1) as f64,
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
