//! A live run (`ddbx run --break-if P`, paper 001): the program runs in real time and is
//! recorded as it runs, as `ddbx record` does; where P first holds it is halted without
//! replay. The actor whose condition completes P stops there; every other one stops lazily, at
//! its next interaction with a stopped one (`supervisor/src/session/live.rs`), and the ones
//! that never interact with it run on. A [`LiveDriver`] decides at each halt how to go on:
//! look again (the state changes while it stands), `cont`, hold, or end every process (the
//! recording then ends there, and replays to it).

use super::record::{Run, record_run};
use super::{RecordOptions, RecordOutcome};
use crate::error::Error;
use ddbx_supervisor::predicate::{self, Catalog, Class};
use ddbx_supervisor::session::{HaltAction, HaltRequest, HaltedState, LiveRequest};
use ddbx_supervisor::wire::ActorId;
use ddbx_supervisor::wire::pred::{ActorRef, Expr, VarRef};
use std::sync::{Arc, Mutex};

/// Decides at each halt of a live run how to go on; called again with the state as it is
/// now after [`HaltAction::Refresh`].
pub type LiveDriver = Box<dyn FnMut(&HaltedState) -> HaltAction + Send>;

/// What to run live.
pub struct RunOptions {
    /// The record's options: command, recording directory, messages, observer.
    pub record: RecordOptions,
    /// The breakpoint: a conjunction of conditions on single processes, named `pN.var` (or
    /// `varN`) or `program.var` (the first process image that runs `program`), over probes
    /// and counters (`p2.recvs >= 3 && redis-server.accepts >= 4`).
    pub break_if: String,
    /// How to go on at each halt (`None`: end every process at the first one, or hold them
    /// with `hold`).
    pub driver: Option<LiveDriver>,
    /// Without a driver: keep the processes at the halt until ddbx is interrupted.
    pub hold: bool,
}

/// What a live run did.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The record (its directory replays to where the run ended).
    pub record: RecordOutcome,
    /// Each halt, as the driver last saw it.
    pub halts: Vec<HaltedState>,
}

/// The actors a live predicate may name: none is known before the run, so `pN` names any
/// actor the run will have, a bare `xN` is `x` of `pN`, and `program.x` is `x` of the first
/// process image that runs `program` (a placeholder id until it joins).
struct LiveCatalog {
    /// How many programs the predicate names (their placeholders).
    programs: u32,
}

/// Highest actor number a live predicate may name.
const MAX_ACTOR: u32 = 100_000;
/// The placeholder id of the first program a live predicate names (then one per program).
const PLACEHOLDER: u32 = 1_000_000;

impl Catalog for LiveCatalog {
    fn actors(&self) -> Vec<ActorId> {
        (1..=MAX_ACTOR)
            .chain(PLACEHOLDER..PLACEHOLDER + self.programs)
            .map(ActorId)
            .collect()
    }

    fn program_names(&self, _: ActorId) -> Vec<String> {
        Vec::new()
    }

    fn publishes(&self, _: ActorId, _: &str) -> bool {
        false
    }
}

/// `expr` with each `program.x` made `x` of a placeholder actor, one per program (added to
/// `programs`, in order).
fn placeholders(expr: Expr, programs: &mut Vec<String>) -> Expr {
    let mut go = |e: Box<Expr>| Box::new(placeholders(*e, programs));
    match expr {
        Expr::Var(VarRef {
            actor: ActorRef::Program(program),
            name,
            ty,
        }) => {
            let index = match programs.iter().position(|p| *p == program) {
                Some(i) => i,
                None => {
                    programs.push(program);
                    programs.len() - 1
                }
            };
            Expr::Var(VarRef {
                actor: ActorRef::Id(ActorId(PLACEHOLDER + index as u32)),
                name,
                ty,
            })
        }
        Expr::Not(e) => Expr::Not(go(e)),
        Expr::Neg(e) => Expr::Neg(go(e)),
        Expr::Bin(op, l, r) => {
            let l = go(l);
            Expr::Bin(op, l, go(r))
        }
        other => other,
    }
}

/// The halt request of `--break-if text`, which must be conjunctive.
fn break_request(text: &str) -> Result<LiveRequest, Error> {
    let parsed = predicate::parse(text)
        .map_err(|e| Error::Usage(format!("--break-if: {}", e.render(text))))?;
    let mut programs = Vec::new();
    let parsed = placeholders(parsed, &mut programs);
    let catalog = LiveCatalog {
        programs: programs.len() as u32,
    };
    let expr = predicate::resolve(parsed, &catalog)
        .map_err(|e| Error::Usage(format!("--break-if `{text}`: {e}")))?;
    match predicate::classify(&expr) {
        Class::Conjunctive(primary) => Ok(LiveRequest {
            request: HaltRequest {
                primary,
                text: text.to_string(),
            },
            programs: programs
                .into_iter()
                .zip(PLACEHOLDER..)
                .map(|(p, n)| (ActorId(n), p))
                .collect(),
        }),
        Class::General { reason } => Err(Error::Usage(format!(
            "--break-if `{text}`: {reason}. A live run halts at a conjunction of conditions \
             that each involve one process (see `ddbx help predicates`)"
        ))),
    }
}

/// Runs `options.record.command` live, recorded, halting where `options.break_if` holds.
pub fn run_live(options: RunOptions) -> Result<RunOutcome, Error> {
    let request = break_request(&options.break_if)?;
    let RunOptions {
        record: record_options,
        driver,
        hold,
        ..
    } = options;
    let (run, notes) = Run::of(&record_options, "run")?;
    let halts: Arc<Mutex<Vec<HaltedState>>> = Arc::default();
    let on_halt = halt_callback(driver, hold, halts.clone());
    let record = record_run(&record_options, run, None, Some((request, on_halt)), notes)?;
    let mut halts = std::mem::take(&mut *super::lock(&halts));
    // The last look at the last halt is the state the run ended in, if it ended there.
    if let ddbx_supervisor::session::End::Halted(state) = &record.end
        && let Some(last) = halts.last_mut()
    {
        *last = (**state).clone();
    }
    Ok(RunOutcome { record, halts })
}

/// The session's halt callback: keeps each halt's latest state, then asks the driver.
fn halt_callback(
    mut driver: Option<LiveDriver>,
    hold: bool,
    halts: Arc<Mutex<Vec<HaltedState>>>,
) -> ddbx_supervisor::session::OnHalt {
    let mut looking_again = false;
    Box::new(move |state: &HaltedState| {
        {
            let mut halts = super::lock(&halts);
            if looking_again {
                halts.pop();
            }
            halts.push(state.clone());
        }
        let action = match driver.as_mut() {
            Some(driver) => driver(state),
            None if hold => HaltAction::Hold,
            None => HaltAction::Kill,
        };
        looking_again = action == HaltAction::Refresh;
        action
    })
}

/// The halted state of a live run as lines: who stopped where and why, who runs on.
pub fn describe_live(state: &HaltedState) -> String {
    let mut out = format!("ddbx: halted live where `{}` holds\n", state.predicate);
    for a in &state.actors {
        let pid = a.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        if a.status.starts_with("stopped") {
            out.push_str(&format!(
                "  {}{pid}: {} after {} events\n",
                a.actor, a.status, a.events
            ));
        } else {
            out.push_str(&format!("  {}{pid}: {}\n", a.actor, a.status));
        }
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
