//! Halting at Inf(P): the LD's part of the paper's algorithm (003 §4, Fig. 5; DESIGN §4).
//!
//! In a halting replay every actor is either *active* (it runs) or *passive* (it waits at the
//! entry of its next event). An actor is active while its simple predicate is false, or while
//! it owes another actor something: the GD's `RunUntil` target (a fork, a connect/accept, the
//! bytes of a send, routed to it by the GD). Before an event that waits for another actor (a
//! receive, an accept, a connect, a ready set) the LD tells the GD what it is about to do
//! (`Need`), and the GD makes the actors it depends on run that far. When every actor is
//! passive and no request is in flight, the GD has found the program halted at Inf(P).

use crate::ld::Ld;
use ddbx_wire::counters::Counters;
use ddbx_wire::history::Record;
use ddbx_wire::pred::{self, Expr, Value, VarRef};
use ddbx_wire::proto::{GdToLd, LdToGd, Mode};

/// The halting state of this actor.
pub struct Halt {
    /// This actor's simple predicate (`None`: it has none, i.e. it is always satisfied).
    pub sp: Option<Expr>,
    /// Run at least until this many events have been executed (what others asked of us).
    pub target: u64,
    /// `Release`d: halting is over, run freely.
    pub released: bool,
    /// A `Passive` note was sent for the current wait.
    passive_sent: bool,
    /// ... and one saying that the actor waits at a gate.
    at_gate_sent: bool,
    /// `Retarget`s received (echoed in `Passive`).
    pub epoch: u64,
    /// The actor does nothing ddbx can hold it at (no socket or probe events: a shell's
    /// helper talking through pipes): it runs freely.
    pub bystander: bool,
}

impl Halt {
    /// Halting with this simple predicate and initial target.
    pub fn new(sp: Option<Expr>, target: u64) -> Halt {
        Halt {
            sp,
            target,
            released: false,
            passive_sent: false,
            at_gate_sent: false,
            epoch: 0,
            bystander: false,
        }
    }
}

impl Ld {
    /// The value of one of this actor's variables: a probe, or a built-in counter.
    pub fn variable(&self, name: &str) -> Option<i64> {
        if let Some((_, v)) = self.probes.iter().rev().find(|(n, _)| n == name) {
            return Some(*v);
        }
        // `events` is the actor's, which an exec'd image continues (the counters of this
        // image were recounted from its history when it started).
        let counters = Counters {
            events: self.events() as i64,
            ..self.counters
        };
        counters.get(name)
    }

    /// Every variable with a value (probes, then counters), for the halted state.
    pub fn variables(&self) -> Vec<(String, i64)> {
        let mut out: Vec<(String, i64)> = Vec::new();
        for (name, value) in &self.probes {
            match out.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = *value,
                None => out.push((name.clone(), *value)),
            }
        }
        for name in ddbx_wire::counters::NAMES {
            if let Some(v) = self.variable(name) {
                out.push((name.to_string(), v));
            }
        }
        out
    }

    /// A variable of the predicate: a probe or counter, else a global read from memory.
    fn lookup(&mut self, v: &VarRef) -> Option<i64> {
        self.variable(&v.name)
            .or_else(|| self.symbols.read(&v.name, v.ty))
    }

    /// Whether this actor's simple predicate holds now (`None`: it has none).
    pub fn satisfied(&mut self) -> Option<bool> {
        let sp = self.halt.as_ref()?.sp.clone()?;
        let mut lookup = |v: &VarRef| self.lookup(v).map(Value::Int);
        Some(pred::holds(&sp, &mut lookup))
    }

    /// The memory variables the predicate names, with their current values.
    fn memory_variables(&mut self) -> Vec<(String, i64)> {
        let Some(sp) = self.halt.as_ref().and_then(|h| h.sp.clone()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for v in sp.vars() {
            if self.variable(&v.name).is_none()
                && let Some(value) = self.symbols.read(&v.name, v.ty)
            {
                out.push((v.name.clone(), value));
            }
        }
        out
    }

    /// At the entry of the next event of a halting replay: wait while passive, then, if the
    /// event waits for another actor, tell the GD what it needs.
    pub fn gate(&mut self) {
        if self.mode != Mode::Replay {
            return;
        }
        self.observe_memory();
        // A Retarget or RunUntil already sent (while the program was blocked elsewhere) counts
        // before this actor decides it is passive.
        self.drain_control();
        loop {
            let Some(halt) = self.halt.as_ref() else {
                return;
            };
            if halt.released || halt.bystander {
                return;
            }
            let owed = self.events() < halt.target;
            let sp_false = self.satisfied() == Some(false);
            if owed || sp_false {
                break;
            }
            // Passive: say so once, then wait for the GD.
            let events = self.events();
            if let Some(halt) = self.halt.as_mut()
                && !halt.at_gate_sent
            {
                halt.passive_sent = true;
                halt.at_gate_sent = true;
                let (target, epoch) = (halt.target, halt.epoch);
                let msg = LdToGd::Passive {
                    actor: self.actor,
                    events,
                    target,
                    at_gate: true,
                    epoch,
                };
                self.send(&msg);
            }
            match self.receive() {
                Some(msg) => {
                    self.control(msg);
                }
                None => self.gd_gone(),
            }
        }
        let waits = matches!(
            self.next_record(),
            Some(
                Record::Recv { .. }
                    | Record::Accept { .. }
                    | Record::Connect { err: None, .. }
                    | Record::Ready { .. }
            )
        ) || matches!(
            self.next_record(),
            Some(Record::Connect { err: Some(e), .. }) if *e == ddbx_wire::Errno::EINPROGRESS
        );
        if waits {
            let msg = LdToGd::Need {
                actor: self.actor,
                event: self.events() + 1,
            };
            self.send(&msg);
        }
    }

    /// After an event of a halting replay: once nothing is owed and the predicate holds, say
    /// so at once (the program may next block outside any event, in waitpid or on a pipe).
    pub fn after_event(&mut self) {
        self.drain_control();
        let Some(halt) = self.halt.as_ref() else {
            return;
        };
        if halt.released || halt.bystander || halt.passive_sent {
            return;
        }
        let (events, target, epoch) = (self.events(), halt.target, halt.epoch);
        if events < target || self.satisfied() == Some(false) {
            return;
        }
        // A fork+exec is one creation: the image about to exec is not passive yet.
        if matches!(self.next_record(), Some(Record::Exec { .. })) {
            return;
        }
        if let Some(halt) = self.halt.as_mut() {
            halt.passive_sent = true;
        }
        let msg = LdToGd::Passive {
            actor: self.actor,
            events,
            target,
            at_gate: false,
            epoch,
        };
        self.send(&msg);
    }

    /// Handles the control messages that arrived while the actor was running (a `RunUntil`
    /// sent while it was active must count before it says it is passive).
    pub fn drain_control(&mut self) {
        if self.halt.is_none() {
            return;
        }
        while self.gd_has_input() {
            match self.receive() {
                Some(msg) => {
                    self.control(msg);
                }
                None => return,
            }
        }
    }

    /// Before the program blocks in a call that is not an event (waitpid…): whatever its next
    /// event needs from others must be under way, or the program may wait forever.
    pub fn before_blocking(&mut self) {
        let Some(halt) = self.halt.as_ref() else {
            return;
        };
        if halt.released || halt.bystander || self.next_record().is_none() {
            return;
        }
        // Only an active actor will execute its next event; a passive one asks for nothing.
        let owed = self.events() < halt.target;
        if !owed && self.satisfied() != Some(false) {
            return;
        }
        let msg = LdToGd::Need {
            actor: self.actor,
            event: self.events() + 1,
        };
        self.send(&msg);
    }

    /// Handles a message the GD sent on its own initiative; false if it was not one.
    pub fn control(&mut self, msg: GdToLd) -> bool {
        match msg {
            GdToLd::RunUntil { event } => {
                if let Some(halt) = self.halt.as_mut()
                    && event > halt.target
                {
                    halt.target = event;
                    halt.passive_sent = false;
                    halt.at_gate_sent = false;
                }
                true
            }
            GdToLd::Report => {
                let next = self.next_record().map(Record::to_line);
                let msg = LdToGd::State {
                    actor: self.actor,
                    events: self.events(),
                    next,
                    vars: {
                        let mut vars = self.memory_variables();
                        vars.extend(self.variables());
                        vars
                    },
                    satisfied: self.satisfied(),
                };
                self.send(&msg);
                true
            }
            GdToLd::Retarget { sp, epoch } => {
                if let Some(halt) = self.halt.as_mut() {
                    halt.epoch = halt.epoch.max(epoch);
                    halt.sp = sp;
                    halt.passive_sent = false;
                    halt.at_gate_sent = false;
                }
                true
            }
            GdToLd::Release => {
                if let Some(halt) = self.halt.as_mut() {
                    halt.released = true;
                }
                true
            }
            _ => false,
        }
    }
}
