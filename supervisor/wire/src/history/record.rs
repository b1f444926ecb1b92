//! What one line of a history says: the [`Record`] of one event, and the small types its
//! fields use ([`Origin`], [`WaitCall`], [`Call`], [`ReadyFd`], [`Addr`]).
//!
//! Old variants and fields are not edited in place: a new field gets a serde default, so that
//! histories of the same format version keep reading.

use super::{Data, write_compact};
use crate::{ActorId, Errno, Events};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A socket address as text: `127.0.0.1:4001`, `[::1]:4001`, `unix:/path`, `unix:@abstract`,
/// `unix:` (unnamed), or `?` when the kernel gave none.
pub type Addr = String;

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
        /// When the call returned (CLOCK_MONOTONIC, ns; record only): orders the connects of
        /// one address pair when ports are reused (`supervisor/src/analysis/channels.rs`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
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
        /// When the call returned (CLOCK_MONOTONIC, ns; record only): orders the accepts of
        /// one address pair when ports are reused.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
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
        /// The fds that came with the bytes (`SCM_RIGHTS`), by the numbers they got here: each
        /// is bound to what the sender passed (`Send::passed`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        passed: Vec<i32>,
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
        /// On a pipe of the session: how many writes into that pipe came before this one,
        /// whoever made them (several processes may share a write end: replay makes them write
        /// in this order).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<u64>,
        /// The fds this send passed (`SCM_RIGHTS`), by their numbers in the sender: the receive
        /// that gets the send's first byte gets them (`Recv::passed`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        passed: Vec<i32>,
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
    /// Optimal tracing only: an event (a receive, a ready set, a send) whose outcome was not
    /// logged because nothing else could have come out of it; replay makes the real call and
    /// takes what comes. Stored in runs, as `Skip(n: 12)` lines, see [`super::Trace::Optimal`].
    Untraced,
    /// A connect on a socket whose connect was already under way or done: how a program (hiredis)
    /// learns the outcome of a non-blocking connect. Not a new connection.
    ConnectAgain {
        /// The connecting socket.
        fd: i32,
        /// `None`: connected now; `EISCONN`: connected before; `EALREADY`: still under way;
        /// else the error that ended the connect (`ECONNREFUSED`, …).
        err: Option<Errno>,
    },
    /// `getsockopt(SO_ERROR)` on a stream socket: its pending error as the program read it
    /// (how libpq and curl learn the outcome of a non-blocking connect).
    SocketError {
        /// The socket.
        fd: i32,
        /// The error read (`None`: 0).
        err: Option<Errno>,
    },
    /// A stream socketpair: a channel whose two ends this actor made at once (fd `fd` is its
    /// first end, `peer_fd` its second), both inherited by the children it forks (nginx's
    /// master and its workers talk through them).
    Pair {
        /// The first end.
        fd: i32,
        /// The second end.
        peer_fd: i32,
    },
    /// The actor let go of a stream socket: it closed the last fd of its process that referred
    /// to the connection (close, close_range, dup2 over it, or an exec that closed it because
    /// of `FD_CLOEXEC`). The peer sees the end of the stream (a 0-byte receive, `hup`/`rdhup`
    /// in a ready set, `EPIPE` on a send) only once every process holding the connection let
    /// go of it, so these are events that replay orders like sends.
    Close {
        /// The fd closed.
        fd: i32,
    },
    /// `shutdown(2)` on a stream socket: after `Write` or `Both`, the peer sees the end of the
    /// stream whoever else still holds the connection.
    Shutdown {
        /// The socket.
        fd: i32,
        /// Which directions were shut down.
        how: Shut,
        /// The error, when the call failed (the socket was not connected).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        err: Option<Errno>,
    },
    /// A pipe (pipe(2), pipe2(2)): a one-way channel whose two ends this actor made at once,
    /// read through `read_fd` and written through `write_fd`, both inherited by the children it
    /// forks and by the programs it execs (a shell's `a | b`, `$(…)`). Its bytes are numbered
    /// like a connection's from its write end to its read end, and the end of the stream on the
    /// read end needs every writer's close.
    Pipe {
        /// The read end.
        read_fd: i32,
        /// The write end.
        write_fd: i32,
    },
    /// `new_fd` now refers to the channel end `fd` refers to (dup, dup2, dup3, `F_DUPFD`): how
    /// a shell puts a pipe's end on a child's stdin or stdout before the exec.
    Dup {
        /// The channel end duplicated.
        fd: i32,
        /// The new fd.
        new_fd: i32,
    },
    /// A receive with `MSG_PEEK` on a stream socket that returned `n` bytes (`0`: the end of
    /// the stream): it saw the next `n` bytes without taking them, so the stream did not
    /// advance and the next receive gets them again (vsftpd peeks at each command line before
    /// reading it). The bytes of an outside peer are kept by the receive that takes them.
    Peek {
        /// The socket.
        fd: i32,
        /// Bytes seen.
        n: u64,
    },
    /// A receive on a UDP socket (read, recv, recvfrom, recvmsg, one message of a recvmmsg)
    /// that returned a datagram: which one came, from whom, is what differs from run to run.
    /// Replay hands it to the program from the history (the datagram the kernel holds, if
    /// any, is dropped), so its bytes are always kept.
    RecvDatagram {
        /// The socket.
        fd: i32,
        /// What the call returned: the datagram's length, or less when the program's buffer
        /// was shorter (its full length with `MSG_TRUNC` in the call's flags).
        n: u64,
        /// The sender's address (`?` when the kernel gave none).
        from: Addr,
        /// The bytes the program's buffers got.
        data: Data,
        /// The ancillary data the kernel gave with it (recvmsg's control buffer: the
        /// destination address of `IP_PKTINFO`, timestamps), whole cmsgs as the kernel wrote them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        control: Option<Data>,
        /// recvmsg's `msg_flags` on return (`MSG_TRUNC`, `MSG_CTRUNC`), when not 0.
        #[serde(default, skip_serializing_if = "is_zero")]
        flags: i32,
    },
    /// A send on a UDP socket that took `n` bytes: one datagram, to `to`. Replay does not send
    /// it (whoever received it, inside the session or not, gets it from its own history) and
    /// returns what the record's call returned.
    SendDatagram {
        /// The socket.
        fd: i32,
        /// Bytes taken.
        n: u64,
        /// Where it went: the call's address, or the socket's connected peer (`?` when none).
        to: Addr,
        /// The socket's own address after the send (what its receiver sees as the sender).
        local: Addr,
        /// The datagram's bytes, summed ([`datagram_sum`]): which receive got it.
        sum: u64,
    },
}

fn is_zero(v: &i32) -> bool {
    *v == 0
}

/// The sum of a datagram's bytes that a [`Record::SendDatagram`] keeps (64-bit FNV-1a): the
/// analysis pairs each received datagram with the send whose sum, length and address match.
pub fn datagram_sum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Which directions a [`Record::Shutdown`] shut down.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shut {
    /// `SHUT_RD`: no more receives.
    Read,
    /// `SHUT_WR`: no more sends; the peer sees the end of the stream.
    Write,
    /// `SHUT_RDWR`: both.
    Both,
}

impl Shut {
    /// From shutdown(2)'s `how`; `None` for a value the kernel would refuse.
    pub fn from_how(how: i32) -> Option<Shut> {
        match how {
            0 => Some(Shut::Read),
            1 => Some(Shut::Write),
            2 => Some(Shut::Both),
            _ => None,
        }
    }

    /// Whether the peer sees the end of the stream after it.
    pub fn ends_sending(self) -> bool {
        matches!(self, Shut::Write | Shut::Both)
    }
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
            Record::Untraced => "Untraced",
            Record::ConnectAgain { .. } => "ConnectAgain",
            Record::SocketError { .. } => "SocketError",
            Record::Pair { .. } => "Pair",
            Record::Close { .. } => "Close",
            Record::Shutdown { .. } => "Shutdown",
            Record::Pipe { .. } => "Pipe",
            Record::Dup { .. } => "Dup",
            Record::Peek { .. } => "Peek",
            Record::RecvDatagram { .. } => "RecvDatagram",
            Record::SendDatagram { .. } => "SendDatagram",
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
            Record::Connect {
                local, remote, at, ..
            } => {
                *local = blank_port(local);
                *remote = blank_port(remote);
                *at = None;
            }
            Record::Accept {
                local,
                remote,
                peer_pid,
                at,
                ..
            } => {
                *local = blank_port(local);
                *remote = blank_port(remote);
                *peer_pid = peer_pid.map(|_| 0);
                *at = None;
            }
            Record::RecvDatagram { from, .. } => *from = blank_port(from),
            Record::SendDatagram { to, local, .. } => {
                *to = blank_port(to);
                *local = blank_port(local);
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

/// Whether an actor with these records is a *bystander*: it has no socket or probe event, so
/// nothing in it can be held or asked for (a shell's helper that talks through pipes). A halting
/// replay lets bystanders run freely, and its termination detector does not wait for them,
/// unless the predicate names them (then they are held at their gates like any actor).
/// Closing copies of connections it inherited (a CGI child of a web server, which talks to its
/// parent through pipes) does not make an actor more than a bystander.
pub fn is_bystander(records: &[Record]) -> bool {
    !records.iter().any(|r| {
        matches!(
            r,
            Record::Connect { .. }
                | Record::Accept { .. }
                | Record::Recv { .. }
                | Record::Peek { .. }
                | Record::NoData { .. }
                | Record::Send { .. }
                | Record::Fail { .. }
                | Record::Ready { .. }
                | Record::Probe { .. }
                | Record::ConnectAgain { .. }
                | Record::SocketError { .. }
                | Record::Pair { .. }
                | Record::Pipe { .. }
                | Record::Shutdown { .. }
                | Record::RecvDatagram { .. }
                | Record::SendDatagram { .. }
        )
    })
}
