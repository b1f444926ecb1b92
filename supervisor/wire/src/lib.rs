//! `ddbx-wire`: the only vocabulary that ddbx's two sides share.
//!
//! The local debugger (LD, `libddbx_preload.so`, inside every debuggee) and the global debugger
//! (GD, the supervisor inside the `ddbx` process) never depend on each other; both depend on this
//! crate. It defines:
//!
//! * [`ids`]: logical actor ids (`p1`, `p2`, …), stable across record and replay;
//! * [`history`]: the per-actor history (one RON record per line, a versioned header), its
//!   writer and its checking reader;
//! * [`locks`]: a process's lock history (per lock object, which thread did what, in order);
//! * [`manifest`]: what a recording needs to be re-run (command, cwd, environment, actors);
//! * [`pred`]: the `stop if` predicate language's tree, printing and evaluation (the GD parses,
//!   the LD evaluates);
//! * [`proto`]: the LD↔GD messages, named by direction ([`proto::LdToGd`], [`proto::GdToLd`]);
//! * [`elf`]: telling statically linked programs (which ddbx cannot see into) apart;
//! * [`errno`] and [`events`]: small value types that print readably in histories;
//! * [`counters`]: the built-in counters every actor has (`p3.recvs`), counted once for all;
//! * [`live_clock`]: the page that tells the LDs of a live run whether it is halted;
//! * [`exit`]: ddbx's exit codes, the same in the `ddbx` command and in the LD;
//! * [`file`]: reading a recording's files, refusing what is not a regular file (a FIFO).
//!
//! Nothing here allocates on its own or starts threads: the preload links it into other
//! people's processes.

pub mod counters;
pub mod elf;
pub mod errno;
pub mod events;
pub mod exit;
pub mod file;
pub mod history;
pub mod ids;
pub mod live_clock;
pub mod locks;
pub mod manifest;
pub mod pred;
pub mod proto;

pub use errno::Errno;
pub use events::Events;
pub use history::{History, HistoryError, Record};
pub use ids::ActorId;

/// Version of the history and manifest file formats that this ddbx writes. Format 2 writes the
/// common records as short lines (`history::fast`); a file of a version outside
/// [`OLDEST_FORMAT`]`..=FORMAT_VERSION` is refused (an older ddbx refuses format 2 by its
/// header, before any short line).
pub const FORMAT_VERSION: u32 = 2;

/// The oldest history and manifest format this ddbx reads (format 1: every record as RON).
pub const OLDEST_FORMAT: u32 = 1;

/// Version of the LD↔GD protocol, checked in the handshake.
pub const PROTOCOL_VERSION: u32 = 1;

/// The FIFO beside the GD's socket (same directory) whose only writer is the GD: every LD
/// opens it for reading with `O_ASYNC` and `F_SETSIG` = SIGKILL, so that the kernel kills each
/// debuggee the moment the GD's process is gone (its end closes), with no thread in the
/// debuggee and no check on the hook path. The GD never writes to it.
pub const LIFELINE: &str = "lifeline";

/// The file in the session's runtime directory (made by the GD, writable by every uid a
/// program may switch to) that holds, for each regular file that processes of the session
/// write in turns, the count of writes so far: [`FILE_TURN_SLOTS`] entries of
/// [`FILE_TURN_ENTRY`] bytes, mapped shared by every LD (`preload/src/ld/appends.rs`).
pub const FILE_TURNS: &str = "turns";
/// How many files the table of [`FILE_TURNS`] can count at once.
pub const FILE_TURN_SLOTS: usize = 4096;
/// The size of one entry of [`FILE_TURNS`].
pub const FILE_TURN_ENTRY: usize = 32;
/// Where, in [`FILE_TURNS`], the count of writes that a replay made out of turn is (a
/// little-endian `u32`, in the first entry, which is no file's): what the session reports
/// at the end of a replay.
pub const FILE_TURN_OUT_OF_TURN: usize = 12;

/// The file in the session's runtime directory (made by the GD, writable by every uid a
/// program may switch to) that counts, in a replay, the standard signals the session's
/// processes sent each process with `kill`: [`SENT_SLOTS`] entries of [`SENT_ENTRY`] bytes (a
/// pid, then a count per signal 1 to 31), mapped shared by every LD
/// (`preload/src/ld/sent.rs`). Two of one signal sent while its target did not run arrive as
/// one; the count tells the target's LD that the second came too.
pub const SIGNALS_SENT: &str = "sent";
/// How many processes the table of [`SIGNALS_SENT`] can count for at once.
pub const SENT_SLOTS: usize = 4096;
/// The size of one entry of [`SIGNALS_SENT`].
pub const SENT_ENTRY: usize = 128;

/// The file in the session's runtime directory (made by the GD, writable by every uid a
/// program may switch to) through which a replay shows each process the pids of its record
/// (`preload/src/ld/pids.rs`): two arrays of [`PID_SLOTS`] little-endian `i32`s, indexed by
/// pid, the first from a recorded pid to the replay's, the second back; 0 where nothing is
/// known. Sparse: only the pages of pids in use take room.
pub const PID_MAP: &str = "pids";
/// How many pids each array of [`PID_MAP`] has: the kernel's largest `pid_max` on 64-bit
/// machines (a pid is always below it).
pub const PID_SLOTS: usize = 1 << 22;

/// Environment variables through which the GD configures each LD.
pub mod env {
    /// Path of the GD's Unix socket. Without it the preload stays inert.
    pub const GD_SOCKET: &str = "DDBX_GD";
    /// `"<pid>:<actor>:<index>"`: set for a process started by posix_spawn or by ddbx itself;
    /// valid only when `<pid>` is the new process's parent pid.
    pub const SPAWN: &str = "DDBX_SPAWN";
    /// Where the LD writes its own diagnostics (a file path); default: nowhere.
    pub const LD_LOG: &str = "DDBX_LD_LOG";
    /// `optimal`: the LD of a record logs only racing outcomes (`ddbx record --trace optimal`).
    pub const TRACE: &str = "DDBX_TRACE";
    /// Set (to anything) with `TRACE=optimal`: the LD also writes the full history next to the
    /// optimal one (`<actor>.full.ron`), for checking optimal tracing against the offline
    /// analysis.
    pub const TRACE_CHECK: &str = "DDBX_TRACE_CHECK";
    /// The session's secret (hex): every `Hello` must carry it. The GD's socket can be reached
    /// by any uid (a program may drop privileges), so it also checks that the peer is one of
    /// its descendants.
    pub const GD_KEY: &str = "DDBX_GD_KEY";
    /// `"<fd>:<inode>,…"`: the pipe ends made by recorded processes that an exec'd image
    /// inherits (the LD of a record sets it at every exec; an inherited pipe not listed came
    /// from outside the session and passes through).
    pub const PIPES: &str = "DDBX_PIPES";
    /// `"<fd>:<inode>:<local port>:<remote port>,…"`: the ports a replayed image showed the
    /// program for its sockets (the record's, not the kernel's), for the image an exec makes.
    pub const PORTS: &str = "DDBX_PORTS";
    /// For tests of what a kill leaves: `connect` (`accept`) makes the LD of a record SIGKILL
    /// its process right after the first real connect of a socket (an accept) returns, before
    /// its record is written (the window an intent line covers for a connect:
    /// `supervisor/wire/src/history/intent.rs`); `welcome`, a forked child's LD SIGKILLs its
    /// process as it joins, after the GD made its history and before its first line.
    pub const LD_FAULT: &str = "DDBX_LD_FAULT";
}
