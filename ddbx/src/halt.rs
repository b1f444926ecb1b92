//! `stop if` from the user's side: turning `--stop-if`/`--stop-at` text into the halt request
//! the GD follows, and printing the halted global state.

use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::predicate::{self, Catalog, Class};
use ddbx_supervisor::session::{HaltRequest, HaltedState};
use ddbx_supervisor::wire::ActorId;
use ddbx_supervisor::wire::pred::{BinOp, Expr, VarRef};
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

/// The halted global state as text: one block per actor.
pub fn describe(state: &HaltedState) -> String {
    let mut out = format!(
        "ddbx: halted at `{}`: the first global state where it holds\n",
        state.predicate
    );
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
