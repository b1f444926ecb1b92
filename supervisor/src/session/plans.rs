//! What each LD of a replay is told to follow ([`ReplayPlan`]): its history, the connects its
//! accepts come from, how its record ended when it was killed, its connects to peers outside
//! the session, and the globals to observe.

use crate::analysis::channels::{Channel, SparseHistory, accepts_of, match_sparse};
use crate::recording::Recording;
use ddbx_wire::ActorId;
use ddbx_wire::history::{ConnectOutcome, Origin, Record, connect_outcome};
use ddbx_wire::manifest::{ActorInfo, ExitStatus, Manifest, SessionState};
use ddbx_wire::pred::VarRef;
use ddbx_wire::proto::ReplayPlan;
use std::collections::{HashMap, HashSet};

/// The plan of every recorded actor.
pub(super) fn replay_plans(
    recording: &Recording,
    observe: &[VarRef],
) -> HashMap<ActorId, ReplayPlan> {
    // Matched once for every plan, from the sketches (which hold what matching reads).
    let sparse: Vec<SparseHistory<'_>> = recording
        .sketches
        .iter()
        .map(|h| SparseHistory {
            actor: h.actor,
            records: h.kept.iter().map(|(e, r)| (*e, r)).collect(),
        })
        .collect();
    let channels = match_sparse(&sparse);
    let mut plans: HashMap<ActorId, ReplayPlan> = recording
        .manifest
        .actors
        .iter()
        .map(|info| (info.id, plan_for(recording, &channels, info, observe)))
        .collect();
    // Actors whose history ends without `Exit`: killed, by a signal or by ddbx's death.
    let killed: Vec<ActorId> = recording
        .sketches
        .iter()
        .filter(|h| !matches!(h.last, Some(Record::Exit { .. })))
        .map(|h| h.actor)
        .collect();
    let (owed, children) = killed_tails(recording, &killed);
    for (actor, owed) in owed {
        if let Some(plan) = plans.get_mut(&actor) {
            plan.owed = owed;
        }
    }
    for (actor, children) in children {
        if let Some(plan) = plans.get_mut(&actor) {
            plan.unlogged_children = children;
        }
    }
    plans
}

/// The children of `parent` (a killed actor) that the manifest has and its history does not
/// create: the record's LD was killed between the fork (or spawn) and its record.
fn unlogged_children(recording: &Recording, parent: ActorId) -> Vec<u32> {
    let logged: Vec<u32> = recording
        .history(parent)
        .map(|h| {
            h.records
                .iter()
                .filter_map(|r| match r {
                    Record::Fork { index } | Record::Spawn { index } => Some(*index),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut missing: Vec<u32> = recording
        .manifest
        .actors
        .iter()
        .filter_map(|info| match info.origin {
            Origin::Fork { parent: p, index } | Origin::Spawn { parent: p, index }
                if p == parent && !logged.contains(&index) =>
            {
                Some(index)
            }
            _ => None,
        })
        .collect();
    missing.sort_unstable();
    missing
}

/// Per killed actor: the bytes it owes (by fd), and the children it did not log.
type KilledTails = (
    HashMap<ActorId, Vec<(i32, u64)>>,
    HashMap<ActorId, Vec<u32>>,
);

/// What killed actors need of the whole histories (what they owe, the children they did not
/// log): a recording opened with its sketches only (a replay without predicates) is loaded
/// whole for it, which only recordings with a killed process need.
fn killed_tails(recording: &Recording, killed: &[ActorId]) -> KilledTails {
    let of = |whole: &Recording| {
        let owed = super::owed::owed_bytes(whole, killed);
        let children = killed
            .iter()
            .map(|a| (*a, unlogged_children(whole, *a)))
            .collect();
        (owed, children)
    };
    if killed.is_empty() || recording.histories.len() == recording.sketches.len() {
        return of(recording);
    }
    match Recording::open(&recording.dir) {
        Ok(whole) => of(&whole),
        // It loaded as sketches a moment ago; a replay without what is owed still runs.
        Err(_) => (HashMap::new(), HashMap::new()),
    }
}

/// Where a recorded actor's history ends, and the signals other recorded actors sent it: what
/// tells a kill the record has from one it does not (`GdState::unrecorded_kill`).
pub(crate) struct RecordedEnd {
    /// The number of events in its history.
    pub(crate) events: u64,
    /// Signals that recorded actors sent it (replayed by their senders).
    pub(crate) signalled_by: Vec<i32>,
    /// The actors it created (fork, spawn): all of them exist once it is at its end.
    pub(crate) children: Vec<ActorId>,
    /// Those of them its history never says it created (killed between the fork and its
    /// record, `ReplayPlan::unlogged_children`): forked only if the program forks again
    /// after the history's end.
    pub(crate) unlogged_children: Vec<ActorId>,
    /// The signal that ended it in the record, if one did.
    pub(crate) signal: Option<i32>,
}

/// The recorded end of every recorded actor (`plans`: their replay plans).
pub(super) fn recorded_ends(
    recording: &Recording,
    plans: &HashMap<ActorId, ReplayPlan>,
) -> HashMap<ActorId, RecordedEnd> {
    recording
        .manifest
        .actors
        .iter()
        .map(|info| {
            let events = recording.sketch(info.id).map_or(0, |h| h.events);
            let signalled_by = info.signalled_by.iter().map(|(_, sig)| *sig).collect();
            let children = recording
                .manifest
                .actors
                .iter()
                .filter(|child| match child.origin {
                    Origin::Fork { parent, .. } | Origin::Spawn { parent, .. } => parent == info.id,
                    _ => false,
                })
                .map(|child| child.id)
                .collect();
            let unlogged_children = plans
                .get(&info.id)
                .map(|p| {
                    p.unlogged_children
                        .iter()
                        .filter_map(|index| recording.child(info.id, *index))
                        .collect()
                })
                .unwrap_or_default();
            (
                info.id,
                RecordedEnd {
                    events,
                    signalled_by,
                    children,
                    unlogged_children,
                    signal: match info.exit {
                        Some(ExitStatus::Signaled(sig)) => Some(sig),
                        _ => None,
                    },
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
        ended_by_signal: ended_by_signal(recording, info),
        external_connects: external_connects(recording, channels, info.id),
        observe: observe
            .iter()
            .filter(|v| v.actor_id() == Some(info.id))
            .map(|v| (v.name.clone(), v.ty))
            .collect(),
        closes: recording.manifest.closes,
        signals: recording.manifest.signals,
        pipes: recording.manifest.pipes,
        owed: Vec::new(),
        unlogged_children: Vec::new(),
        unlogged_tail: recording
            .sketch(info.id)
            .map(|s| s.unlogged.clone())
            .unwrap_or_default(),
        child_pids: child_pids(&recording.manifest, info.id),
    }
}

/// The recorded pid of each child of `parent`, by its fork/spawn number, sorted.
fn child_pids(manifest: &Manifest, parent: ActorId) -> Vec<(u32, i32)> {
    let mut pids: Vec<(u32, i32)> = manifest
        .actors
        .iter()
        .filter_map(|child| match child.origin {
            Origin::Fork { parent: p, index } | Origin::Spawn { parent: p, index }
                if p == parent && child.pid > 0 =>
            {
                Some((index, child.pid))
            }
            _ => None,
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The signal that ended the recorded actor, when its replay must end the same way: its
/// history ends without `Exit` and no recorded process sent that signal.
fn killed_by(recording: &Recording, info: &ActorInfo) -> Option<i32> {
    let history = recording.sketch(info.id);
    let ended_by_exit = matches!(
        history.and_then(|h| h.last.as_ref()),
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

/// The signal that ended the recorded actor after its last record, whoever sent it.
fn ended_by_signal(recording: &Recording, info: &ActorInfo) -> Option<i32> {
    let ended_by_exit = matches!(
        recording.sketch(info.id).and_then(|h| h.last.as_ref()),
        Some(Record::Exit { .. })
    );
    match info.exit {
        Some(ExitStatus::Signaled(sig)) if !ended_by_exit => Some(sig),
        _ => None,
    }
}

/// An actor's connects that succeeded (or were under way and not seen refused later) but no
/// recorded actor accepted: their peer was outside the session.
fn external_connects(recording: &Recording, channels: &[Channel], actor: ActorId) -> Vec<u64> {
    let Some(history) = recording.sketch(actor) else {
        return Vec::new();
    };
    // The sketch keeps every connect and what tells how a non-blocking one ended.
    let records: Vec<Record> = history.kept.iter().map(|(_, r)| r.clone()).collect();
    let made: HashSet<u64> = channels
        .iter()
        .filter(|c| c.connector.actor == actor)
        .map(|c| c.connector.event)
        .collect();
    history
        .kept
        .iter()
        .enumerate()
        .filter(|(i, (_, r))| {
            matches!(r, Record::Connect { .. })
                && !matches!(connect_outcome(&records, *i), ConnectOutcome::Failed(_))
        })
        .map(|(_, (event, _))| *event)
        .filter(|event| !made.contains(event))
        .collect()
}
