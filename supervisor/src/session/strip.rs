//! At the end of a record: the bytes of receives and sends on channels whose both ends were
//! recorded are dropped from the histories (a replay regenerates them from the sender); the
//! bytes exchanged with peers outside the session stay.
//!
//! The pass streams: ddbx's memory does not grow with the recording's length. It reads each
//! history twice, one line at a time:
//!
//! 1. what channel matching needs (`Start`, `Connect`, `Accept`, with their event numbers), to
//!    pair connects with accepts ([`match_sparse`]), with the `Connect` a killed process never
//!    logged added as a replay's loader adds it (`supervisor/src/recording/unlogged.rs`);
//! 2. parents first, each actor's fd bindings over time (a child starts with its parent's at
//!    its `Fork`/`Spawn`, as `analysis::deps` walks them): a `Recv` or `Send` on an fd bound to
//!    a channel between recorded actors loses its bytes. The history is rewritten line by
//!    line into a temporary file that replaces it; every other line is copied as it was.
//!
//! Before, the whole recording was loaded and its dependencies computed: about 400 bytes of
//! memory per event (310 MB for 800,000 events).

use crate::analysis::channels::{ChannelFilter, SparseHistory, match_sparse};
use crate::analysis::parents_first;
use crate::error::{Error, Result};
use crate::recording::unlogged::{Tail, unlogged_connects};
use ddbx_wire::history::intent::ConnectIntent;
use ddbx_wire::history::{Entry, Origin, Reader, Record, Trace};
use ddbx_wire::manifest::Manifest;
use ddbx_wire::{ActorId, HistoryError};
use std::collections::{HashMap, HashSet};
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// What pass 1 keeps of one history: its actor, the records channel matching reads (with their
/// event numbers), its event count, and the connect intent its last line is, if any.
type Kept = (ActorId, Vec<(u64, Record)>, u64, Option<ConnectIntent>);

/// The fds of one actor bound to a channel between recorded actors.
type Bound = HashSet<i32>;

/// Drops the managed bytes from every history of the recording in `dir` (see the module doc).
pub(super) fn strip_managed_data(dir: &Path) -> Result<()> {
    let manifest = Manifest::load(dir).map_err(|e| Error::BadRecording(e.to_string()))?;
    let paths: Vec<(ActorId, PathBuf)> = manifest
        .actors
        .iter()
        .map(|a| (a.id, Manifest::history_path(dir, a.id)))
        .filter(|(_, p)| p.exists())
        .collect();
    // The LD keeps no bytes of a connection it knew was to a recorded process
    // (`preload/src/record/peers.rs`): most recordings have nothing to drop.
    if !any_keeps_bytes(&paths)? {
        return Ok(());
    }
    // Pass 1: the records that make channels, and a connect a killed process never logged.
    let mut kept: Vec<Kept> = Vec::new();
    for (actor, path) in &paths {
        let mut records = Vec::new();
        let mut filter = ChannelFilter::default();
        let (mut events, mut intent) = (0, None);
        each_entry(path, |entry, _| {
            match entry {
                Entry::Event { event, record } => {
                    (events, intent) = (event, None);
                    if filter.keep(&record) {
                        records.push((event, record));
                    }
                }
                Entry::Skip { first, n } => (events, intent) = (first + n - 1, None),
                Entry::Intent { intent: i, .. } => intent = Some(i),
                _ => {}
            }
            Ok(())
        })?;
        kept.push((*actor, records, events, intent));
    }
    let tails: Vec<Tail<'_>> = kept
        .iter()
        .map(|(actor, records, events, intent)| Tail {
            actor: *actor,
            kept: records,
            events: *events,
            intent: intent.as_ref(),
        })
        .collect();
    let unlogged = unlogged_connects(&tails);
    drop(tails);
    for u in unlogged {
        if let Some((_, records, ..)) = kept.iter_mut().find(|(a, ..)| *a == u.actor) {
            records.push((u.event, u.record));
        }
    }
    let sparse: Vec<SparseHistory<'_>> = kept
        .iter()
        .map(|(actor, records, ..)| SparseHistory {
            actor: *actor,
            records: records.iter().map(|(e, r)| (*e, r)).collect(),
        })
        .collect();
    let ends: HashSet<(ActorId, u64)> = match_sparse(&sparse)
        .iter()
        .flat_map(|c| {
            [
                (c.connector.actor, c.connector.event),
                (c.acceptor.actor, c.acceptor.event),
            ]
        })
        .collect();
    drop(sparse);
    drop(kept);

    // Pass 2: parents first, the bindings, and the rewrite.
    let origin_of: HashMap<ActorId, Origin> =
        manifest.actors.iter().map(|a| (a.id, a.origin)).collect();
    let parent_of = |a: ActorId| match origin_of.get(&a) {
        Some(Origin::Fork { parent, .. } | Origin::Spawn { parent, .. })
            if origin_of.contains_key(parent) =>
        {
            Some(*parent)
        }
        _ => None,
    };
    let path_of: HashMap<ActorId, &PathBuf> = paths.iter().map(|(a, p)| (*a, p)).collect();
    let mut snapshots: HashMap<(ActorId, u32), Bound> = HashMap::new();
    for actor in parents_first(path_of.keys().copied(), parent_of) {
        let inherited = match origin_of.get(&actor) {
            Some(Origin::Fork { parent, index } | Origin::Spawn { parent, index }) => {
                snapshots.remove(&(*parent, *index)).unwrap_or_default()
            }
            _ => Bound::new(),
        };
        let walk = Walk {
            actor,
            ends: &ends,
            bound: inherited,
            snapshots: &mut snapshots,
        };
        walk.rewrite(path_of[&actor])?;
    }
    Ok(())
}

/// One actor's fd bindings, walked over its history.
struct Walk<'a> {
    actor: ActorId,
    /// Every connect and accept that made a channel between recorded actors.
    ends: &'a HashSet<(ActorId, u64)>,
    bound: Bound,
    /// The bindings each `Fork`/`Spawn` handed to the child, by (parent, child number).
    snapshots: &'a mut HashMap<(ActorId, u32), Bound>,
}

impl Walk<'_> {
    /// Streams the history at `path` into a new file without the managed bytes, and puts it
    /// in place if anything was dropped. Optimal histories are walked (their children inherit
    /// bindings) but kept: their logged bytes are only ever input from outside peers.
    fn rewrite(mut self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("ron.tmp");
        let file = ddbx_wire::file::create_private(&tmp)
            .map_err(|e| Error::io_at("cannot write", &tmp, e))?;
        let mut out = BufWriter::new(file);
        let mut changed = false;
        let mut optimal = false;
        let walked = each_line(path, |reader, entry| {
            optimal = reader.trace() == Trace::Optimal;
            let stripped = match entry {
                Some(Entry::Event { event, record }) => self.step(event, record),
                _ => None,
            };
            let line = match &stripped {
                Some(record) => {
                    changed = true;
                    record.to_line()
                }
                None => reader.text().to_string(),
            };
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")
        });
        let finished = walked.and_then(|torn| {
            if let Some(torn) = torn {
                // The record being written when the process died, kept as it was.
                out.write_all(&torn)
                    .map_err(|e| Error::io_at("cannot write", &tmp, e))?;
            }
            out.flush()
                .map_err(|e| Error::io_at("cannot write", &tmp, e))
        });
        drop(out);
        if finished.is_err() || !changed || optimal {
            let _ = std::fs::remove_file(&tmp);
            return finished;
        }
        std::fs::rename(&tmp, path).map_err(|e| Error::io_at("cannot replace", path, e))
    }

    /// Event `event` of the walk: updates the bindings; returns the record without its bytes
    /// when it carries bytes of a managed channel.
    fn step(&mut self, event: u64, record: Record) -> Option<Record> {
        let managed = |fd: &i32, bound: &Bound| bound.contains(fd);
        match record {
            Record::Connect { fd, .. } => self.bind(fd, event),
            Record::Accept { new_fd, .. } => self.bind(new_fd, event),
            Record::Fork { index } | Record::Spawn { index } => {
                self.snapshots
                    .insert((self.actor, index), self.bound.clone());
            }
            Record::Recv {
                fd,
                n,
                data: Some(_),
                passed,
            } if managed(&fd, &self.bound) => {
                return Some(Record::Recv {
                    fd,
                    n,
                    data: None,
                    passed,
                });
            }
            Record::Send {
                fd,
                n,
                data: Some(_),
                turn,
                passed,
            } if managed(&fd, &self.bound) => {
                return Some(Record::Send {
                    fd,
                    n,
                    data: None,
                    turn,
                    passed,
                });
            }
            _ => {}
        }
        None
    }

    /// `fd` now refers to what event `event` made: a managed channel, or something else.
    fn bind(&mut self, fd: i32, event: u64) {
        if self.ends.contains(&(self.actor, event)) {
            self.bound.insert(fd);
        } else {
            self.bound.remove(&fd);
        }
    }
}

/// Whether one of the histories may hold bytes of a receive or send.
fn any_keeps_bytes(paths: &[(ActorId, PathBuf)]) -> Result<bool> {
    for (_, path) in paths {
        if keeps_bytes(path)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether the history at `path` may hold bytes of a receive or send (a `data:` field): a
/// scan of its text, without parsing it.
fn keeps_bytes(path: &Path) -> Result<bool> {
    use std::io::Read;
    const NEEDLE: &[u8] = b"data: ";
    let mut file = ddbx_wire::file::open_regular(path)
        .map_err(|e| Error::io_at("cannot read the history", path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    // The last bytes of the previous chunk are kept at the front: a needle across two reads.
    let mut kept = 0;
    loop {
        let n = file
            .read(&mut buf[kept..])
            .map_err(|e| Error::io_at("cannot read the history", path, e))?;
        if n == 0 {
            return Ok(false);
        }
        let end = kept + n;
        if buf[..end].windows(NEEDLE.len()).any(|w| w == NEEDLE) {
            return Ok(true);
        }
        kept = (NEEDLE.len() - 1).min(end);
        buf.copy_within(end - kept..end, 0);
    }
}

/// Reads the history at `path` entry by entry.
fn each_entry(path: &Path, mut each: impl FnMut(Entry, &str) -> Result<()>) -> Result<()> {
    let mut reader = open(path)?;
    while let Some(entry) = reader.next_entry().map_err(bad)? {
        each(entry, reader.text())?;
    }
    Ok(())
}

/// Reads the history at `path` line by line, the header's line included (entry `None`), and
/// hands each line to `each`; returns the torn last line, if the file ends inside one.
fn each_line(
    path: &Path,
    mut each: impl FnMut(&Reader<BufReader<std::fs::File>>, Option<Entry>) -> std::io::Result<()>,
) -> Result<Option<Vec<u8>>> {
    let write_error = |e| Error::io_at("cannot write the history beside", path, e);
    let mut reader = open(path)?;
    // The header's line, then every line after it.
    each(&reader, None).map_err(write_error)?;
    while let Some(entry) = reader.next_entry().map_err(bad)? {
        each(&reader, Some(entry)).map_err(write_error)?;
    }
    Ok(reader.torn().map(<[u8]>::to_vec))
}

/// A history opened for reading, its header read.
fn open(path: &Path) -> Result<Reader<BufReader<std::fs::File>>> {
    let file = ddbx_wire::file::open_regular(path)
        .map_err(|e| Error::io_at("cannot read the history", path, e))?;
    Reader::new(path, BufReader::new(file)).map_err(bad)
}

/// A history that cannot be read.
fn bad(e: HistoryError) -> Error {
    Error::BadRecording(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::deps::Deps;
    use crate::recording::Recording;
    use ddbx_wire::history::{Data, header_line};
    use ddbx_wire::manifest::{ActorInfo, SessionState};

    fn start(pid: i32, origin: Origin) -> Record {
        Record::Start {
            pid,
            ppid: 1,
            origin,
            argv: vec!["a".into()],
            host: "h".into(),
        }
    }

    fn bytes(b: &str) -> Option<Data> {
        Some(Data(b.as_bytes().to_vec()))
    }

    fn recv(fd: i32, b: &str) -> Record {
        Record::Recv {
            fd,
            n: b.len() as u64,
            data: bytes(b),
            passed: Vec::new(),
        }
    }

    fn send(fd: i32, b: &str) -> Record {
        Record::Send {
            fd,
            n: b.len() as u64,
            data: bytes(b),
            turn: None,
            passed: Vec::new(),
        }
    }

    fn accept(new_fd: i32, remote: &str) -> Record {
        Record::Accept {
            fd: 3,
            new_fd,
            local: "127.0.0.1:80".into(),
            remote: remote.into(),
            peer_pid: None,
            at: None,
        }
    }

    /// p1 accepts p2 (recorded) on fd 4 and an outside client on fd 5, then forks p3, which
    /// sends on both inherited fds; p3's history ends torn. p1 then accepts on fd 6 a
    /// connection of p4, whose history ends with that connect's intent line (killed before
    /// its record).
    fn write_recording(dir: &Path) -> Vec<(ActorId, Vec<Record>)> {
        let p1 = vec![
            start(100, Origin::Root),
            accept(4, "127.0.0.1:5000"),
            accept(5, "10.0.0.9:7000"),
            recv(4, "hi"),
            recv(5, "ext"),
            Record::Fork { index: 1 },
            send(4, "ok"),
            accept(6, "127.0.0.1:6000"),
            recv(6, "zz"),
            Record::Exit { status: 0 },
        ];
        let p2 = vec![
            start(200, Origin::Root),
            Record::Connect {
                fd: 3,
                err: None,
                local: "127.0.0.1:5000".into(),
                remote: "127.0.0.1:80".into(),
                at: None,
            },
            send(3, "hi"),
            recv(3, "ok"),
            Record::Exit { status: 0 },
        ];
        let fork = Origin::Fork {
            parent: ActorId(1),
            index: 1,
        };
        let p3 = vec![start(300, fork), send(4, "x"), send(5, "y")];
        let actors = vec![
            (ActorId(1), Origin::Root, p1),
            (ActorId(2), Origin::Root, p2),
            (ActorId(3), fork, p3),
            (ActorId(4), Origin::Root, vec![start(400, Origin::Root)]),
        ];
        std::fs::create_dir_all(dir.join("history")).unwrap();
        let mut infos = Vec::new();
        for (id, origin, records) in &actors {
            let mut text = header_line(*id);
            for r in records {
                text.push_str(&r.to_line());
                text.push('\n');
            }
            if *id == ActorId(3) {
                text.push_str("Send(fd: 4, n: 1, da");
            }
            if *id == ActorId(4) {
                text.push_str("~k(fd: 3, remote: \"127.0.0.1:80\")\n");
            }
            std::fs::write(Manifest::history_path(dir, *id), text).unwrap();
            infos.push(ActorInfo {
                id: *id,
                origin: *origin,
                pid: id.0 as i32 * 100,
                argv: vec!["a".into()],
                host: "h".into(),
                exit: None,
                reaps: Vec::new(),
                signalled_by: Vec::new(),
                unrecorded: None,
            });
        }
        Manifest {
            format: ddbx_wire::FORMAT_VERSION,
            ddbx_version: "0".into(),
            command: vec!["a".into()],
            cwd: "/".into(),
            env: Vec::new(),
            host: "h".into(),
            state: SessionState::Complete,
            actors: infos,
            passthrough: Vec::new(),
            problem: None,
            env_left_out: Vec::new(),
            closes: true,
            signals: true,
            pipes: true,
        }
        .store(dir)
        .unwrap();
        actors.into_iter().map(|(id, _, r)| (id, r)).collect()
    }

    #[test]
    fn strips_what_the_dependencies_call_managed_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("ddbx-strip-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let written = write_recording(&dir);
        // The oracle: the whole-recording analysis the pass used to run.
        let before = Recording::open(&dir).unwrap();
        let deps = Deps::from_recording(&before);
        strip_managed_data(&dir).unwrap();
        let after = Recording::open(&dir).unwrap();
        let mut stripped = Vec::new();
        for (actor, records) in &written {
            let now = &after.history(*actor).unwrap().records;
            // p4's connect is in no file: the loader adds it, as the pass saw it.
            let added = usize::from(*actor == ActorId(4));
            assert_eq!(now.len(), records.len() + added, "{actor}");
            for (i, (was, is)) in records.iter().zip(now).enumerate() {
                let event = i as u64 + 1;
                let managed = deps.data_range(*actor, event).is_some();
                match (was, is) {
                    (
                        Record::Recv { data: Some(_), .. } | Record::Send { data: Some(_), .. },
                        Record::Recv { data, .. } | Record::Send { data, .. },
                    ) => {
                        assert_eq!(data.is_none(), managed, "{actor} event {event}");
                        if data.is_none() {
                            stripped.push((actor.0, event));
                        }
                    }
                    _ => assert_eq!(was, is, "{actor} event {event}"),
                }
            }
        }
        assert_eq!(
            stripped,
            vec![(1, 4), (1, 7), (1, 9), (2, 3), (2, 4), (3, 2)]
        );
        assert!(
            matches!(&after.history(ActorId(4)).unwrap().records[1],
                Record::Connect { fd: 3, local, .. } if local == "127.0.0.1:6000"),
            "{:?}",
            after.history(ActorId(4))
        );
        // The torn record is kept as it was.
        let p3 = std::fs::read_to_string(Manifest::history_path(&dir, ActorId(3))).unwrap();
        assert!(p3.ends_with("\nSend(fd: 4, n: 1, da"), "{p3}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
