//! `ddbx explore`: flip message races of a recording, one new recorded run each
//! ([`crate::api::explore`]).
//!
//! ddbx's lines (the runs' and the summary) go to standard error, or to `--messages FILE`; the
//! programs' own output is theirs. `--json` prints one object at the end on that stream
//! instead of the lines:
//!
//! ```text
//! {"command": "explore", "recording": "DIR", "dir": "DIR-explore",
//!  "flips": [{"race": 1, "path": [1], "name": "1", "actor": "p1", "event": 4,
//!             "wanted": "p3 event 2 (Connect …)",
//!             "held": ["p2:2", …], "flipped": true, "recording": "DIR-explore/race-1",
//!             "exit_code": 3, "root_status": "exit 3" | "signal 6" | null,
//!             "failed": true, "fail_if": true | false | null,
//!             "notes": ["p24:13 (held) is not a send or a connect in the new run: …", …],
//!             "replay": "ddbx replay DIR-explore/race-1"}, …],
//!  "skipped": [{"race": "2", "why": "…"}],
//!  "failing": ["1", … the names of the runs that failed]}
//! ```
//!
//! (`path`: the races flipped from RUN to this run, this one last; `name`: the path as `2.1`,
//! the run's directory being `race-2.1`; `race`: the last id, in its parent run's numbering.)

use super::json;
use super::races::shell_word;
use crate::api::{DEFAULT_PATIENCE, ExploreOptions, ExploreOutcome, Flip, Messages, explore};
use crate::error::Error;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

const AFTER_HELP: &str = "\
Examples:
  ddbx races run1                       list the races; note an unaffected one, say 2
  ddbx explore run1 --race 2            a new run in which race 2 has another winner
  ddbx explore run1 --all --fail-if 'p1.errors > 0'
                                        flip every unaffected race, one run each,
                                        and say which runs failed
  ddbx replay run1-explore/race-2       replay the new run, as often as needed
  ddbx explore run1 --all --depth 2     then the races next in line in each new run
  ddbx explore --all                    the latest recording made from this directory

For race N (a receive r that got message m1 and could have got m2), ddbx runs the
recorded command again, live and recorded: every message of the race but m2 is held at
its sender (before its send or connect) until r has been made, so r gets m2. The races
whose receive happened before r keep their recorded winners the same way; everything
else runs as it comes. A held send waits at most --patience seconds for its receive (the
new run may never make it), then goes on, and ddbx says so. Each new run is an ordinary
recording in DIR/race-N (DIR: -o, default RUN-explore), which replay, races and view take.

With --depth D above 1, each new run that flipped is explored in turn: its races that
only the races flipped so far affect (the next ones to debug once those are set) are
flipped, D flips deep: race-2.1 is race 1 of the run made by flipping race 2.

A flip is checked on the new recording (`flipped`: r got m2's sender's message). A run
fails when its program does not exit 0 or --fail-if holds at some consistent state.
Only races whose messages were all sent by recorded processes can be flipped.

Exit codes: 0 when every chosen race was explored, 2 usage, 102 bad recording,
103 unsupported, 104 internal error.";

/// Arguments of `ddbx explore`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The recording whose races to flip [default: the latest recording made from this
    /// directory].
    #[arg(value_name = "RUN")]
    pub given_dir: Option<PathBuf>,
    /// The recording: RUN, or the latest one (filled in before `run`).
    #[arg(skip)]
    pub dir: PathBuf,
    /// A race to flip, by its id in `ddbx races` (repeatable).
    #[arg(
        long = "race",
        value_name = "N",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub races: Vec<usize>,
    /// Flip every unaffected race (the ones that occur in every run with this input).
    #[arg(long)]
    pub all: bool,
    /// Directory for the new recordings, one `race-N` each (new or empty) [default: RUN-explore].
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// A new run whose program exits 0 fails too when PREDICATE holds at some consistent
    /// state of it (`ddbx help predicates`).
    #[arg(long, value_name = "PREDICATE")]
    pub fail_if: Option<String>,
    /// How long a held send waits at most for the receive it must follow, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_PATIENCE.as_secs_f64())]
    pub patience: f64,
    /// Go on from each new run that flipped: flip its races that only the races flipped so
    /// far affect, and so on, D flips deep; each run is named by its path (`race-2.1`).
    #[arg(long, value_name = "D", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub depth: u32,
    /// Print one JSON object at the end instead of ddbx's lines.
    #[arg(long)]
    pub json: bool,
    /// Write ddbx's lines (or the JSON) to FILE instead of stderr.
    #[arg(long, value_name = "FILE")]
    pub messages: Option<PathBuf>,
}

/// Runs `ddbx explore`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    if !(args.patience.is_finite() && args.patience > 0.0) {
        return Err(Error::Usage(format!(
            "--patience: expected a number of seconds above 0, found {}",
            args.patience
        )));
    }
    // A steered run records in full, whatever this shell asked of `ddbx record`.
    // SAFETY: no other thread runs yet; the session passes the environment on.
    unsafe { std::env::remove_var(ddbx_supervisor::wire::env::TRACE) };
    let outcome = explore(ExploreOptions {
        recording: args.dir.clone(),
        races: args.races.clone(),
        out_dir: args.out.clone(),
        fail_if: args.fail_if.clone(),
        messages: match (&args.messages, args.json) {
            (_, true) => Messages::Quiet,
            (Some(path), false) => Messages::File(path.clone()),
            (None, false) => Messages::Stderr,
        },
        patience: Duration::from_secs_f64(args.patience),
        depth: args.depth as usize,
    })?;
    if args.json {
        super::write_json_message(&to_json(&args, &outcome), args.messages.as_deref())?;
    } else {
        let mut sink = Lines(
            args.messages
                .as_ref()
                .and_then(|path| std::fs::OpenOptions::new().append(true).open(path).ok()),
        );
        print_text(&outcome, &mut sink);
    }
    Ok(0)
}

/// Where the summary's lines go: the messages file, or standard error.
struct Lines(Option<std::fs::File>);

impl Lines {
    fn say(&mut self, line: String) {
        match &mut self.0 {
            Some(file) => {
                let _ = std::io::Write::write_all(file, format!("{line}\n").as_bytes());
            }
            None => crate::term::eprint_line(&line),
        }
    }
}

/// `ddbx replay DIR` for a new run.
fn replay_command(flip: &Flip) -> String {
    format!(
        "ddbx replay {}",
        shell_word(&flip.record.dir.to_string_lossy())
    )
}

/// What each flip did, then the failing runs.
fn print_text(outcome: &ExploreOutcome, out: &mut Lines) {
    for f in &outcome.flips {
        let (actor, event) = f.receive;
        out.say(format!(
            "race {}: {actor} event {event} made to get {}",
            f.name(),
            f.wanted
        ));
        let held: Vec<String> = f.held.iter().map(|(a, k)| format!("{a}:{k}")).collect();
        out.say(format!("  held until their receives: {}", held.join(", ")));
        let status = f
            .record
            .root_status
            .map_or_else(|| "no status".to_string(), |s| s.to_string());
        out.say(format!(
            "  new run: {} ({status}{}), flipped: {}",
            f.record.dir.display(),
            if f.failed { ", failed" } else { "" },
            if f.flipped { "yes" } else { "no" }
        ));
        for note in &f.notes {
            out.say(format!("  not flipped? {note}"));
        }
        out.say(format!("  replay: {}", replay_command(f)));
    }
    for (race, why) in &outcome.skipped {
        out.say(format!("race {race}: not flipped: {why}"));
    }
    let failing: Vec<String> = outcome
        .flips
        .iter()
        .filter(|f| f.failed)
        .map(Flip::name)
        .collect();
    let flipped = outcome.flips.iter().filter(|f| f.flipped).count();
    out.say(format!(
        "{} run(s) in {}: {flipped} flipped, {} failed{}",
        outcome.flips.len(),
        outcome.dir.display(),
        failing.len(),
        if failing.is_empty() {
            String::new()
        } else {
            format!(" (race {})", failing.join(", race "))
        }
    ));
}

/// The `--json` object (see the module doc).
fn to_json(args: &Args, outcome: &ExploreOutcome) -> Value {
    let flips: Vec<Value> = outcome
        .flips
        .iter()
        .map(|f| {
            json!({
                "race": f.race,
                "path": f.path,
                "name": f.name(),
                "actor": f.receive.0.to_string(),
                "event": f.receive.1,
                "wanted": f.wanted,
                "held": f.held.iter().map(|(a, k)| format!("{a}:{k}")).collect::<Vec<_>>(),
                "flipped": f.flipped,
                "recording": f.record.dir.to_string_lossy(),
                "exit_code": f.record.exit_code,
                "root_status": json::status(f.record.root_status),
                "failed": f.failed,
                "fail_if": f.fail_if_held,
                "notes": f.notes,
                "replay": replay_command(f),
            })
        })
        .collect();
    let skipped: Vec<Value> = outcome
        .skipped
        .iter()
        .map(|(race, why)| json!({"race": race, "why": why}))
        .collect();
    let failing: Vec<String> = outcome
        .flips
        .iter()
        .filter(|f| f.failed)
        .map(Flip::name)
        .collect();
    json!({
        "command": "explore",
        "recording": args.dir.to_string_lossy(),
        "dir": outcome.dir.to_string_lossy(),
        "flips": flips,
        "skipped": skipped,
        "failing": failing,
    })
}
