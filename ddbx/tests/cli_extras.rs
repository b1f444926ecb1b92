//! The command line people expect (issue 16): shell completions and man pages loaded by bash
//! and man; the progress line under a pseudo-terminal and never into a pipe; `NO_COLOR` and
//! `--color`; `ddbx doctor` passing here and naming an unusable cache directory, another uid
//! and a static program; `--json-lines` read line by line (record, a divergence, a halt with a
//! trace).
//!
//! Terminals are made with `script(1)`, which runs a command under a pseudo-terminal and
//! copies what it printed there to its own standard output.

use ddbx_tests::{Ddbx, Output, Run, TempDir, parse_json, path_str, progs};
use serde_json::Value;
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// A shell word: `text` in single quotes.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `ddbx ARGS` under a pseudo-terminal (stdout and stderr both the terminal): what the
/// terminal showed.
fn in_terminal(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut line = quote(DDBX.0);
    for a in args {
        line.push(' ');
        line.push_str(&quote(a));
    }
    let mut run = Run::new("script")
        .args(["-qefc", &line, "/dev/null"])
        .env("TERM", "xterm");
    for (k, v) in env {
        run = run.env(k, v);
    }
    run.output()
}

#[test]
fn completions_and_man_pages_load() {
    let tmp = TempDir::new("pages");
    let bash = tmp.join("ddbx.bash");
    let script = DDBX.run(["completions", "bash"]).success().stdout;
    std::fs::write(&bash, &script).unwrap_or_else(|e| panic!("{e}"));
    let loaded = Run::new("bash")
        .args([
            "-c",
            &format!("source {} && complete -p ddbx", quote(path_str(&bash))),
        ])
        .success();
    assert!(
        loaded.stdout.contains("-F _ddbx") && loaded.stdout.trim_end().ends_with(" ddbx"),
        "bash did not register the completion: {}",
        loaded.stdout
    );
    // The subcommands and their options come from the clap definitions.
    for word in ["replay", "doctor", "--stop-if", "--json-lines"] {
        assert!(script.contains(word), "bash completion lacks {word}");
    }
    for shell in ["zsh", "fish"] {
        let out = DDBX.run(["completions", shell]).success().stdout;
        assert!(out.contains("stop-if"), "{shell} completion: {out}");
    }
    let bad = DDBX.run(["completions", "tcsh"]).output();
    assert_eq!(bad.code, 2, "{}", bad.stderr);

    let page = DDBX.run(["man"]).success().stdout;
    assert!(page.contains(".TH ddbx 1"), "{page}");
    let dir = tmp.join("man1");
    DDBX.run(["man", "--dir", path_str(&dir)]).success();
    for name in ["ddbx.1", "ddbx-record.1", "ddbx-replay.1", "ddbx-doctor.1"] {
        assert!(dir.join(name).is_file(), "no {name} in {}", dir.display());
    }
    let read = Run::new("man")
        .args(["-l", path_str(&dir.join("ddbx-replay.1"))])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .success();
    assert!(
        read.stdout.contains("--stop-if"),
        "man could not read ddbx-replay.1: {}",
        read.stdout
    );
}

#[test]
fn colour_follows_the_terminal_no_color_and_the_flag() {
    let args = ["ps", "/nonexistent/ddbx-recording"];
    let escape = |out: &Output| out.stdout.contains("\u{1b}[");
    let plain = in_terminal(&args, &[]);
    assert!(plain.stdout.contains("ddbx: error"), "{}", plain.stdout);
    assert!(
        escape(&plain),
        "no colour at a terminal: {:?}",
        plain.stdout
    );
    let no_color = in_terminal(&args, &[("NO_COLOR", "1")]);
    assert!(
        no_color.stdout.contains("ddbx: error"),
        "{}",
        no_color.stdout
    );
    assert!(
        !escape(&no_color),
        "NO_COLOR ignored: {:?}",
        no_color.stdout
    );
    let never = in_terminal(&["--color", "never", args[0], args[1]], &[]);
    assert!(!escape(&never), "--color never ignored: {:?}", never.stdout);
    // Into a pipe: plain, unless asked for.
    let piped = DDBX.run(args).output();
    assert!(!piped.stderr.contains("\u{1b}["), "{:?}", piped.stderr);
    let always = DDBX
        .run(["--color", "always", args[0], args[1]])
        .env("NO_COLOR", "1")
        .output();
    assert!(always.stderr.contains("\u{1b}["), "{:?}", always.stderr);
}

#[test]
fn progress_is_shown_at_a_terminal_and_never_into_a_pipe() {
    let tmp = TempDir::new("progress");
    let prog = progs().join("bench_pingpong");
    let rounds = "2000";
    let now = [("DDBX_PROGRESS_DELAY_MS", "0")];
    let rec = tmp.join("rec");
    let shown = in_terminal(
        &[
            "record",
            "-o",
            path_str(&rec),
            "--",
            path_str(&prog),
            rounds,
        ],
        &now,
    );
    assert!(shown.stdout.contains("ok"), "{}", shown.stdout);
    assert!(
        shown.stdout.contains("recording ") && shown.stdout.contains(" actors alive"),
        "no progress line at a terminal: {:?}",
        shown.stdout
    );
    let replayed = in_terminal(&["replay", path_str(&rec)], &now);
    assert!(
        replayed.stdout.contains("replaying [") && replayed.stdout.contains(" events, "),
        "no progress line at a terminal: {:?}",
        replayed.stdout
    );
    // Into pipes: the program's output and ddbx's lines only.
    let piped = DDBX
        .run(["replay", path_str(&rec)])
        .env("DDBX_PROGRESS_DELAY_MS", "0")
        .success();
    assert_eq!(piped.stdout, "ok\n");
    assert!(!piped.stderr.contains("replaying ["), "{}", piped.stderr);
    // --json at a terminal: no progress either.
    let json = in_terminal(&["replay", "--json", path_str(&rec)], &now);
    assert!(!json.stdout.contains("replaying ["), "{:?}", json.stdout);
}

#[test]
fn doctor_passes_here_and_names_what_is_wrong() {
    let tmp = TempDir::new("doctor");
    let ok = DDBX.run(["doctor", "--json", "true"]).output();
    let v = parse_json(&ok.stdout, "ddbx doctor --json");
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(ok.code, 0, "{}", ok.stdout);
    let checks: Vec<&str> = v["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["check"].as_str())
        .collect();
    for name in [
        "/proc",
        "runtime directory",
        "cache directory",
        "preload",
        "program",
    ] {
        assert!(checks.contains(&name), "no {name} check: {v}");
    }

    // A cache "directory" that cannot be one: a file where the directory should be.
    let file = tmp.join("not-a-dir");
    std::fs::write(&file, "x").unwrap_or_else(|e| panic!("{e}"));
    let bad = DDBX
        .run(["doctor"])
        .env("XDG_CACHE_HOME", path_str(&file))
        .output();
    assert_eq!(bad.code, 1, "{}", bad.stdout);
    assert!(
        bad.stdout.contains("PROBLEM cache directory") && bad.stdout.contains("not-a-dir/ddbx"),
        "{}",
        bad.stdout
    );

    // A cache only its owner can read: the preload goes where every uid can load it instead,
    // for a server that drops to another uid.
    let private = tmp.join("private");
    std::fs::create_dir_all(&private).unwrap_or_else(|e| panic!("{e}"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700))
        .unwrap_or_else(|e| panic!("{e}"));
    let other = DDBX
        .run(["doctor", "--uid", "65534", "--json"])
        .env("XDG_CACHE_HOME", path_str(&private))
        .output();
    let v = parse_json(&other.stdout, "ddbx doctor --uid 65534 --json");
    let detail = v["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["check"] == "another uid")
        .and_then(|c| c["detail"].as_str())
        .unwrap_or_default();
    assert!(
        detail.starts_with("uid 65534 can read the preload /") && !detail.contains("private"),
        "{}",
        other.stdout
    );

    // A statically linked program.
    let src = tmp.join("hello.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap_or_else(|e| panic!("{e}"));
    let exe = tmp.join("hello-static");
    Run::new("gcc")
        .args(["-static", "-o", path_str(&exe), path_str(&src)])
        .success();
    let static_ = DDBX.run(["doctor", path_str(&exe)]).output();
    assert_eq!(static_.code, 1, "{}", static_.stdout);
    assert!(
        static_.stdout.contains("PROBLEM program") && static_.stdout.contains("statically linked"),
        "{}",
        static_.stdout
    );
}

/// The objects of a `--json-lines` file, each line parsed on its own.
fn json_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
    text.lines()
        .map(|line| parse_json(line, "one --json-lines line"))
        .collect()
}

/// The `event` of each object.
fn kinds(lines: &[Value]) -> Vec<&str> {
    lines.iter().filter_map(|v| v["event"].as_str()).collect()
}

#[test]
fn json_lines_follow_a_record_and_a_divergence() {
    let tmp = TempDir::new("jsonl");
    let bin = tmp.join("prog");
    std::fs::copy(progs().join("diverge1"), &bin).unwrap_or_else(|e| panic!("{e}"));
    let rec = tmp.join("rec");
    let messages = tmp.join("record.jsonl");
    let out = DDBX
        .run(["record", "--json-lines", "--messages", path_str(&messages)])
        .args(["-o", path_str(&rec), "--", path_str(&bin)])
        .success();
    assert!(
        !out.stdout.contains("\"event\""),
        "JSON on the program's stdout"
    );
    let lines = json_lines(&messages);
    let k = kinds(&lines);
    assert_eq!(k.first(), Some(&"start"), "{k:?}");
    assert_eq!(k.last(), Some(&"end"), "{k:?}");
    let started = k.iter().filter(|e| **e == "actor_started").count();
    let exited = k.iter().filter(|e| **e == "actor_exited").count();
    let end = &lines[lines.len() - 1];
    let actors = end["actors"].as_array().map_or(0, Vec::len);
    assert!(actors >= 2, "{end}");
    assert_eq!(started, actors, "one actor_started per actor: {k:?}");
    assert_eq!(exited, actors, "one actor_exited per actor: {k:?}");
    assert!(k.contains(&"finishing"), "{k:?}");
    assert_eq!(end["outcome"], "complete");
    assert_eq!(lines[1]["actor"], "p1", "the root first: {}", lines[1]);

    std::fs::copy(progs().join("diverge2"), &bin).unwrap_or_else(|e| panic!("{e}"));
    let replay = tmp.join("replay.jsonl");
    let out = DDBX
        .run([
            "replay",
            "--json-lines",
            "--messages",
            path_str(&replay),
            path_str(&rec),
        ])
        .output();
    assert_eq!(out.code, 101, "{}", out.stderr);
    let lines = json_lines(&replay);
    let k = kinds(&lines);
    let at = |kind: &str| k.iter().position(|e| *e == kind);
    let divergence = &lines[at("divergence").unwrap_or_else(|| panic!("no divergence: {k:?}"))];
    assert!(
        divergence["message"]
            .as_str()
            .is_some_and(|m| m.contains("diverged")),
        "{divergence}"
    );
    assert!(divergence["at_event"].as_u64().is_some(), "{divergence}");
    assert!(at("divergence") < at("end"), "{k:?}");
    assert_eq!(lines[lines.len() - 1]["outcome"], "diverged");
}

#[test]
fn json_and_json_lines_exclude_each_other() {
    let out = DDBX
        .run(["replay", "--json", "--json-lines", "/nonexistent"])
        .output();
    assert_eq!(out.code, 2, "{}", out.stderr);
}
