//! `ddbx inf`: Inf(P) computed offline from a recording, without running anything: the least
//! consistent global state where the predicate holds, as `ddbx replay --stop-if` halts at it.
//!
//! `--json` prints one object on stdout:
//!
//! ```text
//! {"predicate": "client_a.x == 1 && p8.x == 1", "holds": true,
//!  "cut": {"p1": 7, "p2": 3, …}}          (events executed per actor; 0: not created)
//! ```
//!
//! The cut is counted exactly as `--stop-at pN:K` counts and as the halted replay's `cut`, so
//! the two can be compared by any script. They agree on every actor a replay can hold (every
//! recorded one: a process with no socket or probe event, a shell's helper, is held at its
//! forks, execs and exit).

use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::deps::Deps;
use ddbx_supervisor::analysis::inf::inf_online;
use ddbx_supervisor::analysis::vars::variables_at;
use ddbx_supervisor::wire::pred::{self, Value};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Examples:
  ddbx inf ddbx-run-1 'x1==1 && x4==1'
  ddbx inf ddbx-run-1 'p3.recvs >= 2' --json
  ddbx inf ddbx-run-1 --stop-at p3:17

Variables: probes the program published (ddbx_set) and the built-in counters
(events, recvs, sends, accepts, forks, alive); see `ddbx help predicates`. Memory
variables are only available to a live replay.

Exit code: 0 when P holds somewhere in the recording, 1 when it never does;
2 usage (a malformed predicate is shown with a caret under the column), 102 bad
recording.";

/// Arguments of `ddbx inf`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP, override_usage = "ddbx inf [OPTIONS] [DIR] [P]")]
pub struct Args {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// A stop point ACTOR:EVENT, joined to the predicate.
    #[arg(long = "stop-at", value_name = "ACTOR:EVENT")]
    pub stop_at: Vec<String>,
    /// The recording directory [default: the latest recording made from this directory;
    /// with one argument that is not a recording directory, that argument is P].
    #[arg(value_name = "DIR")]
    pub given_dir: Option<String>,
    /// The predicate (a conjunction of conditions that each involve one process).
    #[arg(value_name = "P")]
    pub given_predicate: Option<String>,
    /// The recording directory: DIR, or the latest one (filled in before `run`).
    #[arg(skip)]
    pub dir: PathBuf,
    /// The predicate (filled in before `run`).
    #[arg(skip)]
    pub predicate: Option<String>,
}

/// Runs `ddbx inf`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    let recording = Recording::open(&args.dir)?;
    let stop_if: Vec<String> = args.predicate.iter().cloned().collect();
    let Some(request) = crate::halt::request(&recording, &stop_if, &args.stop_at)? else {
        return Err(Error::Usage(
            "expected a predicate such as 'x1==1 && x4==1', or --stop-at ACTOR:EVENT".into(),
        ));
    };
    let deps = Deps::from_recording(&recording);
    let actors: Vec<_> = request.primary.iter().map(|(a, _)| *a).collect();
    let holds = |actor, k: u64| {
        let Some((_, sp)) = request.primary.iter().find(|(a, _)| *a == actor) else {
            return true;
        };
        let Some(history) = recording.history(actor) else {
            return false;
        };
        if k == 0 {
            return false; // not created yet: none of its variables is set
        }
        let vars = variables_at(history, k);
        pred::holds(sp, &mut |v| vars.get(&v.name).map(|n| Value::Int(*n)))
    };
    let cut = inf_online(&deps, &actors, &holds);
    if args.json {
        let cut_json: serde_json::Map<String, serde_json::Value> = cut
            .iter()
            .flatten()
            .map(|(a, k)| (a.to_string(), (*k).into()))
            .collect();
        let value = serde_json::json!({
            "predicate": request.text,
            "holds": cut.is_some(),
            "cut": if cut.is_some() { serde_json::Value::Object(cut_json) } else { serde_json::Value::Null },
        });
        println!("{value}");
    } else {
        match &cut {
            Some(cut) => {
                println!(
                    "Inf({}): the first global state where it holds",
                    request.text
                );
                for (actor, events) in cut {
                    let history = recording.history(*actor);
                    let next = history
                        .and_then(|h| h.records.get(*events as usize))
                        .map(|r| format!("   next: {r}"))
                        .unwrap_or_default();
                    println!("  {actor}: {events} events{next}");
                }
            }
            None => println!("`{}` never holds in this recording", request.text),
        }
    }
    Ok(if cut.is_some() {
        0
    } else {
        crate::exit::NOT_FOUND
    })
}
