//! The predicate's tree: expressions ([`Expr`]), their operators ([`BinOp`]) and the
//! variables they read ([`VarRef`], naming an actor by [`ActorRef`], read from memory as a
//! [`MemType`]).

use super::MemType;
use crate::ids::ActorId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A predicate or a part of one.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Expr {
    /// An integer literal (`17`, `-3`).
    Int(i64),
    /// A string literal (`"ready"`).
    Str(String),
    /// A variable of some actor (`p3.count`).
    Var(VarRef),
    /// Logical negation (`!c`).
    Not(Box<Expr>),
    /// Integer negation (`-e`, where `e` is not a literal: `-5` is [`Expr::Int`]).
    Neg(Box<Expr>),
    /// A binary operation.
    Bin(BinOp, Box<Expr>, Box<Expr>),
}

/// A binary operator.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum BinOp {
    /// `+` on integers.
    Add,
    /// `-` on integers.
    Sub,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `&&`.
    And,
    /// `||`.
    Or,
}

impl BinOp {
    /// Every operator, for generators and tables.
    pub const ALL: [BinOp; 10] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::And,
        BinOp::Or,
    ];

    /// The operator as written (`"<="`).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    /// Whether this is one of the six comparisons.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// A variable reference: whose, which, and how to read it from memory.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
pub struct VarRef {
    /// Whose variable it is. After resolution, always [`ActorRef::Id`].
    pub actor: ActorRef,
    /// The variable's name: a probe name, a built-in counter, or a global symbol.
    pub name: String,
    /// How to read it when it is a global variable in memory (ignored for probes and counters).
    pub ty: MemType,
}

impl VarRef {
    /// A variable of actor `actor`, read as `int` if it comes from memory.
    pub fn of(actor: ActorId, name: impl Into<String>) -> VarRef {
        VarRef {
            actor: ActorRef::Id(actor),
            name: name.into(),
            ty: MemType::default(),
        }
    }

    /// The actor id, once resolved.
    pub fn actor_id(&self) -> Option<ActorId> {
        match self.actor {
            ActorRef::Id(a) => Some(a),
            _ => None,
        }
    }
}

/// The longest chain of `&&` or `||` that [`Expr::chain`] groups to the left as written.
pub const FLAT_CHAIN: usize = 64;

/// How a variable names its actor.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
pub enum ActorRef {
    /// By id: `p3.count`.
    Id(ActorId),
    /// By program name (the basename of argv\[0\]), which must name one actor: `server_x.count`.
    Program(String),
    /// Not at all: `count` (one actor publishes it) or `x4` (`x` of `p4`).
    Unqualified,
}

impl Expr {
    /// A binary expression.
    pub fn bin(op: BinOp, left: Expr, right: Expr) -> Expr {
        Expr::Bin(op, Box::new(left), Box::new(right))
    }

    /// `operands` joined by `op`, grouped to the left as the parser reads `a && b && c`; `None`
    /// when there are none.
    ///
    /// A chain of `&&` or `||` longer than [`FLAT_CHAIN`] is grouped so that the tree stays
    /// shallow (everything that walks a predicate recurses, in the debuggees too): its first
    /// operand, then `FLAT_CHAIN - 1` parenthesised chains of the rest, each built the same
    /// way. `&&` and `||` are associative and evaluate left to right, so the grouping changes
    /// nothing of the value; the printed form shows the groups, and parses back to this tree.
    /// `+` and `-` chains are always grouped to the left (regrouping a sum can change where it
    /// overflows).
    pub fn chain(op: BinOp, operands: Vec<Expr>) -> Option<Expr> {
        let join = |parts: Vec<Expr>| parts.into_iter().reduce(|l, r| Expr::bin(op, l, r));
        if operands.len() <= FLAT_CHAIN || !matches!(op, BinOp::And | BinOp::Or) {
            return join(operands);
        }
        let mut rest = operands.into_iter();
        let first = rest.next()?;
        let rest: Vec<Expr> = rest.collect();
        let groups = FLAT_CHAIN - 1;
        let (n, mut rest) = (rest.len(), rest.into_iter());
        let mut top = vec![first];
        for g in 0..groups {
            let size = n / groups + usize::from(g < n % groups);
            top.push(Expr::chain(op, rest.by_ref().take(size).collect())?);
        }
        join(top)
    }

    /// How many levels [`Expr::chain`] adds above its deepest operand, at most, for `n`
    /// operands joined by `op`.
    pub fn chain_depth(op: BinOp, n: usize) -> usize {
        if n <= FLAT_CHAIN || !matches!(op, BinOp::And | BinOp::Or) {
            return n.saturating_sub(1);
        }
        let group = (n - 1).div_ceil(FLAT_CHAIN - 1);
        FLAT_CHAIN - 1 + Expr::chain_depth(op, group)
    }

    /// `!e`.
    pub fn logical_not(e: Expr) -> Expr {
        Expr::Not(Box::new(e))
    }

    /// `-e`.
    pub fn minus(e: Expr) -> Expr {
        Expr::Neg(Box::new(e))
    }

    /// The actors whose variables the expression reads (resolved references only).
    pub fn actors(&self) -> BTreeSet<ActorId> {
        self.vars()
            .into_iter()
            .filter_map(VarRef::actor_id)
            .collect()
    }

    /// The variables the expression reads, in order of first appearance, each once.
    pub fn vars(&self) -> Vec<&VarRef> {
        let mut out = Vec::new();
        self.collect_vars(&mut out);
        out
    }

    fn collect_vars<'a>(&'a self, out: &mut Vec<&'a VarRef>) {
        match self {
            Expr::Int(_) | Expr::Str(_) => {}
            Expr::Var(v) => {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
            Expr::Not(e) | Expr::Neg(e) => e.collect_vars(out),
            Expr::Bin(_, l, r) => {
                l.collect_vars(out);
                r.collect_vars(out);
            }
        }
    }
}
