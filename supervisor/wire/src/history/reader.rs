//! Reading a history line by line, checking it as it goes: what [`History::load`] collects,
//! and what a pass over a large recording streams without holding it (the end of a record
//! rewrites every history this way).
//!
//! The reader checks every invariant (`Checker`: a `Start` first and only once, nothing after
//! `Exit`, children numbered 1, 2, …, fds not negative, `Skip` runs of 1 to [`MAX_SKIP`]) and
//! names file, line and what was expected when one fails. A last line without its newline is a
//! record that was being written when the process died: it is not a record
//! ([`Reader::truncated`]).

use super::intent::{CONNECT_PREFIX, ConnectIntent};
use super::value::{Deltas, Value};
use super::{Header, HeaderExtra, HistoryError, MAX_SKIP, Record, Skip, Trace, clip};
use crate::{FORMAT_VERSION, OLDEST_FORMAT};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// One line of a history after its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Event `event` (1-based): a record.
    Event {
        /// Its event number.
        event: u64,
        /// The record.
        record: Record,
    },
    /// Optimal tracing's `Skip(n: …)`: events `first` to `first + n - 1`, not logged.
    Skip {
        /// The first of them.
        first: u64,
        /// How many.
        n: u64,
    },
    /// A value a clock or a source of randomness returned, after event `after` (not an
    /// event: see [`super::value`]).
    Value {
        /// The events before it.
        after: u64,
        /// What was returned.
        value: Value,
    },
    /// A connect about to be made, after event `after` (not an event: see
    /// [`super::intent`]).
    Intent {
        /// The events before it.
        after: u64,
        /// The connect.
        intent: ConnectIntent,
    },
    /// A blank line or a `//` comment.
    Blank,
}

/// A history being read: the header is read and checked when it is made, the rest one line
/// at a time with [`Reader::next_entry`].
pub struct Reader<R> {
    path: PathBuf,
    input: R,
    /// The number of the line read last.
    line: usize,
    /// The text of the line read last (without its newline).
    text: String,
    /// Events so far.
    events: u64,
    header: Header,
    trace: Trace,
    checker: Checker,
    /// The values before the current line (value lines are deltas).
    deltas: Deltas,
    /// The bytes after the last newline: a record being written when the process died.
    torn: Option<Vec<u8>>,
    /// The last intent line, while no event has followed it.
    unsettled: Option<ConnectIntent>,
}

impl<R: BufRead> Reader<R> {
    /// Reads up to and including the header line of the history read from `input` (`path`
    /// names it in errors).
    pub fn new(path: &Path, input: R) -> Result<Reader<R>, HistoryError> {
        let mut reader = Reader {
            path: path.to_path_buf(),
            input,
            line: 0,
            text: String::new(),
            events: 0,
            header: Header {
                format: FORMAT_VERSION,
                actor: crate::ActorId(0),
            },
            trace: Trace::Full,
            checker: Checker::default(),
            deltas: Deltas::default(),
            torn: None,
            unsettled: None,
        };
        loop {
            if !reader.read_line()? {
                let found = match &reader.torn {
                    // The first line is all there is, without its newline.
                    Some(bytes) => format!(
                        "`{}` without a newline (the file ends inside its first line)",
                        clip(&String::from_utf8_lossy(bytes))
                    ),
                    None => "an empty file".into(),
                };
                return Err(reader.error_at(
                    1.max(reader.line),
                    format!("expected a `Header(format: …, actor: …)` line, found {found}"),
                ));
            }
            let line = reader.text.trim();
            if !line.is_empty() && !line.starts_with("//") {
                break;
            }
        }
        let first = reader.text.trim().to_string();
        let Some(header_text) = first.strip_prefix("Header") else {
            return Err(reader.error(format!(
                "expected `Header(format: {FORMAT_VERSION}, actor: …)`, found `{}`",
                clip(&first)
            )));
        };
        let header: Header = ron::from_str(header_text)
            .map_err(|e| reader.error(format!("malformed header: {e}")))?;
        if !(OLDEST_FORMAT..=FORMAT_VERSION).contains(&header.format) {
            return Err(reader.error(format!(
                "history format {} is not supported by this ddbx (it reads formats {OLDEST_FORMAT} to {FORMAT_VERSION})",
                header.format
            )));
        }
        reader.trace = ron::from_str::<HeaderExtra>(header_text)
            .map(|h| h.trace)
            .unwrap_or_default();
        reader.header = header;
        Ok(reader)
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// What the history logs (its header's `trace`).
    pub fn trace(&self) -> Trace {
        self.trace
    }

    /// The file being read (as errors name it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The number of the line read last (1-based; 0 before the first).
    pub fn line(&self) -> usize {
        self.line
    }

    /// Events read so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The text of the line last returned (after [`Reader::new`]: the header's), as it is in
    /// the file, without its newline.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the file ended inside a record (after [`Reader::next_entry`] said `None`).
    pub fn truncated(&self) -> bool {
        self.torn.is_some()
    }

    /// The bytes of that record, as far as they were written.
    pub fn torn(&self) -> Option<&[u8]> {
        self.torn.as_deref()
    }

    /// The connect whose intent line no event followed (after [`Reader::next_entry`] said
    /// `None`: the process died in it, or before its record).
    pub fn unlogged_connect(&self) -> Option<&ConnectIntent> {
        self.unsettled.as_ref()
    }

    /// The next line after the header, checked; `None` at the end (or at a torn last line).
    pub fn next_entry(&mut self) -> Result<Option<Entry>, HistoryError> {
        if !self.read_line()? {
            return Ok(None);
        }
        let line = self.text.trim();
        if line.is_empty() || line.starts_with("//") {
            return Ok(Some(Entry::Blank));
        }
        if line.starts_with(CONNECT_PREFIX) {
            let intent = ConnectIntent::parse(line).map_err(|e| self.error(e))?;
            self.unsettled = Some(intent.clone());
            return Ok(Some(Entry::Intent {
                after: self.events,
                intent,
            }));
        }
        if line.starts_with('~') {
            let value = self.deltas.parse(line).map_err(|e| self.error(e))?;
            return Ok(Some(Entry::Value {
                after: self.events,
                value,
            }));
        }
        if let Some(rest) = line.strip_prefix("Skip")
            && let Ok(skip) = ron::from_str::<Skip>(rest)
        {
            if skip.n == 0 || skip.n > MAX_SKIP {
                return Err(self.error(format!(
                    "expected a run of 1 to {MAX_SKIP} untraced events, found {}",
                    skip.n
                )));
            }
            let first = self.events + 1;
            // Untraced events change nothing the checker tracks: checking one checks all.
            self.check(&Record::Untraced, first)?;
            self.events += skip.n;
            self.unsettled = None;
            return Ok(Some(Entry::Skip { first, n: skip.n }));
        }
        let record: Record = match super::fast::parse_line(line) {
            Some(record) => record,
            None => ron::from_str(line).map_err(|e| {
                self.error(format!(
                    "expected a history record such as `Recv(fd: 4, n: 17)`, found `{}` ({e})",
                    clip(line)
                ))
            })?,
        };
        let event = self.events + 1;
        self.check(&record, event)?;
        self.events = event;
        self.unsettled = None;
        Ok(Some(Entry::Event { event, record }))
    }

    /// Reads the next whole line into `text`; false at the end. A last line without its
    /// newline is not a line: it marks the history as truncated.
    fn read_line(&mut self) -> Result<bool, HistoryError> {
        let mut bytes = Vec::new();
        let n = self
            .input
            .read_until(b'\n', &mut bytes)
            .map_err(|e| self.error_at(0, format!("cannot read the history: {e}")))?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        if bytes.last() != Some(&b'\n') {
            self.torn = Some(bytes);
            return Ok(false);
        }
        bytes.pop();
        self.text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            self.error(format!(
                "expected UTF-8 text (a history record per line), found invalid bytes at column {}",
                at + 1
            ))
        })?;
        Ok(true)
    }

    fn check(&mut self, record: &Record, event: u64) -> Result<(), HistoryError> {
        self.checker
            .check(record, event)
            .map_err(|problem| self.error(problem))
    }

    /// An error at the line read last.
    fn error(&self, problem: String) -> HistoryError {
        self.error_at(self.line, problem)
    }

    fn error_at(&self, line: usize, problem: String) -> HistoryError {
        HistoryError {
            path: self.path.clone(),
            line,
            problem,
        }
    }
}

/// The invariants of a history, checked record by record.
#[derive(Default)]
struct Checker {
    started: bool,
    exited: bool,
    last_child_index: u32,
}

impl Checker {
    fn check(&mut self, r: &Record, event: u64) -> Result<(), String> {
        if self.exited {
            return Err(format!(
                "event {event}: expected nothing after `Exit`, found `{}`",
                r.kind()
            ));
        }
        match r {
            Record::Start { .. } if self.started => {
                return Err(format!(
                    "event {event}: expected `Start` only as event 1, found a second `Start`"
                ));
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
        check_fds(r, event)
    }
}

/// The fds a record names must not be negative.
fn check_fds(r: &Record, event: u64) -> Result<(), String> {
    let fd = match r {
        Record::Connect { fd, .. }
        | Record::ConnectAgain { fd, .. }
        | Record::SocketError { fd, .. }
        | Record::Recv { fd, .. }
        | Record::Peek { fd, .. }
        | Record::RecvDatagram { fd, .. }
        | Record::SendDatagram { fd, .. }
        | Record::NoData { fd }
        | Record::Close { fd }
        | Record::Shutdown { fd, .. }
        | Record::Send { fd, .. } => Some(*fd),
        Record::Accept { fd, new_fd, .. } => {
            if *new_fd < 0 {
                return Err(format!(
                    "event {event}: accepted fd must be >= 0, found {new_fd}"
                ));
            }
            Some(*fd)
        }
        Record::Pair { fd, peer_fd } => {
            if *fd < 0 || *peer_fd < 0 || fd == peer_fd {
                return Err(format!(
                    "event {event}: a socketpair's fds must be two fds >= 0, found {fd} and {peer_fd}"
                ));
            }
            None
        }
        Record::Dup { fd, new_fd } => {
            if *new_fd < 0 {
                return Err(format!(
                    "event {event}: a dup's new fd must be >= 0, found {new_fd}"
                ));
            }
            Some(*fd)
        }
        Record::Pipe { read_fd, write_fd } => {
            if *read_fd < 0 || *write_fd < 0 || read_fd == write_fd {
                return Err(format!(
                    "event {event}: a pipe's fds must be two fds >= 0, found {read_fd} and {write_fd}"
                ));
            }
            None
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
    match fd {
        Some(fd) if fd < 0 => Err(format!("event {event}: fd must be >= 0, found {fd}")),
        _ => Ok(()),
    }
}
