//! With no recording directory, `replay`, `ps`, `show`, `inf`, `races` and `view` use the
//! latest recording made from the current directory, and say which (rr replays its latest
//! trace the same way).
//!
//! `ddbx record` remembers each recording it makes in
//! `${XDG_STATE_HOME:-$HOME/.local/state}/ddbx/latest/<hash of the directory>` (two lines: the
//! directory it was made from, the recording's absolute path). The latest recording of a
//! directory is the newest, by its manifest's time, of that one and of the `ddbx-run-N`
//! recordings in the directory itself.

use crate::error::Error;
use ddbx_supervisor::session::runtime_dir::fnv1a;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The file that remembers the latest recording made from `cwd`.
fn index_file(cwd: &Path) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".local/state"))
        })?;
    let key = fnv1a(cwd.as_os_str().as_encoded_bytes());
    Some(base.join("ddbx/latest").join(format!("{key:016x}")))
}

/// Remembers `recording` as the latest made from the current directory (a failure only
/// costs the default later, so it is not an error).
pub fn remember(recording: &Path) {
    let (Ok(cwd), Ok(recording)) = (std::env::current_dir(), std::path::absolute(recording)) else {
        return;
    };
    let Some(file) = index_file(&cwd) else {
        return;
    };
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let text = format!("{}\n{}\n", cwd.display(), recording.display());
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, &file).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// When `dir`'s manifest was last written (`None`: not a recording).
fn recorded_at(dir: &Path) -> Option<SystemTime> {
    std::fs::metadata(dir.join("manifest.ron"))
        .and_then(|m| m.modified())
        .ok()
}

/// The latest recording made from `cwd`, if any.
pub fn latest_in(cwd: &Path) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(file) = index_file(cwd)
        && let Ok(text) = std::fs::read_to_string(file)
        && let Some((from, recording)) = text.lines().next().zip(text.lines().nth(1))
        && Path::new(from) == cwd
    {
        candidates.push(PathBuf::from(recording));
    }
    if let Ok(entries) = std::fs::read_dir(cwd) {
        candidates.extend(
            entries
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("ddbx-run-"))
                        .is_some_and(|n| n.parse::<u32>().is_ok())
                })
                .map(|e| PathBuf::from(e.file_name())),
        );
    }
    candidates
        .into_iter()
        .filter_map(|dir| recorded_at(&cwd.join(&dir)).map(|t| (t, dir)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, dir)| dir)
}

/// `dir`, or else the latest recording made from the current directory, said on standard
/// error unless `quiet` (a JSON output names it in its `recording` field).
pub fn dir_or_latest(dir: Option<PathBuf>, quiet: bool) -> Result<PathBuf, Error> {
    if let Some(dir) = dir {
        return Ok(dir);
    }
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Internal(format!("cannot read the current directory: {e}")))?;
    let Some(dir) = latest_in(&cwd) else {
        return Err(Error::Usage(format!(
            "expected a recording directory, found none given and no recording made from {} \
             (give DIR, or run `ddbx record` here first)",
            cwd.display()
        )));
    };
    if !quiet {
        crate::term::eprint_line(&format!(
            "ddbx: no recording given: using {}, the latest made from this directory",
            dir.display()
        ));
    }
    Ok(dir)
}

/// Two positionals where the first (the directory) may be left out: `[DIR] X`. With one,
/// it is X, unless `dir_first` says that it names the directory (as a recording that exists).
pub fn split(
    first: Option<String>,
    second: Option<String>,
    dir_first: impl Fn(&str) -> bool,
) -> (Option<PathBuf>, Option<String>) {
    match (first, second) {
        (Some(dir), Some(x)) => (Some(PathBuf::from(dir)), Some(x)),
        (Some(one), None) if dir_first(&one) => (Some(PathBuf::from(one)), None),
        (Some(one), None) => (None, Some(one)),
        (None, _) => (None, None),
    }
}

/// Whether `path` is a recording directory (it has a manifest).
pub fn is_recording(path: &str) -> bool {
    Path::new(path).join("manifest.ron").is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_positional_is_the_second_unless_it_names_a_recording() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            split(s("run1"), s("p3"), |_| false),
            (Some("run1".into()), s("p3"))
        );
        assert_eq!(split(s("p3"), None, |_| false), (None, s("p3")));
        assert_eq!(
            split(s("run1"), None, |_| true),
            (Some("run1".into()), None)
        );
        assert_eq!(split(None, None, |_| true), (None, None));
    }
}
