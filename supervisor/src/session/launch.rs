//! Starting the root process: ddbx becomes a child subreaper (and, when it handles them,
//! blocks SIGINT and SIGTERM for its signal thread), then starts the user's command with the
//! preload in `LD_PRELOAD`, the GD's socket in `DDBX_GD`, the session's secret in
//! `DDBX_GD_KEY`, the root's claim in `DDBX_SPAWN`,
//! and the signal mask ddbx itself was started with.

use super::procs;
use crate::error::{Error, Result, shown};
use nix::sys::signal::SigSet;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// The root process to start.
pub(super) struct Root<'a> {
    /// The executable, absolute.
    pub(super) program: &'a Path,
    /// Its argv as the user gave it (`argv[0]` is what the program sees).
    pub(super) argv: &'a [String],
    /// Its working directory.
    pub(super) cwd: &'a Path,
    /// Its environment, without ddbx's own variables.
    pub(super) env: &'a [(String, String)],
    /// The preload library.
    pub(super) preload: &'a Path,
    /// The GD's socket.
    pub(super) socket: &'a Path,
    /// The session's secret.
    pub(super) key: &'a str,
    /// ddbx's own pid (the root's claim names it as the parent).
    pub(super) ddbx_pid: i32,
    /// Whether this is a record (optimal tracing is chosen for a record only).
    pub(super) record: bool,
    /// Whether ddbx handles SIGINT and SIGTERM (then they are blocked in ddbx's threads).
    pub(super) handle_signals: bool,
}

/// The root, started.
pub(super) struct Launched {
    /// Its pid. The reaper owns waiting for it.
    pub(super) root_pid: i32,
    /// The signal mask ddbx had before it blocked SIGINT and SIGTERM (`None`: not blocked).
    old_mask: Option<SigSet>,
}

impl Launched {
    /// Gives ddbx back the signal mask it had (once the signal thread is gone).
    pub(super) fn restore_mask(&self) {
        if let Some(mask) = &self.old_mask {
            procs::restore_mask(mask);
        }
    }
}

/// Prepares ddbx (signals, subreaper) and starts the root.
pub(super) fn start(root: &Root<'_>) -> Result<Launched> {
    let old_mask = root
        .handle_signals
        .then(procs::block_stop_signals)
        .transpose()
        .map_err(|e| Error::io("cannot block SIGINT and SIGTERM", e))?;
    procs::become_subreaper().map_err(|e| Error::io("cannot become a child subreaper", e))?;
    let launched = Launched {
        root_pid: 0,
        old_mask,
    };
    match start_root(root, old_mask) {
        Ok(root_pid) => Ok(Launched {
            root_pid,
            ..launched
        }),
        Err(e) => {
            launched.restore_mask();
            Err(e)
        }
    }
}

/// Starts the root with `program_mask` (`None`: ddbx's own); returns its pid.
fn start_root(root: &Root<'_>, program_mask: Option<SigSet>) -> Result<i32> {
    let mut command = command(root);
    // The program starts with the signal mask ddbx itself was started with, not with the
    // SIGINT/SIGTERM that ddbx blocks for its own signal thread.
    // SAFETY: the closure runs between fork and exec and makes two async-signal-safe calls
    // (pthread_sigmask through nix, and prctl), neither of which allocates or locks.
    unsafe {
        command.pre_exec(move || {
            if let Some(mask) = &program_mask {
                let _ = mask.thread_set_mask();
            }
            // Until its LD holds the lifeline (`lifeline.rs`), the root dies with ddbx this way.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    match command.spawn() {
        // The Child handle is not waited on: dropping it leaves the process alone.
        Ok(child) => Ok(child.id() as i32),
        Err(e) => Err(Error::BadCommand(format!(
            "cannot start `{}` ({}): {e}",
            root.argv.join(" "),
            shown(root.program)
        ))),
    }
}

/// The root's command line and environment.
fn command(root: &Root<'_>) -> Command {
    let mut command = Command::new(root.program);
    command
        .arg0(root.argv.first().map(String::as_str).unwrap_or_default())
        .args(root.argv.iter().skip(1))
        .current_dir(root.cwd)
        .env_clear()
        .envs(root.env.iter().map(|(k, v)| (k, v)));
    let preload = root.preload.to_string_lossy().into_owned();
    let ld_preload = match root.env.iter().find(|(k, _)| k == "LD_PRELOAD") {
        Some((_, existing)) if !existing.is_empty() => format!("{preload}:{existing}"),
        _ => preload,
    };
    command
        .env("LD_PRELOAD", ld_preload)
        .env(ddbx_wire::env::GD_SOCKET, root.socket)
        .env(ddbx_wire::env::GD_KEY, root.key)
        .env(ddbx_wire::env::SPAWN, format!("{}:p0:1", root.ddbx_pid));
    if let Some(log) = std::env::var_os(ddbx_wire::env::LD_LOG) {
        command.env(ddbx_wire::env::LD_LOG, log);
    }
    // Optimal tracing is chosen by `ddbx record --trace optimal` (a record only).
    if root.record {
        for var in [ddbx_wire::env::TRACE, ddbx_wire::env::TRACE_CHECK] {
            if let Some(value) = std::env::var_os(var) {
                command.env(var, value);
            }
        }
    }
    command
}
