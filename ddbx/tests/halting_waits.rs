//! Halting when a process waits for a child outside any event: a shell runs a client in the
//! foreground (its `wait` reaps it) before it starts the next one. Waits are not events, but
//! the record notes which child each blocking wait reaped, and the event after it needs that
//! child's end: a halting replay that needs the second client lets the first one finish (a
//! process blocked in waitpid reads no request), and the offline `ddbx inf` agrees.

use ddbx_tests::{Ddbx, TempDir, path_str, workspace};
use serde_json::Value;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// The JSON line of a replay's stderr (which also carries the programs' own messages).
fn json_line(text: &str) -> Value {
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
    DDBX.record(&rec, &script, &[]).success();

    // The second client: the tiny_client.py whose last argument is 2.
    let actors = DDBX.json(["ps", path_str(&rec), "--json"]);
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

    let offline = DDBX.json(["inf", path_str(&rec), &pred, "--json"])["cut"].clone();

    for _ in 0..3 {
        let replay = DDBX
            .run(["replay", path_str(&rec), "--stop-if", &pred, "--json"])
            .success();
        // The replay's JSON goes to the message stream (stdout is the program's).
        let halted = json_line(&replay.stderr);
        assert_eq!(halted["outcome"], "halted", "{}", replay.stdout);
        assert_eq!(halted["cut"], offline, "online cut vs ddbx inf");
        assert_eq!(halted["cut"][second.as_str()], 3);
    }
}
