//! Pids as the program sees them: in replay, the record's. A replay runs new processes with
//! new pids, and a program that writes a pid into its output (a log line with the worker's
//! pid, a pid file, `echo $$`) would write other bytes, of another length once the machine's
//! pids have wrapped between record and replay, and a replayed receive of them would diverge.
//! So in replay every pid that reaches the program is the one its record saw (`getpid`, a
//! fork's return, a wait's child, a signal's sender), and every pid the program hands the
//! kernel is turned back into this replay's (`kill`, `waitpid`, `setpgid`).
//!
//! The translation is a table that every process of the session shares (`preload/src/pids.rs`),
//! the file [`ddbx_wire::PID_MAP`] in the runtime directory (made by the GD), mapped shared
//! when a replaying LD starts: one array from recorded pid to replay pid, one back.
//! Each image enters its own pair as it starts (its history's `Start` has its recorded pid and
//! ppid); a parent enters its child's as the fork returns (the plan names the recorded pid of
//! each child, by fork number), before the child may have run. A pid nothing was entered for
//! (a process outside the session, a thread) is passed on unchanged both ways. In record, and
//! without a table, nothing is translated. Atomics only: a signal handler may translate.
//!
//! A `/proc/<pid>/…` path the program builds from a pid it was shown is turned into this
//! run's too (the open, stat, access and opendir families: `preload/src/hooks/pids.rs`). Not
//! translated: pids read from `/proc` (`pgrep`, `ps`), the thread ids of threads other than
//! the main one, and pids inside data (`F_GETLK`, `SCM_CREDENTIALS`). Where the
//! record's and the replay's pids overlap (the machine's pids wrapped), a pid read from
//! `/proc` that equals a recorded pid is taken for that process.

use super::Ld;
use super::turns::map_shared;
use crate::pids::{enter, install, installed, real, shown};
use crate::sys;
use ddbx_wire::history::Record;
use ddbx_wire::proto::Mode;
use ddbx_wire::{PID_MAP, PID_SLOTS};
use libc::pid_t;

impl Ld {
    /// In replay, as an image starts (or a forked child becomes its actor): maps the table if
    /// this image has none yet, and enters the actor's recorded pid, and its parent's when the
    /// parent is no recorded process (ddbx itself, for the first).
    pub fn start_pids(&self) {
        let Some(Record::Start { pid, ppid, .. }) = self
            .replay
            .as_ref()
            .and_then(|r| r.records.first())
            .filter(|_| self.mode == Mode::Replay)
        else {
            return;
        };
        if !installed() {
            self.map_pids();
        }
        enter(*pid, sys::getpid());
        let real_ppid = sys::getppid();
        if shown(real_ppid) == real_ppid && real(*ppid) == *ppid {
            enter(*ppid, real_ppid);
        }
    }

    fn map_pids(&self) {
        let Some(dir) = self.runtime_dir() else {
            return;
        };
        let mut path = dir.to_vec();
        path.push(b'/');
        path.extend_from_slice(PID_MAP.as_bytes());
        let file = sys::open(&path, libc::O_RDWR | libc::O_CLOEXEC, 0);
        if file < 0 {
            return;
        }
        if let Some(p) = map_shared(file, 2 * PID_SLOTS * 4) {
            install(p as usize);
        }
    }

    /// A fork or spawn made child number `index`, which is `real` in this run: the pid to
    /// show the program (the record's, entered in the table), or `real` when the record had
    /// no such child.
    pub fn created_child(&self, index: u32, real: pid_t) -> pid_t {
        let recorded = self.replay.as_ref().and_then(|r| {
            r.child_pids
                .binary_search_by_key(&index, |(i, _)| *i)
                .ok()
                .map(|at| r.child_pids[at].1)
        });
        match recorded {
            Some(recorded) if real > 0 && installed() => {
                enter(recorded, real);
                recorded
            }
            _ => real,
        }
    }
}
