//! After the last process is gone: how the session ended, the last manifest, the record's
//! summary lines, and the [`Outcome`].

use super::gd_state::{GdState, RunResults};
use super::manifest;
use super::outcome::{Divergence, End, Outcome};
use super::strip::strip_managed_data;
use super::transcript::Transcript;
use crate::error::Result;
use crate::recording::Recording;
use ddbx_wire::ActorId;
use ddbx_wire::history::{Reader, Record};
use ddbx_wire::manifest::{ActorInfo, ExitStatus, Manifest};
use std::path::Path;

/// What the session knows once its main loop has ended and its threads are gone.
pub(super) struct Ended<'a> {
    /// The replayed recording (`None`: a record).
    pub(super) recording: Option<&'a Recording>,
    /// Where this run's manifest goes, if anywhere.
    pub(super) manifest_dir: Option<&'a Path>,
    /// Why the session stopped early (`None`: it ran to its end).
    pub(super) stop: Option<End>,
    /// The root's status, if it was reaped.
    pub(super) root_status: Option<ExitStatus>,
    /// The signal that ended a held halt.
    pub(super) held_until: Option<i32>,
}

/// Decides how the session ended, writes the last manifest, and says what the user must know.
pub(super) fn outcome(
    gd: &GdState,
    ended: Ended<'_>,
    mut transcript: Transcript,
) -> Result<Outcome> {
    // Every connection thread is gone: no spare history is taken or made any more.
    gd.spares.remove_all();
    let Ended {
        recording,
        manifest_dir,
        stop,
        root_status,
        held_until,
    } = ended;
    for note in gd.take_notes() {
        transcript.say(note);
    }
    let RunResults {
        mut actors,
        passthrough,
    } = gd.results();
    let lost = lost_images(gd, &actors, &mut transcript);
    for (actor, what, _) in lost.iter().filter(|(_, _, exec)| *exec) {
        if let Some(info) = actors.iter_mut().find(|a| a.id == *actor) {
            info.unrecorded = Some(what.clone());
        }
    }
    if let (Some(dir), None) = (manifest_dir, recording) {
        start_empty_histories(dir, &actors);
    }
    // Events as the histories hold them (a killed process never reports its count).
    let recorded_events = match (manifest_dir, recording) {
        (Some(dir), None) => events_in_histories(dir, &actors),
        _ => 0,
    };
    let recorded_root_status = recording
        .and_then(|r| r.manifest.actor(ActorId::ROOT))
        .and_then(|a| a.exit);
    let end = match (stop, recording) {
        (Some(end), _) => end,
        // A process image that never joined ran unmanaged: the run is not what was asked.
        (None, _) if !lost.is_empty() => {
            let end = End::Unsupported {
                actor: Some(lost[0].0),
                what: lost[0].1.clone(),
            };
            for (actor, what, _) in &lost {
                transcript.say(format!("ddbx: {actor}: {what}"));
            }
            end
        }
        (None, None) => End::Complete,
        (None, Some(r)) => match gd.final_halt() {
            // Every process exited right at the halt: that is where the predicate held.
            Some(state) => End::Halted(Box::new(state)),
            None => replay_end_check(r, &actors, root_status),
        },
    };
    if let End::Diverged(d) = &end
        && !transcript.contains(&d.message)
    {
        transcript.say(d.message.clone());
    }
    if let Some(dir) = manifest_dir {
        let kept = gd.manifest_snapshot();
        manifest::finish_in(dir, kept, &actors, &passthrough, &end)?;
        if recording.is_none()
            && let Err(e) = strip_managed_data(dir)
        {
            transcript.say(format!(
                "ddbx: the bytes between recorded processes were kept: {e}"
            ));
        }
    }
    if recording.is_none() {
        record_summary(
            &mut transcript,
            &end,
            &actors,
            &passthrough,
            manifest_dir,
            recorded_events,
        );
    }
    Ok(Outcome {
        end,
        root_status,
        recorded_root_status,
        held_until,
        actors,
        events: recording.map_or(recorded_events, Recording::event_count),
        passthrough,
        messages: transcript.into_lines(),
        observed: gd.observed(),
    })
}

/// The events the record's histories in `dir` hold (each read line by line, not held).
/// A forked process killed before its LD wrote its history's first line (by a group kill
/// right after the fork: `timeout` relaying a SIGTERM to its group) leaves an empty history
/// file, and the recording would not load. Each such history gets its header, full or
/// optimal as the root's, and the `Start` the GD knows of (pid, parent's pid, origin, command,
/// host): the actor was killed after its first event, as its replay then is. A history
/// killed after its header and before its `Start` (a live run ended at its halt right after a
/// fork) gets the `Start` the same way.
fn start_empty_histories(dir: &Path, actors: &[ActorInfo]) {
    use ddbx_wire::history::{Trace, header_line, header_line_optimal, trace_of};
    let optimal = trace_of(&Manifest::history_path(dir, ActorId::ROOT)) == Trace::Optimal;
    for info in actors {
        let path = Manifest::history_path(dir, info.id);
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let empty = meta.is_file() && meta.len() == 0;
        let header_only = meta.is_file() && !empty && events_in(&path) == Some(0);
        if !empty && !header_only {
            continue;
        }
        let parent = info.origin.parent();
        let ppid = actors.iter().find(|a| a.id == parent).map_or(0, |p| p.pid);
        let start = Record::Start {
            pid: info.pid,
            ppid,
            origin: info.origin,
            argv: info.argv.clone(),
            host: info.host.clone(),
        };
        let mut text = match (header_only, optimal) {
            (true, _) => String::new(),
            (false, true) => header_line_optimal(info.id),
            (false, false) => header_line(info.id),
        };
        text.push_str(&start.to_line());
        text.push('\n');
        let _ = if header_only {
            std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        } else {
            std::fs::write(&path, text)
        };
    }
}

fn events_in_histories(dir: &Path, actors: &[ActorInfo]) -> u64 {
    actors
        .iter()
        .filter_map(|a| events_in(&Manifest::history_path(dir, a.id)))
        .sum()
}

/// The events of the history at `path`; `None` if it cannot be read.
fn events_in(path: &Path) -> Option<u64> {
    let file = ddbx_wire::file::open_regular(path).ok()?;
    let mut reader = Reader::new(path, std::io::BufReader::new(file)).ok()?;
    while reader.next_entry().ok()?.is_some() {}
    Some(reader.events())
}

/// A record's last lines: what was not recorded, and what was.
fn record_summary(
    transcript: &mut Transcript,
    end: &End,
    actors: &[ActorInfo],
    passthrough: &[String],
    dir: Option<&Path>,
    events: u64,
) {
    for line in passthrough {
        transcript.say(format!("ddbx: not recorded: {line}"));
    }
    if let (End::Complete, Some(dir)) = (end, dir) {
        transcript.say(format!(
            "ddbx: recorded {} actors, {events} events in {}",
            actors.len(),
            dir.display()
        ));
    }
}

/// Replay reached the end without a reported divergence: did it really follow the record?
fn replay_end_check(
    recording: &Recording,
    actors: &[ActorInfo],
    root_status: Option<ExitStatus>,
) -> End {
    for recorded in &recording.manifest.actors {
        if !actors.iter().any(|a| a.id == recorded.id) {
            let origin = crate::actors::describe(recorded.origin);
            return End::Diverged(Divergence {
                actor: Some(recorded.id),
                event: None,
                expected: format!("{} created as {origin}", recorded.id),
                found: "no such process by the end".into(),
                message: format!(
                    "ddbx: replay diverged: {} was never created (the record had it as {origin}, `{}`)",
                    recorded.id,
                    recorded.argv.join(" ")
                ),
            });
        }
    }
    let recorded = recording.manifest.actor(ActorId::ROOT).and_then(|a| a.exit);
    if let (Some(recorded), Some(now)) = (recorded, root_status)
        && recorded != now
    {
        return End::Diverged(Divergence {
            actor: Some(ActorId::ROOT),
            event: None,
            expected: recorded.to_string(),
            found: now.to_string(),
            message: format!(
                "ddbx: replay diverged: p1 ended with {now}, the record with {recorded}"
            ),
        });
    }
    End::ReachedEnd
}

/// The execs and spawns whose new image never joined (`Execs::lost`), but those that another
/// recorded process killed as they exec'd, which are only told.
fn lost_images(
    gd: &GdState,
    actors: &[ActorInfo],
    transcript: &mut Transcript,
) -> Vec<(ActorId, String, bool)> {
    let mut lost = gd.lock().execs.lost();
    lost.retain(|(actor, what, exec)| {
        let killed = *exec && killed_while_starting(actors, *actor);
        if killed {
            transcript.say(format!(
                "ddbx: {actor}: killed by another recorded process as it exec'd ({}): its new \
                 image never ran",
                what.split_once(", and its new image")
                    .map_or(what.as_str(), |(did, _)| did)
            ));
        }
        !killed
    });
    lost
}

/// Whether `actor`, whose exec'd image never joined, was killed by a signal that another
/// recorded process sent it: a script's `cmd & kill $!` that ends `cmd` while the loader is
/// still mapping it. Nothing ran unrecorded: its history ends before the exec, and its replay
/// waits there for the same kill.
fn killed_while_starting(actors: &[ActorInfo], actor: ActorId) -> bool {
    actors.iter().any(|a| {
        a.id == actor
            && matches!(a.exit, Some(ExitStatus::Signaled(sig))
                if a.signalled_by.iter().any(|(_, s)| *s == sig))
    })
}
