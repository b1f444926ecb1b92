//! Threads: socket I/O from several threads of a process is recorded in the order the threads
//! made it and replayed in that order (thread-pool servers, threads accepting on one socket, a
//! poller and a reader, two threads talking over a socket); under optimal tracing a second
//! thread's socket I/O is refused (exit 103); a thread that does no socket I/O is recorded and
//! replayed like any program.

use ddbx_tests::{Ddbx, Run, TempDir, histories, last_number, native_outputs, path_str, progs};
use ddbx_wire::manifest::{Manifest, SessionState};
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const UNSUPPORTED: i32 = 103;

/// The thread that made each event of the history at `path` (`~t` lines; `t1` until the first,
/// and again from each `Exec`).
fn threads_of_events(path: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut now = 1;
    let mut threads = Vec::new();
    for line in text.lines().skip(1) {
        if let Some(t) = line.strip_prefix("~t") {
            now = t
                .parse()
                .unwrap_or_else(|_| panic!("{}: bad line {line:?}", path.display()));
        } else if !line.is_empty() && !line.starts_with('~') && !line.starts_with("//") {
            if line.starts_with("Exec(") {
                now = 1;
            }
            threads.push(now);
        }
    }
    threads
}

/// Records `thread_pool MODE` (its race shown natively first), replays it 3 times; each
/// replay made every event of the server on the thread that made it in the record, and a
/// halting replay halfway through the server's events halts where `ddbx inf` says. Returns
/// the record's output.
fn thread_pool_replays(mode: &str) -> String {
    let program = progs().join("thread_pool");
    let (tmp, recorded) = DDBX.race(&program, &[mode], 20);
    let rec = tmp.join("rec");
    let threads = threads_of_events(&rec.join("history/p1.ron"));
    let distinct: std::collections::BTreeSet<u32> = threads.iter().copied().collect();
    let text = std::fs::read_to_string(rec.join("history/p1.ron")).unwrap_or_default();
    assert!(
        distinct.len() >= 2 || text.contains("\n~n2:"),
        "the server's events were all made by one thread, which made all its fds: {threads:?}"
    );
    for i in 1..=3 {
        let replayed = threads_of_events(&tmp.join(&format!("replay{i}/history/p1.ron")));
        assert_eq!(
            replayed, threads,
            "replay {i}: the threads that made p1's events"
        );
    }
    let half = threads.len() / 2;
    DDBX.halts_at_where_inf_says(&rec, &format!("p1:{half}"));
    recorded.stdout
}

/// A thread-pool server: the main thread accepts, worker threads take the connections from a
/// queue (mutex and condition variable), read, reply and close. Before threads were ordered,
/// `record` refused it (exit 103, socket I/O from a second thread).
#[test]
fn a_thread_pool_server_replays_which_worker_served_which_client() {
    let out = thread_pool_replays("pool");
    assert_eq!(out.lines().count(), 6, "{out}");
    assert!(out.lines().all(|l| l.starts_with("worker ")), "{out}");
}

/// Three threads block in `accept` on one listening socket at once: which thread got which
/// client is the record's in every replay.
#[test]
fn threads_that_accept_on_one_socket_get_the_recorded_clients() {
    let out = thread_pool_replays("accepters");
    assert_eq!(out.lines().count(), 6, "{out}");
    assert!(out.lines().all(|l| l.starts_with("thread ")), "{out}");
}

/// One thread polls the connections, another reads them: ready sets and receives on the same
/// connections from two threads.
#[test]
fn a_thread_that_polls_and_one_that_reads_replay_in_the_recorded_order() {
    let out = thread_pool_replays("poller");
    assert_eq!(out.lines().count(), 6, "{out}");
}

/// While the main thread accepts (and keeps its connections), a second thread opens and
/// closes files with no lock between them: which numbers each gets depends on which came
/// first. Replay makes each thread's fd at its recorded place and on its recorded number (2
/// replays of 12 kept the record's numbers before: the accepts' alone were moved).
#[test]
fn fds_a_thread_opens_while_another_accepts_keep_their_numbers() {
    let out = thread_pool_replays("opener");
    assert!(out.starts_with("opener's fds:"), "{out}");
    assert_eq!(out.lines().count(), 7, "{out}");
}

/// A second thread connects to the main thread's listening socket, in the same process: the
/// connect, which the main thread's accept needs, comes first in replay too.
#[test]
fn socket_io_between_two_threads_of_one_process_replays() {
    let (tmp, recorded) = DDBX.record_and_replay(&progs().join("threads_io"), &[], 5, 3);
    assert_eq!(recorded.stdout, "got: hello\\n\n");
    let threads = threads_of_events(&tmp.join("rec/history/p1.ron"));
    assert!(threads.contains(&2), "no event of thread t2: {threads:?}");
}

/// Optimal tracing keeps one thread of socket I/O per process: a second one is refused (exit
/// 103, a message naming threads and the actor, nothing left running, the manifest says
/// Interrupted), and a replay of what was recorded does not pretend to work.
#[test]
fn socket_io_from_a_second_thread_is_refused_under_optimal_tracing() {
    let program = progs().join("threads_io");
    // The program itself works.
    let native = Run::new(&program).output();
    assert_eq!(native.code, 0, "{}", native.stderr);
    assert_eq!(native.stdout, "got: hello\\n\n");

    let tmp = TempDir::new("threads");
    let rec = tmp.join("rec");
    // Run::output checks that nothing of the process group is left running.
    let out = DDBX
        .record_with(&["--trace", "optimal"], &rec, &program, &[])
        .env("DDBX_JITTER", "5")
        .output();
    assert_eq!(
        out.code, UNSUPPORTED,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    assert!(
        out.stderr.to_lowercase().contains("thread"),
        "the message does not mention threads:\n{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("p1"),
        "the message does not name the actor:\n{}",
        out.stderr
    );
    let manifest = Manifest::load(&rec).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(manifest.state, SessionState::Interrupted);
    let problem = manifest.problem.unwrap_or_default();
    assert!(problem.contains("thread"), "manifest problem: {problem:?}");

    // Replaying such a recording does not pretend to work.
    let replay = DDBX.run(["replay", path_str(&rec)]).output();
    assert_ne!(replay.code, 0, "{}", replay.stderr);
}

#[test]
fn a_thread_without_socket_io_is_recorded_and_replayed() {
    let (_tmp, recorded) =
        DDBX.record_and_replay(&progs().join("threads_io"), &["quiet-thread"], 5, 3);
    assert_eq!(
        recorded.stdout,
        "thread computed 500000500000\ngot: hello\\n\n"
    );
}

/// A helper thread that runs a private event loop (its own pipe, polled) before the main thread
/// does any socket I/O — what Node's helper threads do with libuv — does not become the
/// process's I/O thread: the main thread's sockets are recorded (before: refused as a second
/// thread's, exit 103), and the accept race replays.
#[test]
fn a_helper_thread_with_its_own_pipe_does_not_take_the_main_threads_place() {
    let (_tmp, recorded) = DDBX.race(&progs().join("threads_io"), &["helper-loop"], 20);
    assert!(
        recorded
            .stdout
            .starts_with("helper loop: 1 byte\naccepted: "),
        "{}",
        recorded.stdout
    );
}

/// Fds made by calls that are no event (eventfd, timerfd_create, signalfd, inotify_init1,
/// memfd_create: what event loops make in their threads) while another thread makes sockets
/// whose events name their numbers: each is made at its recorded place, on its recorded
/// number. Before these calls were hooked, 4 replays of 6 diverged (`expected
/// SendDatagram(fd: 3, …), found a send … on UDP socket fd 4`); memcached's corpus script
/// diverged the same way at startup (its listener's number among its workers' eventfds).
#[test]
fn fds_made_by_eventfd_and_its_kind_in_a_thread_keep_their_numbers() {
    let program = progs().join("thread_fds");
    for kind in ["eventfd", "timerfd", "signalfd", "inotify", "memfd"] {
        let (_tmp, recorded) = DDBX.race(&program, &[kind], 5);
        assert!(
            recorded.stdout.starts_with("sockets: "),
            "{kind}: {}",
            recorded.stdout
        );
    }
}

/// Worker threads read the clock (clock_gettime, gettimeofday) and ask for random bytes
/// (getrandom): each gets the record's values in replay, after a `~T` line naming it in the
/// history. Before, only the thread of the process's socket I/O had its values recorded, and
/// replay printed the workers' own times and bytes (a threaded HTTP server's log times). The
/// program is built without -fPIE and takes malloc's address, as Debian's python3 is, which
/// gives it a `malloc` symbol of its own (a PLT entry leading to glibc's): before, that was
/// taken for another allocator and its threads' lock order went unrecorded.
#[test]
fn worker_threads_get_their_recorded_clock_reads_and_random_bytes() {
    let (tmp, recorded) = DDBX.race(&progs().join("thread_values"), &[], 0);
    assert!(
        !recorded.stderr.contains("not recorded"),
        "{}",
        recorded.stderr
    );
    let history = std::fs::read_to_string(tmp.join("rec/history/p1.ron")).unwrap_or_default();
    for t in 2..=5 {
        assert!(
            history.contains(&format!("\n~T{t}\n")),
            "thread t{t}'s values are not named in the history:\n{history}"
        );
    }
    assert_eq!(recorded.stdout.lines().count(), 5, "{}", recorded.stdout);
}

/// A thread takes a mutex as often as a flag in memory lets it (an atomic store, no lock and
/// no call says when): replay cannot make it take the mutex as often as the record's did (the
/// paper's limit), and its count differs. Replay still ends: the turns of a thread that has
/// ended are stepped over, and a process whose threads all wait for each other's turns gives
/// the order of locks up. Before, 3 replays of 3 waited for ever for the spinner's missing
/// turns (Python's threads, whose interpreter lock is taken again on such a flag, hung so).
#[test]
fn a_thread_that_took_a_lock_fewer_times_than_recorded_does_not_hang_replay() {
    let program = progs().join("lock_spin");
    let outputs = native_outputs(&program, &[], 0, 2, 10);
    assert!(
        outputs.len() >= 2,
        "10 native runs spun as often:\n{}",
        outputs[0]
    );
    let tmp = TempDir::new("threads");
    let rec = tmp.join("rec");
    let recorded = DDBX.record_with(&[], &rec, &program, &[]).output();
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    for i in 1..=3 {
        let replayed = DDBX
            .run(["replay", path_str(&rec)])
            .limit(std::time::Duration::from_secs(60))
            .output();
        assert_eq!(replayed.code, 0, "replay {i}: {}", replayed.stderr);
        assert!(
            replayed
                .stdout
                .ends_with("done: main took the mutex after the spinner ended\n"),
            "replay {i}: {}",
            replayed.stdout
        );
    }
}

/// `sig_threads`: a SIGTERM whose handler clears a loop's flag lands in the main thread's
/// computation between two polls while a helper thread makes events of its own (a poll every
/// 2 ms), after a pause of the parent that record and replay choose independently (30 or
/// 300 ms). A record where it came in computation (`~G15#N`: held back to the main thread's
/// next entry into a hook, counted from its own last event) replays 5 times with the same
/// count and histories. (Before, a process with threads ran the handler where it landed and
/// replay ran it at the next event's gate, the helper's as often as not, or as the main
/// thread's poll returned, a turn early: Node's and memcached's shutdowns diverged so.)
#[test]
fn a_signal_in_the_main_threads_computation_is_replayed_at_the_same_entry() {
    let program = progs().join("sig_threads");
    let outputs = native_outputs(&program, &[], 0, 2, 30);
    assert!(
        outputs.len() >= 2,
        "30 native runs all printed {:?}",
        outputs[0]
    );
    let tmp = TempDir::new("sig-threads");
    let rec = tmp.join("rec");
    let what = (40, "the SIGTERM held in computation after 30 ms");
    let recorded = DDBX.record_until(&rec, &program, what, |out, rec| {
        let history = std::fs::read_to_string(rec.join("history/p2.ron")).unwrap();
        let held = history.lines().any(|l| l.starts_with("~G15#"));
        let helper = threads_of_events(&rec.join("history/p2.ron")).contains(&2);
        // A short pause makes 3 to 8 polls on a 2-core VM (fewer under load), a long one 50
        // to 75.
        held && helper && last_number(&out.stdout) < 20
    });
    DDBX.assert_replays(&rec, &recorded, 5, &histories(&rec), &histories);
}
