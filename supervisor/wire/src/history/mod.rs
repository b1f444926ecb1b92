//! Per-actor histories: what was nondeterministic in one actor's run, in program order.
//!
//! A history is a text file, one RON record per line, readable like the paper's Fig. 4:
//!
//! ```text
//! Header(format: 1, actor: "p3")
//! Start(pid: 20001, ppid: 20000, origin: Root, argv: ["./server_x"], host: "host2")
//! Accept(fd: 3, new_fd: 4, local: "127.0.0.1:3001", remote: "127.0.0.1:4001", peer_pid: None)
//! Fork(index: 1)
//! Recv(fd: 4, n: 17)
//! Exit(status: 0)
//! ```
//!
//! Event *k* of an actor is the *k*-th record after the header (1-based; `Start` is event 1,
//! the actor's creation). Writer and reader live together in this file so that whoever changes
//! one sees the other. The reader checks every invariant (`Checker`: a `Start` first and
//! only once, nothing after `Exit`, children numbered 1, 2, …, fds not negative, `Skip` runs
//! of 1 to [`MAX_SKIP`]) and names file and line when one fails. A last line without its
//! newline is a record that was being written when the process died: the reader drops it and
//! says so ([`History::truncated`]). A header with another format version is refused.
//!
//! * `record`: what one line says (the [`Record`] types);
//! * `data`: the bytes of outside peers, as base64;
//! * this file: the header, the writer's lines and the checking reader.

mod data;
mod record;
#[cfg(test)]
mod tests;

pub use data::Data;
pub use record::{Addr, Call, Origin, ReadyFd, Record, WaitCall, is_bystander};

use crate::{ActorId, FORMAT_VERSION};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// The first line of every history file.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Must equal [`FORMAT_VERSION`].
    pub format: u32,
    /// Whose history this is.
    pub actor: ActorId,
}

/// What a history logs (the optional `trace` field of its header; absent means `Full`).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Trace {
    /// Every nondeterministic outcome and every send: what the offline analyses need.
    #[default]
    Full,
    /// `ddbx record --trace optimal`: only the outcomes that raced (and the process events);
    /// every other event is a [`Record::Untraced`], stored as runs `Skip(n: …)`.
    Optimal,
}

/// The header fields that only some histories have (read leniently next to [`Header`]).
#[derive(Deserialize, Default)]
struct HeaderExtra {
    #[serde(default)]
    trace: Trace,
}

/// A run of `n` untraced events in an optimal history (`Skip(n: 12)`).
#[derive(Serialize, Deserialize)]
struct Skip {
    n: u64,
}

/// The most untraced events one `Skip` line may stand for (a bound against absurd input).
pub const MAX_SKIP: u64 = 1 << 32;

/// The header line of a new optimal history (`trace: Optimal`), with its newline.
pub fn header_line_optimal(actor: ActorId) -> String {
    let mut line = header_line(actor);
    line.truncate(line.len() - 2); // ")\n"
    line.push_str(", trace: Optimal)\n");
    line
}

/// A `Skip(n: …)` line (with its newline) standing for `n` untraced events.
pub fn skip_line(n: u64) -> String {
    format!("Skip(n: {n})\n")
}

/// What the history at `path` logs, from its header (`Full` if the header says nothing or
/// cannot be read: the loader reports that properly).
pub fn trace_of(path: &Path) -> Trace {
    // The header is the first line that is not a comment: a few lines at most.
    let Ok(text) = crate::file::read_regular(path) else {
        return Trace::Full;
    };
    let text = String::from_utf8_lossy(&text[..text.len().min(4096)]);
    text.lines()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .and_then(|l| l.trim().strip_prefix("Header"))
        .and_then(|h| ron::from_str::<HeaderExtra>(h).ok())
        .map(|h| h.trace)
        .unwrap_or_default()
}

/// Whether any history of the recording at `dir` was made by optimal tracing.
pub fn recording_is_optimal(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir.join("history")) else {
        return false;
    };
    entries
        .flatten()
        .any(|e| trace_of(&e.path()) == Trace::Optimal)
}

/// Serialises `value` as one line of RON in the history's style: `Recv(fd: 4, n: 17)`.
///
/// Allocation-free apart from what `value`'s own fields hold; `out` may be a stack buffer.
pub fn write_compact<W: fmt::Write, T: Serialize + ?Sized>(out: W, value: &T) -> fmt::Result {
    let config = ron::ser::PrettyConfig::new()
        .new_line("")
        .indentor("")
        .separator(" ")
        .compact_arrays(true)
        .compact_structs(true)
        .separate_tuple_members(false);
    ron::ser::to_writer_pretty(out, value, config).map_err(|_| fmt::Error)
}

/// The header line of a new history file, with its newline.
pub fn header_line(actor: ActorId) -> String {
    let mut line = String::new();
    let _ = write_compact(
        &mut line,
        &Header {
            format: FORMAT_VERSION,
            actor,
        },
    );
    line.insert_str(0, "Header");
    line.push('\n');
    line
}

/// A history loaded and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    /// Whose history.
    pub actor: ActorId,
    /// Event 1 is `records[0]`.
    pub records: Vec<Record>,
    /// The file ended inside a record (the process died while writing it); that record was
    /// dropped.
    pub truncated: bool,
}

/// A history that cannot be used, with where and why.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{}: {problem}", located(path, *line))]
pub struct HistoryError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What was expected and what was found.
    pub problem: String,
}

impl History {
    /// Reads and checks a history file.
    pub fn load(path: &Path) -> Result<History, HistoryError> {
        let text = crate::file::read_regular(path).map_err(|e| HistoryError {
            path: path.to_path_buf(),
            line: 0,
            problem: format!("cannot read the history: {e}"),
        })?;
        let text = String::from_utf8(text).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let before = &e.as_bytes()[..at];
            let line = before.iter().filter(|b| **b == b'\n').count() + 1;
            let column = at
                - before
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |i| i + 1)
                + 1;
            HistoryError {
                path: path.to_path_buf(),
                line,
                problem: format!(
                    "expected UTF-8 text (a history record per line), found invalid bytes at \
                     column {column} (byte offset {at} of the file)"
                ),
            }
        })?;
        History::parse(path, &text)
    }

    /// Parses and checks history text; `path` is only used in error messages.
    pub fn parse(path: &Path, text: &str) -> Result<History, HistoryError> {
        let err = |line: usize, problem: String| HistoryError {
            path: path.to_path_buf(),
            line,
            problem,
        };
        let truncated = !text.is_empty() && !text.ends_with('\n');
        let mut lines: Vec<&str> = text.split('\n').collect();
        // The piece after the last newline is empty, or the record being written at death.
        lines.pop();
        let mut numbered = lines.iter().enumerate().map(|(i, l)| (i + 1, *l));
        let (first_no, first) = numbered
            .find(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
            .ok_or_else(|| {
                err(
                    1,
                    "expected a `Header(format: …, actor: …)` line, found an empty file".into(),
                )
            })?;
        let header_text = first.trim().strip_prefix("Header").ok_or_else(|| {
            err(
                first_no,
                format!(
                    "expected `Header(format: {FORMAT_VERSION}, actor: …)`, found `{}`",
                    clip(first)
                ),
            )
        })?;
        let header: Header = ron::from_str(header_text)
            .map_err(|e| err(first_no, format!("malformed header: {e}")))?;
        if header.format != FORMAT_VERSION {
            return Err(err(
                first_no,
                format!(
                    "history format {} is not supported by this ddbx (it reads format {FORMAT_VERSION})",
                    header.format
                ),
            ));
        }
        let mut records = Vec::new();
        let mut checker = Checker::default();
        for (no, line) in numbered {
            let line = line.trim();
            if line.is_empty() || line.starts_with("//") {
                continue;
            }
            if let Some(rest) = line.strip_prefix("Skip")
                && let Ok(skip) = ron::from_str::<Skip>(rest)
            {
                if skip.n == 0 || skip.n > MAX_SKIP {
                    return Err(err(
                        no,
                        format!(
                            "expected a run of 1 to {MAX_SKIP} untraced events, found {}",
                            skip.n
                        ),
                    ));
                }
                for _ in 0..skip.n {
                    checker
                        .check(&Record::Untraced, records.len() + 1)
                        .map_err(|p| err(no, p))?;
                    records.push(Record::Untraced);
                }
                continue;
            }
            let record: Record = ron::from_str(line).map_err(|e| {
                err(
                    no,
                    format!(
                        "expected a history record such as `Recv(fd: 4, n: 17)`, found `{}` ({e})",
                        clip(line)
                    ),
                )
            })?;
            checker
                .check(&record, records.len() + 1)
                .map_err(|p| err(no, p))?;
            records.push(record);
        }
        Ok(History {
            actor: header.actor,
            records,
            truncated,
        })
    }
}

/// `path:line`, or `path` for a problem with the whole file (line 0).
fn located(path: &Path, line: usize) -> String {
    match line {
        0 => path.display().to_string(),
        n => format!("{}:{n}", path.display()),
    }
}

fn clip(s: &str) -> String {
    const MAX: usize = 80;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The invariants of a history, checked record by record.
#[derive(Default)]
struct Checker {
    started: bool,
    exited: bool,
    last_child_index: u32,
}

impl Checker {
    fn check(&mut self, r: &Record, event: usize) -> Result<(), String> {
        if self.exited {
            return Err(format!(
                "event {event}: expected nothing after `Exit`, found `{}`",
                r.kind()
            ));
        }
        match r {
            Record::Start { .. } if self.started => {
                return Err(format!("event {event}: a second `Start`"));
            }
            Record::Start { .. } => self.started = true,
            _ if !self.started => {
                return Err(format!(
                    "event {event}: expected `Start` as the first event, found `{}`",
                    r.kind()
                ));
            }
            Record::Fork { index } | Record::Spawn { index } => {
                if *index != self.last_child_index + 1 {
                    return Err(format!(
                        "event {event}: expected child number {}, found {index} (children are numbered 1, 2, … per actor)",
                        self.last_child_index + 1
                    ));
                }
                self.last_child_index = *index;
            }
            Record::Exit { .. } => self.exited = true,
            _ => {}
        }
        let fd = match r {
            Record::Connect { fd, .. }
            | Record::Recv { fd, .. }
            | Record::NoData { fd }
            | Record::Send { fd, .. } => Some(*fd),
            Record::Accept { fd, new_fd, .. } => {
                if *new_fd < 0 {
                    return Err(format!(
                        "event {event}: accepted fd must be >= 0, found {new_fd}"
                    ));
                }
                Some(*fd)
            }
            Record::Ready { fds, .. } => {
                if let Some(bad) = fds.iter().find(|f| f.fd < 0) {
                    return Err(format!(
                        "event {event}: ready fd must be >= 0, found {}",
                        bad.fd
                    ));
                }
                None
            }
            _ => None,
        };
        if let Some(fd) = fd
            && fd < 0
        {
            return Err(format!("event {event}: fd must be >= 0, found {fd}"));
        }
        Ok(())
    }
}
