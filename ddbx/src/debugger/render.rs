//! What a halting replay shows: the halted global state, trace points and where the other
//! `stop if`s hold, as the `ddbx: …` lines of the message stream and as the `predicates` object
//! of the JSON output.
//!
//! These lines are part of the embedding API's outcome ([`ReplayOutcome`](crate::ReplayOutcome)'s
//! `messages` and `predicates`), so they are made here, beside the [`Debugger`], not in the
//! command line's modules.

use super::{AGAIN, Debugger, Report, Trace, TracePoint};
use ddbx_supervisor::analysis::cut::at_or_before;
use ddbx_supervisor::analysis::inf::Cut;
use ddbx_supervisor::session::HaltedState;
use ddbx_supervisor::wire::pred::{EvalError, Value};

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

/// A cut as JSON: `{"p1": 5, "p2": 3}`, every actor of the cut included.
pub fn cut_json(cut: &Cut) -> serde_json::Value {
    serde_json::Value::Object(
        cut.iter()
            .map(|(a, k)| (a.to_string(), (*k).into()))
            .collect(),
    )
}

/// A trace expression's value as text: the value, `unset (…)`, or the error.
pub fn value_text(value: Result<Value, EvalError>) -> String {
    match value {
        Ok(Value::Int(n)) => n.to_string(),
        Ok(Value::Str(s)) => format!("{s:?}"),
        Ok(Value::Bool(b)) => b.to_string(),
        Err(EvalError::Unset { var }) => format!("unset ({var} has no value yet)"),
        Err(e) => format!("error: {e}"),
    }
}

/// `ddbx: trace EXPR = VALUE   (`P` became true at CUT)`.
pub fn trace_line(trace: &Trace, point: &TracePoint) -> String {
    format!(
        "ddbx: trace {} = {}   (`{}` became true at {})",
        trace.expr_text,
        point.value,
        trace.cond.text,
        cut_text(&point.cut)
    )
}

/// One line per secondary `stop if`: where it first holds, relative to the first halt.
pub fn report_lines(debugger: &Debugger) -> Vec<String> {
    let halt = debugger.halts.first();
    debugger
        .reports
        .iter()
        .flatten()
        .map(|r| report_line(r, halt))
        .collect()
}

fn report_line(r: &Report, halt: Option<&Cut>) -> String {
    let kind = match &r.watch.reason {
        Some(reason) => format!("general, {reason}"),
        None => "conjunctive".into(),
    };
    match (&r.cut, &r.problem) {
        (_, Some(problem)) => format!(
            "ddbx: also `{}`: cannot be evaluated from saved values ({problem})",
            r.watch.text
        ),
        (Some(cut), None) => {
            let when = match halt {
                Some(h) if at_or_before(cut, h) => " (at or before the halt)",
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
    }
}

/// The `predicates` object of the JSON output: the `stop if`s, the reports, the traces and
/// the halts.
pub fn predicates_json(debugger: &Debugger) -> serde_json::Value {
    let halt = debugger.halts.first();
    let reports: Vec<serde_json::Value> = debugger
        .reports
        .iter()
        .flatten()
        .map(|r| report_json(r, halt))
        .collect();
    let traces: Vec<serde_json::Value> = debugger.traces.iter().map(trace_json).collect();
    serde_json::json!({
        "primary": debugger.primary.map(|i| i + 1),
        "stop_ifs": debugger.stop_ifs.iter().map(|w| serde_json::json!({"predicate": w.text, "kind": w.kind()})).collect::<Vec<_>>(),
        "reports": reports,
        "traces": traces,
        "halts": debugger.halts.iter().map(cut_json).collect::<Vec<_>>(),
    })
}

fn report_json(r: &Report, halt: Option<&Cut>) -> serde_json::Value {
    let seen = match (&r.cut, halt) {
        (None, _) => "never",
        (Some(c), Some(h)) if at_or_before(c, h) => "at_or_before_halt",
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
}

fn trace_json(t: &Trace) -> serde_json::Value {
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
}
