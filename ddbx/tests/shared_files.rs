//! Writes into one file by several processes of the session (issue #10): the log that every
//! session process of a server appends to, a script's output redirected to a file that its
//! children share. The processes need not talk to each other for their order to be a race,
//! and the file keeps the order: the record logs each write's turn among the file's writes
//! (`~a` values), and replay makes every writer wait for its turn.
//!
//! `append_race LOG [stdout|stdio|locked|fopen|killed]` (four children write three lines each
//! into LOG, opened by each with O_APPEND or with fopen's "a", or shared as their standard
//! output, written with write(2), printf or fprintf, or under a write lock on LOG, or then
//! killed by the parent's SIGTERM; the parent prints LOG) is shown racy
//! natively, recorded, and replayed 3 times with the record's output. Before writes into
//! shared files took turns, replay printed the lines in its own order.

use ddbx_tests::{Ddbx, TempDir, path_str, progs};

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// The `~a` (write turn) value lines of each history of `rec`, by file name.
fn turns(rec: &std::path::Path) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = std::fs::read_dir(rec.join("history"))
        .unwrap()
        .flatten()
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let n = text.lines().filter(|l| l.starts_with("~a")).count();
            (e.file_name().to_string_lossy().into_owned(), n)
        })
        .collect();
    out.sort();
    out
}

/// A turn's value line without the file it names (`~a0/3#580` → `~a0/3`).
fn unnamed(line: &str) -> &str {
    line.split_once('#').map_or(line, |(turn, _)| turn)
}

fn append_race(args: &[&str]) {
    let tmp = TempDir::new("shared-file");
    let log = tmp.join("log");
    let all: Vec<&str> = std::iter::once(path_str(&log))
        .chain(args.iter().copied())
        .collect();
    let program = progs().join("append_race");
    let (run, recorded) = DDBX.race(&program, &all, 5);
    assert_eq!(recorded.stdout.lines().count(), 12, "{}", recorded.stdout);
    let rec = run.join("rec");
    // Each child's three writes took a turn; the parent wrote nothing into the file (its 12
    // lines went to ddbx's own output, a pipe here, whose writes take turns too).
    let counts = turns(&rec);
    let with_turns: Vec<usize> = counts
        .iter()
        .filter(|(history, _)| history != "p1.ron")
        .map(|(_, n)| *n)
        .filter(|n| *n > 0)
        .collect();
    assert_eq!(with_turns, vec![3, 3, 3, 3], "{counts:?}");
    // The parent only forks and the children only write files (no socket event), and each is
    // held at its cut: the parent before its third fork (before, it ran freely and the
    // predicate never held), the children before the exit that would take them past it
    // (before, they ran freely: ahead of `ddbx inf`'s cut).
    DDBX.halts_at_where_inf_says(&rec, "p1:3");
}

#[test]
fn children_appending_to_one_log_replay_in_the_recorded_order() {
    append_race(&[]);
}

#[test]
fn children_sharing_standard_output_in_a_file_replay_in_the_recorded_order() {
    append_race(&["stdout"]);
}

#[test]
fn children_printing_to_standard_output_in_a_file_replay_in_the_recorded_order() {
    // printf's bytes reach the file through glibc's internal write, which no preload sees:
    // the LD gives such a process a standard output whose writes go through its hooks.
    append_race(&["stdio"]);
}

#[test]
fn children_locking_the_log_around_each_line_replay_in_the_recorded_order() {
    // vsftpd's way: each line written under a write lock on the log. The lock is taken in
    // turn too: a child that took it first in replay, when its line comes later, would hold
    // it while waiting for its turn, and the child whose turn it is would wait for the lock.
    append_race(&["locked"]);
}

#[test]
fn children_writing_the_log_with_fprintf_replay_in_the_recorded_order() {
    // rsync's way: fopen(LOG, "a"), then fprintf. glibc's stream writes with an internal call
    // that no preload sees, so the LD gives such a stream writes through its hooks.
    append_race(&["fopen"]);
}

#[test]
fn children_killed_after_their_last_line_keep_their_turns() {
    // Each child waits in pause() after its lines until the parent ends it with SIGTERM: its
    // lines come after its last event, so their turns must be in the history before it dies
    // (before, they waited in the LD for the next event's line and died with the process).
    append_race(&["killed"]);
}

#[test]
fn a_turn_that_never_comes_is_waited_for_then_reported() {
    // A history that lost the first write's turn (edited here; in life, a write the replay
    // did not make): its writer writes without a turn, the writer of turn 1 waits 1 s for
    // a write that never counts, writes out of turn, and the replay says so at its end.
    let tmp = TempDir::new("shared-file-lost-turn");
    let log = tmp.join("log");
    let rec = tmp.join("rec");
    let program = progs().join("append_race");
    DDBX.record(&rec, &program, &[path_str(&log)])
        .env("DDBX_JITTER", "5")
        .success();
    let first = std::fs::read_dir(rec.join("history"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.lines().any(|l| unnamed(l) == "~a0")))
        .expect("a history with turn 0");
    let text = std::fs::read_to_string(&first).unwrap();
    let edited: Vec<&str> = text.lines().filter(|l| unnamed(l) != "~a0").collect();
    std::fs::write(&first, edited.join("\n") + "\n").unwrap();
    let replayed = DDBX.run(["replay", path_str(&rec)]).output();
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert!(
        replayed
            .stderr
            .contains("could not wait for their recorded turn"),
        "{}",
        replayed.stderr
    );
}

/// `tests/real/ready_loop.sh`: a server started with its output in a file (`(sleep; echo
/// ready) >log &`) and a test script's loop that greps that file until the server says it
/// is ready. How many times grep looked differs natively; each grep's read of the file is
/// logged with the count of the file's writes before it (`~f0`), the server's write with the
/// count of reads before it (`~a0/N`), and replay makes the write wait for those N reads (and
/// each read for the writes it came after), so that every replay's loop looks as many times.
/// (Before, 4 replays of 6 diverged: a grep that found nothing in the record found `ready`.)
#[test]
fn a_loop_that_greps_a_servers_output_until_it_is_ready_looks_as_often_as_recorded() {
    let script = ddbx_tests::workspace().join("tests/real/ready_loop.sh");
    let (run, recorded) = DDBX.race(&script, &[], 0);
    let looked: usize = recorded
        .stdout
        .split_whitespace()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output: {}", recorded.stdout));
    let mut reads = 0;
    let mut write = None;
    for entry in std::fs::read_dir(run.join("rec/history"))
        .unwrap()
        .flatten()
    {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        reads += text.lines().filter(|l| unnamed(l) == "~f0").count();
        // The script's own `echo` at the end (p1) takes a turn in ddbx's output, not the log.
        if entry.file_name() != "p1.ron"
            && let Some(line) = text.lines().find(|l| l.starts_with("~a0"))
        {
            write = Some(unnamed(line).to_string());
        }
    }
    // The greps that found nothing, each after no write; the one that found `ready`, after it.
    assert_eq!(reads, looked, "{}", recorded.stdout);
    assert_eq!(write, Some(format!("~a0/{looked}")));
}

/// The events before each line of a history's text: value lines (`~…`) follow the event they
/// come after.
fn gaps(text: &str) -> Vec<(u64, &str)> {
    let mut events = 0;
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with("Header")) {
        if !line.starts_with('~') {
            events += 1;
        }
        out.push((events, line));
    }
    out
}

/// `tests/real/ready_loop.sh` halted just after the script forked the grep that found `ready`:
/// that grep has read the log (a read is no event: it belongs to the state after the grep's
/// `Exec`), so the halted state must hold the write it saw, made by a shell that had first
/// waited for its `sleep` child (a wait is no event either). The record names the file each
/// turn counts in (`~f1#580`); `ddbx inf` makes a read need the writes it came after, and a
/// turn the children reaped before it; the halting replay asks for them as the grep starts.
/// (Before, the writer was held before its write and the grep read an empty log: a held-out
/// IRC server's script, whose readiness loop greps a client's output, diverged when halted.)
#[test]
fn a_halt_after_a_grep_that_found_a_servers_line_holds_the_write_it_saw() {
    let tmp = TempDir::new("shared-file-halt");
    let rec = tmp.join("rec");
    let script = ddbx_tests::workspace().join("tests/real/ready_loop.sh");
    DDBX.record(&rec, &script, &[]).success();
    let histories: Vec<(String, String)> = std::fs::read_dir(rec.join("history"))
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".ron")
                .to_string();
            (name, std::fs::read_to_string(e.path()).unwrap())
        })
        .collect();
    // The grep that found `ready` read after one write; the fork in p1 that made it.
    let (_, found) = histories
        .iter()
        .find(|(_, t)| t.lines().any(|l| unnamed(l) == "~f1"))
        .expect("a grep that read after the write");
    let index = found
        .split("index: ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the grep's origin");
    let p1 = &histories.iter().find(|(n, _)| n == "p1").unwrap().1;
    let fork = format!("Fork(index: {index})");
    let (at, _) = gaps(p1)
        .into_iter()
        .find(|(_, l)| *l == fork)
        .expect("p1's fork of the grep");
    let stop = format!("p1:{at}");
    DDBX.halts_at_where_inf_says(&rec, &stop);
    // The cut (the halted one, equal to inf's) holds the writer past its write.
    let (writer, text) = histories
        .iter()
        .find(|(n, t)| n != "p1" && t.lines().any(|l| l.starts_with("~a0/")))
        .expect("the write into the log");
    let (gap, _) = gaps(text)
        .into_iter()
        .find(|(_, l)| l.starts_with("~a0/"))
        .unwrap();
    let inf = DDBX.json(["inf", path_str(&rec), "--stop-at", &stop, "--json"]);
    let cut = ddbx_tests::cut_of(&inf["cut"]).unwrap();
    assert!(
        cut[writer] >= gap,
        "{writer} at {} before its write after {gap}: {inf}",
        cut[writer]
    );
}

/// `tests/real/grep_log.sh`: four children append a line each to a log in a racy order, then
/// grep reads the log. The record logs grep's read of the log with the count of writes before
/// it (`~f4`); grep reads `/proc/self/maps` first, whose size is 0 until it is read. Replay took
/// that empty-looking read for the logged one, and it waited 5 s for four writes into
/// `/proc/self/maps` (said in `DDBX_LD_LOG`; every nginx replay of the corpus did so). Now a
/// read of a file that takes no turns counts only when it really found the file empty, as in
/// the record.
#[test]
fn a_read_of_a_proc_file_does_not_take_the_place_of_a_logs_read() {
    let script = ddbx_tests::workspace().join("tests/real/grep_log.sh");
    let (run, recorded) = DDBX.race(&script, &[], 20);
    assert_eq!(recorded.stdout.lines().count(), 4, "{}", recorded.stdout);
    let ld_log = run.join("ld.log");
    let replayed = DDBX
        .run(["replay", path_str(&run.join("rec"))])
        .env("DDBX_LD_LOG", path_str(&ld_log))
        .success();
    assert_eq!(replayed.stdout, recorded.stdout);
    let said = std::fs::read_to_string(&ld_log).unwrap_or_default();
    assert!(!said.contains("still waits"), "{said}");
}

/// `tests/real/flock_tickets.sh`: six processes at once take a ticket from a counter file
/// under `flock` (read it, write it back plus one); which got which ticket varies natively.
/// The record logs each lock's turn among the locks on that file (`~l`), replay takes them in
/// that order, so every process reads the number it read in the record. (Before, 4 replays
/// of 4 handed out other tickets: the order of file locks was not recorded, and xinetd's
/// services taking tickets so replayed 0 of 5.)
#[test]
fn processes_taking_a_file_lock_take_it_in_the_recorded_order() {
    let script = ddbx_tests::workspace().join("tests/real/flock_tickets.sh");
    let (run, recorded) = DDBX.race(&script, &[], 20);
    assert_eq!(recorded.stdout.lines().count(), 6, "{}", recorded.stdout);
    let mut turns: Vec<String> = std::fs::read_dir(run.join("rec/history"))
        .unwrap()
        .flatten()
        .flat_map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            text.lines()
                .filter(|l| l.starts_with("~l"))
                .map(|l| unnamed(l).to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    turns.sort();
    assert_eq!(turns, ["~l0", "~l1", "~l2", "~l3", "~l4", "~l5"]);
}
