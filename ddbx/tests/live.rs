//! `ddbx run --break-if` (issue 15, part 1): halting a live run without replay, paper 001's
//! lazy halting.
//!
//! `tests/progs/lazy_halt.c`: an RPC server (p1) that publishes `asked = 1` when its timed
//! client's request comes, before it answers; a heartbeat client that sends to it every
//! 20 ms; a bystander pair that only talks to itself; a timed client that waits for the answer
//! with a 1-second receive timeout. Halted at `p1.asked == 1`, the server stops at once, the
//! heartbeat client at its next send (delayed by p1), the timed client when its timeout expires
//! (delayed by p1, its wait for it timed out), and the bystanders run on to their end. Stopping
//! the server natively for 2 s makes the timed client time out; a 5-second live halt does not:
//! its timeout counts virtual time.

use ddbx_tests::{Ddbx, TempDir, forked_child, parse_json, path_str, progs, spawn_in_group};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
/// How long a line the test waits for may take at most (the program needs well under 1 s).
const PATIENCE: Duration = Duration::from_secs(60);
const BREAK: &str = "p1.asked == 1";

/// The lines a child writes on stdout, as they come.
fn lines_of(stdout: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits for a line containing `needle`; every line read on the way is added to `seen`.
fn await_line(rx: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) {
    loop {
        match rx.recv_timeout(PATIENCE) {
            Ok(line) => {
                let found = line.contains(needle);
                seen.push(line);
                if found {
                    return;
                }
            }
            Err(_) => panic!(
                "no line with `{needle}` came; lines so far:\n{}",
                seen.join("\n")
            ),
        }
    }
}

/// The actor of the JSON output's `actors` whose origin is fork `index` of p1.
fn fork_of_p1(json: &Value, index: u32) -> String {
    forked_child(json, "p1", index)
}

/// One actor of a halted state (`halts[i]`).
fn halted_actor<'a>(halt: &'a Value, id: &str) -> &'a Value {
    halt["actors"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["id"] == id))
        .unwrap_or_else(|| panic!("{id} is not in the halted state {halt}"))
}

/// The number of events in `rec`'s history of `actor`.
fn history_events(rec: &Path, actor: &str) -> u64 {
    let ps = DDBX.json(["ps", path_str(rec), "--json"]);
    ps["actors"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["id"] == actor))
        .and_then(|a| a["events"].as_u64())
        .unwrap_or_else(|| panic!("{actor} has no event count in {ps}"))
}

#[test]
fn natively_a_server_standing_still_makes_the_timed_client_time_out() {
    // The fault a live halt must not cause: the server stands still for 2 s where the halt
    // stops it (what a native debugger's breakpoint would do), longer than the client's
    // 1-second receive timeout.
    let out = ddbx_tests::Run::new(progs().join("lazy_halt"))
        .env("LAZY_HALT_PAUSE_MS", "2000")
        .output();
    assert!(
        out.stdout.contains("timed client: timed out"),
        "natively, the timed client did not time out: {}",
        out.stdout
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
}

#[test]
fn a_live_halt_stops_lazily_and_makes_no_peer_time_out() {
    let tmp = TempDir::new("live-halt");
    let rec = tmp.join("run");
    let json_file = tmp.join("out.json");
    let mut cmd = Command::new(DDBX.path());
    cmd.args([
        "run",
        "--break-if",
        BREAK,
        "--prompt",
        "--json",
        "--messages",
    ])
    .arg(&json_file)
    .arg("-o")
    .arg(&rec)
    .arg("--")
    .arg(progs().join("lazy_halt"))
    .stdin(Stdio::piped())
    .stdout(Stdio::piped());
    let (mut child, _group) = spawn_in_group(&mut cmd);
    let rx = lines_of(child.stdout.take().expect("stdout"));
    let mut stdin = child.stdin.take().expect("stdin");
    let mut seen = Vec::new();
    await_line(&rx, "halted; type `help`", &mut seen);
    // The halt lasts 5 s: five times the timed client's timeout.
    std::thread::sleep(Duration::from_secs(5));
    stdin.write_all(b"show\n").expect("show");
    await_line(&rx, "halted live where", &mut seen);
    stdin.write_all(b"print p1.asked\ncont\n").expect("cont");
    drop(stdin);
    let status = child.wait().expect("wait");
    seen.extend(rx.iter());
    let out = seen.join("\n");
    assert_eq!(status.code(), Some(0), "{out}");
    assert!(out.contains("timed client: got reply"), "{out}");
    assert!(out.contains("server: 150 heartbeats"), "{out}");
    assert!(out.contains("p1.asked = 1"), "{out}");
    let text = std::fs::read_to_string(&json_file).expect("json");
    let json = parse_json(&text, "ddbx run --json");
    assert_eq!(json["outcome"], "complete", "{json}");
    let halts = json["halts"].as_array().expect("halts");
    assert_eq!(halts.len(), 1, "{json}");
    let halt = &halts[0];
    let (heartbeat, bystander, timed) = (
        fork_of_p1(&json, 1),
        fork_of_p1(&json, 2),
        fork_of_p1(&json, 3),
    );
    assert_eq!(
        halted_actor(halt, "p1")["status"],
        "stopped (break)",
        "{halt}"
    );
    let beat = halted_actor(halt, &heartbeat);
    assert_eq!(beat["status"], "stopped (delayed by p1)", "{halt}");
    assert!(
        beat["next"]
            .as_str()
            .is_some_and(|n| n.starts_with("a send")),
        "{halt}"
    );
    let t = halted_actor(halt, &timed);
    assert!(
        t["status"]
            .as_str()
            .is_some_and(|s| s.starts_with("stopped (delayed by p1")),
        "{halt}"
    );
    assert_eq!(halted_actor(halt, &bystander)["status"], "exited", "{halt}");
    // The bystander's own child ran on too.
    let grandchild = forked_child(&json, &bystander, 1);
    assert_eq!(
        halted_actor(halt, &grandchild)["status"],
        "exited",
        "{halt}"
    );
    // The recording made during the run replays it, 3 times out of 3.
    for _ in 0..3 {
        let replay = DDBX.run(["replay", path_str(&rec)]).output();
        assert_eq!(replay.code, 0, "{}", replay.stderr);
        assert!(
            replay.stdout.contains("timed client: got reply"),
            "{}",
            replay.stdout
        );
        assert!(
            replay.stdout.contains("server: 150 heartbeats"),
            "{}",
            replay.stdout
        );
    }
}

#[test]
fn a_run_ended_at_the_halt_replays_to_it() {
    let tmp = TempDir::new("live-end");
    let rec = tmp.join("run");
    let json_file = tmp.join("out.json");
    let out = DDBX
        .run([
            "run",
            "--break-if",
            BREAK,
            "--no-prompt",
            "--json",
            "--messages",
        ])
        .args([path_str(&json_file), "-o", path_str(&rec), "--"])
        .args([path_str(&progs().join("lazy_halt"))])
        .output();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&json_file).expect("json");
    let json = parse_json(&text, "ddbx run --json");
    assert_eq!(json["outcome"], "halted", "{json}");
    let halt = &json["halts"][0];
    let cut = halt["cut"].as_object().expect("cut");
    assert!(cut.get("p1").and_then(Value::as_u64) >= Some(1), "{halt}");
    // Each stopped actor's history ends where it stopped.
    for (actor, events) in cut {
        assert_eq!(
            history_events(&rec, actor),
            events.as_u64().unwrap_or(0),
            "{actor}: {halt}"
        );
    }
    let replay_json = tmp.join("replay.json");
    let replay = DDBX
        .run(["replay", path_str(&rec), "--json", "--messages"])
        .args([path_str(&replay_json)])
        .output();
    let text = std::fs::read_to_string(&replay_json).expect("replay json");
    let r = parse_json(&text, "replay --json");
    assert_eq!(r["outcome"], "reached_end", "{text}");
    assert!(replay.stdout.contains("server: asked"), "{}", replay.stdout);
}

#[test]
fn bad_break_predicates_are_usage_errors() {
    let prog = progs().join("lazy_halt");
    for (pred, needle) in [
        ("p1.asked == 1 || p2.x == 1", "conjunction"),
        ("p1.asked ==", "--break-if"),
    ] {
        let out = DDBX
            .run(["run", "--break-if", pred, "--", path_str(&prog)])
            .output();
        assert_eq!(out.code, 2, "{pred}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{pred}: {}", out.stderr);
    }
    for point in ["p0:3", "p1:0", "p1", "x:2"] {
        let out = DDBX
            .run(["run", "--break-at", point, "--", path_str(&prog)])
            .output();
        assert_eq!(out.code, 2, "{point}: {}", out.stderr);
        assert!(out.stderr.contains("--break-at"), "{point}: {}", out.stderr);
    }
    let out = DDBX
        .run(["run", "--break-if", BREAK, "--", "/no/such/program"])
        .output();
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("/no/such/program"), "{}", out.stderr);
}

#[test]
fn break_at_stops_right_after_that_event() {
    let tmp = TempDir::new("live-at");
    let rec = tmp.join("run");
    let json_file = tmp.join("out.json");
    let out = DDBX
        .run([
            "run",
            "--break-at",
            "p1:5",
            "--no-prompt",
            "--json",
            "--messages",
        ])
        .args([path_str(&json_file), "-o", path_str(&rec), "--"])
        .args([path_str(&progs().join("lazy_halt"))])
        .output();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&json_file).expect("json");
    let json = parse_json(&text, "ddbx run --json");
    let halt = &json["halts"][0];
    assert_eq!(halt["predicate"], "p1.events >= 5", "{json}");
    assert_eq!(halt["cut"]["p1"], 5, "{json}");
    assert_eq!(history_events(&rec, "p1"), 5);
}

#[test]
fn a_program_name_names_the_first_process_that_runs_it() {
    let tmp = TempDir::new("live-prog");
    let json_file = tmp.join("out.json");
    let out = DDBX
        .run([
            "run",
            "--break-if",
            "lazy_halt.asked == 1",
            "--no-prompt",
            "--json",
        ])
        .args([
            "--messages",
            path_str(&json_file),
            "-o",
            path_str(&tmp.join("run")),
            "--",
        ])
        .args([path_str(&progs().join("lazy_halt"))])
        .output();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&json_file).expect("json");
    let json = parse_json(&text, "ddbx run --json");
    let halt = &json["halts"][0];
    assert_eq!(
        halted_actor(halt, "p1")["status"],
        "stopped (break)",
        "{json}"
    );
    assert_eq!(halted_actor(halt, "p1")["vars"]["asked"], 1, "{json}");
}
