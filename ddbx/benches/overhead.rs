//! The overhead benchmark (`cargo bench -p ddbx --bench overhead`; results in BENCHMARKS.md).
//!
//! Not part of the test suite: it takes minutes. It builds `tests/progs/bench_pingpong.c` and
//! `tests/progs/bench_forktree.c` with `gcc -O2` into `target/ddbx-bench/`, then measures wall
//! times, interleaving the modes inside every repetition so that machine noise hits all of
//! them alike:
//!
//! * ping-pong (two processes, ROUNDS round trips of 64 bytes over loopback TCP): native,
//!   `ddbx record`, `strace -f -o /dev/null` (the ptrace-based peer), `ddbx replay` of the
//!   recording just made;
//! * fork tree (N short-lived processes): native, `ddbx record`, `strace -f`, `ddbx replay`.
//!
//! It prints markdown: a table per program (median, ratio to the native median of the same
//! invocation, median of the per-repetition ratios, min, max), history bytes per event
//! (total size of `history/*.ron` / records other than the `Header` lines), replay/record,
//! and the environment.
//!
//! Environment: `DDBX_BIN` (the `ddbx` binary; default `target/release/ddbx`, built with
//! `cargo build --release -p ddbx` when missing), `DDBX_BENCH_RUNS` (repetitions, default 5),
//! `DDBX_BENCH_ROUNDS` (ping-pong round trips, default 100000), `DDBX_BENCH_SIZE` (message
//! size, default 64), `DDBX_BENCH_FORKS` (fork tree size, default 2000).

use ddbx_tests::{env_number, release_ddbx, target_dir, workspace};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

/// Stops the benchmark with a message.
fn fail(msg: &str) -> ! {
    eprintln!("overhead bench: {msg}");
    std::process::exit(1);
}

/// Builds one benchmark program with `gcc -O2`.
fn build_prog(out: &Path, name: &str) -> PathBuf {
    let src = workspace().join("tests/progs").join(format!("{name}.c"));
    let bin = out.join(name);
    let status = Command::new("gcc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot run gcc: {e}")));
    if !status.success() {
        fail(&format!("gcc failed on {}", src.display()));
    }
    bin
}

/// Runs a command to completion, returning its wall time in seconds; any failure (exit
/// status, missing "ok" on stdout when `want_ok`) stops the benchmark.
fn timed(cmd: &mut Command, what: &str, want_ok: bool) -> (f64, Output) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let out = cmd
        .output()
        .unwrap_or_else(|e| fail(&format!("{what}: cannot start: {e}")));
    let secs = start.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || (want_ok && stdout.trim() != "ok") {
        fail(&format!(
            "{what} failed ({}):\nstdout: {stdout}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    (secs, out)
}

/// History size and record count of a recording: (bytes of `history/*.ron`, records other
/// than `Header`).
fn history_stats(dir: &Path) -> (u64, u64) {
    let hist = dir.join("history");
    let entries =
        std::fs::read_dir(&hist).unwrap_or_else(|e| fail(&format!("{}: {e}", hist.display())));
    let (mut bytes, mut records) = (0u64, 0u64);
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "ron") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
        bytes += text.len() as u64;
        records += text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("Header("))
            .count() as u64;
    }
    (bytes, records)
}

/// The measurements of one mode.
struct Series {
    mode: &'static str,
    secs: Vec<f64>,
}

impl Series {
    /// No measurement yet of `mode`.
    fn new(mode: &'static str) -> Series {
        Series { mode, secs: vec![] }
    }
}

/// The median of some numbers (the mean of the middle two for an even count).
fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Min and max.
fn min_max(xs: &[f64]) -> (f64, f64) {
    xs.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

/// What one program's benchmark measured.
struct Result {
    title: String,
    series: Vec<Series>,
    /// (history bytes, records) of the last recording.
    history: (u64, u64),
}

/// Benchmarks one program: `runs` repetitions of native, record, strace (if available) and
/// replay of that record.
fn bench(
    title: String,
    ddbx: &Path,
    prog: &Path,
    args: &[String],
    runs: usize,
    strace: bool,
    scratch: &Path,
) -> Result {
    let name = prog
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut native = Series::new("native");
    let mut record = Series::new("ddbx record");
    let mut traced = Series::new("strace -f -o /dev/null");
    let mut replay = Series::new("ddbx replay");
    let mut history = (0, 0);
    for rep in 0..runs {
        eprint!("{name}: run {}/{runs}:", rep + 1);
        let (t, _) = timed(Command::new(prog).args(args), "native run", true);
        native.secs.push(t);
        eprint!(" native {t:.3}s");

        let dir = scratch.join(format!("{name}-rec"));
        let _ = std::fs::remove_dir_all(&dir);
        let (t, _) = timed(
            Command::new(ddbx)
                .arg("record")
                .arg("-o")
                .arg(&dir)
                .arg("--")
                .arg(prog)
                .args(args),
            "ddbx record",
            true,
        );
        record.secs.push(t);
        eprint!(", record {t:.3}s");
        history = history_stats(&dir);

        if strace {
            let (t, _) = timed(
                Command::new("strace")
                    .args(["-f", "-o", "/dev/null"])
                    .arg(prog)
                    .args(args),
                "strace -f",
                true,
            );
            traced.secs.push(t);
            eprint!(", strace {t:.3}s");
        }

        let (t, out) = timed(
            Command::new(ddbx).arg("replay").arg(&dir),
            "ddbx replay",
            true,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        if !err.contains("reached the recorded end") {
            fail(&format!(
                "ddbx replay did not reach the recorded end:\n{err}"
            ));
        }
        replay.secs.push(t);
        eprintln!(", replay {t:.3}s");
    }
    let mut series = vec![native, record];
    if strace {
        series.push(traced);
    }
    series.push(replay);
    Result {
        title,
        series,
        history,
    }
}

/// Prints one program's table and derived numbers.
fn report(r: &Result) {
    println!("### {}\n", r.title);
    println!(
        "| mode | median s | ratio to native (medians) | median of per-run ratios | min s | max s |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let native = &r.series[0].secs;
    let native_median = median(native);
    for s in &r.series {
        let m = median(&s.secs);
        let per_run: Vec<f64> = s.secs.iter().zip(native).map(|(t, n)| t / n).collect();
        let (lo, hi) = min_max(&s.secs);
        println!(
            "| {} | {m:.3} | {:.2}× | {:.2}× | {lo:.3} | {hi:.3} |",
            s.mode,
            m / native_median,
            median(&per_run)
        );
    }
    let find = |mode: &str| {
        r.series
            .iter()
            .find(|s| s.mode == mode)
            .map(|s| median(&s.secs))
    };
    let (bytes, records) = r.history;
    println!();
    println!(
        "* history: {bytes} bytes, {records} records: {:.1} bytes per event",
        bytes as f64 / records.max(1) as f64
    );
    if let (Some(rec), Some(rep)) = (find("ddbx record"), find("ddbx replay")) {
        println!("* replay / record (medians): {:.2}", rep / rec);
    }
    println!();
}

/// A one-line command output, or "?".
fn one_line(cmd: &str, args: &[&str], dir: &Path) -> String {
    Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "?".into())
}

fn main() {
    // `cargo bench` passes `--bench` (and maybe a filter); nothing to interpret.
    let runs = env_number("DDBX_BENCH_RUNS", 5).max(1) as usize;
    let rounds = env_number("DDBX_BENCH_ROUNDS", 100_000);
    let size = env_number("DDBX_BENCH_SIZE", 64);
    let forks = env_number("DDBX_BENCH_FORKS", 2000);

    let out = target_dir().join("ddbx-bench");
    std::fs::create_dir_all(&out).unwrap_or_else(|e| fail(&format!("{}: {e}", out.display())));
    let pingpong = build_prog(&out, "bench_pingpong");
    let forktree = build_prog(&out, "bench_forktree");
    let ddbx = release_ddbx();
    let strace = Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !strace {
        eprintln!("overhead bench: strace is not installed; its rows are left out");
    }

    let ws = workspace();
    let mut commit = one_line("git", &["rev-parse", "--short", "HEAD"], &ws);
    let status = one_line(
        "git",
        &["status", "--porcelain", "--untracked-files=no"],
        &ws,
    );
    if status != "?" && !status.is_empty() {
        commit.push_str(" (work tree has uncommitted changes)");
    }
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "?".into());
    let ncpu = std::thread::available_parallelism().map_or(0, |n| n.get());

    let pp = bench(
        format!("ping-pong: {rounds} round trips of {size} bytes over loopback TCP, 2 processes"),
        &ddbx,
        &pingpong,
        &[rounds.to_string(), size.to_string()],
        runs,
        strace,
        &out,
    );
    let ft = bench(
        format!("fork tree: {forks} short-lived processes (binary tree, no sockets)"),
        &ddbx,
        &forktree,
        &[forks.to_string()],
        runs,
        strace,
        &out,
    );

    println!("## ddbx overhead benchmark\n");
    println!(
        "* runs per mode: {runs} (interleaved: native, record, strace, replay of that record)"
    );
    println!("* CPUs: {ncpu} ({cpu})");
    println!("* kernel: {}", one_line("uname", &["-sr"], &ws));
    println!(
        "* date: {}",
        one_line("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"], &ws)
    );
    println!("* ddbx commit: {commit}");
    println!("* ddbx binary: {}", ddbx.display());
    if !strace {
        println!("* strace: not installed, its rows are missing");
    }
    println!();
    report(&pp);
    report(&ft);
    if rounds > 0 {
        let rec = pp
            .series
            .iter()
            .find(|s| s.mode == "ddbx record")
            .map(|s| median(&s.secs));
        let nat = median(&pp.series[0].secs);
        let events = pp.history.1 as f64;
        if let Some(rec) = rec {
            println!(
                "ping-pong per round trip: native {:.2} µs, record {:.2} µs; record adds {:.2} µs per recorded event",
                nat / rounds as f64 * 1e6,
                rec / rounds as f64 * 1e6,
                (rec - nat) / events.max(1.0) * 1e6
            );
        }
    }
}
