//! Runs as `ddbx record` processes: one is started per run, and a thread waits for it and
//! sends its end, read from its `--json` object.

use super::{Message, Ran};
use crate::api::{OutcomeKind, RecordOptions};
use crate::error::Error;
use ddbx_supervisor::wire::manifest::ExitStatus;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;

/// Starts `ddbx record --json` of the command into `dir`; a thread sends its end. Returns
/// its pid.
pub(super) fn spawn(
    ddbx: &Path,
    options: &RecordOptions,
    dir: &Path,
    run: u32,
    tx: Sender<Message>,
) -> Result<i32, Error> {
    let json = dir.with_extension("json");
    let mut command = Command::new(ddbx);
    command
        .arg("record")
        .arg("--no-latest")
        .arg("--json")
        .arg("--messages")
        .arg(&json)
        .arg("-o")
        .arg(dir);
    if std::env::var(ddbx_supervisor::wire::env::TRACE).as_deref() == Ok("optimal") {
        command.args(["--trace", "optimal"]);
    }
    for pattern in &options.env_exclude {
        command.arg("--env-exclude").arg(pattern);
    }
    command.arg("--").args(&options.command);
    command.stdin(Stdio::null());
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    // The run is stopped if this process dies: it would be nobody's any more.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)
                .map_err(std::io::Error::from)
        });
    }
    let mut child = command.spawn().map_err(|e| {
        Error::Internal(format!(
            "cannot start {} for run {run}: {e}",
            ddbx.display()
        ))
    })?;
    let pid = child.id() as i32;
    let name = format!("ddbx-run-{run}");
    let spawned = std::thread::Builder::new().name(name).spawn(move || {
        let status = child.wait();
        let ran = read_outcome(&json).ok_or_else(|| {
            Error::Internal(format!(
                "run {run}: `ddbx record` ended ({}) without writing its outcome to {}",
                status.map_or_else(|e| e.to_string(), |s| s.to_string()),
                json.display()
            ))
        });
        let _ = tx.send(Message::Ended { run, ran });
    });
    spawned.map_err(|e| Error::Internal(format!("cannot start a thread: {e}")))?;
    Ok(pid)
}

/// The end of a run from its `--json` object.
fn read_outcome(json: &Path) -> Option<Ran> {
    let text = std::fs::read_to_string(json).ok()?;
    let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    let kind = match value.get("outcome")?.as_str()? {
        "complete" => OutcomeKind::Complete,
        "unsupported" => OutcomeKind::Unsupported,
        "interrupted" => OutcomeKind::Interrupted,
        _ => return None,
    };
    let root_status = value
        .get("root_status")
        .and_then(|s| s.as_str())
        .and_then(parse_status);
    Some(Ran {
        kind,
        exit_code: value.get("exit_code")?.as_i64()? as i32,
        root_status,
        problem: value
            .get("problem")
            .and_then(|p| p.as_str())
            .map(str::to_string),
    })
}

/// `exit 3` or `signal 6`, as [`ExitStatus`] shows itself.
fn parse_status(text: &str) -> Option<ExitStatus> {
    let (word, n) = text.split_once(' ')?;
    let n = n.parse().ok()?;
    match word {
        "exit" => Some(ExitStatus::Exited(n)),
        "signal" => Some(ExitStatus::Signaled(n)),
        _ => None,
    }
}
