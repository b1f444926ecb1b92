//! At the end of a record: the bytes of receives and sends on channels whose both ends were
//! recorded are dropped from the histories (a replay regenerates them from the sender); the
//! bytes exchanged with peers outside the session stay.

use crate::analysis::deps::Deps;
use crate::error::{Error, Result};
use crate::recording::Recording;
use ddbx_wire::history::{Record, Trace, header_line, trace_of};
use ddbx_wire::manifest::Manifest;
use ddbx_wire::{ActorId, History};
use std::path::Path;

/// Drops the managed bytes from every history of the recording in `dir` (see the module doc).
pub(super) fn strip_managed_data(dir: &Path) -> Result<()> {
    let recording = Recording::open(dir)?;
    let deps = Deps::from_recording(&recording);
    for history in &recording.histories {
        let path = Manifest::history_path(dir, history.actor);
        if trace_of(&path) == Trace::Optimal {
            continue; // its logged bytes are only ever input from outside peers
        }
        if let Some(records) = without_managed_data(&deps, history) {
            rewrite(&path, history.actor, &records)?;
        }
    }
    Ok(())
}

/// The history's records with the bytes of managed channels dropped; `None` if there were
/// none to drop.
fn without_managed_data(deps: &Deps, history: &History) -> Option<Vec<Record>> {
    let mut changed = false;
    let records: Vec<Record> = history
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let managed = deps.data_range(history.actor, i as u64 + 1).is_some();
            match r {
                Record::Recv {
                    fd,
                    n,
                    data: Some(_),
                } if managed => {
                    changed = true;
                    Record::Recv {
                        fd: *fd,
                        n: *n,
                        data: None,
                    }
                }
                Record::Send {
                    fd,
                    n,
                    data: Some(_),
                } if managed => {
                    changed = true;
                    Record::Send {
                        fd: *fd,
                        n: *n,
                        data: None,
                    }
                }
                other => other.clone(),
            }
        })
        .collect();
    changed.then_some(records)
}

/// Replaces the history file at `path` with these records, atomically.
fn rewrite(path: &Path, actor: ActorId, records: &[Record]) -> Result<()> {
    let mut text = header_line(actor);
    for r in records {
        text.push_str(&r.to_line());
        text.push('\n');
    }
    let tmp = path.with_extension("ron.tmp");
    std::fs::write(&tmp, text).map_err(|e| Error::io_at("cannot write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io_at("cannot replace", path, e))
}
