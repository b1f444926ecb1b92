//! Names to actors, then types: every variable of a parsed predicate gets its actor id from
//! what the recording knows (a [`Catalog`]), and the operands are checked against their
//! operators; or a [`ResolveError`] names the first variable or subexpression that is wrong.

use super::errors::ResolveError;
use ddbx_wire::ActorId;
use ddbx_wire::pred::{ActorRef, BinOp, Expr, VarRef, is_counter};

/// What name resolution needs to know about a recording.
pub trait Catalog {
    /// Every actor of the recording.
    fn actors(&self) -> Vec<ActorId>;
    /// The program names (basenames of argv\[0\]) actor `a` ran, one per process image.
    fn program_names(&self, a: ActorId) -> Vec<String>;
    /// Whether actor `a` publishes a probe variable `name` (the built-in counters need not be
    /// reported: every actor has them).
    fn publishes(&self, a: ActorId, name: &str) -> bool;
}

/// Gives every variable of `expr` its actor id, then checks the types.
///
/// * `pN.name` must name an actor of the recording; `name` itself is accepted as it is (a
///   probe, a counter, or a global variable the LD will look up in memory);
/// * `program.name`: exactly one actor must have run `program`;
/// * a bare `name` must be published by exactly one actor (the counters are published by all);
///   failing that, a name ending in digits, `x4`, is `x` of `p4`.
///
/// The first variable that cannot be resolved is reported.
pub fn resolve(expr: Expr, catalog: &dyn Catalog) -> Result<Expr, ResolveError> {
    let mut actors = catalog.actors();
    actors.sort();
    actors.dedup();
    let resolved = resolve_in(expr, catalog, &actors)?;
    match type_of(&resolved)? {
        Ty::Bool => Ok(resolved),
        other => Err(ResolveError::Type {
            expr: resolved.to_string(),
            why: format!(
                "a predicate must be a condition such as `p1.x == 1`, found {}",
                other.describe()
            ),
        }),
    }
}

/// Like [`resolve`], for an expression whose value is shown rather than tested (`trace EXPR`):
/// any type is accepted, but the operands must still fit their operators.
pub fn resolve_value(expr: Expr, catalog: &dyn Catalog) -> Result<Expr, ResolveError> {
    let mut actors = catalog.actors();
    actors.sort();
    actors.dedup();
    let resolved = resolve_in(expr, catalog, &actors)?;
    type_of(&resolved)?;
    Ok(resolved)
}

fn resolve_in(expr: Expr, catalog: &dyn Catalog, actors: &[ActorId]) -> Result<Expr, ResolveError> {
    let go = |e: Box<Expr>| resolve_in(*e, catalog, actors).map(Box::new);
    Ok(match expr {
        Expr::Int(_) | Expr::Str(_) => expr,
        Expr::Var(v) => Expr::Var(resolve_var(&v, catalog, actors)?),
        Expr::Not(e) => Expr::Not(go(e)?),
        Expr::Neg(e) => Expr::Neg(go(e)?),
        Expr::Bin(op, l, r) => Expr::Bin(op, go(l)?, go(r)?),
    })
}

fn resolve_var(
    v: &VarRef,
    catalog: &dyn Catalog,
    actors: &[ActorId],
) -> Result<VarRef, ResolveError> {
    let with_actor = |a: ActorId, name: &str| VarRef {
        actor: ActorRef::Id(a),
        name: name.to_string(),
        ty: v.ty,
    };
    match &v.actor {
        ActorRef::Id(a) if actors.contains(a) => Ok(v.clone()),
        ActorRef::Id(a) => Err(ResolveError::UnknownActor {
            var: v.to_string(),
            actor: *a,
            valid: actors.to_vec(),
        }),
        ActorRef::Program(program) => {
            let ran: Vec<ActorId> = actors
                .iter()
                .copied()
                .filter(|&a| catalog.program_names(a).contains(program))
                .collect();
            match ran.as_slice() {
                [one] => Ok(with_actor(*one, &v.name)),
                [] => {
                    let mut known: Vec<String> = actors
                        .iter()
                        .flat_map(|&a| catalog.program_names(a))
                        .collect();
                    known.sort();
                    known.dedup();
                    Err(ResolveError::UnknownProgram {
                        var: v.to_string(),
                        program: program.clone(),
                        known,
                    })
                }
                _ => Err(ResolveError::AmbiguousProgram {
                    var: v.to_string(),
                    program: program.clone(),
                    actors: ran,
                }),
            }
        }
        ActorRef::Unqualified => {
            let publishers: Vec<ActorId> = actors
                .iter()
                .copied()
                .filter(|&a| is_counter(&v.name) || catalog.publishes(a, &v.name))
                .collect();
            match publishers.as_slice() {
                [one] => return Ok(with_actor(*one, &v.name)),
                [] => {}
                _ => {
                    return Err(ResolveError::Ambiguous {
                        var: v.to_string(),
                        actors: publishers,
                    });
                }
            }
            // The paper's `x4`: `x` of `p4`.
            let base = v.name.trim_end_matches(|c: char| c.is_ascii_digit());
            let digits = &v.name[base.len()..];
            let number = if base.is_empty() {
                None
            } else {
                digits.parse::<u32>().ok()
            };
            match number.map(ActorId) {
                Some(a) if actors.contains(&a) => Ok(with_actor(a, base)),
                Some(a) => Err(ResolveError::UnknownActorInName {
                    var: v.to_string(),
                    name: base.to_string(),
                    actor: a,
                    valid: actors.to_vec(),
                }),
                None => Err(ResolveError::Unpublished { var: v.to_string() }),
            }
        }
    }
}

/// The static type of an expression. Variables hold an integer or a string, never a condition.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ty {
    Int,
    Str,
    Bool,
    /// A variable: an integer or a string.
    Scalar,
}

impl Ty {
    fn describe(self) -> &'static str {
        match self {
            Ty::Int => "an integer",
            Ty::Str => "a string",
            Ty::Bool => "a condition",
            Ty::Scalar => "a variable's value",
        }
    }

    fn is_int(self) -> bool {
        matches!(self, Ty::Int | Ty::Scalar)
    }
}

fn type_of(expr: &Expr) -> Result<Ty, ResolveError> {
    let wrong = |why: String| ResolveError::Type {
        expr: expr.to_string(),
        why,
    };
    Ok(match expr {
        Expr::Int(_) => Ty::Int,
        Expr::Str(_) => Ty::Str,
        Expr::Var(_) => Ty::Scalar,
        Expr::Not(e) => match type_of(e)? {
            Ty::Bool => Ty::Bool,
            t => {
                return Err(wrong(format!(
                    "`!` needs a condition such as `p1.x == 1`, found {}",
                    t.describe()
                )));
            }
        },
        Expr::Neg(e) => match type_of(e)? {
            t if t.is_int() => Ty::Int,
            t => {
                return Err(wrong(format!(
                    "`-` needs an integer, found {}",
                    t.describe()
                )));
            }
        },
        Expr::Bin(op, l, r) => {
            let (lt, rt) = (type_of(l)?, type_of(r)?);
            let (l, r) = (lt.describe(), rt.describe());
            match op {
                BinOp::Add | BinOp::Sub if lt.is_int() && rt.is_int() => Ty::Int,
                BinOp::Add | BinOp::Sub => {
                    return Err(wrong(format!("`{op}` needs integers, found {l} and {r}")));
                }
                BinOp::And | BinOp::Or if lt == Ty::Bool && rt == Ty::Bool => Ty::Bool,
                BinOp::And | BinOp::Or => {
                    return Err(wrong(format!(
                        "`{op}` needs conditions on both sides, found {l} and {r}"
                    )));
                }
                _ => {
                    let comparable = match (lt, rt) {
                        (Ty::Bool, Ty::Bool) => matches!(op, BinOp::Eq | BinOp::Ne),
                        (Ty::Bool, _) | (_, Ty::Bool) => false,
                        (Ty::Int, Ty::Str) | (Ty::Str, Ty::Int) => false,
                        _ => true,
                    };
                    if !comparable {
                        return Err(wrong(format!("`{op}` cannot compare {l} with {r}")));
                    }
                    Ty::Bool
                }
            }
        }
    })
}
