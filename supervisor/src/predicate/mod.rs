//! The `stop if` predicate language, on the supervisor's side.
//!
//! A predicate goes through three steps before a replay can halt on it:
//!
//! 1. [`parse`]: text to tree ([`Expr`], shared with the LD in [`ddbx_wire::pred`]: the tree,
//!    its printing and its evaluation live there), or a [`ParseError`] with a column, rendered
//!    with a caret by [`ParseError::render`]; the lexer (`lex`) cuts the text into tokens
//!    that know their column, the parser (`parse`) has one function per precedence level;
//! 2. [`resolve`]: every variable gets its actor id, using what the recording knows (a
//!    [`Catalog`]: its actors, their program names, the probes they publish), and the types are
//!    checked; or a [`ResolveError`] naming the variable;
//! 3. [`classify`]: a conjunction of simple predicates, one per actor ([`Class::Conjunctive`]:
//!    ddbx can halt exactly at the first state where it holds), or anything else
//!    ([`Class::General`], with the reason).
//!
//! What can go wrong at each step is in `errors`. The user's reference page is
//! [`REFERENCE`] (`ddbx help predicates`); the tests (`tests`) check that its examples mean
//! what it says.

mod classify;
mod errors;
mod lex;
mod parse;
mod resolve;
#[cfg(test)]
mod tests;

pub use classify::{Class, classify};
pub use ddbx_wire::pred::{ActorRef, BinOp, Expr, MemType, Value, VarRef};
pub use errors::{ParseError, ResolveError};
pub use parse::{MAX_DEPTH, MAX_NESTING, parse};
pub use resolve::{Catalog, resolve, resolve_value};

/// The user's reference page for the predicate language, in Markdown.
pub const REFERENCE: &str = include_str!("reference.md");
