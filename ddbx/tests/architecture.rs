//! The shape of the code and the document that describes it, checked:
//!
//! * `tests/tools/arch-check` (no import cycle inside a crate, no file over 600 lines and no
//!   function over 100 lines without a `// size:` comment, every `unsafe` with its contract)
//!   must exit 0;
//! * every repository path written in backticks in `docs/ARCHITECTURE.md` and the part pages
//!   it links (`docs/arch-*.md`) must exist.
//!
//! A path is a backticked token that contains a `/` or ends in `.rs`, `.md`, `.c` or `.h`,
//! relative to the repository root (a trailing `:LINE` is dropped). `{a,b}` groups are
//! expanded (`record/{io,socket}.rs` is two paths) and `*` matches within one path segment (at
//! least one file or directory must match). A bare file name (`lib.rs`) must name a file
//! somewhere in the repository. In a backticked command (a token with spaces) only the words
//! with a `/` are paths. Not paths: URLs, absolute paths, `target/…` (build output) and
//! placeholders (`<…>`, `$…`, `…`, a first segment in capitals such as `DIR/…`). Fenced code
//! blocks are not read.

use ddbx_tests::{Run, workspace};
use std::path::Path;

/// Path checks stop descending at these directories (build output, version control).
const NOT_SOURCES: &[&str] = &["target", ".git"];

#[test]
fn arch_check_passes() {
    let out = Run::new("python3")
        .args([workspace().join("tests/tools/arch-check")])
        .current_dir(&workspace())
        .output();
    assert_eq!(
        out.code, 0,
        "tests/tools/arch-check found problems:\n{}{}",
        out.stdout, out.stderr
    );
}

#[test]
fn every_path_in_the_architecture_documents_exists() {
    let files = repository_files(&workspace());
    let mut docs: Vec<String> = files
        .iter()
        .filter(|f| f.starts_with("docs/arch-") && f.ends_with(".md"))
        .cloned()
        .collect();
    docs.sort();
    docs.insert(0, "docs/ARCHITECTURE.md".to_string());
    let mut problems = Vec::new();
    for name in &docs {
        let doc = workspace().join(name);
        let text = std::fs::read_to_string(&doc)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", doc.display()));
        problems.extend(path_problems(name, &text, &workspace(), &files));
    }
    assert!(
        problems.is_empty(),
        "{} path(s) in {} do not exist:\n{}",
        problems.len(),
        docs.join(", "),
        problems.join("\n")
    );
}

/// The checker itself, on a made-up document.
#[test]
fn the_path_rules_find_what_they_should() {
    let root = workspace();
    let files = repository_files(&root);
    let doc = "\
# Parts
`tests/src/lib.rs` and `tests/progs/{select_any,poll_any}.c`, `tests/progs/*.h`,
`tests/src/lib.rs:12`, `lib.rs`, `tests/tools/arch-check --numbers`, `cargo test -p ddbx`,
`Ld`, `crate::ld`, `https://example.invalid/a/b`, `/tmp/x`, `target/ddbx-test-progs`,
`DIR/history/*.ron`, `<actor>/x`, `$HOME/x`.
```
not/read/in/a/fence.rs
```
Wrong: `tests/src/nope.rs`, `tests/progs/{select_any,nope}.c`, `nope.rs`, `tests/*/nope*.rs`.
";
    let problems = path_problems("doc.md", doc, &root, &files);
    assert_eq!(
        problems,
        [
            "doc.md:9: `tests/src/nope.rs`: no such file or directory",
            "doc.md:9: `tests/progs/{select_any,nope}.c`: no such file or directory: tests/progs/nope.c",
            "doc.md:9: `nope.rs`: no file of that name in the repository",
            "doc.md:9: `tests/*/nope*.rs`: nothing matches",
        ],
        "{problems:#?}"
    );
}

/// Every file and directory under `root` (relative, `/`-separated), build output aside.
fn repository_files(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if NOT_SOURCES.contains(&name.as_str()) {
                continue;
            }
            if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_string_lossy().into_owned());
            }
            if path.is_dir() {
                walk(root, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

/// What is wrong with the paths of `text` (a markdown document called `name`), one line each:
/// `name:LINE: `token`: why`.
fn path_problems(name: &str, text: &str, root: &Path, files: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for token in line.split('`').skip(1).step_by(2) {
            if let Some(why) = token_problem(token, root, files) {
                problems.push(format!("{name}:{}: `{token}`: {why}", i + 1));
            }
        }
    }
    problems
}

/// Why a backticked token names no existing repository path (`None`: it does, or it is no path).
fn token_problem(token: &str, root: &Path, files: &[String]) -> Option<String> {
    let words: Vec<&str> = token.split_whitespace().collect();
    if words.len() > 1 {
        // A command: its words with a `/` are paths.
        return words
            .iter()
            .filter(|w| w.contains('/') && !w.starts_with('-'))
            .find_map(|w| path_problem(w, root, files));
    }
    let word = words.first()?;
    let file_like = [".rs", ".md", ".c", ".h"].iter().any(|e| word.ends_with(e));
    if word.contains('/') {
        path_problem(word, root, files)
    } else if file_like && !is_placeholder(word) {
        let named = files
            .iter()
            .any(|f| f.rsplit('/').next() == Some(word) || f == word);
        (!named).then(|| "no file of that name in the repository".to_string())
    } else {
        None
    }
}

/// Placeholders and things that are not repository paths.
fn is_placeholder(word: &str) -> bool {
    let first = word.split('/').next().unwrap_or("");
    word.contains("://")
        || word.starts_with('/')
        || word.starts_with("target/")
        || ['<', '>', '$', '%', '~'].iter().any(|c| word.contains(*c))
        || word.contains("...")
        || word.contains('…')
        || (!first.is_empty()
            && first.chars().any(|c| c.is_ascii_uppercase())
            && !first.chars().any(|c| c.is_ascii_lowercase()))
}

/// Why a path-like word names nothing in the repository (`None`: it does).
fn path_problem(word: &str, root: &Path, files: &[String]) -> Option<String> {
    if is_placeholder(word) {
        return None;
    }
    let word = strip_line_number(word.trim_end_matches([',', '.', ';', ')']));
    let missing: Vec<String> = expand_braces(word)
        .into_iter()
        .filter(|p| {
            if p.contains('*') {
                !files
                    .iter()
                    .any(|f| glob_matches(p.trim_end_matches('/'), f))
            } else {
                !root.join(p).exists()
            }
        })
        .collect();
    match missing.as_slice() {
        [] => None,
        [one] if one.contains('*') => Some("nothing matches".into()),
        [one] if one == word => Some("no such file or directory".into()),
        several => Some(format!("no such file or directory: {}", several.join(", "))),
    }
}

/// `path:12` or `path:12-20` → `path`.
fn strip_line_number(word: &str) -> &str {
    match word.rsplit_once(':') {
        Some((path, line))
            if !line.is_empty() && line.chars().all(|c| c.is_ascii_digit() || c == '-') =>
        {
            path
        }
        _ => word,
    }
}

/// `a/{b,c}/{d,e}.rs` → its four paths (groups do not nest).
fn expand_braces(word: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (word.find('{'), word.find('}')) else {
        return vec![word.to_string()];
    };
    if close < open {
        return vec![word.to_string()];
    }
    let (head, tail) = (&word[..open], &word[close + 1..]);
    word[open + 1..close]
        .split(',')
        .flat_map(|alt| expand_braces(&format!("{head}{}{tail}", alt.trim())))
        .collect()
}

/// Whether `path` matches `pattern`, where `*` matches within one path segment.
fn glob_matches(pattern: &str, path: &str) -> bool {
    let (pattern, path): (Vec<&str>, Vec<&str>) =
        (pattern.split('/').collect(), path.split('/').collect());
    pattern.len() == path.len()
        && pattern
            .iter()
            .zip(&path)
            .all(|(p, s)| segment_matches(p.as_bytes(), s.as_bytes()))
}

/// `*`-pattern matching of one path segment.
fn segment_matches(pattern: &[u8], s: &[u8]) -> bool {
    match pattern.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| segment_matches(rest, &s[i..])),
        Some((c, rest)) => s.first() == Some(c) && segment_matches(rest, &s[1..]),
    }
}
