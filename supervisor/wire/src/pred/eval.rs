//! Evaluating a predicate over the variables' current values ([`eval`], [`holds`]): the rules
//! of the module docs of [`super`], and why an expression has no value ([`EvalError`]).

use super::print::write_str_literal;
use super::{BinOp, Expr, VarRef};
use serde::{Deserialize, Serialize};
use std::fmt;

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

impl EvalError {
    /// `op` applied to two values it does not take.
    fn binary(op: BinOp, left: &Value, right: &Value) -> EvalError {
        EvalError::Binary {
            op,
            left: left.kind(),
            right: right.kind(),
        }
    }

    /// `op` applied to a value it does not take.
    fn unary(op: UnOp, operand: &Value) -> EvalError {
        EvalError::Unary {
            op,
            operand: operand.kind(),
        }
    }
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
            Known(other) => return Err(EvalError::unary(UnOp::Not, &other)),
            Unset(v) => Unset(v),
        },
        Expr::Neg(e) => match eval_partial(e, lookup)? {
            Known(Value::Int(n)) => Known(Value::Int(n.checked_neg().ok_or_else(|| {
                EvalError::Overflow {
                    expr: expr.to_string(),
                }
            })?)),
            Known(other) => return Err(EvalError::unary(UnOp::Neg, &other)),
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
                (Known(a), Known(b)) => return Err(EvalError::binary(*op, &a, &b)),
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
                (Known(a), Known(b)) => return Err(EvalError::binary(*op, &a, &b)),
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
        _ => return Err(EvalError::binary(op, a, b)),
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
