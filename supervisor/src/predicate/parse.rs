//! Tokens to tree: a recursive-descent parser with one function per precedence level, over
//! the tokens of [`super::lex`].
//!
//! ```text
//! or    := and ("||" and)*
//! and   := not ("&&" not)*
//! not   := "!" not | cmp
//! cmp   := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum)?     comparisons do not chain
//! sum   := unary (("+" | "-") unary)*
//! unary := "-" INT | "-" unary | atom                              "-5" is the literal -5
//! atom  := INT | STRING | var | "(" or ")"
//! var   := (IDENT ".")? IDENT (":" TYPE)?
//! ```
//!
//! The parser knows only syntax: `count`, `x4` and `server_x.count` stay as written until
//! [`resolve`](super::resolve) decides which actor each names.

use super::errors::ParseError;
use super::lex::{Lexer, Tok, Token};
use ddbx_wire::ActorId;
use ddbx_wire::pred::{ActorRef, BinOp, Expr, MemType, VarRef};

/// How deep a predicate's tree may be. It keeps the recursion of everything that walks the
/// tree bounded (evaluation in the debuggees, classification, printing, dropping). A sum of `n`
/// terms is `n` deep; a chain of `n` conditions joined by `&&` or `||` is `n` deep up to
/// [`ddbx_wire::pred::FLAT_CHAIN`] and then grouped ([`Expr::chain`]): 1,000 conditions are 80
/// deep, 250,000 are 192.
pub const MAX_DEPTH: usize = 256;

/// How deeply parentheses, `!` and `-` may nest (the parser recurses once per level). A `(` right
/// after `!` or `-` counts with it, as they print (`!(a == 1)`, `-(0)`): printed text parses.
pub const MAX_NESTING: usize = 64;

const OPERAND: &str = "an operand such as `p1.x` or `1`";
const INT_RANGE: &str = "an integer from -9223372036854775808 to 9223372036854775807";

/// Parses a predicate. Names are not resolved: see [`resolve`](super::resolve).
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    let mut p = Parser {
        lexer: Lexer::new(text),
        nesting: 0,
    };
    let (expr, _) = p.or()?;
    let next = p.lexer.peek()?;
    if next.tok == Tok::End {
        Ok(expr)
    } else {
        Err(p.after_operand(None))
    }
}

/// A subtree and its depth.
type Parsed = (Expr, usize);

struct Parser {
    lexer: Lexer,
    /// Parentheses, `!` and `-` currently open.
    nesting: usize,
}

impl Parser {
    fn or(&mut self) -> Result<Parsed, ParseError> {
        self.chain(Parser::and, "||", BinOp::Or)
    }

    fn and(&mut self) -> Result<Parsed, ParseError> {
        self.chain(Parser::not, "&&", BinOp::And)
    }

    /// `operand (symbol operand)*`, joined by [`Expr::chain`] (grouped to the left; a long
    /// chain is grouped so that the tree stays shallow).
    fn chain(
        &mut self,
        operand: fn(&mut Parser) -> Result<Parsed, ParseError>,
        symbol: &str,
        op: BinOp,
    ) -> Result<Parsed, ParseError> {
        let (first, mut deepest) = operand(self)?;
        let mut operands = vec![first];
        while self.lexer.peek()?.is_sym(symbol) {
            let at = self.lexer.next()?;
            let (next, depth) = operand(self)?;
            operands.push(next);
            deepest = deepest.max(depth);
            self.deeper(deepest + Expr::chain_depth(op, operands.len()) - 1, &at)?;
        }
        let depth = deepest + Expr::chain_depth(op, operands.len());
        // At least one operand: `first`.
        let joined = Expr::chain(op, operands).unwrap_or(Expr::Int(0));
        Ok((joined, depth))
    }

    fn sum(&mut self) -> Result<Parsed, ParseError> {
        self.left_assoc(Parser::unary, |t| match t.tok {
            Tok::Sym("+") => Some(BinOp::Add),
            Tok::Sym("-") => Some(BinOp::Sub),
            _ => None,
        })
    }

    /// `operand (op operand)*`, grouped to the left.
    fn left_assoc(
        &mut self,
        operand: fn(&mut Parser) -> Result<Parsed, ParseError>,
        op: fn(&Token) -> Option<BinOp>,
    ) -> Result<Parsed, ParseError> {
        let (mut left, mut depth) = operand(self)?;
        loop {
            let Some(bin) = op(self.lexer.peek()?) else {
                return Ok((left, depth));
            };
            let at = self.lexer.next()?;
            let (right, rdepth) = operand(self)?;
            depth = self.deeper(depth.max(rdepth), &at)?;
            left = Expr::bin(bin, left, right);
        }
    }

    fn not(&mut self) -> Result<Parsed, ParseError> {
        if !self.lexer.peek()?.is_sym("!") {
            return self.cmp();
        }
        let at = self.lexer.next()?;
        self.enter(&at)?;
        let paren = self.lexer.peek()?.is_sym("(");
        self.nesting -= usize::from(paren); // `!(` is one level (see MAX_NESTING)
        let (e, depth) = self.not()?;
        self.nesting -= usize::from(!paren);
        Ok((Expr::logical_not(e), self.deeper(depth, &at)?))
    }

    fn cmp(&mut self) -> Result<Parsed, ParseError> {
        let (left, ldepth) = self.sum()?;
        let Some(op) = self.lexer.peek()?.comparison() else {
            return Ok((left, ldepth));
        };
        let at = self.lexer.next()?;
        let (right, rdepth) = self.sum()?;
        let depth = self.deeper(ldepth.max(rdepth), &at)?;
        Ok((Expr::bin(op, left, right), depth))
    }

    fn unary(&mut self) -> Result<Parsed, ParseError> {
        if !self.lexer.peek()?.is_sym("-") {
            return self.atom();
        }
        let minus = self.lexer.next()?;
        if let Tok::Int(digits) = &self.lexer.peek()?.tok {
            // `-5` is the literal -5 (so that i64::MIN can be written).
            let n = digits
                .parse::<u64>()
                .ok()
                .and_then(|m| 0i64.checked_sub_unsigned(m));
            let Some(n) = n else {
                let found = format!("`-{}`", self.lexer.peek()?.text);
                return Err(self.lexer.error(minus.col, INT_RANGE, found));
            };
            self.lexer.next()?;
            return Ok((Expr::Int(n), 1));
        }
        self.enter(&minus)?;
        let paren = self.lexer.peek()?.is_sym("(");
        self.nesting -= usize::from(paren); // `-(` is one level, as `!(` is
        let (e, depth) = self.unary()?;
        self.nesting -= usize::from(!paren);
        Ok((Expr::minus(e), self.deeper(depth, &minus)?))
    }

    fn atom(&mut self) -> Result<Parsed, ParseError> {
        let t = self.lexer.next()?;
        match &t.tok {
            Tok::Int(digits) => match digits.parse::<i64>() {
                Ok(n) => Ok((Expr::Int(n), 1)),
                Err(_) => Err(self.lexer.error(t.col, INT_RANGE, t.found())),
            },
            Tok::Str(s) => Ok((Expr::Str(s.clone()), 1)),
            Tok::Ident(name) => Ok((Expr::Var(self.var(name, t.col)?), 1)),
            Tok::Sym("(") => {
                self.enter(&t)?;
                let inner = self.or()?;
                self.nesting -= 1;
                if self.lexer.peek()?.is_sym(")") {
                    self.lexer.next()?;
                    Ok(inner)
                } else {
                    Err(self.after_operand(Some(t.col)))
                }
            }
            _ => Err(self.lexer.error(t.col, OPERAND, t.found())),
        }
    }

    /// The rest of a variable reference whose first identifier, `first`, was just read.
    fn var(&mut self, first: &str, col: usize) -> Result<VarRef, ParseError> {
        let (actor, name) = if self.lexer.peek()?.is_sym(".") {
            self.lexer.next()?;
            let actor = match first.strip_prefix('p') {
                Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    match n.parse::<u32>() {
                        Ok(n) => ActorRef::Id(ActorId(n)),
                        Err(_) => {
                            let found = format!("`{first}`");
                            return Err(self.lexer.error(col, "an actor id such as `p3`", found));
                        }
                    }
                }
                _ => ActorRef::Program(first.to_string()),
            };
            let t = self.lexer.next()?;
            let Tok::Ident(name) = t.tok else {
                let expected = format!("a variable name after `{first}.`");
                return Err(self.lexer.error(t.col, expected, t.found()));
            };
            (actor, name)
        } else {
            (ActorRef::Unqualified, first.to_string())
        };
        let mut ty = MemType::default();
        if self.lexer.peek()?.is_sym(":") {
            self.lexer.next()?;
            let t = self.lexer.next()?;
            ty = match &t.tok {
                Tok::Ident(n) => MemType::from_name(n),
                _ => None,
            }
            .ok_or_else(|| {
                self.lexer.error(
                    t.col,
                    "a type after `:`: i8, i16, i32, i64, u8, u16, u32 or u64",
                    t.found(),
                )
            })?;
        }
        Ok(VarRef { actor, name, ty })
    }

    /// The error for a token that cannot follow a complete operand, at the end of the input
    /// (`open` is `None`) or inside the parenthesis opened at column `open`.
    fn after_operand(&mut self, open: Option<usize>) -> ParseError {
        let t = match self.lexer.peek() {
            Ok(t) => t.clone(),
            Err(e) => return e,
        };
        let end = match open {
            None => "end of input".to_string(),
            Some(c) => format!("`)` closing the `(` at column {c}"),
        };
        let expected = if t.comparison().is_some() {
            format!("`&&`, `||` or {end} (comparisons do not chain: use parentheses)")
        } else {
            format!("an operator or {end}")
        };
        self.lexer.error(t.col, expected, t.found())
    }

    /// Opens one more level of parentheses, `!` or `-`.
    fn enter(&mut self, at: &Token) -> Result<(), ParseError> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            let expected = format!("parentheses, `!` and `-` nested at most {MAX_NESTING} deep");
            return Err(self.lexer.error(at.col, expected, at.found()));
        }
        Ok(())
    }

    /// The depth of a node over children of depth `below`, if allowed.
    fn deeper(&self, below: usize, at: &Token) -> Result<usize, ParseError> {
        if below + 1 > MAX_DEPTH {
            let expected = format!("a predicate at most {MAX_DEPTH} deep");
            return Err(self.lexer.error(at.col, expected, at.found()));
        }
        Ok(below + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddbx_wire::pred::BinOp::*;

    fn p(text: &str) -> Expr {
        parse(text).unwrap_or_else(|e| panic!("{}", e.render(text)))
    }

    fn v(actor: ActorRef, name: &str) -> Expr {
        Expr::Var(VarRef {
            actor,
            name: name.into(),
            ty: MemType::I32,
        })
    }

    fn id(n: u32, name: &str) -> Expr {
        v(ActorRef::Id(ActorId(n)), name)
    }

    fn bare(name: &str) -> Expr {
        v(ActorRef::Unqualified, name)
    }

    fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
        Expr::bin(op, l, r)
    }

    fn err(text: &str) -> ParseError {
        match parse(text) {
            Ok(e) => panic!("`{text}` parsed as {e:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn predicate_parse_literals() {
        assert_eq!(p("42"), Expr::Int(42));
        assert_eq!(p("-42"), Expr::Int(-42));
        assert_eq!(p("- 42"), Expr::Int(-42));
        assert_eq!(p("9223372036854775807"), Expr::Int(i64::MAX));
        assert_eq!(p("-9223372036854775808"), Expr::Int(i64::MIN));
        assert_eq!(p("-(5)"), Expr::minus(Expr::Int(5)));
        assert_eq!(p("--5"), Expr::minus(Expr::Int(-5)));
        assert_eq!(p(r#""a \"b\" \\ c""#), Expr::Str(r#"a "b" \ c"#.into()));
        assert_eq!(p(r#""""#), Expr::Str(String::new()));
        assert_eq!(p("\"é\t\""), Expr::Str("é\t".into()));
    }

    #[test]
    fn predicate_parse_variables() {
        assert_eq!(p("p3.count"), id(3, "count"));
        assert_eq!(p("p3 . count"), id(3, "count"));
        assert_eq!(
            p("server_x.count"),
            v(ActorRef::Program("server_x".into()), "count")
        );
        assert_eq!(p("count"), bare("count"));
        assert_eq!(p("x4"), bare("x4"));
        assert_eq!(p("p3"), bare("p3"), "`p3` alone is a name");
        assert_eq!(p("_a9"), bare("_a9"));
        assert_eq!(p("p.x"), v(ActorRef::Program("p".into()), "x"));
        let typed = |t: &str| match p(&format!("server_x.count:{t}")) {
            Expr::Var(v) => v.ty,
            other => panic!("{other:?}"),
        };
        assert_eq!(typed("i64"), MemType::I64);
        assert_eq!(typed("u8"), MemType::U8);
        assert_eq!(typed("int"), MemType::I32);
        for t in MemType::ALL {
            assert_eq!(typed(t.name()), t);
        }
        assert_eq!(
            p("count : u16"),
            Expr::Var(VarRef {
                actor: ActorRef::Unqualified,
                name: "count".into(),
                ty: MemType::U16
            })
        );
    }

    #[test]
    fn predicate_parse_each_operator() {
        let (a, b) = (|| id(1, "a"), || id(2, "b"));
        for (text, op) in [
            ("p1.a + p2.b", Add),
            ("p1.a - p2.b", Sub),
            ("p1.a == p2.b", Eq),
            ("p1.a != p2.b", Ne),
            ("p1.a < p2.b", Lt),
            ("p1.a <= p2.b", Le),
            ("p1.a > p2.b", Gt),
            ("p1.a >= p2.b", Ge),
            ("p1.a && p2.b", And),
            ("p1.a || p2.b", Or),
        ] {
            assert_eq!(p(text), bin(op, a(), b()), "{text}");
            assert_eq!(
                p(&text.replace(' ', "")),
                bin(op, a(), b()),
                "{text} without spaces"
            );
        }
        assert_eq!(p("!p1.a"), Expr::logical_not(a()));
        assert_eq!(p("-p1.a"), Expr::minus(a()));
        assert_eq!(p("(p1.a)"), a());
        assert_eq!(p("x1==1&&x4==1"), p("x1 == 1 && x4 == 1"));
    }

    #[test]
    fn predicate_parse_precedence() {
        let (a, b, c) = (|| bare("a"), || bare("b"), || bare("c"));
        // || < &&
        assert_eq!(p("a || b && c"), bin(Or, a(), bin(And, b(), c())));
        assert_eq!(p("a && b || c"), bin(Or, bin(And, a(), b()), c()));
        // && < !
        assert_eq!(p("!a && b"), bin(And, Expr::logical_not(a()), b()));
        // ! < comparisons
        assert_eq!(p("!a == b"), Expr::logical_not(bin(Eq, a(), b())));
        assert_eq!(p("!!a"), Expr::logical_not(Expr::logical_not(a())));
        // comparisons < + -
        assert_eq!(
            p("a + 1 < b - 2"),
            bin(Lt, bin(Add, a(), Expr::Int(1)), bin(Sub, b(), Expr::Int(2)))
        );
        // + - < unary minus, left-associative
        assert_eq!(p("a - b - c"), bin(Sub, bin(Sub, a(), b()), c()));
        assert_eq!(
            p("a - -b + c"),
            bin(Add, bin(Sub, a(), Expr::minus(b())), c())
        );
        assert_eq!(p("a - -1"), bin(Sub, a(), Expr::Int(-1)));
        // left-associative && and ||; parentheses regroup
        assert_eq!(p("a && b && c"), bin(And, bin(And, a(), b()), c()));
        assert_eq!(p("a || (b || c)"), bin(Or, a(), bin(Or, b(), c())));
        assert_eq!(p("(a || b) && c"), bin(And, bin(Or, a(), b()), c()));
        assert_eq!(p("-(a + b)"), Expr::minus(bin(Add, a(), b())));
        assert_eq!(
            p("(a < b) == (b < c)"),
            bin(Eq, bin(Lt, a(), b()), bin(Lt, b(), c()))
        );
    }

    /// The error, its column, and what it says was expected and found.
    fn check(text: &str, col: usize, expected: &str, found: &str) {
        let e = err(text);
        assert_eq!(
            (e.col, e.expected.as_str(), e.found.as_str()),
            (col, expected, found),
            "{text}"
        );
    }

    #[test]
    fn predicate_parse_errors_point_at_the_column() {
        check("x1==1 && && x4==1", 10, OPERAND, "`&&`");
        check("", 1, OPERAND, "end of input");
        check("   ", 4, OPERAND, "end of input");
        check("x1 ==", 6, OPERAND, "end of input");
        check(")", 1, OPERAND, "`)`");
        check("x1 == 1 x4", 9, "an operator or end of input", "`x4`");
        check("x1 = 1", 4, "`==` (equality is written `==`)", "`=`");
        check("a & b", 3, "`&&`", "`&`");
        check("a | b", 3, "`||`", "`|`");
        check("a # b", 3, "an operand or an operator", "`#`");
        check("a == é", 6, "an operand or an operator", "`é`");
        check(
            "(a == 1",
            8,
            "an operator or `)` closing the `(` at column 1",
            "end of input",
        );
        check(
            "((a == 1) b",
            11,
            "an operator or `)` closing the `(` at column 1",
            "`b`",
        );
        check(
            "a < b < c",
            7,
            "`&&`, `||` or end of input (comparisons do not chain: use parentheses)",
            "`<`",
        );
        check("p3.", 4, "a variable name after `p3.`", "end of input");
        check("p3.4", 4, "a variable name after `p3.`", "`4`");
        check(
            "p3.x:float",
            6,
            "a type after `:`: i8, i16, i32, i64, u8, u16, u32 or u64",
            "`float`",
        );
        check(
            "p3.x:",
            6,
            "a type after `:`: i8, i16, i32, i64, u8, u16, u32 or u64",
            "end of input",
        );
        check(
            "p99999999999.x",
            1,
            "an actor id such as `p3`",
            "`p99999999999`",
        );
        check("9223372036854775808", 1, INT_RANGE, "`9223372036854775808`");
        check(
            "1 + -9223372036854775809",
            5,
            INT_RANGE,
            "`-9223372036854775809`",
        );
        check(
            "1 + 99999999999999999999999",
            5,
            INT_RANGE,
            "`99999999999999999999999`",
        );
        check(
            "\"abc",
            5,
            "`\"` closing the string that starts at column 1",
            "end of input",
        );
        check(
            r#"a == "x\n""#,
            8,
            "`\\\"` or `\\\\` (the only escapes in a string)",
            "`\\n`",
        );
        check(
            "a == \"x\\",
            8,
            "`\\\"` or `\\\\` (the only escapes in a string)",
            "end of input",
        );
        check("1 + !a", 5, OPERAND, "`!`");
        check("1.5", 2, "an operator or end of input", "`.`");
        check("a.b.c", 4, "an operator or end of input", "`.`");
        // Columns count characters, not bytes.
        check("\"ééé\" == ", 10, OPERAND, "end of input");
    }

    #[test]
    fn predicate_parse_error_messages_name_expected_and_found() {
        let text = "x1==1 && && x4==1";
        let e = err(text);
        assert_eq!(
            e.to_string(),
            "expected an operand such as `p1.x` or `1`, found `&&` at column 10"
        );
        assert_eq!(
            e.render(text),
            "error: expected an operand such as `p1.x` or `1`, found `&&` at column 10\n  \
             x1==1 && && x4==1\n           ^"
        );
        let long = format!("1 {}", "a".repeat(100));
        let found = err(&long).found;
        assert!(
            found.ends_with("…`") && found.chars().count() < 40,
            "{found}"
        );
    }

    #[test]
    fn predicate_parse_bounds_nesting() {
        for text in [
            "(".repeat(100_000),
            "!".repeat(100_000) + "a",
            "-".repeat(100_000) + "a",
        ] {
            let e = err(&text);
            assert_eq!(
                e.expected,
                format!("parentheses, `!` and `-` nested at most {MAX_NESTING} deep")
            );
        }
        for text in [
            "a".to_string() + &" + a".repeat(100_000),
            "a".to_string() + &" + a".repeat(MAX_DEPTH),
            "(".repeat(40) + "a" + &" + a".repeat(MAX_DEPTH - 1) + &")".repeat(40) + " && a",
        ] {
            let e = err(&text);
            assert_eq!(e.expected, format!("a predicate at most {MAX_DEPTH} deep"));
        }
        let ok = "(".repeat(MAX_NESTING - 1) + "a == 1" + &")".repeat(MAX_NESTING - 1);
        assert!(parse(&ok).is_ok());
        let ok = "a".to_string() + &" + a".repeat(MAX_DEPTH - 1);
        assert!(parse(&ok).is_ok());
    }

    /// The depth of a tree (recursive: for trees the parser accepted).
    fn depth(e: &Expr) -> usize {
        match e {
            Expr::Int(_) | Expr::Str(_) | Expr::Var(_) => 1,
            Expr::Not(e) | Expr::Neg(e) => 1 + depth(e),
            Expr::Bin(_, l, r) => 1 + depth(l).max(depth(r)),
        }
    }

    #[test]
    fn predicate_parse_long_chains_stay_shallow_and_print_back() {
        for n in [2, 64, 65, 200, 1000, 4000, 100_000] {
            for op in ["&&", "||"] {
                let text = (0..n)
                    .map(|i| format!("p{}.x == {i}", i % 7 + 1))
                    .collect::<Vec<_>>()
                    .join(&format!(" {op} "));
                let e = p(&text);
                let d = depth(&e);
                assert!(d <= MAX_DEPTH, "{n} {op}: {d} deep");
                assert!(
                    n > 1000 || d <= 2 + Expr::chain_depth(BinOp::And, n),
                    "{n}: {d}"
                );
                assert_eq!(e.vars().len(), n.min(7), "{n}");
                assert_eq!(p(&e.to_string()), e, "{n} {op}: printed form");
            }
        }
        // As written up to FLAT_CHAIN conditions.
        let flat = (0..64).map(|_| "a").collect::<Vec<_>>().join(" && ");
        assert_eq!(p(&flat).to_string(), flat);
    }
}
