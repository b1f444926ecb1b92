//! Finding the preload library: `DDBX_PRELOAD`, or the copy embedded in this binary.
//!
//! The embedded bytes (built by `build.rs`) are written once (temporary name, then rename;
//! mode 0755) where every uid can load them — a program may switch users (`runuser`, a server
//! calling `setuid` after binding), and its new images must still load the preload:
//!
//! 1. `${XDG_CACHE_HOME:-$HOME/.cache}/ddbx/<version>-<fnv hash>/libddbx_preload.so`, when
//!    every directory on the way there can be traversed by all;
//! 2. else `${TMPDIR:-/tmp}/ddbx-lib-<uid>/<version>-<fnv hash>/libddbx_preload.so`
//!    (`/tmp` when `$TMPDIR` is out of others' reach), a directory of ours, 0755, that no one
//!    else may write (checked before use: a directory someone else made or can write is not
//!    used);
//! 3. else the cache, as it is, and at last the session's runtime directory.
//!
//! A copy already there is used only when its bytes are the embedded ones, and it is ours and
//! not writable by others.

use crate::error::Error;
#[cfg(test)]
use ddbx_supervisor::session::runtime_dir::fnv1a;
use ddbx_supervisor::session::runtime_dir::reachable_by_all;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The preload library embedded at build time (empty when built without it).
static EMBEDDED: &[u8] = include_bytes!(env!("DDBX_PRELOAD_SO"));

/// The FNV-1a hash of [`EMBEDDED`], in hex, computed by `ddbx/build.rs`.
const EMBEDDED_FNV: &str = env!("DDBX_PRELOAD_FNV");

/// The environment variable that points ddbx at another preload (for development).
pub const OVERRIDE: &str = "DDBX_PRELOAD";

/// The file name of the preload library.
pub const FILE_NAME: &str = "libddbx_preload.so";

/// Returns the path of a usable preload library; `runtime_dir` is the fallback location.
pub fn locate(runtime_dir: &Path) -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os(OVERRIDE).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            return Err(Error::Usage(format!(
                "{OVERRIDE}={}: expected the path of {FILE_NAME}, found {}",
                path.display(),
                if path.exists() {
                    "something that is not a file"
                } else {
                    "nothing"
                }
            )));
        }
        return std::path::absolute(&path)
            .map_err(|e| Error::Internal(format!("cannot resolve {}: {e}", path.display())));
    }
    if EMBEDDED.is_empty() {
        return Err(Error::Internal(format!(
            "this ddbx was built without its preload; set {OVERRIDE} to the path of {FILE_NAME}"
        )));
    }
    let version = env!("CARGO_PKG_VERSION");
    let leaf = format!("{version}-{EMBEDDED_FNV}");
    let cache = cache_dir();
    let mut candidates = Vec::new();
    if let Some(cache) = cache
        .as_ref()
        .filter(|c| reachable_by_all(&existing_part(c)))
    {
        candidates.push(cache.join(&leaf));
    }
    candidates.extend(shared_dir().map(|d| d.join(&leaf)));
    candidates.extend(cache.map(|c| c.join(&leaf)));
    for dir in candidates {
        if let Ok(path) = install(&dir) {
            return Ok(path);
        }
    }
    install(runtime_dir).map_err(|e| {
        Error::Internal(format!(
            "cannot write {FILE_NAME} into {}: {e}",
            runtime_dir.display()
        ))
    })
}

/// `${XDG_CACHE_HOME:-$HOME/.cache}/ddbx` (`None`: neither is set).
pub fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })?;
    Some(base.join("ddbx"))
}

/// `${TMPDIR:-/tmp}/ddbx-lib-<uid>`, created 0755 if missing; `None` when it is not safe to
/// use (not a directory of ours, or writable by others) or cannot be made.
fn shared_dir() -> Option<PathBuf> {
    let tmp = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && reachable_by_all(p))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let dir = tmp.join(format!("ddbx-lib-{}", nix::unistd::geteuid()));
    match std::fs::DirBuilder::new().mode(0o755).create(&dir) {
        Ok(()) => {
            // The umask may have taken bits away.
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).ok()?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    (ours_and_closed(&dir) && reachable_by_all(&dir)).then_some(dir)
}

/// Whether `path` (not followed if a symbolic link) belongs to us and no one else may write it.
fn ours_and_closed(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        !m.file_type().is_symlink()
            && m.uid() == nix::unistd::geteuid().as_raw()
            && m.mode() & 0o022 == 0
    })
}

/// The longest leading part of `path` that exists.
fn existing_part(path: &Path) -> PathBuf {
    path.ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"))
        .to_path_buf()
}

/// Whether the library at `path` is ours, closed to others' writes, and the embedded bytes.
fn is_our_copy(path: &Path) -> bool {
    ours_and_closed(path)
        && std::fs::metadata(path).is_ok_and(|m| m.len() == EMBEDDED.len() as u64)
        && std::fs::read(path).is_ok_and(|bytes| bytes == EMBEDDED)
}

/// Writes the embedded library into `dir` unless an identical copy is there.
fn install(dir: &Path) -> std::io::Result<PathBuf> {
    let path = dir.join(FILE_NAME);
    if is_our_copy(&path) {
        return Ok(path);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)?;
    let tmp = dir.join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, EMBEDDED)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
    if let Err(e) = std::fs::rename(&tmp, &path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_time_hash_is_the_hash_of_the_embedded_bytes() {
        assert_eq!(EMBEDDED_FNV, format!("{:016x}", fnv1a(EMBEDDED)));
    }
}
