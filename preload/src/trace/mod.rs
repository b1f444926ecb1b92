//! Optimal tracing (`ddbx record --trace optimal`; paper 002, Netzer–Miller, adapted to
//! sockets): log a receive's outcome only if something else could have come out of it.
//!
//! Each LD keeps a vector clock (its own component is its event count). Before every send on a
//! TCP channel it describes the send in the channel's side channel ([`side`]): byte range and
//! clock. After a receive it reads the descriptions of the bytes it got, merges their clocks,
//! and decides:
//!
//! * a receive on one channel that got `r` bytes at stream offset `a` is *untraced* when
//!   `r == min(len, end - a)`, `end` being the end of the send that holds `a`: replay computes
//!   the same count from its own side channel and waits for exactly those bytes, so the count
//!   no longer depends on timing. Any other count (a read that stopped inside a send, or took
//!   bytes of several sends) is one that timing made: logged. A stream carries no choice of
//!   message, so this is the whole race of a receive on one channel;
//! * a ready set (select, poll) that reports exactly one fd as readable is untraced when none
//!   of the other watched channels' next messages could have been there: their send's clock
//!   must say it happened after the ready set (`vc_send[me] >= ordinal`). That is only known
//!   when those messages arrive (are received), so the ready set waits *undecided* in a queue;
//! * everything else is logged: EAGAIN and timeouts ("nothing there"), several ready fds,
//!   writability, epoll (its registrations are not enumerated), accepts and connects, end of
//!   stream from a peer without side channel, and every receive from a peer that writes no side
//!   channel (outside peers, Unix sockets): their bytes are input;
//! * a message whose clock is unknown (end of stream) is taken to have been there at any time:
//!   every receive waiting for it is logged.
//!
//! The history is written in order: `Skip(n: …)` for runs of untraced events, the record for
//! logged ones; the queue holds events from the oldest undecided one on. When it is full, at
//! exec and at exit, undecided events are logged (conservative, still correct). A process
//! killed by a signal loses what was still queued.
//!
//! Replay (`replay/io.rs`, `replay/ready.rs`): a logged outcome is forced as in a full replay; an
//! untraced receive reads `min(len, end - a)` bytes once they are there, an untraced ready set
//! is the real call without timeout, an untraced send sends everything.

pub mod side;

use crate::sys;
use ddbx_wire::Record;
use libc::c_int;
use side::{ClockPair, Side};
use std::collections::VecDeque;

/// Vector clock components kept (actors with higher numbers are dropped: conservative).
pub const MAX_ACTORS: usize = 1024;
/// Events kept waiting for their decision before the oldest undecided one is logged.
const QUEUE: usize = 4096;

/// What is known about an event's outcome.
pub enum Decision {
    /// Raced (or cannot be shown not to): logged.
    Logged,
    /// Could not have come out differently: not logged.
    Untraced,
    /// Untraced unless a later message on one of `pending` (channel numbers) could have been
    /// its outcome.
    Undecided {
        /// Channels whose next message is still to be seen.
        pending: Vec<u32>,
    },
}

struct Item {
    ordinal: u64,
    record: Record,
    decision: Decision,
}

/// What the history writer must write next.
pub enum Out {
    /// A run of untraced events.
    Skip(u64),
    /// A logged event.
    Record(Record),
}

/// The direction of a channel end.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// What the peer sends us.
    In,
    /// What we send the peer.
    Out,
}

/// Which side channel describes one direction of an fd.
struct FdSide {
    fd: c_int,
    dir: Dir,
    /// Index into [`Tracer::sides`].
    side: u32,
}

/// What [`Tracer::after_send`] needs of the description [`Tracer::before_send`] wrote.
#[derive(Clone, Copy)]
pub struct SendToken {
    /// The side channel.
    side: u32,
    /// The entry that describes the send.
    index: u64,
    /// The bytes it announced.
    len: u64,
}

/// The optimal tracing state of one process image.
pub struct Tracer {
    /// Recording (deciding what to log) rather than replaying (keeping the side channel only).
    pub recording: bool,
    dir: Vec<u8>,
    me: u32,
    vc: Vec<u32>,
    sides: Vec<Side>,
    by_fd: Vec<FdSide>,
    queue: VecDeque<Item>,
    skip: u64,
    /// The fds the last readiness call watched (for the `DDBX_TRACE_CHECK` twin history).
    pub watched: Vec<c_int>,
}

impl Tracer {
    /// A tracer for actor `me`, whose side channel files live in `<runtime dir of gd>/vc`.
    pub fn new(recording: bool, me: u32, gd_socket: &[u8]) -> Option<Tracer> {
        let cut = gd_socket.iter().rposition(|b| *b == b'/')?;
        let mut dir = gd_socket[..cut].to_vec();
        dir.extend_from_slice(b"/vc");
        let mut buf = [0u8; 512];
        let path = sys::cstr(&dir, &mut buf)?;
        // SAFETY: a NUL-terminated path.
        unsafe { libc::mkdir(path, 0o700) };
        Some(Tracer {
            recording,
            dir,
            me,
            vc: vec![0; MAX_ACTORS],
            sides: Vec::new(),
            by_fd: Vec::new(),
            queue: VecDeque::with_capacity(QUEUE),
            skip: 0,
            watched: Vec::new(),
        })
    }

    /// A forked child: a new actor with the parent's clock (fork happens before the child's
    /// events) and nothing queued (the parent logs its own events).
    pub fn become_child(&mut self, me: u32) {
        self.me = me;
        self.queue.clear();
        self.skip = 0;
    }

    /// The side channel of `fd` in direction `dir` (TCP channels only).
    pub fn side(&mut self, fd: c_int, dir: Dir) -> Option<u32> {
        if let Some(known) = self.by_fd.iter().find(|s| s.fd == fd && s.dir == dir) {
            return Some(known.side);
        }
        let local = crate::fds::socket_addr(fd, false);
        let remote = crate::fds::socket_addr(fd, true);
        let inet = |a: &str| a.starts_with(|c: char| c.is_ascii_digit() || c == '[');
        if !inet(&local) || !inet(&remote) {
            return None;
        }
        let key = match dir {
            Dir::In => format!("{remote}>{local}"),
            Dir::Out => format!("{local}>{remote}"),
        };
        let index = match self.sides.iter().position(|s| s.is(key.as_bytes())) {
            Some(i) => i,
            None => {
                self.sides.push(Side::open(&self.dir, key.as_bytes())?);
                self.sides.len() - 1
            }
        } as u32;
        self.by_fd.push(FdSide {
            fd,
            dir,
            side: index,
        });
        Some(index)
    }

    /// The side channel files this process holds open (kept out of the program's close_range).
    pub fn own_fds(&self) -> impl Iterator<Item = c_int> + '_ {
        self.sides.iter().map(Side::fd)
    }

    /// `fd` was closed or replaced: forget which channel it was.
    pub fn forget_fd(&mut self, fd: c_int) {
        self.by_fd.retain(|s| s.fd != fd);
    }

    /// Before a send of `len` bytes on `fd` by the actor at event count `events`: describes it
    /// in the side channel. Returns what [`Tracer::after_send`] needs.
    pub fn before_send(&mut self, fd: c_int, len: usize, events: u64) -> Option<SendToken> {
        let side = self.side(fd, Dir::Out)?;
        let me = self.me as usize;
        if me < self.vc.len() {
            self.vc[me] = events.min(u32::MAX as u64) as u32;
        }
        let mut pairs = [ClockPair { actor: 0, count: 0 }; side::PAIRS];
        let mut n = 0;
        // Our own component first: it is the one a receiver of ours compares most.
        if me < self.vc.len() {
            pairs[0] = ClockPair {
                actor: self.me,
                count: self.vc[me],
            };
            n = 1;
        }
        for (actor, count) in self.vc.iter().enumerate() {
            if n == side::PAIRS {
                break;
            }
            if *count > 0 && actor != me {
                pairs[n] = ClockPair {
                    actor: actor as u32,
                    count: *count,
                };
                n += 1;
            }
        }
        let index = self.sides[side as usize].announce(len as u64, self.me, &pairs[..n]);
        Some(SendToken {
            side,
            index,
            len: len as u64,
        })
    }

    /// After that send returned `r`.
    pub fn after_send(&mut self, token: Option<SendToken>, r: isize) {
        if let Some(token) = token {
            self.sides[token.side as usize].sent(token.index, token.len, r);
        }
    }

    /// The bytes the untraced rule gives a receive of at most `len` bytes on `fd`: up to the
    /// end of the send that holds the next byte. `None` when no side channel describes the
    /// next byte yet.
    pub fn untraced_count(&mut self, fd: c_int, len: usize) -> Option<usize> {
        let side = self.side(fd, Dir::In)?;
        let s = &self.sides[side as usize];
        let at = s.received();
        let holding = s.holding(at)?;
        Some(((holding.end - at) as usize).min(len))
    }

    /// Whether `fd` has a side channel for what it receives.
    pub fn has_side(&mut self, fd: c_int) -> bool {
        self.side(fd, Dir::In).is_some()
    }

    /// A receive on `fd` got `r` bytes (`0`: end of stream): reads their
    /// descriptions, merges clocks, settles the events that waited for these messages, moves
    /// the offsets on. Returns the decision for this receive, and whether a side channel
    /// described the bytes (if not, they are input from outside and must be kept).
    pub fn received(&mut self, fd: c_int, len: usize, r: usize) -> (Decision, bool) {
        let Some(side) = self.side(fd, Dir::In) else {
            return (Decision::Logged, false);
        };
        if r == 0 {
            // End of stream: when the peer closed is not known.
            self.message(side, 0, true);
            return (Decision::Untraced, true);
        }
        let s = &self.sides[side as usize];
        let at = s.received();
        let Some(side::Holding {
            index: first,
            start,
            end,
        }) = s.holding(at)
        else {
            // Bytes nobody described: a peer without side channel. Keep offsets honest.
            self.sides[side as usize].consumed(r as u64, 0);
            return (Decision::Logged, false);
        };
        let want = ((end - at) as usize).min(len);
        let stop = at + r as u64;
        let mut index = if start == at { first } else { first + 1 };
        let mut cursor = first;
        while let Some(e) = self.sides[side as usize].entry(index) {
            if e.start >= stop {
                break;
            }
            cursor = index;
            if e.len > 0 {
                for pair in &e.pairs[..(e.count as usize).min(side::PAIRS)] {
                    if let Some(mine) = self.vc.get_mut(pair.actor as usize) {
                        *mine = (*mine).max(pair.count);
                    }
                }
                let seen = e.clock(self.me) as u64;
                self.message(side, seen, false);
            }
            index += 1;
        }
        self.sides[side as usize].consumed(r as u64, cursor);
        // The replay rule gives exactly `want` whatever the timing (it waits for those bytes
        // and takes no more), so a receive that got `want` needs no log; any other count is
        // one that timing made.
        let decision = if r == want {
            Decision::Untraced
        } else {
            Decision::Logged
        };
        (decision, true)
    }

    /// Replay: a receive on `fd` got `r` bytes; only the offsets move.
    pub fn replayed(&mut self, fd: c_int, r: isize) {
        if r <= 0 {
            return;
        }
        let Some(side) = self.side(fd, Dir::In) else {
            return;
        };
        let s = &self.sides[side as usize];
        let at = s.received() + r as u64;
        let cursor = s.holding(at.saturating_sub(1)).map_or(0, |h| h.index);
        s.consumed(r as u64, cursor);
    }

    /// A ready set that reported only `ready` (readable) out of the watched `fds`, at event
    /// `ordinal`: undecided on the other channels' next messages, or logged if one of them has
    /// no side channel.
    pub fn ready_one(&mut self, fds: &[c_int], ready: c_int) -> Decision {
        self.watched = fds.to_vec();
        let mut pending = Vec::new();
        for fd in fds {
            if *fd == ready {
                if !self.has_side(*fd) {
                    return Decision::Logged;
                }
                continue;
            }
            match self.side(*fd, Dir::In) {
                Some(s) => pending.push(s),
                None => return Decision::Logged,
            }
        }
        if pending.is_empty() {
            Decision::Untraced
        } else {
            Decision::Undecided { pending }
        }
    }

    /// A new message on channel `side` whose send had seen `seen` of our events: every queued
    /// event waiting on that channel with an ordinal above `seen` could have got it (raced).
    /// The end of the stream (`eof`) has no known clock: it could have been there for any
    /// ready set waiting on the channel.
    fn message(&mut self, side: u32, seen: u64, eof: bool) {
        for item in self.queue.iter_mut() {
            let Decision::Undecided { pending } = &mut item.decision else {
                continue;
            };
            if !pending.contains(&side) {
                continue;
            }
            if eof || seen < item.ordinal {
                item.decision = Decision::Logged;
            } else {
                pending.retain(|s| *s != side);
                if pending.is_empty() {
                    item.decision = Decision::Untraced;
                }
            }
        }
    }

    /// Queues event `ordinal`.
    pub fn push(&mut self, ordinal: u64, record: Record, decision: Decision) {
        if self.queue.len() >= QUEUE
            && let Some(old) = self
                .queue
                .iter_mut()
                .find(|i| matches!(i.decision, Decision::Undecided { .. }))
        {
            old.decision = Decision::Logged;
        }
        self.queue.push_back(Item {
            ordinal,
            record,
            decision,
        });
    }

    /// Logs every event still undecided (exec, exit).
    pub fn settle_all(&mut self) {
        for item in self.queue.iter_mut() {
            if matches!(item.decision, Decision::Undecided { .. }) {
                item.decision = Decision::Logged;
            }
        }
    }

    /// The next thing to write, if the queue's head is decided. `flush` also writes out a
    /// trailing run of untraced events.
    pub fn next_out(&mut self, flush: bool) -> Option<Out> {
        loop {
            match self.queue.front().map(|i| &i.decision) {
                Some(Decision::Untraced) => {
                    self.queue.pop_front();
                    self.skip += 1;
                }
                Some(Decision::Logged) => {
                    if self.skip > 0 {
                        return Some(Out::Skip(std::mem::take(&mut self.skip)));
                    }
                    let item = self.queue.pop_front()?;
                    return Some(Out::Record(item.record));
                }
                Some(Decision::Undecided { .. }) => return None,
                None => {
                    if flush && self.skip > 0 {
                        return Some(Out::Skip(std::mem::take(&mut self.skip)));
                    }
                    return None;
                }
            }
        }
    }
}
