//! What can be wrong with a predicate the user typed: its syntax ([`ParseError`], with a column
//! and a caret) or its names and types ([`ResolveError`], naming the variable).

use ddbx_wire::ActorId;
use std::fmt;

/// A syntax error: where, what the parser expected there, and what it found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected {expected}, found {found} at column {col}")]
pub struct ParseError {
    /// The column of the offending token, 1-based, counted in characters.
    pub col: usize,
    /// What would have been accepted there (`an operand such as `p1.x` or `1``).
    pub expected: String,
    /// What was there: a token in backquotes, or `end of input`.
    pub found: String,
}

impl ParseError {
    /// The message, the predicate, and a caret under the column, on three lines (no final
    /// newline):
    ///
    /// ```text
    /// error: expected an operand such as `p1.x` or `1`, found `&&` at column 10
    ///   x1==1 && && x4==1
    ///            ^
    /// ```
    pub fn render(&self, text: &str) -> String {
        // One line, whatever whitespace the user typed, so that the caret lines up.
        let shown: String = text
            .chars()
            .map(|c| {
                if c.is_whitespace() || c.is_control() {
                    ' '
                } else {
                    c
                }
            })
            .collect();
        let pad = " ".repeat(self.col.saturating_sub(1));
        format!("error: {self}\n  {shown}\n  {pad}^")
    }
}

/// A predicate that parses but cannot be evaluated in this recording: a name that does not say
/// which actor, or operands of the wrong type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// `p9.x` where there is no `p9`.
    #[error("in `{var}`: unknown actor `{actor}` (valid: {})", ActorList(valid))]
    UnknownActor {
        /// The variable as written.
        var: String,
        /// The actor it names.
        actor: ActorId,
        /// The recording's actors.
        valid: Vec<ActorId>,
    },
    /// `server_x.count` where no actor ran `server_x`.
    #[error(
        "in `{var}`: no actor ran a program named `{program}` (programs: {}); use an id such as `p1`",
        NameList(known)
    )]
    UnknownProgram {
        /// The variable as written.
        var: String,
        /// The program name it uses.
        program: String,
        /// The program names of the recording.
        known: Vec<String>,
    },
    /// `server_x.count` where several actors ran `server_x`.
    #[error(
        "in `{var}`: program `{program}` names {} actors ({}): use an id",
        actors.len(),
        ActorCommas(actors)
    )]
    AmbiguousProgram {
        /// The variable as written.
        var: String,
        /// The program name it uses.
        program: String,
        /// The actors that ran it.
        actors: Vec<ActorId>,
    },
    /// A bare `count` published by several actors.
    #[error("`{var}` is published by {}: qualify it, e.g. `{}.{var}`", ActorAnd(actors), actors.first().copied().unwrap_or(ActorId::ROOT))]
    Ambiguous {
        /// The variable as written.
        var: String,
        /// The actors that publish it.
        actors: Vec<ActorId>,
    },
    /// A bare `zz` that no actor publishes and that does not end in an actor number.
    #[error(
        "no actor publishes `{var}` and it is not in the `x4` form (`x` of `p4`); name a \
         variable in memory with its actor, e.g. `p1.{var}`"
    )]
    Unpublished {
        /// The variable as written.
        var: String,
    },
    /// A bare `x9` that no actor publishes, read as `x` of `p9`, where there is no `p9`.
    #[error(
        "no actor publishes `{var}`, and `{actor}` (reading it as `{name}` of `{actor}`) is not an actor (valid: {})",
        ActorList(valid)
    )]
    UnknownActorInName {
        /// The variable as written.
        var: String,
        /// The variable name before the actor number.
        name: String,
        /// The actor number it ends with.
        actor: ActorId,
        /// The recording's actors.
        valid: Vec<ActorId>,
    },
    /// Operands of the wrong type (`p1.x && 2`), or a predicate that is not a condition.
    #[error("in `{expr}`: {why}")]
    Type {
        /// The offending (sub)expression, after resolution.
        expr: String,
        /// What is wrong with it.
        why: String,
    },
}

/// Actor ids as `p1..p6` (runs of consecutive ids) or `p1, p3`.
pub(crate) struct ActorList<'a>(pub &'a [ActorId]);

impl fmt::Display for ActorList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ids = self.0.to_vec();
        ids.sort();
        ids.dedup();
        if ids.is_empty() {
            return f.write_str("none");
        }
        let mut first = true;
        let mut i = 0;
        while i < ids.len() {
            let mut j = i;
            while j + 1 < ids.len() && ids[j + 1].0 == ids[j].0 + 1 {
                j += 1;
            }
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            match j - i {
                0 => write!(f, "{}", ids[i])?,
                1 => write!(f, "{}, {}", ids[i], ids[j])?,
                _ => write!(f, "{}..{}", ids[i], ids[j])?,
            }
            i = j + 1;
        }
        Ok(())
    }
}

/// Actor ids as `p3, p4, p5`.
pub(crate) struct ActorCommas<'a>(pub &'a [ActorId]);

impl fmt::Display for ActorCommas<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{a}")?;
        }
        Ok(())
    }
}

/// Actor ids as `p2 and p5` or `p1, p2 and p5`.
pub(crate) struct ActorAnd<'a>(pub &'a [ActorId]);

impl fmt::Display for ActorAnd<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        for (i, a) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(if i + 1 == n { " and " } else { ", " })?;
            }
            write!(f, "{a}")?;
        }
        Ok(())
    }
}

/// Names in backquotes, separated by commas.
struct NameList<'a>(&'a [String]);

impl fmt::Display for NameList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "`{n}`")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(ns: &[u32]) -> Vec<ActorId> {
        ns.iter().map(|&n| ActorId(n)).collect()
    }

    #[test]
    fn predicate_actor_lists_compress_runs() {
        assert_eq!(ActorList(&ids(&[1, 2, 3, 4, 5, 6])).to_string(), "p1..p6");
        assert_eq!(ActorList(&ids(&[1, 2, 5])).to_string(), "p1, p2, p5");
        assert_eq!(
            ActorList(&ids(&[5, 1, 2, 3, 7])).to_string(),
            "p1..p3, p5, p7"
        );
        assert_eq!(ActorList(&[]).to_string(), "none");
        assert_eq!(ActorAnd(&ids(&[2, 5])).to_string(), "p2 and p5");
        assert_eq!(ActorAnd(&ids(&[1, 2, 5])).to_string(), "p1, p2 and p5");
    }

    #[test]
    fn predicate_render_puts_the_caret_under_the_column() {
        let e = ParseError {
            col: 10,
            expected: "an operand such as `p1.x` or `1`".into(),
            found: "`&&`".into(),
        };
        assert_eq!(
            e.render("x1==1 && && x4==1"),
            "error: expected an operand such as `p1.x` or `1`, found `&&` at column 10\n  \
             x1==1 && && x4==1\n           ^"
        );
        // Tabs and newlines are shown as one space each, so the caret still lines up.
        let e = ParseError {
            col: 3,
            expected: "x".into(),
            found: "y".into(),
        };
        assert_eq!(e.render("a\n\tb").lines().nth(1), Some("  a  b"));
    }
}
