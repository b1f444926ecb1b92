//! A process SIGKILLed between an outcome its peers can observe and the record of it (issue
//! #11, item 4): a connect whose `Connect` the history does not have, and an accept whose
//! `Accept` the server's history does not have. Replay reconciles the
//! killed process's tail with its peers' histories (`supervisor/src/recording/unlogged.rs`).
//! The mirror, a send its killed sender never logged, is in `ddbx/tests/faults.rs`.
//!
//! (Not in `interrupt.rs`: a test there checks that the next ddbx removes a dead one's runtime
//! directory, which any ddbx running beside it may do first.)

use ddbx_tests::{Ddbx, TempDir, history_text, path_str, progs};
use std::time::Duration;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// A process SIGKILLed between its `connect` and the connect's record (issue #11, item 4):
/// the peer's history has the `Accept`, the killed process's ends with the intent line its LD
/// wrote before the call. Replay makes that connect at the end of its history (the peer's
/// accept gets the real connection, not a stand-in for an outside client), then the kill.
/// `DDBX_LD_FAULT=connect` makes the LD kill its process in exactly that window.
#[test]
fn a_process_killed_before_its_connect_was_logged_replays_that_connect() {
    let tmp = TempDir::new("connect-kill");
    // self_kill's child, whose connect blocks, or is non-blocking (EINPROGRESS).
    for nonblock in [false, true] {
        let name = if nonblock { "nonblock" } else { "blocking" };
        let rec = tmp.join(name);
        let args: &[&str] = if nonblock { &["nonblock"] } else { &[] };
        let recorded = DDBX
            .record(&rec, &progs().join("self_kill"), args)
            .env("DDBX_LD_FAULT", "connect")
            .success();
        let expected = "received 0 messages, 0 bytes\nchild killed by signal 9\n";
        assert_eq!(recorded.stdout, expected);
        let history = std::fs::read_to_string(rec.join("history/p2.ron")).unwrap_or_default();
        let last = history.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("~k(fd: 3, ") && last.contains(&format!("nonblock: {nonblock}")),
            "{name}: the history ends with the connect's intent:\n{history}"
        );
        for i in 0..2 {
            let out = tmp.join(&format!("{name}-replay{i}"));
            let replay = DDBX
                .run(["replay", "--history-out", path_str(&out), path_str(&rec)])
                .limit(Duration::from_secs(60))
                .output();
            replay.assert_exit(0, &["replay reached the recorded end"]);
            assert_eq!(replay.stdout, recorded.stdout, "{name}");
            let replayed = std::fs::read_to_string(out.join("history/p2.ron")).unwrap_or_default();
            let last = replayed.lines().last().unwrap_or_default();
            let err = if nonblock {
                "Some(\"EINPROGRESS\")"
            } else {
                "None"
            };
            assert!(
                last.starts_with(&format!("Connect(fd: 3, err: {err}, ")),
                "{name}: the replay makes the connect:\n{replayed}"
            );
        }
    }
}

/// The same window, cut by hand from a recording whose peer then received bytes from the
/// killed process (self_kill's child sent its 3 messages): the history of the child is cut
/// before its `Connect`. The replay makes the connect and plays the unlogged sends from the
/// parent's history (the bytes it received, which the end of the record dropped from its
/// history as a channel between two recorded processes). Before: the replay diverged at the
/// parent's first receive, "an outside peer … whose 9 bytes the recording does not hold".
#[test]
fn a_connect_cut_from_a_killed_history_is_reconciled_with_its_peer() {
    let tmp = TempDir::new("connect-cut");
    let rec = tmp.join("rec");
    let recorded = DDBX.record(&rec, &progs().join("self_kill"), &[]).success();
    let child = rec.join("history/p2.ron");
    let text = std::fs::read_to_string(&child).unwrap_or_else(|e| panic!("{e}"));
    let connect = text
        .find("\nConnect(")
        .unwrap_or_else(|| panic!("no Connect in\n{text}"));
    std::fs::write(&child, &text[..connect + 1]).unwrap_or_else(|e| panic!("{e}"));
    let parent = history_text(&rec.join("history/p1.ron"));
    for i in 0..2 {
        let out = tmp.join(&format!("replay{i}"));
        let replay = DDBX
            .run(["replay", "--history-out", path_str(&out), path_str(&rec)])
            .limit(Duration::from_secs(60))
            .output();
        replay.assert_exit(0, &["replay reached the recorded end", "p2 was killed"]);
        assert_eq!(replay.stdout, recorded.stdout);
        // The parent received and sent what it did in the record.
        let replayed = history_text(&out.join("history/p1.ron"));
        let transfers = |h: &str| -> Vec<String> {
            h.lines()
                .filter(|l| l.starts_with("Recv(") || l.starts_with("Send("))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(transfers(&replayed), transfers(&parent), "{replayed}");
        // (Whether the 9 bytes came in one receive or more is the record's.)
        let tail = ["Send(fd: 4, n: 4)", "Recv(fd: 4, n: 0)"];
        assert!(
            transfers(&parent).ends_with(&tail.map(String::from)),
            "{parent}"
        );
        let child = std::fs::read_to_string(out.join("history/p2.ron")).unwrap_or_default();
        assert!(child.contains("\nConnect(fd: 3, err: None, "), "{child}");
    }
    // `ddbx show` lists the connect, matched with the parent's accept, and says where it
    // comes from.
    let show = DDBX.run(["show", path_str(&rec), "p2"]).success();
    assert!(
        show.stdout.contains("  2  Connect(fd: 3, err: None, ")
            && show.stdout.contains("→ p1 event 3")
            && show.stdout.contains("not in the history file"),
        "{}",
        show.stdout
    );
}

/// The accept-side twin: the server SIGKILLed between its accept returning and the accept's
/// record (`DDBX_LD_FAULT=accept`). Its clients' connects were made (the kernel completed
/// them before the accept), each sent a message and then saw the connection reset; no
/// history has the `Accept`, so the loader takes the server for one outside the session and
/// the LD plays it over a socketpair. chatter sets `TCP_NODELAY` on its connected socket,
/// which that AF_UNIX socket refused (EOPNOTSUPP): every replay diverged ("p3 at event 4:
/// expected `Send(…)`, found `exit with status 1`"). The LD now lets TCP and IP options on a
/// played connection succeed without effect, as they did on the recorded TCP socket.
#[test]
fn a_server_killed_before_its_accept_was_logged_replays_as_recorded() {
    let tmp = TempDir::new("accept-kill");
    let rec = tmp.join("rec");
    let recorded = DDBX
        .record(&rec, &progs().join("chatter"), &["2", "50"])
        .env("DDBX_LD_FAULT", "accept")
        .output();
    assert_eq!(recorded.code, 128 + 9, "{}", recorded.stderr);
    let root = std::fs::read_to_string(rec.join("history/p1.ron")).unwrap_or_default();
    assert!(
        !root.contains("\nAccept("),
        "the accept is not logged:\n{root}"
    );
    let manifest = std::fs::read_to_string(rec.join("manifest.ron")).unwrap_or_default();
    assert!(manifest.contains("Signaled(9)"), "{manifest}");
    // A client whose connect the server's kernel completed: it sent, then was reset.
    let connected = (2..=5)
        .map(|i| history_text(&rec.join(format!("history/p{i}.ron"))))
        .filter(|h| h.contains("\nConnect(fd: 3, err: None, ") && h.contains("\nSend("))
        .count();
    assert!(connected >= 1, "no client connected before the kill");
    for _ in 0..3 {
        let replay = DDBX
            .run(["replay", path_str(&rec)])
            .limit(Duration::from_secs(60))
            .output();
        replay.assert_exit(128 + 9, &["replay reached the recorded end"]);
        assert_eq!(replay.stdout, recorded.stdout);
    }
}

/// The same over a Unix socket (the accept names the connecting pid): unix_race's three
/// clients are each killed in their connect; the server accepts the first connection, reads
/// its end and fails (exit 1) while the other clients may not even have started. The replay
/// ends as the record did, every time: the clients forked just before their parent exited
/// join before the replay ends (before, 1 replay in 10 killed one before its first event and
/// stopped with 101).
#[test]
fn a_unix_connect_killed_before_its_record_replays_as_recorded() {
    let tmp = TempDir::new("connect-kill-unix");
    let rec = tmp.join("rec");
    let recorded = DDBX
        .record(&rec, &progs().join("unix_race"), &[])
        .env("DDBX_LD_FAULT", "connect")
        .output();
    assert_eq!(recorded.code, 1, "{}", recorded.stderr);
    let mut roots = vec![rec.join("history/p1.ron")];
    for i in 0..5 {
        let out = tmp.join(&format!("replay{i}"));
        roots.push(out.join("history/p1.ron"));
        let replay = DDBX
            .run(["replay", "--history-out", path_str(&out), path_str(&rec)])
            .limit(Duration::from_secs(60))
            .output();
        replay.assert_exit(
            1,
            &[
                "replay reached the recorded end",
                "was killed in a connect to unix:",
            ],
        );
        assert_eq!(replay.stdout, recorded.stdout);
    }
    // The server failed before removing its socket's directory: each run's, named in the
    // root's history, goes now.
    for history in roots {
        let text = std::fs::read_to_string(history).unwrap_or_default();
        for dir in text.split("\"unix:").filter_map(|rest| {
            let path = std::path::Path::new(rest.split('"').next()?);
            path.parent()
                .filter(|d| d.to_string_lossy().starts_with("/tmp/ddbx-unix_race."))
                .map(std::path::Path::to_path_buf)
        }) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A forked child SIGKILLed as its LD joins, after the GD made its history and before the
/// history's first line (a group kill right after a fork: `timeout` relaying a SIGTERM to
/// its group). Its history was an empty file, which no reader takes (`ddbx ps` and `replay`
/// refused the recording); the record's end gives it its header and the `Start` the GD knew
/// of. `DDBX_LD_FAULT=welcome` makes every forked child's LD kill its process in that window.
#[test]
fn a_child_killed_before_its_history_had_a_line_leaves_a_recording_that_replays() {
    let tmp = TempDir::new("welcome-kill");
    let rec = tmp.join("rec");
    let script = r#"/bin/sh -c 'exit 3' & wait $!; echo "child ended with $?""#;
    let bash = std::path::Path::new("/bin/bash");
    let recorded = DDBX
        .record(&rec, bash, &["-c", script])
        .env("DDBX_LD_FAULT", "welcome")
        .success();
    assert_eq!(recorded.stdout, "child ended with 137\n");
    let child = std::fs::read_to_string(rec.join("history/p2.ron")).unwrap_or_default();
    let lines: Vec<&str> = child.lines().collect();
    assert!(
        lines.len() == 2 && lines[0].starts_with("Header(") && lines[1].starts_with("Start("),
        "the child's history: {child:?}"
    );
    DDBX.run(["ps", path_str(&rec)]).success();
    for _ in 0..2 {
        let replay = DDBX.run(["replay", path_str(&rec)]).output();
        replay.assert_exit(0, &["replay reached the recorded end"]);
        assert_eq!(replay.stdout, recorded.stdout);
    }
}
