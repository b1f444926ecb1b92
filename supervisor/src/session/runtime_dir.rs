//! The session's runtime directory: `gd.sock` and `state/`, removed at the end.
//!
//! The directory is 0711: any uid can reach `gd.sock` (0666) by its name, so that a program
//! that switches to another user (`runuser`, a server calling `setuid` after binding) still
//! joins its session; nobody can list it, and `state/` (0700) stays ddbx's. Who may talk to
//! the GD is checked on every connection instead (the peer must descend from ddbx and know the
//! session's secret: `supervisor/src/session/connections/mod.rs`).

use crate::error::{Error, Result};
use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Longest socket path a `sockaddr_un` holds (108 bytes with the terminating NUL), with room.
const MAX_SOCKET_PATH: usize = 100;

/// Removes the runtime directories of ddbx processes that are gone (a ddbx killed with SIGKILL
/// cannot remove its own): `ddbx-<pid>-<hex>` owned by us, whose pid is not running.
fn remove_stale(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    let me = nix::unistd::getuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("ddbx-")) else {
            continue;
        };
        let Some((pid, tag)) = rest.split_once('-') else {
            continue;
        };
        let (Ok(pid), true) = (
            pid.parse::<i32>(),
            tag.len() == 8 && tag.bytes().all(|b| b.is_ascii_hexdigit()),
        ) else {
            continue;
        };
        let owned = entry.metadata().is_ok_and(|m| m.is_dir() && m.uid() == me);
        // Signal 0 only checks that the process exists (EPERM: it does, and is not ours).
        let alive = matches!(kill(Pid::from_raw(pid), None), Ok(()) | Err(Errno::EPERM));
        if owned && !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A directory `ddbx-<pid>-<random>` with mode 0711 under `$TMPDIR`; when `$TMPDIR` is unset,
/// too long for a socket path, or out of other users' reach, under `/dev/shm` ([`shared_memory`])
/// or else `/tmp`. Removed with everything in it when dropped.
#[derive(Debug)]
pub struct RuntimeDir {
    path: PathBuf,
}

impl RuntimeDir {
    /// Creates a new, private runtime directory with its `state/` subdirectory.
    pub fn create() -> Result<RuntimeDir> {
        let tmp = std::env::var_os("TMPDIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.as_os_str().len() + 40 < MAX_SOCKET_PATH)
            .filter(|p| reachable_by_all(p))
            .or_else(shared_memory)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let pid = std::process::id();
        remove_stale(&tmp);
        let mut last_error = None;
        for attempt in 0..64u64 {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            let random = fnv1a(&[nanos.to_le_bytes(), attempt.to_le_bytes()].concat());
            let path = tmp.join(format!("ddbx-{pid}-{:08x}", random as u32));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let dir = RuntimeDir { path };
                    // Traversable, not listable (set after creation: the umask could mask it).
                    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711))
                        .map_err(|e| Error::io_at("cannot set the mode of", dir.path(), e))?;
                    std::fs::DirBuilder::new()
                        .mode(0o700)
                        .create(dir.state_dir())
                        .map_err(|e| Error::io_at("cannot create", &dir.state_dir(), e))?;
                    dir.make_file_turns()?;
                    dir.make_pid_map()?;
                    dir.make_signals_sent()?;
                    return Ok(dir);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last_error = Some(e),
                Err(e) => {
                    return Err(Error::io_at(
                        "cannot create the runtime directory",
                        &path,
                        e,
                    ));
                }
            }
        }
        Err(Error::io(
            format!("cannot create a runtime directory under {}", tmp.display()),
            last_error.unwrap_or_else(|| std::io::Error::other("every name tried exists")),
        ))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The GD's socket.
    pub fn socket(&self) -> PathBuf {
        self.path.join("gd.sock")
    }

    /// The table of write turns into shared files (`ddbx_wire::FILE_TURNS`), zeroed: 0666, so
    /// that a process that switched to another uid (a server's session running as `ftp`)
    /// takes its turns too. It holds only counters: the worst a stranger who guesses its
    /// name can do is disorder the writes of this session's shared files.
    fn make_file_turns(&self) -> Result<()> {
        let size = ddbx_wire::FILE_TURN_SLOTS * ddbx_wire::FILE_TURN_ENTRY;
        self.make_shared_table(ddbx_wire::FILE_TURNS, size)
    }

    /// The table through which a replay shows each process its record's pids
    /// (`ddbx_wire::PID_MAP`), empty and sparse: 0666, as the table of turns, for a process
    /// that switched to another uid. The worst a stranger who guesses its name can do is show
    /// this session's processes wrong pids.
    fn make_pid_map(&self) -> Result<()> {
        self.make_shared_table(ddbx_wire::PID_MAP, 2 * ddbx_wire::PID_SLOTS * 4)
    }

    /// The table of the signals a replay's processes sent each other
    /// (`ddbx_wire::SIGNALS_SENT`), zeroed: 0666, as the table of turns. The worst a stranger
    /// who guesses its name can do is make a replayed process run a handler early.
    fn make_signals_sent(&self) -> Result<()> {
        let size = ddbx_wire::SENT_SLOTS * ddbx_wire::SENT_ENTRY;
        self.make_shared_table(ddbx_wire::SIGNALS_SENT, size)
    }

    /// A new file `name` of `size` zero bytes (sparse), readable and writable by every uid.
    fn make_shared_table(&self, name: &str, size: usize) -> Result<()> {
        let path = self.path.join(name);
        let made = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|f| {
                f.set_len(size as u64)?;
                f.set_permissions(std::fs::Permissions::from_mode(0o666))
            });
        made.map_err(|e| Error::io_at("cannot create", &path, e))
    }

    /// How many writes into shared files a replay made out of turn (their turn never came
    /// within the LD's patience: its write was not made in this replay, or another of
    /// replay's waits held its writer); 0 when the table cannot be read.
    pub fn out_of_turn_writes(&self) -> u32 {
        let at = ddbx_wire::FILE_TURN_OUT_OF_TURN;
        std::fs::read(self.path.join(ddbx_wire::FILE_TURNS))
            .ok()
            .and_then(|b| {
                b.get(at..at + 4)
                    .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            })
            .unwrap_or(0)
    }

    /// Where the LDs keep their per-actor state files.
    pub fn state_dir(&self) -> PathBuf {
        self.path.join("state")
    }
}

impl Drop for RuntimeDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Whether every user may traverse `dir` and each directory above it (mode `o+x` all the way
/// up): what a process that switched to another uid needs to reach a file inside.
pub fn reachable_by_all(dir: &Path) -> bool {
    dir.ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.is_dir() && m.mode() & 0o001 != 0))
}

/// `/dev/shm`, when it is a directory that every user can reach and this one can write: the
/// session keeps a file per process there (its progress page), which costs no disk inode in
/// memory (with the runtime directory on an ext4 `/tmp`, creating those files took a fifth of
/// the record time of a program that forks 300 short-lived processes).
fn shared_memory() -> Option<PathBuf> {
    let dir = Path::new("/dev/shm");
    // SAFETY: access(2) on a NUL-terminated constant path; it only reads it.
    let writable = unsafe { libc::access(c"/dev/shm".as_ptr(), libc::W_OK) } == 0;
    (writable && reachable_by_all(dir)).then(|| dir.to_path_buf())
}

/// The 64-bit FNV-1a hash of some bytes.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_traversable_not_listable_and_removed_on_drop() {
        let dir = RuntimeDir::create().unwrap();
        let path = dir.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o711);
        let state = std::fs::metadata(dir.state_dir())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(state & 0o777, 0o700);
        assert!(reachable_by_all(&path));
        assert!(dir.socket().as_os_str().len() < 108);
        drop(dir);
        assert!(!path.exists());
    }
}
