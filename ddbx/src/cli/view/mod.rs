//! `ddbx view`: the paper's four views of a recording (paper 004) in one self-contained HTML
//! file: inline SVG, CSS and JavaScript, nothing fetched from a network, byte-identical for
//! the same recording and arguments.
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
//!
//! The parts: `layout.rs` (columns, logical ranks, arrows), `svg.rs` (the four views),
//! `export.rs` (ShiViz, Perfetto), and this file (the command and the page around the views,
//! whose style and script are `view.css` and `view.js` beside it).

mod export;
mod layout;
mod svg;

use super::races::{actor_label, analyze, race_text, record_text, replay_command};
use crate::cli::progress::{self, Steps};
use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::clock::Clocks;
use ddbx_supervisor::analysis::deps::Deps;
use ddbx_supervisor::analysis::races::{MessageKind, Races};
use layout::{Diagram, layout};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use svg::{View, abstract_svg, diagram_svg};

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
    /// The recording directory [default: the latest recording made from this directory].
    #[arg(value_name = "DIR")]
    pub given_dir: Option<PathBuf>,
    /// The recording directory: DIR, or the latest one (filled in before `run`).
    #[arg(skip)]
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

/// Runs `ddbx view`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    let steps = Steps::new("view", progress::wanted(false));
    let an = analyze(&args.dir, &steps)?;
    steps.step("laying out and drawing");
    let text = match args.format {
        Format::Html => render(&an.recording, &an.deps, &an.clocks, &an.races, &args.dir)?,
        Format::Shiviz => export::shiviz(&layout(&an.recording, &an.deps)?, &args.dir),
        Format::Perfetto => export::perfetto(&layout(&an.recording, &an.deps)?),
    };
    std::fs::write(&args.output, text).map_err(|e| {
        Error::Usage(format!(
            "{}: cannot write the view: {e}",
            args.output.display()
        ))
    })?;
    drop(steps);
    eprintln!(
        "ddbx: wrote {} ({} actors, {} events, {} races)",
        args.output.display(),
        an.recording.histories.len(),
        an.recording.event_count(),
        an.races.races.len()
    );
    Ok(0)
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

/// The page's style sheet.
const STYLE: &str = include_str!("view.css");

/// The page's script: tabs, the race list and details, hiding actors.
const SCRIPT: &str = include_str!("view.js");

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
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ddbx view: {}</title><style>\n{STYLE}</style><style id=\"hide\"></style></head><body>",
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
    side_panel(&mut out, &d, races);
    view_sections(&mut out, &d, clocks, races);
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"ddbx-data\">{}</script>\n<script>\n{SCRIPT}</script>\n</body></html>",
        script_data(rec, races, dir)
    );
    Ok(out)
}

/// The side panel: the selected race, the list of races, the actor checkboxes.
fn side_panel(out: &mut String, d: &Diagram, races: &Races) {
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
            esc(&actor_label(d.rec, a)),
            esc(&truncate(&actor_label(d.rec, a), 24)),
        );
    }
    out.push_str("</div></aside>\n");
}

/// The four views, each in its section with its legend (the page's `</div>` after them).
fn view_sections(out: &mut String, d: &Diagram, clocks: &Clocks, races: &Races) {
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
            diagram_svg(d, clocks, races, view)
        );
    }
    let _ = writeln!(
        out,
        "<section class=\"view\" id=\"v-abstract\"><div class=\"legend\">{}</div>{}</section>",
        esc(
            "Actors as nodes, an edge q → p when a race of q affects a race of p; filled: the actor has a race; a thick box: actors that affect each other (strongly connected)."
        ),
        abstract_svg(d.rec, races)
    );
    out.push_str("</div>\n");
}

/// The data the script needs: each race's text block and replay command, as JSON safe inside
/// a `<script>` element.
fn script_data(rec: &Recording, races: &Races, dir: &Path) -> String {
    let data = serde_json::json!({
        "races": races.races.iter().map(|r| serde_json::json!({
            "id": r.id,
            "text": race_text(rec, dir, r),
            "replay": replay_command(dir, &r.stop_at()),
            "record": record_text(rec, r.receive),
            "messages": r.messages().filter(|m| m.kind != MessageKind::External).count(),
        })).collect::<Vec<_>>(),
    });
    data.to_string().replace("</", "<\\/")
}
