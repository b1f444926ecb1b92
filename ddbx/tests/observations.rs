//! Observations of a stream that do not consume it (issue #10, real servers): a receive with
//! `MSG_PEEK` (vsftpd reads each command line that way) and `ioctl(FIONREAD)` (libevent sizes
//! its reads with it).
//!
//! A peek is a `Peek` record: it needs the sends of the bytes it saw, but the stream does not
//! advance, so the receive after it gets the same bytes. Before, a peek was logged as a `Recv`
//! and the analysis counted its bytes twice: on `peek_lines`, whose clients wait for the
//! server's answer to each line, `ddbx races` exited 102 ("dependency cycle … p1 event 25
//! (Recv) needs p1 event 24 (Recv) …").

use ddbx_tests::{
    Ddbx, Histories, TempDir, histories, history_text, native_outputs, path_str, progs,
};
use ddbx_wire::Record;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// Shows natively that `peek_lines args` prints different things from run to run (jitter 3),
/// then records it and replays it 5 times (same output, same histories). Returns the
/// recording's directory and the record's output.
fn race_and_replay(args: &[&str]) -> (TempDir, String) {
    let program = progs().join("peek_lines");
    let outputs = native_outputs(&program, args, 3, 2, 30);
    assert!(
        outputs.len() >= 2,
        "30 native runs of peek_lines {args:?} all printed the same:\n{}",
        outputs[0]
    );
    let (tmp, recorded) = DDBX.record_and_replay(&program, args, 3, 5);
    (tmp, recorded.stdout)
}

/// The events (1-based) of the server's `Peek` records.
fn peeks(h: &Histories) -> Vec<usize> {
    h["p1"]
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Record::Peek { .. }))
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn a_server_that_peeks_at_each_line_replays_lists_its_races_and_halts_at_a_peek() {
    let (tmp, stdout) = race_and_replay(&[]);
    let rec = tmp.join("rec");
    let h = histories(&rec);
    // 3 clients × 4 lines, each seen by at least one peek, and the end of each stream.
    let at = peeks(&h);
    assert!(at.len() >= 15, "the server's peeks: {:?}", h["p1"]);
    for &k in &at {
        // Each peek saw bytes the next receive on the same fd takes (at least the line's
        // start); a peek of 0 is the end of the stream, and nothing follows it on the fd.
        let Record::Peek { fd, n } = h["p1"][k - 1] else {
            unreachable!()
        };
        let next = h["p1"][k..].iter().find_map(|r| match r {
            Record::Recv { fd: f, n, .. } if *f == fd => Some(*n),
            _ => None,
        });
        match next {
            Some(m) => assert!(n > 0 && m <= n, "event {k}: peek {n}, then recv {m}"),
            None => assert_eq!(n, 0, "event {k}: a peek of {n} bytes nothing took"),
        }
    }
    // The races are listed: no cycle through a peek and the read after it.
    let races = DDBX.run(["races", path_str(&rec)]).success();
    assert!(
        races.stdout.contains(" races in 4 actors"),
        "{}",
        races.stdout
    );
    // A halt right after a peek and right after the receive that follows it stops where
    // `ddbx inf` says: the peek needs the send of the last byte it saw.
    for &k in at.iter().take(3).chain(at.iter().rev().take(1)) {
        DDBX.halts_at_where_inf_says(&rec, &format!("p1:{k}"));
        DDBX.halts_at_where_inf_says(&rec, &format!("p1:{}", k + 1));
    }
    assert!(stdout.contains("c1 end"), "{stdout}");
    // Optimal tracing logs every peek (it describes no bytes to the peer's side channel).
    DDBX.replays_under_optimal_tracing(&progs().join("peek_lines"), &[]);
}

#[test]
fn a_recording_that_logged_peeks_as_receives_still_replays() {
    // What the record wrote before peeks had a record of their own: `Recv` with the peek's
    // count, and no FIONREAD values. The replay hands the peeked bytes again to the read after
    // it, as it did then; and the FIONREAD the server makes between its peek and its read,
    // which must say at least the peeked bytes are waiting, gets the real count plus the
    // bytes the LD took from the kernel for the peek (the real count alone is 0 there).
    let program = progs().join("peek_lines");
    let tmp = TempDir::new("old-peeks");
    let rec = tmp.join("rec");
    let recorded = DDBX
        .record(&rec, &program, &[])
        .env("DDBX_JITTER", "3")
        .success();
    let file = rec.join("history").join("p1.ron");
    let text = history_text(&file);
    assert!(text.contains("\nPeek("), "{text}");
    assert!(text.contains("\n~q="), "{text}");
    let old: String = text
        .replace("\nPeek(", "\nRecv(")
        .lines()
        .filter(|l| !l.starts_with("~q"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, old).unwrap();
    for i in 1..=3 {
        let replayed = DDBX.run(["replay", path_str(&rec)]).success();
        assert_eq!(replayed.stdout, recorded.stdout, "replay {i}");
    }
}

#[test]
fn a_reader_that_sizes_its_reads_with_fionread_replays_5_times_and_halts_where_inf_says() {
    // Before FIONREAD's count was a value, every replay of such a recording diverged at once:
    // `expected Recv(fd: 4, n: 10), found a receive of up to 5 bytes on fd 4 (the record got
    // 10)`: the replay's count was what had arrived by then, not what the record saw.
    let (tmp, stdout) = race_and_replay(&["fionread"]);
    assert!(stdout.contains(" fionread "), "{stdout}");
    let rec = tmp.join("rec");
    let text = std::fs::read_to_string(rec.join("history").join("p1.ron")).unwrap();
    let counts = text.lines().filter(|l| l.starts_with("~q=")).count();
    // One per read logged, and one before each client's end (0 waiting, then a read of 0).
    let reads = stdout.matches(" fionread ").count() + stdout.matches(" end").count();
    assert_eq!(counts, reads, "one `~q` value per FIONREAD:\n{text}");
    // Halfway through the server's reads, and at its last event.
    let h = histories(&rec);
    let events = h["p1"].len();
    DDBX.halts_at_where_inf_says(&rec, &format!("p1:{}", events / 2));
    DDBX.halts_at_where_inf_says(&rec, &format!("p1:{events}"));
}
