//! Actor resolution: which logical actor a new process image is, decided from its `Hello`.
//!
//! This is a pure state machine (no sockets, no processes) so that the rules can be tested as
//! tables. The rules, in order:
//!
//! 1. `pid` belongs to a known actor whose process has not exited (and, when both are known,
//!    has the same process start time): the image is an **exec** of that actor.
//! 2. `Claim::Spawn{parent: p0, index: 1}` with `ppid` == ddbx's pid: the **root**.
//! 3. `Claim::Fork{parent, index}` / `Claim::Spawn{parent, index}`: that origin.
//! 4. `Claim::Unknown`: **unhooked** child of the actor whose live pid is `ppid` (`p0` when
//!    none), numbered 1, 2, … per parent in the order the GD sees them.
//!
//! Recording gives a new origin the next id (`p1` is reserved for the root; the others get
//! `p2`, `p3`, … in arrival order). Replay looks the origin up in the recorded manifest and
//! refuses a process the record did not have.

use ddbx_wire::history::Origin;
use ddbx_wire::manifest::ActorInfo;
use ddbx_wire::proto::Claim;
use ddbx_wire::{ActorId, PROTOCOL_VERSION};
use std::collections::HashMap;

/// What a `Hello` says, plus what the GD learnt about the process on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelloFacts {
    /// The protocol version the LD speaks.
    pub protocol: u32,
    /// The process.
    pub pid: i32,
    /// Its parent.
    pub ppid: i32,
    /// What it knows of its origin.
    pub claim: Claim,
    /// Its program and arguments.
    pub argv: Vec<String>,
    /// The process's start time (`/proc/<pid>/stat` field 22), when it could be read; it tells
    /// an exec (same process) from a new process that reuses the pid.
    pub start_time: Option<u64>,
}

/// The registry's answer to a `Hello`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The process is this actor.
    Welcome {
        /// Its id.
        actor: ActorId,
        /// Its origin (an exec'd image gets its actor's origin).
        origin: Origin,
        /// Whether this image continues an actor after exec.
        exec: bool,
        /// Record: the actor is new and was appended to [`Registry::actors`].
        new_actor: bool,
    },
    /// The process must not run under this session.
    Refuse {
        /// Why, as one sentence.
        why: String,
        /// The process's origin, when it could be worked out.
        origin: Option<Origin>,
    },
}

/// Whether the registry hands out new ids or follows a recording.
#[derive(Debug, Clone)]
enum Mode {
    Record { next_id: u32 },
    Replay { recorded: Vec<ActorInfo> },
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
    unhooked: HashMap<ActorId, u32>,
}

impl Registry {
    /// A registry for recording; `ddbx_pid` is the supervisor's own pid, `host` the host name
    /// stored in each new [`ActorInfo`].
    pub fn for_record(ddbx_pid: i32, host: &str) -> Registry {
        Registry::new(Mode::Record { next_id: 2 }, ddbx_pid, host)
    }

    /// A registry for replaying the recorded actors `recorded` (the recording's manifest).
    pub fn for_replay(ddbx_pid: i32, host: &str, recorded: Vec<ActorInfo>) -> Registry {
        Registry::new(Mode::Replay { recorded }, ddbx_pid, host)
    }

    fn new(mode: Mode, ddbx_pid: i32, host: &str) -> Registry {
        Registry {
            mode,
            ddbx_pid,
            host: host.to_string(),
            procs: HashMap::new(),
            actors: Vec::new(),
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

    /// The process `pid` has exited (its `Exiting` arrived, or ddbx reaped it); `status`, when
    /// known, becomes its actor's exit status (a status from `waitpid` should be passed last:
    /// the latest call wins).
    pub fn exited(&mut self, pid: i32, status: Option<ddbx_wire::manifest::ExitStatus>) {
        let Some(proc) = self.procs.get_mut(&pid) else {
            return;
        };
        proc.exited = true;
        let actor = proc.actor;
        if let Some(status) = status
            && let Some(info) = self.actors.iter_mut().find(|a| a.id == actor)
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
        if let Some(info) = self.actors.iter_mut().find(|a| a.id == parent) {
            info.reaps.push(ddbx_wire::manifest::Reap {
                after: events,
                child,
            });
        }
    }

    /// Actor `by` sent signal `sig` to process `pid` (kill(2)); remembered on the receiving
    /// actor when `pid` is a live actor (signals to other processes are not ours to explain).
    pub fn signalled(&mut self, pid: i32, by: ActorId, sig: i32) {
        let Some(target) = self.live_actor(pid) else {
            return;
        };
        if let Some(info) = self.actors.iter_mut().find(|a| a.id == target)
            && !info.signalled_by.contains(&(by, sig))
        {
            info.signalled_by.push((by, sig));
        }
    }

    /// Decides who a new process image is (see the module doc for the rules).
    pub fn hello(&mut self, facts: &HelloFacts) -> Resolution {
        if facts.protocol != PROTOCOL_VERSION {
            return Resolution::Refuse {
                why: format!(
                    "the preload speaks protocol version {}, this ddbx speaks {PROTOCOL_VERSION} \
                     (is DDBX_PRELOAD pointing at an older or newer libddbx_preload.so?)",
                    facts.protocol
                ),
                origin: None,
            };
        }
        // Rule 1: an exec of a live actor.
        if let Some(proc) = self.procs.get(&facts.pid)
            && !proc.exited
            && same_process(proc.start_time, facts.start_time)
        {
            let actor = proc.actor;
            let origin = self
                .actors
                .iter()
                .find(|a| a.id == actor)
                .map(|a| a.origin)
                .unwrap_or(Origin::Root);
            return Resolution::Welcome {
                actor,
                origin,
                exec: true,
                new_actor: false,
            };
        }
        let origin = self.origin_of(facts);
        let known = self
            .actors
            .iter()
            .find(|a| a.origin == origin)
            .map(|a| a.id);
        let resolution = match (&mut self.mode, known) {
            (_, Some(taken)) => {
                return Resolution::Refuse {
                    why: format!(
                        "two processes claim to be {} (created as {}): pid {} is already that actor",
                        taken,
                        describe(origin),
                        self.actors
                            .iter()
                            .find(|a| a.id == taken)
                            .map(|a| a.pid)
                            .unwrap_or(0)
                    ),
                    origin: Some(origin),
                };
            }
            (Mode::Record { next_id }, None) => {
                let actor = if origin == Origin::Root {
                    ActorId::ROOT
                } else {
                    let id = ActorId(*next_id);
                    *next_id += 1;
                    id
                };
                Resolution::Welcome {
                    actor,
                    origin,
                    exec: false,
                    new_actor: true,
                }
            }
            (Mode::Replay { recorded }, None) => {
                match recorded.iter().find(|a| a.origin == origin) {
                    Some(info) => Resolution::Welcome {
                        actor: info.id,
                        origin,
                        exec: false,
                        new_actor: true,
                    },
                    None => {
                        return Resolution::Refuse {
                            why: format!(
                                "a process the record did not have: created as {}",
                                describe(origin)
                            ),
                            origin: Some(origin),
                        };
                    }
                }
            }
        };
        if let Resolution::Welcome { actor, .. } = resolution {
            self.procs.insert(
                facts.pid,
                Proc {
                    actor,
                    start_time: facts.start_time,
                    exited: false,
                },
            );
            self.actors.push(ActorInfo {
                id: actor,
                origin,
                pid: facts.pid,
                argv: facts.argv.clone(),
                host: self.host.clone(),
                exit: None,
                reaps: Vec::new(),
                signalled_by: Vec::new(),
            });
        }
        resolution
    }

    /// Rules 2–4: the origin of a process that is not an exec of a live actor.
    fn origin_of(&mut self, facts: &HelloFacts) -> Origin {
        let root_taken = self.actors.iter().any(|a| a.origin == Origin::Root);
        match facts.claim {
            Claim::Spawn { parent, index: 1 }
                if parent == ActorId::DDBX && facts.ppid == self.ddbx_pid && !root_taken =>
            {
                return Origin::Root;
            }
            Claim::Fork { parent, index } if parent != ActorId::DDBX => {
                return Origin::Fork { parent, index };
            }
            Claim::Spawn { parent, index } if parent != ActorId::DDBX => {
                return Origin::Spawn { parent, index };
            }
            // A stale root claim (a re-parented orphan that inherited the root's environment)
            // or Unknown: decide from the parent pid.
            _ => {}
        }
        let parent = self.live_actor(facts.ppid).unwrap_or(ActorId::DDBX);
        let count = self.unhooked.entry(parent).or_insert(0);
        *count += 1;
        Origin::Unhooked {
            parent,
            index: *count,
        }
    }
}

/// Whether two start times name the same process (unknown ones are given the benefit of it).
fn same_process(known: Option<u64>, now: Option<u64>) -> bool {
    match (known, now) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// An origin in words: `Fork{parent: p3, index: 2}`.
pub fn describe(origin: Origin) -> String {
    match origin {
        Origin::Root => "Root".to_string(),
        Origin::Fork { parent, index } => format!("Fork{{parent: {parent}, index: {index}}}"),
        Origin::Spawn { parent, index } => format!("Spawn{{parent: {parent}, index: {index}}}"),
        Origin::Unhooked { parent, index } => {
            format!("Unhooked{{parent: {parent}, index: {index}}}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddbx_wire::manifest::ExitStatus;

    const DDBX: i32 = 1000;

    fn hello(pid: i32, ppid: i32, claim: Claim) -> HelloFacts {
        HelloFacts {
            protocol: PROTOCOL_VERSION,
            pid,
            ppid,
            claim,
            argv: vec![format!("./prog{pid}")],
            start_time: Some(pid as u64 * 10),
        }
    }

    fn welcome(actor: u32, origin: Origin, exec: bool, new_actor: bool) -> Resolution {
        Resolution::Welcome {
            actor: ActorId(actor),
            origin,
            exec,
            new_actor,
        }
    }

    fn p(n: u32) -> ActorId {
        ActorId(n)
    }

    const ROOT_CLAIM: Claim = Claim::Spawn {
        parent: ActorId(0),
        index: 1,
    };

    #[test]
    fn record_table() {
        let mut reg = Registry::for_record(DDBX, "h");
        let fork = |parent, index| Claim::Fork {
            parent: p(parent),
            index,
        };
        let table: Vec<(HelloFacts, Resolution)> = vec![
            (
                hello(10, DDBX, ROOT_CLAIM),
                welcome(1, Origin::Root, false, true),
            ),
            // exec of the root: same pid, same start time
            (
                hello(10, DDBX, ROOT_CLAIM),
                welcome(1, Origin::Root, true, false),
            ),
            (
                hello(11, 10, fork(1, 1)),
                welcome(
                    2,
                    Origin::Fork {
                        parent: p(1),
                        index: 1,
                    },
                    false,
                    true,
                ),
            ),
            (
                hello(
                    12,
                    10,
                    Claim::Spawn {
                        parent: p(1),
                        index: 2,
                    },
                ),
                welcome(
                    3,
                    Origin::Spawn {
                        parent: p(1),
                        index: 2,
                    },
                    false,
                    true,
                ),
            ),
            (
                hello(13, 11, Claim::Unknown),
                welcome(
                    4,
                    Origin::Unhooked {
                        parent: p(2),
                        index: 1,
                    },
                    false,
                    true,
                ),
            ),
            (
                hello(14, 11, Claim::Unknown),
                welcome(
                    5,
                    Origin::Unhooked {
                        parent: p(2),
                        index: 2,
                    },
                    false,
                    true,
                ),
            ),
            // parent pid unknown: attached to ddbx itself
            (
                hello(15, 4242, Claim::Unknown),
                welcome(
                    6,
                    Origin::Unhooked {
                        parent: p(0),
                        index: 1,
                    },
                    false,
                    true,
                ),
            ),
            // an orphan re-parented to ddbx with the root's environment: not a second root
            (
                hello(16, DDBX, ROOT_CLAIM),
                welcome(
                    7,
                    Origin::Unhooked {
                        parent: p(0),
                        index: 2,
                    },
                    false,
                    true,
                ),
            ),
        ];
        for (i, (facts, expected)) in table.into_iter().enumerate() {
            assert_eq!(reg.hello(&facts), expected, "row {i}: {facts:?}");
        }
        let ids: Vec<u32> = reg.actors().iter().map(|a| a.id.0).collect();
        assert_eq!(ids, vec![1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(reg.actors()[1].argv, vec!["./prog11".to_string()]);
        assert_eq!(reg.actors()[1].host, "h");
    }

    #[test]
    fn exited_pids_are_free_for_new_processes() {
        let mut reg = Registry::for_record(DDBX, "h");
        reg.hello(&hello(10, DDBX, ROOT_CLAIM));
        reg.hello(&hello(
            11,
            10,
            Claim::Fork {
                parent: p(1),
                index: 1,
            },
        ));
        reg.exited(11, Some(ExitStatus::Exited(3)));
        assert_eq!(reg.live_actor(11), None);
        assert_eq!(reg.actors()[1].exit, Some(ExitStatus::Exited(3)));
        // pid 11 reused by the root's second child
        let r = reg.hello(&hello(
            11,
            10,
            Claim::Fork {
                parent: p(1),
                index: 2,
            },
        ));
        assert_eq!(
            r,
            welcome(
                3,
                Origin::Fork {
                    parent: p(1),
                    index: 2
                },
                false,
                true
            )
        );
        // a reused pid whose exit the GD never heard of: the start time tells them apart
        let mut other = hello(
            11,
            10,
            Claim::Fork {
                parent: p(1),
                index: 3,
            },
        );
        other.start_time = Some(999);
        let r = reg.hello(&other);
        assert_eq!(
            r,
            welcome(
                4,
                Origin::Fork {
                    parent: p(1),
                    index: 3
                },
                false,
                true
            )
        );
        assert_eq!(reg.live_pids(), vec![10, 11]);
    }

    #[test]
    fn duplicate_origins_and_wrong_protocols_are_refused() {
        let mut reg = Registry::for_record(DDBX, "h");
        reg.hello(&hello(10, DDBX, ROOT_CLAIM));
        reg.hello(&hello(
            11,
            10,
            Claim::Fork {
                parent: p(1),
                index: 1,
            },
        ));
        let r = reg.hello(&hello(
            12,
            10,
            Claim::Fork {
                parent: p(1),
                index: 1,
            },
        ));
        assert!(
            matches!(r, Resolution::Refuse { ref why, .. } if why.contains("p2")),
            "{r:?}"
        );
        let mut old = hello(13, 10, Claim::Unknown);
        old.protocol = PROTOCOL_VERSION + 1;
        let r = reg.hello(&old);
        assert!(
            matches!(r, Resolution::Refuse { ref why, .. } if why.contains("protocol")),
            "{r:?}"
        );
    }

    fn recorded(id: u32, origin: Origin) -> ActorInfo {
        ActorInfo {
            id: p(id),
            origin,
            pid: 500 + id as i32,
            argv: vec!["./x".into()],
            host: "h".into(),
            exit: Some(ExitStatus::Exited(0)),
            reaps: Vec::new(),
            signalled_by: Vec::new(),
        }
    }

    #[test]
    fn replay_table() {
        let manifest = vec![
            recorded(1, Origin::Root),
            recorded(
                2,
                Origin::Fork {
                    parent: p(1),
                    index: 2,
                },
            ),
            recorded(
                3,
                Origin::Fork {
                    parent: p(1),
                    index: 1,
                },
            ),
            recorded(
                4,
                Origin::Unhooked {
                    parent: p(3),
                    index: 1,
                },
            ),
        ];
        let mut reg = Registry::for_replay(DDBX, "h", manifest);
        let table: Vec<(HelloFacts, Resolution)> = vec![
            (
                hello(20, DDBX, ROOT_CLAIM),
                welcome(1, Origin::Root, false, true),
            ),
            // replay creates the children in another order: ids follow the origin
            (
                hello(
                    21,
                    20,
                    Claim::Fork {
                        parent: p(1),
                        index: 1,
                    },
                ),
                welcome(
                    3,
                    Origin::Fork {
                        parent: p(1),
                        index: 1,
                    },
                    false,
                    true,
                ),
            ),
            (
                hello(
                    22,
                    20,
                    Claim::Fork {
                        parent: p(1),
                        index: 2,
                    },
                ),
                welcome(
                    2,
                    Origin::Fork {
                        parent: p(1),
                        index: 2,
                    },
                    false,
                    true,
                ),
            ),
            (
                hello(21, 20, Claim::Unknown),
                welcome(
                    3,
                    Origin::Fork {
                        parent: p(1),
                        index: 1,
                    },
                    true,
                    false,
                ),
            ),
            (
                hello(23, 21, Claim::Unknown),
                welcome(
                    4,
                    Origin::Unhooked {
                        parent: p(3),
                        index: 1,
                    },
                    false,
                    true,
                ),
            ),
        ];
        for (i, (facts, expected)) in table.into_iter().enumerate() {
            assert_eq!(reg.hello(&facts), expected, "row {i}: {facts:?}");
        }
        let r = reg.hello(&hello(
            24,
            21,
            Claim::Fork {
                parent: p(3),
                index: 2,
            },
        ));
        assert_eq!(
            r,
            Resolution::Refuse {
                why: "a process the record did not have: created as Fork{parent: p3, index: 2}"
                    .into(),
                origin: Some(Origin::Fork {
                    parent: p(3),
                    index: 2
                }),
            }
        );
        assert_eq!(reg.actors().len(), 4);
        assert_eq!(reg.actors()[1].pid, 21);
    }
}
