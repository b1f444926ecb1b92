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
//! one sees the other. The reader checks every invariant and names file and line when one
//! fails. A last line without its newline is a record that was being written when the process
//! died: the reader drops it and says so ([`History::truncated`]).

use crate::{ActorId, Errno, Events, FORMAT_VERSION};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// A socket address as text: `127.0.0.1:4001`, `[::1]:4001`, `unix:/path`, `unix:@abstract`,
/// `unix:` (unnamed), or `?` when the kernel gave none.
pub type Addr = String;

/// Bytes exchanged with a peer outside the session, written as base64 text in histories.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Data(pub Vec<u8>);

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

impl Data {
    /// The bytes as base64 text.
    pub fn to_base64(&self) -> String {
        let mut out = String::with_capacity(self.0.len().div_ceil(3) * 4);
        for chunk in self.0.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    /// Parses base64 text.
    pub fn from_base64(text: &str) -> Option<Data> {
        let mut out = Vec::with_capacity(text.len() / 4 * 3);
        let bytes = text.as_bytes();
        if bytes.len() % 4 != 0 {
            return None;
        }
        for quad in bytes.chunks(4) {
            let mut n = 0u32;
            let mut pad = 0;
            for &c in quad {
                let v = match c {
                    b'=' => {
                        pad += 1;
                        0
                    }
                    _ if pad > 0 => return None,
                    _ => B64.iter().position(|x| *x == c)? as u32,
                };
                n = (n << 6) | v;
            }
            let full = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            out.extend_from_slice(&full[..3 - pad.min(2)]);
        }
        Some(Data(out))
    }
}

impl Serialize for Data {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_base64())
    }
}

impl<'de> Deserialize<'de> for Data {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Data::from_base64(&s).ok_or_else(|| serde::de::Error::custom("expected base64 bytes"))
    }
}

/// The first line of every history file.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Must equal [`FORMAT_VERSION`].
    pub format: u32,
    /// Whose history this is.
    pub actor: ActorId,
}

/// How an actor came to exist: the key by which replay recognises it.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// Started by ddbx: the session's first process.
    Root,
    /// Child number `index` (1-based, counted per parent) created by fork (also vfork, daemon,
    /// forkpty: everything that runs the fork handlers).
    Fork {
        /// The parent actor.
        parent: ActorId,
        /// The parent's fork/spawn counter at this creation (1-based).
        index: u32,
    },
    /// Child number `index` created by posix_spawn/posix_spawnp (shares the counter with fork).
    Spawn {
        /// The parent actor.
        parent: ActorId,
        /// The parent's fork/spawn counter at this creation (1-based).
        index: u32,
    },
    /// A process created by a path the hooks do not see (system(), popen(), …): attached to the
    /// actor whose process was its parent, numbered in the order ddbx saw them.
    Unhooked {
        /// The parent actor.
        parent: ActorId,
        /// 1-based, counted per parent, separately from fork/spawn.
        index: u32,
    },
}

impl Origin {
    /// The parent actor, if any (`p0`, ddbx itself, for the root).
    pub fn parent(&self) -> ActorId {
        match *self {
            Origin::Root => ActorId::DDBX,
            Origin::Fork { parent, .. }
            | Origin::Spawn { parent, .. }
            | Origin::Unhooked { parent, .. } => parent,
        }
    }
}

/// Which readiness call produced a ready set.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitCall {
    /// select / pselect.
    Select,
    /// poll / ppoll.
    Poll,
    /// epoll_wait / epoll_pwait / epoll_pwait2.
    Epoll,
}

/// Which call a [`Record::Fail`] or [`Record::NoData`] belongs to.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// read, recv, recvfrom, recvmsg, readv, …
    Recv,
    /// write, send, sendto, sendmsg, writev, sendfile, …
    Send,
    /// accept, accept4.
    Accept,
    /// select, poll, epoll_wait and their variants.
    Wait,
}

/// One fd of a ready set.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyFd {
    /// The fd the program watched.
    pub fd: i32,
    /// What was reported for it.
    pub ev: Events,
}

/// One event of an actor's history.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// The actor's creation (always event 1).
    Start {
        /// The process id in this run (not reproduced by replay).
        pid: i32,
        /// The parent's process id in this run.
        ppid: i32,
        /// How the actor was created.
        origin: Origin,
        /// The program and its arguments (of the first image).
        argv: Vec<String>,
        /// Host name.
        host: String,
    },
    /// The actor replaced its program image (execve and friends); same actor, same history.
    Exec {
        /// The new program and its arguments.
        argv: Vec<String>,
    },
    /// The actor created child number `index` by fork.
    Fork {
        /// 1-based per-actor creation counter (shared with [`Record::Spawn`]).
        index: u32,
    },
    /// The actor created child number `index` by posix_spawn.
    Spawn {
        /// 1-based per-actor creation counter (shared with [`Record::Fork`]).
        index: u32,
    },
    /// A connect on a stream socket, and how it ended.
    Connect {
        /// The connecting socket.
        fd: i32,
        /// `None` when connected; `EINPROGRESS` for a non-blocking connect under way; else
        /// the refusal (`ECONNREFUSED`, `ENOENT`, …).
        err: Option<Errno>,
        /// Our end's address (`?` when refused).
        local: Addr,
        /// The address connected to.
        remote: Addr,
    },
    /// An accept that returned a connection.
    Accept {
        /// The listening socket.
        fd: i32,
        /// The new connection's fd.
        new_fd: i32,
        /// Our end's address.
        local: Addr,
        /// The peer's address.
        remote: Addr,
        /// The connecting process (Unix sockets only, from SO_PEERCRED).
        peer_pid: Option<i32>,
    },
    /// A receive on a stream socket that returned `n` bytes (`0`: end of stream).
    Recv {
        /// The socket.
        fd: i32,
        /// Bytes returned.
        n: u64,
        /// The bytes, when the peer is outside the session (input to replay).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Data>,
    },
    /// A receive that found no data (non-blocking, EAGAIN): the paper's `-1`.
    NoData {
        /// The socket.
        fd: i32,
    },
    /// A send on a stream socket that took `n` bytes.
    Send {
        /// The socket.
        fd: i32,
        /// Bytes taken by the kernel.
        n: u64,
        /// The bytes, when the peer is outside the session (checked by replay).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Data>,
    },
    /// A socket call that failed (other than a receive finding no data).
    Fail {
        /// Which kind of call.
        call: Call,
        /// The fd it was made on (`-1` for readiness calls).
        fd: i32,
        /// The error the program saw.
        err: Errno,
    },
    /// A readiness call (select/poll/epoll) returned; `fds` empty means it timed out.
    Ready {
        /// Which call.
        call: WaitCall,
        /// What it reported, in the order it reported it.
        fds: Vec<ReadyFd>,
    },
    /// The actor exited with this status (exit(), _exit(), return from main).
    Exit {
        /// The exit status.
        status: i32,
    },
    /// The program published a variable value (`ddbx_set("x", 1)`): a probe event, logged so
    /// that the offline analysis can evaluate predicates over it.
    Probe {
        /// The variable's name.
        name: String,
        /// Its new value.
        value: i64,
    },
}

impl Record {
    /// The record's kind, as a word: `Recv`, `Accept`, ….
    pub fn kind(&self) -> &'static str {
        match self {
            Record::Start { .. } => "Start",
            Record::Exec { .. } => "Exec",
            Record::Fork { .. } => "Fork",
            Record::Spawn { .. } => "Spawn",
            Record::Connect { .. } => "Connect",
            Record::Accept { .. } => "Accept",
            Record::Recv { .. } => "Recv",
            Record::NoData { .. } => "NoData",
            Record::Send { .. } => "Send",
            Record::Fail { .. } => "Fail",
            Record::Ready { .. } => "Ready",
            Record::Exit { .. } => "Exit",
            Record::Probe { .. } => "Probe",
        }
    }

    /// This record as one line of text (no newline), exactly as it is stored.
    pub fn to_line(&self) -> String {
        let mut line = String::new();
        // Writing to a String cannot fail, and these types always serialise.
        let _ = write_compact(&mut line, self);
        line
    }

    /// A copy with what changes from run to run blanked, for comparing runs: pids, ports, and
    /// program arguments after `argv[0]` (they may hold a temporary file name or a pid, which
    /// ddbx does not replay yet).
    pub fn without_run_details(&self) -> Record {
        let mut r = self.clone();
        match &mut r {
            Record::Start {
                pid, ppid, argv, ..
            } => {
                *pid = 0;
                *ppid = 0;
                argv.truncate(1);
            }
            Record::Exec { argv } => argv.truncate(1),
            Record::Connect { local, remote, .. } => {
                *local = blank_port(local);
                *remote = blank_port(remote);
            }
            Record::Accept {
                local,
                remote,
                peer_pid,
                ..
            } => {
                *local = blank_port(local);
                *remote = blank_port(remote);
                *peer_pid = peer_pid.map(|_| 0);
            }
            _ => {}
        }
        r
    }
}

fn blank_port(addr: &str) -> String {
    if addr.starts_with("unix:") {
        return addr.to_string();
    }
    match addr.rfind(':') {
        Some(i) => format!("{}:*", &addr[..i]),
        None => addr.to_string(),
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_compact(f, self)
    }
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

/// Whether an actor with these records is a *bystander*: it has no socket or probe event, so
/// nothing in it can be held or asked for (a shell's helper that talks through pipes). A halting
/// replay lets bystanders run freely, and its termination detector does not wait for them.
pub fn is_bystander(records: &[Record]) -> bool {
    !records.iter().any(|r| {
        matches!(
            r,
            Record::Connect { .. }
                | Record::Accept { .. }
                | Record::Recv { .. }
                | Record::NoData { .. }
                | Record::Send { .. }
                | Record::Fail { .. }
                | Record::Ready { .. }
                | Record::Probe { .. }
        )
    })
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
#[error("{path}:{line}: {problem}")]
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
        let text = std::fs::read(path).map_err(|e| HistoryError {
            path: path.to_path_buf(),
            line: 0,
            problem: format!("cannot read the history: {e}"),
        })?;
        let text = String::from_utf8(text).map_err(|e| HistoryError {
            path: path.to_path_buf(),
            line: 0,
            problem: format!(
                "expected UTF-8 text, found invalid bytes at offset {}",
                e.utf8_error().valid_up_to()
            ),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Record> {
        vec![
            Record::Start {
                pid: 10,
                ppid: 9,
                origin: Origin::Fork {
                    parent: ActorId(1),
                    index: 1,
                },
                argv: vec!["./a".into(), "x y".into()],
                host: "h".into(),
            },
            Record::Connect {
                fd: 3,
                err: Some(Errno::ECONNREFUSED),
                local: "?".into(),
                remote: "127.0.0.1:80".into(),
            },
            Record::Ready {
                call: WaitCall::Epoll,
                fds: vec![ReadyFd {
                    fd: 4,
                    ev: Events(0x11),
                }],
            },
            Record::Recv {
                fd: 4,
                n: 17,
                data: None,
            },
            Record::NoData { fd: 4 },
            Record::Fork { index: 1 },
            Record::Exit { status: 0 },
        ]
    }

    #[test]
    fn lines_round_trip_and_read_like_the_paper() {
        let mut text = header_line(ActorId(3));
        for r in sample() {
            let line = r.to_line();
            assert!(!line.contains('\n'));
            text.push_str(&line);
            text.push('\n');
        }
        assert!(text.contains("Recv(fd: 4, n: 17)"), "{text}");
        let h = History::parse(Path::new("h.ron"), &text).unwrap();
        assert_eq!(h.actor, ActorId(3));
        assert_eq!(h.records, sample());
        assert!(!h.truncated);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_reported() {
        let mut text = header_line(ActorId(2));
        text.push_str(&sample()[0].to_line());
        text.push('\n');
        text.push_str("Recv(fd: 4, n:");
        let h = History::parse(Path::new("h.ron"), &text).unwrap();
        assert_eq!(h.records.len(), 1);
        assert!(h.truncated);
    }

    #[test]
    fn errors_name_the_line_and_what_was_expected() {
        let mut text = header_line(ActorId(2));
        text.push_str(&sample()[0].to_line());
        text.push_str("\nRecv(fd: 4, bytes: 3)\n");
        let e = History::parse(Path::new("h.ron"), &text).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string()
                .starts_with("h.ron:3: expected a history record"),
            "{e}"
        );

        let e =
            History::parse(Path::new("h.ron"), "Header(format: 99, actor: \"p1\")\n").unwrap_err();
        assert!(e.problem.contains("format 99"), "{e}");

        let text = format!("{}Recv(fd: 4, n: 3)\n", header_line(ActorId(1)));
        let e = History::parse(Path::new("h.ron"), &text).unwrap_err();
        assert!(e.problem.contains("expected `Start`"), "{e}");

        let mut text = header_line(ActorId(1));
        for r in [sample()[0].clone(), Record::Fork { index: 2 }] {
            text.push_str(&r.to_line());
            text.push('\n');
        }
        let e = History::parse(Path::new("h.ron"), &text).unwrap_err();
        assert!(e.problem.contains("expected child number 1"), "{e}");
    }

    #[test]
    fn run_details_are_blanked_for_comparison() {
        let r = Record::Connect {
            fd: 3,
            err: None,
            local: "127.0.0.1:40001".into(),
            remote: "[::1]:80".into(),
        };
        assert_eq!(
            r.without_run_details(),
            Record::Connect {
                fd: 3,
                err: None,
                local: "127.0.0.1:*".into(),
                remote: "[::1]:*".into(),
            }
        );
    }
}

#[cfg(test)]
mod data_tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for len in 0..20usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let d = Data(bytes.clone());
            assert_eq!(Data::from_base64(&d.to_base64()), Some(Data(bytes)));
        }
        assert_eq!(Data(b"hi\n".to_vec()).to_base64(), "aGkK");
        assert_eq!(Data::from_base64("a=b="), None);
        let r = Record::Recv {
            fd: 3,
            n: 3,
            data: Some(Data(b"hi\n".to_vec())),
        };
        assert_eq!(r.to_line(), "Recv(fd: 3, n: 3, data: Some(\"aGkK\"))");
        let plain = Record::Recv {
            fd: 3,
            n: 3,
            data: None,
        };
        assert_eq!(plain.to_line(), "Recv(fd: 3, n: 3)");
    }
}
