//! `ddbx show`: one actor's events, numbered, with peers and children resolved.
//!
//! ```text
//! p3  ./server_x arg  (parent p1, pid 20001, host h)
//!    1  Start(pid: 20001, ppid: 20000, origin: Root, argv: ["./server_x"], host: "h")
//!    2  Accept(fd: 3, new_fd: 4, …)  ← p1 event 2 (channel 1)
//!    3  Fork(index: 1)  → p4
//! ```
//!
//! `--json` prints one object on stdout:
//!
//! ```text
//! {"actor": "p3", "parent": "p1", "origin": "Root", "pid": 20001, "host": "h",
//!  "argv": ["./server_x", "arg"], "exit": "exit 0" | null, "truncated": false,
//!  "events": [{"n": 1, "kind": "Start", "record": "Start(…)",
//!              "peer": null | {"actor": "p1", "event": 2, "channel": 1},
//!              "child": null | "p4"}]}
//! ```

use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::channels::{channel_at, match_channels};
use ddbx_supervisor::wire::history::Record;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Examples:
  ddbx show ddbx-run-1 p3
  ddbx show ddbx-run-1 server_x        (a program name that only one actor ran)
  ddbx show --json ddbx-run-1 p1

ACTOR is an id such as p3, or the basename of argv[0] of any of an actor's program
images, when only one actor ran it. Connects and accepts show their peer
(→ / ← actor and event, and the channel number); fork and spawn show the child.

--json prints {\"actor\", \"parent\", \"origin\", \"pid\", \"host\", \"argv\", \"exit\",
\"truncated\", \"events\": [{\"n\", \"kind\", \"record\", \"peer\": null|{\"actor\",
\"event\", \"channel\"}, \"child\": null|\"pN\"}]}.";

/// Arguments of `ddbx show`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// The recording directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The actor: `p3`, or a unique program name.
    #[arg(value_name = "ACTOR")]
    pub actor: String,
}

/// One event of the listing.
struct Line {
    n: u64,
    record: Record,
    /// (arrow, peer actor, peer event, channel id)
    peer: Option<(&'static str, String, u64, u32)>,
    child: Option<String>,
    /// A connection to a peer outside the session: its address, bytes in, bytes out.
    outside: Option<(String, u64, u64)>,
}

/// The bytes received from and sent to an outside peer over the connection that event `n`
/// (an accept or connect) opened: the recorded data on its fd until the fd is reused.
fn outside_bytes(records: &[Record], n: u64, fd: i32) -> (u64, u64) {
    let (mut bytes_in, mut bytes_out) = (0, 0);
    for r in records.iter().skip(n as usize) {
        match r {
            Record::Recv {
                fd: f,
                data: Some(d),
                ..
            } if *f == fd => bytes_in += d.0.len() as u64,
            Record::Send {
                fd: f,
                data: Some(d),
                ..
            } if *f == fd => bytes_out += d.0.len() as u64,
            Record::Accept { new_fd, .. } if *new_fd == fd => break,
            Record::Connect { fd: f, .. } if *f == fd => break,
            _ => {}
        }
    }
    (bytes_in, bytes_out)
}

/// Runs `ddbx show`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    let recording = Recording::open(&args.dir)?;
    let channels = match_channels(&recording.histories);
    let id = recording.find_actor(&args.actor).map_err(Error::Usage)?;
    let info = recording
        .actor(id)
        .ok_or_else(|| Error::Usage(format!("no actor {id} in this recording")))?;
    let history = recording
        .history(id)
        .ok_or_else(|| Error::BadRecording(format!("no history for {id}")))?;
    let lines: Vec<Line> = history
        .records
        .iter()
        .enumerate()
        .map(|(i, record)| {
            let n = i as u64 + 1;
            let peer = match record {
                Record::Connect { .. } | Record::Accept { .. } => {
                    channel_at(&channels, id, n).map(|c| {
                        if c.connector.actor == id && c.connector.event == n {
                            ("→", c.acceptor.actor.to_string(), c.acceptor.event, c.id)
                        } else {
                            ("←", c.connector.actor.to_string(), c.connector.event, c.id)
                        }
                    })
                }
                _ => None,
            };
            let child = match record {
                Record::Fork { index } | Record::Spawn { index } => {
                    recording.child(id, *index).map(|c| c.to_string())
                }
                _ => None,
            };
            let outside = match record {
                Record::Accept {
                    new_fd: fd, remote, ..
                }
                | Record::Connect {
                    fd,
                    remote,
                    err: None,
                    ..
                } if peer.is_none() => {
                    let (bytes_in, bytes_out) = outside_bytes(&history.records, n, *fd);
                    Some((remote.clone(), bytes_in, bytes_out))
                }
                _ => None,
            };
            Line {
                n,
                record: record.clone(),
                peer,
                child,
                outside,
            }
        })
        .collect();

    if args.json {
        let events: Vec<serde_json::Value> = lines
            .iter()
            .map(|l| {
                serde_json::json!({
                    "n": l.n,
                    "kind": l.record.kind(),
                    "record": l.record.to_line(),
                    "peer": l.peer.as_ref().map(|(_, actor, event, channel)| serde_json::json!({
                        "actor": actor, "event": event, "channel": channel,
                    })),
                    "child": l.child,
                    "outside_peer": l.outside.as_ref().map(|(addr, bytes_in, bytes_out)| serde_json::json!({
                        "address": addr, "bytes_in": bytes_in, "bytes_out": bytes_out,
                    })),
                })
            })
            .collect();
        let mut value = super::json::actor(info);
        value["actor"] = value["id"].take();
        if let Some(obj) = value.as_object_mut() {
            obj.remove("id");
        }
        value["truncated"] = history.truncated.into();
        value["events"] = events.into();
        println!("{value}");
        return Ok(0);
    }

    println!(
        "{id}  {}  (parent {}, pid {}, host {})",
        recording.command(id).join(" "),
        info.origin.parent(),
        info.pid,
        info.host
    );
    let width = lines.len().to_string().len().max(3);
    for l in &lines {
        let mut text = format!("{:>width$}  {}", l.n, l.record);
        if let Some((arrow, actor, event, channel)) = &l.peer {
            text.push_str(&format!(
                "  {arrow} {actor} event {event} (channel {channel})"
            ));
        }
        if let Some(child) = &l.child {
            text.push_str(&format!("  → {child}"));
        }
        if let Some((addr, bytes_in, bytes_out)) = &l.outside {
            text.push_str(&format!(
                "  ⇄ outside peer {addr} ({bytes_in} bytes in, {bytes_out} out; replay plays it)"
            ));
        }
        println!("{text}");
    }
    if history.truncated {
        println!("(the history ends inside a record: the process was killed while writing it)");
    }
    Ok(0)
}
