//! A predicate on the wire, flat: the tree in postfix order (`[Var(a), Int(1), Bin(Eq)]`),
//! so that reading it back needs no recursion however deep the tree is.
//!
//! The nested RON form of [`Expr`] hits the RON reader's recursion limit (128 levels): a
//! conjunction of 39 conditions was a `Welcome` that no LD could read. The GD sends each LD its
//! simple predicate in this form (`#[serde(with = "crate::pred::postfix")]` on the protocol's
//! `Option<Expr>` fields); everything else keeps the tree.

use super::ast::{BinOp, Expr, VarRef};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One step of the postfix form: a leaf pushes a value, an operator pops its operands.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
enum Op {
    /// An integer literal.
    Int(i64),
    /// A string literal.
    Str(String),
    /// A variable.
    Var(VarRef),
    /// `!` of the top.
    Not,
    /// `-` of the top.
    Neg,
    /// The operator applied to the two top values (the deeper one is the left operand).
    Bin(BinOp),
}

/// `expr` in postfix order, walked with a stack of our own.
fn flatten(expr: &Expr) -> Vec<Op> {
    // Each node is visited twice: on the way down (push its children, then itself again
    // marked as done) and on the way up (emit it).
    let mut out = Vec::new();
    let mut todo: Vec<(&Expr, bool)> = vec![(expr, false)];
    while let Some((node, children_done)) = todo.pop() {
        match node {
            Expr::Int(i) => out.push(Op::Int(*i)),
            Expr::Str(s) => out.push(Op::Str(s.clone())),
            Expr::Var(v) => out.push(Op::Var(v.clone())),
            Expr::Not(e) | Expr::Neg(e) if !children_done => {
                todo.push((node, true));
                todo.push((e, false));
            }
            Expr::Not(_) => out.push(Op::Not),
            Expr::Neg(_) => out.push(Op::Neg),
            Expr::Bin(_, l, r) if !children_done => {
                todo.push((node, true));
                todo.push((r, false));
                todo.push((l, false));
            }
            Expr::Bin(op, _, _) => out.push(Op::Bin(*op)),
        }
    }
    out
}

/// The tree of a postfix form, or what is wrong with it.
fn rebuild(ops: Vec<Op>) -> Result<Expr, String> {
    let mut stack: Vec<Expr> = Vec::new();
    let underflow = |i: usize| format!("step {i} of the predicate has no operand");
    for (i, op) in ops.into_iter().enumerate() {
        let node = match op {
            Op::Int(n) => Expr::Int(n),
            Op::Str(s) => Expr::Str(s),
            Op::Var(v) => Expr::Var(v),
            Op::Not => Expr::Not(Box::new(stack.pop().ok_or_else(|| underflow(i))?)),
            Op::Neg => Expr::Neg(Box::new(stack.pop().ok_or_else(|| underflow(i))?)),
            Op::Bin(op) => {
                let r = stack.pop().ok_or_else(|| underflow(i))?;
                let l = stack.pop().ok_or_else(|| underflow(i))?;
                Expr::Bin(op, Box::new(l), Box::new(r))
            }
        };
        stack.push(node);
    }
    match (stack.pop(), stack.is_empty()) {
        (Some(e), true) => Ok(e),
        (None, _) => Err("an empty predicate".into()),
        (Some(_), false) => Err(format!(
            "expected one predicate, found {} left over",
            stack.len() + 1
        )),
    }
}

/// Serialises an optional predicate in postfix form.
pub fn serialize<S: Serializer>(sp: &Option<Expr>, s: S) -> Result<S::Ok, S::Error> {
    sp.as_ref().map(flatten).serialize(s)
}

/// Reads an optional predicate in postfix form.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Expr>, D::Error> {
    let ops: Option<Vec<Op>> = Option::deserialize(d)?;
    ops.map(rebuild)
        .transpose()
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ActorId;

    fn cond(i: i64) -> Expr {
        Expr::Bin(
            BinOp::Ge,
            Box::new(Expr::Var(VarRef::of(ActorId(2), "events"))),
            Box::new(Expr::Int(i)),
        )
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Carrier {
        #[serde(with = "super")]
        sp: Option<Expr>,
    }

    #[test]
    fn a_deep_predicate_round_trips_through_ron() {
        let mut e = cond(0);
        for i in 1..2000 {
            e = Expr::Bin(BinOp::And, Box::new(e), Box::new(cond(i)));
        }
        let e = Expr::Not(Box::new(Expr::Neg(Box::new(e))));
        let carrier = Carrier { sp: Some(e) };
        let line = ron::to_string(&carrier).unwrap();
        let back: Carrier = ron::from_str(&line).unwrap();
        assert_eq!(back, carrier);
        let none = Carrier { sp: None };
        assert_eq!(
            ron::from_str::<Carrier>(&ron::to_string(&none).unwrap()).unwrap(),
            none
        );
    }

    #[test]
    fn a_malformed_postfix_form_is_an_error() {
        for bad in [
            "(sp: Some([Not]))",
            "(sp: Some([]))",
            "(sp: Some([Int(1), Int(2)]))",
        ] {
            assert!(ron::from_str::<Carrier>(bad).is_err(), "{bad}");
        }
    }
}
