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
//! * `ast`: the tree;
//! * `mem`: how a global variable is read from memory;
//! * `print`: the tree as text;
//! * `eval`: its value;
//! * `postfix`: the tree flat, as the protocol carries it (no depth limit).
//!
//! Evaluation rules (also in the user's reference page):
//!
//! * integers are `i64`; `+` and `-` fail on overflow instead of wrapping;
//! * comparisons need two integers or two strings (`==`/`!=` also compare two conditions);
//!   anything else is an [`EvalError`];
//! * a variable that has no value yet makes every comparison it takes part in false;
//! * `&&` and `||` evaluate left to right and stop as soon as the result is known.

mod ast;
mod eval;
mod mem;
pub mod postfix;
mod print;
#[cfg(test)]
mod tests;

pub use crate::counters::is_counter;
pub use ast::{ActorRef, BinOp, Expr, FLAT_CHAIN, VarRef};
pub use eval::{EvalError, Kind, UnOp, Value, eval, holds};
pub use mem::MemType;
