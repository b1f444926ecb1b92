//! The LD's life in a process image: starting (reading the environment, joining the session
//! with `Hello`/`Welcome`, mapping the actor's progress file, opening its history, loading the
//! history to replay), becoming a forked child's LD, and announcing the exit.
//!
//! Only the mechanics live here. Each start ends with the image's first event (`Start`, or
//! `Exec` for an exec'd image), which this module builds but does not record or replay: the
//! caller (`hooks/process.rs`, which also registers the fork and exit handlers) hands it to
//! `record/process.rs` or `replay/process.rs`.

use super::live::LiveState;
use super::{HaltState, Ld, ObservedGlobal, ReplayState};
use crate::{fds, sys};
use ddbx_wire::history::{Origin, Record};
use ddbx_wire::proto::{Claim, GdToLd, LdToGd, Mode, Passed, ReplayPlan};
use ddbx_wire::{ActorId, PROTOCOL_VERSION, env};
use libc::c_int;
use std::sync::atomic::AtomicI32;

/// Size of the actor's progress file (one page).
const PROGRESS_BYTES: usize = 4096;

/// An LD that has joined the session, and the first event of its image.
pub struct Joined {
    /// The LD, ready to be installed.
    pub ld: Ld,
    /// `Start`, or `Exec` for an exec'd image: for the caller to record or replay.
    pub first: Record,
}

/// Starts the LD for this process image: `None` when it must stay off (no GD in the
/// environment, or the GD unreachable: the program runs unrecorded).
pub fn start() -> Option<Joined> {
    crate::real::resolve_all();
    crate::real::resolve_syscall();
    let gd_path = getenv(env::GD_SOCKET)?;
    let log_fd = match getenv(env::LD_LOG) {
        Some(path) => {
            let fd = sys::open(
                &path,
                libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
                0o644,
            );
            if fd >= 0 {
                fds::mark_ours(sys::move_high(fd, fds::HIGH_FD))
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
        fork_index: 0,
        replay: None,
        halt: None,
        steer: None,
        live: None,
        in_wait: false,
        counters: Default::default(),
        probes: Vec::new(),
        symbols: Default::default(),
        trace: None,
        values: super::ValueLog::new(),
        progress: std::ptr::null_mut(),
        gd_fd: -1,
        lifeline_fd: -1,
        gd_pending: Vec::new(),
        gd_fds: Vec::new(),
        gd_path,
        gd_key: getenv(env::GD_KEY).unwrap_or_default(),
        history_fd: -1,
        full_fd: -1,
        log_fd,
        io_tid: AtomicI32::new(0),
        thread_logged: 1,
        values_of: 0,
        passthrough_seen: 0,
        argv,
        preload_env: getenv("LD_PRELOAD").unwrap_or_default(),
        fault: match getenv(env::LD_FAULT).as_deref() {
            Some(b"connect") => b"connect",
            Some(b"accept") => b"accept",
            Some(b"welcome") => b"welcome",
            _ => b"",
        },
    };
    let first = ld.join(claim)?;
    // Mapped now, before the program can chroot or switch users: its children keep it.
    ld.map_file_turns_early();
    if ld.mode == Mode::Replay {
        ld.map_signals_sent();
    }
    if ld.records_pipes()
        && let Some(pipes) = getenv(env::PIPES)
    {
        fds::pipes::adopt(&pipes);
    }
    if ld.mode == Mode::Replay
        && let Some(ports) = getenv(env::PORTS)
    {
        fds::ports::adopt(&ports);
    }
    Some(Joined { ld, first })
}

/// An environment variable, read without allocating through libc's own hooks.
fn getenv(name: &str) -> Option<Vec<u8>> {
    let mut buf = [0u8; 512];
    let cname = sys::cstr(name.as_bytes(), &mut buf)?;
    // SAFETY: cname is NUL-terminated; getenv returns null or a NUL-terminated string that we
    // copy at once.
    unsafe {
        let p = libc::getenv(cname);
        if p.is_null() {
            None
        } else {
            Some(std::ffi::CStr::from_ptr(p).to_bytes().to_vec())
        }
    }
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
    // SAFETY: uname fills the zeroed struct, whose nodename is then a NUL-terminated string.
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
    /// Connects to the GD, learns who we are, and opens this image's history. Returns the
    /// image's first event; `None`: run unrecorded (the GD is gone: the program carries on).
    fn join(&mut self, claim: Claim) -> Option<Record> {
        self.hold_lifeline();
        let fd = sys::connect_unix(&self.gd_path);
        if fd < 0 {
            sys::diag(
                self.log_fd,
                "ddbx-ld: cannot reach the GD; running unrecorded",
            );
            return None;
        }
        self.gd_fd = fds::mark_ours(sys::move_high(fd, fds::HIGH_FD));
        self.forget_gd_input();
        self.send(&LdToGd::Hello {
            protocol: PROTOCOL_VERSION,
            pid: self.pid,
            ppid: sys::getppid(),
            claim,
            argv: self.argv.clone(),
            key: String::from_utf8_lossy(&self.gd_key).into_owned(),
        });
        let reply = loop {
            match self.receive() {
                // Halting control: none comes before the Welcome (the GD attaches its writer
                // after writing it), and there is no halting state to apply it to yet.
                Some(
                    GdToLd::RunUntil { .. }
                    | GdToLd::Report
                    | GdToLd::Release
                    | GdToLd::Retarget { .. },
                ) => continue,
                other => break other,
            }
        };
        let Some(reply) = reply else {
            sys::diag(
                self.log_fd,
                "ddbx-ld: the GD did not answer Hello; running unrecorded",
            );
            return None;
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
                passed,
                steer,
                live,
            } => {
                let files = self.take_passed(&passed);
                self.halt = halting.map(HaltState::new);
                self.steer = steer.filter(|_| mode == Mode::Record);
                self.live = live.filter(|_| mode == Mode::Record).map(LiveState::new);
                self.actor = actor;
                self.mode = mode;
                let state_fd = files.state.unwrap_or_else(|| {
                    sys::open(
                        state_file.as_bytes(),
                        libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC,
                        0o600,
                    )
                });
                self.progress = map_progress(state_fd);
                if self.progress.is_null() {
                    sys::diag(self.log_fd, "ddbx-ld: cannot map the actor state file");
                    let why = format!(
                        "cannot open or map its state file {state_file} (errno {}); the GD \
                         did not pass it",
                        sys::errno()
                    );
                    self.unsupported(why);
                }
                let replay_history = files.replay.map(|fd| {
                    // SAFETY: a descriptor the GD just passed us, owned by nobody else.
                    unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) }
                });
                self.start_tracing(replay.as_deref(), replay_history.as_ref());
                self.start_signals();
                self.start_locks(history_out.as_deref(), replay.as_deref());
                if let Some(path) = history_out {
                    self.open_histories(path, files.history);
                }
                if let Some(plan) = replay {
                    self.load_replay(*plan, replay_history);
                }
                Some(self.first_record(origin, exec))
            }
            GdToLd::Refuse { why } => {
                sys::diag(self.log_fd, &why);
                // The GD stops the session; this process must not run on unreplayed.
                self.wait_for_the_end(ddbx_wire::exit::DIVERGED)
            }
            _ => None,
        }
    }

    /// A record notes where signals come (not under optimal tracing, which has no value
    /// lines); a replay orders them when its history says where they came (`load_replay`).
    fn start_signals(&self) {
        let record_signals = self.mode == Mode::Record && self.trace.is_none();
        crate::signals::set_mode(if record_signals {
            crate::signals::RECORD
        } else {
            crate::signals::PASS
        });
    }

    /// Where this image's lock history is, for its threads (`preload/src/locks/`): beside the
    /// history it writes (record) or follows (replay).
    fn start_locks(&self, history_out: Option<&str>, replay: Option<&ReplayPlan>) {
        use ddbx_wire::locks::path_beside;
        match (self.mode, history_out, replay) {
            (Mode::Record, Some(path), _) => crate::locks::configure(
                crate::locks::RECORD,
                self.actor,
                &path_beside(path),
                self.log_fd,
            ),
            (Mode::Replay, _, Some(plan)) => crate::locks::configure(
                crate::locks::REPLAY,
                self.actor,
                &path_beside(&plan.history),
                self.log_fd,
            ),
            _ => crate::locks::configure(crate::locks::OFF, self.actor, "", self.log_fd),
        }
    }

    /// The descriptors that came with the `Welcome` (the first ones received on this
    /// connection), by what the GD says they are. They stay ours.
    fn take_passed(&mut self, passed: &[Passed]) -> PassedFiles {
        let mut files = PassedFiles::default();
        for what in passed {
            if self.gd_fds.is_empty() {
                sys::diag(self.log_fd, "ddbx-ld: a passed file did not come");
                break;
            }
            let fd = self.gd_fds.remove(0);
            let slot = match what {
                Passed::History => &mut files.history,
                Passed::State => &mut files.state,
                Passed::Replay => &mut files.replay,
            };
            *slot = Some(fd);
        }
        // The history stays open for the image's life: with the LD's own fds, which come
        // below KEPT_FDS (a program's RLIMIT_NOFILE may be 1024: runuser's PAM sets it).
        if let Some(fd) = files.history {
            fds::forget_ours(fd);
            files.history = Some(fds::mark_ours(sys::move_high(fd, fds::HIGH_FD)));
        }
        // The state file and the replay history are closed at once (mapped, or read), so
        // they stop being ours here.
        if let Some(fd) = files.replay {
            fds::forget_ours(fd);
        }
        if let Some(fd) = files.state {
            fds::forget_ours(fd);
        }
        files
    }

    /// Starts (or, in a forked child, carries on) optimal tracing: when recording with
    /// `DDBX_TRACE=optimal`, or replaying an optimally traced history (`history`: the one the
    /// GD passed, else read by its path).
    fn start_tracing(&mut self, replay: Option<&ReplayPlan>, history: Option<&std::fs::File>) {
        use ddbx_wire::history::{Trace, trace_of, trace_of_file};
        let recording = self.mode == Mode::Record;
        let optimal = match (replay, self.mode) {
            (None, Mode::Record) => getenv(env::TRACE).is_some_and(|v| v == b"optimal"),
            (Some(plan), _) => {
                let trace = match history {
                    Some(file) => trace_of_file(file),
                    None => trace_of(std::path::Path::new(&plan.history)),
                };
                trace == Trace::Optimal
            }
            _ => false,
        };
        let me = self.actor.0;
        match self.trace.as_mut() {
            // A forked child keeps its parent's clock.
            Some(t) if optimal => {
                t.become_child(me);
                t.recording = recording;
            }
            _ if optimal => {
                self.trace = crate::trace::Tracer::new(recording, me, &self.gd_path);
            }
            _ => self.trace = None,
        }
    }

    /// Opens the history at `path`, unless the GD passed it open (`passed`), and, under
    /// `DDBX_TRACE_CHECK`, the full one beside it.
    fn open_histories(&mut self, path: String, passed: Option<c_int>) {
        if self.fault == b"welcome" && self.fork_index > 0 {
            // A forked child (its parent's fork number is still set) killed after the GD made
            // its history and before the first line (a group kill right after the fork).
            sys::kill_self(libc::SIGKILL);
        }
        let optimal = self.trace.is_some();
        self.history_fd = match passed {
            Some(fd) => super::journal::adopt_history(fd, self.actor, optimal),
            None => super::journal::open_history(path.as_bytes(), self.actor, optimal),
        };
        if optimal && getenv(env::TRACE_CHECK).is_some() {
            let mut full = path.into_bytes();
            full.extend_from_slice(b".full");
            self.full_fd = super::journal::open_history(&full, self.actor, false);
        }
    }

    /// Loads the history to replay (`passed`: the GD opened it). An exec'd image continues
    /// the actor's variables where they stood. A history that cannot be loaded stops the
    /// session.
    fn load_replay(&mut self, plan: ReplayPlan, passed: Option<std::fs::File>) {
        let path = std::path::Path::new(&plan.history);
        let loaded = match passed {
            Some(file) => ddbx_wire::History::load_file(path, file),
            // A child killed before it joined (`Registry::expecting_unjoined`): no events.
            None if plan.history.is_empty() => Ok(ddbx_wire::History::empty(self.actor)),
            None => ddbx_wire::History::load(path),
        };
        let mut history = match loaded {
            Ok(h) => h,
            Err(e) => self.unsupported(format!("cannot load its history: {e}")),
        };
        // What the record did and never logged (killed first), as its peers show it.
        history.records.extend(plan.unlogged_tail);
        let ordered = plan.signals && self.trace.is_none();
        let threads = super::threads::runs(&mut history.values, &history.records);
        let made = super::threads::Made::take_from(&mut history.values, self.events());
        crate::signals::load_plan(&mut history.values, ordered, self.events());
        let own = super::own_values::split(&mut history.values, &threads, self.events());
        let done = (self.events() as usize).min(history.records.len());
        for r in &history.records[..done] {
            self.counters.count(r);
            if let Record::Probe { name, value } = r {
                self.probes.push(super::ProbeValue {
                    name: name.clone(),
                    value: *value,
                });
            }
        }
        self.replay = Some(ReplayState {
            values: super::ReplayValues {
                list: history
                    .values
                    .into_iter()
                    .map(|(a, v)| (a, Some(v)))
                    .collect(),
                cursor: 0,
                last: [None; ddbx_wire::history::value::SLOT_COUNT],
                own,
            },
            records: history.records,
            accepts: plan.accepts,
            killed_by: plan.killed_by,
            ended_by_signal: plan.ended_by_signal,
            kept: Vec::new(),
            outside_peers: Vec::new(),
            pending_peers: Vec::new(),
            refusers: [-1, -1],
            held: Vec::new(),
            external_connects: plan.external_connects,
            closes: plan.closes,
            pipes: plan.pipes,
            owed: plan.owed,
            unlogged_children: plan.unlogged_children,
            child_pids: plan.child_pids,
            threads,
            made,
            unfinished_read: None,
            observe: plan
                .observe
                .into_iter()
                .map(|(name, ty)| ObservedGlobal {
                    name,
                    ty,
                    last: None,
                })
                .collect(),
        });
        // Every replay, ordered or not: a kill that the sender's replay makes early waits
        // for the end of this history (under optimal tracing, a script's `kill` ended its
        // server's `sh` before it exec'd the `sleep` the record's had).
        crate::fatal::hold_default_fatal(self.next_record().is_some());
        self.start_pids();
    }

    /// The image's first event: `Exec` for an exec'd image of the actor, else `Start`.
    fn first_record(&self, origin: Origin, exec: bool) -> Record {
        if exec {
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
        }
    }

    /// In a forked child: becomes the new actor, with its own GD connection, progress and
    /// history. Returns its first event; `None`: the child runs unrecorded.
    pub fn become_child(&mut self) -> Option<Record> {
        super::reaps::forget();
        let parent = self.actor;
        let index = self.fork_index;
        for fd in [self.gd_fd, self.lifeline_fd, self.history_fd, self.full_fd] {
            if fd >= 0 {
                fds::forget_ours(fd);
                sys::close(fd);
            }
        }
        self.gd_fd = -1;
        self.lifeline_fd = -1;
        self.history_fd = -1;
        self.full_fd = -1;
        if !self.progress.is_null() {
            // SAFETY: unmapping the parent's mapping (PROGRESS_BYTES, from `map_progress`) in
            // this child only; nothing refers to it any more.
            unsafe { libc::munmap(self.progress.cast(), PROGRESS_BYTES) };
            self.progress = std::ptr::null_mut();
        }
        if let Some(r) = self.replay.take() {
            for kept in r.kept {
                sys::close(kept.fd);
            }
            for peer in r.outside_peers {
                sys::close(peer.ld_end);
            }
            for peer in r.pending_peers {
                fds::forget_ours(peer.ld_end);
                sys::close(peer.ld_end);
            }
            for fd in r.refusers.into_iter().filter(|fd| *fd >= 0) {
                fds::forget_ours(fd);
                sys::close(fd);
            }
        }
        self.pid = sys::getpid();
        crate::guard::forget_tid();
        self.io_tid = AtomicI32::new(0);
        self.thread_logged = 1;
        self.passthrough_seen = 0;
        // The parent's unwritten values are the parent's; the child's history is new.
        self.values.len = 0;
        while crate::signals::next_note_before(usize::MAX).is_some() {}
        crate::signals::forked_child();
        super::sent::start_counting();
        self.values.deltas = ddbx_wire::history::value::Deltas::new();
        self.counters = Default::default();
        self.probes.clear();
        self.halt = None;
        self.join(Claim::Fork { parent, index })
    }

    /// Tells the GD that this process exits with `status`, after its last event.
    pub fn announce_exit(&mut self, status: c_int) {
        let msg = LdToGd::Exiting {
            actor: self.actor,
            events: self.events(),
            status: ddbx_wire::manifest::ExitStatus::Exited(status),
        };
        self.send(&msg);
    }
}

/// The files the GD opened for this image and passed with its `Welcome`.
#[derive(Default)]
struct PassedFiles {
    history: Option<c_int>,
    state: Option<c_int>,
    replay: Option<c_int>,
}

/// Maps the actor's progress file open at `fd` (sizing it one page long) and closes `fd`;
/// null if it cannot.
fn map_progress(fd: c_int) -> *mut super::ActorProgress {
    if fd < 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: sizing and mapping a file we just opened; the kernel checks the arguments.
    let p = unsafe {
        if libc::syscall(libc::SYS_fallocate, fd, 0, 0, PROGRESS_BYTES as libc::off_t) != 0
            && libc::syscall(libc::SYS_ftruncate, fd, PROGRESS_BYTES as libc::off_t) != 0
        {
            sys::close(fd);
            return std::ptr::null_mut();
        }
        libc::mmap(
            std::ptr::null_mut(),
            PROGRESS_BYTES,
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
