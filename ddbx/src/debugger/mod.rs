//! The debugger of a halting replay: the user's predicates for one replay and what has been
//! shown of them.
//!
//! A [`Debugger`] holds every `stop if` (one of them the *primary*, which the replay halts at
//! exactly), the `--stop-at` points joined to the primary, and the `trace EXPR if P`s. At each
//! halt the replay's driver (the `(ddbx)` prompt, or an embedding program through
//! [`HaltingReplay`](crate::HaltingReplay)) may add predicates or switch the primary, then asks
//! [`Debugger::cont`] how the replay goes on. Where the traces' conditions become true and where
//! the other `stop if`s first hold is computed from the recording's saved values by the cut
//! search ([`CutSearch`]); the lines shown for all of it are made in [`render`].

pub mod render;

use crate::error::Error;
use crate::halt::{RecordingCatalog, StopPoint, Watch, halt_request};
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::cut::{CutSearch, Goal, at_or_before};
use ddbx_supervisor::analysis::inf::Cut;
use ddbx_supervisor::predicate::{self, Catalog};
use ddbx_supervisor::session::{HaltRequest, HaltedState, Observation, Resume};
use ddbx_supervisor::wire::pred::{BinOp, Expr, VarRef, is_counter};

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

impl Trace {
    /// How many of its points were shown so far (they come first in `points`).
    pub fn shown(&self) -> usize {
        self.shown
    }
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

/// Marks the predicate of a halt reached by `cont` at its next satisfaction.
const AGAIN: &str = " (again)";

/// The user's predicates for one replay: the `stop if`s (one of them the primary, halted at
/// exactly), the `--stop-at` points joined to the primary, and the traces; what has been shown.
pub struct Debugger {
    search: CutSearch,
    /// Every `stop if`, in order (numbered from 1 for the user).
    pub stop_ifs: Vec<Watch>,
    stop_at: Vec<StopPoint>,
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

/// What the cut search keeps of `recording`: all of it when the replay has a predicate, a
/// stop point or a trace (the prompt can only add more at a halt, which needs one of them);
/// otherwise its manifest alone, so that a plain replay does not hold a second copy of every
/// history (72 MB for a recording of 1,000,000 messages).
fn kept_for_search(
    recording: &Recording,
    stop_if: &[String],
    stop_at: &[StopPoint],
    traces: &[(String, String)],
) -> Recording {
    if stop_if.is_empty() && stop_at.is_empty() && traces.is_empty() {
        Recording {
            dir: recording.dir.clone(),
            manifest: recording.manifest.clone(),
            histories: Vec::new(),
            sketches: recording.sketches.clone(),
            warnings: Vec::new(),
            locks: Vec::new(),
        }
    } else {
        recording.clone()
    }
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
            Some(n) => Some(primary_index(&watches, n)?),
            None => watches.iter().position(|w| w.parts.is_some()),
        };
        let stop_at = stop_at
            .iter()
            .map(|text| StopPoint::parse(text, recording))
            .collect::<Result<Vec<_>, _>>()?;
        let mut debugger = Debugger {
            search: CutSearch::new(kept_for_search(recording, stop_if, &stop_at, traces)),
            stop_ifs: watches,
            stop_at,
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

    /// The cut search (over the saved values of the recording).
    pub fn search(&self) -> &CutSearch {
        &self.search
    }

    /// The recording replayed.
    pub fn recording(&self) -> &Recording {
        self.search.recording()
    }

    /// The globals the replay must observe in memory (those the traces and the other `stop
    /// if`s name), fixed from now on: a trace added later may use only these.
    pub fn start_observing(&mut self) -> Vec<VarRef> {
        let recording = self.search.recording();
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
        memory_variables(self.search.recording(), expr)
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
        self.search.forget_observations();
        for o in observed {
            self.search.observe(o.actor, o.after, &o.name, o.value);
        }
        let recording = self.search.recording();
        for t in &mut self.traces {
            let memory = !memory_variables(recording, &t.expr).is_empty()
                || !memory_variables(recording, &t.cond.expr).is_empty();
            if memory {
                t.points = trace_points(&self.search, &t.expr, &t.cond);
            }
        }
    }

    /// What the GD halts at: the primary joined with the stop points (`None`: nothing).
    pub fn request(&self) -> Option<HaltRequest> {
        let primary = self.primary.and_then(|i| self.stop_ifs.get(i));
        halt_request(primary, &self.stop_at)
    }

    /// Adds `trace EXPR if COND`.
    pub fn add_trace(&mut self, expr_text: &str, cond: &str, flag: &str) -> Result<(), Error> {
        let recording = self.search.recording();
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
        let points = trace_points(&self.search, &expr, &cond);
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
        let w = Watch::new(self.search.recording(), text, "stop if")?;
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
            .unwrap_or_else(|| self.search.initial());
        let expr = request
            .primary
            .iter()
            .map(|(_, sp)| sp.clone())
            .reduce(|a, b| Expr::bin(BinOp::And, a, b))
            .unwrap_or(Expr::Int(1));
        if let Some(var) = memory_variables(self.search.recording(), &expr).first() {
            return Err(format!(
                "cont: `{var}` is read from memory, so the next time `{}` holds cannot be \
                 found from saved values; give a new predicate with `stop if`",
                request.text
            ));
        }
        let goal = Goal {
            expr: &expr,
            parts: Some(&request.primary),
        };
        Ok(match self.search.next(goal, &current) {
            Some(cut) => Resume::ToCut {
                cut,
                text: format!("{}{AGAIN}", request.text),
            },
            None => Resume::ToEnd,
        })
    }

    /// Where each `stop if` other than the primary first holds, computed once (at the first
    /// halt, or at the end).
    fn compute_reports(&mut self) {
        if self.reports.is_some() {
            return;
        }
        let initial = self.search.initial();
        let mut reports = Vec::new();
        for (i, w) in self.stop_ifs.iter().enumerate() {
            if Some(i) == self.primary {
                continue;
            }
            let problem = self.unobserved(&w.expr).map(|var| {
                format!("`{var}` is read from memory, and this replay did not observe it")
            });
            let cut = match problem {
                None => self.search.first(w.goal(), &initial),
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

    /// At a halt: remembers it; returns the lines to show (the state, the traces passed, and,
    /// at the first halt, where the other `stop if`s hold).
    pub fn on_halt(&mut self, state: &HaltedState) -> Vec<String> {
        self.observe(&state.observed);
        self.halts.push(state.cut.clone());
        self.last = Some(state.clone());
        let mut lines: Vec<String> = self.take_trace_lines(Some(&state.cut));
        lines.extend(render::describe(state).lines().map(String::from));
        if self.reports.is_none() {
            self.compute_reports();
            lines.extend(render::report_lines(self));
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
            self.take_trace_lines(None)
        } else {
            Vec::new()
        };
        if self.reports.is_none() {
            self.compute_reports();
            lines.extend(render::report_lines(self));
        }
        lines
    }

    /// Trace lines for the points at or before `upto` not shown yet (`None`: all of them);
    /// they count as shown from now on.
    fn take_trace_lines(&mut self, upto: Option<&Cut>) -> Vec<String> {
        let mut lines = Vec::new();
        for t in &mut self.traces {
            while let Some(p) = t.points.get(t.shown) {
                if upto.is_some_and(|c| !at_or_before(&p.cut, c)) {
                    break;
                }
                lines.push(render::trace_line(t, p));
                t.shown += 1;
            }
        }
        lines
    }
}

/// `--primary N`: the index of the N-th `--stop-if` (from 1), which must be conjunctive.
fn primary_index(watches: &[Watch], n: usize) -> Result<usize, Error> {
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
    Ok(n - 1)
}

/// Every state where `cond` becomes true, with `expr`'s value there.
fn trace_points(search: &CutSearch, expr: &Expr, cond: &Watch) -> Vec<TracePoint> {
    search
        .satisfactions(cond.goal(), TRACE_LIMIT)
        .into_iter()
        .map(|cut| TracePoint {
            value: render::value_text(search.eval(expr, &cut)),
            cut,
        })
        .collect()
}

/// The variables of `expr` whose values the history does not hold (globals read from memory):
/// a replay observes them in the live processes (`SessionMode::Replay`'s `observe`).
fn memory_variables(recording: &Recording, expr: &Expr) -> Vec<VarRef> {
    let catalog = RecordingCatalog(recording);
    expr.vars()
        .into_iter()
        .filter(|v| {
            v.actor_id()
                .is_some_and(|actor| !(is_counter(&v.name) || catalog.publishes(actor, &v.name)))
        })
        .cloned()
        .collect()
}
