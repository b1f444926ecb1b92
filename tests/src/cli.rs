//! The `ddbx` binary under test, driven the way a user drives it: record, replay, read.

use crate::histories::{Histories, assert_same_histories, histories};
use crate::json::parse_json;
use crate::progs::figure1;
use crate::run::{Output, Run, native_outputs};
use crate::{TempDir, path_str};
use ddbx_wire::Record;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::Path;

/// The `ddbx` binary under test: `const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));` in an
/// integration test of the `ddbx` package.
#[derive(Clone, Copy, Debug)]
pub struct Ddbx(pub &'static str);

impl Ddbx {
    /// The binary's path.
    pub fn path(&self) -> &Path {
        Path::new(self.0)
    }

    /// `ddbx ARGS…`, ready to run.
    pub fn run<I, S>(&self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Run::new(self.0).args(args)
    }

    /// `ddbx ARGS…`, which must exit 0, its stdout as one JSON value.
    pub fn json<I, S>(&self, args: I) -> Value
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let run = self.run(args);
        let out = run.success();
        parse_json(&out.stdout, "ddbx's JSON output")
    }

    /// `ddbx record -o REC -- PROGRAM ARGS…`, ready to run (add its environment with
    /// [`Run::env`]).
    pub fn record(&self, rec: &Path, program: &Path, args: &[&str]) -> Run {
        self.record_with(&[], rec, program, args)
    }

    /// [`Ddbx::record`] with record options (`--trace optimal`, …) before `-o`.
    pub fn record_with(&self, options: &[&str], rec: &Path, program: &Path, args: &[&str]) -> Run {
        self.run(["record"])
            .args(options)
            .args(["-o", path_str(rec), "--", path_str(program)])
            .args(args)
    }

    /// Records `program` (no arguments) into `rec` until `wanted(output, rec)` holds, at most
    /// `tries` times, each record exiting 0: the output of the one kept, whose recording stays
    /// in `rec`. Panics saying that no record of `tries` had `what`.
    pub fn record_until(
        &self,
        rec: &Path,
        program: &Path,
        (tries, what): (usize, &str),
        wanted: impl Fn(&Output, &Path) -> bool,
    ) -> Output {
        (0..tries)
            .find_map(|_| {
                let _ = std::fs::remove_dir_all(rec);
                let out = self.record(rec, program, &[]).output();
                assert_eq!(out.code, 0, "record failed:\n{}", out.stderr);
                wanted(&out, rec).then_some(out)
            })
            .unwrap_or_else(|| panic!("no record of {tries} had {what}"))
    }

    /// Records the Figure 1 example (`examples/figure1/run`, `DDBX_JITTER=20`) into `rec`; the
    /// record must succeed.
    pub fn record_figure1(&self, rec: &Path) -> Output {
        let (run, bin) = figure1();
        self.record(rec, &run, &[])
            .env("DDBX_JITTER", "20")
            .env("FIG1_BIN", &bin)
            .success()
    }

    /// Replays the recording `rec` `replays` times, replay *i* writing its histories
    /// (`--history-out`) next to `rec` as `replay<i>`, and checks each against the record: the
    /// exit code and output of `recorded`, and histories: `observed(replay dir)` must equal
    /// `expected`.
    pub fn assert_replays(
        &self,
        rec: &Path,
        recorded: &Output,
        replays: usize,
        expected: &Histories,
        observed: &dyn Fn(&Path) -> Histories,
    ) {
        for i in 1..=replays {
            let out_dir = rec.with_file_name(format!("replay{i}"));
            let replayed = self
                .run(["replay", "--history-out", path_str(&out_dir), path_str(rec)])
                .output();
            assert_eq!(
                replayed.code, recorded.code,
                "replay {i} exit code differs from the record's; stderr:\n{}",
                replayed.stderr
            );
            assert_eq!(
                replayed.stdout, recorded.stdout,
                "replay {i} printed something else than the record"
            );
            assert_same_histories(
                expected,
                &observed(&out_dir),
                &format!("record vs replay {i}"),
            );
        }
    }

    /// Records `program args` with `DDBX_JITTER=jitter`, then replays the recording `replays`
    /// times and checks each replay ([`Ddbx::assert_replays`]: same exit code and output as the
    /// record, same histories, pids and ports aside). Returns the temporary directory (the
    /// recording is `rec` in it, replay *i* wrote `replay<i>`) and the record's output.
    pub fn record_and_replay(
        &self,
        program: &Path,
        args: &[&str],
        jitter: u32,
        replays: usize,
    ) -> (TempDir, Output) {
        let jitter = jitter.to_string();
        self.record_and_replay_with(program, args, &[("DDBX_JITTER", &jitter)], replays, &|_| {})
    }

    /// [`Ddbx::record_and_replay`] with the record's whole environment given (`DDBX_JITTER`
    /// included), and `blank` applied to every record (after [`Record::without_run_details`])
    /// before histories are compared: for run details that only the program knows, such as a
    /// `mkdtemp` name in a Unix socket path.
    pub fn record_and_replay_with(
        &self,
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        replays: usize,
        blank: &dyn Fn(&mut Record),
    ) -> (TempDir, Output) {
        let blanked = |dir: &Path| {
            let mut h = histories(dir);
            h.values_mut().flatten().for_each(blank);
            h
        };
        let tmp = TempDir::new("rr");
        let rec = tmp.join("rec");
        let mut record = self.record(&rec, program, args);
        for (key, value) in env {
            record = record.env(key, value);
        }
        let recorded = record.output();
        assert_eq!(recorded.code, 0, "record failed:\n{}", recorded.stderr);
        assert!(
            !recorded.stdout.is_empty(),
            "the program printed nothing under record"
        );
        self.assert_replays(&rec, &recorded, replays, &blanked(&rec), &blanked);
        (tmp, recorded)
    }

    /// `program ARGS` recorded under `--trace optimal` (with jitter, and the full history kept
    /// beside the optimal one): each of 2 replays observes, event for event, what the full
    /// history says.
    pub fn replays_under_optimal_tracing(&self, program: &Path, args: &[&str]) {
        let tmp = TempDir::new("optimal");
        let rec = tmp.join("rec");
        let recorded = self
            .record_with(&["--trace", "optimal"], &rec, program, args)
            .env("DDBX_JITTER", "5")
            .env("DDBX_TRACE_CHECK", "1")
            .success();
        let full = crate::histories::full_histories(&rec);
        self.assert_replays(&rec, &recorded, 2, &full, &histories);
    }

    /// A halting replay of `rec` at `pred` (`--stop-if`) halts, at the cut `ddbx inf` computes
    /// for it.
    pub fn halts_where_inf_says(&self, rec: &Path, pred: &str) {
        let offline = self.json(["inf", path_str(rec), pred, "--json"]);
        let messages = rec.with_file_name("halt.json");
        self.run([
            "replay",
            path_str(rec),
            "--stop-if",
            pred,
            "--json",
            "--messages",
            path_str(&messages),
        ])
        .success();
        let text = std::fs::read_to_string(&messages).unwrap_or_default();
        let halted = parse_json(&text, "the halting replay's JSON");
        assert_eq!(halted["outcome"], "halted", "{pred}: {halted}");
        assert_eq!(
            crate::json::cut_of(&halted["cut"]),
            crate::json::cut_of(&offline["cut"]),
            "{pred}: the halted cut vs ddbx inf's"
        );
    }

    /// A halting replay of `rec` at `stop` (`--stop-at`, e.g. `p1:7`) halts, at the cut `ddbx inf`
    /// computes for it (the replay's JSON is kept beside `rec`).
    pub fn halts_at_where_inf_says(&self, rec: &Path, stop: &str) {
        let (halted, inf) = self.halt_and_inf(rec, stop);
        assert_eq!(
            crate::json::cut_of(&halted["cut"]),
            crate::json::cut_of(&inf["cut"]),
            "{stop}: the halted cut vs ddbx inf's: {halted}\ninf: {inf}"
        );
    }

    /// A halting replay of `rec` at `stop`, which must halt, and `ddbx inf`'s answer for it.
    fn halt_and_inf(&self, rec: &Path, stop: &str) -> (serde_json::Value, serde_json::Value) {
        let inf = self.json(["inf", path_str(rec), "--stop-at", stop, "--json"]);
        let messages = rec.with_file_name(format!(
            "{}-halt-{}.json",
            rec.file_name().unwrap().to_string_lossy(),
            stop.replace(':', "-")
        ));
        let out = self
            .run([
                "replay",
                path_str(rec),
                "--stop-at",
                stop,
                "--json",
                "--messages",
                path_str(&messages),
            ])
            .output();
        let text = std::fs::read_to_string(&messages).unwrap_or_default();
        let v = parse_json(&text, "ddbx replay --json");
        assert_eq!(v["outcome"], "halted", "{v}\nstderr:\n{}", out.stderr);
        (v, inf)
    }

    /// Shows the race of `program args` natively (at least two different outputs in up to 30
    /// runs with `DDBX_JITTER=jitter`), then [`Ddbx::record_and_replay`]s it 3 times.
    pub fn race(&self, program: &Path, args: &[&str], jitter: u32) -> (TempDir, Output) {
        let outputs = native_outputs(program, args, jitter, 2, 30);
        assert!(
            outputs.len() >= 2,
            "{}: 30 native runs all printed the same output, so this test would show nothing:\n{}",
            program.display(),
            outputs[0]
        );
        self.record_and_replay(program, args, jitter, 3)
    }
}
