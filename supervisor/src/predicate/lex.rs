//! Text to tokens: integers, strings (with `\"` and `\\` escapes), identifiers, operators;
//! each token knows its column, so that an error can point at it.

use super::errors::ParseError;
use ddbx_wire::pred::BinOp;

/// A token's kind and content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tok {
    /// Decimal digits, not yet converted (the sign is not known yet).
    Int(String),
    /// A string literal, escapes removed.
    Str(String),
    /// `[A-Za-z_][A-Za-z0-9_]*`.
    Ident(String),
    /// An operator or punctuation: `(`, `)`, `.`, `:`, `+`, `-`, `!`, `&&`, `||`, comparisons.
    Sym(&'static str),
    /// End of input.
    End,
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub(super) tok: Tok,
    /// 1-based column in characters.
    pub(super) col: usize,
    /// How the token was written, for messages.
    pub(super) text: String,
}

impl Token {
    /// The token for a `found` message.
    pub(super) fn found(&self) -> String {
        match self.tok {
            Tok::End => "end of input".to_string(),
            _ => {
                let shown: String = self.text.chars().flat_map(char::escape_debug).collect();
                if shown.chars().count() > 32 {
                    let cut: String = shown.chars().take(31).collect();
                    format!("`{cut}…`")
                } else {
                    format!("`{shown}`")
                }
            }
        }
    }

    pub(super) fn is_sym(&self, s: &str) -> bool {
        matches!(self.tok, Tok::Sym(t) if t == s)
    }

    pub(super) fn comparison(&self) -> Option<BinOp> {
        match self.tok {
            Tok::Sym("==") => Some(BinOp::Eq),
            Tok::Sym("!=") => Some(BinOp::Ne),
            Tok::Sym("<") => Some(BinOp::Lt),
            Tok::Sym("<=") => Some(BinOp::Le),
            Tok::Sym(">") => Some(BinOp::Gt),
            Tok::Sym(">=") => Some(BinOp::Ge),
            _ => None,
        }
    }
}

/// Cuts the text into tokens on demand, one token of lookahead.
pub(super) struct Lexer {
    chars: Vec<char>,
    pos: usize,
    peeked: Option<Token>,
}

impl Lexer {
    pub(super) fn new(text: &str) -> Lexer {
        Lexer {
            chars: text.chars().collect(),
            pos: 0,
            peeked: None,
        }
    }

    /// The next token, left in place.
    pub(super) fn peek(&mut self) -> Result<&Token, ParseError> {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lex()?,
        };
        Ok(self.peeked.insert(t))
    }

    /// The next token, taken.
    pub(super) fn next(&mut self) -> Result<Token, ParseError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lex(),
        }
    }

    /// A syntax error at column `col`.
    pub(super) fn error(
        &self,
        col: usize,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> ParseError {
        ParseError {
            col,
            expected: expected.into(),
            found: found.into(),
        }
    }

    /// Reads the token at the current position.
    fn lex(&mut self) -> Result<Token, ParseError> {
        while self.pos < self.chars.len() && self.chars[self.pos].is_whitespace() {
            self.pos += 1;
        }
        let start = self.pos;
        let col = start + 1;
        let Some(&c) = self.chars.get(start) else {
            return Ok(Token {
                tok: Tok::End,
                col,
                text: String::new(),
            });
        };
        let next = self.chars.get(start + 1).copied();
        let sym = |s: &'static str| (Tok::Sym(s), s.chars().count());
        let (tok, len) = match (c, next) {
            ('=', Some('=')) => sym("=="),
            ('!', Some('=')) => sym("!="),
            ('<', Some('=')) => sym("<="),
            ('>', Some('=')) => sym(">="),
            ('&', Some('&')) => sym("&&"),
            ('|', Some('|')) => sym("||"),
            ('<', _) => sym("<"),
            ('>', _) => sym(">"),
            ('!', _) => sym("!"),
            ('+', _) => sym("+"),
            ('-', _) => sym("-"),
            ('(', _) => sym("("),
            (')', _) => sym(")"),
            ('.', _) => sym("."),
            (':', _) => sym(":"),
            ('=', _) => return Err(self.error(col, "`==` (equality is written `==`)", "`=`")),
            ('&', _) => return Err(self.error(col, "`&&`", "`&`")),
            ('|', _) => return Err(self.error(col, "`||`", "`|`")),
            ('"', _) => return self.string(start),
            _ if c.is_ascii_digit() => {
                let end = self.scan(start, |c| c.is_ascii_digit());
                let digits: String = self.chars[start..end].iter().collect();
                (Tok::Int(digits), end - start)
            }
            _ if c.is_ascii_alphabetic() || c == '_' => {
                let end = self.scan(start, |c| c.is_ascii_alphanumeric() || c == '_');
                let name: String = self.chars[start..end].iter().collect();
                (Tok::Ident(name), end - start)
            }
            _ => {
                let found = format!("`{}`", c.escape_debug());
                return Err(self.error(col, "an operand or an operator", found));
            }
        };
        self.pos = start + len;
        Ok(Token {
            tok,
            col,
            text: self.chars[start..start + len].iter().collect(),
        })
    }

    /// The end of the run of characters from `start` that satisfy `ok`.
    fn scan(&self, start: usize, ok: impl Fn(char) -> bool) -> usize {
        let mut end = start;
        while end < self.chars.len() && ok(self.chars[end]) {
            end += 1;
        }
        end
    }

    /// A string literal starting with the `"` at `start`.
    fn string(&mut self, start: usize) -> Result<Token, ParseError> {
        let mut value = String::new();
        let mut i = start + 1;
        loop {
            match self.chars.get(i) {
                None => {
                    return Err(self.error(
                        self.chars.len() + 1,
                        format!(
                            "`\"` closing the string that starts at column {}",
                            start + 1
                        ),
                        "end of input",
                    ));
                }
                Some('"') => break,
                Some('\\') => match self.chars.get(i + 1) {
                    Some(&c @ ('"' | '\\')) => {
                        value.push(c);
                        i += 2;
                    }
                    other => {
                        let found = match other {
                            Some(c) => format!("`\\{}`", c.escape_debug()),
                            None => "end of input".to_string(),
                        };
                        return Err(self.error(
                            i + 1,
                            "`\\\"` or `\\\\` (the only escapes in a string)",
                            found,
                        ));
                    }
                },
                Some(&c) => {
                    value.push(c);
                    i += 1;
                }
            }
        }
        self.pos = i + 1;
        Ok(Token {
            tok: Tok::Str(value),
            col: start + 1,
            text: self.chars[start..=i].iter().collect(),
        })
    }
}
