//! The manifest this run writes (a record's, or a replay's own under `--history-out`): the
//! first one, before the root starts, says who ran what where; the last one adds the actors,
//! the kinds of I/O not recorded, and how the run ended.

use super::outcome::End;
use crate::error::{Error, Result};
use ddbx_wire::FORMAT_VERSION;
use ddbx_wire::manifest::{ActorInfo, Manifest, SessionState};
use std::path::Path;

/// What the first manifest says about the run.
pub(super) struct RunFacts<'a> {
    /// The root's argv.
    pub(super) argv: &'a [String],
    /// The root's working directory.
    pub(super) cwd: &'a Path,
    /// The root's environment, without ddbx's own variables.
    pub(super) env: &'a [(String, String)],
    /// The names of the variables of `env` the manifest leaves out.
    pub(super) env_left_out: &'a [String],
    /// This machine's name.
    pub(super) host: &'a str,
}

/// The manifest of a run that has not started yet (no actors).
pub(super) fn first_manifest(run: &RunFacts<'_>) -> Manifest {
    Manifest {
        format: FORMAT_VERSION,
        ddbx_version: env!("CARGO_PKG_VERSION").to_string(),
        command: run.argv.to_vec(),
        cwd: run.cwd.to_path_buf(),
        env: run
            .env
            .iter()
            .filter(|(name, _)| !run.env_left_out.contains(name))
            .cloned()
            .collect(),
        host: run.host.to_string(),
        state: SessionState::Recording,
        actors: Vec::new(),
        passthrough: Vec::new(),
        problem: None,
        env_left_out: run.env_left_out.to_vec(),
        closes: true,
        signals: true,
        pipes: true,
    }
}

/// Creates `dir/history/` and writes the first manifest in `dir`.
pub(super) fn start_in(dir: &Path, manifest: &Manifest) -> Result<()> {
    let history = dir.join("history");
    ddbx_wire::file::create_private_dir(&history)
        .map_err(|e| Error::io_at("cannot create", &history, e))?;
    manifest
        .store(dir)
        .map_err(|e| Error::io_at("cannot write the manifest in", dir, e))
}

/// Writes the last manifest in `dir`: `manifest` (as the session kept it) with the run's
/// actors, passthrough lines and end.
pub(super) fn finish_in(
    dir: &Path,
    mut manifest: Manifest,
    actors: &[ActorInfo],
    passthrough: &[String],
    end: &End,
) -> Result<()> {
    manifest.actors = actors.to_vec();
    manifest.passthrough = passthrough.to_vec();
    match end {
        End::Complete | End::ReachedEnd => manifest.state = SessionState::Complete,
        other => {
            manifest.state = SessionState::Interrupted;
            manifest.problem = Some(other.problem());
        }
    }
    manifest
        .store(dir)
        .map_err(|e| Error::io_at("cannot write the manifest in", dir, e))
}
