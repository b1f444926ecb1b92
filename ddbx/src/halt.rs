//! What a replay halts at, from the user's text: `--stop-if`/`stop if` predicates resolved
//! against a recording ([`Watch`]), `--stop-at` points on the history ([`StopPoint`]), and the
//! [`HaltRequest`] the GD follows, made of the primary predicate and the stop points.
//!
//! A *halt* is one stop of a replay at a consistent global state with every process alive
//! ([`HaltedState`](ddbx_supervisor::session::HaltedState)); this module only says where.

use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::cut::Goal;
use ddbx_supervisor::predicate::{self, Catalog, Class};
use ddbx_supervisor::session::HaltRequest;
use ddbx_supervisor::wire::pred::{BinOp, Expr, VarRef};
use ddbx_supervisor::wire::{ActorId, Record};
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
            h.records
                .iter()
                .any(|r| matches!(r, Record::Probe { name: n, .. } if n == name))
        })
    }
}

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

    /// The predicate as the cut search looks for it.
    pub fn goal(&self) -> Goal<'_> {
        Goal {
            expr: &self.expr,
            parts: self.parts.as_deref(),
        }
    }
}

/// `--stop-at p3:17`: right after p3's 17th event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopPoint {
    /// The actor.
    pub actor: ActorId,
    /// Its event, from 1.
    pub event: u64,
}

impl StopPoint {
    /// Parses `p3:17` (after p3's 17th event) and checks that the recording has that event.
    pub fn parse(text: &str, recording: &Recording) -> Result<StopPoint, Error> {
        // Control characters and the like shown escaped, as the user would have to type them.
        let shown = text.escape_debug();
        let bad = || {
            Error::Usage(format!(
                "--stop-at: expected ACTOR:EVENT such as `p3:17` (after p3's 17th event), found `{shown}`"
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
                "--stop-at {shown}: {actor} has events 1 to {length} in this recording"
            )));
        }
        Ok(StopPoint { actor, event })
    }

    /// The point as its actor's simple predicate: `pN.events >= K`.
    pub fn condition(&self) -> Expr {
        Expr::bin(
            BinOp::Ge,
            Expr::Var(VarRef::of(self.actor, "events")),
            Expr::Int(self.event as i64),
        )
    }

    /// The point as the user reads it in the request's text.
    pub fn text(&self) -> String {
        format!("{}.events >= {}", self.actor, self.event)
    }
}

/// The request that halts at the first global state where the primary predicate holds with
/// every stop point passed (`None`: neither was given). The primary must be conjunctive.
pub fn halt_request(primary: Option<&Watch>, stop_at: &[StopPoint]) -> Option<HaltRequest> {
    if primary.is_none() && stop_at.is_empty() {
        return None;
    }
    let mut per_actor: BTreeMap<ActorId, Expr> = BTreeMap::new();
    let mut join = |actor: ActorId, sp: Expr| {
        let joined = match per_actor.remove(&actor) {
            Some(existing) => Expr::bin(BinOp::And, existing, sp),
            None => sp,
        };
        per_actor.insert(actor, joined);
    };
    let mut texts = Vec::new();
    if let Some(w) = primary {
        texts.push(w.text.clone());
        for (actor, sp) in w.parts.iter().flatten() {
            join(*actor, sp.clone());
        }
    }
    for point in stop_at {
        join(point.actor, point.condition());
        texts.push(point.text());
    }
    Some(HaltRequest {
        primary: per_actor.into_iter().collect(),
        text: texts.join(" && "),
    })
}

/// The halt request for these options, where every `--stop-if` must be halted at exactly
/// (`ddbx inf`): one conjunctive predicate at most. `None`: no predicate, no stop point.
pub fn request(
    recording: &Recording,
    stop_if: &[String],
    stop_at: &[String],
) -> Result<Option<HaltRequest>, Error> {
    let mut primary: Option<Watch> = None;
    for text in stop_if {
        let w = Watch::new(recording, text, "--stop-if")?;
        if let Some(reason) = &w.reason {
            return Err(Error::Usage(format!(
                "--stop-if `{text}`: {reason}. ddbx can halt exactly only at a conjunction \
                 of conditions that each involve one process (see `ddbx help predicates`)"
            )));
        }
        if primary.is_some() {
            return Err(Error::Usage(format!(
                "--stop-if `{text}`: only one primary predicate is halted at for now; \
                 join conditions with `&&` into the first --stop-if"
            )));
        }
        primary = Some(w);
    }
    let points = stop_at
        .iter()
        .map(|text| StopPoint::parse(text, recording))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(halt_request(primary.as_ref(), &points))
}
