//! `stop if` from the user's side: turning `--stop-if`/`--stop-at` text into the halt request
//! the GD follows, and printing the halted global state.

use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::deps::Deps;
use ddbx_supervisor::analysis::inf::{Cut, close_online, close_online_raised, inf_online_from};
use ddbx_supervisor::predicate::{self, Catalog, Class};
use ddbx_supervisor::session::{HaltRequest, HaltedState, Observation, Resume};
use ddbx_supervisor::wire::ActorId;
use ddbx_supervisor::wire::counters::Counters;
use ddbx_supervisor::wire::pred::{self as pred, BinOp, Expr, Value, VarRef};
use std::collections::BTreeMap;

/// What the predicates of a recording may refer to: its actors, their program names, and the
/// probes each one published.
pub struct RecordingCatalog<'a>(pub &'a Recording);

impl Catalog for RecordingCatalog<'_> {
    fn actors(&self) -> Vec<ActorId> {
        self.0.manifest.actors.iter().map(|a| a.id).collect()
    }

    fn program_names(&self, a: ActorId) -> Vec<String> {
        self.0.program_names(a)
    }

    fn publishes(&self, a: ActorId, name: &str) -> bool {
        self.0.history(a).is_some_and(|h| {
            h.records.iter().any(
                |r| matches!(r, ddbx_supervisor::wire::Record::Probe { name: n, .. } if n == name),
            )
        })
    }
}

/// Parses `p3:17` (after p3's 17th event).
fn stop_point(text: &str, recording: &Recording) -> Result<(ActorId, u64), Error> {
    let bad = || {
        Error::Usage(format!(
            "--stop-at: expected ACTOR:EVENT such as `p3:17` (after p3's 17th event), found `{text}`"
        ))
    };
    let (actor, event) = text.rsplit_once(':').ok_or_else(bad)?;
    let event: u64 = event.parse().map_err(|_| bad())?;
    let actor = recording.find_actor(actor).map_err(Error::Usage)?;
    let length = recording
        .history(actor)
        .map_or(0, |h| h.records.len() as u64);
    if event == 0 || event > length {
        return Err(Error::Usage(format!(
            "--stop-at {text}: {actor} has events 1 to {length} in this recording"
        )));
    }
    Ok((actor, event))
}

/// The halt request for these options (`None`: no `stop if`).
pub fn request(
    recording: &Recording,
    stop_if: &[String],
    stop_at: &[String],
) -> Result<Option<HaltRequest>, Error> {
    if stop_if.is_empty() && stop_at.is_empty() {
        return Ok(None);
    }
    let catalog = RecordingCatalog(recording);
    let mut per_actor: BTreeMap<ActorId, Expr> = BTreeMap::new();
    let mut texts = Vec::new();
    let mut primary_set = false;
    for text in stop_if {
        let parsed = predicate::parse(text)
            .map_err(|e| Error::Usage(format!("--stop-if: {}", e.render(text))))?;
        let resolved = predicate::resolve(parsed, &catalog)
            .map_err(|e| Error::Usage(format!("--stop-if `{text}`: {e}")))?;
        match predicate::classify(&resolved) {
            Class::Conjunctive(parts) if !primary_set => {
                primary_set = true;
                texts.push(text.clone());
                for (actor, sp) in parts {
                    join(&mut per_actor, actor, sp);
                }
            }
            Class::Conjunctive(_) => {
                return Err(Error::Usage(format!(
                    "--stop-if `{text}`: only one primary predicate is halted at for now; \
                     join conditions with `&&` into the first --stop-if"
                )));
            }
            Class::General { reason } => {
                return Err(Error::Usage(format!(
                    "--stop-if `{text}`: {reason}. ddbx can halt exactly only at a conjunction \
                     of conditions that each involve one process (see `ddbx help predicates`)"
                )));
            }
        }
    }
    for text in stop_at {
        let (actor, event) = stop_point(text, recording)?;
        let sp = Expr::bin(
            BinOp::Ge,
            Expr::Var(VarRef::of(actor, "events")),
            Expr::Int(event as i64),
        );
        join(&mut per_actor, actor, sp);
        texts.push(format!("{actor}.events >= {event}"));
    }
    Ok(Some(HaltRequest {
        primary: per_actor.into_iter().collect(),
        text: texts.join(" && "),
    }))
}

fn join(per_actor: &mut BTreeMap<ActorId, Expr>, actor: ActorId, sp: Expr) {
    let joined = match per_actor.remove(&actor) {
        Some(existing) => Expr::bin(BinOp::And, existing, sp),
        None => sp,
    };
    per_actor.insert(actor, joined);
}

/// Marks the predicate of a halt reached by `cont` at its next satisfaction.
const AGAIN: &str = " (again)";

/// The halted global state as text: one block per actor.
pub fn describe(state: &HaltedState) -> String {
    let mut out = match state.predicate.strip_suffix(AGAIN) {
        Some(p) => format!("ddbx: halted where `{p}` becomes true again (`cont`)\n"),
        None => format!(
            "ddbx: halted at `{}`: the first global state where it holds\n",
            state.predicate
        ),
    };
    for a in &state.actors {
        let mark = match a.satisfied {
            Some(true) => "  (its condition holds)",
            Some(false) => "  (its condition does not hold)",
            None => "",
        };
        out.push_str(&format!(
            "  {}: {} events, {}{mark}\n",
            a.actor, a.events, a.status
        ));
        if let Some(next) = &a.next {
            out.push_str(&format!("      next: {next}\n"));
        }
        if !a.vars.is_empty() {
            let vars: Vec<String> = a.vars.iter().map(|(n, v)| format!("{n}={v}")).collect();
            out.push_str(&format!("      vars: {}\n", vars.join(" ")));
        }
    }
    out
}

/// The halted state as JSON: `cut` maps each actor to the events it had executed.
pub fn to_json(state: &HaltedState) -> serde_json::Value {
    let cut: serde_json::Map<String, serde_json::Value> = state
        .cut
        .iter()
        .map(|(a, n)| (a.to_string(), (*n).into()))
        .collect();
    let actors: Vec<serde_json::Value> = state
        .actors
        .iter()
        .map(|a| {
            let vars: serde_json::Map<String, serde_json::Value> = a
                .vars
                .iter()
                .map(|(n, v)| (n.clone(), (*v).into()))
                .collect();
            serde_json::json!({
                "id": a.actor.to_string(),
                "events": a.events,
                "status": a.status,
                "next": a.next,
                "vars": vars,
                "satisfied": a.satisfied,
                "pid": a.pid,
            })
        })
        .collect();
    serde_json::json!({ "predicate": state.predicate, "cut": cut, "actors": actors })
}

// ---------------------------------------------------------------------------------------------
// Several predicates, traces, continuing: what the replay's saved values say (paper 003 §5).

/// A predicate the user gave (`--stop-if`, `--if`, `stop if`), resolved against a recording.
#[derive(Debug, Clone)]
pub struct Watch {
    /// As the user wrote it.
    pub text: String,
    /// Resolved.
    pub expr: Expr,
    /// Its simple predicates, one per actor, when it is conjunctive (`None`: general).
    pub parts: Option<Vec<(ActorId, Expr)>>,
    /// Why it is not conjunctive (general predicates only).
    pub reason: Option<String>,
}

impl Watch {
    /// Parses, resolves and classifies `text`; `flag` names the option in errors.
    pub fn new(recording: &Recording, text: &str, flag: &str) -> Result<Watch, Error> {
        let parsed = predicate::parse(text)
            .map_err(|e| Error::Usage(format!("{flag}: {}", e.render(text))))?;
        let expr = predicate::resolve(parsed, &RecordingCatalog(recording))
            .map_err(|e| Error::Usage(format!("{flag} `{text}`: {e}")))?;
        let (parts, reason) = match predicate::classify(&expr) {
            Class::Conjunctive(parts) => (Some(parts), None),
            Class::General { reason } => (None, Some(reason)),
        };
        Ok(Watch {
            text: text.to_string(),
            expr,
            parts,
            reason,
        })
    }

    /// `conjunctive` or `general`.
    pub fn kind(&self) -> &'static str {
        if self.parts.is_some() {
            "conjunctive"
        } else {
            "general"
        }
    }
}

/// The variables of `expr` whose values the history does not hold (globals read from memory):
/// a replay observes them in the live processes (`SessionMode::Replay`'s `observe`).
fn memory_variables(recording: &Recording, expr: &Expr) -> Vec<VarRef> {
    let catalog = RecordingCatalog(recording);
    expr.vars()
        .into_iter()
        .filter(|v| {
            v.actor_id().is_some_and(|actor| {
                !(ddbx_supervisor::wire::pred::is_counter(&v.name)
                    || catalog.publishes(actor, &v.name))
            })
        })
        .cloned()
        .collect()
}

/// A cut as text: the actors that have executed events, `p1=5 p2=3`.
pub fn cut_text(cut: &Cut) -> String {
    let parts: Vec<String> = cut
        .iter()
        .filter(|(_, k)| **k > 0)
        .map(|(a, k)| format!("{a}={k}"))
        .collect();
    if parts.is_empty() {
        "the start".into()
    } else {
        parts.join(" ")
    }
}

fn cut_json(cut: &Cut) -> serde_json::Value {
    serde_json::Value::Object(
        cut.iter()
            .map(|(a, k)| (a.to_string(), (*k).into()))
            .collect(),
    )
}

/// Predicates evaluated over a recording's saved values (probes and counters) at consistent
/// global states, as a replay reaches them (see `ddbx help predicates`, "Several predicates").
pub struct Oracle {
    recording: Recording,
    deps: Deps,
    vars: BTreeMap<ActorId, ActorVars>,
}

/// One actor's variables at every point of its history, as `analysis::vars::variables_at`
/// defines them, indexed so that a lookup costs O(log n) instead of a pass over the history.
struct ActorVars {
    /// The built-in counters after k events (index k).
    counts: Vec<Counters>,
    /// Per probe name: (event number, value), in order.
    probes: BTreeMap<String, Vec<(u64, i64)>>,
    /// Per global observed in memory by the replay: (event number, value), in order.
    memory: BTreeMap<String, Vec<(u64, i64)>>,
}

impl ActorVars {
    fn new(history: &ddbx_supervisor::wire::History) -> ActorVars {
        use ddbx_supervisor::wire::Record;
        let mut counts = vec![Counters::default()];
        let mut probes: BTreeMap<String, Vec<(u64, i64)>> = BTreeMap::new();
        for (i, r) in history.records.iter().enumerate() {
            let mut c = counts[i];
            c.count(r);
            if let Record::Probe { name, value } = r {
                probes
                    .entry(name.clone())
                    .or_default()
                    .push((i as u64 + 1, *value));
            }
            counts.push(c);
        }
        ActorVars {
            counts,
            probes,
            memory: BTreeMap::new(),
        }
    }

    /// The value of `name` after `k` events (`k` beyond the end counts as the end).
    fn get(&self, name: &str, k: u64) -> Option<i64> {
        let k = k.min(self.counts.len() as u64 - 1);
        if let Some(v) = self.counts[k as usize].get(name) {
            return Some(v);
        }
        let values = self.probes.get(name).or_else(|| self.memory.get(name))?;
        let set = values.partition_point(|(at, _)| *at <= k);
        set.checked_sub(1).map(|i| values[i].1)
    }
}

impl Oracle {
    /// The oracle of a recording.
    pub fn new(recording: Recording) -> Oracle {
        let deps = Deps::from_recording(&recording);
        let vars = recording
            .histories
            .iter()
            .map(|h| (h.actor, ActorVars::new(h)))
            .collect();
        Oracle {
            recording,
            deps,
            vars,
        }
    }

    /// The recording.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    /// Takes the globals a replay observed so far as the actors' memory variables.
    pub fn observe(&mut self, observed: &[Observation]) {
        for vars in self.vars.values_mut() {
            vars.memory.clear();
        }
        for o in observed {
            if let Some(vars) = self.vars.get_mut(&o.actor) {
                vars.memory
                    .entry(o.name.clone())
                    .or_default()
                    .push((o.after, o.value));
            }
        }
        for vars in self.vars.values_mut() {
            for values in vars.memory.values_mut() {
                values.sort_by_key(|(at, _)| *at);
            }
        }
    }

    fn lookup(&self, cut: &Cut, v: &VarRef) -> Option<Value> {
        let actor = v.actor_id()?;
        // Not created (k = 0): no probe is set, and every counter is 0.
        let k = cut.get(&actor).copied().unwrap_or(0);
        self.vars.get(&actor)?.get(&v.name, k).map(Value::Int)
    }

    /// Whether `expr` holds in the global state `cut`.
    pub fn holds(&self, expr: &Expr, cut: &Cut) -> bool {
        pred::holds(expr, &mut |v| self.lookup(cut, v))
    }

    /// The value of `expr` in the global state `cut`, as text (`unset`, or the error).
    pub fn value(&self, expr: &Expr, cut: &Cut) -> String {
        match pred::eval(expr, &mut |v| self.lookup(cut, v)) {
            Ok(Value::Int(n)) => n.to_string(),
            Ok(Value::Str(s)) => format!("{s:?}"),
            Ok(Value::Bool(b)) => b.to_string(),
            Err(pred::EvalError::Unset { var }) => format!("unset ({var} has no value yet)"),
            Err(e) => format!("error: {e}"),
        }
    }

    fn sp_holds(&self, sp: &Expr, actor: ActorId, k: u64) -> bool {
        k > 0
            && self
                .vars
                .get(&actor)
                .is_some_and(|vars| pred::holds(sp, &mut |v| vars.get(&v.name, k).map(Value::Int)))
    }

    /// Where every replay starts: the root created.
    pub fn initial(&self) -> Cut {
        close_online(&self.deps, &Cut::new())
    }

    /// The observation chain's step after `cut`: the actor whose next event, with whatever
    /// that event needs, adds the fewest events executes it; ties go to the actors in turn, in
    /// id order from `turn`.
    fn step(&self, cut: &Cut, turn: &mut usize) -> Option<Cut> {
        let actors = self.deps.actors();
        let total = |c: &Cut| c.values().sum::<u64>();
        let mut best: Option<(u64, usize, Cut)> = None;
        for i in 0..actors.len() {
            let index = (*turn + i) % actors.len();
            let a = actors[index];
            let k = cut.get(&a).copied().unwrap_or(0);
            if k < self.deps.event_count(a) {
                let next = close_online_raised(&self.deps, cut, a, k + 1);
                let added = total(&next) - total(cut);
                if best.as_ref().is_none_or(|(b, _, _)| added < *b) {
                    best = Some((added, index, next));
                }
            }
        }
        let (_, index, next) = best?;
        *turn = index + 1;
        Some(next)
    }

    /// The first global state `≥ floor` where `w` holds: for a conjunctive predicate the least
    /// consistent one (Inf(P) above `floor`); for a general one, the first on the observation
    /// chain from `floor`.
    pub fn first(&self, w: &Watch, floor: &Cut) -> Option<Cut> {
        match &w.parts {
            Some(parts) => {
                let actors: Vec<ActorId> = parts.iter().map(|(a, _)| *a).collect();
                let holds = |actor: ActorId, k: u64| {
                    parts
                        .iter()
                        .find(|(a, _)| *a == actor)
                        .is_none_or(|(_, sp)| self.sp_holds(sp, actor, k))
                };
                inf_online_from(&self.deps, floor, &actors, &holds)
            }
            None => {
                let mut cut = close_online(&self.deps, floor);
                let mut turn = 0;
                loop {
                    if self.holds(&w.expr, &cut) {
                        return Some(cut);
                    }
                    cut = self.step(&cut, &mut turn)?;
                }
            }
        }
    }

    /// The next time `w` becomes true after `current` (see `ddbx help predicates`): if it does
    /// not hold at `current`, [`Oracle::first`]; else, for a conjunctive predicate, the least
    /// state `≥ current` where it holds with at least one of its actors in a later stretch of
    /// its simple predicate (it became false, then true again), the smallest such state over
    /// its actors (fewest events, then id order); for a general one, the next state on the
    /// observation chain where it holds after one where it does not.
    pub fn next(&self, w: &Watch, current: &Cut) -> Option<Cut> {
        if !self.holds(&w.expr, current) {
            return self.first(w, current);
        }
        match &w.parts {
            Some(parts) => {
                let mut best: Option<Cut> = None;
                for (a, sp) in parts {
                    let len = self.deps.event_count(*a);
                    let at = current.get(a).copied().unwrap_or(0);
                    let Some(falls) = (at + 1..=len).find(|&k| !self.sp_holds(sp, *a, k)) else {
                        continue;
                    };
                    let Some(rises) = (falls + 1..=len).find(|&k| self.sp_holds(sp, *a, k)) else {
                        continue;
                    };
                    let mut floor = current.clone();
                    floor.insert(*a, rises);
                    if let Some(candidate) = self.first(w, &floor) {
                        let key = |c: &Cut| {
                            (
                                c.values().sum::<u64>(),
                                c.values().copied().collect::<Vec<_>>(),
                            )
                        };
                        if best.as_ref().is_none_or(|b| key(&candidate) < key(b)) {
                            best = Some(candidate);
                        }
                    }
                }
                best
            }
            None => {
                let mut cut = current.clone();
                let mut turn = 0;
                while self.holds(&w.expr, &cut) {
                    cut = self.step(&cut, &mut turn)?;
                }
                while !self.holds(&w.expr, &cut) {
                    cut = self.step(&cut, &mut turn)?;
                }
                Some(cut)
            }
        }
    }

    /// Every state where `w` becomes true, from the start (at most `limit`).
    pub fn satisfactions(&self, w: &Watch, limit: usize) -> Vec<Cut> {
        let mut out: Vec<Cut> = Vec::new();
        let mut at = self.first(w, &self.initial());
        while let Some(cut) = at {
            if out.len() >= limit {
                break;
            }
            at = self.next(w, &cut);
            out.push(cut);
        }
        out
    }
}

/// Whether `a ≤ b` entry-wise (the state `a` is at or before `b`).
pub fn le(a: &Cut, b: &Cut) -> bool {
    a.iter()
        .all(|(actor, k)| *k <= b.get(actor).copied().unwrap_or(0))
}

/// `trace EXPR if P`: one satisfaction of P, and EXPR's value there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracePoint {
    /// The global state where P became true.
    pub cut: Cut,
    /// EXPR's value there.
    pub value: String,
}

/// `trace EXPR if P`.
#[derive(Debug, Clone)]
pub struct Trace {
    /// EXPR as written.
    pub expr_text: String,
    /// EXPR resolved.
    pub expr: Expr,
    /// P.
    pub cond: Watch,
    /// Every state where P becomes true, with EXPR's value.
    pub points: Vec<TracePoint>,
    /// How many points were shown so far.
    shown: usize,
}

/// A secondary `stop if`: where it first holds.
#[derive(Debug, Clone)]
pub struct Report {
    /// The predicate.
    pub watch: Watch,
    /// The first state where it holds (`None`: never, or not computable).
    pub cut: Option<Cut>,
    /// Why it could not be evaluated from saved values, if so.
    pub problem: Option<String>,
}

/// Most satisfactions computed for one trace.
pub const TRACE_LIMIT: usize = 10_000;

/// The user's predicates for one replay: the `stop if`s (one of them the primary, halted at
/// exactly), the `--stop-at` points joined to the primary, and the traces; what has been shown.
pub struct Debugger {
    oracle: Oracle,
    /// Every `stop if`, in order (numbered from 1 for the user).
    pub stop_ifs: Vec<Watch>,
    stop_at: Vec<(ActorId, Expr)>,
    stop_at_texts: Vec<String>,
    /// The primary `stop if` (index into `stop_ifs`).
    pub primary: Option<usize>,
    /// The primary changed since the last halt (`cont` halts at its Inf from there).
    primary_changed: bool,
    /// The traces.
    pub traces: Vec<Trace>,
    /// The cut of each halt so far.
    pub halts: Vec<Cut>,
    /// The secondary predicates, computed at the first halt (or at the end).
    pub reports: Option<Vec<Report>>,
    /// The last halted state.
    pub last: Option<HaltedState>,
    /// The globals the replay observes, fixed when it starts (`None`: not started yet).
    observing: Option<Vec<VarRef>>,
}

impl Debugger {
    /// The debugger for `recording` with these options. `primary`: 1-based index into
    /// `stop_if` (default: the first conjunctive one).
    pub fn new(
        recording: &Recording,
        stop_if: &[String],
        stop_at: &[String],
        traces: &[(String, String)],
        primary: Option<usize>,
    ) -> Result<Debugger, Error> {
        let mut watches = Vec::new();
        for text in stop_if {
            watches.push(Watch::new(recording, text, "--stop-if")?);
        }
        let primary = match primary {
            Some(n) => {
                let Some(w) = n.checked_sub(1).and_then(|i| watches.get(i)) else {
                    return Err(Error::Usage(format!(
                        "--primary {n}: expected the number of a --stop-if, 1 to {}",
                        watches.len()
                    )));
                };
                if let Some(reason) = &w.reason {
                    return Err(Error::Usage(format!(
                        "--primary {n}: `{}` cannot be halted at exactly: {reason}",
                        w.text
                    )));
                }
                Some(n - 1)
            }
            None => watches.iter().position(|w| w.parts.is_some()),
        };
        let mut points = Vec::new();
        let mut texts = Vec::new();
        for text in stop_at {
            let (actor, event) = stop_point(text, recording)?;
            points.push((
                actor,
                Expr::bin(
                    BinOp::Ge,
                    Expr::Var(VarRef::of(actor, "events")),
                    Expr::Int(event as i64),
                ),
            ));
            texts.push(format!("{actor}.events >= {event}"));
        }
        let mut debugger = Debugger {
            oracle: Oracle::new(recording.clone()),
            stop_ifs: watches,
            stop_at: points,
            stop_at_texts: texts,
            primary,
            primary_changed: false,
            traces: Vec::new(),
            halts: Vec::new(),
            reports: None,
            last: None,
            observing: None,
        };
        for (expr, cond) in traces {
            debugger.add_trace(expr, cond, "--trace")?;
        }
        Ok(debugger)
    }

    /// The oracle (saved values of the recording).
    pub fn oracle(&self) -> &Oracle {
        &self.oracle
    }

    /// The globals the replay must observe in memory (those the traces and the other `stop
    /// if`s name), fixed from now on: a trace added later may use only these.
    pub fn start_observing(&mut self) -> Vec<VarRef> {
        let recording = self.oracle.recording();
        let mut vars: Vec<VarRef> = Vec::new();
        let exprs = self
            .traces
            .iter()
            .flat_map(|t| [&t.expr, &t.cond.expr])
            .chain(self.stop_ifs.iter().map(|w| &w.expr));
        for e in exprs {
            for v in memory_variables(recording, e) {
                if !vars.contains(&v) {
                    vars.push(v);
                }
            }
        }
        self.observing = Some(vars.clone());
        vars
    }

    /// Why `expr` cannot be evaluated from saved and observed values, if it cannot (a global
    /// the replay does not observe).
    fn unobserved(&self, expr: &Expr) -> Option<String> {
        let observing = self.observing.as_ref()?;
        memory_variables(self.oracle.recording(), expr)
            .into_iter()
            .find(|v| !observing.contains(v))
            .map(|v| v.to_string())
    }

    /// Takes the observed values and recomputes the traces over memory (their points up to
    /// what has been executed are final).
    fn observe(&mut self, observed: &[Observation]) {
        if observed.is_empty() {
            return;
        }
        self.oracle.observe(observed);
        let recording = self.oracle.recording();
        for t in &mut self.traces {
            let memory = !memory_variables(recording, &t.expr).is_empty()
                || !memory_variables(recording, &t.cond.expr).is_empty();
            if memory {
                t.points = self
                    .oracle
                    .satisfactions(&t.cond, TRACE_LIMIT)
                    .into_iter()
                    .map(|cut| TracePoint {
                        value: self.oracle.value(&t.expr, &cut),
                        cut,
                    })
                    .collect();
            }
        }
    }

    /// What the GD halts at: the primary joined with the stop points (`None`: nothing).
    pub fn request(&self) -> Option<HaltRequest> {
        let primary = self.primary.and_then(|i| self.stop_ifs.get(i));
        if primary.is_none() && self.stop_at.is_empty() {
            return None;
        }
        let mut per_actor: BTreeMap<ActorId, Expr> = BTreeMap::new();
        let mut texts = Vec::new();
        if let Some(w) = primary {
            texts.push(w.text.clone());
            for (a, sp) in w.parts.iter().flatten() {
                join(&mut per_actor, *a, sp.clone());
            }
        }
        for (a, sp) in &self.stop_at {
            join(&mut per_actor, *a, sp.clone());
        }
        texts.extend(self.stop_at_texts.iter().cloned());
        Some(HaltRequest {
            primary: per_actor.into_iter().collect(),
            text: texts.join(" && "),
        })
    }

    /// Adds `trace EXPR if COND`.
    pub fn add_trace(&mut self, expr_text: &str, cond: &str, flag: &str) -> Result<(), Error> {
        let recording = self.oracle.recording();
        let parsed = predicate::parse(expr_text)
            .map_err(|e| Error::Usage(format!("{flag}: {}", e.render(expr_text))))?;
        let expr = predicate::resolve_value(parsed, &RecordingCatalog(recording))
            .map_err(|e| Error::Usage(format!("{flag} `{expr_text}`: {e}")))?;
        let cond = Watch::new(recording, cond, "--if")?;
        for e in [&expr, &cond.expr] {
            if let Some(var) = self.unobserved(e) {
                return Err(Error::Usage(format!(
                    "{flag} `{expr_text}` --if `{}`: `{var}` is read from the process's memory, \
                     and this replay started without observing it; give the trace with \
                     --trace/--if when the replay starts",
                    cond.text
                )));
            }
        }
        let points = self
            .oracle
            .satisfactions(&cond, TRACE_LIMIT)
            .into_iter()
            .map(|cut| TracePoint {
                value: self.oracle.value(&expr, &cut),
                cut,
            })
            .collect();
        self.traces.push(Trace {
            expr_text: expr_text.to_string(),
            expr,
            cond,
            points,
            shown: 0,
        });
        Ok(())
    }

    /// Adds `stop if P`; a conjunctive one becomes the primary. Returns its number.
    pub fn add_stop_if(&mut self, text: &str) -> Result<usize, Error> {
        let w = Watch::new(self.oracle.recording(), text, "stop if")?;
        let conjunctive = w.parts.is_some();
        self.stop_ifs.push(w);
        let n = self.stop_ifs.len();
        if conjunctive {
            self.primary = Some(n - 1);
            self.primary_changed = true;
        }
        Ok(n)
    }

    /// `switch N`: makes the N-th `stop if` (from 1) the primary.
    pub fn switch(&mut self, n: usize) -> Result<(), String> {
        let Some(w) = n.checked_sub(1).and_then(|i| self.stop_ifs.get(i)) else {
            return Err(format!(
                "switch: expected the number of a stop if, 1 to {}",
                self.stop_ifs.len()
            ));
        };
        if let Some(reason) = &w.reason {
            return Err(format!(
                "switch {n}: `{}` cannot be the primary: {reason}",
                w.text
            ));
        }
        self.primary = Some(n - 1);
        self.primary_changed = true;
        Ok(())
    }

    /// How `cont` goes on from the last halt: to the primary's Inf from here if it changed,
    /// else to the next time the primary becomes true (computed from saved values), else to
    /// the end.
    pub fn cont(&mut self) -> Result<Resume, String> {
        let Some(request) = self.request() else {
            return Ok(Resume::ToEnd);
        };
        if self.primary_changed {
            self.primary_changed = false;
            return Ok(Resume::Predicate(request));
        }
        let current = self
            .halts
            .last()
            .cloned()
            .unwrap_or_else(|| self.oracle.initial());
        let expr = request
            .primary
            .iter()
            .map(|(_, sp)| sp.clone())
            .reduce(|a, b| Expr::bin(BinOp::And, a, b))
            .unwrap_or(Expr::Int(1));
        if let Some(var) = memory_variables(self.oracle.recording(), &expr).first() {
            return Err(format!(
                "cont: `{var}` is read from memory, so the next time `{}` holds cannot be \
                 found from saved values; give a new predicate with `stop if`",
                request.text
            ));
        }
        let w = Watch {
            text: request.text.clone(),
            expr,
            parts: Some(request.primary.clone()),
            reason: None,
        };
        Ok(match self.oracle.next(&w, &current) {
            Some(cut) => Resume::ToCut {
                cut,
                text: format!("{}{AGAIN}", request.text),
            },
            None => Resume::ToEnd,
        })
    }

    /// Trace lines for the points at or before `cut` not shown yet (`None`: all of them).
    fn trace_lines(&mut self, upto: Option<&Cut>) -> Vec<String> {
        let mut lines = Vec::new();
        for t in &mut self.traces {
            while let Some(p) = t.points.get(t.shown) {
                if upto.is_some_and(|c| !le(&p.cut, c)) {
                    break;
                }
                lines.push(format!(
                    "ddbx: trace {} = {}   (`{}` became true at {})",
                    t.expr_text,
                    p.value,
                    t.cond.text,
                    cut_text(&p.cut)
                ));
                t.shown += 1;
            }
        }
        lines
    }

    fn compute_reports(&mut self) {
        if self.reports.is_some() {
            return;
        }
        let initial = self.oracle.initial();
        let mut reports = Vec::new();
        for (i, w) in self.stop_ifs.iter().enumerate() {
            if Some(i) == self.primary {
                continue;
            }
            let problem = self.unobserved(&w.expr).map(|var| {
                format!("`{var}` is read from memory, and this replay did not observe it")
            });
            let cut = match problem {
                None => self.oracle.first(w, &initial),
                Some(_) => None,
            };
            reports.push(Report {
                watch: w.clone(),
                cut,
                problem,
            });
        }
        self.reports = Some(reports);
    }

    fn report_lines(&self) -> Vec<String> {
        let halt = self.halts.first();
        let mut lines = Vec::new();
        for r in self.reports.iter().flatten() {
            let kind = match &r.watch.reason {
                Some(reason) => format!("general, {reason}"),
                None => "conjunctive".into(),
            };
            let line = match (&r.cut, &r.problem) {
                (_, Some(problem)) => format!(
                    "ddbx: also `{}`: cannot be evaluated from saved values ({problem})",
                    r.watch.text
                ),
                (Some(cut), None) => {
                    let when = match halt {
                        Some(h) if le(cut, h) => " (at or before the halt)",
                        Some(_) => " (after the halt)",
                        None => "",
                    };
                    format!(
                        "ddbx: also `{}` ({kind}): first holds at {}{when}",
                        r.watch.text,
                        cut_text(cut)
                    )
                }
                (None, None) => format!(
                    "ddbx: also `{}` ({kind}): never holds in this run",
                    r.watch.text
                ),
            };
            lines.push(line);
        }
        lines
    }

    /// At a halt: remembers it; returns the lines to show (the state, the traces passed, and,
    /// at the first halt, where the other `stop if`s hold).
    pub fn on_halt(&mut self, state: &HaltedState) -> Vec<String> {
        self.observe(&state.observed);
        self.halts.push(state.cut.clone());
        self.last = Some(state.clone());
        let mut lines: Vec<String> = self.trace_lines(Some(&state.cut));
        lines.extend(describe(state).lines().map(String::from));
        if self.reports.is_none() {
            self.compute_reports();
            lines.extend(self.report_lines());
        }
        lines
    }

    /// At the end of the replay: the traces not shown yet (all of them if it reached the
    /// end) and the reports if no halt showed them.
    ///
    /// `observed`: the globals the replay observed (the session's outcome has them).
    pub fn at_end(&mut self, reached_end: bool, observed: &[Observation]) -> Vec<String> {
        self.observe(observed);
        let mut lines = if reached_end {
            self.trace_lines(None)
        } else {
            Vec::new()
        };
        if self.reports.is_none() {
            self.compute_reports();
            lines.extend(self.report_lines());
        }
        lines
    }

    /// The `reports` and `traces` of the JSON output.
    pub fn to_json(&self) -> serde_json::Value {
        let halt = self.halts.first();
        let reports: Vec<serde_json::Value> = self
            .reports
            .iter()
            .flatten()
            .map(|r| {
                let seen = match (&r.cut, halt) {
                    (None, _) => "never",
                    (Some(c), Some(h)) if le(c, h) => "at_or_before_halt",
                    (Some(_), Some(_)) => "after_halt",
                    (Some(_), None) => "no_halt",
                };
                serde_json::json!({
                    "predicate": r.watch.text,
                    "kind": r.watch.kind(),
                    "reason": r.watch.reason,
                    "cut": r.cut.as_ref().map(cut_json),
                    "seen": if r.problem.is_some() { "unknown" } else { seen },
                    "problem": r.problem,
                })
            })
            .collect();
        let traces: Vec<serde_json::Value> = self
            .traces
            .iter()
            .map(|t| {
                serde_json::json!({
                    "expr": t.expr_text,
                    "if": t.cond.text,
                    "kind": t.cond.kind(),
                    "shown": t.shown,
                    "points": t.points.iter().map(|p| serde_json::json!({
                        "cut": cut_json(&p.cut),
                        "value": p.value,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::json!({
            "primary": self.primary.map(|i| i + 1),
            "stop_ifs": self.stop_ifs.iter().map(|w| serde_json::json!({"predicate": w.text, "kind": w.kind()})).collect::<Vec<_>>(),
            "reports": reports,
            "traces": traces,
            "halts": self.halts.iter().map(cut_json).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::ActorVars;
    use ddbx_supervisor::analysis::vars::variables_at;
    use ddbx_supervisor::wire::History;
    use std::path::Path;

    #[test]
    fn indexed_variables_agree_with_variables_at() {
        let text = "Header(format: 1, actor: \"p1\")\n\
            Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n\
            Probe(name: \"x\", value: 1)\n\
            Recv(fd: 3, n: 0)\n\
            Probe(name: \"x\", value: 7)\n\
            Fork(index: 1)\n\
            Spawn(index: 2)\n\
            Send(fd: 3, n: 2)\n\
            Probe(name: \"events\", value: 99)\n\
            Probe(name: \"y\", value: -3)\n\
            Exit(status: 0)\n";
        let h = History::parse(Path::new("t"), text).unwrap();
        let indexed = ActorVars::new(&h);
        for k in 0..=12 {
            let want = variables_at(&h, k);
            for name in [
                "x", "y", "z", "events", "recvs", "sends", "accepts", "forks", "alive",
            ] {
                assert_eq!(
                    indexed.get(name, k),
                    want.get(name).copied(),
                    "{name} after {k} events"
                );
            }
        }
    }
}
