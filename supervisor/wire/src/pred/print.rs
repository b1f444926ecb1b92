//! Printing a predicate back in the language: parentheses by precedence, so that parsing the
//! printed text gives the same tree.

use super::{ActorRef, BinOp, Expr, MemType, VarRef};
use std::fmt;

const PREC_OR: u8 = 1;
const PREC_AND: u8 = 2;
const PREC_NOT: u8 = 3;
const PREC_CMP: u8 = 4;
const PREC_SUM: u8 = 5;
const PREC_NEG: u8 = 6;
const PREC_ATOM: u8 = 7;

impl BinOp {
    /// Binding strength, higher binds tighter: `||` 1, `&&` 2, comparisons 4, `+ -` 5
    /// (`!` is 3 and unary minus 6; see [`Expr`]'s `Display`).
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => PREC_OR,
            BinOp::And => PREC_AND,
            BinOp::Add | BinOp::Sub => PREC_SUM,
            _ => PREC_CMP,
        }
    }
}

impl fmt::Display for BinOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

impl fmt::Display for VarRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.actor {
            ActorRef::Id(a) => write!(f, "{a}.")?,
            ActorRef::Program(p) => write!(f, "{p}.")?,
            ActorRef::Unqualified => {}
        }
        f.write_str(&self.name)?;
        if self.ty != MemType::default() {
            write!(f, ":{}", self.ty)?;
        }
        Ok(())
    }
}

impl Expr {
    /// Binding strength of the expression's outermost operator (atoms bind tightest).
    fn precedence(&self) -> u8 {
        match self {
            Expr::Int(n) if *n < 0 => PREC_NEG,
            Expr::Int(_) | Expr::Str(_) | Expr::Var(_) => PREC_ATOM,
            Expr::Not(_) => PREC_NOT,
            Expr::Neg(_) => PREC_NEG,
            Expr::Bin(op, _, _) => op.precedence(),
        }
    }

    /// Writes the expression, in parentheses if it binds less tightly than `min`.
    fn write_at(&self, f: &mut fmt::Formatter<'_>, min: u8) -> fmt::Result {
        if self.precedence() < min {
            f.write_str("(")?;
            self.write_bare(f)?;
            f.write_str(")")
        } else {
            self.write_bare(f)
        }
    }

    fn write_bare(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Int(n) => write!(f, "{n}"),
            Expr::Str(s) => write_str_literal(f, s),
            Expr::Var(v) => write!(f, "{v}"),
            Expr::Not(e) => {
                f.write_str("!")?;
                match **e {
                    // `!!c`, `!p1.x`; anything else in parentheses for the reader, although
                    // `!` binds more loosely than comparisons (`!a == b` is `!(a == b)`).
                    Expr::Not(_) | Expr::Var(_) | Expr::Int(_) | Expr::Str(_) => e.write_at(f, 0),
                    _ => e.write_at(f, u8::MAX),
                }
            }
            Expr::Neg(e) => {
                f.write_str("-")?;
                match **e {
                    // `-5` is the literal Int(-5): Neg(Int(5)) must print as `-(5)`, while
                    // Neg(Int(-5)) is `--5` as written (no parenthesis: one level less).
                    Expr::Int(n) if n < 0 => write!(f, "{n}"),
                    Expr::Int(_) => e.write_at(f, u8::MAX),
                    _ => e.write_at(f, PREC_NEG),
                }
            }
            Expr::Bin(op, l, r) => {
                let p = op.precedence();
                // Left-associative `&& || + -`; comparisons do not chain, so neither side may
                // be a bare comparison.
                let (lmin, rmin) = if op.is_comparison() {
                    (p + 1, p + 1)
                } else {
                    (p, p + 1)
                };
                l.write_at(f, lmin)?;
                write!(f, " {op} ")?;
                r.write_at(f, rmin)
            }
        }
    }
}

impl fmt::Display for Expr {
    /// Prints the expression in the predicate language; parsing the text gives it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_at(f, 0)
    }
}

/// Writes `s` as a string literal: in double quotes, `"` and `\` escaped.
pub(super) fn write_str_literal(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        if c == '"' || c == '\\' {
            f.write_str("\\")?;
        }
        write!(f, "{c}")?;
    }
    f.write_str("\"")
}
