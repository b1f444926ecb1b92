//! Halting when a process waits for a child outside any event: a shell runs a client in the
//! foreground (its `wait` reaps it) before it starts the next one. Waits are not events, but
//! the record notes which child each blocking wait reaped, and the event after it needs that
//! child's end: a halting replay that needs the second client lets the first one finish (a
//! process blocked in waitpid reads no request), and the offline `ddbx inf` agrees.

use ddbx_tests::{Run, TempDir, workspace};
use serde_json::Value;

const DDBX: &str = env!("CARGO_BIN_EXE_ddbx");

fn json(text: &str) -> Value {
    // Take the JSON line (a replay's stderr also carries the programs' own messages).
    let line = text
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn a_client_started_after_a_foreground_one_is_reached_and_the_cut_matches_inf() {
    let tmp = TempDir::new("fg");
    let rec = tmp.join("rec");
    let script = workspace().join("tests/real/sh_foreground.sh");
    let out = Run::new(DDBX)
        .args(["record", "-o", rec.to_str().unwrap(), "--"])
        .args([script.to_str().unwrap()])
        .output();
    assert_eq!(out.code, 0, "record: {}", out.stderr);

    // The second client: the tiny_client.py whose last argument is 2.
    let ps = Run::new(DDBX)
        .args(["ps", rec.to_str().unwrap(), "--json"])
        .output();
    assert_eq!(ps.code, 0, "ps: {}", ps.stderr);
    let actors = json(&ps.stdout);
    let second = actors["actors"]
        .as_array()
        .expect("actors")
        .iter()
        .find(|a| {
            let argv: Vec<&str> = a["command"]
                .as_array()
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            argv.iter().any(|s| s.ends_with("tiny_client.py")) && argv.last() == Some(&"2")
        })
        .map(|a| a["id"].as_str().unwrap_or_default().to_string())
        .expect("the second client is an actor");
    let pred = format!("{second}.events >= 3");

    let inf = Run::new(DDBX)
        .args(["inf", rec.to_str().unwrap(), &pred, "--json"])
        .output();
    assert_eq!(inf.code, 0, "inf: {}", inf.stderr);
    let offline = json(&inf.stdout)["cut"].clone();

    for _ in 0..3 {
        let replay = Run::new(DDBX)
            .args([
                "replay",
                rec.to_str().unwrap(),
                "--stop-if",
                &pred,
                "--json",
            ])
            .output();
        assert_eq!(replay.code, 0, "replay: {}", replay.stderr);
        // The replay's JSON goes to the message stream (stdout is the program's).
        let halted = json(&replay.stderr);
        assert_eq!(halted["outcome"], "halted", "{}", replay.stdout);
        assert_eq!(halted["cut"], offline, "online cut vs ddbx inf");
        assert_eq!(halted["cut"][second.as_str()], 3);
    }
}
