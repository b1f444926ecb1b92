//! The `stop if` predicate language: its syntax tree, how it prints, and how it evaluates.
//!
//! The supervisor parses and resolves a predicate (`p3.count >= 2 && server_y.ready == 1`),
//! classifies it, and sends each LD the simple predicate over that actor's variables; the LD
//! evaluates it inside the debuggee. Both sides therefore share this module, which holds only
//! the tree ([`Expr`]), its values ([`Value`]) and its evaluation ([`eval`], [`holds`]). Parsing,
//! name resolution and classification live in the supervisor (`ddbx_supervisor::predicate`).
//!
//! [`Expr`]'s `Display` prints it back in the language, so that parsing the printed text gives
//! the same tree.
//!
//! Evaluation rules (also in the user's reference page):
//!
//! * integers are `i64`; `+` and `-` fail on overflow instead of wrapping;
//! * comparisons need two integers or two strings (`==`/`!=` also compare two conditions);
//!   anything else is an [`EvalError`];
//! * a variable that has no value yet makes every comparison it takes part in false;
//! * `&&` and `||` evaluate left to right and stop as soon as the result is known.

use crate::ids::ActorId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

pub use crate::counters::is_counter;

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

const PREC_OR: u8 = 1;
const PREC_AND: u8 = 2;
const PREC_NOT: u8 = 3;
const PREC_CMP: u8 = 4;
const PREC_SUM: u8 = 5;
const PREC_NEG: u8 = 6;
const PREC_ATOM: u8 = 7;

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

/// The in-memory type of a global variable read by symbol (little-endian).
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
pub enum MemType {
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`, C's `int`: the default.
    #[default]
    I32,
    /// `i64`.
    I64,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64` (values above `i64::MAX` cannot be represented).
    U64,
}

impl MemType {
    /// Every type, for generators and messages.
    pub const ALL: [MemType; 8] = [
        MemType::I8,
        MemType::I16,
        MemType::I32,
        MemType::I64,
        MemType::U8,
        MemType::U16,
        MemType::U32,
        MemType::U64,
    ];

    /// Its size in bytes.
    pub fn size(self) -> usize {
        match self {
            MemType::I8 | MemType::U8 => 1,
            MemType::I16 | MemType::U16 => 2,
            MemType::I32 | MemType::U32 => 4,
            MemType::I64 | MemType::U64 => 8,
        }
    }

    /// Its name as written after `:` (`"u16"`).
    pub fn name(self) -> &'static str {
        match self {
            MemType::I8 => "i8",
            MemType::I16 => "i16",
            MemType::I32 => "i32",
            MemType::I64 => "i64",
            MemType::U8 => "u8",
            MemType::U16 => "u16",
            MemType::U32 => "u32",
            MemType::U64 => "u64",
        }
    }

    /// The type written `name` (`int` is accepted for `i32`).
    pub fn from_name(name: &str) -> Option<MemType> {
        if name == "int" {
            return Some(MemType::I32);
        }
        MemType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Decodes a value from exactly [`size`](Self::size) little-endian bytes. `None` when the
    /// length is wrong or a `u64` is above `i64::MAX`.
    pub fn decode(self, bytes: &[u8]) -> Option<i64> {
        if bytes.len() != self.size() {
            return None;
        }
        let mut b = [0u8; 8];
        b[..bytes.len()].copy_from_slice(bytes);
        Some(match self {
            MemType::I8 => i64::from(bytes[0] as i8),
            MemType::I16 => i64::from(i16::from_le_bytes([b[0], b[1]])),
            MemType::I32 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            MemType::I64 => i64::from_le_bytes(b),
            MemType::U8 => i64::from(bytes[0]),
            MemType::U16 => i64::from(u16::from_le_bytes([b[0], b[1]])),
            MemType::U32 => i64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            MemType::U64 => i64::try_from(u64::from_le_bytes(b)).ok()?,
        })
    }
}

impl fmt::Display for MemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The value of an expression.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A string.
    Str(String),
    /// A condition's truth.
    Bool(bool),
}

impl Value {
    /// What kind of value it is.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Int(_) => Kind::Int,
            Value::Str(_) => Kind::Str,
            Value::Bool(_) => Kind::Bool,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Str(s) => write_str_literal(f, s),
            Value::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// The kind of a [`Value`], for error messages.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum Kind {
    /// [`Value::Int`].
    Int,
    /// [`Value::Str`].
    Str,
    /// [`Value::Bool`].
    Bool,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Int => "an integer",
            Kind::Str => "a string",
            Kind::Bool => "a condition",
        })
    }
}

/// A unary operator, for error messages.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum UnOp {
    /// `!`.
    Not,
    /// `-`.
    Neg,
}

impl fmt::Display for UnOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnOp::Not => "!",
            UnOp::Neg => "-",
        })
    }
}

/// Why an expression has no value. For a predicate, each of these means "false" ([`holds`]).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum EvalError {
    /// The expression's value depends on a variable that has no value yet (outside of any
    /// comparison: inside one, the comparison is simply false).
    Unset {
        /// The variable.
        var: VarRef,
    },
    /// A binary operator applied to values it does not take (`1 == "a"`, `1 && 2`).
    Binary {
        /// The operator.
        op: BinOp,
        /// The left operand's kind.
        left: Kind,
        /// The right operand's kind.
        right: Kind,
    },
    /// A unary operator applied to a value it does not take (`!1`, `-"a"`).
    Unary {
        /// The operator.
        op: UnOp,
        /// The operand's kind.
        operand: Kind,
    },
    /// Integer arithmetic went outside `i64`.
    Overflow {
        /// The expression that overflowed, as written.
        expr: String,
    },
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Unset { var } => write!(f, "`{var}` has no value yet"),
            EvalError::Binary { op, left, right } => {
                write!(f, "`{op}` cannot take {left} and {right}")
            }
            EvalError::Unary { op, operand } => write!(f, "`{op}` cannot take {operand}"),
            EvalError::Overflow { expr } => write!(f, "`{expr}` overflows a 64-bit integer"),
        }
    }
}

impl std::error::Error for EvalError {}

impl Expr {
    /// A binary expression.
    pub fn bin(op: BinOp, left: Expr, right: Expr) -> Expr {
        Expr::Bin(op, Box::new(left), Box::new(right))
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
                    // `-5` is the literal Int(-5): Neg(Int(5)) must print as `-(5)`.
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

fn write_str_literal(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        if c == '"' || c == '\\' {
            f.write_str("\\")?;
        }
        write!(f, "{c}")?;
    }
    f.write_str("\"")
}

/// An intermediate result: a value, or "depends on a variable with no value yet".
enum Partial<'a> {
    Known(Value),
    Unset(&'a VarRef),
}

/// Evaluates `expr`, asking `lookup` for each variable's current value (`None`: not set yet).
///
/// A comparison involving a variable with no value is false; anything else depending on one is
/// [`EvalError::Unset`]. `&&` and `||` stop at the first operand that decides them.
pub fn eval(
    expr: &Expr,
    lookup: &mut dyn FnMut(&VarRef) -> Option<Value>,
) -> Result<Value, EvalError> {
    match eval_partial(expr, lookup)? {
        Partial::Known(v) => Ok(v),
        Partial::Unset(var) => Err(EvalError::Unset { var: var.clone() }),
    }
}

/// Whether `expr` evaluates to `true`. Errors, unset variables and non-condition values are
/// all "does not hold".
pub fn holds(expr: &Expr, lookup: &mut dyn FnMut(&VarRef) -> Option<Value>) -> bool {
    matches!(eval(expr, lookup), Ok(Value::Bool(true)))
}

fn eval_partial<'a>(
    expr: &'a Expr,
    lookup: &mut dyn FnMut(&VarRef) -> Option<Value>,
) -> Result<Partial<'a>, EvalError> {
    use Partial::{Known, Unset};
    Ok(match expr {
        Expr::Int(n) => Known(Value::Int(*n)),
        Expr::Str(s) => Known(Value::Str(s.clone())),
        Expr::Var(v) => match lookup(v) {
            Some(value) => Known(value),
            None => Unset(v),
        },
        Expr::Not(e) => match eval_partial(e, lookup)? {
            Known(Value::Bool(b)) => Known(Value::Bool(!b)),
            Known(other) => {
                return Err(EvalError::Unary {
                    op: UnOp::Not,
                    operand: other.kind(),
                });
            }
            Unset(v) => Unset(v),
        },
        Expr::Neg(e) => match eval_partial(e, lookup)? {
            Known(Value::Int(n)) => Known(Value::Int(n.checked_neg().ok_or_else(|| {
                EvalError::Overflow {
                    expr: expr.to_string(),
                }
            })?)),
            Known(other) => {
                return Err(EvalError::Unary {
                    op: UnOp::Neg,
                    operand: other.kind(),
                });
            }
            Unset(v) => Unset(v),
        },
        Expr::Bin(op @ (BinOp::And | BinOp::Or), l, r) => {
            // The value of the left operand that decides the result on its own.
            let decisive = *op == BinOp::Or;
            let left = eval_partial(l, lookup)?;
            if let Known(Value::Bool(b)) = left
                && b == decisive
            {
                return Ok(Known(Value::Bool(b)));
            }
            let right = eval_partial(r, lookup)?;
            match (left, right) {
                (Known(Value::Bool(_)), Known(Value::Bool(b))) => Known(Value::Bool(b)),
                (Known(a), Known(b)) => {
                    return Err(EvalError::Binary {
                        op: *op,
                        left: a.kind(),
                        right: b.kind(),
                    });
                }
                (Unset(v), _) | (_, Unset(v)) => Unset(v),
            }
        }
        Expr::Bin(op @ (BinOp::Add | BinOp::Sub), l, r) => {
            match (eval_partial(l, lookup)?, eval_partial(r, lookup)?) {
                (Known(Value::Int(a)), Known(Value::Int(b))) => {
                    let sum = if *op == BinOp::Add {
                        a.checked_add(b)
                    } else {
                        a.checked_sub(b)
                    };
                    Known(Value::Int(sum.ok_or_else(|| EvalError::Overflow {
                        expr: expr.to_string(),
                    })?))
                }
                (Known(a), Known(b)) => {
                    return Err(EvalError::Binary {
                        op: *op,
                        left: a.kind(),
                        right: b.kind(),
                    });
                }
                (Unset(v), _) | (_, Unset(v)) => Unset(v),
            }
        }
        Expr::Bin(op, l, r) => {
            let (left, right) = (eval_partial(l, lookup)?, eval_partial(r, lookup)?);
            match (left, right) {
                (Known(a), Known(b)) => Known(Value::Bool(compare(*op, &a, &b)?)),
                // Until a variable is set, any comparison involving it is false.
                _ => Known(Value::Bool(false)),
            }
        }
    })
}

fn compare(op: BinOp, a: &Value, b: &Value) -> Result<bool, EvalError> {
    use std::cmp::Ordering;
    let ordering: Ordering = match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) if matches!(op, BinOp::Eq | BinOp::Ne) => x.cmp(y),
        _ => {
            return Err(EvalError::Binary {
                op,
                left: a.kind(),
                right: b.kind(),
            });
        }
    };
    Ok(match op {
        BinOp::Eq => ordering.is_eq(),
        BinOp::Ne => ordering.is_ne(),
        BinOp::Lt => ordering.is_lt(),
        BinOp::Le => ordering.is_le(),
        BinOp::Gt => ordering.is_gt(),
        BinOp::Ge => ordering.is_ge(),
        // Only comparisons reach here (see eval_partial).
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(actor: u32, name: &str) -> Expr {
        Expr::Var(VarRef::of(ActorId(actor), name))
    }

    fn int(n: i64) -> Expr {
        Expr::Int(n)
    }

    /// Evaluates with p1.x = 1, p1.s = "ab", p2.y = 5; everything else unset.
    fn ev(e: &Expr) -> Result<Value, EvalError> {
        eval(
            e,
            &mut |v: &VarRef| match (v.actor_id().map(|a| a.0), v.name.as_str()) {
                (Some(1), "x") => Some(Value::Int(1)),
                (Some(1), "s") => Some(Value::Str("ab".into())),
                (Some(2), "y") => Some(Value::Int(5)),
                _ => None,
            },
        )
    }

    #[test]
    fn pred_arithmetic_and_comparisons() {
        use BinOp::*;
        let sum = Expr::bin(Add, var(1, "x"), var(2, "y"));
        assert_eq!(ev(&sum), Ok(Value::Int(6)));
        assert_eq!(ev(&Expr::bin(Sub, int(1), int(3))), Ok(Value::Int(-2)));
        assert_eq!(ev(&Expr::minus(var(2, "y"))), Ok(Value::Int(-5)));
        let table = [
            (Eq, [false, true, false]),
            (Ne, [true, false, true]),
            (Lt, [true, false, false]),
            (Le, [true, true, false]),
            (Gt, [false, false, true]),
            (Ge, [false, true, true]),
        ];
        for (op, want) in table {
            for (rhs, w) in [6, 5, 4].into_iter().zip(want) {
                let e = Expr::bin(op, var(2, "y"), int(rhs));
                assert_eq!(ev(&e), Ok(Value::Bool(w)), "{e}");
                assert_eq!(
                    holds(&Expr::bin(op, int(5), int(rhs)), &mut |_| None),
                    w,
                    "5 {op} {rhs}"
                );
            }
        }
    }

    #[test]
    fn pred_strings_compare_lexicographically() {
        let s = |t: &str| Expr::Str(t.into());
        assert_eq!(
            ev(&Expr::bin(BinOp::Eq, var(1, "s"), s("ab"))),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            ev(&Expr::bin(BinOp::Lt, s("ab"), s("b"))),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            ev(&Expr::bin(BinOp::Ge, s("a"), s("ab"))),
            Ok(Value::Bool(false))
        );
    }

    #[test]
    fn pred_logic_short_circuits() {
        use BinOp::*;
        let t = Expr::bin(Eq, int(1), int(1));
        let f = Expr::bin(Eq, int(1), int(2));
        let bad = Expr::bin(Eq, int(1), Expr::Str("a".into()));
        assert_eq!(
            ev(&Expr::bin(And, t.clone(), t.clone())),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            ev(&Expr::bin(And, t.clone(), f.clone())),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            ev(&Expr::bin(Or, f.clone(), t.clone())),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            ev(&Expr::bin(Or, f.clone(), f.clone())),
            Ok(Value::Bool(false))
        );
        assert_eq!(ev(&Expr::logical_not(f.clone())), Ok(Value::Bool(true)));
        // The right side is not evaluated once the left decides.
        assert_eq!(
            ev(&Expr::bin(And, f.clone(), bad.clone())),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            ev(&Expr::bin(Or, t.clone(), bad.clone())),
            Ok(Value::Bool(true))
        );
        assert!(ev(&Expr::bin(And, t, bad)).is_err());
    }

    #[test]
    fn pred_unset_variables_make_comparisons_false() {
        use BinOp::*;
        let unset = var(3, "z");
        for op in [Eq, Ne, Lt, Le, Gt, Ge] {
            let e = Expr::bin(op, unset.clone(), int(0));
            assert_eq!(ev(&e), Ok(Value::Bool(false)), "{e}");
        }
        // Arithmetic on it is still unset, and so still makes the comparison false.
        let e = Expr::bin(Ne, Expr::bin(Add, unset.clone(), int(1)), int(0));
        assert_eq!(ev(&e), Ok(Value::Bool(false)));
        // A negated comparison is therefore true.
        assert_eq!(
            ev(&Expr::logical_not(Expr::bin(Eq, unset.clone(), int(0)))),
            Ok(Value::Bool(true))
        );
        // Outside any comparison it is an error naming the variable.
        let err = ev(&unset).unwrap_err();
        assert_eq!(err.to_string(), "`p3.z` has no value yet");
        assert!(!holds(&unset, &mut |_| None));
    }

    #[test]
    fn pred_type_errors_are_reported_and_false() {
        use BinOp::*;
        let e = Expr::bin(Eq, int(1), Expr::Str("1".into()));
        let err = ev(&e).unwrap_err();
        assert_eq!(
            err,
            EvalError::Binary {
                op: Eq,
                left: Kind::Int,
                right: Kind::Str
            }
        );
        assert_eq!(err.to_string(), "`==` cannot take an integer and a string");
        assert!(!holds(&e, &mut |_| None));
        let and = Expr::bin(And, int(1), int(2));
        assert!(matches!(ev(&and), Err(EvalError::Binary { op: And, .. })));
        let lt = Expr::bin(
            Lt,
            Expr::bin(Eq, int(1), int(1)),
            Expr::bin(Eq, int(1), int(1)),
        );
        assert!(ev(&lt).is_err(), "conditions are not ordered");
        let not = Expr::logical_not(int(1));
        assert_eq!(
            ev(&not).unwrap_err().to_string(),
            "`!` cannot take an integer"
        );
        let neg = Expr::minus(Expr::Str("a".into()));
        assert_eq!(
            ev(&neg).unwrap_err().to_string(),
            "`-` cannot take a string"
        );
        let add = Expr::bin(Add, int(1), Expr::Str("a".into()));
        assert!(ev(&add).is_err());
        // Not a condition: evaluates, but does not hold.
        assert_eq!(ev(&int(1)), Ok(Value::Int(1)));
        assert!(!holds(&int(1), &mut |_| None));
    }

    #[test]
    fn pred_overflow_is_an_error() {
        let e = Expr::bin(BinOp::Add, int(i64::MAX), int(1));
        assert_eq!(
            ev(&e).unwrap_err().to_string(),
            "`9223372036854775807 + 1` overflows a 64-bit integer"
        );
        assert!(ev(&Expr::minus(int(i64::MIN))).is_err());
        assert!(ev(&Expr::bin(BinOp::Sub, int(i64::MIN), int(1))).is_err());
    }

    #[test]
    fn pred_display_parenthesises_by_precedence() {
        use BinOp::*;
        let x = || var(1, "x");
        let e = Expr::bin(
            And,
            Expr::bin(Or, x(), x()),
            Expr::bin(
                Eq,
                Expr::bin(Sub, x(), Expr::bin(Add, x(), int(-5))),
                int(2),
            ),
        );
        assert_eq!(e.to_string(), "(p1.x || p1.x) && p1.x - (p1.x + -5) == 2");
        assert_eq!(Expr::minus(int(5)).to_string(), "-(5)");
        assert_eq!(Expr::minus(Expr::minus(x())).to_string(), "--p1.x");
        assert_eq!(
            Expr::logical_not(Expr::bin(Eq, x(), int(1))).to_string(),
            "!(p1.x == 1)"
        );
        assert_eq!(
            Expr::bin(Eq, Expr::bin(Eq, x(), x()), x()).to_string(),
            "(p1.x == p1.x) == p1.x"
        );
        assert_eq!(Expr::Str("a\"b\\c".into()).to_string(), r#""a\"b\\c""#);
        let typed = VarRef {
            actor: ActorRef::Program("server_x".into()),
            name: "count".into(),
            ty: MemType::U8,
        };
        assert_eq!(typed.to_string(), "server_x.count:u8");
        let bare = VarRef {
            actor: ActorRef::Unqualified,
            name: "x4".into(),
            ty: MemType::I32,
        };
        assert_eq!(bare.to_string(), "x4");
    }

    #[test]
    fn pred_actors_and_vars() {
        use BinOp::*;
        let e = Expr::bin(
            And,
            Expr::bin(Eq, var(4, "x"), int(1)),
            Expr::bin(Lt, var(1, "x"), var(4, "x")),
        );
        assert_eq!(
            e.actors().into_iter().collect::<Vec<_>>(),
            [ActorId(1), ActorId(4)]
        );
        let vars: Vec<String> = e.vars().iter().map(|v| v.to_string()).collect();
        assert_eq!(vars, ["p4.x", "p1.x"]);
    }

    #[test]
    fn pred_mem_types_decode_little_endian() {
        assert_eq!(MemType::I8.decode(&[0xff]), Some(-1));
        assert_eq!(MemType::U8.decode(&[0xff]), Some(255));
        assert_eq!(MemType::I16.decode(&[0x00, 0x80]), Some(-32768));
        assert_eq!(MemType::U16.decode(&[0x00, 0x80]), Some(32768));
        assert_eq!(MemType::I32.decode(&(-7i32).to_le_bytes()), Some(-7));
        assert_eq!(
            MemType::U32.decode(&u32::MAX.to_le_bytes()),
            Some(u32::MAX as i64)
        );
        assert_eq!(MemType::I64.decode(&i64::MIN.to_le_bytes()), Some(i64::MIN));
        assert_eq!(MemType::U64.decode(&u64::MAX.to_le_bytes()), None);
        assert_eq!(MemType::U64.decode(&7u64.to_le_bytes()), Some(7));
        assert_eq!(MemType::I32.decode(&[1, 2]), None, "wrong length");
        for t in MemType::ALL {
            assert_eq!(MemType::from_name(t.name()), Some(t));
            assert_eq!(t.decode(&vec![0; t.size()]), Some(0));
        }
        assert_eq!(MemType::from_name("int"), Some(MemType::I32));
        assert_eq!(MemType::from_name("float"), None);
        assert_eq!(MemType::default(), MemType::I32);
    }

    #[test]
    fn pred_serialises_through_ron() {
        let e = Expr::bin(
            BinOp::And,
            Expr::bin(BinOp::Ge, var(3, "count"), int(2)),
            Expr::logical_not(Expr::bin(BinOp::Eq, var(3, "name"), Expr::Str("a".into()))),
        );
        let text = ron::to_string(&e).unwrap();
        assert_eq!(ron::from_str::<Expr>(&text).unwrap(), e);
        let err = EvalError::Unset {
            var: VarRef::of(ActorId(2), "y"),
        };
        let text = ron::to_string(&err).unwrap();
        assert_eq!(ron::from_str::<EvalError>(&text).unwrap(), err);
    }

    #[test]
    fn pred_counters() {
        assert!(is_counter("events") && is_counter("alive"));
        assert!(!is_counter("count"));
    }
}
