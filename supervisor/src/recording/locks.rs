//! The lock histories of a recording (`history/pN.locks`, written by a process once it made a
//! thread: `ddbx_wire::locks`): loaded and checked with the histories, so that a damaged one is
//! refused (exit 102, its file and line) before anything runs.

use crate::error::{Error, Result};
use ddbx_wire::ActorId;
use ddbx_wire::locks::{self, LockHistory};
use ddbx_wire::manifest::Manifest;
use std::path::Path;

/// The lock histories of the actors that have one, in the manifest's order.
pub type LockHistories = Vec<(ActorId, LockHistory)>;

/// Each actor's lock history, for the actors that have one; and a warning for each cut short.
pub fn load(dir: &Path, manifest: &Manifest) -> Result<(LockHistories, Vec<String>)> {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    for actor in &manifest.actors {
        let path = locks::path(dir, actor.id);
        if !path.exists() {
            continue;
        }
        let history =
            LockHistory::load(&path, actor.id).map_err(|e| Error::BadRecording(e.to_string()))?;
        if history.truncated {
            warnings.push(format!(
                "{}'s lock history has places its process never wrote (killed while \
                 writing): the lock order is replayed up to them",
                actor.id
            ));
        }
        found.push((actor.id, history));
    }
    Ok((found, warnings))
}
