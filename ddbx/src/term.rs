//! ddbx's own output on a terminal: colour, and the progress line that other lines interrupt.
//!
//! **Colour.** Text output is styled with [`anstyle`] and written through [`anstream`], which
//! drops the styles when they are not wanted: `--color never`, `NO_COLOR` set (and not
//! overridden by `--color always`), or the stream is not a terminal (`--color auto`, the
//! default). [`set_color`] sets the choice once, for the whole process. Only ddbx's words are
//! styled (the head of a divergence, a halt, an error; the flags of a race); the kept lines
//! of an outcome and every JSON output stay plain.
//!
//! **The progress line.** While a progress line is shown on standard error ([`show_progress`]),
//! every line ddbx prints there goes through [`eprint_line`], which clears the progress line,
//! prints, and draws it again, so that the two never share a row.

use anstyle::{AnsiColor, Style};
use std::io::Write;
use std::sync::{Mutex, PoisonError};

/// `--color`: when to colour ddbx's text output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// When the output is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always (even into a pipe, and despite `NO_COLOR`).
    Always,
    /// Never.
    Never,
}

/// Sets the colour choice for every later output of this process.
pub fn set_color(when: ColorWhen) {
    let choice = match when {
        ColorWhen::Auto => anstream::ColorChoice::Auto,
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
    };
    choice.write_global();
}

/// Something that draws a progress line and can step aside for a moment.
pub trait ProgressLine: Send {
    /// Runs `print` with the progress line cleared, then draws it again.
    fn suspend(&self, print: &mut dyn FnMut());
}

/// The progress line shown now, if any.
static PROGRESS: Mutex<Option<Box<dyn ProgressLine>>> = Mutex::new(None);

/// Shows `line` as the progress line from now on (`None`: no progress line).
pub fn show_progress(line: Option<Box<dyn ProgressLine>>) {
    *PROGRESS.lock().unwrap_or_else(PoisonError::into_inner) = line;
}

/// Prints one of ddbx's lines on standard error, styled (see [`paint_line`]), around the
/// progress line if one is shown.
pub fn eprint_line(line: &str) {
    let styled = paint_line(line);
    let mut print = || {
        let mut err = anstream::stderr();
        let _ = writeln!(err, "{styled}");
    };
    match PROGRESS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        Some(progress) => progress.suspend(&mut print),
        None => print(),
    }
}

/// A divergence, an error, an unsupported call.
pub const PROBLEM: Style = AnsiColor::Red.on_default().bold();
/// A halt and what held there.
pub const HALT: Style = AnsiColor::Green.on_default().bold();
/// A warning or a note.
pub const NOTE: Style = AnsiColor::Yellow.on_default();
/// A heading (a race, a column header).
pub const HEAD: Style = Style::new().bold();
/// Something to type (a replay command).
pub const COMMAND: Style = AnsiColor::Cyan.on_default();

/// `text` in `style` (the escape codes are dropped on output when colour is off).
pub fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// One of ddbx's `ddbx: …` lines with its head styled by what it says: a divergence, an
/// or an error in red, a halt in green, an interruption in yellow; in a halted
/// state, "(its condition holds)" in green.
pub fn paint_line(line: &str) -> String {
    const HEADS: &[(&str, Style)] = &[
        ("ddbx: replay diverged", PROBLEM),
        ("ddbx: error", PROBLEM),
        ("ddbx: halted", HALT),
        ("ddbx: interrupted", NOTE),
    ];
    for (head, style) in HEADS {
        if let Some(rest) = line.strip_prefix(head) {
            return format!("{}{rest}", paint(*style, head));
        }
    }
    const MARKS: &[(&str, Style)] = &[
        ("(its condition holds)", HALT),
        ("(its condition does not hold)", NOTE),
    ];
    for (mark, style) in MARKS {
        if let Some(at) = line.find(mark) {
            let (before, after) = line.split_at(at);
            return format!("{before}{}{}", paint(*style, mark), &after[mark.len()..]);
        }
    }
    line.to_string()
}

/// A race block as `ddbx races` prints it, styled: its head in bold, the flags
/// `unaffected` (debug these first) in green and `locally-first` in yellow, the replay command
/// in cyan.
pub fn paint_race(block: &str) -> String {
    let styled: Vec<String> = block
        .lines()
        .map(|line| {
            if line.starts_with("race ")
                && let Some((head, rest)) = line.split_once(':')
            {
                return format!("{}{rest}", paint(HEAD, &format!("{head}:")));
            }
            if let Some(rest) = line.strip_prefix("  replay:") {
                return format!("  replay:{}", paint(COMMAND, rest));
            }
            if line.starts_with("  flags:") {
                return line
                    .replace("unaffected", &paint(HALT, "unaffected"))
                    .replace("locally-first", &paint(NOTE, "locally-first"));
            }
            line.to_string()
        })
        .collect();
    styled.join("\n")
}

/// Prints `text` and a newline on standard output, through [`anstream`] (styles dropped when
/// colour is off).
pub fn println(text: &str) {
    let mut out = anstream::stdout();
    let _ = writeln!(out, "{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_styled_and_the_text_kept() {
        let line = "ddbx: replay diverged: p2 at event 5: expected `Recv`";
        let styled = paint_line(line);
        assert_ne!(styled, line);
        assert!(styled.contains("\u{1b}[1m\u{1b}[31mddbx: replay diverged"));
        let plain = anstream::adapter::strip_str(&styled).to_string();
        assert_eq!(plain, line);
        assert_eq!(paint_line("ddbx: recording to x"), "ddbx: recording to x");
        let race = "race 2: p3 event 2: Accept\n  flags:        locally-first, unaffected\n  replay:       ddbx replay r --stop-at p3:1";
        let styled = paint_race(race);
        assert!(styled.contains("\u{1b}[32m"), "{styled:?}");
        assert_eq!(anstream::adapter::strip_str(&styled).to_string(), race);
        let held = "  p1: 5 events, at an event  (its condition holds)";
        assert_eq!(
            anstream::adapter::strip_str(&paint_line(held)).to_string(),
            held
        );
    }
}
