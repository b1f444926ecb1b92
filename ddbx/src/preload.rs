//! Finding the preload library: `DDBX_PRELOAD`, or the copy embedded in this binary.
//!
//! The embedded bytes (built by `build.rs`) are written once to
//! `${XDG_CACHE_HOME:-$HOME/.cache}/ddbx/<version>-<fnv hash>/libddbx_preload.so` (temporary
//! name, then rename; mode 0755), or, when the cache is not writable, into the session's
//! runtime directory.

use crate::error::Error;
use ddbx_supervisor::session::runtime_dir::fnv1a;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The preload library embedded at build time (empty when built without it).
static EMBEDDED: &[u8] = include_bytes!(env!("DDBX_PRELOAD_SO"));

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
    let hash = fnv1a(EMBEDDED);
    if let Some(cache) = cache_dir() {
        let dir = cache.join(format!("{version}-{hash:016x}"));
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

/// Writes the embedded library into `dir` unless an identical copy is there.
fn install(dir: &Path) -> std::io::Result<PathBuf> {
    let path = dir.join(FILE_NAME);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == EMBEDDED.len() as u64) {
        return Ok(path);
    }
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, EMBEDDED)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
    if let Err(e) = std::fs::rename(&tmp, &path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(path)
}
