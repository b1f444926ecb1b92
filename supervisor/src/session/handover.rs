//! Replay: connections that one process took from a listening socket it shares with others
//! (pre-fork workers) although another actor's recorded accept returned them.
//!
//! In the record, the kernel decided which worker's accept got which connection; in replay the
//! kernel decides again, differently. A worker whose next accept is not the connection at the
//! head of the shared queue takes it anyway, and, when its own plan does not need it, hands it
//! to the GD (`Handover`, the connection passed with `SCM_RIGHTS`). The GD passes it on to the
//! actor whose recorded accept returned it (`Deliver`), now or as soon as that actor's LD has
//! said hello; that LD keeps it until its accept asks for it.

use crate::session::ld_writer::LdWriter;
use ddbx_wire::ActorId;
use ddbx_wire::proto::{GdToLd, ReplayPlan};
use std::collections::HashMap;
use std::os::fd::OwnedFd;

/// Who made a connection: a connecting actor and its connect event (or an LD's own connection
/// standing for an outside peer: that actor and its accept event).
pub(crate) type Connector = (ActorId, u64);

/// A connection waiting for its actor's LD.
struct Waiting {
    owner: ActorId,
    connector: Connector,
    fd: OwnedFd,
}

/// The connections the GD is passing on, and where it can send them.
#[derive(Default)]
pub(crate) struct Handovers {
    /// Each actor's LD (its latest image).
    writers: HashMap<ActorId, LdWriter>,
    /// Connections whose actor has no LD yet.
    waiting: Vec<Waiting>,
}

impl Handovers {
    /// `actor`'s LD (its latest image) has been welcomed: connections waiting for it go now.
    pub(crate) fn attach(&mut self, actor: ActorId, writer: LdWriter) {
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|w| w.owner == actor);
        self.waiting = later;
        for w in now {
            deliver(&writer, w.connector, &w.fd);
        }
        self.writers.insert(actor, writer);
    }

    /// A connection handed over: to the actor whose recorded accept returned it.
    pub(crate) fn handover(
        &mut self,
        plans: &HashMap<ActorId, ReplayPlan>,
        connector: Connector,
        fd: OwnedFd,
    ) {
        let owner = owner(plans, connector);
        match self.writers.get(&owner) {
            Some(writer) => deliver(writer, connector, &fd),
            None => self.waiting.push(Waiting {
                owner,
                connector,
                fd,
            }),
        }
    }
}

/// The actor whose accept returned the connection `connector` made. An LD's own connection
/// for an outside peer belongs to that LD's actor (its accept event is no connect of anyone's).
fn owner(plans: &HashMap<ActorId, ReplayPlan>, connector: Connector) -> ActorId {
    plans
        .iter()
        .find(|(_, plan)| {
            plan.accepts
                .iter()
                .any(|a| (a.peer, a.peer_event) == connector)
        })
        .map_or(connector.0, |(actor, _)| *actor)
}

/// Sends one connection to an LD (dropped if that LD is gone: its process is too).
fn deliver(writer: &LdWriter, connector: Connector, fd: &OwnedFd) {
    writer.send_with_fd(&GdToLd::Deliver { connector }, fd);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddbx_wire::proto::AcceptPlan;

    #[test]
    fn a_connection_belongs_to_the_actor_whose_plan_accepts_it() {
        let plan = |accepts: Vec<AcceptPlan>| ReplayPlan {
            accepts,
            ..ReplayPlan::default()
        };
        let plans: HashMap<ActorId, ReplayPlan> = [
            (
                ActorId(3),
                plan(vec![AcceptPlan {
                    event: 5,
                    peer: ActorId(7),
                    peer_event: 2,
                }]),
            ),
            (ActorId(4), plan(Vec::new())),
        ]
        .into_iter()
        .collect();
        assert_eq!(owner(&plans, (ActorId(7), 2)), ActorId(3));
        // An LD's own connection for an outside peer of its accept 9.
        assert_eq!(owner(&plans, (ActorId(4), 9)), ActorId(4));
    }
}
