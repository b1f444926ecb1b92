//! A recording on disk, loaded and checked: the manifest and every actor's history.
//!
//! The recording is data: it knows nothing of the analyses made from it. What is derived from
//! its histories (which connect met which accept, happened-before, races) is computed by
//! [`crate::analysis`] from a [`Recording`], by whoever needs it.
//!
//! Used by replay (which needs all of it) and by `ddbx ps` / `ddbx show`.

use crate::error::{Error, Result, shown};
use ddbx_wire::history::intent::ConnectIntent;
use ddbx_wire::history::{ChannelFilter, Entry, Origin, Reader, Record};
use ddbx_wire::manifest::{ActorInfo, ExitStatus, Manifest};
use ddbx_wire::{ActorId, History};
use std::path::{Path, PathBuf};

mod locks;
pub(crate) mod unlogged;

/// The number of the line a history file ends inside (its last, unterminated line).
fn torn_line(path: &Path) -> usize {
    ddbx_wire::file::read_regular(path)
        .map_or(0, |bytes| bytes.iter().filter(|b| **b == b'\n').count() + 1)
}

/// The actor's origin in the manifest is the one its history's `Start` gives, and names a
/// parent the manifest lists: replay gives ids to new processes by origin, so a disagreement
/// would surface as a divergence ("a process the record did not have") instead of as what it
/// is, a damaged recording.
fn check_origin(
    dir: &Path,
    manifest: &Manifest,
    actor: &ActorInfo,
    first: Option<&Record>,
    path: &Path,
) -> Result<()> {
    if let Some(Record::Start { origin, .. }) = first
        && *origin != actor.origin
    {
        return Err(Error::BadRecording(format!(
            "{}: expected {}'s `Start` to say it was created as {:?}, as manifest.ron says, \
             found {origin:?}: one of the two files was damaged after the record",
            shown(path),
            actor.id,
            actor.origin
        )));
    }
    let parent = actor.origin.parent();
    if !matches!(actor.origin, Origin::Root) && manifest.actor(parent).is_none() {
        return Err(Error::BadRecording(format!(
            "{}: expected the parent of {} ({parent}) among its actors, found none (it lists {})",
            shown(&dir.join(Manifest::FILE)),
            actor.id,
            manifest
                .actors
                .iter()
                .map(|a| a.id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}

/// What a replay's plans need of one history ([`Recording::open_for_replay`]), kept while the
/// history is read as a stream: a few records, not one per event, so that a replay's memory
/// does not grow with the length of the run.
#[derive(Debug, Clone)]
pub struct Sketch {
    /// Whose history.
    pub actor: ActorId,
    /// How many events it has.
    pub events: u64,
    /// Its first record (`Start`).
    pub first: Option<Record>,
    /// Its last record.
    pub last: Option<Record>,
    /// It ends inside a record ([`History::truncated`]).
    pub truncated: bool,
    /// The records channel matching reads ([`ChannelFilter`]), with their event numbers.
    pub kept: Vec<(u64, Record)>,
    /// The connect whose intent line ends the history ([`History::unlogged_connect`]).
    pub unlogged_connect: Option<ConnectIntent>,
    /// Records the history file does not have, appended to it (and counted in `events`)
    /// because its peers' histories show that they happened: a connect the killed process
    /// never logged (`supervisor/src/recording/unlogged.rs`).
    pub unlogged: Vec<Record>,
    /// The origins of the children it created (its `Fork` and `Spawn` records).
    pub children: Vec<Origin>,
}

/// The origin of the child that `parent`'s `Fork` or `Spawn` record created.
fn child_of(parent: ActorId, record: &Record) -> Option<Origin> {
    match *record {
        Record::Fork { index } => Some(Origin::Fork { parent, index }),
        Record::Spawn { index } => Some(Origin::Spawn { parent, index }),
        _ => None,
    }
}

impl Sketch {
    /// The sketch of a loaded history.
    pub fn of(history: &History) -> Sketch {
        let mut filter = ChannelFilter::default();
        Sketch {
            actor: history.actor,
            events: history.records.len() as u64,
            first: history.records.first().cloned(),
            last: history.records.last().cloned(),
            truncated: history.truncated,
            kept: history
                .records
                .iter()
                .enumerate()
                .filter(|(_, r)| filter.keep(r))
                .map(|(i, r)| (i as u64 + 1, r.clone()))
                .collect(),
            unlogged_connect: history.unlogged_connect.clone(),
            unlogged: Vec::new(),
            children: history
                .records
                .iter()
                .filter_map(|r| child_of(history.actor, r))
                .collect(),
        }
    }

    /// Reads the history at `path` as a stream, keeping only its sketch.
    fn read(path: &Path) -> std::result::Result<Sketch, ddbx_wire::HistoryError> {
        let file = ddbx_wire::file::open_regular(path).map_err(|e| ddbx_wire::HistoryError {
            path: path.to_path_buf(),
            line: 0,
            problem: format!("cannot read the history: {e}"),
        })?;
        let mut reader = Reader::new(path, std::io::BufReader::new(file))?;
        let mut filter = ChannelFilter::default();
        let mut sketch = Sketch {
            actor: reader.header().actor,
            events: 0,
            first: None,
            last: None,
            truncated: false,
            kept: Vec::new(),
            unlogged_connect: None,
            unlogged: Vec::new(),
            children: Vec::new(),
        };
        while let Some(entry) = reader.next_entry()? {
            match entry {
                Entry::Event { event, record } => {
                    sketch.events = event;
                    if filter.keep(&record) {
                        sketch.kept.push((event, record.clone()));
                    }
                    sketch.children.extend(child_of(sketch.actor, &record));
                    if sketch.first.is_none() {
                        sketch.first = Some(record.clone());
                    }
                    sketch.last = Some(record);
                }
                Entry::Skip { first, n } => {
                    sketch.events = first + n - 1;
                    sketch.last = Some(Record::Untraced);
                }
                Entry::Value { .. } | Entry::Intent { .. } | Entry::Blank => {}
            }
        }
        sketch.truncated = reader.truncated();
        sketch.unlogged_connect = reader.unlogged_connect().cloned();
        Ok(sketch)
    }
}

/// A recording directory's contents.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The recording directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// One history per manifest actor, in the manifest's order (none when opened with
    /// [`Recording::open_for_replay`]: only the sketches then).
    pub histories: Vec<History>,
    /// One sketch per manifest actor, in the manifest's order.
    pub sketches: Vec<Sketch>,
    /// Things worth telling the user (histories cut short by a kill), one line each, without
    /// the `ddbx: ` prefix.
    pub warnings: Vec<String>,
    /// The lock histories of the actors that made threads (`supervisor/src/recording/locks.rs`).
    pub locks: Vec<(ActorId, ddbx_wire::locks::LockHistory)>,
}

impl Recording {
    /// A recording of hand-made `histories` that exists only in memory (no directory): each
    /// actor a root process. For tests and tools that build histories themselves.
    pub fn in_memory(histories: Vec<History>) -> Recording {
        let actors = histories
            .iter()
            .map(|h| ActorInfo {
                id: h.actor,
                origin: Origin::Root,
                pid: h.actor.0 as i32,
                argv: vec!["a".into()],
                host: "h".into(),
                exit: None,
                reaps: Vec::new(),
                signalled_by: Vec::new(),
                unrecorded: None,
            })
            .collect();
        Recording {
            dir: PathBuf::from("/nonexistent"),
            manifest: Manifest {
                format: ddbx_wire::FORMAT_VERSION,
                ddbx_version: env!("CARGO_PKG_VERSION").into(),
                command: vec!["a".into()],
                cwd: PathBuf::from("/"),
                env: Vec::new(),
                host: "h".into(),
                state: ddbx_wire::manifest::SessionState::Complete,
                actors,
                passthrough: Vec::new(),
                problem: None,
                env_left_out: Vec::new(),
                closes: true,
                signals: true,
                pipes: true,
            },
            sketches: histories.iter().map(Sketch::of).collect(),
            histories,
            warnings: Vec::new(),
            locks: Vec::new(),
        }
    }

    /// Loads `dir/manifest.ron` and `dir/history/pN.ron` for every listed actor.
    ///
    /// A missing or malformed file is [`Error::BadRecording`] naming the file (and line); a
    /// history cut short by a kill is accepted with a warning.
    pub fn open(dir: &Path) -> Result<Recording> {
        Recording::load(dir, true)
    }

    /// [`Recording::open`] for a replay without predicates: every history is read and checked
    /// as a stream and only its [`Sketch`] is kept (`histories` is empty), so that memory does
    /// not grow with the length of the run.
    pub fn open_for_replay(dir: &Path) -> Result<Recording> {
        Recording::load(dir, false)
    }

    /// The histories loaded (`whole`) or sketched.
    fn load(dir: &Path, whole: bool) -> Result<Recording> {
        if !dir.is_dir() {
            return Err(Error::BadRecording(format!(
                "{}: expected a recording directory made by `ddbx record`, found {}",
                shown(dir),
                if dir.exists() { "a file" } else { "nothing" }
            )));
        }
        let manifest = Manifest::load(dir).map_err(|e| Error::BadRecording(e.to_string()))?;
        let mut histories = Vec::new();
        let mut sketches = Vec::with_capacity(manifest.actors.len());
        let mut warnings = Vec::new();
        for actor in &manifest.actors {
            let path = Manifest::history_path(dir, actor.id);
            if !path.exists() {
                return Err(Error::BadRecording(format!(
                    "{}: missing: the manifest lists actor {} (pid {}, {}) but its history file is not there",
                    shown(&path),
                    actor.id,
                    actor.pid,
                    actor.argv.join(" ")
                )));
            }
            let bad = |e: ddbx_wire::HistoryError| Error::BadRecording(e.to_string());
            let (history, sketch) = if whole {
                let history = History::load(&path).map_err(bad)?;
                let sketch = Sketch::of(&history);
                (Some(history), sketch)
            } else {
                (None, Sketch::read(&path).map_err(bad)?)
            };
            let h = &sketch;
            if h.actor != actor.id {
                return Err(Error::BadRecording(format!(
                    "{}:1: expected the history of {}, found the header of {}",
                    shown(&path),
                    actor.id,
                    h.actor
                )));
            }
            if h.events == 0 {
                return Err(Error::BadRecording(format!(
                    "{}: expected at least a `Start` record after the header, found none \
                     (the process died before its first event was written)",
                    shown(&path)
                )));
            }
            check_origin(dir, &manifest, actor, h.first.as_ref(), &path)?;
            if h.truncated
                && let Some(status @ ExitStatus::Exited(_)) = actor.exit
            {
                return Err(Error::BadRecording(format!(
                    "{}: ends inside a record at line {}, but the manifest says {} ended with \
                     {status}: a process that exits writes its whole history, so this file \
                     was cut or damaged after the record",
                    shown(&path),
                    torn_line(&path),
                    actor.id
                )));
            }
            // (An actor whose last image ran unrecorded exited without its LD.)
            if !h.truncated
                && actor.unrecorded.is_none()
                && !matches!(h.last.as_ref(), Some(Record::Exit { .. }))
                && let Some(status @ ExitStatus::Exited(_)) = actor.exit
            {
                // Replay would wait at the end of this history for a kill that never comes.
                return Err(Error::BadRecording(format!(
                    "{}: expected `Exit` as the last record, since the manifest says {} ended \
                     with {status}; found `{}` (event {}): records are missing at the end, so \
                     this file was cut or damaged after the record",
                    shown(&path),
                    actor.id,
                    h.last.as_ref().map_or("nothing", Record::kind),
                    h.events
                )));
            }
            if h.truncated {
                warnings.push(format!(
                    "{}'s history ends inside a record (process killed while writing it); \
                     replaying up to its last whole record",
                    actor.id
                ));
            }
            histories.extend(history);
            sketches.push(sketch);
        }
        let (locks, more) = locks::load(dir, &manifest)?;
        warnings.extend(more);
        let mut recording = Recording {
            dir: dir.to_path_buf(),
            manifest,
            histories,
            sketches,
            warnings,
            locks,
        };
        recording.add_unlogged_connects();
        Ok(recording)
    }

    /// Appends to each history that ends in a connect its process never logged the `Connect`
    /// a peer's accept shows it made (`supervisor/src/recording/unlogged.rs`).
    fn add_unlogged_connects(&mut self) {
        let tails: Vec<unlogged::Tail<'_>> = self
            .sketches
            .iter()
            .map(|s| unlogged::Tail {
                actor: s.actor,
                kept: &s.kept,
                events: s.events,
                intent: s.unlogged_connect.as_ref(),
            })
            .collect();
        let found = unlogged::unlogged_connects(&tails);
        for u in found {
            let Record::Connect { remote, .. } = &u.record else {
                continue;
            };
            self.warnings.push(format!(
                "{} was killed in a connect to {remote} that its history does not have; \
                 {}'s accept (event {}) took it: replayed as {}'s event {}",
                u.actor, u.acceptor.0, u.acceptor.1, u.actor, u.event
            ));
            if let Some(h) = self.histories.iter_mut().find(|h| h.actor == u.actor) {
                h.records.push(u.record.clone());
            }
            if let Some(s) = self.sketches.iter_mut().find(|s| s.actor == u.actor) {
                s.events = u.event;
                s.last = Some(u.record.clone());
                s.kept.push((u.event, u.record.clone()));
                s.unlogged.push(u.record);
            }
        }
    }

    /// The children the record created that never joined its session (killed before they
    /// said `Hello`): their parents' histories have the fork, the manifest has no actor for
    /// them. A replay creates them again; they have nothing to replay.
    pub fn unjoined_children(&self) -> Vec<Origin> {
        let known = |o: &Origin| self.manifest.actors.iter().any(|a| a.origin == *o);
        self.sketches
            .iter()
            .flat_map(|s| s.children.iter().copied())
            .filter(|o| !known(o))
            .collect()
    }

    /// The history of an actor.
    pub fn history(&self, id: ActorId) -> Option<&History> {
        self.histories.iter().find(|h| h.actor == id)
    }

    /// The manifest entry of an actor.
    pub fn actor(&self, id: ActorId) -> Option<&ActorInfo> {
        self.manifest.actor(id)
    }

    /// The actor created as child number `index` of `parent` by fork or posix_spawn.
    pub fn child(&self, parent: ActorId, index: u32) -> Option<ActorId> {
        self.manifest
            .actors
            .iter()
            .find(|a| match a.origin {
                Origin::Fork {
                    parent: p,
                    index: i,
                }
                | Origin::Spawn {
                    parent: p,
                    index: i,
                } => p == parent && i == index,
                _ => false,
            })
            .map(|a| a.id)
    }

    /// The program an actor ended up running: the arguments of its last image (its last
    /// `Exec`, else its first image).
    pub fn command(&self, id: ActorId) -> Vec<String> {
        let last_exec = self.history(id).and_then(|h| {
            h.records.iter().rev().find_map(|r| match r {
                Record::Exec { argv } => Some(argv.clone()),
                _ => None,
            })
        });
        last_exec
            .or_else(|| self.actor(id).map(|a| a.argv.clone()))
            .unwrap_or_default()
    }

    /// The program names an actor is known by: the basename of `argv[0]` of each program it
    /// *started* (the root's, a spawned process's, each exec's). A forked child that does not
    /// exec runs its parent's program but is not known by its name: `server_x` means the
    /// process that started server_x, not its forked copies (use their ids).
    pub fn program_names(&self, id: ActorId) -> Vec<String> {
        let mut names = Vec::new();
        let mut add = |argv: &[String]| {
            if let Some(first) = argv.first() {
                let base = first.rsplit('/').next().unwrap_or(first).to_string();
                if !base.is_empty() && !names.contains(&base) {
                    names.push(base);
                }
            }
        };
        if let Some(info) = self.actor(id)
            && !matches!(info.origin, Origin::Fork { .. })
        {
            add(&info.argv);
        }
        if let Some(h) = self.history(id) {
            for r in &h.records {
                match r {
                    Record::Start { argv, origin, .. }
                        if !matches!(origin, Origin::Fork { .. }) =>
                    {
                        add(argv)
                    }
                    Record::Exec { argv } => add(argv),
                    _ => {}
                }
            }
        }
        names
    }

    /// Total number of recorded events over all actors.
    pub fn event_count(&self) -> u64 {
        self.sketches.iter().map(|h| h.events).sum()
    }

    /// The sketch of `actor`'s history.
    pub fn sketch(&self, actor: ActorId) -> Option<&Sketch> {
        self.sketches.iter().find(|h| h.actor == actor)
    }

    /// Resolves a user's actor name: `p3`, or a program name that only one actor ran.
    pub fn find_actor(&self, name: &str) -> std::result::Result<ActorId, String> {
        let valid = || {
            self.manifest
                .actors
                .iter()
                .map(|a| {
                    let names = self.program_names(a.id);
                    if names.is_empty() {
                        a.id.to_string()
                    } else {
                        format!("{} ({})", a.id, names.join(", "))
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Ok(id) = name.parse::<ActorId>() {
            if self.actor(id).is_some() {
                return Ok(id);
            }
            return Err(format!(
                "expected an actor of this recording, found `{name}`; valid: {}",
                valid()
            ));
        }
        let matching: Vec<ActorId> = self
            .manifest
            .actors
            .iter()
            .filter(|a| self.program_names(a.id).iter().any(|n| n == name))
            .map(|a| a.id)
            .collect();
        match matching.as_slice() {
            [one] => Ok(*one),
            [] => Err(format!(
                "expected an actor id such as `p3` or a program name, found `{name}`; valid: {}",
                valid()
            )),
            many => Err(format!(
                "`{name}` names {} actors ({}): use an id",
                many.len(),
                many.iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}
