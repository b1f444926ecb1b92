//! Recordings that cannot be used are refused with exit code 102 and a message that names the
//! file (and line) at fault; a torn last line is dropped with a note; `record` never writes
//! into a non-empty directory. Nothing here modifies the recording it reads.

use ddbx_tests::{Output, Run, TempDir, progs};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const DDBX: &str = env!("CARGO_BIN_EXE_ddbx");
const USAGE: i32 = 2;
const BAD_RECORDING: i32 = 102;

fn ddbx(args: &[&str]) -> Output {
    Run::new(DDBX).args(args).output()
}

/// A fresh recording of accept_race in `tmp/rec`.
fn recording(tmp: &TempDir) -> PathBuf {
    let rec = tmp.join("rec");
    let out = ddbx(&[
        "record",
        "-o",
        rec.to_str().unwrap_or_default(),
        "--",
        progs().join("accept_race").to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    rec
}

/// Every file under `dir` (relative path → contents).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .map(Path::to_path_buf)
                    .unwrap_or_default();
                out.insert(rel, std::fs::read(&p).unwrap_or_else(|e| panic!("{e}")));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// A client's history (p2: Header, Start, Connect, Send, Recv, Exit).
fn client_history(rec: &Path) -> PathBuf {
    let p = rec.join("history/p2.ron");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.lines().count() >= 5, "{text}");
    p
}

#[test]
fn a_garbage_line_is_reported_with_file_and_line() {
    let tmp = TempDir::new("bad-line");
    let rec = recording(&tmp);
    let p2 = client_history(&rec);
    let text = std::fs::read_to_string(&p2).unwrap_or_default();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "Garbage(((";
    std::fs::write(&p2, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let before = snapshot(&rec);
    let r = rec.to_str().unwrap_or_default();
    for args in [vec!["replay", r], vec!["show", r, "p2"], vec!["ps", r]] {
        let out = ddbx(&args);
        assert_eq!(out.code, BAD_RECORDING, "{args:?}:\n{}", out.stderr);
        assert!(
            out.stderr.contains("p2.ron:4:"),
            "{args:?}: the message does not name p2.ron line 4:\n{}",
            out.stderr
        );
        assert!(
            out.stderr.contains("Garbage((("),
            "{args:?}:\n{}",
            out.stderr
        );
        assert_eq!(snapshot(&rec), before, "{args:?} changed the recording");
    }
}

#[test]
fn a_torn_last_line_is_dropped_with_a_note() {
    let tmp = TempDir::new("torn");
    let rec = recording(&tmp);
    let p2 = client_history(&rec);
    let text = std::fs::read_to_string(&p2).unwrap_or_default();
    let whole = text.lines().count() - 1; // records after the header
    let body = text.trim_end_matches('\n');
    let last = body.rfind('\n').unwrap_or(0) + 1;
    let cut = last + (body.len() - last) / 2;
    std::fs::write(&p2, &body[..cut]).unwrap_or_else(|e| panic!("{e}"));
    let before = snapshot(&rec);

    let out = ddbx(&["show", rec.to_str().unwrap_or_default(), "p2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out
        .stdout
        .lines()
        .filter(|l| {
            l.trim_start()
                .split(' ')
                .next()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count();
    assert_eq!(
        events,
        whole - 1,
        "the torn record is dropped:\n{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("ends inside a record"),
        "show does not say the last record was dropped:\n{}",
        out.stdout
    );
    let ps = ddbx(&["ps", "--json", rec.to_str().unwrap_or_default()]);
    assert_eq!(ps.code, 0, "{}", ps.stderr);
    assert!(ps.stdout.contains("\"truncated\":true"), "{}", ps.stdout);
    assert_eq!(snapshot(&rec), before, "show/ps changed the recording");
}

#[test]
fn a_manifest_of_another_format_version_is_refused() {
    let tmp = TempDir::new("format");
    let rec = recording(&tmp);
    let manifest = rec.join("manifest.ron");
    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
    assert!(text.contains("format: 1,"), "{text}");
    std::fs::write(&manifest, text.replacen("format: 1,", "format: 99,", 1))
        .unwrap_or_else(|e| panic!("{e}"));
    let before = snapshot(&rec);
    let out = ddbx(&["replay", rec.to_str().unwrap_or_default()]);
    assert_eq!(out.code, BAD_RECORDING, "{}", out.stderr);
    assert!(out.stderr.contains("format 99"), "{}", out.stderr);
    assert!(out.stderr.contains("manifest.ron"), "{}", out.stderr);
    assert_eq!(snapshot(&rec), before, "replay changed the recording");
}

#[test]
fn a_missing_recording_is_named() {
    let out = ddbx(&["replay", "/nonexistent/ddbx-run-xyz"]);
    assert_eq!(out.code, BAD_RECORDING, "{}", out.stderr);
    assert!(
        out.stderr.contains("/nonexistent/ddbx-run-xyz"),
        "{}",
        out.stderr
    );
}

#[test]
fn record_never_writes_into_a_non_empty_directory() {
    let tmp = TempDir::new("nonempty");
    // An existing recording …
    let rec = recording(&tmp);
    // … and a directory of someone's files.
    let other = tmp.join("other");
    std::fs::create_dir_all(other.join("sub")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(other.join("keep.txt"), "precious\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(other.join("sub/manifest.ron"), "not mine").unwrap_or_else(|e| panic!("{e}"));
    for dir in [&rec, &other] {
        let before = snapshot(dir);
        let out = ddbx(&[
            "record",
            "-o",
            dir.to_str().unwrap_or_default(),
            "--",
            progs().join("accept_race").to_str().unwrap_or_default(),
        ]);
        assert_eq!(out.code, USAGE, "{}", out.stderr);
        assert!(out.stdout.is_empty(), "the program ran: {}", out.stdout);
        assert!(
            out.stderr.contains(dir.to_str().unwrap_or_default()) || out.stderr.contains("-o"),
            "{}",
            out.stderr
        );
        assert_eq!(snapshot(dir), before, "{} was modified", dir.display());
    }
}
