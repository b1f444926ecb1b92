//! `ddbx record`: run a program and every process it starts, recording what was
//! nondeterministic.
//!
//! With `--json`, instead of the `ddbx: …` lines, one JSON object is written at the end to the
//! message stream (stderr or `--messages FILE`):
//!
//! ```text
//! {"command": "record", "outcome": "complete" | "unsupported" | "interrupted",
//!  "exit_code": 0, "recording": "ddbx-run-1", "root_status": "exit 0" | "signal 9" | null,
//!  "actors": [<actor>, …], "passthrough": ["UDP socket (p3, p5)", …],
//!  "divergence": null, "problem": null | "p3: …", "messages": ["ddbx: …", …]}
//! ```
//!
//! (`<actor>` as in [`super::json`].)

use super::json;
use super::json_lines::JsonLines;
use super::progress;
use crate::api::{Messages, RecordOptions, record};
use crate::error::Error;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Examples:
  ddbx record -- ./server 4000
  ddbx record -o runs/first -- python3 app.py --workers 2
  ddbx record --json --messages out.json -- sh ./start-all.sh
  ddbx record --trace optimal -o run2 -- ./prog   (log only racing receives)
  ddbx record --until-fail -o flaky -- ./test      (record until a run fails; keep that one)
  ddbx record --until-fail --runs 500 --jobs 2 -- ./test
  ddbx record --until-fail --fail-if 'server.errors >= 1' -- ./start-all.sh

PROGRAM is looked up in PATH like a shell does. The program's own output passes
through untouched; ddbx's lines go to stderr (or --messages FILE). The recording
directory must be new or empty; without -o it is ddbx-run-N (N = smallest free).

Exit code: the program's own (128+signal if it was killed); 2 usage, 103 unsupported,
104 internal error, 130/143 interrupted.

--until-fail records the program again and again (at most --runs N, default 100;
--jobs J at once, each its own ddbx record process) until a run fails: its root
exits non-zero or is killed by a signal, or --fail-if P holds at some consistent
state of its recording (as `ddbx inf DIR P` finds it; probes and counters). That
run's recording is kept in DIR (the others are deleted) and `ddbx replay DIR`
fails the same way. Its exit code: 0 a failing run was kept, 1 no run failed in N
runs (nothing kept), 2, 103, 104, 130/143 as above. --json: {\"command\": \"record\",
\"until_fail\": true, \"outcome\": \"failed\"|\"none_failed\"|\"interrupted\", \"exit_code\",
\"runs\", \"max_runs\", \"jobs\", \"elapsed_s\", \"failing_run\": {\"run\", \"recording\",
\"root_status\", \"exit_code\", \"failure\": \"exit\"|\"signal\"|\"fail_if\", \"cut\"} | null,
\"replay\": \"ddbx replay DIR\" | null, \"messages\"}; --json-lines: one {\"event\":
\"run_ended\", \"run\", \"ended\", \"root_status\", \"failed\", \"failure\"} per run, then
\"end\". The program's output passes through (its stdin is /dev/null).

--json writes one object at the end to the message stream: {\"command\": \"record\",
\"outcome\": \"complete\"|\"unsupported\"|\"interrupted\", \"exit_code\", \"recording\",
\"root_status\", \"actors\": [{\"id\", \"parent\", \"origin\", \"pid\", \"host\", \"argv\",
\"exit\"}], \"passthrough\", \"divergence\": null, \"problem\", \"messages\"}.

--json-lines writes one object per line as things happen, each with an \"event\":
\"start\", \"actor_started\" {\"actor\", \"pid\", \"parent\", \"origin\", \"argv\", \"exec\"},
\"actor_exited\" {\"actor\", \"pid\", \"status\"}, \"unsupported\", \"finishing\", and last
\"end\" with every field of the --json object.";

/// Arguments of `ddbx record`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Recording directory (new or empty) [default: ddbx-run-N]
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print one JSON object at the end instead of ddbx's lines.
    #[arg(long)]
    pub json: bool,
    /// Print one JSON object per line as things happen (actors started and exited, the end)
    /// instead of ddbx's lines; the last one is the --json object.
    #[arg(long, conflicts_with = "json")]
    pub json_lines: bool,
    /// Write ddbx's lines (or the JSON) to FILE instead of stderr.
    #[arg(long, value_name = "FILE")]
    pub messages: Option<PathBuf>,
    /// What to log: `full` (the default: every outcome and every send, what `races`, `view`
    /// and `--stop-if` need) or `optimal` (only the receives that raced; see README).
    #[arg(long, value_name = "MODE", value_parser = ["full", "optimal"], default_value = "full")]
    pub trace: String,
    /// Same as `--trace full` (the default), for scripts that want to say so.
    #[arg(long, conflicts_with = "trace")]
    pub full: bool,
    /// Leave the environment variables whose names match PATTERN (`*`, `?`, e.g. `AWS_*`)
    /// out of the recording (repeatable). The program still gets them; `ddbx replay` then
    /// takes them from its own environment and refuses to start without them.
    #[arg(long = "env-exclude", value_name = "PATTERN")]
    pub env_exclude: Vec<String>,
    /// Record again and again until a run fails (exit status not 0, a signal, or --fail-if);
    /// keep that run's recording in DIR and delete the others.
    #[arg(long)]
    pub until_fail: bool,
    /// With --until-fail: at most N runs [default: 100].
    #[arg(long, value_name = "N", requires = "until_fail", value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
    /// With --until-fail: J runs at once, each a `ddbx record` process of its own [default: 1].
    #[arg(long, value_name = "J", requires = "until_fail", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// With --until-fail: a run whose program exits 0 fails too when PREDICATE holds at some
    /// consistent state of its recording (`ddbx help predicates`; probes and counters).
    #[arg(long, value_name = "PREDICATE", requires = "until_fail")]
    pub fail_if: Option<String>,
    /// Do not remember this recording as the latest made here (each run of --until-fail is
    /// one such record; only the failing run, kept, is remembered).
    #[arg(long, hide = true)]
    pub no_latest: bool,
    /// The program to record and its arguments (after `--`).
    #[arg(value_name = "PROGRAM", required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// Runs `ddbx record`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    let quiet = args.json || args.json_lines;
    let messages = match (&args.messages, quiet) {
        (_, true) => Messages::Quiet,
        (Some(path), false) => Messages::File(path.clone()),
        (None, false) => Messages::Stderr,
    };
    if args.trace == "optimal" && !args.full {
        // SAFETY: no other thread runs yet; the session passes the variable to the program.
        unsafe { std::env::set_var(ddbx_supervisor::wire::env::TRACE, "optimal") };
    } else {
        // SAFETY: as above.
        unsafe { std::env::remove_var(ddbx_supervisor::wire::env::TRACE) };
    }
    if args.until_fail {
        let args = super::until_fail::Args {
            command: args.command,
            out: args.out,
            json: args.json,
            json_lines: args.json_lines,
            messages: args.messages,
            env_exclude: args.env_exclude,
            runs: args.runs,
            jobs: args.jobs,
            fail_if: args.fail_if,
        };
        return super::until_fail::run(args, messages);
    }
    let lines = args
        .json_lines
        .then(|| JsonLines::open(args.messages.as_deref()))
        .transpose()?;
    let (progress, _progress_shown) = progress::for_run("recording", progress::wanted(quiet));
    let observer = match &lines {
        Some(lines) => lines.observer("record"),
        None => progress,
    };
    let outcome = record(RecordOptions {
        command: args.command,
        out_dir: args.out,
        messages,
        handle_signals: true,
        observer,
        env_exclude: args.env_exclude,
    })?;
    if !args.no_latest {
        super::latest::remember(&outcome.dir);
    }
    if quiet {
        let (divergence, problem) = json::end_details(&outcome.end);
        let value = serde_json::json!({
            "command": "record",
            "outcome": outcome.kind.as_str(),
            "exit_code": outcome.exit_code,
            "recording": outcome.dir.display().to_string(),
            "root_status": json::status(outcome.root_status),
            "actors": outcome.actors.iter().map(json::actor).collect::<Vec<_>>(),
            "passthrough": outcome.passthrough,
            "divergence": divergence,
            "problem": problem,
            "messages": outcome.messages,
        });
        match &lines {
            Some(lines) => lines.end(value),
            None => super::write_json_message(&value, args.messages.as_deref())?,
        }
    }
    Ok(outcome.exit_code)
}
