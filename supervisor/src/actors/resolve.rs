//! Who a new process image is: the rules of the module doc of [`super`], applied to a `Hello`.

use super::{Mode, Proc, Registry};
use ddbx_wire::history::Origin;
use ddbx_wire::manifest::ActorInfo;
use ddbx_wire::proto::Claim;
use ddbx_wire::{ActorId, PROTOCOL_VERSION};

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

impl Registry {
    /// Decides who a new process image is (see the module doc of [`super`] for the rules).
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
        if let Some(exec) = self.exec_of_live_actor(facts) {
            return exec;
        }
        let origin = self.origin_of(facts);
        match self.actor_for(origin) {
            Ok(actor) => self.admit(facts, actor, origin),
            Err(why) => Resolution::Refuse {
                why,
                origin: Some(origin),
            },
        }
    }

    /// Rule 1: the image is an exec of the live actor whose process has this pid (and, when
    /// both are known, the same start time). Or of an actor whose end was told already, when
    /// the start times match or the process is gone by now: killed as its new image said
    /// hello, its parent's reap came in first on another connection (a script's `cmd & kill
    /// $!`); taken for a new unhooked process, it left an empty history.
    fn exec_of_live_actor(&self, facts: &HelloFacts) -> Option<Resolution> {
        let proc = self.procs.get(&facts.pid)?;
        // A forked child claims its fork; an exec'd image does not.
        let forked = matches!(facts.claim, Claim::Fork { .. });
        let this_process = match (proc.start_time, facts.start_time) {
            _ if proc.exited && forked => false,
            (Some(known), Some(now)) => known == now,
            (_, None) => true,
            (None, Some(_)) => !proc.exited,
        };
        if !this_process {
            return None;
        }
        let origin = self.info(proc.actor).map_or(Origin::Root, |a| a.origin);
        Some(Resolution::Welcome {
            actor: proc.actor,
            origin,
            exec: true,
            new_actor: false,
        })
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

    /// The actor a new process of this origin is: record hands out the next id (`p1` for the
    /// root), replay looks the origin up in the recording. `Err`: why the process is refused.
    fn actor_for(&mut self, origin: Origin) -> Result<ActorId, String> {
        if let Some(taken) = self.actors.iter().find(|a| a.origin == origin) {
            return Err(format!(
                "two processes claim to be {} (created as {}): pid {} is already that actor",
                taken.id,
                describe(origin),
                taken.pid
            ));
        }
        match &mut self.mode {
            Mode::Record { .. } if origin == Origin::Root => Ok(ActorId::ROOT),
            Mode::Record { next_id, like } => {
                if let Some(earlier) = like.iter().find(|a| a.origin == origin) {
                    return Ok(earlier.id);
                }
                let id = ActorId(*next_id);
                *next_id += 1;
                Ok(id)
            }
            Mode::Replay { recorded, unjoined } => match recorded
                .iter()
                .find(|a| a.origin == origin)
            {
                Some(info) => Ok(info.id),
                None if let Some((_, id)) = unjoined.iter().find(|(o, _)| *o == origin) => Ok(*id),
                None => Err(format!(
                    "a process the record did not have: created as {}",
                    describe(origin)
                )),
            },
        }
    }

    /// Enters a new process as `actor` and welcomes it.
    fn admit(&mut self, facts: &HelloFacts, actor: ActorId, origin: Origin) -> Resolution {
        self.procs.insert(
            facts.pid,
            Proc {
                actor,
                start_time: facts.start_time,
                exited: false,
            },
        );
        let mut signalled_by = Vec::new();
        self.unplaced.retain(|&(pid, by, sig)| {
            let this = pid == facts.pid;
            if this && !signalled_by.contains(&(by, sig)) {
                signalled_by.push((by, sig));
            }
            !this
        });
        self.actors.push(ActorInfo {
            id: actor,
            origin,
            pid: facts.pid,
            argv: facts.argv.clone(),
            host: self.host.clone(),
            exit: None,
            reaps: Vec::new(),
            signalled_by,
            unrecorded: None,
        });
        Resolution::Welcome {
            actor,
            origin,
            exec: false,
            new_actor: true,
        }
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
