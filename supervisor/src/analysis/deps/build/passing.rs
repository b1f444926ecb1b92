//! Descriptors passed over Unix sockets (`SCM_RIGHTS`): a receive that took fds binds their new
//! numbers to what the send that passed them had bound to the numbers it passed.
//!
//! A stream socket delivers the fds with the first byte of the send that passed them, and a
//! receive never takes the bytes of two such sends (the kernel stops it at the second), so
//! on each channel direction the *k*-th send that passed fds pairs with the *k*-th receive
//! that took fds. What a passed number is bound to is known only once its sender's walk has
//! reached that send, which may come after the receiver's (a child passing to its parent):
//! [`super::BindingWalk`] is run again with the pairs the last run found until they no longer
//! change (once per hand in the longest chain of hand-offs, plus one).

use super::{BindingWalk, ChannelId, Direction, End, Event};
use ddbx_wire::history::Record;
use std::collections::{BTreeMap, HashMap, HashSet};

/// For each receive that took fds: what each of its new numbers is bound to (`None`: a
/// descriptor that is not a channel end, or whose send was not found).
pub(super) type Received = HashMap<Event, Vec<Option<End>>>;

/// What one walk saw of passing, per channel direction, in the direction's order.
#[derive(Default)]
pub(super) struct Passing {
    /// The sends that passed fds: what each passed fd was bound to.
    sends: BTreeMap<(ChannelId, Direction), Vec<Vec<Option<End>>>>,
    /// The receives that took fds.
    takes: BTreeMap<(ChannelId, Direction), Vec<Event>>,
}

impl Passing {
    /// A send on `dir` of `channel` passed fds bound to `ends`.
    pub(super) fn sent(&mut self, (channel, dir): (ChannelId, Direction), ends: Vec<Option<End>>) {
        self.sends.entry((channel, dir)).or_default().push(ends);
    }

    /// The receive `here` on `dir` of `channel` took fds.
    pub(super) fn took(&mut self, (channel, dir): (ChannelId, Direction), here: Event) {
        self.takes.entry((channel, dir)).or_default().push(here);
    }

    /// Each receive that took fds, with what the send it pairs with passed.
    pub(super) fn received(&self) -> Received {
        let mut out = Received::new();
        for (key, takes) in &self.takes {
            let sends = self.sends.get(key).map(Vec::as_slice).unwrap_or_default();
            for (take, ends) in takes.iter().zip(sends) {
                out.insert(*take, ends.clone());
            }
        }
        out
    }
}

/// How many times the walk is made at most: once per hand in a chain of hand-offs of a
/// descriptor (plus one).
pub(super) const MAX_ROUNDS: u32 = 8;

impl BindingWalk<'_> {
    /// How many more walks may be made after this one (a diagnostic when none).
    pub(super) fn rounds_left(&self, diagnostics: &mut Vec<String>) -> u32 {
        let left = MAX_ROUNDS.saturating_sub(self.round + 1);
        if left == 0 {
            diagnostics.push(format!(
                "passed_fds: what the descriptors passed over Unix sockets are bound to did not settle in {MAX_ROUNDS} walks"
            ));
        }
        left
    }

    /// A send that passed fds (`SCM_RIGHTS`): noted with what they are bound to; a receive
    /// that took fds: their new numbers bound as the send it pairs with says ([`Passing`]).
    pub(super) fn pass(
        &mut self,
        fds: &mut HashMap<i32, End>,
        unused: &mut HashSet<i32>,
        r: &Record,
        here: Event,
    ) {
        match r {
            Record::Send { fd, passed, .. } if !passed.is_empty() => {
                if let Some(end) = fds.get(fd) {
                    let ends = passed.iter().map(|f| fds.get(f).copied()).collect();
                    self.passing.sent((end.channel, end.outgoing()), ends);
                }
            }
            Record::Recv { fd, passed, .. } if !passed.is_empty() => {
                if let Some(end) = fds.get(fd) {
                    self.passing.took((end.channel, end.incoming()), here);
                }
                let bound = self.received.get(&here).cloned().unwrap_or_default();
                for (i, new) in passed.iter().enumerate() {
                    self.let_go(fds, unused, *new, here);
                    if let Some(Some(end)) = bound.get(i) {
                        fds.insert(*new, *end);
                    }
                }
            }
            _ => {}
        }
    }
}
