//! A live run (`ddbx run --break-if P`): the program runs in real time, recorded as usual, and
//! is halted without replay by paper 001's lazy halting.
//!
//! Each actor's LD evaluates its simple predicate of P after each event and says when it
//! becomes true or false (`Break`). When the last simple predicate becomes true, the actor
//! that made it so *stops* there (its LD waits for `Proceed`) and a halt is on: the GD stops
//! its logical clock (the clock page, [`ddbx_wire::live_clock`]). Nobody else is told. An
//! actor that next interacts with a stopped actor (a send to it, a receive from it, a connect
//! to it) asks first (`Touch`, which its LD sends only while a halt is on) and is *delayed*
//! there, stopped in turn, so an actor that interacts with a delayed one is delayed too;
//! actors that never interact with a stopped one run on. A wait whose timeout expires during
//! a halt on a channel to a stopped actor asks as well, and, once the halt is over, waits again
//! for what is left of its timeout in virtual time (real time minus the halts): a halt makes
//! no peer time out. `cont` ends the halt: every stopped actor goes on as if nobody had
//! stopped.
//!
//! The waits are the connection threads' (`connections/messages.rs`); the halted state is
//! made here from what the stopped actors said when they stopped.

use super::halted::{HaltRequest, HaltedActor, HaltedState};
use crate::actors::Registry;
use crate::error::{Error, Result};
use ddbx_wire::ActorId;
use ddbx_wire::live_clock::{self, LiveClock};
use ddbx_wire::pred;
use ddbx_wire::proto::LivePlan;
use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The clock page, mapped for writing (the GD's side).
struct ClockPage {
    base: *mut u8,
    path: PathBuf,
}

// SAFETY: the page is only accessed through `LiveClock`'s atomics.
unsafe impl Send for ClockPage {}
// SAFETY: as above.
unsafe impl Sync for ClockPage {}

impl ClockPage {
    /// Creates `dir/clock`, one page of zeros (no halt yet), readable by every uid the
    /// program may switch to, and maps it.
    fn create(dir: &Path) -> Result<ClockPage> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join("clock");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&path)
            .map_err(|e| Error::io_at("cannot create", &path, e))?;
        file.set_len(live_clock::SIZE as u64)
            .map_err(|e| Error::io_at("cannot size", &path, e))?;
        // SAFETY: a shared mapping of a file of SIZE bytes that we own; it outlives `file`.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                live_clock::SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(Error::io_at(
                "cannot map",
                &path,
                std::io::Error::last_os_error(),
            ));
        }
        Ok(ClockPage {
            base: base.cast(),
            path,
        })
    }

    fn clock(&self) -> &LiveClock {
        // SAFETY: SIZE bytes mapped until drop, page-aligned.
        unsafe { LiveClock::at(self.base) }
    }
}

impl Drop for ClockPage {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `create`.
        unsafe { libc::munmap(self.base.cast(), live_clock::SIZE) };
    }
}

impl std::fmt::Debug for ClockPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClockPage({})", self.path.display())
    }
}

/// An actor stopped in the halt that is on.
#[derive(Debug, Clone)]
struct Stopped {
    /// Events it made.
    events: u64,
    /// Why it stands: `break` (its predicate), or `delayed by p3`.
    why: String,
    /// What it was about to do, when it was delayed.
    doing: Option<String>,
    /// Its variables then.
    vars: Vec<(String, i64)>,
}

/// The halt that is on.
#[derive(Debug)]
struct HaltOn {
    /// Which halt (from 1).
    number: u64,
    stopped: BTreeMap<ActorId, Stopped>,
}

/// What a live run halts at: a conjunctive predicate, some of whose simple predicates may be
/// about a program rather than an actor (`redis-server.recvs >= 4`): those stand under a
/// placeholder id until the first process image running that program joins, which takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRequest {
    /// The predicate, per actor (or placeholder).
    pub request: HaltRequest,
    /// Each placeholder id of `request` and the program (basename of argv\[0\]) it stands for.
    pub programs: Vec<(ActorId, String)>,
}

/// What a `Break` that says the predicate holds gets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BreakAnswer {
    /// Go on now (P does not hold as a whole, or a halt is on already).
    Proceed,
    /// P holds: halt `number` starts, with this actor stopped.
    Halts(u64),
}

/// What a `Touch` gets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TouchAnswer {
    /// Go on now; `true`: its timed wait overlapped a halt in which the peer stood.
    Proceed(bool),
    /// The peer stands in halt `number`: the actor is delayed until it is over.
    Delayed(u64),
}

/// A live run's state in the GD.
#[derive(Debug)]
pub(crate) struct Live {
    request: HaltRequest,
    /// Placeholders not taken yet, with their programs.
    programs: Vec<(ActorId, String)>,
    page: ClockPage,
    /// The actors whose simple predicate holds, as they last said.
    holds: BTreeSet<ActorId>,
    on: Option<HaltOn>,
    /// The actors stopped in the last halt that is over.
    last: BTreeSet<ActorId>,
    halts: u64,
}

impl Live {
    /// The state for `request`, with the clock page in the runtime directory `dir`.
    pub(crate) fn new(request: LiveRequest, dir: &Path) -> Result<Live> {
        Ok(Live {
            request: request.request,
            programs: request.programs,
            page: ClockPage::create(dir)?,
            holds: BTreeSet::new(),
            on: None,
            last: BTreeSet::new(),
            halts: 0,
        })
    }

    /// A process image of `actor` running `argv` joins: it takes the simple predicates
    /// written for its program, if nobody took them yet.
    pub(crate) fn bind(&mut self, actor: ActorId, argv: &[String]) {
        let Some(program) = argv
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
        else {
            return;
        };
        let taken: Vec<ActorId> = self
            .programs
            .iter()
            .filter(|(_, p)| *p == program)
            .map(|(id, _)| *id)
            .collect();
        if taken.is_empty() {
            return;
        }
        self.programs.retain(|(_, p)| *p != program);
        let mut joined: Option<pred::Expr> = None;
        self.request.primary.retain(|(a, sp)| {
            if !taken.contains(a) && *a != actor {
                return true;
            }
            joined = Some(match joined.take() {
                Some(e) => pred::Expr::bin(pred::BinOp::And, e, sp.clone()),
                None => sp.clone(),
            });
            false
        });
        if let Some(sp) = joined {
            self.request.primary.push((actor, sp));
        }
    }

    /// What `actor`'s LD must know.
    pub(crate) fn plan_for(&self, actor: ActorId) -> LivePlan {
        LivePlan {
            sp: self
                .request
                .primary
                .iter()
                .find(|(a, _)| *a == actor)
                .map(|(_, sp)| sp.clone()),
            clock: self.page.path.to_string_lossy().into_owned(),
        }
    }

    /// `actor`'s simple predicate became true (`holds`) or false after `events` events.
    pub(crate) fn on_break(
        &mut self,
        actor: ActorId,
        events: u64,
        holds: bool,
        vars: Vec<(String, i64)>,
    ) -> BreakAnswer {
        if !holds {
            self.holds.remove(&actor);
            return BreakAnswer::Proceed;
        }
        self.holds.insert(actor);
        let complete = self
            .request
            .primary
            .iter()
            .all(|(a, _)| self.holds.contains(a));
        if self.on.is_some() || !complete {
            return BreakAnswer::Proceed;
        }
        self.halts += 1;
        self.page.clock().start_halt(live_clock::now_ns());
        let stopped = Stopped {
            events,
            why: "break".into(),
            doing: None,
            vars,
        };
        self.on = Some(HaltOn {
            number: self.halts,
            stopped: BTreeMap::from([(actor, stopped)]),
        });
        BreakAnswer::Halts(self.halts)
    }

    /// `actor`, after `events` events, is about to interact with `peer` (`doing`), or its
    /// wait for it timed out.
    pub(crate) fn on_touch(
        &mut self,
        actor: ActorId,
        peer: Option<ActorId>,
        events: u64,
        (timed_out, doing): (bool, String),
        vars: Vec<(String, i64)>,
    ) -> TouchAnswer {
        let Some(peer) = peer else {
            return TouchAnswer::Proceed(false);
        };
        if let Some(on) = self.on.as_mut()
            && on.stopped.contains_key(&peer)
        {
            let why = if timed_out {
                format!("delayed by {peer}: a wait for it timed out")
            } else {
                format!("delayed by {peer}")
            };
            on.stopped.entry(actor).or_insert(Stopped {
                events,
                why,
                doing: Some(doing),
                vars,
            });
            return TouchAnswer::Delayed(on.number);
        }
        TouchAnswer::Proceed(timed_out && self.last.contains(&peer))
    }

    /// The halt that is on, if one is.
    pub(crate) fn halt_on(&self) -> Option<u64> {
        self.on.as_ref().map(|h| h.number)
    }

    /// `cont`: the halt is over; every stopped actor goes on.
    pub(crate) fn resume(&mut self) {
        if let Some(on) = self.on.take() {
            self.last = on.stopped.into_keys().collect();
            self.page.clock().end_halt(live_clock::now_ns());
        }
    }

    /// The halted state: the stopped actors where they stand, the others as the GD knows
    /// them (running, exited). The cut has the stopped actors only.
    pub(crate) fn state(&self, registry: &Registry) -> HaltedState {
        let stopped = self.on.as_ref().map(|h| &h.stopped);
        let mut actors = Vec::new();
        let mut cut = BTreeMap::new();
        for info in registry.actors() {
            let a = info.id;
            let pid = (!registry.has_exited(a)).then_some(info.pid);
            let sp = self.request.primary.iter().any(|(p, _)| *p == a);
            let actor = match stopped.and_then(|s| s.get(&a)) {
                Some(s) => {
                    cut.insert(a, s.events);
                    HaltedActor {
                        actor: a,
                        events: s.events,
                        next: s.doing.clone(),
                        vars: HaltedActor::in_order(s.vars.clone()),
                        satisfied: sp.then(|| self.holds.contains(&a)),
                        pid,
                        status: format!("stopped ({})", s.why),
                    }
                }
                None => HaltedActor {
                    actor: a,
                    events: 0,
                    next: None,
                    vars: Vec::new(),
                    satisfied: sp.then(|| self.holds.contains(&a)),
                    pid,
                    status: if pid.is_some() { "running" } else { "exited" }.into(),
                },
            };
            actors.push(actor);
        }
        HaltedState {
            predicate: self.request.text.clone(),
            cut,
            actors,
            observed: Vec::new(),
        }
    }
}
