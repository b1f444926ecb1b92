//! `ddbx record --until-fail`: record a flaky program until a run fails, keep that run.
//!
//! The search is [`crate::Recorder::until_fail`], each run a `ddbx record` process started
//! from this binary. With `--json`, one object at the end on the message stream:
//!
//! ```text
//! {"command": "record", "until_fail": true,
//!  "outcome": "failed" | "none_failed" | "interrupted", "exit_code": 0 | 1 | 130 | 143,
//!  "runs": 7, "max_runs": 100, "jobs": 1, "elapsed_s": 1.3,
//!  "failing_run": {"run": 7, "recording": "flaky", "root_status": "exit 1" | "signal 6",
//!                  "exit_code": 1, "failure": "exit" | "signal" | "fail_if",
//!                  "cut": {"p1": 40, …} | null} | null,
//!  "replay": "ddbx replay flaky" | null, "messages": ["ddbx: …", …]}
//! ```
//!
//! With `--json-lines`, one `{"event": "start", "command": "record", "until_fail": true,
//! "max_runs", "jobs"}`, one `{"event": "run_ended", "run", "ended", "root_status",
//! "failed", "failure"}` per run that ended, and last `{"event": "end", …}` with the fields
//! above. A progress line (runs ended, failures, elapsed) on a terminal.

use super::json;
use super::json_lines::JsonLines;
use super::progress::{self, Steps};
use crate::api::{
    DEFAULT_RUNS, Failure, Messages, OnRun, RecordOptions, Recorder, RunReport, UntilFail,
    UntilFailOutcome,
};
use crate::debugger::render::cut_json;
use crate::error::Error;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

/// What `ddbx record --until-fail` was given (from `record`'s arguments).
#[derive(Debug)]
pub struct Args {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// `-o DIR`.
    pub out: Option<PathBuf>,
    /// `--json`.
    pub json: bool,
    /// `--json-lines`.
    pub json_lines: bool,
    /// `--messages FILE`.
    pub messages: Option<PathBuf>,
    /// `--env-exclude PATTERN`s.
    pub env_exclude: Vec<String>,
    /// `--runs N`.
    pub runs: Option<u32>,
    /// `--jobs J`.
    pub jobs: Option<u32>,
    /// `--fail-if PREDICATE`.
    pub fail_if: Option<String>,
}

/// Runs `ddbx record --until-fail`; returns the exit code.
pub fn run(args: Args, messages: Messages) -> Result<i32, Error> {
    let quiet = args.json || args.json_lines;
    // SIGINT and SIGTERM are read by the search's signal thread: blocked before any thread
    // (the progress line's) starts, so that none of them takes one instead.
    ddbx_supervisor::session::procs::block_stop_signals()
        .map_err(|e| Error::Internal(format!("cannot block SIGINT/SIGTERM: {e}")))?;
    let ddbx = std::env::current_exe()
        .map_err(|e| Error::Internal(format!("cannot find the ddbx binary itself: {e}")))?;
    let max_runs = args.runs.unwrap_or(DEFAULT_RUNS);
    let jobs = args.jobs.unwrap_or(1);
    let lines = args
        .json_lines
        .then(|| JsonLines::open(args.messages.as_deref()))
        .transpose()?;
    if let Some(lines) = &lines {
        lines.write(&json!({
            "event": "start",
            "command": "record",
            "until_fail": true,
            "max_runs": max_runs,
            "jobs": jobs,
        }));
    }
    let recorder = Recorder::new(RecordOptions {
        command: args.command,
        out_dir: args.out,
        messages,
        handle_signals: true,
        observer: Default::default(),
        env_exclude: args.env_exclude,
    });
    let on_run = on_run(lines.clone(), progress::wanted(quiet), max_runs);
    let outcome = recorder.until_fail(UntilFail {
        runs: max_runs,
        jobs,
        fail_if: args.fail_if,
        ddbx: Some(ddbx),
        on_run: Some(on_run),
    })?;
    if let Some(failing) = &outcome.failing {
        super::latest::remember(&failing.dir);
    }
    if quiet {
        let value = outcome_json(&outcome, max_runs, jobs);
        match &lines {
            Some(lines) => lines.end(value),
            None => super::write_json_message(&value, args.messages.as_deref())?,
        }
    }
    Ok(outcome.exit_code)
}

/// What is told of each run: a `run_ended` line, or the progress line's step.
fn on_run(lines: Option<JsonLines>, progress: bool, max_runs: u32) -> OnRun {
    let steps = Steps::new("recording until a run fails", progress);
    steps.step(format!("0 of at most {max_runs} runs ended, 0 failed"));
    Arc::new(move |report: &RunReport| {
        if let Some(lines) = &lines {
            lines.write(&json!({
                "event": "run_ended",
                "run": report.run,
                "ended": report.ended,
                "root_status": json::status(report.root_status),
                "failed": report.failure.is_some(),
                "failure": report.failure.as_ref().map(Failure::to_string),
            }));
        }
        let failed = u32::from(report.failure.is_some());
        steps.step(format!(
            "{} of at most {max_runs} runs ended, {failed} failed",
            report.ended
        ));
    })
}

/// The `--json` object (and the `end` line's fields).
fn outcome_json(outcome: &UntilFailOutcome, max_runs: u32, jobs: u32) -> Value {
    let word = match (&outcome.failing, outcome.interrupted) {
        (Some(_), _) => "failed",
        (None, Some(_)) => "interrupted",
        (None, None) => "none_failed",
    };
    let failing = outcome.failing.as_ref().map(|f| {
        let (kind, cut) = match &f.failure {
            Failure::Exit(_) => ("exit", Value::Null),
            Failure::Signal(_) => ("signal", Value::Null),
            Failure::FailIf { cut, .. } => ("fail_if", cut_json(cut)),
        };
        json!({
            "run": f.run,
            "recording": f.dir.display().to_string(),
            "root_status": json::status(f.root_status),
            "exit_code": f.run_exit_code,
            "failure": kind,
            "cut": cut,
        })
    });
    json!({
        "command": "record",
        "until_fail": true,
        "outcome": word,
        "exit_code": outcome.exit_code,
        "runs": outcome.runs,
        "max_runs": max_runs,
        "jobs": jobs,
        "elapsed_s": (outcome.elapsed.as_secs_f64() * 10.0).round() / 10.0,
        "failing_run": failing,
        "replay": outcome.failing.as_ref().map(|f| format!("ddbx replay {}", f.dir.display())),
        "messages": outcome.messages,
    })
}
