//! `ddbx ps`: one row per actor of a recording.
//!
//! `--json` prints one object on stdout:
//!
//! ```text
//! {"recording": "ddbx-run-1", "state": "Complete" | "Recording" | "Interrupted",
//!  "problem": null | "…",
//!  "actors": [{"id": "p1", "parent": "p0", "origin": "Root", "pid": 20001, "host": "h",
//!              "argv": ["./server"], "exit": "exit 0" | "signal 9" | null,
//!              "status": "exit 0" | "running?" | "killed" | "unrecorded", "events": 12,
//!              "truncated": false,
//!              "command": ["./server", "8080"],
//!              "threads": [{"id": "p1.t2", "creator": "p1.t1", "lock_accesses": 40,
//!                           "ended": true, "joined_by": "p1.t1"}]}]}
//! ```
//!
//! `argv` is the actor's first program image; `command` the one it ended up running (after
//! its last exec), which is what the table's COMMAND column shows.

use super::json;
use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::wire::History;
use ddbx_supervisor::wire::history::Record;
use ddbx_supervisor::wire::manifest::{ActorInfo, SessionState};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Examples:
  ddbx ps ddbx-run-1
  ddbx ps --json ddbx-run-1 | jq '.actors[].id'

Columns: actor id, parent actor, pid in the record, events recorded, how it ended
(\"exit N\", \"signal N\", \"unrecorded\" when an image it exec'd never joined the session,
\"killed\" when it ended without ddbx learning how, \"running?\" when the recording was still
going), host, command. Under a process that made threads, one row per thread (p1.t1 is
its main thread): the thread that created it, its accesses to lock objects, and whether it
ended or was joined (by which thread).

--json prints {\"recording\", \"state\", \"problem\", \"actors\": [{\"id\", \"parent\",
\"origin\", \"pid\", \"host\", \"argv\", \"exit\", \"status\", \"events\", \"truncated\", \"command\", \"threads\": [{\"id\", \"creator\", \"lock_accesses\",
\"ended\", \"joined_by\"}]}]}.";

/// Arguments of `ddbx ps`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// The recording directory [default: the latest recording made from this directory].
    #[arg(value_name = "DIR")]
    pub given_dir: Option<PathBuf>,
    /// The recording directory: DIR, or the latest one (filled in before `run`).
    #[arg(skip)]
    pub dir: PathBuf,
}

/// How an actor ended, in words: `exit 0`, `signal 9`, `unrecorded`, `killed`, `running?`.
pub fn status_word(recording: &Recording, info: &ActorInfo, history: Option<&History>) -> String {
    if info.unrecorded.is_some() {
        return "unrecorded".into();
    }
    if let Some(status) = info.exit {
        return status.to_string();
    }
    if let Some(Record::Exit { status }) = history.and_then(|h| h.records.last()) {
        return format!("exit {status}");
    }
    if recording.manifest.state == SessionState::Recording {
        "running?".into()
    } else {
        "killed".into()
    }
}

/// The threads of `info`'s process as table rows (none: it made no thread).
fn thread_rows(recording: &Recording, info: &ActorInfo) -> Vec<[String; 7]> {
    super::objects::threads(recording, info.id)
        .into_iter()
        .map(|t| {
            [
                format!("  {}.t{}", info.id, t.info.id),
                t.info
                    .creator
                    .map_or_else(String::new, |c| format!("{}.t{c}", info.id)),
                String::new(),
                format!("{} locks", t.accesses),
                t.end(),
                String::new(),
                "(thread)".into(),
            ]
        })
        .collect()
}

/// The threads of `info`'s process for `--json`.
fn threads_json(recording: &Recording, info: &ActorInfo) -> serde_json::Value {
    let name = |t: u32| format!("{}.t{t}", info.id);
    super::objects::threads(recording, info.id)
        .iter()
        .map(|t| {
            serde_json::json!({
                "id": name(t.info.id),
                "creator": t.info.creator.map(name),
                "lock_accesses": t.accesses,
                "ended": t.info.exited,
                "joined_by": t.info.joined_by.map(name),
            })
        })
        .collect::<Vec<_>>()
        .into()
}

/// Runs `ddbx ps`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    let recording = Recording::open(&args.dir)?;
    let rows: Vec<(&ActorInfo, Option<&History>)> = recording
        .manifest
        .actors
        .iter()
        .map(|a| (a, recording.history(a.id)))
        .collect();
    if args.json {
        let actors: Vec<serde_json::Value> = rows
            .iter()
            .map(|(info, history)| {
                let mut value = json::actor(info);
                value["status"] = status_word(&recording, info, *history).into();
                value["events"] = history.map_or(0, |h| h.records.len()).into();
                value["command"] = recording.command(info.id).into();
                value["truncated"] = history.is_some_and(|h| h.truncated).into();
                value["threads"] = threads_json(&recording, info);
                value
            })
            .collect();
        let value = serde_json::json!({
            "recording": args.dir.display().to_string(),
            "state": format!("{:?}", recording.manifest.state),
            "problem": recording.manifest.problem,
            "actors": actors,
        });
        println!("{value}");
        return Ok(0);
    }
    let mut table = vec![[
        "ACTOR".to_string(),
        "PARENT".into(),
        "PID".into(),
        "EVENTS".into(),
        "EXIT".into(),
        "HOST".into(),
        "COMMAND".into(),
    ]];
    for (info, history) in &rows {
        table.push([
            info.id.to_string(),
            info.origin.parent().to_string(),
            info.pid.to_string(),
            history.map_or(0, |h| h.records.len()).to_string(),
            status_word(&recording, info, *history),
            info.host.clone(),
            recording.command(info.id).join(" "),
        ]);
        table.extend(thread_rows(&recording, info));
    }
    let widths: Vec<usize> = (0..7)
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        println!("{}", line.trim_end());
    }
    if let Some(problem) = &recording.manifest.problem {
        println!("({:?}: {problem})", recording.manifest.state);
    } else if recording.manifest.state == ddbx_supervisor::wire::manifest::SessionState::Recording {
        println!(
            "(Recording: ddbx stopped before the end of the record; the histories hold what happened until then)"
        );
    }
    Ok(0)
}
