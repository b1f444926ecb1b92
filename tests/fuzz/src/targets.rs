//! The targets: each takes one input, runs the real entry point ddbx uses on it, checks what it
//! promises (an error names file and line, or a column with a caret; what was read writes back
//! the same), and returns the *shape* of the outcome (`ok`, or the error with its numbers and
//! quoted parts blanked), so that a run can count its distinct outcomes.
//!
//! A broken promise is a panic, so the engine reports it as a crash with the input.

use ddbx::halt::StopPoint;
use ddbx_supervisor::Recording;
use ddbx_supervisor::predicate::{self, Catalog, Class};
use ddbx_wire::manifest::{Manifest, ManifestError};
use ddbx_wire::pred::{Expr, Value, VarRef};
use ddbx_wire::{ActorId, History, Record};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What is fuzzed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A history file: [`History::parse_bytes`], what `History::load` reads.
    History,
    /// `manifest.ron`: [`Manifest::parse_bytes`], what `Manifest::load` reads.
    Manifest,
    /// A `--stop-if` / `stop if` predicate: parse, then resolve, classify, print, evaluate and
    /// send to an LD (the postfix form) when it parses.
    Predicate,
    /// A `--stop-at` point: [`StopPoint::parse`] against a small recording.
    StopAt,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 4] = [
        Target::History,
        Target::Manifest,
        Target::Predicate,
        Target::StopAt,
    ];

    /// Its name on the command line and as its corpus directory.
    pub fn name(self) -> &'static str {
        match self {
            Target::History => "history",
            Target::Manifest => "manifest",
            Target::Predicate => "predicate",
            Target::StopAt => "stop-at",
        }
    }

    /// The target called `name`.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Its corpus: `tests/fuzz/corpus/NAME/`.
    pub fn corpus_dir(self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(self.name())
    }

    /// Runs the entry point on `input`; panics if a promise is broken.
    pub fn run(self, input: &[u8]) -> String {
        match self {
            Target::History => history(input),
            Target::Manifest => manifest(input),
            Target::Predicate => predicate(&String::from_utf8_lossy(input)),
            Target::StopAt => stop_at(&String::from_utf8_lossy(input)),
        }
    }

    /// Tokens of its language, for the mutator.
    // size: a table, one token a line.
    pub fn tokens(self) -> &'static [&'static str] {
        match self {
            Target::History => &[
                "Header(format: 1, actor: \"p1\")\n",
                "Header(format: 1, actor: \"p2\", trace: Optimal)\n",
                "Skip(n: ",
                "Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n",
                "Fork(index: 1)\n",
                "Exit(status: 0)\n",
                "Recv(fd: 4, n: 17)\n",
                "Ready(",
                "Some(",
                "None",
                "r#\"",
                "\"#",
                "b\"",
                "//",
                "\n",
                "(",
                ")",
                "[",
                "]",
                ",",
                ": ",
                "\"",
                "\\u{",
            ],
            Target::Manifest => &[
                "format: 1,",
                "state: Recording,",
                "state: Complete,",
                "Exited(",
                "Signaled(",
                "origin: Fork(parent: \"p1\", index: 1)",
                "origin: Root",
                "reaps: [(after: 3, child: \"p2\")],",
                "signalled_by: [(\"p1\", 9)],",
                "exit: Some(Exited(0)),",
                "exit: None,",
                "problem: Some(\"",
                "env_left_out: [\"TOKEN\"],",
                "actors: [",
                "Some(",
                "None",
                "//",
                "/*",
                "*/",
                "r#\"",
                "\n",
                "(",
                ")",
                "[",
                "]",
                ",",
                "\"",
            ],
            Target::Predicate => &[
                "&&",
                "||",
                "!",
                "-",
                "+",
                "(",
                ")",
                "==",
                "!=",
                "<",
                "<=",
                ">",
                ">=",
                ".",
                ":",
                ":u64",
                ":i8",
                ":int",
                "p1.",
                "p2.",
                "p0.",
                "p4294967296.",
                "client.",
                "events",
                "sends",
                "x",
                "\"",
                "\\\"",
                "\\",
                " ",
                "=",
                "&",
                "|",
            ],
            Target::StopAt => &[
                ":",
                "p1",
                "p2",
                "p3",
                "p0",
                "p4294967295",
                "p4294967296",
                "client",
                "server",
                "a",
                " ",
                "-",
                "+",
                "18446744073709551616",
                "p1:",
                ":1",
                "::",
            ],
        }
    }

    /// Texts that nest (opener, closer), for the deep-nesting mutation.
    pub fn nesting(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Target::History | Target::Manifest => &[
                ("(", ")"),
                ("[", "]"),
                ("Some(", ")"),
                ("{", "}"),
                ("(", ""),
            ],
            Target::Predicate => &[("(", ")"), ("!", ""), ("-", ""), ("!(", ")"), ("(", "")],
            Target::StopAt => &[("p", ""), ("(", ")")],
        }
    }
}

/// A message with its numbers and quoted parts blanked, cut to 72 characters: outcomes that
/// differ only by where or what exactly are one outcome.
pub fn shape(message: &str) -> String {
    let mut out = String::new();
    // The quote that opened the part being skipped (`` ` `` or `"`).
    let mut quoted: Option<char> = None;
    let mut digits = false;
    for c in message.chars() {
        match quoted {
            Some(q) if c == q => {
                quoted = None;
                continue;
            }
            Some(_) => continue,
            None if c == '`' || c == '"' => {
                quoted = Some(c);
                out.push_str("`_`");
                continue;
            }
            None => {}
        }
        if c.is_ascii_digit() {
            if !digits {
                out.push('#');
            }
            digits = true;
            continue;
        }
        digits = false;
        out.push(c);
        if out.len() >= 72 {
            break;
        }
    }
    out
}

fn history(input: &[u8]) -> String {
    let path = Path::new("history/p2.ron");
    match History::parse_bytes(path, input) {
        Ok(h) => {
            // What the reader accepted is what an LD writes back, byte for byte in meaning.
            for r in h.records.iter().filter(|r| **r != Record::Untraced) {
                let line = r.to_line();
                let back: Record = ron::from_str(&line).unwrap_or_else(|e| {
                    panic!("{r:?} written as `{line}` does not read back: {e}")
                });
                assert_eq!(&back, r, "written as `{line}`");
            }
            if h.truncated { "ok, torn" } else { "ok" }.to_string()
        }
        Err(e) => {
            assert!(e.line >= 1, "an error without its line: {e}");
            assert!(e.to_string().starts_with("history/p2.ron:"), "{e}");
            format!("error: {}", shape(&e.problem))
        }
    }
}

fn manifest(input: &[u8]) -> String {
    let path = Path::new("rec/manifest.ron");
    match Manifest::parse_bytes(path, input) {
        Ok(m) => {
            let text = ron::ser::to_string_pretty(&m, ron::ser::PrettyConfig::new())
                .unwrap_or_else(|e| panic!("a manifest read does not write: {e}"));
            let back = Manifest::parse(path, &text)
                .unwrap_or_else(|e| panic!("a manifest written does not read back: {e}\n{text}"));
            assert_eq!(back, m);
            "ok".to_string()
        }
        Err(ManifestError::Malformed {
            line, col, problem, ..
        }) => {
            assert!(line >= 1 && col >= 1, "{line}:{col}: {problem}");
            format!("error: {}", shape(&problem))
        }
        Err(e @ ManifestError::Io { .. }) => panic!("an I/O error from bytes in memory: {e}"),
    }
}

/// Three actors: p1 runs `server` and publishes `x`, p2 and p3 run `client` and publish `y`.
struct Fixed;

impl Catalog for Fixed {
    fn actors(&self) -> Vec<ActorId> {
        vec![ActorId(1), ActorId(2), ActorId(3)]
    }

    fn program_names(&self, a: ActorId) -> Vec<String> {
        vec![if a.0 == 1 { "server" } else { "client" }.to_string()]
    }

    fn publishes(&self, a: ActorId, name: &str) -> bool {
        name == if a.0 == 1 { "x" } else { "y" }
    }
}

/// The postfix form the GD sends an LD.
#[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
struct OnTheWire {
    #[serde(with = "ddbx_wire::pred::postfix")]
    sp: Option<Expr>,
}

fn predicate(text: &str) -> String {
    let expr = match predicate::parse(text) {
        Ok(expr) => expr,
        Err(e) => {
            let shown = e.render(text);
            let columns = text.chars().count() + 1;
            assert!((1..=columns).contains(&e.col), "column {}: {shown}", e.col);
            assert!(
                shown.lines().count() == 3 && shown.ends_with('^'),
                "{shown}"
            );
            return format!("syntax: {}", shape(&e.expected));
        }
    };
    // Printing gives text that parses back to the same tree. Known limit: the printer adds
    // parentheses the text may not have had (a `!` operand of a comparison: `(!a) == 1`), so a
    // predicate nested close to MAX_NESTING may print deeper than the parser takes.
    let printed = expr.to_string();
    match predicate::parse(&printed) {
        Ok(again) => assert_eq!(again, expr, "`{text}` printed as `{printed}`"),
        Err(e)
            if e.expected
                .starts_with("parentheses, `!` and `-` nested at most") =>
        {
            return "prints too deep".into();
        }
        Err(e) => panic!("`{text}` printed as `{printed}`: {}", e.render(&printed)),
    }
    let resolved = match predicate::resolve(expr, &Fixed) {
        Ok(r) => r,
        Err(e) => return format!("names: {}", shape(&e.to_string())),
    };
    let class = match predicate::classify(&resolved) {
        Class::Conjunctive(parts) => {
            let wire = OnTheWire {
                sp: parts.first().map(|(_, sp)| sp.clone()),
            };
            let line = ron::to_string(&wire).unwrap_or_else(|e| panic!("{e}"));
            let back: OnTheWire = ron::from_str(&line)
                .unwrap_or_else(|e| panic!("`{text}` on the wire as `{line}`: {e}"));
            assert_eq!(back, wire);
            "conjunctive"
        }
        Class::General { .. } => "general",
    };
    let mut lookup = |v: &VarRef| match v.name.as_str() {
        "x" => Some(Value::Int(i64::MAX)),
        "y" => Some(Value::Int(i64::MIN)),
        "events" => Some(Value::Int(3)),
        _ => None,
    };
    let value = match ddbx_wire::pred::eval(&resolved, &mut lookup) {
        Ok(v) => format!("{:?}", v.kind()),
        Err(e) => shape(&e.to_string()),
    };
    format!("{class}, {value}")
}

/// p1 (`server`, 3 events), p2 and p3 (`client`, 2 events each), all `Exit`ed.
fn small_recording() -> &'static Recording {
    static REC: OnceLock<Recording> = OnceLock::new();
    REC.get_or_init(|| {
        let history = |id: u32, program: &str, events: usize| {
            let mut text = format!(
                "Header(format: 1, actor: \"p{id}\")\n\
                 Start(pid: {id}, ppid: 0, origin: Root, argv: [\"{program}\"], host: \"h\")\n"
            );
            for _ in 2..events {
                text.push_str("Probe(name: \"x\", value: 1)\n");
            }
            text.push_str("Exit(status: 0)\n");
            History::parse(Path::new("p"), &text).unwrap_or_else(|e| panic!("{e}"))
        };
        Recording::in_memory(vec![
            history(1, "server", 3),
            history(2, "client", 2),
            history(3, "client", 2),
        ])
    })
}

fn stop_at(text: &str) -> String {
    match StopPoint::parse(text, small_recording()) {
        Ok(p) => {
            let length = small_recording()
                .history(p.actor)
                .map_or(0, |h| h.records.len() as u64);
            assert!((1..=length).contains(&p.event), "{text}: {p:?}");
            "ok".to_string()
        }
        // The message repeats the text: leave it out of the outcome.
        Err(e) if text.is_empty() => format!("error: {}", shape(&e.to_string())),
        Err(e) => {
            let shown = text.escape_debug().to_string();
            format!("error: {}", shape(&e.to_string().replace(&shown, "_")))
        }
    }
}
