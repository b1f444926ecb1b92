//! Recordings that cannot be used are refused with exit code 102 and a message that names the
//! file (and line) at fault; a torn last line is dropped with a note; `record` never writes
//! into a non-empty directory. Nothing here modifies the recording it reads.

use ddbx_tests::{Ddbx, Output, TempDir, path_str, progs};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const USAGE: i32 = 2;
const BAD_RECORDING: i32 = 102;

fn ddbx(args: &[&str]) -> Output {
    DDBX.run(args).output()
}

/// `ddbx record -o REC -- accept_race`.
fn record_accept_race(rec: &Path) -> Output {
    DDBX.record(rec, &progs().join("accept_race"), &[]).output()
}

/// A fresh recording of accept_race in `tmp/rec`.
fn recording(tmp: &TempDir) -> PathBuf {
    let rec = tmp.join("rec");
    let out = record_accept_race(&rec);
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

/// A client's history file (p2: Header, Start, Connect, Send, Recv, Exit) and its text.
fn client_history(rec: &Path) -> (PathBuf, String) {
    let p = rec.join("history/p2.ron");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.lines().count() >= 5, "{text}");
    (p, text)
}

#[test]
fn a_garbage_line_is_reported_with_file_and_line() {
    let tmp = TempDir::new("bad-line");
    let rec = recording(&tmp);
    let (p2, text) = client_history(&rec);
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "Garbage(((";
    std::fs::write(&p2, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let before = snapshot(&rec);
    let r = path_str(&rec);
    for args in [vec!["replay", r], vec!["show", r, "p2"], vec!["ps", r]] {
        // The message names p2.ron, line 4, and shows the line.
        ddbx(&args).assert_exit(BAD_RECORDING, &["p2.ron:4:", "Garbage((("]);
        assert_eq!(snapshot(&rec), before, "{args:?} changed the recording");
    }
}

/// Cuts p2's history in the middle of its last line; returns how many records it had.
fn tear_client_history(rec: &Path) -> usize {
    let (p2, text) = client_history(rec);
    // Records after the header (value lines, `~…`, are not records).
    let whole = text.lines().filter(|l| !l.starts_with('~')).count() - 1;
    let body = text.trim_end_matches('\n');
    let last = body.rfind('\n').unwrap_or(0) + 1;
    let cut = last + (body.len() - last) / 2;
    std::fs::write(&p2, &body[..cut]).unwrap_or_else(|e| panic!("{e}"));
    whole
}

/// Rewrites p2's exit status in the manifest (`Exited(0)` → `with`).
fn set_client_exit(rec: &Path, with: &str) {
    let manifest = rec.join("manifest.ron");
    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
    let at = text
        .find("id: \"p2\"")
        .unwrap_or_else(|| panic!("no p2:\n{text}"));
    let exit = at
        + text[at..]
            .find("exit: Some(Exited(0))")
            .unwrap_or_else(|| panic!("{text}"));
    let edited = format!(
        "{}exit: Some({with}){}",
        &text[..exit],
        &text[exit + "exit: Some(Exited(0))".len()..]
    );
    std::fs::write(&manifest, edited).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_torn_history_of_a_process_that_exited_is_refused() {
    let tmp = TempDir::new("torn-exited");
    let rec = recording(&tmp);
    tear_client_history(&rec);
    let lines = std::fs::read_to_string(rec.join("history/p2.ron"))
        .unwrap_or_default()
        .lines()
        .count();
    let before = snapshot(&rec);
    let r = path_str(&rec);
    let at_line = format!("ends inside a record at line {lines}");
    for args in [vec!["replay", r], vec!["show", r, "p2"], vec!["ps", r]] {
        ddbx(&args).assert_exit(
            BAD_RECORDING,
            &["p2.ron", &at_line, "manifest says p2 ended with exit 0"],
        );
        assert_eq!(snapshot(&rec), before, "{args:?} changed the recording");
    }
}

#[test]
fn random_bytes_are_reported_at_their_line() {
    let tmp = TempDir::new("random-bytes");
    let rec = recording(&tmp);
    let (p2, text) = client_history(&rec);
    let mut bytes = text.into_bytes();
    let third = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(1)
        .map(|(i, _)| i + 1)
        .unwrap_or(0);
    bytes.splice(third + 4..third + 4, [0xff, 0xfe, 0x80, 0x00]);
    std::fs::write(&p2, bytes).unwrap_or_else(|e| panic!("{e}"));
    ddbx(&["replay", path_str(&rec)])
        .assert_exit(BAD_RECORDING, &["p2.ron:3:", "invalid bytes at column 5"]);
}

#[test]
fn a_fifo_in_place_of_a_file_is_refused_without_waiting() {
    for file in ["manifest.ron", "history/p2.ron"] {
        let tmp = TempDir::new("fifo");
        let rec = recording(&tmp);
        let path = rec.join(file);
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let status = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap_or_else(|e| panic!("mkfifo: {e}"));
        assert!(status.success());
        // Nobody ever writes to the FIFO: reading it would wait for ever (the run's limit
        // fails the test then).
        let out = DDBX
            .run(["replay", path_str(&rec)])
            .limit(std::time::Duration::from_secs(20))
            .output();
        out.assert_exit(BAD_RECORDING, &[file, "found a FIFO"]);
    }
}

#[test]
fn a_torn_last_line_is_dropped_with_a_note() {
    let tmp = TempDir::new("torn");
    let rec = recording(&tmp);
    // The process was killed while writing its last record.
    set_client_exit(&rec, "Signaled(9)");
    let whole = tear_client_history(&rec);
    let before = snapshot(&rec);

    let out = ddbx(&["show", path_str(&rec), "p2"]);
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
    let ps = ddbx(&["ps", "--json", path_str(&rec)]);
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
    let current = format!("format: {},", ddbx_wire::FORMAT_VERSION);
    assert!(text.contains(&current), "{text}");
    std::fs::write(&manifest, text.replacen(&current, "format: 99,", 1))
        .unwrap_or_else(|e| panic!("{e}"));
    let before = snapshot(&rec);
    let out = ddbx(&["replay", path_str(&rec)]);
    out.assert_exit(BAD_RECORDING, &["format 99", "manifest.ron"]);
    assert_eq!(snapshot(&rec), before, "replay changed the recording");
}

#[test]
fn a_missing_recording_is_named() {
    let out = ddbx(&["replay", "/nonexistent/ddbx-run-xyz"]);
    out.assert_exit(BAD_RECORDING, &["/nonexistent/ddbx-run-xyz"]);
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
        let out = record_accept_race(dir);
        assert_eq!(out.code, USAGE, "{}", out.stderr);
        assert!(out.stdout.is_empty(), "the program ran: {}", out.stdout);
        assert!(
            out.stderr.contains(path_str(dir)) || out.stderr.contains("-o"),
            "{}",
            out.stderr
        );
        assert_eq!(snapshot(dir), before, "{} was modified", dir.display());
    }
}

/// Found by the corrupted-recording fuzz (`ddbx/tests/fuzz_recordings.rs`): a history that lost
/// its last whole records (its `Exit`) made replay wait for ever for a kill that never came.
#[test]
fn a_history_without_its_exit_of_a_process_that_exited_is_refused() {
    let tmp = TempDir::new("no-exit");
    let rec = recording(&tmp);
    let (p2, text) = client_history(&rec);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[lines.len() - 1].starts_with("Exit("), "{text}");
    let cut = lines[..lines.len() - 1].join("\n") + "\n";
    std::fs::write(&p2, cut).unwrap_or_else(|e| panic!("{e}"));
    let r = path_str(&rec);
    for args in [vec!["replay", r], vec!["show", r, "p2"]] {
        ddbx(&args).assert_exit(
            BAD_RECORDING,
            &[
                "p2.ron: expected `Exit` as the last record",
                "p2 ended with exit 0",
            ],
        );
    }
}

/// Found by the same fuzz: an actor's origin in the manifest that its history's `Start`
/// contradicts replayed as a divergence ("a process the record did not have").
#[test]
fn an_origin_the_history_contradicts_is_refused() {
    let tmp = TempDir::new("origin");
    let rec = recording(&tmp);
    let manifest = rec.join("manifest.ron");
    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
    let edited = text.replacen("index: 2,", "index: 7,", 1);
    assert_ne!(edited, text, "{text}");
    // Actor names follow the order in which the children reached the GD, so the child of
    // the second fork is p2 or p3 from one record to the next: take the name from the entry.
    let entry = &text[..text.find("index: 2,").unwrap_or_default()];
    let id_at = entry.rfind("id: \"").map(|i| i + 5).unwrap_or_default();
    let name = entry[id_at..].split('"').next().unwrap_or_default();
    assert!(name.starts_with('p'), "{text}");
    std::fs::write(&manifest, edited).unwrap_or_else(|e| panic!("{e}"));
    let expected = format!("{name}.ron: expected {name}'s `Start`");
    ddbx(&["replay", path_str(&rec)])
        .assert_exit(BAD_RECORDING, &[expected.as_str(), "as manifest.ron says"]);
}

#[test]
fn a_manifest_that_is_not_utf8_is_refused_at_its_line_and_column() {
    let tmp = TempDir::new("manifest-bytes");
    let rec = recording(&tmp);
    let manifest = rec.join("manifest.ron");
    let mut bytes = std::fs::read(&manifest).unwrap_or_default();
    let third = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(1)
        .map(|(i, _)| i + 1)
        .unwrap_or(0);
    bytes.splice(third + 4..third + 4, [0xff]);
    std::fs::write(&manifest, bytes).unwrap_or_else(|e| panic!("{e}"));
    ddbx(&["replay", path_str(&rec)])
        .assert_exit(BAD_RECORDING, &["manifest.ron:3:5:", "invalid bytes"]);
}
