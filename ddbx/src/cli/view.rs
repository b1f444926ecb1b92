//! `ddbx view`: the paper's four views of a recording (paper 004, `../shared/DESIGN.md` §5) in
//! one self-contained HTML file: inline SVG, CSS and JavaScript, nothing fetched from a
//! network, byte-identical for the same recording and arguments.
//!
//! * **Event view**: a space-time diagram. One vertical line per actor (in id order), each
//!   event a dot at the height of its *logical rank* — its depth in the longest path of the
//!   happened-before graph (program order, the needs of [`Deps`], and the arrows drawn), so
//!   every arrow points downward. Arrows: each send to the receive that consumed its last
//!   byte, each connect to its accept, each fork/spawn to the child's start. Race receives
//!   carry a ring.
//! * **First-race view**: the locally-first races only: their receives in red, an arrow from
//!   each message of `M` (solid: what it got; dashed: what it could have got), every event
//!   that happened after one of them greyed out.
//! * **Affects view**: messages issued after some race's receive (affected messages) dashed;
//!   race receives green when unaffected, orange when affected.
//! * **Abstract affects view**: actors as nodes, an edge `q → p` when a race of `q` affects a
//!   race of `p`; mutually affecting actors (a strongly connected component) in one box;
//!   actors with a race filled.
//!
//! Hovering an event shows its history record (an SVG `<title>`); clicking a race (its dot or
//! its entry in the race list) shows its details and the `ddbx replay DIR --stop-at pN:K`
//! command that halts right before its receive. Tabs switch views; checkboxes hide actors.
//! The diagrams sit in scrollable panes, so a few thousand events stay usable.
//!
//! `--format shiviz` writes the same events as a ShiViz log instead (one event per history
//! record, in a topological order of happened-before, each with its vector clock), and
//! `--format perfetto` as Chrome/Perfetto trace JSON (one process per actor, one slice per
//! event at its logical rank, the arrows as flows).

use super::races::{actor_label, analyze, race_text, record_text, replay_command};
use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::clock::Clocks;
use ddbx_supervisor::analysis::deps::{ChannelId, DataRange, Deps, Direction, Event};
use ddbx_supervisor::analysis::races::{MessageKind, Races};
use ddbx_supervisor::wire::ActorId;
use ddbx_supervisor::wire::history::{Origin, Record};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const AFTER_HELP: &str = "\
Examples:
  ddbx view ddbx-run-1 -o run.html      then open run.html in any browser (works offline)

Four tabs: the event view (space-time diagram, one line per actor, y = logical time so
every arrow points down), the first-race view (locally-first races and the messages
racing to them; everything after them greyed), the affects view (affected messages
dashed) and the abstract affects view (actors as nodes, affects as edges, mutually
affecting actors in one box). Hover an event for its history record; click a race for
its replay command. The same recording gives a byte-identical file.

Formats (--format): html (default), shiviz (a log for ShiViz: regex line, delimiter line,
then `pN {vector clock}` / record line pairs) and perfetto (Chrome trace JSON for
ui.perfetto.dev or chrome://tracing: ts = logical rank x 10 us, arrows as flows).

Exit code: 0; 2 usage (the file cannot be written), 102 bad recording.";

/// Arguments of `ddbx view`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The recording directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// What to write: the HTML page, a ShiViz log, or Chrome/Perfetto trace JSON.
    #[arg(long = "format", value_enum, default_value_t = Format::Html)]
    pub format: Format,
}

/// The output formats of `ddbx view`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The self-contained HTML page with the four views.
    Html,
    /// A ShiViz log (vector clocks over the exported events).
    Shiviz,
    /// Chrome/Perfetto trace JSON (`{"traceEvents": [...]}`).
    Perfetto,
}

/// Horizontal distance between actor lines.
const COL: u64 = 96;
/// Vertical distance between logical ranks.
const ROW: u64 = 22;
/// Left margin before the first actor line.
const LEFT: u64 = 60;
/// Top margin (actor labels) before rank 0.
const TOP: u64 = 56;

/// Runs `ddbx view`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    let an = analyze(&args.dir)?;
    let text = match args.format {
        Format::Html => render(&an.recording, &an.deps, &an.clocks, &an.races, &args.dir)?,
        Format::Shiviz => shiviz(&layout(&an.recording, &an.deps)?, &args.dir),
        Format::Perfetto => perfetto(&layout(&an.recording, &an.deps)?),
    };
    std::fs::write(&args.output, text).map_err(|e| {
        Error::Usage(format!(
            "{}: cannot write the view: {e}",
            args.output.display()
        ))
    })?;
    eprintln!(
        "ddbx: wrote {} ({} actors, {} events, {} races)",
        args.output.display(),
        an.recording.histories.len(),
        an.recording.event_count(),
        an.races.races.len()
    );
    Ok(0)
}

/// Byte ranges `[start, end)` of sends or receives on one direction, with their events.
type Ranges = Vec<(u64, u64, Event)>;

/// An arrow of the event view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum ArrowKind {
    Message,
    Connect,
    Fork,
}

/// `&`, `<`, `>`, `"`, `'` escaped for HTML text and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The layout and drawable facts shared by the three diagram views.
struct Diagram<'a> {
    rec: &'a Recording,
    actors: Vec<ActorId>,
    column: HashMap<ActorId, u64>,
    rank: HashMap<Event, u64>,
    max_rank: u64,
    /// (from, to, kind), sorted.
    arrows: Vec<(Event, Event, ArrowKind)>,
    /// Every event, in a topological order of the graph the ranks are computed over.
    order: Vec<Event>,
    /// Each event's direct predecessors in that graph (deduplicated, sorted).
    preds: HashMap<Event, Vec<Event>>,
}

impl Diagram<'_> {
    fn x(&self, a: ActorId) -> u64 {
        LEFT + self.column[&a] * COL
    }

    fn y(&self, e: Event) -> u64 {
        TOP + self.rank.get(&e).copied().unwrap_or(0) * ROW
    }

    fn width(&self) -> u64 {
        LEFT + self.actors.len() as u64 * COL
    }

    fn height(&self) -> u64 {
        TOP + (self.max_rank + 2) * ROW
    }
}

/// Computes ranks (longest-path depth) and arrows.
fn layout<'a>(rec: &'a Recording, deps: &Deps) -> Result<Diagram<'a>, Error> {
    let actors: Vec<ActorId> = deps.actors().to_vec();
    let column: HashMap<ActorId, u64> = actors
        .iter()
        .enumerate()
        .map(|(i, a)| (*a, i as u64))
        .collect();
    let mut arrows: BTreeSet<(Event, Event, ArrowKind)> = BTreeSet::new();

    // Send -> the receive that consumed its last byte.
    let mut flows: BTreeMap<(ChannelId, Direction), (Ranges, Ranges)> = BTreeMap::new();
    for &a in &actors {
        let Some(h) = rec.history(a) else { continue };
        for (i, r) in h.records.iter().enumerate() {
            let e = (a, i as u64 + 1);
            if let Some(DataRange {
                channel: ch,
                direction: dir,
                start: s,
                end: t,
            }) = deps.data_range(a, e.1)
                && t > s
            {
                let f = flows.entry((ch, dir)).or_default();
                match r {
                    Record::Send { .. } => f.0.push((s, t, e)),
                    Record::Recv { .. } => f.1.push((s, t, e)),
                    _ => {}
                }
            }
        }
    }
    for (sends, recvs) in flows.values_mut() {
        recvs.sort();
        for &(_, end, send) in sends.iter() {
            let i = recvs.partition_point(|r| r.1 < end);
            if let Some(&(start, _, recv)) = recvs.get(i)
                && start < end
            {
                arrows.insert((send, recv, ArrowKind::Message));
            }
        }
    }
    for c in deps.channels() {
        arrows.insert((
            (c.connector.actor, c.connector.event),
            (c.acceptor.actor, c.acceptor.event),
            ArrowKind::Connect,
        ));
    }
    for info in &rec.manifest.actors {
        if let Origin::Fork { parent, index } | Origin::Spawn { parent, index } = info.origin
            && let Some(h) = rec.history(parent)
            && let Some(i) = h.records.iter().position(|r| {
                matches!(r, Record::Fork { index: j } | Record::Spawn { index: j } if *j == index)
            })
            && rec.history(info.id).is_some()
        {
            arrows.insert(((parent, i as u64 + 1), (info.id, 1), ArrowKind::Fork));
        }
    }

    // Longest-path ranks over program order, the needs (a connect's need of its accept left
    // out: the connect comes first) and the arrows.
    let mut preds: HashMap<Event, Vec<Event>> = HashMap::new();
    let mut all: Vec<Event> = Vec::new();
    for &a in &actors {
        for k in 1..=deps.event_count(a) {
            let e = (a, k);
            all.push(e);
            let p = preds.entry(e).or_default();
            if k > 1 {
                p.push((a, k - 1));
            }
            let is_connect = deps.kind(a, k) == Some("Connect");
            for &n in deps.needs(a, k) {
                if is_connect && deps.kind(n.0, n.1) == Some("Accept") {
                    continue;
                }
                p.push(n);
            }
        }
    }
    for (from, to, _) in &arrows {
        preds.entry(*to).or_default().push(*from);
    }
    let mut indeg: HashMap<Event, usize> = HashMap::new();
    let mut succs: HashMap<Event, Vec<Event>> = HashMap::new();
    let mut direct: HashMap<Event, Vec<Event>> = HashMap::new();
    for e in &all {
        let ps: BTreeSet<Event> = preds[e]
            .iter()
            .copied()
            .filter(|p| preds.contains_key(p))
            .collect();
        indeg.insert(*e, ps.len());
        for &p in &ps {
            succs.entry(p).or_default().push(*e);
        }
        direct.insert(*e, ps.into_iter().collect());
    }
    let mut order: Vec<Event> = Vec::with_capacity(all.len());
    let mut ready: BTreeSet<Event> = all.iter().copied().filter(|e| indeg[e] == 0).collect();
    let mut rank: HashMap<Event, u64> = HashMap::new();
    while let Some(e) = ready.pop_first() {
        order.push(e);
        let r = preds[&e]
            .iter()
            .filter_map(|p| rank.get(p))
            .map(|r| r + 1)
            .max()
            .unwrap_or(0);
        rank.insert(e, r);
        for s in succs.get(&e).map_or(&[][..], Vec::as_slice) {
            let d = indeg.get_mut(s).expect("every event has an indegree");
            *d -= 1;
            if *d == 0 {
                ready.insert(*s);
            }
        }
    }
    if rank.len() < all.len() {
        let stuck = all.iter().find(|e| !rank.contains_key(e)).copied();
        return Err(Error::BadRecording(format!(
            "{}: cannot lay out the events: {} is on a dependency cycle (the recording is inconsistent)",
            rec.dir.display(),
            stuck.map(|e| deps.describe(e)).unwrap_or_default()
        )));
    }
    let max_rank = rank.values().copied().max().unwrap_or(0);
    Ok(Diagram {
        rec,
        actors,
        column,
        rank,
        max_rank,
        arrows: arrows.into_iter().collect(),
        order,
        preds: direct,
    })
}

/// One history record as one line of text.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// The ShiViz log: the parsing regex, the execution delimiter, then for each event (in a
/// topological order of happened-before) its host and vector clock on one line and its record
/// on the next. The clocks are computed over the exported events and the graph the event view
/// is drawn from (program order, needs, arrows; a connect before its accept), so each host's
/// own entry is its event number: 1 for its first event, +1 per event.
fn shiviz(d: &Diagram, dir: &Path) -> String {
    let mut out = String::new();
    out.push_str("(?<host>\\S*) (?<clock>{.*})\\n(?<event>.*)\n");
    out.push_str("=== (?<trace>.*) ===\n");
    let _ = writeln!(out, "=== {} ===", one_line(&dir.to_string_lossy()));
    let mut clocks: HashMap<Event, BTreeMap<ActorId, u64>> = HashMap::new();
    for &e in &d.order {
        let mut vc: BTreeMap<ActorId, u64> = BTreeMap::new();
        for p in d.preds.get(&e).map_or(&[][..], Vec::as_slice) {
            for (a, k) in clocks.get(p).into_iter().flatten() {
                let v = vc.entry(*a).or_insert(0);
                *v = (*v).max(*k);
            }
        }
        vc.insert(e.0, e.1);
        let record = d
            .rec
            .history(e.0)
            .and_then(|h| h.records.get(e.1 as usize - 1))
            .map_or(String::new(), |r| one_line(&r.to_string()));
        let clock = vc
            .iter()
            .map(|(a, k)| format!("\"{a}\": {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(out, "{} {{{clock}}}\n{record}\n", e.0);
        clocks.insert(e, vc);
    }
    out
}

/// Chrome/Perfetto trace JSON: a process per actor (pid = the actor's number), an `X` slice
/// per event at `ts` = logical rank × 10 µs, each arrow a flow (`bind_id`, `flow_out` on its
/// source slice, `flow_in` on its target). A slice binds one flow; an event with several
/// flows gets one extra slice (same time, same record) per further flow.
fn perfetto(d: &Diagram) -> String {
    let rec = d.rec;
    let mut flows: BTreeMap<Event, Vec<(String, bool)>> = BTreeMap::new();
    for (i, &(from, to, _)) in d.arrows.iter().enumerate() {
        let id = format!("0x{:x}", i + 1);
        flows.entry(from).or_default().push((id.clone(), true));
        flows.entry(to).or_default().push((id, false));
    }
    let mut events = Vec::new();
    for &a in &d.actors {
        let pid = a.0;
        let name = format!(
            "{a} {}",
            rec.program_names(a).first().cloned().unwrap_or_default()
        );
        events.push(serde_json::json!({
            "name": "process_name", "ph": "M", "pid": pid, "tid": pid,
            "args": {"name": name.trim_end()},
        }));
        events.push(serde_json::json!({
            "name": "process_sort_index", "ph": "M", "pid": pid, "tid": pid,
            "args": {"sort_index": d.column[&a]},
        }));
        let Some(h) = rec.history(a) else { continue };
        for (i, record) in h.records.iter().enumerate() {
            let e = (a, i as u64 + 1);
            let ts = d.rank.get(&e).copied().unwrap_or(0) * 10;
            let slice = || {
                serde_json::json!({
                    "name": record.kind(), "cat": "ddbx", "ph": "X", "pid": pid, "tid": pid,
                    "ts": ts, "dur": 1,
                    "args": {"record": record.to_string(), "event": format!("{a}:{}", e.1)},
                })
            };
            let fs = flows.get(&e).map_or(&[][..], Vec::as_slice);
            if fs.is_empty() {
                events.push(slice());
            }
            for (id, out) in fs {
                let mut s = slice();
                s["bind_id"] = serde_json::json!(id);
                s[if *out { "flow_out" } else { "flow_in" }] = serde_json::json!(true);
                events.push(s);
            }
        }
    }
    let mut text = serde_json::json!({ "traceEvents": events }).to_string();
    text.push('\n');
    text
}

/// Which of the three diagram views to draw.
#[derive(Clone, Copy, PartialEq, Eq)]
enum View {
    Event,
    FirstRace,
    Affects,
}

impl View {
    fn id(self) -> &'static str {
        match self {
            View::Event => "event",
            View::FirstRace => "first",
            View::Affects => "affects",
        }
    }
}

/// Arrow markers of one SVG (ids prefixed by the view: several SVGs share the page).
fn markers(out: &mut String, view: &str) {
    for (name, color) in [
        ("msg", "#456"),
        ("race", "#c0392b"),
        ("aff", "#d35400"),
        ("dim", "#bbb"),
    ] {
        let _ = write!(
            out,
            "<marker id=\"{view}-{name}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"{color}\"/></marker>"
        );
    }
}

/// Draws one of the diagram views as an `<svg>`.
fn diagram_svg(d: &Diagram, clocks: &Clocks, races: &Races, view: View) -> String {
    let rec = d.rec;
    let v = view.id();
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"diagram\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{v} view\"><defs>",
        w = d.width(),
        h = d.height()
    );
    markers(&mut out, v);
    out.push_str("</defs>");

    let first: Vec<&_> = races.races.iter().filter(|r| r.locally_first).collect();
    let race_at: HashMap<Event, usize> = races.races.iter().map(|r| (r.receive, r.id)).collect();
    // Events after a locally-first race (first-race view) / messages issued after any race.
    let after_first = |e: Event| first.iter().any(|r| clocks.happened_before(r.receive, e));
    let after_any = |e: Event| {
        races
            .races
            .iter()
            .any(|r| r.receive == e || clocks.happened_before(r.receive, e))
    };

    // Actor lines and labels.
    for &a in &d.actors {
        let x = d.x(a);
        let n = rec.history(a).map_or(0, |h| h.records.len() as u64);
        let (top, bottom) = (d.y((a, 1)), d.y((a, n.max(1))));
        let label = rec.program_names(a).first().cloned().unwrap_or_default();
        let _ = write!(
            out,
            "<g class=\"a-{a}\"><text class=\"actor\" x=\"{x}\" y=\"18\">{a}</text><text class=\"prog\" x=\"{x}\" y=\"32\">{}</text><line class=\"life\" x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\"><title>{}</title></line></g>",
            esc(&truncate(&label, 14)),
            esc(&actor_label(rec, a)),
        );
    }

    // Arrows.
    for &(from, to, kind) in &d.arrows {
        let (x1, y1, x2, y2) = (d.x(from.0), d.y(from), d.x(to.0), d.y(to));
        let mut class = format!("arrow a-{} a-{}", from.0, to.0);
        let mut marker = "msg";
        match kind {
            ArrowKind::Message => {}
            ArrowKind::Connect => class.push_str(" conn"),
            ArrowKind::Fork => class.push_str(" fork"),
        }
        match view {
            View::Event => {}
            View::FirstRace => {
                if after_first(from) || after_first(to) {
                    class.push_str(" grey");
                    marker = "dim";
                }
            }
            View::Affects => {
                // A connect is issued at the event before it.
                let issued = if kind == ArrowKind::Connect {
                    (from.0, from.1.saturating_sub(1).max(1))
                } else {
                    from
                };
                if kind != ArrowKind::Fork && after_any(issued) {
                    class.push_str(" affected");
                    marker = "aff";
                }
            }
        }
        let what = match kind {
            ArrowKind::Message => "message",
            ArrowKind::Connect => "connect → accept",
            ArrowKind::Fork => "creation",
        };
        let _ = write!(
            out,
            "<line class=\"{class}\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" marker-end=\"url(#{v}-{marker})\"><title>{what}: {} event {} → {} event {}</title></line>",
            from.0, from.1, to.0, to.1
        );
    }

    // Race arrows of the first-race view: each message of M to the receive.
    if view == View::FirstRace {
        for r in &first {
            for (i, m) in r.messages().enumerate() {
                let Some(src) = m.event else { continue };
                let got = i < r.got.len();
                let (x1, y1, x2, y2) = (d.x(src.0), d.y(src), d.x(r.receive.0), d.y(r.receive));
                let _ = write!(
                    out,
                    "<line class=\"racemsg{} a-{} a-{}\" data-race=\"{}\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" marker-end=\"url(#{v}-race)\"><title>race {}: {} {}</title></line>",
                    if got { " got" } else { " could" },
                    src.0,
                    r.receive.0,
                    r.id,
                    r.id,
                    if got { "got" } else { "could have got" },
                    esc(&m.describe()),
                );
            }
        }
    }

    // Events.
    for &a in &d.actors {
        let Some(h) = rec.history(a) else { continue };
        let x = d.x(a);
        for (i, record) in h.records.iter().enumerate() {
            let e = (a, i as u64 + 1);
            let y = d.y(e);
            let mut class = format!("ev a-{a} k-{}", record.kind());
            let race = race_at.get(&e).and_then(|id| races.get(*id));
            let mut extra = String::new();
            if let Some(r) = race {
                class.push_str(" race");
                if r.locally_first {
                    class.push_str(" lf");
                }
                if r.unaffected() {
                    class.push_str(" unaff");
                }
                extra = format!(
                    "\nrace {}{}{} — click for its replay command",
                    r.id,
                    if r.locally_first {
                        " (locally-first)"
                    } else {
                        ""
                    },
                    if r.unaffected() {
                        ", unaffected"
                    } else {
                        ", affected"
                    }
                );
            }
            match view {
                View::Event => {}
                View::FirstRace => {
                    if race.is_some_and(|r| r.locally_first) {
                        class.push_str(" hot");
                    } else if after_first(e) {
                        class.push_str(" grey");
                    }
                }
                View::Affects => {
                    if let Some(r) = race {
                        class.push_str(if r.unaffected() { " ok" } else { " hit" });
                    }
                }
            }
            let data = race.map_or(String::new(), |r| format!(" data-race=\"{}\"", r.id));
            let radius = if race.is_some() { 6 } else { 4 };
            let _ = write!(
                out,
                "<circle class=\"{class}\"{data} cx=\"{x}\" cy=\"{y}\" r=\"{radius}\"><title>{} event {}: {}{}</title></circle>",
                a,
                e.1,
                esc(&record.to_string()),
                esc(&extra),
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// At most `n` characters of `s` (with `…` when cut).
fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// The abstract affects view: components as boxes, layered top-down.
fn abstract_svg(rec: &Recording, races: &Races) -> String {
    let comps = &races.components;
    if comps.is_empty() {
        return "<svg class=\"abstract\" width=\"420\" height=\"60\" viewBox=\"0 0 420 60\"><text x=\"10\" y=\"30\">No races: no actor affects another.</text></svg>".into();
    }
    // Layer = longest path from a source (components are in topological order).
    let mut layer = vec![0usize; comps.len()];
    for (i, c) in comps.iter().enumerate() {
        for &j in &c.affects {
            layer[j] = layer[j].max(layer[i] + 1);
        }
    }
    let labels: Vec<Vec<String>> = comps
        .iter()
        .map(|c| {
            c.actors
                .iter()
                .map(|a| truncate(&actor_label(rec, *a), 28))
                .collect()
        })
        .collect();
    let box_w = |i: usize| -> u64 {
        let longest = labels[i]
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(4) as u64;
        (longest * 7 + 24).max(70)
    };
    let box_h = |i: usize| -> u64 { labels[i].len() as u64 * 16 + 14 };
    let layers = layer.iter().copied().max().unwrap_or(0) + 1;
    let mut pos: Vec<(u64, u64)> = vec![(0, 0); comps.len()];
    let mut y = 20u64;
    let mut width = 0u64;
    for l in 0..layers {
        let mut x = 20u64;
        let mut tallest = 0;
        for i in (0..comps.len()).filter(|i| layer[*i] == l) {
            pos[i] = (x, y);
            x += box_w(i) + 40;
            tallest = tallest.max(box_h(i));
        }
        width = width.max(x);
        y += tallest + 60;
    }
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"abstract\" width=\"{width}\" height=\"{y}\" viewBox=\"0 0 {width} {y}\" role=\"img\" aria-label=\"abstract affects view\"><defs>"
    );
    markers(&mut out, "abs");
    out.push_str("</defs>");
    for (i, c) in comps.iter().enumerate() {
        for &j in &c.affects {
            let (x1, y1) = (pos[i].0 + box_w(i) / 2, pos[i].1 + box_h(i));
            let (x2, y2) = (pos[j].0 + box_w(j) / 2, pos[j].1);
            let _ = write!(
                out,
                "<line class=\"arrow\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" marker-end=\"url(#abs-msg)\"/>"
            );
        }
    }
    for (i, c) in comps.iter().enumerate() {
        let (x, y) = pos[i];
        let mut class = String::from("node");
        if c.has_race {
            class.push_str(" hasrace");
        }
        if c.actors.len() > 1 {
            class.push_str(" scc");
        }
        let race_ids: Vec<String> = races
            .races
            .iter()
            .filter(|r| c.actors.contains(&r.receive.0))
            .map(|r| format!("race {}", r.id))
            .collect();
        let _ = write!(
            out,
            "<g class=\"{}\"><rect class=\"{class}\" x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{}\" rx=\"{}\"><title>{}{}</title></rect>",
            c.actors
                .iter()
                .map(|a| format!("a-{a}"))
                .collect::<Vec<_>>()
                .join(" "),
            box_w(i),
            box_h(i),
            if c.actors.len() > 1 { 2 } else { 10 },
            esc(&labels[i].join(", ")),
            if race_ids.is_empty() {
                String::new()
            } else {
                esc(&format!(": {}", race_ids.join(", ")))
            }
        );
        for (k, l) in labels[i].iter().enumerate() {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\">{}</text>",
                x + 12,
                y + 20 + k as u64 * 16,
                esc(l)
            );
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>");
    out
}

const STYLE: &str = r#"
body{font:13px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:8px 14px;background:#263238;color:#eee}
header h1{font-size:15px;margin:0 0 2px 0}
nav{padding:6px 14px;background:#eceff1;border-bottom:1px solid #cfd8dc}
nav button{font:inherit;margin-right:6px;padding:4px 10px;border:1px solid #90a4ae;background:#fff;border-radius:4px;cursor:pointer}
nav button.on{background:#37474f;color:#fff}
#main{display:flex;height:calc(100vh - 92px)}
#side{width:330px;min-width:260px;overflow:auto;border-right:1px solid #cfd8dc;padding:8px 12px;background:#fff}
#side h2{font-size:13px;margin:10px 0 4px}
#races li{cursor:pointer;margin:2px 0;list-style:none;padding:2px 4px;border-radius:3px}
#races{padding:0;margin:0}
#races li:hover,#races li.sel{background:#ffe0b2}
#detail{white-space:pre-wrap;font:12px/1.35 ui-monospace,monospace;background:#f5f5f5;padding:6px;border-radius:4px;min-height:2em}
#cmd{font:12px ui-monospace,monospace;width:100%;box-sizing:border-box}
#actors label{display:inline-block;margin:0 8px 2px 0;white-space:nowrap}
.view{display:none;flex:1;overflow:auto;padding:6px}
.view.on{display:block}
.legend{margin:2px 0 6px;color:#555}
svg text{font:11px system-ui,sans-serif;fill:#333}
svg text.actor{font-weight:bold;text-anchor:middle}
svg text.prog{text-anchor:middle;fill:#666;font-size:10px}
.life{stroke:#b0bec5;stroke-width:2}
.arrow{stroke:#456;stroke-width:1.2}
.arrow.conn{stroke:#2e7d32}
.arrow.fork{stroke:#9e9e9e;stroke-dasharray:2 3}
.arrow.grey{stroke:#ddd}
.arrow.affected{stroke:#d35400;stroke-dasharray:6 4}
.ev{fill:#546e7a;stroke:#fff;stroke-width:1}
.ev.k-Send{fill:#1565c0}.ev.k-Recv{fill:#6a1b9a}.ev.k-Accept,.ev.k-Connect{fill:#2e7d32}
.ev.race{stroke:#c0392b;stroke-width:3;cursor:pointer}
.ev.grey{fill:#e0e0e0;stroke:#e0e0e0}
.ev.hot{fill:#c0392b;stroke:#7b1fa2}
.ev.ok{fill:#43a047;stroke:#1b5e20}
.ev.hit{fill:#ef6c00;stroke:#e65100}
.ev.sel{stroke:#ffca28;stroke-width:5}
.racemsg{stroke:#c0392b;stroke-width:2;cursor:pointer}
.racemsg.could{stroke-dasharray:5 4}
.racemsg.sel{stroke:#ff8f00}
.node{fill:#fff;stroke:#455a64;stroke-width:1.5}
.node.hasrace{fill:#ffccbc}
.node.scc{stroke-width:3;stroke:#6a1b9a}
"#;

const SCRIPT: &str = r#"
(function(){
var data=JSON.parse(document.getElementById('ddbx-data').textContent);
var tabs=document.querySelectorAll('nav button');
function showView(id){
  tabs.forEach(function(b){b.classList.toggle('on',b.dataset.view===id);});
  document.querySelectorAll('.view').forEach(function(s){s.classList.toggle('on',s.id==='v-'+id);});
}
tabs.forEach(function(b){b.addEventListener('click',function(){showView(b.dataset.view);});});
function showRace(id){
  var r=data.races[id-1]; if(!r) return;
  document.getElementById('detail').textContent=r.text;
  var c=document.getElementById('cmd'); c.value=r.replay;
  document.querySelectorAll('.sel').forEach(function(e){e.classList.remove('sel');});
  document.querySelectorAll('[data-race="'+id+'"]').forEach(function(e){e.classList.add('sel');});
}
document.addEventListener('click',function(ev){
  var t=ev.target.closest?ev.target.closest('[data-race]'):null;
  if(t) showRace(+t.dataset.race);
});
var hide=document.getElementById('hide');
function filter(){
  var css='';
  document.querySelectorAll('#actors input').forEach(function(i){ if(!i.checked) css+='.a-'+i.value+'{display:none}'; });
  hide.textContent=css;
}
document.querySelectorAll('#actors input').forEach(function(i){i.addEventListener('change',filter);});
document.getElementById('all').addEventListener('click',function(){document.querySelectorAll('#actors input').forEach(function(i){i.checked=true;});filter();});
document.getElementById('none').addEventListener('click',function(){document.querySelectorAll('#actors input').forEach(function(i){i.checked=false;});filter();});
showView('event');
if(data.races.length) showRace(data.races[0].id);
document.documentElement.setAttribute('data-ddbx','ok');
})();
"#;

/// The whole HTML page.
fn render(
    rec: &Recording,
    deps: &Deps,
    clocks: &Clocks,
    races: &Races,
    dir: &Path,
) -> Result<String, Error> {
    let d = layout(rec, deps)?;
    let name = dir.to_string_lossy();
    let lf = races.races.iter().filter(|r| r.locally_first).count();
    let un = races.races.iter().filter(|r| r.unaffected()).count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ddbx view: {}</title><style>{STYLE}</style><style id=\"hide\"></style></head><body>",
        esc(&name)
    );
    let _ = writeln!(
        out,
        "<header><h1>ddbx view: {}</h1>{} actors, {} events, {} races: {lf} locally-first, {un} unaffected</header>",
        esc(&name),
        rec.histories.len(),
        rec.event_count(),
        races.races.len(),
    );
    out.push_str("<nav><button data-view=\"event\">Event view</button><button data-view=\"first\">First-race view</button><button data-view=\"affects\">Affects view</button><button data-view=\"abstract\">Abstract affects view</button></nav>\n");
    out.push_str("<div id=\"main\"><aside id=\"side\"><h2>Race</h2><div id=\"detail\">No race selected.</div><input id=\"cmd\" readonly value=\"\" aria-label=\"replay command\"><h2>Races</h2><ul id=\"races\">");
    if races.races.is_empty() {
        out.push_str("<li>none</li>");
    }
    for r in &races.races {
        let mut flags = Vec::new();
        if r.locally_first {
            flags.push("locally-first");
        }
        flags.push(if r.unaffected() {
            "unaffected"
        } else {
            "affected"
        });
        let _ = write!(
            out,
            "<li data-race=\"{}\">race {}: {} event {} ({}), |M| = {} — {}</li>",
            r.id,
            r.id,
            r.receive.0,
            r.receive.1,
            r.kind.as_str(),
            r.got.len() + r.could.len(),
            flags.join(", ")
        );
    }
    out.push_str("</ul><h2>Actors <button id=\"all\">all</button> <button id=\"none\">none</button></h2><div id=\"actors\">");
    for &a in &d.actors {
        let _ = write!(
            out,
            "<label title=\"{}\"><input type=\"checkbox\" value=\"{a}\" checked> {}</label>",
            esc(&actor_label(rec, a)),
            esc(&truncate(&actor_label(rec, a), 24)),
        );
    }
    out.push_str("</div></aside>\n");

    let sections = [
        (
            View::Event,
            "Space-time diagram: one line per actor, y = logical time (every arrow points down). Blue: sends, purple: receives, green: connects/accepts and their arrows; grey dotted: process creation. Red rings: race receives.",
        ),
        (
            View::FirstRace,
            "Locally-first races (red) and the messages racing to them (solid: got; dashed: could have got). Events that happened after one of them are greyed out.",
        ),
        (
            View::Affects,
            "Affected messages (issued after some race's receive) are dashed orange. Race receives: green = unaffected (debug these first), orange = affected.",
        ),
    ];
    for (view, legend) in sections {
        let _ = writeln!(
            out,
            "<section class=\"view\" id=\"v-{}\"><div class=\"legend\">{}</div>{}</section>",
            view.id(),
            esc(legend),
            diagram_svg(&d, clocks, races, view)
        );
    }
    let _ = writeln!(
        out,
        "<section class=\"view\" id=\"v-abstract\"><div class=\"legend\">{}</div>{}</section>",
        esc(
            "Actors as nodes, an edge q → p when a race of q affects a race of p; filled: the actor has a race; a thick box: actors that affect each other (strongly connected)."
        ),
        abstract_svg(rec, races)
    );
    out.push_str("</div>\n");

    // The data the script needs: each race's text block and replay command.
    let data = serde_json::json!({
        "races": races.races.iter().map(|r| serde_json::json!({
            "id": r.id,
            "text": race_text(rec, dir, r),
            "replay": replay_command(dir, r),
            "record": record_text(rec, r.receive),
            "messages": r.messages().filter(|m| m.kind != MessageKind::External).count(),
        })).collect::<Vec<_>>(),
    });
    let json = data.to_string().replace("</", "<\\/");
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"ddbx-data\">{json}</script>\n<script>{SCRIPT}</script>\n</body></html>"
    );
    Ok(out)
}
