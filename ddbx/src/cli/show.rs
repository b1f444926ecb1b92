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
use ddbx_supervisor::analysis::channels::{Channel, channel_at, match_channels};
use ddbx_supervisor::analysis::deps::{Event, datagram_senders};
use ddbx_supervisor::wire::History;
use ddbx_supervisor::wire::history::Record;
use ddbx_supervisor::wire::manifest::ActorInfo;
use std::collections::HashMap;
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Examples:
  ddbx show ddbx-run-1 p3
  ddbx show ddbx-run-1 server_x        (a program name that only one actor ran)
  ddbx show --json ddbx-run-1 p1
  ddbx show ddbx-run-1 --obj 1         (lock object 1 of the process that made threads)

ACTOR is an id such as p3, or the basename of argv[0] of any of an actor's program
images, when only one actor ran it. Connects and accepts show their peer
(→ / ← actor and event, and the channel number), a received UDP datagram its send
(← actor and event; none for one from outside the session); fork and spawn show the child.

--obj N lists one lock object's accesses in order (index, thread, operation): object 0
is the process's thread table (create, exit, join), objects 1, 2, ... its mutexes and
condition variables in the order they were first touched.

--json prints {\"actor\", \"parent\", \"origin\", \"pid\", \"host\", \"argv\", \"exit\",
\"truncated\", \"events\": [{\"n\", \"kind\", \"record\", \"peer\": null|{\"actor\",
\"event\", \"channel\"}, \"child\": null|\"pN\"}]}.";

/// Arguments of `ddbx show` (`--json` and DIR are declared as in `ps`: each subcommand's
/// file lists all of its arguments, in the order its help shows them).
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP, override_usage = "ddbx show [OPTIONS] [DIR] ACTOR")]
pub struct Args {
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// The recording directory [default: the latest recording made from this directory].
    #[arg(value_name = "DIR")]
    pub given_dir: Option<String>,
    /// The actor: `p3`, or a unique program name (with one argument, that argument is ACTOR).
    #[arg(value_name = "ACTOR")]
    pub given_actor: Option<String>,
    /// One lock object's history instead (`0`: the thread table; `3` or `o3`): of ACTOR, or of
    /// the only actor that made threads.
    #[arg(long, value_name = "N")]
    pub obj: Option<String>,
    /// The recording directory: DIR, or the latest one (filled in before `run`).
    #[arg(skip)]
    pub dir: PathBuf,
    /// The actor (filled in before `run`: with one positional, it is the actor; empty with
    /// `--obj` and no actor).
    #[arg(skip)]
    pub actor: String,
}

/// One event of the listing.
struct Line {
    n: u64,
    record: Record,
    /// The other end of the connection a connect or accept made.
    peer: Option<Peer>,
    /// The actor a fork or spawn created.
    child: Option<String>,
    /// A connection to a peer outside the session.
    outside: Option<OutsidePeer>,
}

/// The other end of a connection inside the session, or the send of a received datagram.
struct Peer {
    /// `→` for a connect, `←` for an accept or a datagram.
    arrow: &'static str,
    actor: String,
    event: u64,
    /// `None`: a datagram (no channel).
    channel: Option<u32>,
}

/// A connection to a peer outside the session: its address, and the bytes exchanged.
struct OutsidePeer {
    address: String,
    bytes_in: u64,
    bytes_out: u64,
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
    if let Some(spec) = &args.obj {
        let actor = (!args.actor.is_empty()).then_some(args.actor.as_str());
        return super::objects::show(&recording, actor, spec, args.json);
    }
    let id = recording.find_actor(&args.actor).map_err(Error::Usage)?;
    let info = recording
        .actor(id)
        .ok_or_else(|| Error::Usage(format!("no actor {id} in this recording")))?;
    let history = recording
        .history(id)
        .ok_or_else(|| Error::BadRecording(format!("no history for {id}")))?;
    let channels = match_channels(&recording.histories);
    let senders = datagram_senders(&recording.histories);
    let lines: Vec<Line> = history
        .records
        .iter()
        .enumerate()
        .map(|(i, record)| {
            line(
                &recording,
                (&channels, &senders),
                history,
                i as u64 + 1,
                record,
            )
        })
        .collect();
    if args.json {
        println!("{}", listing_json(info, history, &lines));
    } else {
        println!(
            "{id}  {}  (parent {}, pid {}, host {})",
            recording.command(id).join(" "),
            info.origin.parent(),
            info.pid,
            info.host
        );
        print_lines(&lines, history);
        if history.truncated {
            println!("(the history ends inside a record: the process was killed while writing it)");
        }
        let added = recording.sketch(id).map_or(0, |s| s.unlogged.len());
        if added > 0 {
            println!(
                "(the last {added} event(s) are not in the history file: the process was killed \
                 before their record, and its peers' histories show them)"
            );
        }
    }
    Ok(0)
}

/// Event `n` of `history`, with what it connects to (`channels`) or which send it received
/// (`senders`, for a datagram).
fn line(
    recording: &Recording,
    (channels, senders): (&[Channel], &HashMap<Event, Event>),
    history: &History,
    n: u64,
    record: &Record,
) -> Line {
    let id = history.actor;
    let peer = match record {
        Record::RecvDatagram { .. } => senders.get(&(id, n)).map(|&(actor, event)| Peer {
            arrow: "←",
            actor: actor.to_string(),
            event,
            channel: None,
        }),
        Record::Connect { .. } | Record::Accept { .. } => channel_at(channels, id, n).map(|c| {
            if c.connector.actor == id && c.connector.event == n {
                Peer {
                    arrow: "→",
                    actor: c.acceptor.actor.to_string(),
                    event: c.acceptor.event,
                    channel: Some(c.id),
                }
            } else {
                Peer {
                    arrow: "←",
                    actor: c.connector.actor.to_string(),
                    event: c.connector.event,
                    channel: Some(c.id),
                }
            }
        }),
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
            Some(OutsidePeer {
                address: remote.clone(),
                bytes_in,
                bytes_out,
            })
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
}

/// The JSON output (see the module doc).
fn listing_json(info: &ActorInfo, history: &History, lines: &[Line]) -> serde_json::Value {
    let threads = history.threads();
    let events: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| {
            serde_json::json!({
                "n": l.n,
                "thread": threads.get(l.n as usize - 1).map(|t| format!("{}.t{t}", info.id)),
                "kind": l.record.kind(),
                "record": l.record.to_line(),
                "peer": l.peer.as_ref().map(|p| serde_json::json!({
                    "actor": p.actor, "event": p.event, "channel": p.channel,
                })),
                "child": l.child,
                "outside_peer": l.outside.as_ref().map(|o| serde_json::json!({
                    "address": o.address, "bytes_in": o.bytes_in, "bytes_out": o.bytes_out,
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
    value
}

/// The text output's events, one line each.
fn print_lines(lines: &[Line], history: &History) {
    let width = lines.len().to_string().len().max(3);
    if let Some(v) = values_after(history, 0) {
        println!("{:>width$}  {v}", "");
    }
    // A process with threads: each event says which thread made it.
    let threads = history.threads();
    for l in lines {
        let mut text = match threads.get(l.n as usize - 1) {
            Some(t) => format!("{:>width$}  t{t:<3} {}", l.n, l.record),
            None => format!("{:>width$}  {}", l.n, l.record),
        };
        if let Some(p) = &l.peer {
            let via = p
                .channel
                .map_or_else(|| "datagram".to_string(), |c| format!("channel {c}"));
            text.push_str(&format!(
                "  {} {} event {} ({via})",
                p.arrow, p.actor, p.event
            ));
        }
        if let Some(child) = &l.child {
            text.push_str(&format!("  → {child}"));
        }
        if let Some(o) = &l.outside {
            text.push_str(&format!(
                "  ⇄ outside peer {} ({} bytes in, {} out; replay plays it)",
                o.address, o.bytes_in, o.bytes_out
            ));
        }
        println!("{text}");
        if let Some(v) = values_after(history, l.n) {
            println!("{:>width$}  {v}", "");
        }
    }
}

/// The values (clock reads, random bytes: not events) the program got after event `n`, in one
/// line: `· values: monotonic ×3 (+1.204 ms), random ×1 (16 bytes)`.
fn values_after(history: &History, n: u64) -> Option<String> {
    use ddbx_supervisor::wire::history::value::{Value, ValueKey, key_name};
    let start = history.values.partition_point(|(after, _)| *after < n);
    let gap: Vec<&Value> = history.values[start..]
        .iter()
        .take_while(|(after, _)| *after == n)
        .map(|(_, v)| v)
        // Whose events (shown on the event lines) and whose values follow.
        .filter(|v| !matches!(v.key(), ValueKey::Thread | ValueKey::ValuesOf))
        .collect();
    if gap.is_empty() {
        return None;
    }
    let mut keys: Vec<ValueKey> = Vec::new();
    for v in &gap {
        if !keys.contains(&v.key()) {
            keys.push(v.key());
        }
    }
    let parts: Vec<String> = keys
        .iter()
        .map(|k| {
            let of: Vec<&&Value> = gap.iter().filter(|v| v.key() == *k).collect();
            let span = match k {
                ValueKey::Random => {
                    let bytes: usize = of
                        .iter()
                        .map(|v| match v {
                            Value::Random { bytes } => bytes.len(),
                            _ => 0,
                        })
                        .sum();
                    format!("{bytes} bytes")
                }
                ValueKey::Reaped => {
                    let kids: Vec<String> = of.iter().map(|v| v.number().to_string()).collect();
                    return format!("non-blocking waits: {}", kids.join(", "));
                }
                ValueKey::Signal => {
                    let sigs: Vec<String> = of.iter().map(|v| v.number().to_string()).collect();
                    return format!("signal {}", sigs.join(", "));
                }
                ValueKey::Appended => {
                    let turns: Vec<String> = of.iter().map(|v| v.number().to_string()).collect();
                    return format!("shared-file write turns: {}", turns.join(", "));
                }
                ValueKey::ReadAfter => {
                    let counts: Vec<String> = of.iter().map(|v| v.number().to_string()).collect();
                    return format!("shared-file reads after writes: {}", counts.join(", "));
                }
                _ if of.len() == 1 => return format!("{} ×1", key_name(*k)),
                _ => {
                    let (first, last) = (of[0].number(), of[of.len() - 1].number());
                    let unit = match k {
                        ValueKey::Clock(_) => 1_000_000.0,
                        ValueKey::TimeOfDay => 1_000.0,
                        _ => 0.001,
                    };
                    format!("over {:.3} ms", (last - first) as f64 / unit)
                }
            };
            format!("{} ×{} ({span})", key_name(*k), of.len())
        })
        .collect();
    Some(format!("· values: {}", parts.join(", ")))
}
