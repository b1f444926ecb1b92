//! The local debugger's state for this process image: who it is (actor id), its connection to
//! the GD, its history (written in record, followed in replay), and the lifecycle around it:
//! start, fork (through `pthread_atfork`, so daemon()/forkpty() children are covered too), exec
//! (a new image of the same actor, found by pid) and exit.
//!
//! Hooks reach it through [`active`]: `None` means "pass straight through" (no GD in the
//! environment, the GD unreachable, or the LD still starting).

use crate::guard::Guard;
use crate::sys;
use ddbx_wire::history::{Origin, Record, header_line, write_compact};
use ddbx_wire::proto::{self, Claim, GdToLd, HaltPlan, LdToGd, Mode, ReplayPlan};
use ddbx_wire::{ActorId, PROTOCOL_VERSION, env};
use libc::c_int;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

const UNINIT: u32 = 0;
const STARTING: u32 = 1;
const ACTIVE: u32 = 2;
const OFF: u32 = 3;

static PHASE: AtomicU32 = AtomicU32::new(UNINIT);

/// Our own fds live at or above this number, out of the program's way.
pub const HIGH_FD: c_int = 1000;

/// Exit status of a debuggee whose replay diverged (the GD normally kills it first).
const DIVERGED_STATUS: c_int = ddbx_wire::exit::DIVERGED;
/// Exit status of a debuggee that does something ddbx cannot record.
const UNSUPPORTED_STATUS: c_int = ddbx_wire::exit::UNSUPPORTED;

/// The per-actor state shared by every image of the actor (mmap'd, survives exec).
#[repr(C)]
struct Shared {
    /// Events executed (record: written; replay: consumed).
    events: AtomicU64,
    /// Children created so far (fork and posix_spawn share the counter).
    children: AtomicU32,
}

/// A connection accepted early: (kept fd, listening fd, connecting actor and its connect
/// event, when the GD knew it).
pub type Kept = (c_int, c_int, Option<(ActorId, u64)>);

/// What replay follows.
pub struct Replay {
    /// The recorded history; event k is `records[k - 1]`.
    pub records: Vec<Record>,
    /// Each accept's connecting actor and connect event.
    pub accepts: Vec<ddbx_wire::proto::AcceptPlan>,
    /// The record ended with this signal after the last record.
    pub killed_by: Option<i32>,
    /// Connections accepted early, kept for the accept they belong to.
    pub stash: Vec<Kept>,
    /// Connections to outside peers, played by the LD.
    pub externals: Vec<crate::replay::external::External>,
    /// Connect events whose peer was outside the session.
    pub external_connects: Vec<u64>,
    /// Globals to report after each event when they change (name, type, last value sent).
    pub observe: Vec<(String, ddbx_wire::pred::MemType, Option<i64>)>,
}

/// The LD of this process image.
pub struct Ld {
    /// This actor.
    pub actor: ActorId,
    /// Record or replay.
    pub mode: Mode,
    /// Our process id (to tell a forked child's inherited state from its own).
    pub pid: c_int,
    gd_fd: c_int,
    gd_buf: Vec<u8>,
    history_fd: c_int,
    shared: *mut Shared,
    io_tid: AtomicI32,
    fork_index: u32,
    passthrough_seen: u32,
    /// Replay state (replay mode only).
    pub replay: Option<Replay>,
    log_fd: c_int,
    /// Halting replay state (`None`: not halting).
    pub halt: Option<crate::halt::Halt>,
    /// Built-in counters.
    pub counters: ddbx_wire::counters::Counters,
    /// The call being replayed would block (a receive, accept, connect, readiness wait).
    pub in_wait: bool,
    /// Probe values published by the program, in order.
    pub probes: Vec<(String, i64)>,
    /// Globals of the program read by symbol name.
    pub symbols: crate::symbols::Symbols,
    argv: Vec<String>,
    preload_env: Vec<u8>,
    gd_env: Vec<u8>,
    /// Optimal tracing (record with `DDBX_TRACE=optimal`, or replay of such a history).
    pub trace: Option<crate::trace::Tracer>,
    /// `DDBX_TRACE_CHECK`: the full history written next to the optimal one.
    full_fd: c_int,
}

struct Slot(UnsafeCell<Option<Ld>>);
// SAFETY: the LD is driven by one thread at a time: socket I/O from a second thread is refused
// (see `Ld::check_thread`), and fork/exit handlers run while the process is single-threaded or
// in the thread doing the I/O.
unsafe impl Sync for Slot {}
static LD: Slot = Slot(UnsafeCell::new(None));

fn slot() -> &'static mut Option<Ld> {
    // SAFETY: see `Slot`.
    unsafe { &mut *LD.0.get() }
}

/// The LD, if it is running (initialising it on first use).
pub fn active() -> Option<&'static mut Ld> {
    match PHASE.load(Ordering::Acquire) {
        ACTIVE => slot().as_mut(),
        UNINIT => {
            init();
            if PHASE.load(Ordering::Acquire) == ACTIVE {
                slot().as_mut()
            } else {
                None
            }
        }
        _ => None,
    }
}

fn getenv(name: &str) -> Option<Vec<u8>> {
    let mut buf = [0u8; 512];
    let cname = sys::cstr(name.as_bytes(), &mut buf)?;
    // SAFETY: cname is NUL-terminated; getenv returns null or a NUL-terminated string.
    unsafe {
        let p = libc::getenv(cname);
        if p.is_null() {
            None
        } else {
            Some(std::ffi::CStr::from_ptr(p).to_bytes().to_vec())
        }
    }
}

/// Starts the LD for this process image: from our constructor, or from the first hook that
/// runs before it.
pub fn init() {
    if PHASE
        .compare_exchange(UNINIT, STARTING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return;
    }
    crate::real::resolve_all();
    let Some(gd_path) = getenv(env::GD_SOCKET) else {
        PHASE.store(OFF, Ordering::Release);
        return;
    };
    let log_fd = match getenv(env::LD_LOG) {
        Some(path) => {
            let fd = sys::open(
                &path,
                libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
                0o644,
            );
            if fd >= 0 {
                claim_fd(sys::move_high(fd, HIGH_FD))
            } else {
                -1
            }
        }
        None => -1,
    };
    let claim = spawn_claim();
    let argv = read_cmdline();
    let mut ld = Ld {
        actor: ActorId(0),
        mode: Mode::Record,
        pid: sys::getpid(),
        gd_fd: -1,
        gd_buf: Vec::new(),
        history_fd: -1,
        shared: std::ptr::null_mut(),
        io_tid: AtomicI32::new(0),
        fork_index: 0,
        passthrough_seen: 0,
        replay: None,
        log_fd,
        halt: None,
        in_wait: false,
        counters: Default::default(),
        probes: Vec::new(),
        symbols: Default::default(),
        argv,
        preload_env: getenv("LD_PRELOAD").unwrap_or_default(),
        gd_env: gd_path,
        trace: None,
        full_fd: -1,
    };
    if !ld.join(claim) {
        PHASE.store(OFF, Ordering::Release);
        return;
    }
    *slot() = Some(ld);
    // SAFETY: registering handlers with valid function pointers.
    unsafe {
        libc::pthread_atfork(
            Some(atfork_prepare),
            Some(atfork_parent),
            Some(atfork_child),
        );
        on_exit_register(on_exit, std::ptr::null_mut());
    }
    PHASE.store(ACTIVE, Ordering::Release);
}

fn claim_fd(fd: c_int) -> c_int {
    if fd >= 0 {
        crate::fds::set(fd, crate::fds::OURS);
    }
    fd
}

/// `DDBX_SPAWN=<parent pid>:<parent actor>:<index>`, valid only for a direct child of that pid.
fn spawn_claim() -> Claim {
    let Some(value) = getenv(env::SPAWN) else {
        return Claim::Unknown;
    };
    let text = String::from_utf8_lossy(&value);
    let mut parts = text.split(':');
    let (Some(pid), Some(actor), Some(index)) = (parts.next(), parts.next(), parts.next()) else {
        return Claim::Unknown;
    };
    match (
        pid.parse::<i32>(),
        actor.parse::<ActorId>(),
        index.parse::<u32>(),
    ) {
        (Ok(pid), Ok(parent), Ok(index)) if pid == sys::getppid() => Claim::Spawn { parent, index },
        _ => Claim::Unknown,
    }
}

fn read_cmdline() -> Vec<String> {
    let fd = sys::open(b"/proc/self/cmdline", libc::O_RDONLY | libc::O_CLOEXEC, 0);
    if fd < 0 {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = sys::read(fd, &mut chunk);
        if n <= 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n as usize]);
    }
    sys::close(fd);
    bytes
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

fn hostname() -> String {
    // SAFETY: uname fills the struct.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return "?".into();
        }
        std::ffi::CStr::from_ptr(u.nodename.as_ptr())
            .to_string_lossy()
            .into_owned()
    }
}

impl Ld {
    /// Connects to the GD, learns who we are, and opens this image's history. False: run
    /// unrecorded (the GD is gone: the program carries on).
    fn join(&mut self, claim: Claim) -> bool {
        let fd = sys::connect_unix(&self.gd_env);
        if fd < 0 {
            sys::diag(
                self.log_fd,
                "ddbx-ld: cannot reach the GD; running unrecorded",
            );
            return false;
        }
        self.gd_fd = claim_fd(sys::move_high(fd, HIGH_FD));
        self.gd_buf.clear();
        let hello = LdToGd::Hello {
            protocol: PROTOCOL_VERSION,
            pid: self.pid,
            ppid: sys::getppid(),
            claim,
            argv: self.argv.clone(),
        };
        let Some(reply) = self.request(&hello) else {
            sys::diag(
                self.log_fd,
                "ddbx-ld: the GD did not answer Hello; running unrecorded",
            );
            return false;
        };
        match reply {
            GdToLd::Welcome {
                actor,
                origin,
                exec,
                mode,
                history_out,
                state_file,
                replay,
                halting,
            } => {
                self.halt = halting.map(|h: HaltPlan| {
                    let mut halt = crate::halt::Halt::new(h.sp, h.target);
                    halt.epoch = h.epoch;
                    halt
                });
                self.welcome(actor, origin, exec, mode, history_out, state_file, replay)
            }
            GdToLd::Refuse { why } => {
                sys::diag(self.log_fd, &why);
                // The GD stops the session; this process must not run on unreplayed.
                self.wait_for_the_end(DIVERGED_STATUS)
            }
            _ => false,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn welcome(
        &mut self,
        actor: ActorId,
        origin: Origin,
        exec: bool,
        mode: Mode,
        history_out: Option<String>,
        state_file: String,
        replay: Option<ReplayPlan>,
    ) -> bool {
        self.actor = actor;
        self.mode = mode;
        self.shared = map_shared(state_file.as_bytes());
        if self.shared.is_null() {
            sys::diag(self.log_fd, "ddbx-ld: cannot map the actor state file");
            return false;
        }
        let optimal = match (&replay, mode) {
            (None, Mode::Record) => getenv(env::TRACE).is_some_and(|v| v == b"optimal"),
            (Some(plan), _) => {
                ddbx_wire::history::trace_of(std::path::Path::new(&plan.history))
                    == ddbx_wire::history::Trace::Optimal
            }
            _ => false,
        };
        self.start_tracing(optimal, mode == Mode::Record);
        if let Some(path) = history_out {
            self.history_fd = open_history(path.as_bytes(), actor, self.trace.is_some());
            if self.trace.is_some() && getenv(env::TRACE_CHECK).is_some() {
                let mut full = path.clone().into_bytes();
                full.extend_from_slice(b".full");
                self.full_fd = open_history(&full, actor, false);
            }
        }
        if let Some(plan) = replay {
            match ddbx_wire::History::load(std::path::Path::new(&plan.history)) {
                Ok(h) => {
                    if let Some(halt) = self.halt.as_mut() {
                        halt.bystander = ddbx_wire::history::is_bystander(&h.records);
                    }
                    // An exec'd image continues the actor's variables where they stood.
                    let done = (self.events() as usize).min(h.records.len());
                    for r in &h.records[..done] {
                        self.counters.count(r);
                        if let Record::Probe { name, value } = r {
                            self.probes.push((name.clone(), *value));
                        }
                    }
                    self.replay = Some(Replay {
                        records: h.records,
                        accepts: plan.accepts,
                        killed_by: plan.killed_by,
                        stash: Vec::new(),
                        externals: Vec::new(),
                        external_connects: plan.external_connects,
                        observe: plan
                            .observe
                            .into_iter()
                            .map(|(name, ty)| (name, ty, None))
                            .collect(),
                    })
                }
                Err(e) => {
                    self.send(&LdToGd::Unsupported {
                        actor,
                        what: format!("cannot load its history: {e}"),
                    });
                    self.wait_for_the_end(UNSUPPORTED_STATUS);
                }
            }
        }
        let first = if exec {
            Record::Exec {
                argv: self.argv.clone(),
            }
        } else {
            Record::Start {
                pid: self.pid,
                ppid: sys::getppid(),
                origin,
                argv: self.argv.clone(),
                host: hostname(),
            }
        };
        match self.mode {
            Mode::Record => self.emit(&first),
            Mode::Replay => {
                let expected_exec = matches!(first, Record::Exec { .. });
                match self.next_record() {
                    // The program must be the same; its arguments may carry run details
                    // that ddbx does not replay yet (a mktemp name, a pid).
                    Some(Record::Exec { argv })
                        if expected_exec && argv.first() == self.argv.first() => {}
                    Some(Record::Start { .. }) if !expected_exec => {}
                    _ => self.diverge(&first.to_line()),
                }
                self.advance(&first);
            }
        }
        true
    }

    // -----------------------------------------------------------------------------------------
    // Talking to the GD.

    /// Sends a one-way message to the GD (ignored if the GD is gone).
    pub fn send(&mut self, msg: &LdToGd) {
        if self.gd_fd >= 0 {
            let line = proto::encode(msg);
            sys::write_all(self.gd_fd, line.as_bytes());
        }
    }

    /// Sends a request and waits for its answer; `None` if the GD is gone. Control messages
    /// that arrive meanwhile (halting) are handled on the way.
    pub fn request(&mut self, msg: &LdToGd) -> Option<GdToLd> {
        self.send(msg);
        loop {
            let reply = self.receive()?;
            if let GdToLd::RunUntil { .. }
            | GdToLd::Report
            | GdToLd::Release
            | GdToLd::Retarget { .. } = reply
            {
                self.control(reply);
                continue;
            }
            return Some(reply);
        }
    }

    /// The next message from the GD; `None` if the GD is gone.
    pub fn receive(&mut self) -> Option<GdToLd> {
        loop {
            let line = self.read_line()?;
            if let Ok(msg) = proto::decode(&line) {
                return Some(msg);
            }
            sys::diag(self.log_fd, "ddbx-ld: an unreadable message from the GD");
        }
    }

    /// The GD disappeared during a replay: this process cannot be replayed further.
    pub fn gd_gone(&mut self) -> ! {
        sys::write_all(
            2,
            b"ddbx: the supervisor is gone; this replayed process stops here\n",
        );
        sys::exit_group(DIVERGED_STATUS)
    }

    fn read_line(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.gd_buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.gd_buf.drain(..=end).collect();
                return Some(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            let mut chunk = [0u8; 4096];
            let n = sys::read(self.gd_fd, &mut chunk);
            if n < 0 && sys::errno() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                return None;
            }
            self.gd_buf.extend_from_slice(&chunk[..n as usize]);
        }
    }

    /// Blocks until the GD ends the session (it kills us), then exits with `status` if the GD
    /// goes away instead.
    fn wait_for_the_end(&mut self, status: c_int) -> ! {
        while self.read_line().is_some() {}
        sys::exit_group(status)
    }

    // -----------------------------------------------------------------------------------------
    // Events.

    fn shared(&self) -> &Shared {
        // SAFETY: mapped in `welcome` for the life of this image (remapped in a forked child).
        unsafe { &*self.shared }
    }

    /// Events executed so far by this actor.
    pub fn events(&self) -> u64 {
        self.shared().events.load(Ordering::Relaxed)
    }

    /// Logs an event that happened (record), or that replay has just made happen.
    pub fn emit(&mut self, record: &Record) {
        self.shared().events.fetch_add(1, Ordering::Relaxed);
        self.counters.count(record);
        self.write_history(record);
    }

    /// Replay, at the entry of an event: reads the globals the GD asked to observe and reports
    /// those that changed, as their values after the events executed so far (the GD evaluates
    /// traces and predicates over memory from these values; a halting LD evaluates its own
    /// predicate at the same point).
    pub fn observe_memory(&mut self) {
        if self.replay.as_ref().is_none_or(|r| r.observe.is_empty()) {
            return;
        }
        let events = self.events();
        let Some(replay) = self.replay.as_mut() else {
            return;
        };
        let mut notes = Vec::new();
        for (name, ty, last) in &mut replay.observe {
            let value = self.symbols.read(name, *ty);
            if let Some(v) = value
                && *last != Some(v)
            {
                *last = Some(v);
                notes.push(LdToGd::Observed {
                    actor: self.actor,
                    events,
                    name: name.clone(),
                    value: v,
                });
            }
        }
        let saved = sys::errno();
        for note in &notes {
            self.send(note);
        }
        sys::set_errno(saved);
    }

    fn write_history(&mut self, record: &Record) {
        if self.trace.as_ref().is_some_and(|t| t.recording) {
            self.queue(record, crate::trace::Decision::Logged);
            return;
        }
        self.write_line(self.history_fd, record);
    }

    /// Starts (or, in a forked child, carries on) optimal tracing.
    fn start_tracing(&mut self, optimal: bool, recording: bool) {
        let me = self.actor.0;
        match self.trace.as_mut() {
            // A forked child keeps its parent's clock.
            Some(t) if optimal => {
                t.become_child(me);
                t.recording = recording;
            }
            _ if optimal => {
                self.trace = crate::trace::Tracer::new(recording, me, &self.gd_env);
            }
            _ => self.trace = None,
        }
    }

    /// Optimal tracing: an event happened whose outcome is `decision`.
    pub fn emit_decided(&mut self, record: &Record, decision: crate::trace::Decision) {
        self.shared().events.fetch_add(1, Ordering::Relaxed);
        self.counters.count(record);
        self.queue(record, decision);
    }

    fn queue(&mut self, record: &Record, decision: crate::trace::Decision) {
        let ordinal = self.events();
        if self.full_fd >= 0 {
            self.write_line(self.full_fd, record);
            // What the readiness call watched, which no record says (a comment line).
            if let (Record::Ready { .. }, Some(t)) = (record, self.trace.as_mut())
                && !t.watched.is_empty()
            {
                let fds: Vec<String> = t.watched.drain(..).map(|f| f.to_string()).collect();
                let line = format!("// watched: {}\n", fds.join(" "));
                sys::write_all(self.full_fd, line.as_bytes());
            }
        }
        if let Some(t) = self.trace.as_mut() {
            t.push(ordinal, record.clone(), decision);
        }
        self.drain(false);
    }

    /// Optimal tracing: writes what is decided (everything, with `settle`).
    pub fn drain(&mut self, settle: bool) {
        if settle && let Some(t) = self.trace.as_mut() {
            t.settle_all();
        }
        loop {
            let Some(out) = self.trace.as_mut().and_then(|t| t.next_out(settle)) else {
                return;
            };
            match out {
                crate::trace::Out::Skip(n) => {
                    if self.history_fd >= 0 {
                        let saved = sys::errno();
                        let line = ddbx_wire::history::skip_line(n);
                        sys::write_all(self.history_fd, line.as_bytes());
                        sys::set_errno(saved);
                    }
                }
                crate::trace::Out::Record(r) => self.write_line(self.history_fd, &r),
            }
        }
    }

    fn write_line(&self, fd: c_int, record: &Record) {
        if fd < 0 {
            return;
        }
        let saved = sys::errno();
        let mut line = LineBuf::new();
        if write_compact(&mut line, record).is_ok() && line.push(b'\n') {
            sys::write_all(fd, line.as_bytes());
        } else {
            let mut text = record.to_line();
            text.push('\n');
            sys::write_all(fd, text.as_bytes());
        }
        sys::set_errno(saved);
    }

    /// Replay: the last record this actor produced.
    pub fn last_record(&self) -> Option<&Record> {
        let replay = self.replay.as_ref()?;
        let done = self.events() as usize;
        done.checked_sub(1).and_then(|i| replay.records.get(i))
    }

    /// Whether the GD has sent something not read yet.
    pub fn gd_has_input(&self) -> bool {
        self.gd_buf.contains(&b'\n')
            || (self.gd_fd >= 0 && sys::poll_one(self.gd_fd, libc::POLLIN, 0) > 0)
    }

    /// Replay: the next record this actor must produce, if the history has one.
    pub fn next_record(&self) -> Option<&Record> {
        let replay = self.replay.as_ref()?;
        replay.records.get(self.events() as usize)
    }

    /// Replay: the next record, which must satisfy `fits`; otherwise the replay diverged here
    /// (`found` says what the program did), or the record ended here with a kill.
    pub fn follow(&mut self, fits: impl Fn(&Record) -> bool, found: impl Fn() -> String) -> Record {
        self.gate();
        match self.next_record() {
            Some(r) if fits(r) => r.clone(),
            _ => self.diverge(&found()),
        }
    }

    /// Replay: the event has happened as recorded; `observed` goes to the replay's history.
    pub fn advance(&mut self, observed: &Record) {
        self.emit(observed);
        self.after_event();
    }

    /// Replay: the program did `found`, which its history does not expect. Reports to the GD
    /// (which stops every actor) and never returns.
    pub fn diverge(&mut self, found: &str) -> ! {
        let event = self.events() + 1;
        let events = self.events();
        let killed_by = self.replay.as_ref().and_then(|r| r.killed_by);
        if self.in_wait && matches!(self.next_record(), Some(Record::Exit { .. })) {
            // In the record, a signal ended the process while it waited in this very call
            // (its handler exited): wait here, with signals delivered, for the same to happen.
            let msg = LdToGd::AtEnd {
                actor: self.actor,
                events,
            };
            self.send(&msg);
            self.wait_for_the_end(DIVERGED_STATUS);
        }
        let expected = match self.next_record() {
            Some(r) => r.to_line(),
            None => {
                if let Some(sig) = killed_by {
                    // The recorded process died here: so does this one.
                    sys::kill_self(sig);
                    sys::kill_self(libc::SIGKILL);
                }
                let ended_by_exit = matches!(self.last_record(), Some(Record::Exit { .. }));
                if !ended_by_exit {
                    // The recorded process was killed here (by another process, or ddbx
                    // stopped): wait here, as it did, until the same happens again or the
                    // replay ends.
                    let msg = LdToGd::AtEnd {
                        actor: self.actor,
                        events,
                    };
                    self.send(&msg);
                    self.wait_for_the_end(DIVERGED_STATUS);
                }
                "the end of the history (the recorded process did nothing more)".into()
            }
        };
        let msg = LdToGd::Diverged {
            actor: self.actor,
            event,
            expected,
            found: found.to_string(),
        };
        self.send(&msg);
        self.wait_for_the_end(DIVERGED_STATUS)
    }

    /// Replay: the process calls a readiness wait where its history ends with its exit, so in
    /// the record a signal came during this call and the program exited because of it (socat's
    /// SIGTERM handler only notes the signal; the interrupted select returns EINTR and socat
    /// exits). Tells the GD this actor is at its end, then waits until a signal handler of
    /// the program has run (returns: the caller fails the call with EINTR, not recorded, as a
    /// record ending there has nothing after it) or the replay ends (never returns).
    ///
    /// The signal may have come already, before the process reached this call (socat then
    /// only finds out in its loop): a program with signal handlers is also woken every 100 ms
    /// with EINTR, which it must expect from such a call anyway, so that it looks again. This
    /// is a liveness check, not an ordering: nothing is recorded or compared for it.
    pub fn wait_for_a_signal(&mut self) {
        let msg = LdToGd::AtEnd {
            actor: self.actor,
            events: self.events(),
        };
        self.send(&msg);
        loop {
            if !self.gd_buf.contains(&b'\n') {
                // ppoll is never restarted after a handler: EINTR says one ran.
                let handlers = sys::has_signal_handlers();
                let r = sys::poll_one(self.gd_fd, libc::POLLIN, if handlers { 100 } else { -1 });
                if (r < 0 && sys::errno() == libc::EINTR) || (r == 0 && handlers) {
                    return;
                }
                if r <= 0 {
                    continue;
                }
            }
            match self.receive() {
                Some(msg) => {
                    self.control(msg);
                }
                None => sys::exit_group(DIVERGED_STATUS),
            }
        }
    }

    /// Refuses what ddbx cannot record faithfully: tells the GD (which stops the session).
    pub fn unsupported(&mut self, what: String) -> ! {
        self.send(&LdToGd::Unsupported {
            actor: self.actor,
            what,
        });
        self.wait_for_the_end(UNSUPPORTED_STATUS)
    }

    /// Socket I/O is only recorded from one thread per process (an actor is a thread, and
    /// threads are not actors yet): a second thread is refused rather than recorded wrongly.
    pub fn check_thread(&mut self) {
        let tid = crate::guard::tid();
        match self
            .io_tid
            .compare_exchange(0, tid, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => {}
            Err(first) if first == tid => {}
            Err(first) => self.unsupported(format!(
                "socket I/O from a second thread (tid {tid}; the first was tid {first}): \
                 ddbx records one thread of socket I/O per process for now"
            )),
        }
    }

    /// Reports, once per kind, I/O that ddbx passes through unrecorded.
    pub fn passthrough(&mut self, bit: u32, what: &str) {
        if self.passthrough_seen & bit == 0 {
            self.passthrough_seen |= bit;
            let msg = LdToGd::Passthrough {
                actor: self.actor,
                what: what.to_string(),
            };
            self.send(&msg);
        }
    }

    /// Claims the next child number (fork or posix_spawn).
    pub fn next_child(&mut self) -> u32 {
        self.shared().children.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The environment entries every exec'd image needs (`LD_PRELOAD=…`, `DDBX_GD=…`).
    pub fn required_env(&self) -> [(&'static str, &[u8]); 2] {
        [
            ("LD_PRELOAD", &self.preload_env),
            (env::GD_SOCKET, &self.gd_env),
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
            v.extend(r.stash.iter().map(|(fd, _, _)| *fd));
            v.extend(r.externals.iter().map(|e| e.peer));
        }
        v.sort_unstable();
        v
    }

    /// Moves our fd off `fd` (the program wants that number, e.g. dup2 onto it).
    pub fn evacuate(&mut self, fd: c_int) {
        for own in [&mut self.gd_fd, &mut self.history_fd, &mut self.log_fd] {
            if *own == fd && fd >= 0 {
                crate::fds::forget_ours(fd);
                *own = claim_fd(sys::move_high(fd, HIGH_FD));
            }
        }
    }

    /// Exit of this process: logged (record) or checked against the history (replay).
    fn exiting(&mut self, status: c_int) {
        let record = Record::Exit { status };
        match self.mode {
            Mode::Record => {
                self.emit(&record);
                self.drain(true);
            }
            Mode::Replay => {
                self.gate();
                match self.next_record() {
                    Some(Record::Exit { status: s }) if *s == status => {}
                    _ => self.diverge(&format!("exit with status {status}")),
                }
                self.advance(&record);
            }
        }
        let msg = LdToGd::Exiting {
            actor: self.actor,
            events: self.events(),
            status: ddbx_wire::manifest::ExitStatus::Exited(status),
        };
        self.send(&msg);
    }

    /// In a forked child: become the new actor, with our own GD connection, state and history.
    fn become_child(&mut self) {
        let parent = self.actor;
        let index = self.fork_index;
        for fd in [self.gd_fd, self.history_fd, self.full_fd] {
            if fd >= 0 {
                crate::fds::forget_ours(fd);
                sys::close(fd);
            }
        }
        self.gd_fd = -1;
        self.history_fd = -1;
        self.full_fd = -1;
        if !self.shared.is_null() {
            // SAFETY: unmapping the parent's mapping in the child only.
            unsafe { libc::munmap(self.shared.cast(), 4096) };
            self.shared = std::ptr::null_mut();
        }
        if let Some(r) = self.replay.take() {
            for (fd, _, _) in r.stash {
                sys::close(fd);
            }
            for e in r.externals {
                sys::close(e.peer);
            }
        }
        self.pid = sys::getpid();
        crate::guard::forget_tid();
        self.io_tid = AtomicI32::new(0);
        self.passthrough_seen = 0;
        self.counters = Default::default();
        self.probes.clear();
        self.halt = None;
        if !self.join(Claim::Fork { parent, index }) {
            PHASE.store(OFF, Ordering::Release);
        }
    }
}

fn map_shared(path: &[u8]) -> *mut Shared {
    let fd = sys::open(path, libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC, 0o600);
    if fd < 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: sizing and mapping a file we just opened.
    let p = unsafe {
        if libc::syscall(libc::SYS_fallocate, fd, 0, 0, 4096) != 0
            && libc::syscall(libc::SYS_ftruncate, fd, 4096) != 0
        {
            sys::close(fd);
            return std::ptr::null_mut();
        }
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    sys::close(fd);
    if p == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        p.cast()
    }
}

fn open_history(path: &[u8], actor: ActorId, optimal: bool) -> c_int {
    let fd = sys::open(
        path,
        libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
        0o644,
    );
    if fd < 0 {
        return -1;
    }
    let fd = claim_fd(sys::move_high(fd, HIGH_FD));
    // SAFETY: fstat into a local.
    let size = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat);
        st.st_size
    };
    if size == 0 {
        let header = if optimal {
            ddbx_wire::history::header_line_optimal(actor)
        } else {
            header_line(actor)
        };
        sys::write_all(fd, header.as_bytes());
    }
    fd
}

/// A stack buffer for one history line.
struct LineBuf {
    buf: [u8; 1024],
    len: usize,
}

impl LineBuf {
    fn new() -> LineBuf {
        LineBuf {
            buf: [0; 1024],
            len: 0,
        }
    }
    fn push(&mut self, b: u8) -> bool {
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
            true
        } else {
            false
        }
    }
    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl std::fmt::Write for LineBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Fork and exit handlers.

/// Before a fork that skips the fork handlers (_Fork): what `pthread_atfork`'s prepare does.
pub fn before_fork() {
    atfork_prepare();
}

/// Before an exec: optimal tracing writes out what it still holds (the new image starts
/// with an empty queue).
pub fn before_exec() {
    if PHASE.load(Ordering::Acquire) != ACTIVE {
        return;
    }
    if let Some(ld) = slot().as_mut()
        && ld.mode == Mode::Record
    {
        ld.drain(true);
    }
}

/// After such a fork, in the parent.
pub fn after_fork_parent() {
    atfork_parent();
}

/// After such a fork, in the child.
pub fn after_fork_child() {
    atfork_child();
}

extern "C" fn atfork_prepare() {
    if PHASE.load(Ordering::Acquire) != ACTIVE {
        return;
    }
    if let Some(ld) = slot().as_mut() {
        // A halting replay may hold the actor before its fork.
        ld.gate();
        ld.fork_index = ld.next_child();
    }
}

extern "C" fn atfork_parent() {
    if PHASE.load(Ordering::Acquire) != ACTIVE {
        return;
    }
    let _guard = Guard::enter();
    if let Some(ld) = slot().as_mut() {
        let record = Record::Fork {
            index: ld.fork_index,
        };
        match ld.mode {
            Mode::Record => ld.emit(&record),
            Mode::Replay => {
                let index = ld.fork_index;
                ld.follow(
                    |r| matches!(r, Record::Fork { index: i } if *i == index),
                    || record.to_line(),
                );
                ld.advance(&record);
            }
        }
    }
}

extern "C" fn atfork_child() {
    if PHASE.load(Ordering::Acquire) != ACTIVE {
        return;
    }
    let _guard = Guard::enter();
    if let Some(ld) = slot().as_mut() {
        ld.become_child();
    }
}

unsafe extern "C" {
    /// glibc's on_exit(3): like atexit, but the handler gets the exit status.
    #[link_name = "on_exit"]
    fn on_exit_register(
        f: extern "C" fn(c_int, *mut libc::c_void),
        arg: *mut libc::c_void,
    ) -> c_int;
}

extern "C" fn on_exit(status: c_int, _arg: *mut libc::c_void) {
    exit_hook(status);
}

/// Called on every way out of the process that we see (exit handlers, _exit, _Exit).
pub fn exit_hook(status: c_int) {
    if PHASE.load(Ordering::Acquire) != ACTIVE {
        return;
    }
    let _guard = Guard::enter();
    if let Some(ld) = slot().as_mut()
        && ld.pid == sys::getpid()
    {
        ld.exiting(status & 0xff);
        // Nothing after this is recorded (atexit handlers of other libraries, stdio flush).
        PHASE.store(OFF, Ordering::Release);
    }
}
