//! JSON shapes shared by the subcommands' `--json` output.
//!
//! * an actor: `{"id": "p3", "parent": "p1", "origin": "Fork{parent: p1, index: 2}",
//!   "pid": 20001, "host": "h", "argv": ["./server_x"], "exit": "exit 0" | "signal 9" | null}`;
//! * a divergence: `{"actor": "p3" | null, "event": 7 | null, "expected": "…", "found": "…",
//!   "message": "ddbx: replay diverged: …"}`;
//! * a halted state: `{"predicate", "cut": {"p1": 7, …}, "actors": [{"id", "events", "status",
//!   "next", "vars": {name: value}, "satisfied", "pid"}]}`.

use crate::debugger::render::cut_json;
use ddbx_supervisor::actors::describe;
use ddbx_supervisor::session::{Divergence, End, HaltedState};
use ddbx_supervisor::wire::manifest::{ActorInfo, ExitStatus};
use serde_json::{Value, json};

/// An exit status as `"exit 0"` / `"signal 9"`, or null.
pub fn status(status: Option<ExitStatus>) -> Value {
    status.map_or(Value::Null, |s| Value::String(s.to_string()))
}

/// An actor (see the module doc).
pub fn actor(info: &ActorInfo) -> Value {
    json!({
        "id": info.id.to_string(),
        "parent": info.origin.parent().to_string(),
        "origin": describe(info.origin),
        "pid": info.pid,
        "host": info.host,
        "argv": info.argv,
        "exit": status(info.exit),
    })
}

/// A divergence (see the module doc).
pub fn divergence(d: &Divergence) -> Value {
    json!({
        "actor": d.actor.map(|a| a.to_string()),
        "event": d.event,
        "expected": d.expected,
        "found": d.found,
        "message": d.message,
    })
}

/// The `divergence` and `problem` fields of a session's end.
pub fn end_details(end: &End) -> (Value, Value) {
    match end {
        End::Diverged(d) => (divergence(d), Value::Null),
        End::Unsupported { actor, what } => (
            Value::Null,
            Value::String(match actor {
                Some(a) => format!("{a}: {what}"),
                None => what.clone(),
            }),
        ),
        End::Interrupted { signal } => (
            Value::Null,
            Value::String(format!("interrupted by signal {signal}")),
        ),
        End::Complete | End::ReachedEnd | End::Halted(_) => (Value::Null, Value::Null),
    }
}

/// The halted state as JSON (`halted` in the module doc): `cut` maps each actor to the events
/// it had executed.
pub fn halted_json(state: &HaltedState) -> serde_json::Value {
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
    serde_json::json!({
        "predicate": state.predicate,
        "cut": cut_json(&state.cut),
        "actors": actors,
    })
}
