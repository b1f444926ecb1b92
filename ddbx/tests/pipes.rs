//! Pipes made by recorded processes are channels (issue #10, class 6): `Pipe` events, and their
//! reads, writes, ready sets and closes recorded and forced like a socketpair's.
//!
//! `pipe_race` (a parent polls two pipes, or one pipe shared by two writers, written by two
//! forked children) and `tests/real/pipe_writers.sh` (a dash script: `seq | xargs -P 4 sh -c
//! 'echo …' | cat -n`, every process recorded) are each shown racy natively, recorded,
//! replayed identically (also under `--trace optimal`), and halted at `ddbx inf`'s cut.
//! Before pipes were channels, replay let the writers race again and printed another order.

use ddbx_tests::{Ddbx, Histories, histories, progs, workspace};
use ddbx_wire::Record;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// How many records of this kind the actor's history has.
fn count(h: &Histories, actor: &str, kind: &str) -> usize {
    h[actor].iter().filter(|r| r.kind() == kind).count()
}

/// `pipe_race args`: racy natively, replayed 3 times with the record's output and histories,
/// its pipes recorded as channels, and halted after every event of the parent where `ddbx inf`
/// says.
fn pipe_race(args: &[&str], pipes: usize) {
    let program = progs().join("pipe_race");
    let (tmp, recorded) = DDBX.race(&program, args, 5);
    assert!(
        !recorded.stderr.contains("not recorded"),
        "the session's pipes are recorded: {}",
        recorded.stderr
    );
    let rec = tmp.join("rec");
    let h = histories(&rec);
    assert_eq!(count(&h, "p1", "Pipe"), pipes, "{:?}", h["p1"]);
    // Every message is a receive of the parent, each write a send of a child.
    assert!(count(&h, "p1", "Recv") >= 2 + pipes, "{:?}", h["p1"]);
    assert!(count(&h, "p1", "Ready") >= 2, "{:?}", h["p1"]);
    for child in ["p2", "p3"] {
        assert_eq!(count(&h, child, "Send"), 3, "{:?}", h[child]);
    }
    for k in 1..=h["p1"].len() {
        DDBX.halts_where_inf_says(&rec, &format!("p1.events >= {k}"));
    }
    DDBX.replays_under_optimal_tracing(&program, args);
}

#[test]
fn a_parent_polling_two_pipes_replays_and_halts_where_inf_says() {
    pipe_race(&[], 2);
}

#[test]
fn two_writers_sharing_one_pipe_replay_and_halt_where_inf_says() {
    // Which child's message the parent reads first is decided by which child wrote first:
    // each write records its turn among the pipe's writes, and replay keeps that order.
    pipe_race(&["shared"], 1);
}

/// The actor whose history execs `program`.
fn actor_running(h: &Histories, program: &str) -> String {
    h.iter()
        .find(|(_, records)| {
            records.iter().any(
                |r| matches!(r, Record::Exec { argv, .. } if argv.first().is_some_and(|a| a == program)),
            )
        })
        .map(|(actor, _)| actor.clone())
        .unwrap_or_else(|| panic!("no actor execs {program}: {:?}", h.keys()))
}

#[test]
fn a_script_with_concurrent_writers_into_one_pipe_replays_and_halts_where_inf_says() {
    // `seq | xargs -P 4 sh -c 'echo …' | cat -n`: the shell makes the pipes, its children
    // inherit them across fork and exec (DDBX_PIPES), and eight writers share the pipe into
    // `cat -n`, which numbers the lines in the order the pipe took them.
    let script = workspace().join("tests/real/pipe_writers.sh");
    let (tmp, recorded) = DDBX.race(&script, &[], 5);
    // The one pipe left out is the test's own, on which the script prints its output.
    for line in recorded
        .stderr
        .lines()
        .filter(|l| l.contains("not recorded"))
    {
        assert!(
            line.contains("pipes from outside the session"),
            "the script's own pipes are recorded: {}",
            recorded.stderr
        );
    }
    let rec = tmp.join("rec");
    let h = histories(&rec);
    let turns = h
        .values()
        .flatten()
        .filter(|r| matches!(r, Record::Send { turn: Some(_), .. }))
        .count();
    assert!(
        turns >= 24,
        "every line written is a write in turn ({turns})"
    );
    let cat = actor_running(&h, "cat");
    assert!(count(&h, &cat, "Recv") >= 2, "{:?}", h[&cat]);
    // Halts inside the reader: the writers it needs run to their writes, and nobody else
    // runs past the cut (bystanders included).
    let events = h[&cat].len();
    for k in [3, events / 2, events - 1] {
        DDBX.halts_where_inf_says(&rec, &format!("{cat}.events >= {k}"));
    }
    DDBX.replays_under_optimal_tracing(&script, &[]);
}

/// `self_pipe_fork`: a poll loop woken by its own pipe, forking a handler per connection that
/// inherits the pipe (dnsmasq's event pipe and TCP children). The self-pipe's writes are not
/// events, so the analysis sees the pipe readable past every recorded send, as at its end, and
/// the ready set needs every holder of the write end to let go of it — but not the handlers
/// the loop forks after it, which got the end from it. Before, it needed those too: `ddbx
/// races` failed with "dependency cycle" (exit 102). Racy natively, replayed, its races listed, halted where
/// `ddbx inf` says after each event of the loop.
#[test]
fn a_self_pipe_inherited_by_forked_handlers_is_not_the_end_of_the_pipe() {
    let (tmp, recorded) = DDBX.race(&progs().join("self_pipe_fork"), &[], 20);
    assert!(
        recorded.stdout.starts_with("accepted: "),
        "{}",
        recorded.stdout
    );
    let rec = tmp.join("rec");
    let rec = ddbx_tests::path_str(&rec);
    let races = DDBX.json(["races", "--json", rec]);
    let n = races["races"].as_array().map_or(0, Vec::len);
    assert!(n >= 1, "the accept race is not listed: {races}");
    let h = histories(&tmp.join("rec"));
    assert_eq!(count(&h, "p1", "Ready"), 3, "{:?}", h["p1"]);
    for k in 1..=h["p1"].len() {
        DDBX.halts_where_inf_says(&tmp.join("rec"), &format!("p1.events >= {k}"));
    }
}
