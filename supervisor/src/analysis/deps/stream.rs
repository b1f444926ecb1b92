//! One direction of a channel, settled: its bytes numbered in sending order, each receive
//! given the bytes it consumed, and the data and readiness needs that follow (see the module
//! docs of [`super`], "data" and "readiness").

use super::{ChannelId, DataRange, Deps, Direction, Event, list};
use ddbx_wire::ActorId;
use std::collections::BTreeSet;

/// A send or receive of a direction: its event and how many bytes it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct StreamUse {
    pub(super) event: Event,
    pub(super) bytes: u64,
    /// A write into a pipe of the session: how many writes into it came before.
    pub(super) turn: Option<u64>,
}

impl StreamUse {
    /// Event `event`, which took `bytes` bytes.
    pub(super) fn of(event: Event, bytes: u64) -> StreamUse {
        StreamUse {
            event,
            bytes,
            turn: None,
        }
    }
}

/// The sends, receives and readiness queries of one direction of one channel.
#[derive(Default)]
pub(super) struct Stream {
    pub(super) sends: Vec<StreamUse>,
    pub(super) recvs: Vec<StreamUse>,
    /// `Peek` events: receives with `MSG_PEEK`, which see bytes without consuming them.
    pub(super) peeks: Vec<StreamUse>,
    /// `Ready` events reporting `in` on a receiving end.
    pub(super) readies: Vec<Event>,
    /// `Ready` events reporting `hup` or `rdhup` on a receiving end: the end of the stream.
    pub(super) hangups: Vec<Event>,
}

/// What a direction's receives and sends came to, for its peeks.
struct Seen<'a> {
    /// `prefix[i]`: the bytes consumed by the first `i` receives.
    prefix: &'a [u64],
    /// The offset after each send, and the send.
    ends: &'a [(u64, Event)],
    /// The bytes sent in all.
    total: u64,
}

/// The send of byte `byte`: the first send whose end is past it (`ends` as in [`Seen`]).
fn sender_of(ends: &[(u64, Event)], byte: u64) -> Option<Event> {
    let i = ends.partition_point(|(end, _)| *end <= byte);
    ends.get(i).map(|(_, e)| *e)
}

impl Deps {
    /// Numbers the bytes of one direction and adds the data, peek and readiness needs. Returns
    /// the events that saw the end of the stream (a 0-byte receive or peek, `in` with every
    /// byte sent consumed, `hup`/`rdhup`), which also need the sending end let go of.
    pub(super) fn settle_stream(
        &mut self,
        channel: ChannelId,
        dir: Direction,
        s: &mut Stream,
    ) -> Vec<Event> {
        let mut ends_of_stream = s.hangups.clone();
        s.sends.sort();
        s.recvs.sort();
        s.readies.sort();
        s.peeks.sort();
        if !s.sends.is_empty() && s.sends.iter().all(|u| u.turn.is_some()) {
            // A pipe: its writes are numbered in the order the pipe took them, whoever made
            // them, and each waits in replay for the one before it.
            s.sends.sort_by_key(|u| u.turn);
            for w in s.sends.windows(2) {
                self.add_need(w[1].event, w[0].event);
            }
        } else {
            self.check_hand_offs(channel, dir, s);
        }
        let range = |start, end| DataRange {
            channel,
            direction: dir,
            start,
            end,
        };
        // ends[i]: the offset after send i; byte b was sent by the first send with end > b.
        let mut ends: Vec<(u64, Event)> = Vec::with_capacity(s.sends.len());
        let mut total = 0;
        for send in &s.sends {
            self.data
                .insert(send.event, range(total, total + send.bytes));
            total += send.bytes;
            ends.push((total, send.event));
        }
        let sender_of = |byte: u64| sender_of(&ends, byte);
        let last_send = ends.iter().rev().find(|(end, _)| *end > 0).map(|(_, e)| *e);
        let mut consumed = 0;
        // prefix[i]: the bytes consumed by the first i receives.
        let mut prefix = Vec::with_capacity(s.recvs.len() + 1);
        prefix.push(0);
        for recv in &s.recvs {
            let ((a, k), n) = (recv.event, recv.bytes);
            self.data.insert(recv.event, range(consumed, consumed + n));
            let need = if n == 0 {
                ends_of_stream.push(recv.event);
                if consumed < total {
                    self.diagnostics.push(format!(
                        "early_eof: {a} event {k} saw the end of channel {channel} {dir} at byte {consumed}, but {total} bytes were sent"
                    ));
                }
                last_send
            } else if consumed + n <= total {
                sender_of(consumed + n - 1)
            } else {
                self.diagnostics.push(format!(
                    "unsent_bytes: {a} event {k} received bytes [{consumed}, {}) of channel {channel} {dir}, but only {total} were sent",
                    consumed + n
                ));
                if total > 0 {
                    sender_of((consumed + n).min(total) - 1)
                } else {
                    None
                }
            };
            if let Some(e) = need {
                self.add_need(recv.event, e);
            }
            consumed += n;
            prefix.push(consumed);
        }
        let seen = Seen {
            prefix: &prefix,
            ends: &ends,
            total,
        };
        ends_of_stream.extend(self.peek_needs(channel, dir, s, &seen));
        for &ready in &s.readies {
            let before = s.recvs.partition_point(|r| r.event < ready);
            let offset = prefix[before];
            let need = if offset < total {
                sender_of(offset)
            } else {
                ends_of_stream.push(ready);
                last_send
            };
            if let Some(e) = need {
                self.add_need(ready, e);
            }
        }
        ends_of_stream.sort();
        ends_of_stream.dedup();
        ends_of_stream
    }

    /// The needs of a direction's peeks: each needs the send of the last byte it saw, counted
    /// from where the receives before it left off (it consumes nothing). Returns the peeks
    /// that saw the end of the stream.
    fn peek_needs(
        &mut self,
        channel: ChannelId,
        dir: Direction,
        s: &Stream,
        seen: &Seen,
    ) -> Vec<Event> {
        let mut ends_of_stream = Vec::new();
        let total = seen.total;
        let last_send = seen
            .ends
            .iter()
            .rev()
            .find(|(end, _)| *end > 0)
            .map(|(_, e)| *e);
        for peek in &s.peeks {
            let ((a, k), n) = (peek.event, peek.bytes);
            let offset = seen.prefix[s.recvs.partition_point(|r| r.event < peek.event)];
            let need = if n == 0 {
                ends_of_stream.push(peek.event);
                last_send
            } else if offset + n <= total {
                sender_of(seen.ends, offset + n - 1)
            } else {
                self.diagnostics.push(format!(
                    "unsent_bytes: {a} event {k} peeked at bytes [{offset}, {}) of channel {channel} {dir}, but only {total} were sent",
                    offset + n
                ));
                (total > offset)
                    .then(|| sender_of(seen.ends, total - 1))
                    .flatten()
            };
            if let Some(e) = need {
                self.add_need(peek.event, e);
            }
        }
        ends_of_stream
    }

    /// Reports a direction whose sends, or whose receives, several actors made in an order
    /// that numbering by (actor, event) may not get right.
    fn check_hand_offs(&mut self, channel: ChannelId, dir: Direction, s: &Stream) {
        for (uses, keyword, verb, how) in [
            (&s.sends, "shared_send_end", "sent on", "bytes numbered"),
            (
                &s.recvs,
                "shared_recv_end",
                "received from",
                "bytes consumed",
            ),
        ] {
            if !self.handed_off(uses) {
                let actors: BTreeSet<ActorId> = uses.iter().map(|u| u.event.0).collect();
                self.diagnostics.push(format!(
                    "{keyword}: channel {channel} {dir} is {verb} by {}; {how} by actor then event (not exact)",
                    list(&actors)
                ));
            }
        }
    }

    /// Whether uses of an end sorted by (actor, event) are in their real order: one actor
    /// only, or each actor's last use comes before the fork by which the next actor descends
    /// from it.
    fn handed_off(&self, uses: &[StreamUse]) -> bool {
        uses.windows(2).all(|w| {
            let ((x, last), (y, _)) = (w[0].event, w[1].event);
            x == y || self.forked_after(x, last, y)
        })
    }

    /// Whether `y` descends from `x` through a fork or spawn that `x` made after its event
    /// `event`.
    pub(super) fn forked_after(&self, x: ActorId, event: u64, y: ActorId) -> bool {
        let mut cur = y;
        for _ in 0..=self.actors.len() {
            match self.forked_at.get(&cur) {
                Some(&(parent, fork)) if parent == x => return fork > event,
                Some(&(parent, _)) => cur = parent,
                None => return false,
            }
        }
        false
    }
}
