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
//! the actor's creation). The reader ([`Reader`]) checks every invariant as it goes and names
//! file and line when one fails. A last line without its newline is a record that was being
//! written when the process died: the reader drops it and says so ([`History::truncated`]).
//! A header with another format version is refused.
//!
//! * `record`: what one line says (the [`Record`] types);
//! * `data`: the bytes of outside peers, as base64;
//! * `reader`: the checking reader, line by line (a long history need not be held whole);
//! * this file: the header, the writer's lines, and [`History`], a history read whole.

mod connects;
mod data;
pub mod fast;
pub mod intent;
mod reader;
mod record;
#[cfg(test)]
mod tests;
pub mod value;

pub use connects::{ChannelFilter, ConnectOutcome, connect_outcome, makes_channels};
pub use data::Data;
pub use reader::{Entry, Reader};
pub use record::{Addr, Call, Origin, ReadyFd, Record, Shut, WaitCall, datagram_sum, is_bystander};

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

/// The most untraced events a history read whole ([`History::load`]) may hold: each is a
/// record in memory, and a `Skip` line of a few bytes must not make ddbx allocate gigabytes
/// (16,777,216 untraced events take 1.2 GB; the streaming [`Reader`] has no such bound).
pub const MAX_UNTRACED: u64 = 1 << 24;

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
/// cannot be read: the loader reports that properly). Reads the header only.
pub fn trace_of(path: &Path) -> Trace {
    crate::file::open_regular(path)
        .ok()
        .and_then(|f| Reader::new(path, std::io::BufReader::new(f)).ok())
        .map_or(Trace::Full, |r| r.trace())
}

/// What the history open as `file` logs, from its header (as [`trace_of`]); reads from the
/// file's start and leaves its offset there.
pub fn trace_of_file(file: &std::fs::File) -> Trace {
    use std::io::Seek;
    let mut file = file;
    let trace = Reader::new(Path::new("?"), std::io::BufReader::new(file))
        .ok()
        .map_or(Trace::Full, |r| r.trace());
    let _ = file.rewind();
    trace
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
    /// The values clocks and randomness returned, each after the event it follows (not
    /// events: nothing that counts or orders events looks here).
    pub values: Vec<(u64, value::Value)>,
    /// The file ended inside a record (the process died while writing it); that record was
    /// dropped.
    pub truncated: bool,
    /// A connect whose intent line is the history's last (no event after it): the process
    /// died in it or before its record ([`intent`]).
    pub unlogged_connect: Option<intent::ConnectIntent>,
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
    /// The history of an actor that made no event.
    pub fn empty(actor: ActorId) -> History {
        History {
            actor,
            records: Vec::new(),
            values: Vec::new(),
            truncated: false,
            unlogged_connect: None,
        }
    }

    /// The thread that made each event (event *k* is index *k − 1*), from the history's `~t`
    /// lines ([`value::Value::Thread`]): `t1` until the first, and again from each `Exec` (an
    /// image starts with its main thread). Empty when the history names no thread.
    pub fn threads(&self) -> Vec<u32> {
        let mut switches = self
            .values
            .iter()
            .filter_map(|(after, v)| match v {
                value::Value::Thread { t } => Some((*after, *t)),
                _ => None,
            })
            .peekable();
        if switches.peek().is_none() {
            return Vec::new();
        }
        let mut now = 1;
        let mut threads = Vec::with_capacity(self.records.len());
        for (i, record) in self.records.iter().enumerate() {
            if matches!(record, Record::Exec { .. }) {
                now = 1;
            }
            while let Some((_, t)) = switches.next_if(|(after, _)| *after <= i as u64) {
                now = t;
            }
            threads.push(now);
        }
        threads
    }

    /// Reads and checks a history file.
    pub fn load(path: &Path) -> Result<History, HistoryError> {
        let file = crate::file::open_regular(path).map_err(|e| HistoryError {
            path: path.to_path_buf(),
            line: 0,
            problem: format!("cannot read the history: {e}"),
        })?;
        History::read(Reader::new(path, std::io::BufReader::new(file))?)
    }

    /// Reads and checks a history already open as `file` (from its start); `path` is only
    /// used in error messages.
    pub fn load_file(path: &Path, file: std::fs::File) -> Result<History, HistoryError> {
        History::read(Reader::new(path, std::io::BufReader::new(file))?)
    }

    /// Parses and checks history text; `path` is only used in error messages.
    pub fn parse(path: &Path, text: &str) -> Result<History, HistoryError> {
        History::parse_bytes(path, text.as_bytes())
    }

    /// Parses and checks the bytes of a history file, as [`History::load`] reads it (invalid
    /// UTF-8 is an error at its line); `path` is only used in error messages.
    pub fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<History, HistoryError> {
        History::read(Reader::new(path, bytes)?)
    }

    /// Every record the reader gives (each untraced event of a `Skip` as [`Record::Untraced`]).
    fn read<R: std::io::BufRead>(mut reader: Reader<R>) -> Result<History, HistoryError> {
        let mut records = Vec::new();
        let mut untraced = 0u64;
        let mut values = Vec::new();
        while let Some(entry) = reader.next_entry()? {
            match entry {
                Entry::Event { record, .. } => records.push(record),
                Entry::Skip { n, .. } => {
                    untraced += n;
                    let error = |problem| HistoryError {
                        path: reader.path().to_path_buf(),
                        line: reader.line(),
                        problem,
                    };
                    if untraced > MAX_UNTRACED {
                        return Err(error(format!(
                            "expected at most {MAX_UNTRACED} untraced events in one history \
                             (ddbx holds a history in memory), found `Skip` lines that make \
                             {untraced}"
                        )));
                    }
                    records.try_reserve(n as usize).map_err(|_| {
                        error(format!(
                            "`Skip(n: {n})`: not enough memory for {n} more events"
                        ))
                    })?;
                    records.extend(std::iter::repeat_n(Record::Untraced, n as usize));
                }
                Entry::Value { after, value } => values.push((after, value)),
                Entry::Intent { .. } | Entry::Blank => {}
            }
        }
        Ok(History {
            actor: reader.header().actor,
            records,
            values,
            truncated: reader.truncated(),
            unlogged_connect: reader.unlogged_connect().cloned(),
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

/// The start of a long line, for a message.
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
