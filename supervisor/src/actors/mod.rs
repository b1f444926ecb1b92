//! Actor resolution: which logical actor a new process image is, decided from its `Hello`.
//!
//! This is a pure state machine (no sockets, no processes) so that the rules can be tested as
//! tables. The rules, in order:
//!
//! 1. `pid` belongs to a known actor whose process has not exited (and, when both are known,
//!    has the same process start time): the image is an **exec** of that actor. Also when
//!    the actor's end was told already but the image does not claim a fork and the start
//!    times match or the process is gone by now (killed as its new image said hello, its
//!    parent's reap was read first on another connection).
//! 2. `Claim::Spawn{parent: p0, index: 1}` with `ppid` == ddbx's pid: the **root**.
//! 3. `Claim::Fork{parent, index}` / `Claim::Spawn{parent, index}`: that origin.
//! 4. `Claim::Unknown`: **unhooked** child of the actor whose live pid is `ppid` (`p0` when
//!    none), numbered 1, 2, … per parent in the order the GD sees them.
//!
//! Recording gives a new origin the next id (`p1` is reserved for the root; the others get
//! `p2`, `p3`, … in arrival order). Replay looks the origin up in the recorded manifest and
//! refuses a process the record did not have.

mod resolve;

pub use resolve::{HelloFacts, Resolution, describe};

use ddbx_wire::ActorId;
use ddbx_wire::history::Origin;
use ddbx_wire::manifest::{ActorInfo, ExitStatus, Reap};
use std::collections::HashMap;

/// At most this many signals wait for their target's `Hello` ([`Registry::signalled`]).
const MAX_UNPLACED: usize = 256;

/// Whether the registry hands out new ids or follows a recording.
#[derive(Debug, Clone)]
enum Mode {
    /// Record: the next id to hand out, and the actors of an earlier recording whose ids a
    /// new process created the same way takes (a steered record, `ddbx explore`).
    Record { next_id: u32, like: Vec<ActorInfo> },
    /// Replay: the recorded actors, looked up by origin; and the children the record created
    /// that never joined (killed before their `Hello`), with the ids they get here.
    Replay {
        recorded: Vec<ActorInfo>,
        unjoined: Vec<(Origin, ActorId)>,
    },
}

/// A process the registry has seen.
#[derive(Debug, Clone)]
struct Proc {
    actor: ActorId,
    start_time: Option<u64>,
    exited: bool,
}

/// The GD's table of actors and of the processes that are (or were) them.
#[derive(Debug, Clone)]
pub struct Registry {
    mode: Mode,
    ddbx_pid: i32,
    host: String,
    procs: HashMap<i32, Proc>,
    actors: Vec<ActorInfo>,
    /// Unhooked children numbered so far, per parent.
    unhooked: HashMap<ActorId, u32>,
    /// Signals sent to a pid no actor had yet (`pid`, sender, signal): a script's `cmd &
    /// kill $!` whose kill was read before the child's `Hello` (another connection). Given to
    /// the actor that pid becomes.
    unplaced: Vec<(i32, ActorId, i32)>,
}

impl Registry {
    /// A registry for recording; `ddbx_pid` is the supervisor's own pid, `host` the host name
    /// stored in each new [`ActorInfo`].
    pub fn for_record(ddbx_pid: i32, host: &str) -> Registry {
        Registry::new(
            Mode::Record {
                next_id: 2,
                like: Vec::new(),
            },
            ddbx_pid,
            host,
        )
    }

    /// A registry for recording that names a new process as the actor of `like` (an earlier
    /// recording's actors) created the same way, when there is one; the others get ids above
    /// all of `like`'s.
    pub fn for_record_like(ddbx_pid: i32, host: &str, like: Vec<ActorInfo>) -> Registry {
        let next_id = like.iter().map(|a| a.id.0 + 1).max().unwrap_or(2).max(2);
        Registry::new(Mode::Record { next_id, like }, ddbx_pid, host)
    }

    /// A registry for replaying the recorded actors `recorded` (the recording's manifest).
    pub fn for_replay(ddbx_pid: i32, host: &str, recorded: Vec<ActorInfo>) -> Registry {
        Registry::new(
            Mode::Replay {
                recorded,
                unjoined: Vec::new(),
            },
            ddbx_pid,
            host,
        )
    }

    /// The same registry, expecting in replay the children of `unjoined` origins: created by
    /// the record (their parents' histories have the fork) but killed before they joined
    /// (a run that ended at a live halt, a kill right after a fork). Each gets an id above
    /// the recorded ones; with no history, it waits at its end until the replay ends.
    pub fn expecting_unjoined(mut self, unjoined: Vec<Origin>) -> Registry {
        if let Mode::Replay {
            recorded,
            unjoined: expected,
        } = &mut self.mode
        {
            let first = recorded.iter().map(|a| a.id.0 + 1).max().unwrap_or(2);
            *expected = unjoined
                .into_iter()
                .zip(first..)
                .map(|(origin, n)| (origin, ActorId(n)))
                .collect();
        }
        self
    }

    fn new(mode: Mode, ddbx_pid: i32, host: &str) -> Registry {
        Registry {
            mode,
            ddbx_pid,
            host: host.to_string(),
            procs: HashMap::new(),
            actors: Vec::new(),
            unplaced: Vec::new(),
            unhooked: HashMap::new(),
        }
    }

    /// The actors created so far in this run, in creation order. In record they are the
    /// manifest's actors (with their exit statuses as learnt); in replay, the recorded actors
    /// that have appeared, with this run's pids.
    pub fn actors(&self) -> &[ActorInfo] {
        &self.actors
    }

    /// The actor whose live process has this pid.
    pub fn live_actor(&self, pid: i32) -> Option<ActorId> {
        self.procs.get(&pid).filter(|p| !p.exited).map(|p| p.actor)
    }

    /// The actor the process `pid` is or was (the latest one, if the pid was reused).
    pub fn actor_of_pid(&self, pid: i32) -> Option<ActorId> {
        self.procs.get(&pid).map(|p| p.actor)
    }

    /// Whether `actor` has appeared and every process it was has exited.
    pub fn has_exited(&self, actor: ActorId) -> bool {
        let mut procs = self.procs.values().filter(|p| p.actor == actor).peekable();
        procs.peek().is_some() && procs.all(|p| p.exited)
    }

    /// The pids of every process that is an actor and has not exited, as far as the GD knows.
    pub fn live_pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self
            .procs
            .iter()
            .filter(|(_, p)| !p.exited)
            .map(|(pid, _)| *pid)
            .collect();
        pids.sort_unstable();
        pids
    }

    /// The pids of the processes that are or were actors and have exited (or said they exit).
    pub fn exited_pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self
            .procs
            .iter()
            .filter(|(_, p)| p.exited)
            .map(|(pid, _)| *pid)
            .collect();
        pids.sort_unstable();
        pids
    }

    /// The process `pid` has exited (its `Exiting` arrived, or ddbx reaped it); `status`, when
    /// known, becomes its actor's exit status (a status from `waitpid` should be passed last:
    /// the latest call wins).
    pub fn exited(&mut self, pid: i32, status: Option<ExitStatus>) {
        let Some(proc) = self.procs.get_mut(&pid) else {
            return;
        };
        proc.exited = true;
        let actor = proc.actor;
        if let Some(status) = status
            && let Some(info) = self.info_mut(actor)
        {
            info.exit = Some(status);
        }
    }

    /// Record: the process `pid` reaped its child `child_pid` after `events` events.
    pub fn reaped(&mut self, pid: i32, events: u64, child_pid: i32) {
        let (Some(parent), Some(child)) = (self.procs.get(&pid), self.procs.get(&child_pid)) else {
            return;
        };
        let (parent, child) = (parent.actor, child.actor);
        if let Some(info) = self.info_mut(parent) {
            info.reaps.push(Reap {
                after: events,
                child,
            });
        }
    }

    /// Actor `by` sent signal `sig` to process `pid` (kill(2)); remembered on the receiving
    /// actor when `pid` is an actor (signals to other processes are not ours to explain): a
    /// live one, else the last one with that pid, which may have died of this very signal
    /// before the note came (a kill made by a signal handler is told at the sender's next
    /// hook: `timeout`'s kill of its group ended a grandchild that ddbx reaped first).
    pub fn signalled(&mut self, pid: i32, by: ActorId, sig: i32) {
        let Some(target) = self.live_actor(pid).or_else(|| self.actor_of_pid(pid)) else {
            if self.unplaced.len() < MAX_UNPLACED {
                self.unplaced.push((pid, by, sig));
            }
            return;
        };
        if let Some(info) = self.info_mut(target)
            && !info.signalled_by.contains(&(by, sig))
        {
            info.signalled_by.push((by, sig));
        }
    }

    /// What the registry knows of `actor`.
    fn info(&self, actor: ActorId) -> Option<&ActorInfo> {
        self.actors.iter().find(|a| a.id == actor)
    }

    fn info_mut(&mut self, actor: ActorId) -> Option<&mut ActorInfo> {
        self.actors.iter_mut().find(|a| a.id == actor)
    }
}

#[cfg(test)]
mod tests;
