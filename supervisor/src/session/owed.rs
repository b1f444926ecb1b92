//! Replay of a recorded actor that was killed (issue #11, item 4): the bytes its peers'
//! histories say they received from it but its own history never says it sent.
//!
//! The LD writes a `Send` record after the real send returns. A process killed between the
//! two has sent bytes that its history does not have, while the peer that received them logged
//! its `Recv`: the two histories contradict each other, and the peer's replay would wait for
//! ever for bytes nobody sends. Replay reconciles the killed actor's tail with its peers: for
//! each direction of a channel where the recorded receives go past the recorded sends, the
//! missing bytes are owed by the actor that holds the sending end (the last one that sent on
//! it, else the end's own actor), provided its record ended with a kill. Its plan lists them
//! (`ReplayPlan::owed`, by its fd at its last send); at the end of its history its LD lets the
//! program's next sends on that fd through, up to what is owed, before the kill
//! (`preload/src/replay/io.rs`).

use crate::analysis::deps::{DataRange, Deps, Direction};
use crate::recording::Recording;
use ddbx_wire::ActorId;
use ddbx_wire::history::Origin;
use ddbx_wire::history::Record;
use std::collections::HashMap;

/// One direction of a channel, as the recorded sends and receives cover it.
#[derive(Default)]
struct Covered {
    /// The offset after the last byte sent, and who sent it last (actor, fd).
    sent: u64,
    last_sender: Option<(ActorId, i32)>,
    /// The offset after the last byte received.
    received: u64,
    /// Who received first (actor, fd, event).
    receiver: Option<(ActorId, i32, u64)>,
}

/// For each actor among `killed`: the bytes it owes, by fd.
pub(super) fn owed_bytes(
    recording: &Recording,
    killed: &[ActorId],
) -> HashMap<ActorId, Vec<(i32, u64)>> {
    let mut owed: HashMap<ActorId, Vec<(i32, u64)>> = HashMap::new();
    if killed.is_empty() {
        return owed;
    }
    let deps = Deps::from_recording(recording);
    let mut covered: HashMap<(u32, Direction), Covered> = HashMap::new();
    for history in &recording.histories {
        for (i, record) in history.records.iter().enumerate() {
            let Some(DataRange {
                channel,
                direction,
                end,
                ..
            }) = deps.data_range(history.actor, i as u64 + 1)
            else {
                continue;
            };
            let c = covered.entry((channel, direction)).or_default();
            match record {
                Record::Send { fd, .. } if end >= c.sent => {
                    c.sent = end;
                    c.last_sender = Some((history.actor, *fd));
                }
                Record::Recv { fd, .. } => {
                    c.received = c.received.max(end);
                    c.receiver.get_or_insert((history.actor, *fd, i as u64 + 1));
                }
                _ => {}
            }
        }
    }
    for ((channel, direction), c) in covered {
        if c.received <= c.sent {
            continue;
        }
        let Some((actor, fd)) = c
            .last_sender
            .or_else(|| sending_end(recording, &deps, channel, direction))
            .or_else(|| c.receiver.and_then(|r| made_with(recording, r, killed)))
        else {
            continue;
        };
        if killed.contains(&actor) {
            owed.entry(actor)
                .or_default()
                .push((fd, c.received - c.sent));
        }
    }
    owed
}

/// The actor and fd of a channel's sending end in `direction`, from the connect or accept that
/// made it (for a direction that has no recorded send at all).
fn sending_end(
    recording: &Recording,
    deps: &Deps,
    channel: u32,
    direction: Direction,
) -> Option<(ActorId, i32)> {
    let ch = deps.channels().iter().find(|c| c.id == channel)?;
    let end = match direction {
        Direction::ConnectorToAcceptor => ch.connector,
        Direction::AcceptorToConnector => ch.acceptor,
    };
    let record = recording
        .history(end.actor)?
        .records
        .get((end.event as usize).checked_sub(1)?)?;
    match record {
        Record::Connect { fd, .. } => Some((end.actor, *fd)),
        Record::Accept { new_fd, .. } => Some((end.actor, *new_fd)),
        _ => None,
    }
}

/// The sending end of a socketpair or pipe whose receiving end `fd` its receiver made itself
/// (`receiver`: actor, fd, event of its first receive), and who holds it ([`holder`]; one of
/// `killed` where several do).
fn made_with(
    recording: &Recording,
    (actor, fd, event): (ActorId, i32, u64),
    killed: &[ActorId],
) -> Option<(ActorId, i32)> {
    let records = &recording.history(actor)?.records;
    let (made, peer) = records
        .iter()
        .take(event as usize)
        .enumerate()
        .rev()
        .find_map(|(i, r)| match r {
            Record::Pair { fd: a, peer_fd: b } if *a == fd => Some((i, *b)),
            Record::Pair { fd: a, peer_fd: b } if *b == fd => Some((i, *a)),
            Record::Pipe { read_fd, write_fd } if *read_fd == fd => Some((i, *write_fd)),
            _ => None,
        })?;
    holder(recording, actor, made as u64 + 1, peer, killed)
}

/// Who holds `fd`, made by `creator` at event `made` (a socketpair's or a pipe's end), at the
/// end of the histories: the creator, unless it closed it; else the one child forked after
/// `made` that inherited it and did not close it (term_stuck's parent makes a socketpair,
/// forks and closes the child's end: the child, killed before it logged its one send, owes
/// it); of several such children, the one among `killed`, since only a killed actor can owe
/// (pids.c forks a second child after the socketpair, which exits without closing the end).
/// `None` when that is not one actor.
fn holder(
    recording: &Recording,
    creator: ActorId,
    made: u64,
    fd: i32,
    killed: &[ActorId],
) -> Option<(ActorId, i32)> {
    let closes = |actor: ActorId, after: u64| {
        recording.history(actor).is_some_and(|h| {
            h.records
                .iter()
                .skip(after as usize)
                .any(|r| matches!(r, Record::Close { fd: f } if *f == fd))
        })
    };
    if !closes(creator, made) {
        return Some((creator, fd));
    }
    let forks = &recording.history(creator)?.records;
    let heirs: Vec<ActorId> = recording
        .manifest
        .actors
        .iter()
        .filter(|info| match info.origin {
            Origin::Fork { parent, index } => {
                parent == creator
                    && forks.iter().enumerate().any(|(i, r)| {
                        i as u64 >= made && matches!(r, Record::Fork { index: k } if *k == index)
                    })
                    && !closes(info.id, 0)
            }
            _ => false,
        })
        .map(|info| info.id)
        .collect();
    let only = |actors: &[ActorId]| match actors {
        [one] => Some((*one, fd)),
        _ => None,
    };
    only(&heirs).or_else(|| {
        let killed_heirs: Vec<ActorId> = heirs.into_iter().filter(|a| killed.contains(a)).collect();
        only(&killed_heirs)
    })
}
