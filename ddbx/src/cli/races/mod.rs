//! `ddbx races`: every message race of a recording, computed offline (paper 004; definitions in
//! [`ddbx_supervisor::analysis::races`]).
//!
//! Text output: one block per race — the receive (actor, event, record), the message(s) it
//! got, the messages it could have got, its flags (locally-first, unaffected / affected by
//! which races), and the `ddbx replay DIR --stop-at pN:K` command that halts every process
//! right before that receive (K = its event number − 1) — then a summary with the abstract
//! affects graph (groups of mutually affecting actors).
//!
//! `--json` prints one object on stdout:
//!
//! ```text
//! {"recording": "DIR", "actors": 13, "events": 70,
//!  "races": [{"id": 1, "actor": "p4", "event": 3, "kind": "accept" | "ready",
//!             "record": "Accept(fd: 3, …)",
//!             "got":   [<message>, …],          (a ready set can report several)
//!             "could": [<message>, …],          (the other messages it could have got)
//!             "locally_first": true, "unaffected": true,
//!             "affected_by": [race ids], "affects": [race ids],
//!             "stop_at": "p4:2", "replay": "ddbx replay DIR --stop-at p4:2"}, …],
//!  "locally_first": [race ids], "unaffected": [race ids],
//!  "actor_edges": [["p4", "p5"], …],           (a race of the first affects one of the second)
//!  "components": [{"actors": ["p4"], "affects": [component indexes], "has_race": true}, …],
//!  "diagnostics": ["shared_send_end: …", …]}   (where the byte numbering is a guess)
//! ```
//!
//! where `<message>` is `{"kind": "send" | "connect" | "datagram" | "external", "actor": "p9" | null,
//! "event": 4 | null, "channel": 3 | null, "bytes": [0, 33] | null, "received_by": {"actor":
//! "p5", "event": 8} | null}` (`event`: the Send, Connect or SendDatagram; `received_by`: the
//! receive that consumed its last byte, the accept of a connect, or the receive that got a
//! datagram; null: never received).
//!
//! `--method two-pass` (`two_pass.rs`) runs Park & Jun's two-pass method instead
//! ([`ddbx_supervisor::analysis::twopass`]): text output starts with pass 1's cutoffs (each
//! actor's locally-first race receive and first channel), then one block per locally-first
//! race with the actors whose first race affects it; `--json` adds `"method": "two-pass"`,
//! `"cutoffs": [{"actor", "event", "first_channel"}]`, and per race `"affecters": [actors]`
//! and `"first_channel"`; its race ids number the locally-first races only.

mod two_pass;

use crate::cli::progress::Steps;
use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::clock::Clocks;
use ddbx_supervisor::analysis::deps::{Deps, Event};
use ddbx_supervisor::analysis::races::{Component, Message, Race, RaceKind, Races, find_races};
use ddbx_supervisor::wire::ActorId;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const AFTER_HELP: &str = "\
Examples:
  ddbx races ddbx-run-1
  ddbx races ddbx-run-1 --json | jq '.races[] | select(.unaffected) | .replay'

A race <r, M> is a receive-from-any r (a select/poll/epoll ready set, an accept, or a
receive on a UDP socket) and the set M of messages (sends, connects for an accept,
datagrams for a UDP receive) that could have been its outcome: those on the other
channels it watched (the other connects to its listening address, the other datagrams sent
to its socket) that were not consumed before r and not sent after r (vector clocks).
The watched set of a select is not recorded: ddbx takes the channels the actor receives
from at some point and the sockets it accepts on.

Flags: locally-first (the actor's first race); unaffected (no other race affects it: it
occurs in every run with this input; debug these first). A race affects every race whose
receive happens after its receive, and every race some of whose messages were sent after
it. Each block ends with the replay command that halts every process right before the
race's receive.

--json prints {\"recording\", \"actors\", \"events\", \"races\": [{\"id\", \"actor\", \"event\",
\"kind\", \"record\", \"got\", \"could\", \"locally_first\", \"unaffected\", \"affected_by\",
\"affects\", \"stop_at\", \"replay\"}], \"locally_first\", \"unaffected\", \"actor_edges\",
\"components\", \"diagnostics\"}; a message is {\"kind\", \"actor\", \"event\", \"channel\",
\"bytes\", \"received_by\"}.

--method two-pass runs Park & Jun's two-pass method instead: pass 1 finds each actor's
cutoff (its locally-first race receive) from the recording's vector clocks; pass 2 is a
simulated replay of the recording in which every message carries its sender's Affecter set.
It lists only the locally-first races, each with the actors whose first race affects it;
it must agree with the exact method on those (the test suite checks that it does).
--json then prints {\"method\": \"two-pass\", \"recording\", \"actors\", \"events\",
\"cutoffs\": [{\"actor\", \"event\", \"first_channel\"}], \"races\": [{\"id\", \"actor\",
\"event\", \"kind\", \"record\", \"got\", \"could\", \"locally_first\", \"unaffected\",
\"affecters\", \"affected_by\", \"affects\", \"first_channel\", \"stop_at\", \"replay\"}],
\"locally_first\", \"unaffected\", \"actor_edges\", \"components\", \"diagnostics\"}.

Exit code: 0; 102 when the recording is missing, corrupt or inconsistent.";

/// Arguments of `ddbx races`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// How to find the races: `exact` (every race, from vector clocks) or `two-pass` (Park &
    /// Jun's method: only each actor's locally-first race, with its affecters).
    #[arg(long, value_enum, default_value_t = Method::Exact)]
    pub method: Method,
    /// The recording directory [default: the latest recording made from this directory].
    #[arg(value_name = "DIR")]
    pub given_dir: Option<PathBuf>,
    /// The recording directory: DIR, or the latest one (filled in before `run`).
    #[arg(skip)]
    pub dir: PathBuf,
}

/// Which race analysis `ddbx races` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    /// Every race, computed exactly offline from vector clocks.
    Exact,
    /// Park & Jun's two-pass method: the locally-first races and their affecters.
    TwoPass,
}

/// A recording with its dependencies, clocks and races.
pub(crate) struct Analysis {
    pub recording: Recording,
    pub deps: Deps,
    pub clocks: Clocks,
    pub races: Races,
}

/// A recording with its dependencies and clocks, before any race analysis.
struct Loaded {
    recording: Recording,
    deps: Deps,
    clocks: Clocks,
}

/// Loads `dir` and computes its races; an inconsistent recording is a bad recording.
pub(crate) fn analyze(dir: &Path, steps: &Steps) -> Result<Analysis, Error> {
    let Loaded {
        recording,
        deps,
        clocks,
    } = analyze_loaded(dir, steps)?;
    steps.step(format!(
        "finding the races among {} events",
        recording.event_count()
    ));
    let races = find_races(&recording, &deps, &clocks);
    Ok(Analysis {
        recording,
        deps,
        clocks,
        races,
    })
}

/// Loads `dir` and orders its events; an inconsistent recording is a bad recording.
fn analyze_loaded(dir: &Path, steps: &Steps) -> Result<Loaded, Error> {
    steps.step("loading the recording");
    let recording = Recording::open(dir)?;
    steps.step(format!(
        "ordering {} events of {} actors (vector clocks)",
        recording.event_count(),
        recording.histories.len()
    ));
    let deps = Deps::from_recording(&recording);
    let clocks = Clocks::compute(&deps).map_err(|e| {
        Error::BadRecording(format!(
            "{}: cannot order the events: {e}",
            recording.dir.display()
        ))
    })?;
    Ok(Loaded {
        recording,
        deps,
        clocks,
    })
}

/// A word for the shell: itself, or single-quoted.
pub(crate) fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-:+@%,=".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `ddbx replay DIR --stop-at pN:K` for a race (`stop_at`: its `pN:K`).
pub(crate) fn replay_command(dir: &Path, stop_at: &str) -> String {
    format!(
        "ddbx replay {} --stop-at {stop_at}",
        shell_word(&dir.to_string_lossy()),
    )
}

/// `p5 (client_a)`: an actor with the program names it is known by.
pub(crate) fn actor_label(rec: &Recording, a: ActorId) -> String {
    let names = rec.program_names(a);
    if names.is_empty() {
        a.to_string()
    } else {
        format!("{a} ({})", names.join(", "))
    }
}

/// The history record of an event, as text.
pub(crate) fn record_text(rec: &Recording, e: Event) -> String {
    rec.history(e.0)
        .and_then(|h| h.records.get((e.1 as usize).checked_sub(1)?))
        .map(|r| r.to_string())
        .unwrap_or_default()
}

/// A message as JSON (see the module docs).
fn message_json(m: &Message) -> Value {
    json!({
        "kind": m.kind.as_str(),
        "actor": m.event.map(|e| e.0.to_string()),
        "event": m.event.map(|e| e.1),
        "channel": m.channel,
        "bytes": m.bytes.map(|b| vec![b.start, b.end]),
        "received_by": m.received_by.map(|e| json!({"actor": e.0.to_string(), "event": e.1})),
    })
}

/// A race as the text and JSON outputs show it, whichever method found it.
struct Shown<'a> {
    id: usize,
    receive: Event,
    kind: RaceKind,
    got: &'a [Message],
    could: &'a [Message],
    locally_first: bool,
    unaffected: bool,
    /// The ids of the races that affect it, and of those it affects.
    affected_by: Vec<usize>,
    affects: Vec<usize>,
    /// Its `pN:K` (the replay halts right before the receive).
    stop_at: String,
}

impl Shown<'_> {
    /// An exact race.
    fn exact(r: &Race) -> Shown<'_> {
        Shown {
            id: r.id,
            receive: r.receive,
            kind: r.kind,
            got: &r.got,
            could: &r.could,
            locally_first: r.locally_first,
            unaffected: r.unaffected(),
            affected_by: r.affected_by.clone(),
            affects: r.affects.clone(),
            stop_at: r.stop_at(),
        }
    }

    /// As JSON (see the module docs).
    fn json(&self, rec: &Recording, dir: &Path) -> Value {
        json!({
            "id": self.id,
            "actor": self.receive.0.to_string(),
            "event": self.receive.1,
            "kind": self.kind.as_str(),
            "record": record_text(rec, self.receive),
            "got": self.got.iter().map(message_json).collect::<Vec<_>>(),
            "could": self.could.iter().map(message_json).collect::<Vec<_>>(),
            "locally_first": self.locally_first,
            "unaffected": self.unaffected,
            "affected_by": self.affected_by,
            "affects": self.affects,
            "stop_at": self.stop_at,
            "replay": replay_command(dir, &self.stop_at),
        })
    }

    /// As a text block (no trailing newline) with these flags; `no_data` says so when it got
    /// nothing.
    fn text(&self, rec: &Recording, dir: &Path, flags: &str, no_data: bool) -> String {
        let mut s = format!(
            "race {}: {} event {}: {}\n",
            self.id,
            actor_label(rec, self.receive.0),
            self.receive.1,
            record_text(rec, self.receive)
        );
        message_lines(&mut s, "got:", self.got);
        if no_data && self.got.is_empty() {
            s.push_str(
                "  got:          no data (end of stream, or a channel ddbx does not follow)\n",
            );
        }
        message_lines(&mut s, "could get:", self.could);
        s.push_str(&format!("  {:<14}{flags}\n", "flags:"));
        if !self.affects.is_empty() {
            s.push_str(&format!(
                "  {:<14}{}\n",
                "affects:",
                race_list(&self.affects)
            ));
        }
        s.push_str(&format!(
            "  {:<14}{}",
            "replay:",
            replay_command(dir, &self.stop_at)
        ));
        s
    }
}

/// How many race ids a text list shows before `… (N races)`.
const SHOWN: usize = 8;

/// `race 2, race 5`, or `race 1, race 2, …, race 8, … (2398 races)` for a long list.
fn race_list(ids: &[usize]) -> String {
    let mut s = ids
        .iter()
        .take(SHOWN)
        .map(|i| format!("race {i}"))
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(", … ({} races)", ids.len()));
    }
    s
}

/// One race as a text block (no trailing newline).
pub(crate) fn race_text(rec: &Recording, dir: &Path, r: &Race) -> String {
    let mut flags = Vec::new();
    if r.locally_first {
        flags.push("locally-first".to_string());
    }
    if r.unaffected() {
        flags.push("unaffected".to_string());
    } else {
        flags.push(format!("affected by {}", race_list(&r.affected_by)));
    }
    Shown::exact(r).text(rec, dir, &flags.join(", "), true)
}

/// The groups of the abstract affects graph as text: `{p4} → {p5}`.
pub(crate) fn components_text(races: &Races) -> Vec<String> {
    let name = |i: usize| -> String {
        let c = &races.components[i];
        format!(
            "{{{}}}",
            c.actors
                .iter()
                .map(ActorId::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    (0..races.components.len())
        .map(|i| {
            let c = &races.components[i];
            if c.affects.is_empty() {
                name(i)
            } else {
                format!(
                    "{} → {}",
                    name(i),
                    c.affects
                        .iter()
                        .map(|j| name(*j))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        })
        .collect()
}

/// Runs `ddbx races`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    if args.method == Method::TwoPass {
        return two_pass::run(&args);
    }
    let steps = Steps::new("races", super::progress::wanted(args.json));
    let an = analyze(&args.dir, &steps)?;
    drop(steps);
    let (rec, races) = (&an.recording, &an.races);
    let ids = |f: &dyn Fn(&Race) -> bool| -> Vec<usize> {
        races.races.iter().filter(|r| f(r)).map(|r| r.id).collect()
    };
    let locally_first = ids(&|r| r.locally_first);
    let unaffected = ids(&|r| r.unaffected());
    if args.json {
        let found = Found {
            races: races
                .races
                .iter()
                .map(|r| Shown::exact(r).json(rec, &args.dir))
                .collect(),
            locally_first: &locally_first,
            unaffected: &unaffected,
            actor_edges: &races.actor_edges,
            components: &races.components,
        };
        println!("{}", found.json(rec, &an.deps, &args.dir));
        return Ok(0);
    }
    for r in &races.races {
        crate::term::println(&crate::term::paint_race(&race_text(rec, &args.dir, r)));
        println!();
    }
    println!(
        "{} race{} in {} actors, {} events: {} locally-first ({}), {} unaffected ({})",
        races.races.len(),
        plural(races.races.len()),
        rec.histories.len(),
        rec.event_count(),
        locally_first.len(),
        race_list(&locally_first),
        unaffected.len(),
        race_list(&unaffected),
    );
    if !races.components.is_empty() {
        println!(
            "actors affecting each other (abstract affects view): {}",
            components_text(races).join("; ")
        );
    }
    print_notes(&an.deps);
    Ok(0)
}

/// What a method found, as its JSON output shows it.
struct Found<'a> {
    /// Each race as JSON.
    races: Vec<Value>,
    /// The ids of the locally-first and of the unaffected races.
    locally_first: &'a [usize],
    unaffected: &'a [usize],
    /// The abstract affects graph: actor-level edges, and its components.
    actor_edges: &'a [(ActorId, ActorId)],
    components: &'a [Component],
}

impl Found<'_> {
    /// The JSON object (see the module docs), for the recording in `dir`.
    fn json(self, rec: &Recording, deps: &Deps, dir: &Path) -> Value {
        json!({
            "recording": dir.to_string_lossy(),
            "actors": rec.histories.len(),
            "events": rec.event_count(),
            "races": self.races,
            "locally_first": self.locally_first,
            "unaffected": self.unaffected,
            "actor_edges": edges_json(self.actor_edges),
            "components": components_json(self.components),
            "diagnostics": deps.diagnostics(),
        })
    }
}

/// `s` after a count other than 1.
fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Where the byte numbering of the recording is a guess, one `note:` line each.
fn print_notes(deps: &Deps) {
    for d in deps.diagnostics() {
        println!("note: {d}");
    }
}

/// The actor-level affects edges `q → p`, as `[["p1", "p2"], …]`.
fn edges_json(edges: &[(ActorId, ActorId)]) -> Value {
    edges
        .iter()
        .map(|(q, p)| json!([q.to_string(), p.to_string()]))
        .collect()
}

/// The abstract affects view's components (mutually affecting actors).
fn components_json(components: &[Component]) -> Value {
    components
        .iter()
        .map(|c| {
            json!({
                "actors": c.actors.iter().map(ActorId::to_string).collect::<Vec<_>>(),
                "affects": c.affects,
                "has_race": c.has_race,
            })
        })
        .collect()
}

/// One line per message, the first labelled `label`.
fn message_lines(s: &mut String, label: &str, messages: &[Message]) {
    for (i, m) in messages.iter().enumerate() {
        let head = if i == 0 { label } else { "" };
        s.push_str(&format!("  {head:<14}{}\n", m.describe()));
    }
}
