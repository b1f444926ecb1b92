//! Asynchronous signals in replay (issue #10, class 5): where a signal ran the program's
//! handler among its events is recorded (a value line, `~g17`: during a hooked call, `~G17`:
//! in computation), and replay runs the handler there, whenever the signal really arrives;
//! the call it interrupted fails with EINTR again, or goes on (SA_RESTART) as recorded.
//!
//! Modes: natively the place differs; record; replay with the same output and histories; a
//! halting replay at the interrupted call stops at `ddbx inf`'s cut; a recording made before
//! signals were recorded replays as before.

use ddbx_tests::{
    Ddbx, TempDir, assert_same_histories, full_histories, histories, last_number, path_str, progs,
};
use ddbx_wire::Record;
use ddbx_wire::history::Origin;
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// The value lines of `actor`'s history that record signal deliveries, with the number of
/// events before each.
fn deliveries(rec: &Path, actor: &str) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(rec.join(format!("history/{actor}.ron"))).unwrap();
    let mut events = 0;
    let mut found = Vec::new();
    for line in text.lines().skip(1) {
        if line.starts_with("~g") || line.starts_with("~G") || line.starts_with("~w") {
            found.push((events, line.to_string()));
        } else if !line.starts_with('~') {
            events += 1;
        }
    }
    found
}

/// `sig_order MODE`: the timer's SIGCHLD lands among the client's messages at another place
/// in every native run; each replay prints the record's place, five times out of five.
fn sigchld_among_receives(mode: &str) {
    let program = progs().join("sig_order");
    let (tmp, recorded) = DDBX.race(&program, &[mode], 3);
    let rec = tmp.join("rec");
    let noted = deliveries(&rec, "p1");
    if mode == "reap" {
        // Each of the four children's ends (or several at once), and the outcome of every
        // non-blocking wait of the handler (`~wN`: child N; `~w0`: none yet).
        assert!(noted.iter().any(|(_, l)| l.starts_with("~w")), "{noted:?}");
    } else {
        // The timer's SIGCHLD and the client's (during the last waitpid), both inside a
        // hooked call: a poll, a receive, or the wait.
        assert_eq!(noted.len(), 2, "{mode}: {noted:?}");
        // (`~g`: during a hooked call, `~G`: in computation, which happens too.)
        let sigchld_of = |l: &str| l.replacen("~G", "~g", 1);
        assert_eq!(
            sigchld_of(&noted[0].1),
            "~g17@2",
            "the timer's end: {noted:?}"
        );
        assert_eq!(
            sigchld_of(&noted[1].1),
            "~g17@1",
            "the client's end: {noted:?}"
        );
    }
    // Each replay's own history has the deliveries, in the record's order, where the
    // record's has them; a line of a delivery during a hooked call may come one event later
    // (the record writes it with the next event's line even when the signal came after the
    // real call returned; replay delivers it before the call returns, and writes it after).
    for i in 1..=3 {
        let replayed = deliveries(&tmp.join(&format!("replay{i}")), "p1");
        let lines = |d: &[(usize, String)]| d.iter().map(|(_, l)| l.clone()).collect::<Vec<_>>();
        assert_eq!(lines(&replayed), lines(&noted), "replay {i}");
        for ((at, line), (was, _)) in replayed.iter().zip(&noted) {
            let late_ok = line.starts_with("~g") || line.starts_with("~w");
            assert!(
                at == was || (late_ok && *at == was + 1),
                "replay {i}: {line} after {at} events, recorded after {was}: {replayed:?}"
            );
        }
    }
    // Two more replays: five in all, with race's three.
    let more = tmp.join("more").join("rec");
    std::fs::create_dir_all(more.parent().unwrap()).unwrap();
    std::fs::rename(&rec, &more).unwrap();
    DDBX.assert_replays(&more, &recorded, 2, &histories(&more), &histories);
}

#[test]
fn a_sigchld_that_sets_a_flag_and_interrupts_a_poll_replays_where_it_came() {
    sigchld_among_receives("flag");
}

#[test]
fn a_sigchld_under_sa_restart_replays_where_it_came() {
    sigchld_among_receives("restart");
}

#[test]
fn a_sigchld_that_writes_a_self_pipe_replays_where_it_came() {
    sigchld_among_receives("pipe");
}

#[test]
fn a_sigchld_handler_that_reaps_with_wnohang_reaps_what_the_record_reaped() {
    sigchld_among_receives("reap");
}

/// `sig_suspend`: a parent that keeps SIGCHLD blocked outside `sigsuspend` reaps its four
/// children in batches that differ natively (children that end while SIGCHLD is blocked raise
/// one SIGCHLD between them). Every replay prints the record's batches and histories, five
/// times out of five; none sleeps for ever in `sigsuspend` (a delivery made before the waits
/// recorded ahead of it, or one waiting for a SIGCHLD that merged into an earlier one, hung).
#[test]
fn a_parent_reaping_in_sigsuspend_replays_its_batches() {
    let program = progs().join("sig_suspend");
    let (tmp, recorded) = DDBX.race(&program, &[], 3);
    let rec = tmp.join("rec");
    let noted = deliveries(&rec, "p1");
    assert!(
        noted.iter().any(|(_, l)| l.starts_with("~g17")),
        "{noted:?}"
    );
    let more = tmp.join("more").join("rec");
    std::fs::create_dir_all(more.parent().unwrap()).unwrap();
    std::fs::rename(&rec, &more).unwrap();
    DDBX.assert_replays(&more, &recorded, 2, &histories(&more), &histories);
}

/// `sig_forkreap`: a SIGCHLD handler that reaps with `waitpid(-1, WNOHANG)` and forks a
/// replacement for each child it reaped, inside the poll the signal interrupted (postgres's
/// postmaster starts its background processes so). The first child ends right after the fork
/// that made it, before any other event of the parent; the order of the others differs
/// natively. Every replay prints the record's order, five times out of five, and halting
/// replays halt. (The first SIGCHLD ran its handler inside that fork's own event, before the fork had returned the
/// child's pid, so the handler reaped nothing; and the children forked inside the handler
/// were not known by number, so their waits were not recorded.)
#[test]
fn a_sigchld_handler_that_forks_replacements_replays_them() {
    sigchld_handler_forks(&[], |_| {});
}

/// `sig_forkreap 6 term`: the replacements the handler forks wait for a SIGTERM the parent
/// sends them, each with a handler of its own. Every replay delivers it to each of them, as
/// the record did. (A child forked while the LD delivered its parent's signal inherited that
/// delivery as under way and never made one of its own: postgres's walwriter and the
/// replacements hung. And a SIGTERM the LD held while the child left it to its default action
/// was let go before the child's handler was installed: the replacements died of it. And a
/// replacement, forked by the handler inside the hook of the `sigsuspend` it interrupted, kept
/// that hook's guard for life: its own SIGTERM handler was put off until a hook returned, and
/// it waited in `sigsuspend` for ever, 1 replay in about 7. And the parent's SIGCHLD that the
/// record took in its `ppoll`, arriving as the hook of the event before returned, ran the
/// handler in the parent's next hooked call, the `kill` of a replacement, and the handler's
/// recorded wait for that replacement never ended: 1 replay in 3 under load.)
#[test]
fn children_forked_by_a_signal_handler_take_their_own_signals() {
    // The record's three replacements each took their SIGTERM in a handler; the replays'
    // histories must have the same deliveries.
    sigchld_handler_forks(&["6", "term"], |rec| {
        let taken = histories_text(rec)
            .iter()
            .filter(|h| h.lines().any(|l| l == "~g15"))
            .count();
        assert_eq!(taken, 3, "the three replacements each took a SIGTERM");
    });
}

/// The texts of a recording's histories.
fn histories_text(rec: &Path) -> Vec<String> {
    std::fs::read_dir(rec.join("history"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect()
}

/// `sig_forkreap ARGS`: natively different orders, the record's shape (and what `check` says
/// of the recording), halting replays, and five replays with the record's output and
/// histories.
fn sigchld_handler_forks(args: &[&str], check: impl Fn(&Path)) {
    let program = progs().join("sig_forkreap");
    let (tmp, recorded) = DDBX.race(&program, args, 3);
    let rec = tmp.join("rec");
    let lines: Vec<String> = std::fs::read_to_string(rec.join("history").join("p1.ron"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // The next line, closes the handler made aside (`~h6`: the gate's write end).
    let after = |line: &str| {
        let at = lines
            .iter()
            .position(|l| l == line)
            .unwrap_or_else(|| panic!("{line}: {lines:?}"));
        lines[at + 1..]
            .iter()
            .find(|l| !l.starts_with("~h"))
            .cloned()
            .unwrap_or_default()
    };
    // The handler's close of the gate's write end is noted: the first two children's end of
    // stream needs it, not the parent's exit (taken for held until then, it made a cycle with
    // the parent's waits for them, and a halting replay hung).
    assert!(lines.iter().any(|l| l.starts_with("~h")), "{lines:?}");
    // The third child's end right after its fork, and a fork made by the handler right
    // after the wait that reaped it.
    assert_eq!(after("Fork(index: 3)"), "~g17@3", "{lines:?}");
    assert_eq!(after("~w3"), "Fork(index: 4)", "{lines:?}");
    // Every child reaped by a recorded wait that names it.
    for k in 1..=6 {
        assert!(lines.contains(&format!("~w{k}")), "~w{k}: {lines:?}");
    }
    check(&rec);
    // Halting replays stop the parent where `ddbx inf` says, right after a fork made by the
    // handler and later. (A SIGCHLD whose child ended earlier than in the record ran another
    // child's handler on its arrival, which then waited in the recorded wait for a child the
    // halting replay held: it hung. And the event of the call the handler interrupted, which
    // comes after the handler's, went past the halt: p1 stopped one event late.) The
    // children, which have no socket event, are held at their cut too.
    // How many events p1 has depends on how the children's ends batch (15 or 16, …).
    let last = histories(&rec)["p1"].len();
    for stop in [10, last.min(16)] {
        DDBX.halts_at_where_inf_says(&rec, &format!("p1:{stop}"));
    }
    let more = tmp.join("more").join("rec");
    std::fs::create_dir_all(more.parent().unwrap()).unwrap();
    std::fs::rename(&rec, &more).unwrap();
    DDBX.assert_replays(&more, &recorded, 2, &histories(&more), &histories);
}

/// `term_early`: a child that leaves SIGTERM to its default action is killed by its parent
/// while it reads; how many messages it printed first differs natively. In replay the
/// parent's kill comes as soon as the parent gets there, often before the child has read as
/// much as in the record: the child still dies where its history ends (it died earlier, and
/// the replay diverged, before the LD held such signals), five times out of five.
#[test]
fn a_child_killed_by_a_default_action_signal_dies_where_its_history_ends() {
    let program = progs().join("term_early");
    let (tmp, recorded) = DDBX.race(&program, &[], 3);
    let rec = tmp.join("rec");
    let more = tmp.join("more").join("rec");
    std::fs::create_dir_all(more.parent().unwrap()).unwrap();
    std::fs::rename(&rec, &more).unwrap();
    DDBX.assert_replays(&more, &recorded, 2, &histories(&more), &histories);
}

/// The same under optimal tracing, whose replay does not order the program's handlers (before,
/// the signal was held only in replays that do, and a script's `kill` ended its server's `sh`
/// before the `exec` its record made: "p6 has 3 events vs 2", one CI run; here the child died
/// reads early in 2 replays of 3). Each replay does, event for event, what the full history
/// says. An optimal history has no value lines, so the lines the record's child printed after
/// its last event are not known: a replay prints them, and possibly the one after (the README
/// says so).
#[test]
fn a_child_killed_by_a_default_action_signal_dies_where_its_optimal_history_ends() {
    let tmp = TempDir::new("optimal-term");
    let rec = tmp.join("rec");
    let recorded = DDBX
        .record_with(
            &["--trace", "optimal"],
            &rec,
            &progs().join("term_early"),
            &[],
        )
        .env("DDBX_JITTER", "3")
        .env("DDBX_TRACE_CHECK", "1")
        .success();
    let full = full_histories(&rec);
    let got = |out: &str| out.lines().filter(|l| l.starts_with("got ")).count();
    for i in 1..=3 {
        let out_dir = rec.with_file_name(format!("replay{i}"));
        let replayed = DDBX
            .run([
                "replay",
                "--history-out",
                path_str(&out_dir),
                path_str(&rec),
            ])
            .success();
        assert_same_histories(&full, &histories(&out_dir), &format!("replay {i}"));
        assert!(
            replayed
                .stdout
                .starts_with(&recorded.stdout[..recorded.stdout.rfind("got ").unwrap_or(0)])
                && (got(&recorded.stdout)..=got(&recorded.stdout) + 1)
                    .contains(&got(&replayed.stdout))
                && replayed.stdout.ends_with("child killed by signal 15\n"),
            "replay {i} printed {:?}, the record {:?}",
            replayed.stdout,
            recorded.stdout
        );
    }
}

/// After its last event, the child of `term_stuck` waits in a raw `pause` system call, where
/// no hook sees it, until its parent's SIGTERM ends it. Replay keeps that signal blocked until
/// the child's next call, which never comes: the GD wakes it (before, the SIGTERM was let go at
/// the last event, where it could end a child that had not yet printed its last line).
#[test]
fn a_child_killed_where_no_hook_sees_it_still_dies_of_its_signal() {
    let program = progs().join("term_stuck");
    let (_tmp, recorded) = DDBX.record_and_replay(&program, &[], 0, 2);
    assert_eq!(recorded.stdout, "got it\nchild killed by signal 15\n");
}

/// `sig_in_sleep`'s server sleeps as long as a file says, then waits in a select for its
/// SIGTERM. Recorded with no sleep, the signal comes in the select; replayed with a long
/// sleep (the file is not part of the recording: as a server slowed by load), it arrives in
/// the sleep. The handler still runs in the select, as recorded, and the sleep is not cut
/// short (natively, the same sleep has the signal come before the select).
#[test]
fn a_signal_taken_in_a_call_that_arrives_in_a_sleep_waits_for_that_call() {
    natively_then_slower(
        "sig_in_sleep",
        &["sig_in_sleep"],
        ("0", "1000000"),
        "stopped before select\nserver exited 0\n",
        "stopped in select\nserver exited 0\n",
    );
}

/// `sig_merged FILE`: the parent sends its child SIGTERM, waits as long as FILE says, then
/// sends the child's group SIGTERM (GNU `timeout`'s two kills). Natively, with no wait, the
/// kernel keeps one of the two in some runs ("took 1"). Recorded with a wait, the child's
/// handler ran twice, each time in a sleep; replayed with none, the two arrive as one, and the
/// LD must count the parent's kills to run the handler the second time (before, the second
/// delivery waited for an arrival that never came, unless the count was in by the first
/// arrival: the group kill is counted after a look at `/proc`, and the child slept its 300
/// sleeps and printed "took 1"; gunicorn's arbiter waited out its graceful timeout the same
/// way).
#[test]
fn two_kills_that_arrive_as_one_in_replay_still_run_the_handler_twice() {
    merged_kills(&["sig_merged"], "child took 2 terms\nchild exited 0\n");
}

/// `sig_merged FILE die`: the handler also leaves SIGTERM to its default action, and the second
/// kill ends the child (natively, when the kernel kept one kill of two, the child lives on and
/// prints "took 1"). Replayed with the two kills arriving as one, the child, past its history's
/// end, dies of the merged one (before, it waited there for a kill that had come already, and
/// its parent waited for it: the replay hung, as gunicorn's did, its arbiter waiting for a
/// worker).
#[test]
fn a_kill_that_arrives_as_one_with_a_handled_one_still_ends_the_process() {
    merged_kills(&["sig_merged", "die"], "child killed by signal 15\n");
}

/// `sig_sleep_call FILE`: the record took the child's SIGTERM in `sigsuspend`, a hooked call;
/// the replay, with FILE saying 1, waits for it in a loop of usleeps. The handler must run in
/// one of those sleeps (before, each sleep kept the delivery for a hooked call that never
/// came, and the loop ran out: gunicorn's arbiter, its second SIGTERM taken in a hooked call
/// in the record, slept out its 30 s graceful timeout, the SIGCHLDs of its workers behind it).
#[test]
fn a_signal_taken_in_a_call_that_arrives_in_a_sleep_loop_runs_its_handler_there() {
    natively_then_slower(
        "sig_sleep_call",
        &["sig_sleep_call"],
        ("0", "1"),
        "child took the term\nchild exited 0\n",
        "child took the term\nchild exited 0\n",
    );
}

/// `sig_clock_loop FILE`: recorded with the child exiting after 200 ms, the parent's SIGCHLD
/// came after about 200 of its clock reads; replayed with the child exiting at once, it
/// arrives after a few, when nothing is due, and the loop reads on. The handler must run once
/// the loop has read as many clocks (before, it waited for the next event, after the loop ran
/// out: gunicorn's arbiter read the time until its 30 s graceful timeout).
#[test]
fn a_signal_that_arrived_before_the_records_clock_reads_runs_once_they_are_made() {
    natively_then_slower(
        "sig_clock_loop",
        &["sig_clock_loop"],
        ("200000", "0"),
        "handler ran\n",
        "handler ran\n",
    );
}

/// `sig_errno FILE`: recorded with the writer's byte before the killer's SIGUSR1, replayed
/// with the byte 500 ms later, so that the signal interrupts ddbx's wait for the recorded ready
/// set. The select succeeded in the record, and must leave errno as the program set it: the
/// program makes its select again while errno says EINTR, as CPython does (before, the
/// replay's errno said EINTR and the second select ended the replay: gunicorn's workers
/// diverged at their last wait, 1 test run in 8).
#[test]
fn a_signal_during_ddbxs_own_wait_leaves_errno_alone_in_a_call_that_succeeded() {
    natively_then_slower(
        "sig_errno",
        &["sig_errno"],
        ("0", "500000"),
        "select made again 1 times, handler ran\nwriter exited 0\nkiller exited 0\n",
        "select made again 0 times, handler ran\nwriter exited 0\nkiller exited 0\n",
    );
}

/// `sig_clock_errno FILE`: recorded with the SIGUSR1 after about 50 clock reads, replayed with
/// it 400 ms later: the 50th read waits for it, and the signal interrupts that wait. The read
/// succeeded and must leave errno as the program set it (before, errno said EINTR after it:
/// hooks that are not `hook!`s restored nothing).
#[test]
fn a_clock_read_that_waited_for_a_signal_leaves_errno_alone() {
    let line = "handler ran, errno EINTR after 0 clock reads that succeeded\nchild exited 0\n";
    natively_then_slower(
        "sig_clock_errno",
        &["sig_clock_errno"],
        ("50000", "400000"),
        line,
        line,
    );
}

/// `sig_merged FILE late`: the child leaves SIGTERM to its default action itself after its
/// handler first ran (as Python does when it finalizes), and the record's second kill, 200 ms
/// later, ends it. Replayed with the kills a microsecond apart, the second comes while the
/// handler is still there and is kept; the child, past its history's end, must still die of
/// it, not wait there for a kill that came already (gunicorn's workers, signalled by their
/// arbiter and by `timeout`: one waited at its `exit` in a replay, 2 SIGTERMs sent, 1
/// delivery planned). This program passed before the end's check counted the kills sent
/// against the record's deliveries; it keeps the shape tested.
#[test]
fn a_kill_that_came_before_the_program_reset_its_handler_still_ends_the_process() {
    merged_kills(&["sig_merged", "late"], "child killed by signal 15\n");
}

/// Runs `program FILE args…` natively with FILE saying 0 until the kernel keeps one kill of
/// two (at most 200 runs), then records it with 200000 (`want`) and replays it twice with 0.
fn merged_kills(program: &[&str], want: &str) {
    let tmp = TempDir::new("sig_merged");
    let file = tmp.join("gap");
    std::fs::write(&file, "0").unwrap();
    let binary = progs().join(program[0]);
    let merged = (0..200).any(|_| {
        let out = std::process::Command::new(&binary)
            .arg(path_str(&file))
            .args(&program[1..])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).contains("took 1 terms")
    });
    assert!(
        merged,
        "200 native runs, and the kernel never kept one kill of two"
    );
    record_then_replay_slower(&tmp, program, &file, ("200000", "0"), want);
}

/// `sig_in_sleep FILE spin`: as above, but the server computes (a loop, no call) before its
/// select. Recorded with no computation, the signal comes in the select; replayed with a long
/// one, it arrives while the server computes, and the handler must wait for the select: run
/// at once, it set the flag the server checks before its select, which the server then never
/// made (`expected Ready(…)` or the record's EINTR, found an exit: vsftpd's session parent
/// exited before the read that the record's SIGCHLD interrupted).
#[test]
fn a_signal_taken_in_a_call_that_arrives_in_computation_waits_for_that_call() {
    natively_then_slower(
        "sig_in_spin",
        &["sig_in_sleep", "spin"],
        ("0", "300000000"),
        "stopped before select\nserver exited 0\n",
        "stopped in select\nserver exited 0\n",
    );
}

/// `kill_grace`: a parent asks its child to stop, waits 200 ms, then sends SIGKILL (a
/// script's `kill; sleep; kill -9`, `runuser`'s grace after the SIGTERM it relays). Recorded
/// with a quick clean-up, the SIGKILL found the child gone; natively with a slow one it ends
/// the child in its clean-up. Replayed with the slow one, the SIGKILL waits for the child to
/// end, as the record's found it (before, it killed the child in every replay: postgres's
/// postmaster, SIGKILLed by `runuser` in the middle of its shutdown, 3 replays of 3).
#[test]
fn a_sigkill_that_found_its_target_gone_waits_for_it_to_end() {
    natively_then_slower(
        "kill_grace",
        &["kill_grace"],
        ("0", "1000000"),
        "child killed by signal 9\n",
        "cleaned up\nchild exited 0\n",
    );
}

/// `term_unblocked`'s child sets an empty signal mask at its start (haproxy does) and leaves
/// SIGTERM to its default action; after its last ack it computes, then prints. Replayed with
/// a computation that the parent's kill comes in, the SIGTERM, which the LD holds whatever
/// mask the program sets, still ends it only after it printed, as recorded (let through by
/// the program's mask, it printed one line less). The computation (7e8 loop turns, about 4 s
/// here) outlasts the two quiet seconds after which the GD wakes a process that holds its
/// signal blocked in a call no hook sees: one that runs is let compute (woken after two, it
/// printed one line less too).
#[test]
fn a_held_signal_stays_held_when_the_program_unblocks_every_signal() {
    let tmp = TempDir::new("term_unblocked");
    let spins = tmp.join("spins");
    let want = "got 1\ngot 2\ngot 3\nchild killed by signal 15\n";
    record_then_replay_slower(&tmp, &["term_unblocked"], &spins, ("0", "700000000"), want);
}

/// Runs `program[0] FILE program[1..]` natively with FILE saying `says.1` (the program slower
/// somewhere) and checks it prints `native` (the other side of the race, shown to exist), then
/// [`record_then_replay_slower`], whose record must print `want`.
fn natively_then_slower(
    name: &str,
    program: &[&str],
    says: (&str, &str),
    native: &str,
    want: &str,
) {
    let tmp = TempDir::new(name);
    let file = tmp.join("file");
    std::fs::write(&file, says.1).unwrap();
    let out = std::process::Command::new(progs().join(program[0]))
        .arg(path_str(&file))
        .args(&program[1..])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        native,
        "natively, with the file saying {}",
        says.1
    );
    record_then_replay_slower(&tmp, program, &file, says, want);
}

/// Records `program[0] FILE program[1..]` with FILE saying `says.0` (the record must print
/// `want`), then replays it twice with FILE saying `says.1`: the program slower somewhere, as
/// under load (ddbx does not replay the contents of files). Each replay must be the record's.
fn record_then_replay_slower(
    tmp: &TempDir,
    program: &[&str],
    file: &Path,
    says: (&str, &str),
    want: &str,
) {
    let args: Vec<&str> = std::iter::once(path_str(file))
        .chain(program[1..].iter().copied())
        .collect();
    let program = progs().join(program[0]);
    std::fs::write(file, says.0).unwrap();
    let rec = tmp.join("rec");
    let recorded = DDBX.record(&rec, &program, &args).success();
    assert_eq!(recorded.stdout, want);
    std::fs::write(file, says.1).unwrap();
    DDBX.assert_replays(&rec, &recorded, 2, &histories(&rec), &histories);
}

/// Records `sig_order flag` until its signal interrupted a poll (the usual case); 10 tries.
fn record_with_eintr(tmp: &TempDir) -> std::path::PathBuf {
    for attempt in 1..=10 {
        let rec = tmp.join(&format!("rec{attempt}"));
        let out = DDBX
            .record(&rec, &progs().join("sig_order"), &["flag"])
            .env("DDBX_JITTER", "3")
            .success();
        if out.stdout.contains(" 1 interrupted polls") {
            return rec;
        }
    }
    panic!("sig_order flag: 10 records without an interrupted poll");
}

#[test]
fn a_halt_at_the_interrupted_poll_stops_at_inf_and_the_handler_ran_before_it() {
    let tmp = TempDir::new("signals-halt");
    let rec = record_with_eintr(&tmp);
    let h = histories(&rec);
    let eintr = h["p1"]
        .iter()
        .position(|r| matches!(r, Record::Fail { err, .. } if err.0 == libc::EINTR))
        .unwrap_or_else(|| panic!("no EINTR in {:#?}", h["p1"]));
    // The delivery's line (`~g17@2`: the end of child 2, the timer) comes right before the
    // EINTR it caused.
    assert!(
        deliveries(&rec, "p1").contains(&(eintr, "~g17@2".to_string())),
        "{:?}",
        deliveries(&rec, "p1")
    );
    for stop in [eintr + 1, eintr + 2] {
        DDBX.halts_at_where_inf_says(&rec, &format!("p1:{stop}"));
    }
}

#[test]
fn a_recording_made_before_signals_were_recorded_still_replays() {
    let tmp = TempDir::new("signals-old");
    let rec = tmp.join("rec");
    let recorded = DDBX
        .record(&rec, &progs().join("sig_order"), &["pipe"])
        .env("DDBX_JITTER", "3")
        .success();
    // What an older ddbx wrote: no `signals` in the manifest, no signal lines.
    let manifest = rec.join("manifest.ron");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("signals: true"), "{text}");
    let older: String = text
        .lines()
        .filter(|l| l.trim() != "signals: true," && l.trim() != "signals: true")
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&manifest, older).unwrap();
    for entry in std::fs::read_dir(rec.join("history")).unwrap() {
        let path = entry.unwrap().path();
        let kept: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("~g") && !l.starts_with("~G") && !l.starts_with("~w"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&path, kept).unwrap();
    }
    // Signals come when they come: the program still runs to its end (the self-pipe makes
    // its output independent of where).
    let replayed = DDBX.run(["replay", path_str(&rec)]).output();
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert!(
        replayed.stdout.starts_with("signal after "),
        "{}",
        recorded.stdout
    );
}

/// `sig_malloc 300`: a SIGCHLD handler that reaps, writes a self-pipe, reads the clock and its
/// pid interrupts a program that is nearly always inside malloc or free. The program counts
/// the allocations made from its heap while its handler runs (it makes none itself): ddbx's
/// hooks, reached from the handler, must make none in record or replay, since an allocation
/// there re-enters the malloc the signal interrupted. (Before the LD had a heap of its own, a
/// record counted hundreds, and 2 records of 5 of this program crashed in malloc: bash aborted
/// with "malloc assertion failure in sysmalloc" in about one shell-script record in thirty.)
///
/// The record's history names, in its wait outcomes (`~wN`), every one of the 300 children
/// once: a child that ended while its fork's handler still talked to the GD used to be reaped
/// by the handler before the LD knew its number, its wait left out (16 to 20 of 300 in each
/// record), and one replay in three spun for ever waiting for reaps its handlers never made.
#[test]
fn a_signal_handler_that_interrupted_malloc_gets_no_allocation_from_ddbx() {
    let program = progs().join("sig_malloc");
    let want = "reaped 300, allocations in the handler: 0\n";
    let native = ddbx_tests::Run::new(&program).args(["300"]).output();
    assert_eq!(
        (native.code, native.stdout.as_str()),
        (0, want),
        "{}",
        native.stderr
    );
    let (tmp, recorded) = DDBX.record_and_replay(&program, &["300"], 0, 2);
    assert_eq!(recorded.stdout, want, "{}", recorded.stderr);
    let history = std::fs::read_to_string(tmp.join("rec/history/p1.ron")).unwrap();
    let mut reaped: Vec<u32> = history
        .lines()
        .filter_map(|line| line.strip_prefix("~w")?.parse().ok())
        .filter(|child| *child != 0)
        .collect();
    reaped.sort_unstable();
    assert_eq!(
        reaped,
        (1..=300).collect::<Vec<u32>>(),
        "the record's wait outcomes should name each child once"
    );
}

/// `sig_computing`: a SIGTERM whose handler clears a loop's flag lands in the child's
/// computation between two polls, after a pause of the parent that record and replay choose
/// independently (30 or 300 ms). A record where it came in computation (`~G15#0`: its handler
/// ran at the child's next entry into a hook) after a short pause replays 6 times with the same
/// count: when the signal comes later than in the record, the replay waits for it at that
/// entry, and the handler runs before the child's next call. (Before, 5 replays of 6 diverged, `expected Send(fd: 4, n: 2), found a
/// poll on fds [4]`: the child was in another poll when the signal came, as mosquitto was in
/// another `epoll_wait` when a script's `kill` came late under load.)
#[test]
fn a_signal_that_came_in_computation_runs_its_handler_before_the_next_call() {
    let program = progs().join("sig_computing");
    let outputs = ddbx_tests::native_outputs(&program, &[], 0, 2, 30);
    assert!(
        outputs.len() >= 2,
        "30 native runs all printed {:?}",
        outputs[0]
    );
    let tmp = TempDir::new("sig-computing");
    let rec = tmp.join("rec");
    let what = (40, "the SIGTERM in computation after 30 ms");
    let recorded = DDBX.record_until(&rec, &program, what, |out, rec| {
        let in_computation = deliveries(rec, "p2")
            .iter()
            .any(|(_, line)| line.starts_with("~G15"));
        // A short pause makes 3 to 8 polls on a 2-core VM (fewer under load), a long one 50
        // to 75.
        in_computation && last_number(&out.stdout) < 20
    });
    DDBX.assert_replays(&rec, &recorded, 6, &histories(&rec), &histories);
}

/// `sig_in_clock`: the record's SIGTERM interrupted the child's blocking poll (`~g15`, after a
/// 300 ms pause); a replay that pauses 30 ms instead (the pause is not recorded) gets it while
/// the child still reads its clock 200,000 times before that poll. Each of 6 replays prints the
/// record's count, 1: the handler runs in the poll, as recorded, never inside a clock read's
/// hook (there the loop saw the flag first and made no poll: memcached's main loop closed its
/// listener where the record waited, 1 test run in 5). Natively the signal always comes in the
/// poll: what varies here is the replay's timing against the record's.
#[test]
fn a_signal_taken_in_a_poll_is_not_run_in_a_clock_read_before_it() {
    let program = progs().join("sig_in_clock");
    let tmp = TempDir::new("sig-in-clock");
    let rec = tmp.join("rec");
    let recorded = DDBX.record_until(
        &rec,
        &program,
        (40, "the SIGTERM in the poll"),
        |out, rec| {
            let in_call = deliveries(rec, "p2")
                .iter()
                .any(|(_, line)| line.starts_with("~g15"));
            in_call && last_number(&out.stdout) == 1
        },
    );
    DDBX.assert_replays(&rec, &recorded, 6, &histories(&rec), &histories);
}

/// `sig_clock`: a SIGTERM whose handler clears a loop's flag lands in the child's computation,
/// after the loop read its clock, checked the flag and read its clock again. A record where it
/// came in computation after the two reads of its gap (`~c`, `~c`, `~G15#2`: run at the poll's
/// entry, the third of the gap) replays 6 times with the same count: replay runs the handler
/// at the same entry, after as many of the gap's clock reads. (Before,
/// every such replay diverged: the handler ran as the poll before returned, the next check saw
/// the flag, and the child made a turn fewer, `expected Ready(call: Poll, fds: []), found a
/// send`; Twisted's reactor stopped a turn early so.)
#[test]
fn a_signal_that_came_between_clock_reads_runs_its_handler_after_as_many() {
    let program = progs().join("sig_clock");
    let outputs = ddbx_tests::native_outputs(&program, &[], 0, 2, 30);
    assert!(
        outputs.len() >= 2,
        "30 native runs all printed {:?}",
        outputs[0]
    );
    let tmp = TempDir::new("sig-clock");
    let rec = tmp.join("rec");
    // The delivery's line after two clock reads of its gap.
    let after_two_reads = |rec: &Path| {
        let text = std::fs::read_to_string(rec.join("history/p2.ron")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines
            .iter()
            .position(|l| l.starts_with("~G15"))
            .is_some_and(|at| {
                let gap = lines[..at]
                    .iter()
                    .rev()
                    .take_while(|l| l.starts_with('~'))
                    .filter(|l| l.starts_with("~c"))
                    .count();
                gap == 2
            })
    };
    let what = (40, "the SIGTERM after the two clock reads");
    let recorded = DDBX.record_until(&rec, &program, what, |_, rec| after_two_reads(rec));
    DDBX.assert_replays(&rec, &recorded, 6, &histories(&rec), &histories);
}

/// `sig_midgap`: a SIGTERM whose handler clears a loop's flag lands in the child's computation,
/// which checks the flag halfway between two polls, with no hooked call before the check. Where
/// in that computation the signal came decides the count, and nothing in the history can say
/// where: so the record runs the handler of a signal that lands in computation at the
/// program's next hooked call (its entry, counted from the event before: `~G15#0`), and replay
/// runs it at the same entry. Four records, each replayed 4 times with the record's count and
/// histories. (Before, a record whose signal landed after the check replayed a turn short,
/// `expected Ready(call: Poll, fds: []), found a send`: replay ran the handler as the poll
/// before returned, where the record's had not run yet; Twisted, Node and rsync ended a turn
/// early so at shutdown.)
#[test]
fn a_signal_that_came_mid_computation_runs_its_handler_at_the_next_hooked_call() {
    let program = progs().join("sig_midgap");
    let outputs = ddbx_tests::native_outputs(&program, &[], 0, 2, 30);
    assert!(
        outputs.len() >= 2,
        "30 native runs all printed {:?}",
        outputs[0]
    );
    let tmp = TempDir::new("sig-midgap");
    let mut deferred = 0;
    for r in 0..4 {
        let dir = tmp.join(&format!("run{r}"));
        std::fs::create_dir(&dir).unwrap();
        let rec = dir.join("rec");
        let out = DDBX.record(&rec, &program, &[]).output();
        assert_eq!(out.code, 0, "record failed:\n{}", out.stderr);
        let lines = deliveries(&rec, "p2");
        assert_eq!(lines.len(), 1, "one SIGTERM delivery: {lines:?}");
        deferred += usize::from(lines[0].1.starts_with("~G15#"));
        DDBX.assert_replays(&rec, &out, 4, &histories(&rec), &histories);
    }
    assert!(
        deferred > 0,
        "no record of 4 took the SIGTERM in computation (all came in a poll)"
    );
}

/// `sig_spin`: the child spins on a flag that only its SIGTERM handler clears, with no call at
/// all. The record cannot hold that handler back for the child's next hooked call (there is
/// none before it runs): a watchdog runs it where the child is, after 200 ms at most, noted as
/// a delivery in computation (`~G15`, no entry). The record ends, says so, and replays 3 times
/// with the same output and histories.
#[test]
fn a_signal_awaited_by_a_computation_without_calls_still_runs_its_handler() {
    let program = progs().join("sig_spin");
    let tmp = TempDir::new("sig-spin");
    let rec = tmp.join("rec");
    let out = DDBX.record(&rec, &program, &[]).output();
    assert_eq!(out.code, 0, "record failed:\n{}", out.stderr);
    assert_eq!(out.stdout, "spins before the SIGTERM: 1\n");
    let lines = deliveries(&rec, "p2");
    assert_eq!(
        lines.iter().map(|(_, l)| l.as_str()).collect::<Vec<_>>(),
        ["~G15"],
        "the watchdog's delivery, where the child was"
    );
    assert!(
        out.stderr.contains("computation"),
        "record should say a signal came in computation:\n{}",
        out.stderr
    );
    DDBX.assert_replays(&rec, &out, 3, &histories(&rec), &histories);
}

/// `sig_reapboth`: a SIGCHLD handler and the main program's blocking `waitpid(-1)` both reap
/// (bash's handler and its `wait` builtin); which child each one got differs natively. Each
/// replay gives every child to the reaper the record gave it. (Before, every replay differed
/// and some lost a child: the main program took outcomes the record's handler got, when the
/// handler's signal came later than in the record, and the record wrote a handler that ran on
/// the way out of a blocking wait before that wait's outcome. In bash this sent a script's
/// `wait` to its `EXIT` trap: redis.sh's replays diverged 1 in about 10 under load.)
#[test]
fn children_reaped_by_a_handler_and_by_the_main_program_go_to_the_same_reaper() {
    DDBX.race(&progs().join("sig_reapboth"), &[], 20);
}

/// `sig_unblock`: each fork with SIGCHLD blocked; the handler reaps only until the main program
/// tells it to leave the reaping to it, just after it unblocks SIGCHLD (bash's `wait` builtin).
/// Whether the child ended before the unblock, so that the handler got it, differs natively.
/// The record's handler ran at the unblock (in computation, after the fork's event, the signal
/// blocked as that event ended): each replay waits there for the child's end and runs it there.
/// (Before, it ran in the next call, after the flag was set: 9 replays of 9 gave the main
/// program children the record's handler reaped. In bash, the `wait` builtin then took its
/// handler's outcomes and the script left at its `wait`: tokio.sh, 1 replay in 3 of a record.)
#[test]
fn a_sigchld_pending_until_the_program_unblocks_it_runs_its_handler_there() {
    DDBX.race(&progs().join("sig_unblock"), &[], 0);
}

/// `tests/real/kill_at_once.sh`: a script starts `sleep` and kills it at once, 30 times. Now
/// and then the kill lands after the child announced its exec and before the new image's
/// preload joined: that image never ran, and the child died of a recorded process's kill, so
/// the record says so and succeeds (before, it exited 103 "never joined the session", 3
/// records of 3). When the image did say hello first, the parent's reap may have been read
/// first: it is still the actor's exec (before, a new actor with an empty history file, and
/// `ddbx ps` refused the recording), and a kill read before the child's hello is the child's
/// (before, dropped: 1 suite run in 1). The replay waits for the same kill where the history
/// ends (before, the new image inherited the signal the image before it held blocked, and
/// waited for ever).
#[test]
fn a_program_killed_as_it_execs_is_recorded_and_replayed() {
    let script = ddbx_tests::workspace().join("tests/real/kill_at_once.sh");
    for _ in 0..3 {
        let (_run, recorded) = DDBX.record_and_replay(&script, &[], 0, 2);
        assert_eq!(recorded.stdout.lines().count(), 30, "{}", recorded.stdout);
    }
}

/// `timeout` relays the SIGTERM a script sends it to its child from its signal handler, which
/// runs inside the LD's hook of `sigsuspend`, where the LD cannot talk to the GD: the kill is
/// kept and told at the next hook's entry, so the child's death is recorded as `timeout`'s
/// doing (`signalled_by`), and its replay waits for the relay. Before, the child's death
/// counted as one from outside the session: each replay ended it at its history's end, and
/// `timeout` with it, so that under load the script's `kill` came too late ("No such
/// process"; vsftpd.sh, 6 replays of 10). `timeout` then signals its whole process group from
/// the same handler (`kill(0, …)`): the child's own child dies of that, and is recorded so
/// too (before, only kills of one pid were kept there; gunicorn's workers die so). The
/// grandchild says it is up, so that it is killed after its start was recorded.
#[test]
fn a_kill_relayed_by_a_signal_handler_is_recorded_as_the_childs_end() {
    let tmp = TempDir::new("relayed-kill");
    let rec = tmp.join("rec");
    let fifo = tmp.join("up");
    let script = r#"mkfifo "$1"
/usr/bin/timeout 30 /usr/bin/python3 -c '
import os, sys, time
if os.fork() == 0:
    open(sys.argv[1], "w").write("up\n")
time.sleep(100)' "$1" &
p=$!
read -r _ <"$1"
kill "$p"
wait "$p"
echo "timeout exited $?"
rm "$1""#;
    let bash = Path::new("/bin/bash");
    let recorded = DDBX
        .record(&rec, bash, &["-c", script, "sh", path_str(&fifo)])
        .success();
    assert_eq!(recorded.stdout, "timeout exited 143\n");
    let h = histories(&rec);
    // The actor whose last image is `program`.
    let actor = |program: &str| {
        h.iter()
            .find(|(_, records)| {
                records.iter().rev().find_map(|r| match r {
                    Record::Exec { argv } => argv.first(),
                    _ => None,
                }) == Some(&program.to_string())
            })
            .map(|(a, _)| a.clone())
            .unwrap_or_else(|| panic!("no actor runs {program}: {h:#?}"))
    };
    let (sleeper, relay) = (actor("/usr/bin/python3"), actor("/usr/bin/timeout"));
    let manifest = ddbx_wire::manifest::Manifest::load(&rec).expect("the recording's manifest");
    let senders = |actor: &str| {
        manifest
            .actors
            .iter()
            .find(|a| a.id.to_string() == actor)
            .map(|a| a.signalled_by.clone())
            .unwrap_or_default()
    };
    let grandchild = manifest
        .actors
        .iter()
        .find(|a| matches!(a.origin, Origin::Fork { parent, .. } if parent.to_string() == sleeper))
        .map(|a| a.id.to_string())
        .unwrap_or_else(|| panic!("the sleeper forked no child: {manifest:?}"));
    for killed in [&sleeper, &grandchild] {
        let senders = senders(killed);
        assert!(
            senders
                .iter()
                .any(|(by, sig)| by.to_string() == relay && *sig == libc::SIGTERM),
            "{killed}'s recorded senders: {senders:?} (timeout is {relay}, the sleeper \
             {sleeper}, its child {grandchild})"
        );
    }
    DDBX.assert_replays(&rec, &recorded, 2, &histories(&rec), &histories);
}

/// Signals taken synchronously (sigwait, sigwaitinfo, sigtimedwait, reads of a signalfd)
/// from three senders: the order differs natively; replay takes them in the record's order,
/// with the senders' pids as the program knows them, and a sigtimedwait that timed out (a
/// signalfd read that found nothing) does so again.
#[test]
fn signals_taken_by_sigwait_come_in_the_record_s_order() {
    for mode in ["wait", "info", "timed", "fd"] {
        let (_tmp, recorded) = DDBX.race(&progs().join("sig_taken"), &[mode], 20);
        assert!(
            recorded.stdout.starts_with("taken: "),
            "{mode}: {}",
            recorded.stdout
        );
        match mode {
            "info" => assert!(
                recorded.stdout.contains("senders: ok\n"),
                "{}",
                recorded.stdout
            ),
            "timed" => assert!(
                recorded.stdout.contains("then: timed out\n"),
                "{}",
                recorded.stdout
            ),
            "fd" => assert!(
                recorded.stdout.contains("senders: ok\nthen: EAGAIN\n"),
                "{}",
                recorded.stdout
            ),
            _ => {}
        }
    }
}
