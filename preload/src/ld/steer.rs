//! A steered record (`ddbx explore`): a live run, recorded as usual, whose messages the GD puts
//! in an order of its choosing by holding their senders. The plan (`SteerPlan`, from the
//! `Welcome`) names the events this actor must ask for before making them (a send or a connect
//! that must come after some other actor's receive) and the events it must tell the GD of once
//! made (a receive others wait for). Nothing else changes: the events are the record's.

use super::Ld;
use ddbx_wire::proto::{GdToLd, LdToGd};

impl Ld {
    /// Record: before making the next event, waits for the GD's `Go` if the plan holds it.
    /// The wait is inside the hook, so no handler of the program runs during it.
    pub fn steer_before(&mut self) {
        let next = self.events() + 1;
        if self
            .steer
            .as_ref()
            .is_none_or(|plan| plan.hold.binary_search(&next).is_err())
        {
            return;
        }
        self.send(&LdToGd::Hold {
            actor: self.actor,
            event: next,
        });
        // The GD answers every hold (at the latest when it gives up waiting); a GD gone ends
        // the wait too.
        while let Some(message) = self.receive() {
            if message == (GdToLd::Go { event: next }) {
                return;
            }
        }
    }

    /// Record: after an event, tells the GD of it if the plan reports it.
    pub(super) fn steer_after(&mut self) {
        let done = self.events();
        if self
            .steer
            .as_ref()
            .is_some_and(|plan| plan.report.binary_search(&done).is_ok())
        {
            self.send(&LdToGd::Did {
                actor: self.actor,
                event: done,
            });
        }
    }
}
