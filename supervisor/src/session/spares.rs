//! Empty history files made ahead of the processes that will need them.
//!
//! Each process of a session gets a history file, which the GD opens before its `Welcome`: the
//! new process waits for it. Creating a file on a disk file system is the slow part of that
//! (ext4 allocates an inode, and looks through the recently freed ones first): in a program
//! that forks hundreds of short-lived processes it was most of the GD's time per process. So
//! the GD keeps a few empty files made ahead (`history/.spare-N`, 0600), after each `Welcome`
//! has gone out; a new history is a spare renamed to its name (`RENAME_NOREPLACE`: an exec'd
//! image's history, which exists, is opened for appending as before). The spares left at the
//! end are removed; a ddbx killed with SIGKILL leaves them (empty, hidden, named so that no
//! reader takes them for a history).

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many spares the GD keeps ready.
const KEEP: usize = 4;

/// The spares of one session's history directory.
pub(crate) struct Spares {
    /// The history directory (`None`: this session writes no histories).
    dir: Option<PathBuf>,
    /// The spares made and not taken, each open for appending.
    ready: Mutex<Vec<(PathBuf, File)>>,
    /// The number the next spare's name takes.
    next: AtomicU64,
}

impl Spares {
    /// Spares for the histories in `dir`, none made yet.
    pub(crate) fn new(dir: Option<PathBuf>) -> Spares {
        Spares {
            dir,
            ready: Mutex::new(Vec::new()),
            next: AtomicU64::new(1),
        }
    }

    /// The history at `path` open for appending: a spare renamed there when `path` does not
    /// exist yet, else the file at `path` (made 0600 if missing, never through a symbolic link).
    pub(crate) fn open(&self, path: &Path) -> std::io::Result<File> {
        let spare = self.lock().pop();
        if let Some((spare_path, file)) = spare {
            if rename_noreplace(&spare_path, path).is_ok() {
                return Ok(file);
            }
            self.lock().push((spare_path, file));
        }
        open_private(path, true)
    }

    /// Makes spares until [`KEEP`] are ready (after a `Welcome`, off the new process's path).
    /// A spare that cannot be made is simply not there: the next history is made at its name.
    pub(crate) fn refill(&self) {
        let Some(dir) = &self.dir else { return };
        while self.lock().len() < KEEP {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".spare-{n}"));
            let made = OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(0o600)
                .open(&path);
            match made {
                Ok(file) => self.lock().push((path, file)),
                Err(_) => return,
            }
        }
    }

    /// Removes the spares not taken (at the session's end).
    pub(crate) fn remove_all(&self) {
        for (path, _) in self.lock().drain(..) {
            let _ = std::fs::remove_file(path);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(PathBuf, File)>> {
        self.ready.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Opens (creating it 0600, not through a symbolic link) a file of an actor's: for reading and
/// writing, or, with `append`, for appending.
pub(crate) fn open_private(path: &Path, append: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .read(!append)
        .write(!append)
        .append(append)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// `rename(from, to)` unless `to` exists (renameat2's `RENAME_NOREPLACE`).
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: two NUL-terminated paths that live across the call; the kernel only reads them.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_new_history_is_a_spare_and_an_existing_one_is_appended_to() {
        let dir = std::env::temp_dir().join(format!("ddbx-spares-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spares = Spares::new(Some(dir.clone()));
        spares.refill();
        assert_eq!(spares.lock().len(), KEEP);
        let p1 = dir.join("p1.ron");
        spares.open(&p1).unwrap().write_all(b"first\n").unwrap();
        assert_eq!(spares.lock().len(), KEEP - 1);
        // An exec'd image: the history exists, the spare stays a spare.
        spares.open(&p1).unwrap().write_all(b"second\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p1).unwrap(), "first\nsecond\n");
        assert_eq!(spares.lock().len(), KEEP - 1);
        spares.remove_all();
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["p1.ron"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
