//! What each LD of a replay is told to follow ([`ReplayPlan`]): its history, the connects its
//! accepts come from, how its record ended when it was killed, its connects to peers outside
//! the session, and the globals to observe.

use crate::analysis::channels::{Channel, accepts_of, match_channels};
use crate::recording::Recording;
use ddbx_wire::ActorId;
use ddbx_wire::history::{ConnectOutcome, Record, connect_outcome};
use ddbx_wire::manifest::{ActorInfo, ExitStatus, Manifest, SessionState};
use ddbx_wire::pred::VarRef;
use ddbx_wire::proto::ReplayPlan;
use std::collections::HashMap;

/// The plan of every recorded actor.
pub(super) fn replay_plans(
    recording: &Recording,
    observe: &[VarRef],
) -> HashMap<ActorId, ReplayPlan> {
    // Matched once for every plan.
    let channels = match_channels(&recording.histories);
    let mut plans: HashMap<ActorId, ReplayPlan> = recording
        .manifest
        .actors
        .iter()
        .map(|info| (info.id, plan_for(recording, &channels, info, observe)))
        .collect();
    // Actors whose history ends without `Exit`: killed, by a signal or by ddbx's death.
    let killed: Vec<ActorId> = recording
        .histories
        .iter()
        .filter(|h| !matches!(h.records.last(), Some(Record::Exit { .. })))
        .map(|h| h.actor)
        .collect();
    for (actor, owed) in super::owed::owed_bytes(recording, &killed) {
        if let Some(plan) = plans.get_mut(&actor) {
            plan.owed = owed;
        }
    }
    plans
}

/// Where a recorded actor's history ends, and the signals other recorded actors sent it: what
/// tells a kill the record has from one it does not (`GdState::unrecorded_kill`).
pub(crate) struct RecordedEnd {
    /// The number of events in its history.
    pub(crate) events: u64,
    /// Signals that recorded actors sent it (replayed by their senders).
    pub(crate) signalled_by: Vec<i32>,
}

/// The recorded end of every recorded actor.
pub(super) fn recorded_ends(recording: &Recording) -> HashMap<ActorId, RecordedEnd> {
    recording
        .manifest
        .actors
        .iter()
        .map(|info| {
            let events = recording
                .history(info.id)
                .map_or(0, |h| h.records.len() as u64);
            let signalled_by = info.signalled_by.iter().map(|(_, sig)| *sig).collect();
            (
                info.id,
                RecordedEnd {
                    events,
                    signalled_by,
                },
            )
        })
        .collect()
}

/// The plan of one recorded actor.
fn plan_for(
    recording: &Recording,
    channels: &[Channel],
    info: &ActorInfo,
    observe: &[VarRef],
) -> ReplayPlan {
    let history = Manifest::history_path(&recording.dir, info.id);
    ReplayPlan {
        // Absolute: the program may chdir before its LD opens it (busybox httpd -h DIR does).
        history: std::path::absolute(&history)
            .unwrap_or(history)
            .to_string_lossy()
            .into_owned(),
        accepts: accepts_of(channels, info.id),
        killed_by: killed_by(recording, info),
        external_connects: external_connects(recording, channels, info.id),
        observe: observe
            .iter()
            .filter(|v| v.actor_id() == Some(info.id))
            .map(|v| (v.name.clone(), v.ty))
            .collect(),
        closes: recording.manifest.closes,
        pipes: recording.manifest.pipes,
        owed: Vec::new(),
    }
}

/// The signal that ended the recorded actor, when its replay must end the same way: its
/// history ends without `Exit` and no recorded process sent that signal.
fn killed_by(recording: &Recording, info: &ActorInfo) -> Option<i32> {
    let history = recording.history(info.id);
    let ended_by_exit = matches!(
        history.and_then(|h| h.records.last()),
        Some(Record::Exit { .. })
    );
    let torn = history.is_some_and(|h| h.truncated);
    // ddbx died during the record (its last manifest was never written): its lifeline
    // SIGKILLed every process still running then (`supervisor/src/session/lifeline.rs`).
    let ddbx_died = recording.manifest.state == SessionState::Recording;
    // Killed by a signal that another recorded process sent: that process's replay sends it
    // again at the same point of its own history, so this one waits for it (ending it where
    // its history ends could be too early: socat's handler kills its EXEC child only after it
    // has read the child's last bytes).
    let by_an_actor = |sig| info.signalled_by.iter().any(|(_, s)| *s == sig);
    match info.exit {
        Some(ExitStatus::Signaled(sig)) if !ended_by_exit && !by_an_actor(sig) => Some(sig),
        Some(ExitStatus::Signaled(_)) if !ended_by_exit => None,
        // A record torn in the middle: the process died while writing it.
        _ if torn && !ended_by_exit => Some(libc::SIGKILL),
        None if ddbx_died && !ended_by_exit => Some(libc::SIGKILL),
        _ => None,
    }
}

/// An actor's connects that succeeded (or were under way and not seen refused later) but no
/// recorded actor accepted: their peer was outside the session.
fn external_connects(recording: &Recording, channels: &[Channel], actor: ActorId) -> Vec<u64> {
    let Some(history) = recording.history(actor) else {
        return Vec::new();
    };
    history
        .records
        .iter()
        .enumerate()
        .filter(|(i, r)| {
            matches!(r, Record::Connect { .. })
                && !matches!(
                    connect_outcome(&history.records, *i),
                    ConnectOutcome::Failed(_)
                )
        })
        .map(|(i, _)| i as u64 + 1)
        .filter(|event| {
            !channels
                .iter()
                .any(|c| c.connector.actor == actor && c.connector.event == *event)
        })
        .collect()
}
