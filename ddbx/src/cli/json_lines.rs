//! `--json-lines` on `record` and `replay`: one JSON object per line, written as things happen,
//! on the message stream (standard error, or `--messages FILE`), for a test runner or an IDE
//! following a long run. ddbx's `ddbx: …` lines are not printed (they are in the last object's
//! `messages`). Every object has an `event` field:
//!
//! ```text
//! {"event": "start", "command": "record" | "replay", "total_events": 42 | null}
//! {"event": "actor_started", "actor": "p3", "pid": 20001, "parent": "p1" ("p0": ddbx),
//!  "origin": "Fork{parent: p1, index: 2}", "argv": ["./server_x"], "exec": false}
//! {"event": "actor_exited", "actor": "p3", "pid": 20001, "status": "exit 0" | "signal 9"}
//! {"event": "divergence", "actor": "p3" | null, "at_event": 7 | null, "expected": "…",
//!  "found": "…", "message": "ddbx: replay diverged: …"}
//! {"event": "unsupported", "actor": "p3" | null, "what": "…"}
//! {"event": "halted", "predicate": "…", "cut": {"p1": 7, …}, "actors": [<halted actor>, …]}
//! {"event": "trace", "expr": "p7.recvs", "if": "p6.x==1", "cut": {"p1": 7, …}, "value": "2"}
//! {"event": "finishing"}
//! {"event": "end", <every field of the command's --json object>}
//! ```
//!
//! (`<halted actor>` as in `replay`'s `--json`: `{"id", "events", "status", "next", "vars",
//! "satisfied", "pid"}`.) The last line is always `end`; a consumer may stop reading there.

use crate::api::{Event, Observer};
use crate::debugger::render::cut_json;
use crate::error::Error;
use ddbx_supervisor::actors::describe;
use ddbx_supervisor::session::{End, SessionEvent};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// Where the lines go: standard error, or the `--messages` file.
#[derive(Clone)]
pub struct JsonLines(Arc<Mutex<Box<dyn Write + Send>>>);

impl JsonLines {
    /// Lines to `messages` (created or truncated), or to standard error.
    pub fn open(messages: Option<&Path>) -> Result<JsonLines, Error> {
        let out: Box<dyn Write + Send> = match messages {
            Some(path) => Box::new(std::fs::File::create(path).map_err(|e| {
                Error::Usage(format!(
                    "--messages {}: cannot create it: {e}",
                    path.display()
                ))
            })?),
            None => Box::new(std::io::stderr()),
        };
        Ok(JsonLines(Arc::new(Mutex::new(out))))
    }

    /// Writes one object on a line of its own, at once.
    pub fn write(&self, value: &Value) {
        let mut out = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(out, "{value}");
        let _ = out.flush();
    }

    /// The last line: the command's `--json` object with `"event": "end"` first.
    pub fn end(&self, value: Value) {
        let mut object = serde_json::Map::new();
        object.insert("event".into(), "end".into());
        if let Value::Object(fields) = value {
            object.extend(fields);
        }
        self.write(&Value::Object(object));
    }

    /// An observer that writes each event of a run (`command`: record or replay).
    pub fn observer(&self, command: &'static str) -> Observer {
        let lines = self.clone();
        Observer::new(move |event| {
            if let Some(value) = event_json(command, event) {
                lines.write(&value);
            }
        })
    }
}

/// The line of one event (`None`: not one that is written).
fn event_json(command: &str, event: &Event<'_>) -> Option<Value> {
    Some(match event {
        Event::Starting { total_events, .. } => json!({
            "event": "start",
            "command": command,
            "total_events": total_events,
        }),
        Event::Session(session) => session_json(session)?,
        Event::Halted(state) => {
            let mut value = super::json::halted_json(state);
            if let Value::Object(fields) = &mut value {
                fields.insert("event".into(), "halted".into());
            }
            value
        }
        Event::TracePoint { expr, cond, point } => json!({
            "event": "trace",
            "expr": expr,
            "if": cond,
            "cut": cut_json(&point.cut),
            "value": point.value,
        }),
    })
}

/// The line of one of the session's events.
fn session_json(event: &SessionEvent) -> Option<Value> {
    Some(match event {
        SessionEvent::ActorStarted {
            actor,
            pid,
            origin,
            argv,
            exec,
        } => json!({
            "event": "actor_started",
            "actor": actor.to_string(),
            "pid": pid,
            "parent": origin.parent().to_string(),
            "origin": describe(*origin),
            "argv": argv,
            "exec": exec,
        }),
        SessionEvent::ActorExited { actor, pid, status } => json!({
            "event": "actor_exited",
            "actor": actor.to_string(),
            "pid": pid,
            "status": status.to_string(),
        }),
        SessionEvent::Stopped(End::Diverged(d)) => json!({
            "event": "divergence",
            "actor": d.actor.map(|a| a.to_string()),
            "at_event": d.event,
            "expected": d.expected,
            "found": d.found,
            "message": d.message,
        }),
        SessionEvent::Stopped(End::Unsupported { actor, what }) => json!({
            "event": "unsupported",
            "actor": actor.map(|a| a.to_string()),
            "what": what,
        }),
        SessionEvent::ActorStopped { actor, events, why } => json!({
            "event": "actor_stopped",
            "actor": actor.to_string(),
            "events": events,
            "why": why,
        }),
        SessionEvent::Stopped(_) => return None,
        SessionEvent::Finishing => json!({"event": "finishing"}),
    })
}
