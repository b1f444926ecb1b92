//! The local debugger's state for this process image: who it is (actor id, mode), how far the
//! actor has got, its connection to the GD, its history (written in record, followed in
//! replay), and what replay and halting keep between calls.
//!
//! This module is the bottom of the LD proper: it knows the state and how to talk to the GD
//! ([`gd`]), write the history ([`journal`]), start or fork an image ([`lifecycle`]) and
//! prepare an exec ([`exec`]). It
//! never decides what a call does in record or replay, and never holds the actor at a halting
//! gate: `record/`, `replay/` and `halting.rs` build on it, and the hooks drive them.
//!
//! Hooks reach the state through [`running`] (after `hooks::active` has started it): `None`
//! means "pass straight through" (no GD in the environment, the GD unreachable, or the LD still
//! starting or already off).

pub mod appends;
pub mod exec;
pub mod gd;
pub mod journal;
pub mod lifecycle;
pub mod live;
pub mod own_values;
pub mod pids;
pub mod reaps;
pub mod sent;
pub mod steer;
pub mod threads;
pub mod turns;
pub mod variables;

use ddbx_wire::counters::Counters;
use ddbx_wire::history::Record;
use ddbx_wire::history::value::{Deltas, Value};
use ddbx_wire::pred::{Expr, MemType};
use ddbx_wire::proto::{AcceptPlan, Mode};
use ddbx_wire::{ActorId, env};
use libc::c_int;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use crate::fds::DescriptionId;
use crate::symbols::Symbols;
use crate::trace::Tracer;

/// How far the actor has got, kept in a file that every image of the actor maps (it survives
/// exec, so an exec'd image counts on where the previous one stopped).
#[repr(C)]
pub struct ActorProgress {
    /// Events executed (record: written; replay: consumed).
    events: AtomicU64,
    /// Children created so far (fork and posix_spawn share the counter).
    children: AtomicU32,
}

/// The actor whose connect event made a connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Connector {
    /// The connecting actor.
    pub actor: ActorId,
    /// Its connect event.
    pub event: u64,
}

/// A connection accepted early (before the accept it belongs to), kept out of the program's
/// way until that accept asks for it.
pub struct KeptConnection {
    /// The LD's fd of the connection (at [`crate::fds::KEPT_FDS`] or above).
    pub fd: c_int,
    /// Who connected, when the GD knew.
    pub connector: Option<Connector>,
}

/// A connection to a peer outside the session, whose side the LD plays in replay.
pub struct OutsidePeer {
    /// The program's fd.
    pub fd: c_int,
    /// The LD's end of the socketpair that stands in for the connection.
    pub ld_end: c_int,
    /// Indexes (0-based, into the history) of the receives whose bytes were fed.
    pub fed: Vec<usize>,
}

/// A connection the LD made to the program's own listening socket, to stand for the outside
/// peer that an accept of the record returned; the accept will return its other end.
pub struct PendingPeer {
    /// The listening socket.
    pub listener: c_int,
    /// The accept event it is for.
    pub event: u64,
    /// The LD's end (at [`crate::fds::OUTSIDE_PEER_FDS`] or above).
    pub ld_end: c_int,
    /// The LD's end's address, which the accepted connection's peer address names.
    pub local: String,
}

/// Bytes replay took from the kernel for a channel end and has not handed to the program yet
/// (`replay/held.rs`): a socket's receive memory cannot always hold a recorded receive's bytes
/// at once, so replay takes them as they come.
pub struct HeldBytes {
    /// The open file description they came from (every fd that refers to it reads them).
    pub description: DescriptionId,
    /// The bytes, in stream order.
    pub bytes: Vec<u8>,
    /// Ancillary data (cmsgs, passed fds already installed) that came with them.
    pub control: Vec<u8>,
    /// The sender's address as the last receive reported it (empty: none).
    pub from: Vec<u8>,
    /// The end of the stream came after them.
    pub ended: bool,
}

/// A global of the program the GD asked to observe in replay.
pub struct ObservedGlobal {
    /// Its symbol name.
    pub name: String,
    /// How to read it.
    pub ty: MemType,
    /// The value last reported to the GD.
    pub last: Option<i64>,
}

/// A value the program published with `ddbx_set`.
pub struct ProbeValue {
    /// The variable's name.
    pub name: String,
    /// Its value from then on.
    pub value: i64,
}

/// The value lines (clock reads, random bytes) not written to the history yet: they are
/// written just before the next event's line, so a clock read costs no system call.
pub struct ValueLog {
    /// The last value of each key written (what the next delta is relative to).
    pub deltas: Deltas,
    /// Lines, each with its newline.
    pub buf: [u8; VALUE_LOG_BYTES],
    /// Bytes of `buf` in use.
    pub len: usize,
}

/// The size of [`ValueLog::buf`].
pub const VALUE_LOG_BYTES: usize = 16384;

impl ValueLog {
    /// Empty, with no delta base (the first value of each key is written whole).
    pub const fn new() -> ValueLog {
        ValueLog {
            deltas: Deltas::new(),
            buf: [0; VALUE_LOG_BYTES],
            len: 0,
        }
    }
}

/// Replay: the values the record's clocks and randomness returned, handed out in order.
pub struct ReplayValues {
    /// Each value after the event it follows; `None` once handed out.
    pub list: Vec<(u64, Option<Value>)>,
    /// Everything before this index is handed out or dropped.
    pub cursor: usize,
    /// Per numeric key with a delta slot: the last value returned to the program and the
    /// real clock's reading at that moment (for reads the record did not log).
    pub last: [Option<(i64, i64)>; 18],
    /// In a process with threads: each thread's clock reads and random bytes (empty when the
    /// history has no `~T` line).
    pub own: Vec<own_values::OwnValues>,
}

/// What replay follows and keeps between calls.
pub struct ReplayState {
    /// What the record's clocks and randomness returned.
    pub values: ReplayValues,
    /// The recorded history; event k is `records[k - 1]`.
    pub records: Vec<Record>,
    /// Each accept's connecting actor and connect event.
    pub accepts: Vec<AcceptPlan>,
    /// The record ended with this signal after the last record.
    pub killed_by: Option<i32>,
    /// The signal the record died of after its last record, whoever sent it.
    pub ended_by_signal: Option<i32>,
    /// Connections accepted early, kept for the accept they belong to.
    pub kept: Vec<KeptConnection>,
    /// Connections to outside peers, played by the LD.
    pub outside_peers: Vec<OutsidePeer>,
    /// Connections the LD made to the program's listening sockets for outside peers, not
    /// accepted yet.
    pub pending_peers: Vec<PendingPeer>,
    /// Connect events whose peer was outside the session.
    pub external_connects: Vec<u64>,
    /// Bytes the record sent on these fds after its last record (it was killed between a send
    /// and its record), which peers received: let through at the end of the history.
    pub owed: Vec<(c_int, u64)>,
    /// Children (fork/spawn numbers) the record created after its last record (killed
    /// between the fork and its record): at the end of the history they are created as if
    /// recorded.
    pub unlogged_children: Vec<u32>,
    /// Globals to report after each event when they change.
    pub observe: Vec<ObservedGlobal>,
    /// Loopback TCP sockets (IPv4, IPv6) bound but not listening, to which replay connects a
    /// socket whose connect the record saw refused (-1: not made yet).
    pub refusers: [c_int; 2],
    /// Bytes taken from the kernel and not yet received by the program, per channel end.
    pub held: Vec<HeldBytes>,
    /// The history has a `Close` event wherever the process let go of a stream socket.
    pub closes: bool,
    /// The history records pipes (`Pipe` events, their reads, writes and ready sets).
    pub pipes: bool,
    /// The recorded pid of each child, by fork/spawn number (sorted): what a fork returns.
    pub child_pids: Vec<(u32, i32)>,
    /// In a process with threads: from which event on (0-based index into `records`) which
    /// thread made the events, sorted by event (`replay/threads.rs`). Empty: all are `t1`'s.
    pub threads: Vec<(usize, u32)>,
    /// In a process with threads: the fds each thread made outside events, as recorded.
    pub made: threads::Made,
    /// A logged read of a shared file (its key, and the writes it came after) whose run is
    /// not over: the reads after it until the end of the file, or the next event, came after
    /// as many writes in the record (only the first was logged), so it counts for the next
    /// write only then (`replay::io::end_read_run`).
    pub unfinished_read: Option<(u64, u64)>,
}

/// This actor's part of a halting replay (`halting.rs` runs it).
pub struct HaltState {
    /// This actor's simple predicate (`None`: it has none, i.e. it is always satisfied).
    pub sp: Option<Expr>,
    /// Run at least until this many events have been executed (what others asked of us).
    pub target: u64,
    /// `Release`d: halting is over, run freely.
    pub released: bool,
    /// A `Passive` note was sent for the current wait.
    pub passive_sent: bool,
    /// ... and one saying that the actor waits at a gate.
    pub at_gate_sent: bool,
    /// `Retarget`s received (echoed in `Passive`).
    pub epoch: u64,
    /// The shared files whose writes keep their order, with their horizon
    /// (`HaltPlan::ordered_files`).
    pub ordered_files: Vec<(u32, u64)>,
}

impl HaltState {
    /// Halting as `plan` says.
    pub fn new(plan: ddbx_wire::proto::HaltPlan) -> HaltState {
        HaltState {
            sp: plan.sp,
            target: plan.target,
            released: false,
            passive_sent: false,
            at_gate_sent: false,
            epoch: plan.epoch,
            ordered_files: plan.ordered_files,
        }
    }

    /// Whether the actor runs freely: halting is over. A process with no socket or probe
    /// event (one that only forks, or writes files) is held at its events too (its forks,
    /// execs and exit), where `ddbx inf` puts it.
    pub fn runs_freely(&self) -> bool {
        self.released
    }
}

/// The LD of this process image.
pub struct Ld {
    /// This actor.
    pub actor: ActorId,
    /// Record or replay.
    pub mode: Mode,
    /// Our process id (to tell a forked child's inherited state from its own).
    pub pid: c_int,
    /// The child number of the fork under way (claimed before it, used after it).
    pub fork_index: u32,
    /// Replay state (replay mode only).
    pub replay: Option<ReplayState>,
    /// Halting replay state (`None`: not halting).
    pub halt: Option<HaltState>,
    /// Steered record (`ddbx explore`): which events wait for the GD, which are told to it.
    pub steer: Option<ddbx_wire::proto::SteerPlan>,
    /// A live run (`ddbx run --break-if`): the breakpoint and the clock page.
    pub live: Option<live::LiveState>,
    /// The call being replayed would block (a receive, accept, connect, readiness wait).
    pub in_wait: bool,
    /// Built-in counters.
    pub counters: Counters,
    /// Probe values published by the program, in order.
    pub probes: Vec<ProbeValue>,
    /// Globals of the program read by symbol name.
    pub symbols: Symbols,
    /// Optimal tracing (record with `DDBX_TRACE=optimal`, or replay of such a history).
    pub trace: Option<Tracer>,
    /// Clock and randomness values not written yet.
    pub values: ValueLog,
    /// The actor's progress file, mapped (see [`lifecycle`]).
    progress: *mut ActorProgress,
    /// The connection to the GD (see [`gd`]).
    gd_fd: c_int,
    /// Our read end of the GD's lifeline FIFO (see [`gd`]; -1: none).
    lifeline_fd: c_int,
    /// Bytes read from the GD that do not end a line yet.
    gd_pending: Vec<u8>,
    /// Descriptors that came from the GD with its messages (`Deliver`), not claimed yet (ours,
    /// at high numbers).
    gd_fds: Vec<c_int>,
    /// The GD's socket path (`DDBX_GD`), passed on to exec'd images.
    gd_path: Vec<u8>,
    /// The session's secret (`DDBX_GD_KEY`), said in `Hello` and passed on to exec'd images.
    gd_key: Vec<u8>,
    /// The history being written (see [`journal`]).
    history_fd: c_int,
    /// `DDBX_TRACE_CHECK`: the full history written next to the optimal one.
    full_fd: c_int,
    /// `DDBX_LD_LOG`: where the LD's own diagnostics go (never the program's stderr).
    log_fd: c_int,
    /// The thread doing this process's socket I/O (0: none yet).
    io_tid: AtomicI32,
    /// The thread whose events the history's last lines are (`~t` lines; 1 as an image
    /// starts).
    thread_logged: u32,
    /// The thread whose clock and random values the history's last value lines are (`~T`
    /// lines; 0: none written by this image).
    pub values_of: u32,
    /// Kinds of unrecorded I/O already reported (bits of `hooks::passthrough`).
    passthrough_seen: u32,
    /// The program's command line.
    argv: Vec<String>,
    /// `LD_PRELOAD` as we were started with it, passed on to exec'd images.
    preload_env: Vec<u8>,
    /// `DDBX_LD_FAULT` (tests only): `connect` or `accept`, a record's process SIGKILLs itself
    /// right after its first real connect of a socket (or an accept) returns, before the
    /// record is written; `welcome`, a forked child SIGKILLs itself as it joins, before its
    /// history's first line (`b""`: no fault).
    pub fault: &'static [u8],
}

impl Ld {
    /// The session's runtime directory (where the GD's socket is).
    pub fn runtime_dir(&self) -> Option<&[u8]> {
        let cut = self.gd_path.iter().rposition(|b| *b == b'/')?;
        Some(&self.gd_path[..cut])
    }
}

/// Not started yet.
const UNINIT: u32 = 0;
/// [`lifecycle::start`] is running.
const STARTING: u32 = 1;
/// Running: hooks record or replay.
const ACTIVE: u32 = 2;
/// Off for good in this image: hooks pass through.
const OFF: u32 = 3;

static PHASE: AtomicU32 = AtomicU32::new(UNINIT);

struct Slot(UnsafeCell<Option<Ld>>);
// SAFETY: the LD is driven by one thread at a time: socket I/O from a second thread is refused
// (see `Ld::check_thread`), and fork/exit handlers run while the process is single-threaded or
// in the thread doing the I/O.
unsafe impl Sync for Slot {}
static LD: Slot = Slot(UnsafeCell::new(None));

fn slot() -> &'static mut Option<Ld> {
    // SAFETY: one thread at a time, see `Slot`; nobody keeps the reference across a call that
    // could hand out another one (hooks are not re-entered: the guard).
    unsafe { &mut *LD.0.get() }
}

/// The LD, if it is running. It does not start it: hooks use `hooks::active`, which does.
pub fn running() -> Option<&'static mut Ld> {
    if PHASE.load(Ordering::Acquire) == ACTIVE {
        slot().as_mut()
    } else {
        None
    }
}

/// Whether nothing has tried to start the LD in this image yet.
pub fn unstarted() -> bool {
    PHASE.load(Ordering::Acquire) == UNINIT
}

/// Claims the start of the LD: true for the one caller that must start it.
pub fn claim_start() -> bool {
    PHASE
        .compare_exchange(UNINIT, STARTING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

/// The LD has started: from now on hooks record or replay through it.
pub fn install(ld: Ld) {
    *slot() = Some(ld);
    PHASE.store(ACTIVE, Ordering::Release);
}

/// The LD is off for the rest of this image: hooks pass through.
pub fn stop() {
    PHASE.store(OFF, Ordering::Release);
}

impl Ld {
    fn progress(&self) -> &ActorProgress {
        // SAFETY: mapped by `lifecycle` before the LD is installed, for the life of this image
        // (a forked child maps its own before it records anything).
        unsafe { &*self.progress }
    }

    /// Events executed so far by this actor.
    pub fn events(&self) -> u64 {
        self.progress().events.load(Ordering::Relaxed)
    }

    /// Counts one more executed event.
    fn count_event(&self) {
        let made = self.progress().events.fetch_add(1, Ordering::Relaxed) + 1;
        if self.mode == Mode::Replay && crate::locks::threaded() {
            // Threads waiting for their turn look again (`replay/threads.rs`).
            crate::baton::event_happened();
        }
        if !crate::locks::threaded() || crate::locks::me() == 1 {
            // Where the main thread's entries into hooks are counted from (`signals`).
            crate::signals::main_event_made(made);
        }
    }

    /// Claims the next child number (fork or posix_spawn).
    pub fn next_child(&mut self) -> u32 {
        self.progress().children.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The number the next child will get, without taking it.
    pub fn peek_next_child(&self) -> u32 {
        self.progress().children.load(Ordering::Relaxed) + 1
    }

    /// Whether pipes made by the session's processes are channels here: always in a record; in
    /// a replay when its recording has them.
    pub fn records_pipes(&self) -> bool {
        match &self.replay {
            None => self.mode == Mode::Record,
            Some(r) => r.pipes,
        }
    }

    /// Replay: the next record this actor must produce, if the history has one.
    pub fn next_record(&self) -> Option<&Record> {
        let replay = self.replay.as_ref()?;
        replay.records.get(self.events() as usize)
    }

    /// Replay: whether what is left of the history is the exit (a process that a signal ended
    /// while it waited), or closes and the exit right after a wait that a signal interrupted
    /// (lighttpd: its SIGTERM handler only notes the signal, the wait fails with `EINTR`, and
    /// the next wait is where the record's handler had already run; the closes of its pipes
    /// follow).
    pub fn exits_next(&self) -> bool {
        let Some(replay) = self.replay.as_ref() else {
            return false;
        };
        let done = self.events() as usize;
        let rest = replay.records.get(done..).unwrap_or_default();
        let closes = rest
            .iter()
            .take_while(|r| matches!(r, Record::Close { .. }))
            .count();
        let interrupted = done
            .checked_sub(1)
            .and_then(|i| replay.records.get(i))
            .is_some_and(|r| {
                matches!(r, Record::Fail { call: ddbx_wire::history::Call::Wait, err, .. } if err.0 == libc::EINTR)
            });
        matches!(rest.get(closes), Some(Record::Exit { .. })) && (closes == 0 || interrupted)
    }

    /// Replay: the last record this actor produced.
    pub fn last_record(&self) -> Option<&Record> {
        let replay = self.replay.as_ref()?;
        let done = self.events() as usize;
        done.checked_sub(1).and_then(|i| replay.records.get(i))
    }

    /// The environment entries every exec'd image needs (`LD_PRELOAD=…`, `DDBX_GD=…`,
    /// `DDBX_GD_KEY=…`).
    pub fn required_env(&self) -> [(&'static str, &[u8]); 3] {
        [
            ("LD_PRELOAD", &self.preload_env),
            (env::GD_SOCKET, &self.gd_path),
            (env::GD_KEY, &self.gd_key),
        ]
    }

    /// The LD's own fds, sorted (for close_range).
    pub fn own_fds(&self) -> Vec<c_int> {
        let mut v: Vec<c_int> = [self.gd_fd, self.history_fd, self.log_fd, self.full_fd]
            .into_iter()
            .filter(|fd| *fd >= 0)
            .collect();
        if let Some(t) = &self.trace {
            v.extend(t.own_fds());
        }
        if let Some(r) = &self.replay {
            v.extend(r.kept.iter().map(|k| k.fd));
            v.extend(r.outside_peers.iter().map(|p| p.ld_end));
            v.extend(r.pending_peers.iter().map(|p| p.ld_end));
            v.extend(r.refusers.iter().copied().filter(|fd| *fd >= 0));
        }
        v.extend(self.gd_fds.iter().copied());
        v.sort_unstable();
        v
    }

    /// Whether this thread's clock reads and random bytes are recorded (or replayed): those of
    /// the thread doing the socket I/O (before any I/O, the main thread's). Other threads' pass
    /// through: their reads are not ordered with the actor's events.
    pub fn values_thread(&self) -> bool {
        let tid = crate::guard::tid();
        match self.io_tid.load(Ordering::Relaxed) {
            0 => tid == self.pid,
            io => io == tid,
        }
    }

    /// Moves our fd off `fd` (the program wants that number, e.g. dup2 onto it).
    pub fn evacuate(&mut self, fd: c_int) {
        for own in [&mut self.gd_fd, &mut self.history_fd, &mut self.log_fd] {
            if *own == fd && fd >= 0 {
                crate::fds::forget_ours(fd);
                *own = crate::fds::mark_ours(crate::sys::move_high(fd, crate::fds::HIGH_FD));
            }
        }
    }
}
