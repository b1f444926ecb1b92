//! `ddbx replay`: run a recording again, making every nondeterministic outcome come out as
//! recorded, and report the first divergence.
//!
//! With `--json`, one JSON object at the end on the message stream (stderr or
//! `--messages FILE`) instead of the `ddbx: …` lines:
//!
//! ```text
//! {"command": "replay", "outcome": "reached_end" | "halted" | "diverged" | "unsupported" | "interrupted",
//!  "exit_code": 0, "recording": "ddbx-run-1", "root_status": "exit 0" | null,
//!  "actors": [<actor>, …], "events": 42, "history_out": null | "dir",
//!  "divergence": null | {"actor", "event", "expected", "found", "message"},
//!  "problem": null | "…", "messages": ["ddbx: …", …],
//!  "halted": null | {"predicate", "cut", "actors": [{"id", "events", "status", "next",
//!                                                    "vars": {name: value}, "satisfied", "pid"}]},
//!  "cut": null | {"p1": 7, "p2": 3, …},
//!  "predicates": {"primary": null | 1, "stop_ifs": [{"predicate", "kind"}],
//!                 "reports": [{"predicate", "kind", "reason", "cut": null | {…},
//!                              "seen": "at_or_before_halt" | "after_halt" | "never" | "no_halt" | "unknown",
//!                              "problem": null | "…"}],
//!                 "traces": [{"expr", "if", "kind", "shown", "points": [{"cut": {…}, "value": "2"}]}],
//!                 "halts": [{"p1": 7, …}, …]}}
//! ```
//!
//! With `--stop-if`/`--stop-at` the outcome is "halted" and `cut` gives, for every recorded
//! actor, the events it had executed in the halted state (0: not created), counted as
//! `--stop-at` counts them and as `ddbx inf --json` prints them. `halted` and `cut` are the
//! last halt; `predicates.halts` lists every halt (several after the prompt's `cont`), where
//! `reached_end` is the outcome when a `cont` ran to the end.
//!
//! `predicates`: `primary` is the number (from 1) of the `--stop-if` halted at; `reports` says
//! where each other `--stop-if` first holds (`kind`: "conjunctive" or "general"; `cut` null:
//! never, or `problem` says why it could not be computed); `traces` gives, per
//! `--trace EXPR --if P`, every state where P becomes true with EXPR's value there (`value` is
//! text: an integer, `true`/`false`, a quoted string, or `unset (…)`), and how many were shown
//! (those the replay passed). See `ddbx help predicates`, "Several predicates".

use super::json;
use super::json_lines::JsonLines;
use super::progress;
use crate::api::{Messages, ReplayOptions, replay_driven};
use crate::error::Error;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Examples:
  ddbx replay ddbx-run-1
  ddbx replay ddbx-run-1 --stop-if 'x1==1 && x4==1'    halt at the first state where it holds
  ddbx replay ddbx-run-1 --stop-at p3:17                halt right after p3's 17th event
  ddbx replay ddbx-run-1 --stop-if 'p2.recvs >= 2' --hold   keep the halted processes for gdb -p
  ddbx replay ddbx-run-1 --stop-if 'p1.x==1' --stop-if 'p2.y==3 || p5.y==3' \\
      --trace 'p3.count' --if 'p1.x==1'
  printf 'show\\ncont\\n' | ddbx replay ddbx-run-1 --stop-if 'x1==1' --prompt
  ddbx replay --stop-if 'x1==1 && x4==1'   (the latest recording made from this directory)
  ddbx replay --history-out /tmp/again ddbx-run-1   (then compare the histories)
  ddbx replay --json ddbx-run-1

The recorded command runs again in the recorded directory with the recorded
environment. Any difference (another call, another peer, a process the record did
not have, another exit status) is a divergence: every process is stopped and ddbx
says which actor, which event, what was expected and what was found.

Exit code: the recorded program's status when the replay reached the recorded end;
101 diverged, 102 bad recording, 103 unsupported, 2 usage, 104 internal, 130/143
interrupted.

--json writes one object at the end to the message stream: {\"command\": \"replay\",
\"outcome\": \"reached_end\"|\"halted\"|\"diverged\"|\"unsupported\"|\"interrupted\", \"exit_code\",
\"recording\", \"root_status\", \"actors\", \"events\", \"history_out\", \"divergence\":
null|{\"actor\", \"event\", \"expected\", \"found\", \"message\"}, \"problem\", \"messages\",
\"halted\": null|{\"predicate\", \"cut\", \"actors\"}, \"cut\": null|{\"p1\": events, …},
\"predicates\": {\"primary\", \"stop_ifs\", \"reports\", \"traces\", \"halts\"}}; outcome
\"halted\" and exit 0 when a --stop-if/--stop-at halted.

At a halt, with a terminal on stdin or with --prompt, the (ddbx) prompt reads
commands: show, ps, print EXPR, stop if P, trace E if P, switch N, info, cont,
gdb pN [ARGS], kill, quit, help. Several --stop-if: the first conjunctive one (or
--primary N) is halted at exactly, the others are reported where they first hold.
--trace EXPR --if P prints EXPR each time P becomes true. See `ddbx help predicates`.

--json-lines writes one object per line as things happen, each with an \"event\":
\"start\", \"actor_started\", \"actor_exited\" (as in `ddbx help record`), \"divergence\"
{\"actor\", \"at_event\", \"expected\", \"found\", \"message\"}, \"halted\" {\"predicate\",
\"cut\", \"actors\"}, \"trace\" {\"expr\", \"if\", \"cut\", \"value\"}, \"finishing\", and last
\"end\" with every field of the --json object.

Without DIR, the latest recording made from this directory is replayed (ddbx says
which).";

/// Arguments of `ddbx replay`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Print one JSON object at the end instead of ddbx's lines.
    #[arg(long)]
    pub json: bool,
    /// Print one JSON object per line as things happen (actors started and exited, a
    /// divergence, each halt and trace point, the end) instead of ddbx's lines; the last one
    /// is the --json object.
    #[arg(long, conflicts_with = "json")]
    pub json_lines: bool,
    /// Write ddbx's lines (or the JSON) to FILE instead of stderr.
    #[arg(long, value_name = "FILE")]
    pub messages: Option<PathBuf>,
    /// Write the replay's own histories (and manifest) into DIR (new or empty).
    #[arg(long, value_name = "DIR")]
    pub history_out: Option<PathBuf>,
    /// Halt every process at the first consistent global state where P holds (e.g.
    /// 'x1==1 && x4==1'; see `ddbx help predicates`).
    #[arg(long = "stop-if", value_name = "P")]
    pub stop_if: Vec<String>,
    /// A stop point on the history: ACTOR:EVENT halts right after that actor's EVENT-th event.
    #[arg(long = "stop-at", value_name = "ACTOR:EVENT")]
    pub stop_at: Vec<String>,
    /// After halting, keep the processes alive (their pids are printed, for gdb -p) until ddbx
    /// is interrupted.
    #[arg(long)]
    pub hold: bool,
    /// Which --stop-if is the primary, halted at exactly (from 1; default: the first
    /// conjunctive one). The others are reported where they first hold.
    #[arg(long, value_name = "N")]
    pub primary: Option<usize>,
    /// Show EXPR each time the condition of the matching --if becomes true (repeatable: the
    /// n-th --trace goes with the n-th --if).
    #[arg(long = "trace", value_name = "EXPR")]
    pub trace: Vec<String>,
    /// The condition of a --trace.
    #[arg(long = "if", value_name = "P")]
    pub trace_if: Vec<String>,
    /// At a halt, read prompt commands (`help`, `show`, `cont`, `gdb p3`…) from stdin even if
    /// it is not a terminal (with a terminal the prompt opens by itself).
    #[arg(long)]
    pub prompt: bool,
    /// At a halt, never open the prompt, even at a terminal.
    #[arg(long, conflicts_with = "prompt")]
    pub no_prompt: bool,
    /// The recording directory [default: the latest recording made from this directory].
    #[arg(value_name = "DIR")]
    pub given_dir: Option<PathBuf>,
    /// The recording directory: DIR, or the latest one (filled in before `run`).
    #[arg(skip)]
    pub dir: PathBuf,
}

/// Runs `ddbx replay`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    let quiet = args.json || args.json_lines;
    let messages = match (&args.messages, quiet) {
        (_, true) => Messages::Quiet,
        (Some(path), false) => Messages::File(path.clone()),
        (None, false) => Messages::Stderr,
    };
    if args.trace.len() != args.trace_if.len() {
        return Err(Error::Usage(format!(
            "expected one --if P after each --trace EXPR, found {} --trace and {} --if",
            args.trace.len(),
            args.trace_if.len()
        )));
    }
    let traces = args
        .trace
        .iter()
        .cloned()
        .zip(args.trace_if.iter().cloned())
        .collect();
    // At a terminal the prompt opens by itself, unless the halt is to be held or printed.
    let prompt = args.prompt
        || (!args.no_prompt && !quiet && !args.hold && super::prompt::stdin_is_terminal());
    let driver = prompt.then(super::prompt::driver);
    let lines = args
        .json_lines
        .then(|| JsonLines::open(args.messages.as_deref()))
        .transpose()?;
    let (progress, _progress_shown) = progress::for_run("replaying", progress::wanted(quiet));
    let observer = match &lines {
        Some(lines) => lines.observer("replay"),
        None => progress,
    };
    let outcome = replay_driven(
        ReplayOptions {
            dir: args.dir,
            history_out: args.history_out,
            messages,
            handle_signals: true,
            stop_if: args.stop_if,
            stop_at: args.stop_at,
            hold: args.hold,
            traces,
            primary: args.primary,
            observer,
        },
        driver,
    )?;
    if quiet {
        let (divergence, problem) = json::end_details(&outcome.end);
        let value = serde_json::json!({
            "command": "replay",
            "outcome": outcome.kind.as_str(),
            "exit_code": outcome.exit_code,
            "recording": outcome.dir.display().to_string(),
            "root_status": json::status(outcome.root_status),
            "actors": outcome.actors.iter().map(json::actor).collect::<Vec<_>>(),
            "events": outcome.events,
            "history_out": outcome.history_out.map(|p| p.display().to_string()),
            "divergence": divergence,
            "problem": problem,
            "messages": outcome.messages,
            "halted": outcome.halted.as_ref().map(json::halted_json),
            "cut": outcome.halted.as_ref().map(|h| json::halted_json(h)["cut"].clone()),
            "predicates": outcome.predicates,
        });
        match &lines {
            Some(lines) => lines.end(value),
            None => super::write_json_message(&value, args.messages.as_deref())?,
        }
    }
    Ok(outcome.exit_code)
}
