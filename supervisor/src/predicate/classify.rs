//! Which predicates ddbx can halt on exactly.
//!
//! A conjunctive predicate (CP) is a conjunction of simple predicates, each over one actor's
//! variables: each actor can tell alone whether its part holds, and the least consistent global
//! state where all parts hold, Inf(P), is unique. Anything else (a disjunction over several
//! actors, `x1 == x2`) has no such state in general (paper 003, §4): ddbx reports the first
//! state it sees where it holds, and says so.

use super::errors::ActorAnd;
use ddbx_wire::ActorId;
use ddbx_wire::pred::{BinOp, Expr};
use std::collections::BTreeMap;

/// What kind of predicate an expression is.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Class {
    /// A conjunction of simple predicates: per actor (in id order), the and of its parts.
    Conjunctive(Vec<(ActorId, Expr)>),
    /// Anything else, and why it is not conjunctive.
    General {
        /// The reason, for the user.
        reason: String,
    },
}

const TAIL: &str = "so ddbx cannot halt exactly at the first state where it holds; it is \
                    reported where it is first seen";

/// Classifies a resolved predicate (see [`resolve`](super::resolve)).
///
/// Conjunctions may nest in any way; `!` is pushed inwards by De Morgan's laws, so
/// `!(x1 == 1 || x4 == 1)` is conjunctive (`!(x1 == 1) && !(x4 == 1)`). A part that is itself a
/// disjunction over one actor's variables is still simple. A part over no variable at all joins
/// the lowest actor's simple predicate; a predicate with no variable is general.
pub fn classify(expr: &Expr) -> Class {
    if let Some(v) = expr.vars().into_iter().find(|v| v.actor_id().is_none()) {
        return Class::General {
            reason: format!("`{v}` is not resolved to an actor: resolve the predicate first"),
        };
    }
    if expr.vars().is_empty() {
        return Class::General {
            reason: format!(
                "`{expr}` mentions no variable: it does not depend on the run, so there is no \
                 first state where it becomes true"
            ),
        };
    }
    let mut parts = Vec::new();
    conjuncts(expr, false, &mut parts);
    let mut groups: BTreeMap<ActorId, Vec<Expr>> = BTreeMap::new();
    let mut constants = Vec::new();
    for part in parts {
        let actors = part.actors();
        match actors.len() {
            0 => constants.push(part),
            1 => groups
                .entry(*actors.first().unwrap_or(&ActorId::ROOT))
                .or_default()
                .push(part),
            _ => {
                let ids: Vec<ActorId> = actors.into_iter().collect();
                return Class::General {
                    reason: why_general(&part, &ids),
                };
            }
        }
    }
    if let Some(first) = groups.values_mut().next() {
        first.extend(constants);
    }
    Class::Conjunctive(
        groups
            .into_iter()
            .map(|(actor, parts)| {
                let joined = Expr::chain(BinOp::And, parts);
                // Every group has at least one part.
                (actor, joined.unwrap_or(Expr::Int(0)))
            })
            .collect(),
    )
}

/// Appends the conjuncts of `expr` (of `!expr` when `negated`) to `out`.
fn conjuncts(expr: &Expr, negated: bool, out: &mut Vec<Expr>) {
    match (expr, negated) {
        (Expr::Bin(BinOp::And, l, r), false) | (Expr::Bin(BinOp::Or, l, r), true) => {
            conjuncts(l, negated, out);
            conjuncts(r, negated, out);
        }
        (Expr::Not(e), _) => conjuncts(e, !negated, out),
        (leaf, false) => out.push(leaf.clone()),
        (leaf, true) => out.push(Expr::logical_not(leaf.clone())),
    }
}

/// Why a part over several actors makes the predicate general.
fn why_general(part: &Expr, actors: &[ActorId]) -> String {
    let mut core = part;
    let mut negated = false;
    while let Expr::Not(e) = core {
        core = e;
        negated = !negated;
    }
    let who = ActorAnd(actors);
    match (core, negated) {
        (Expr::Bin(BinOp::Or, ..), false) | (Expr::Bin(BinOp::And, ..), true) => format!(
            "`{part}` is a disjunction over {who}: it can become true in any of them first, {TAIL}"
        ),
        (Expr::Bin(op, ..), _) if op.is_comparison() => {
            format!("`{part}` compares variables of {who}: no process can decide it alone, {TAIL}")
        }
        _ => {
            format!("`{part}` combines variables of {who}: no process can decide it alone, {TAIL}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::parse;

    /// Parses a predicate written with `pN.` everywhere (already resolved).
    fn class(text: &str) -> Class {
        classify(&parse(text).unwrap())
    }

    fn cp(groups: &[(u32, &str)]) -> Class {
        Class::Conjunctive(
            groups
                .iter()
                .map(|&(a, t)| (ActorId(a), parse(t).unwrap()))
                .collect(),
        )
    }

    fn reason(c: Class) -> String {
        match c {
            Class::General { reason } => reason,
            other => panic!("expected a general predicate, got {other:?}"),
        }
    }

    #[test]
    fn predicate_classify_groups_conjuncts_per_actor() {
        assert_eq!(
            class("p1.x == 1 && p4.x == 1"),
            cp(&[(1, "p1.x == 1"), (4, "p4.x == 1")])
        );
        assert_eq!(
            class("p4.x == 1 && (p1.y > 2 && p4.z < 3) && p1.w != 0"),
            cp(&[(1, "p1.y > 2 && p1.w != 0"), (4, "p4.x == 1 && p4.z < 3")])
        );
        assert_eq!(class("p3.events >= 17"), cp(&[(3, "p3.events >= 17")]));
    }

    #[test]
    fn predicate_classify_keeps_single_actor_disjunctions_simple() {
        assert_eq!(
            class("(p1.x == 1 || p1.y == 2) && p2.z == 3"),
            cp(&[(1, "p1.x == 1 || p1.y == 2"), (2, "p2.z == 3")])
        );
        assert_eq!(
            class("p1.x == 1 || p1.y == 2"),
            cp(&[(1, "p1.x == 1 || p1.y == 2")])
        );
        // A comparison of two variables of the same actor is simple too.
        assert_eq!(class("p2.a < p2.b"), cp(&[(2, "p2.a < p2.b")]));
    }

    #[test]
    fn predicate_classify_pushes_negation_inwards() {
        assert_eq!(
            class("!(p1.x == 1 || p4.x == 1)"),
            cp(&[(1, "!(p1.x == 1)"), (4, "!(p4.x == 1)")])
        );
        assert_eq!(
            class("!!(p1.x == 1 && p4.x == 1)"),
            cp(&[(1, "p1.x == 1"), (4, "p4.x == 1")])
        );
        let r = reason(class("!(p1.x == 1 && p4.x == 1)"));
        assert!(r.contains("is a disjunction over p1 and p4"), "{r}");
    }

    #[test]
    fn predicate_classify_rejects_disjunctions_over_actors() {
        let r = reason(class("p1.x == 1 || p4.x == 1"));
        assert_eq!(
            r,
            "`p1.x == 1 || p4.x == 1` is a disjunction over p1 and p4: it can become true in any \
             of them first, so ddbx cannot halt exactly at the first state where it holds; it is \
             reported where it is first seen"
        );
        let r = reason(class("p2.y == 0 && (p1.x == 1 || p4.x == 1)"));
        assert!(
            r.starts_with("`p1.x == 1 || p4.x == 1` is a disjunction"),
            "{r}"
        );
    }

    #[test]
    fn predicate_classify_rejects_cross_actor_comparisons() {
        let r = reason(class("p1.x == p2.x"));
        assert_eq!(
            r,
            "`p1.x == p2.x` compares variables of p1 and p2: no process can decide it alone, so \
             ddbx cannot halt exactly at the first state where it holds; it is reported where \
             it is first seen"
        );
        let r = reason(class("p3.a == 1 && p1.x + p2.y + p3.z > 0"));
        assert!(r.contains("compares variables of p1, p2 and p3"), "{r}");
    }

    #[test]
    fn predicate_classify_constants() {
        let r = reason(class("1 == 1"));
        assert!(r.contains("mentions no variable"), "{r}");
        assert_eq!(
            class("p2.x == 1 && 1 < 2 && p1.y == 0"),
            cp(&[(1, "p1.y == 0 && 1 < 2"), (2, "p2.x == 1")])
        );
    }

    #[test]
    fn predicate_classify_needs_resolved_names() {
        let r = reason(class("count == 1"));
        assert!(r.contains("`count` is not resolved"), "{r}");
    }
}
