//! The four views as inline SVG: the event, first-race and affects views (one drawing of the
//! [`Diagram`], classed per view) and the abstract affects view (components as boxes).

use super::layout::{Arrow, ArrowKind, Diagram};
use super::{esc, truncate};
use crate::cli::races::actor_label;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::clock::Clocks;
use ddbx_supervisor::analysis::deps::Event;
use ddbx_supervisor::analysis::races::{Race, Races};
use ddbx_supervisor::wire::history::Record;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Which of the three diagram views to draw.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum View {
    Event,
    FirstRace,
    Affects,
}

impl View {
    /// The view's id in the page (`v-<id>`, marker ids).
    pub fn id(self) -> &'static str {
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

/// What the diagram views mark about races: which events come after them.
struct RaceMarks<'a> {
    clocks: &'a Clocks,
    races: &'a Races,
    /// The locally-first races.
    first: Vec<&'a Race>,
    /// The race id of each race receive.
    race_at: HashMap<Event, usize>,
}

impl<'a> RaceMarks<'a> {
    fn new(clocks: &'a Clocks, races: &'a Races) -> RaceMarks<'a> {
        RaceMarks {
            clocks,
            races,
            first: races.races.iter().filter(|r| r.locally_first).collect(),
            race_at: races.races.iter().map(|r| (r.receive, r.id)).collect(),
        }
    }

    /// Whether `e` happened after a locally-first race (the first-race view greys it).
    fn after_first(&self, e: Event) -> bool {
        self.first
            .iter()
            .any(|r| self.clocks.happened_before(r.receive, e))
    }

    /// Whether `e` is a race's receive or happened after one (a message issued there is
    /// affected).
    fn after_any(&self, e: Event) -> bool {
        self.races
            .races
            .iter()
            .any(|r| r.receive == e || self.clocks.happened_before(r.receive, e))
    }

    /// The race whose receive `e` is.
    fn race_at(&self, e: Event) -> Option<&'a Race> {
        self.race_at.get(&e).and_then(|id| self.races.get(*id))
    }
}

/// Draws one of the diagram views as an `<svg>`.
pub(super) fn diagram_svg(d: &Diagram, clocks: &Clocks, races: &Races, view: View) -> String {
    let marks = RaceMarks::new(clocks, races);
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"diagram\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{v} view\"><defs>",
        w = d.width(),
        h = d.height(),
        v = view.id(),
    );
    markers(&mut out, view.id());
    out.push_str("</defs>");
    actor_lines(&mut out, d);
    for arrow in &d.arrows {
        arrow_line(&mut out, d, &marks, view, arrow);
    }
    if view == View::FirstRace {
        race_message_lines(&mut out, d, &marks);
    }
    for &a in &d.actors {
        let Some(h) = d.rec.history(a) else { continue };
        for (i, record) in h.records.iter().enumerate() {
            event_dot(&mut out, d, &marks, view, (a, i as u64 + 1), record);
        }
    }
    out.push_str("</svg>");
    out
}

/// Each actor's line and labels.
fn actor_lines(out: &mut String, d: &Diagram) {
    let rec = d.rec;
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
}

/// One arrow, classed for the view (greyed after a first race, or affected).
fn arrow_line(out: &mut String, d: &Diagram, marks: &RaceMarks, view: View, arrow: &Arrow) {
    let Arrow { from, to, kind } = *arrow;
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
            if marks.after_first(from) || marks.after_first(to) {
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
            if kind != ArrowKind::Fork && marks.after_any(issued) {
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
        "<line class=\"{class}\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" marker-end=\"url(#{}-{marker})\"><title>{what}: {} event {} → {} event {}</title></line>",
        view.id(),
        from.0,
        from.1,
        to.0,
        to.1
    );
}

/// The first-race view's race arrows: each message of `M` to the receive.
fn race_message_lines(out: &mut String, d: &Diagram, marks: &RaceMarks) {
    let v = View::FirstRace.id();
    for r in &marks.first {
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

/// One event's dot, with its record as the tooltip; a race receive is larger and clickable.
fn event_dot(
    out: &mut String,
    d: &Diagram,
    marks: &RaceMarks,
    view: View,
    e: Event,
    record: &Record,
) {
    let (x, y) = (d.x(e.0), d.y(e));
    let mut class = format!("ev a-{} k-{}", e.0, record.kind());
    let race = marks.race_at(e);
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
            } else if marks.after_first(e) {
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
        e.0,
        e.1,
        esc(&record.to_string()),
        esc(&extra),
    );
}

/// Where the abstract affects view puts each component: layered top-down (a component below
/// every component that affects it), left to right within a layer.
struct Boxes {
    /// Per component, its actors' labels (one line each).
    labels: Vec<Vec<String>>,
    /// Per component, its box's top-left corner.
    pos: Vec<(u64, u64)>,
    /// The drawing's size.
    width: u64,
    height: u64,
}

impl Boxes {
    fn new(rec: &Recording, races: &Races) -> Boxes {
        let comps = &races.components;
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
        let mut boxes = Boxes {
            labels,
            pos: vec![(0, 0); comps.len()],
            width: 0,
            height: 0,
        };
        let layers = layer.iter().copied().max().unwrap_or(0) + 1;
        let mut y = 20u64;
        for l in 0..layers {
            let mut x = 20u64;
            let mut tallest = 0;
            for i in (0..comps.len()).filter(|i| layer[*i] == l) {
                boxes.pos[i] = (x, y);
                x += boxes.box_width(i) + 40;
                tallest = tallest.max(boxes.box_height(i));
            }
            boxes.width = boxes.width.max(x);
            y += tallest + 60;
        }
        boxes.height = y;
        boxes
    }

    /// Wide enough for the longest label.
    fn box_width(&self, i: usize) -> u64 {
        let longest = self.labels[i]
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(4) as u64;
        (longest * 7 + 24).max(70)
    }

    /// A line per actor.
    fn box_height(&self, i: usize) -> u64 {
        self.labels[i].len() as u64 * 16 + 14
    }
}

/// The abstract affects view: components as boxes, layered top-down.
pub(super) fn abstract_svg(rec: &Recording, races: &Races) -> String {
    let comps = &races.components;
    if comps.is_empty() {
        return "<svg class=\"abstract\" width=\"420\" height=\"60\" viewBox=\"0 0 420 60\"><text x=\"10\" y=\"30\">No races: no actor affects another.</text></svg>".into();
    }
    let boxes = Boxes::new(rec, races);
    let (width, y) = (boxes.width, boxes.height);
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"abstract\" width=\"{width}\" height=\"{y}\" viewBox=\"0 0 {width} {y}\" role=\"img\" aria-label=\"abstract affects view\"><defs>"
    );
    markers(&mut out, "abs");
    out.push_str("</defs>");
    for (i, c) in comps.iter().enumerate() {
        for &j in &c.affects {
            let (x1, y1) = (
                boxes.pos[i].0 + boxes.box_width(i) / 2,
                boxes.pos[i].1 + boxes.box_height(i),
            );
            let (x2, y2) = (boxes.pos[j].0 + boxes.box_width(j) / 2, boxes.pos[j].1);
            let _ = write!(
                out,
                "<line class=\"arrow\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" marker-end=\"url(#abs-msg)\"/>"
            );
        }
    }
    for i in 0..comps.len() {
        component_box(&mut out, &boxes, races, i);
    }
    out.push_str("</svg>");
    out
}

/// Component `i`'s box: its actors, and its races in the tooltip.
fn component_box(out: &mut String, boxes: &Boxes, races: &Races, i: usize) {
    let c = &races.components[i];
    let (x, y) = boxes.pos[i];
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
        boxes.box_width(i),
        boxes.box_height(i),
        if c.actors.len() > 1 { 2 } else { 10 },
        esc(&boxes.labels[i].join(", ")),
        if race_ids.is_empty() {
            String::new()
        } else {
            esc(&format!(": {}", race_ids.join(", ")))
        }
    );
    for (k, l) in boxes.labels[i].iter().enumerate() {
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
