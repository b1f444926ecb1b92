//! The session manifest: what is needed to re-run a recording, and what the record saw.
//!
//! Stored as `manifest.ron` (pretty RON) in the recording's directory, next to `history/`.
//! It is rewritten atomically whenever an actor appears, so a recording whose `ddbx` was
//! killed still lists every actor it saw.

use crate::history::Origin;
use crate::{ActorId, FORMAT_VERSION, OLDEST_FORMAT};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How a process ended.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// exit(status) or return from main.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

impl ExitStatus {
    /// The shell's view of it: the status, or 128 + signal.
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Exited(s) => s,
            ExitStatus::Signaled(sig) => 128 + sig,
        }
    }
}

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitStatus::Exited(s) => write!(f, "exit {s}"),
            ExitStatus::Signaled(sig) => write!(f, "signal {sig}"),
        }
    }
}

/// Where a recording stands.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// `ddbx record` is (or was, if it died) running.
    Recording,
    /// The whole process tree exited; the recording is complete.
    Complete,
    /// The recording was stopped (ddbx interrupted, or the program was refused).
    Interrupted,
}

/// One actor as the record saw it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ActorInfo {
    /// Its logical id.
    pub id: ActorId,
    /// How it was created (replay's key for giving a new process this id).
    pub origin: Origin,
    /// Its process id in the record.
    pub pid: i32,
    /// The program and arguments of its first image.
    pub argv: Vec<String>,
    /// The host it ran on.
    pub host: String,
    /// How it ended, when ddbx learnt it.
    #[serde(default)]
    pub exit: Option<ExitStatus>,
    /// The children it reaped with a blocking wait (waitpid, wait, …), in order: waits are not
    /// events, but the event after one needs that child's exit (a halting replay uses this).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reaps: Vec<Reap>,
    /// Recorded processes that sent it a signal with kill(2), with the signal (in the order the
    /// GD heard of them). A death by one of these signals was another actor's doing: replay
    /// waits for that kill rather than ending the process where its history ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signalled_by: Vec<(ActorId, i32)>,
    /// Why its last image ran unrecorded, when it did (it exec'd, and the new image never
    /// joined the session: `ddbx ps` says "unrecorded", not "killed").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrecorded: Option<String>,
}

/// A child reaped by an actor's wait.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reap {
    /// Events the actor had executed when its wait returned the child.
    pub after: u64,
    /// The child.
    pub child: ActorId,
}

/// The manifest of one recording.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Must equal [`FORMAT_VERSION`].
    pub format: u32,
    /// The ddbx version that recorded it.
    pub ddbx_version: String,
    /// The command line, as given to `ddbx record`.
    pub command: Vec<String>,
    /// The working directory it ran in.
    pub cwd: PathBuf,
    /// The environment it ran with (without ddbx's own variables).
    pub env: Vec<(String, String)>,
    /// The host of the session.
    pub host: String,
    /// Where the recording stands.
    pub state: SessionState,
    /// Every actor, in id order.
    pub actors: Vec<ActorInfo>,
    /// Kinds of I/O seen but not recorded (UDP, pipes, …), one line each.
    #[serde(default)]
    pub passthrough: Vec<String>,
    /// Why the recording was interrupted, if it was.
    #[serde(default)]
    pub problem: Option<String>,
    /// Variables the program had that [`Manifest::env`] leaves out (`ddbx record
    /// --env-exclude`): a replay takes them from its own environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_left_out: Vec<String>,
    /// Whether the histories have a [`Record::Close`](crate::history::Record::Close) event for
    /// every stream socket a process let go of, and a [`Record::Pair`](crate::history::Record::Pair)
    /// for every stream socketpair (recordings made before ddbx recorded them have none: their
    /// replays do not expect them).
    #[serde(default)]
    pub closes: bool,
    /// Whether the histories say where each asynchronous signal ran the program's handler
    /// (signal value lines, [`crate::history::value::Value::Signal`]); a replay of a recording
    /// made before lets signals come when they come.
    #[serde(default)]
    pub signals: bool,
    /// Whether the histories have a [`Record::Pipe`](crate::history::Record::Pipe) event for
    /// every pipe a recorded process made, and its reads, writes and ready sets (recordings
    /// made before ddbx recorded pipes have none: their replays let pipes through).
    #[serde(default)]
    pub pipes: bool,
}

/// A manifest that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Missing or unreadable.
    #[error(
        "{path}: cannot read the manifest: {source} (is this a directory made by `ddbx record`?)"
    )]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a manifest of a format this ddbx reads.
    #[error("{path}:{line}:{col}: {problem}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// What was expected and found.
        problem: String,
    },
}

impl Manifest {
    /// The file name inside a recording directory.
    pub const FILE: &'static str = "manifest.ron";

    /// Reads and checks `dir/manifest.ron`.
    pub fn load(dir: &Path) -> Result<Manifest, ManifestError> {
        let path = dir.join(Self::FILE);
        let bytes = crate::file::read_regular(&path).map_err(|source| ManifestError::Io {
            path: path.clone(),
            source,
        })?;
        let mut manifest = Manifest::parse_bytes(&path, &bytes)?;
        if manifest.state == SessionState::Recording {
            // ddbx stopped before writing the final manifest: its actors are in the log.
            for actor in Self::logged_actors(dir) {
                if manifest.actor(actor.id).is_none() {
                    manifest.actors.push(actor);
                }
            }
            manifest.actors.sort_by_key(|a| a.id);
        }
        Ok(manifest)
    }

    /// [`Manifest::parse`] of a file's bytes: invalid UTF-8 is refused at its line and column.
    pub fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<Manifest, ManifestError> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let valid = &bytes[..e.valid_up_to()];
            let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
            let line_start = valid.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let col = String::from_utf8_lossy(&valid[line_start..])
                .chars()
                .count()
                + 1;
            ManifestError::Malformed {
                path: path.to_path_buf(),
                line,
                col,
                problem: "expected UTF-8 text (a manifest is RON), found invalid bytes".into(),
            }
        })?;
        Manifest::parse(path, text)
    }

    /// Parses and checks the text of a manifest (`path` is only used in error messages); the
    /// actors log of an unfinished recording is [`Manifest::load`]'s business.
    pub fn parse(path: &Path, text: &str) -> Result<Manifest, ManifestError> {
        let manifest: Manifest = ron::from_str(text).map_err(|e| ManifestError::Malformed {
            path: path.to_path_buf(),
            line: e.span.start.line,
            col: e.span.start.col,
            problem: format!("expected a ddbx manifest: {}", e.code),
        })?;
        if !(OLDEST_FORMAT..=FORMAT_VERSION).contains(&manifest.format) {
            return Err(ManifestError::Malformed {
                path: path.to_path_buf(),
                line: 1,
                col: 1,
                problem: format!(
                    "manifest format {} is not supported by this ddbx (it reads formats {OLDEST_FORMAT} to {FORMAT_VERSION})",
                    manifest.format
                ),
            });
        }
        Ok(manifest)
    }

    /// While recording, each new actor is appended to this file (one RON line): the manifest
    /// itself is written at the start and at the end only.
    pub const ACTORS_LOG: &'static str = "actors.log";

    /// Appends one actor to `dir/actors.log` (one `write`, so a killed ddbx leaves whole lines).
    pub fn append_actor(dir: &Path, actor: &ActorInfo) -> std::io::Result<()> {
        use std::io::Write;
        let mut line = ron::to_string(actor).map_err(std::io::Error::other)?;
        line.push('\n');
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(dir.join(Self::ACTORS_LOG))?
            .write_all(line.as_bytes())
    }

    /// The actors appended to `dir/actors.log` (whole lines only).
    fn logged_actors(dir: &Path) -> Vec<ActorInfo> {
        let Ok(text) = crate::file::read_regular_text(&dir.join(Self::ACTORS_LOG)) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|l| ron::from_str::<ActorInfo>(l).ok())
            .collect()
    }

    /// Writes `dir/manifest.ron` atomically (temporary file, then rename). A final manifest
    /// (not `Recording`) replaces the actors log.
    pub fn store(&self, dir: &Path) -> std::io::Result<()> {
        let text = ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::new())
            .map_err(std::io::Error::other)?;
        let tmp = dir.join(format!(".{}.tmp", Self::FILE));
        {
            use std::io::Write;
            crate::file::create_private(&tmp)?.write_all((text + "\n").as_bytes())?;
        }
        std::fs::rename(&tmp, dir.join(Self::FILE))?;
        if self.state != SessionState::Recording {
            let _ = std::fs::remove_file(dir.join(Self::ACTORS_LOG));
        }
        Ok(())
    }

    /// The actor with this id.
    pub fn actor(&self, id: ActorId) -> Option<&ActorInfo> {
        self.actors.iter().find(|a| a.id == id)
    }

    /// Path of an actor's history inside recording directory `dir`.
    pub fn history_path(dir: &Path, id: ActorId) -> PathBuf {
        dir.join("history").join(format!("{id}.ron"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_loads() {
        let dir = std::env::temp_dir().join(format!("ddbx-wire-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let m = Manifest {
            format: FORMAT_VERSION,
            ddbx_version: "0".into(),
            command: vec!["./a".into()],
            cwd: "/".into(),
            env: vec![("A".into(), "b\nc".into())],
            host: "h".into(),
            state: SessionState::Complete,
            actors: vec![ActorInfo {
                id: ActorId(1),
                origin: Origin::Root,
                pid: 5,
                argv: vec!["./a".into()],
                host: "h".into(),
                exit: Some(ExitStatus::Exited(0)),
                reaps: Vec::new(),
                signalled_by: Vec::new(),
                unrecorded: None,
            }],
            passthrough: vec![],
            problem: None,
            env_left_out: vec!["TOKEN".into()],
            closes: true,
            signals: true,
            pipes: true,
        };
        m.store(&dir).unwrap();
        assert_eq!(Manifest::load(&dir).unwrap(), m);
        std::fs::write(dir.join(Manifest::FILE), "(format: 1, oops)").unwrap();
        let e = Manifest::load(&dir).unwrap_err().to_string();
        assert!(e.contains("manifest.ron:1:"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_killed_recording_lists_the_actors_of_its_log() {
        let dir = std::env::temp_dir().join(format!("ddbx-wire-actors-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let actor = |n| ActorInfo {
            id: ActorId(n),
            origin: Origin::Root,
            pid: n as i32,
            argv: vec!["./a".into()],
            host: "h".into(),
            exit: None,
            reaps: Vec::new(),
            signalled_by: Vec::new(),
            unrecorded: None,
        };
        let mut m = Manifest {
            format: FORMAT_VERSION,
            ddbx_version: "0".into(),
            command: vec!["./a".into()],
            cwd: "/".into(),
            env: vec![],
            host: "h".into(),
            state: SessionState::Recording,
            actors: vec![],
            passthrough: vec![],
            problem: None,
            env_left_out: vec![],
            closes: true,
            signals: true,
            pipes: true,
        };
        m.store(&dir).unwrap();
        Manifest::append_actor(&dir, &actor(1)).unwrap();
        Manifest::append_actor(&dir, &actor(2)).unwrap();
        // A torn last line (ddbx killed mid-write) is ignored.
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join(Manifest::ACTORS_LOG))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"(id: \"p3\", orig"))
            .unwrap();
        let loaded = Manifest::load(&dir).unwrap();
        assert_eq!(loaded.actors, vec![actor(1), actor(2)]);
        // The final manifest replaces the log.
        m.state = SessionState::Complete;
        m.actors = vec![actor(1), actor(2)];
        m.store(&dir).unwrap();
        assert!(!dir.join(Manifest::ACTORS_LOG).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
