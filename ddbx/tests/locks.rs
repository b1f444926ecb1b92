//! Threads and lock-order replay (paper 000, ARL): the threads of a process get the same ids in
//! every run (`p1.t2` …), every access to a mutex or condition variable is recorded per object,
//! and replay grants them in the recorded order. Each program here is first shown to race
//! natively; its record is then replayed 5 times, each printing exactly what the record did.
//! Also: trylock and timedlock outcomes, `ddbx show --obj` and `ddbx ps`, a damaged lock
//! history (exit 102), and no lock history at all for a program without threads.

use ddbx_tests::{Ddbx, Output, TempDir, native_outputs, path_str, progs};
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const BAD_RECORDING: i32 = 102;
const REPLAYS: usize = 5;

/// `program args` gives at least two different outputs in 30 native runs: the race exists.
fn assert_races_natively(program: &Path, args: &[&str]) {
    let outputs = native_outputs(program, args, 0, 2, 30);
    assert!(
        outputs.len() >= 2,
        "{} {args:?}: 30 native runs printed the same output, so replaying it shows nothing:\n{}",
        program.display(),
        outputs[0]
    );
}

/// Records `program args` into `tmp/rec` and replays it [`REPLAYS`] times: each replay exits
/// as the record did and prints what it printed.
fn record_and_replay(tmp: &TempDir, program: &Path, args: &[&str]) -> Output {
    let rec = tmp.join("rec");
    let recorded = DDBX.record(&rec, program, args).success();
    assert!(!recorded.stdout.is_empty(), "nothing printed under record");
    assert!(
        rec.join("history/p1.locks").is_file(),
        "a process with threads has a lock history"
    );
    for i in 1..=REPLAYS {
        let replayed = DDBX.run(["replay", path_str(&rec)]).output();
        assert_eq!(replayed.code, 0, "replay {i}: {}", replayed.stderr);
        assert_eq!(
            replayed.stdout, recorded.stdout,
            "replay {i} printed something else than the record"
        );
    }
    recorded
}

/// (a) N threads append their number to a shared log under one mutex, many rounds: the log is
/// a race natively; every replay prints the record's log. `ps` lists the threads under p1 and
/// `show --obj 1` the mutex's history, whose lock order is the log's order.
#[test]
fn threads_taking_turns_on_a_mutex_replay_the_recorded_order() {
    let program = progs().join("mutex_log");
    let args = ["4", "60"];
    assert_races_natively(&program, &args);
    let tmp = TempDir::new("locks-a");
    let recorded = record_and_replay(&tmp, &program, &args);
    let rec = tmp.join("rec");

    let ps = DDBX.run(["ps", path_str(&rec)]).success().stdout;
    for t in 1..=5 {
        assert!(
            ps.contains(&format!("  p1.t{t} ")),
            "no p1.t{t} in ps:\n{ps}"
        );
    }
    assert!(ps.contains("joined by t1"), "{ps}");

    // The mutex's accesses, in order: the threads that locked it are the log's numbers (thread
    // k+1 is the program's worker k: the main thread, t1, creates them in order).
    let shown = DDBX
        .run(["show", path_str(&rec), "--obj", "1"])
        .success()
        .stdout;
    assert!(shown.starts_with("p1 object 1 (mutex): "), "{shown}");
    let object = DDBX.json(["show", path_str(&rec), "--obj", "1", "--json"]);
    let mut lockers: Vec<u32> = Vec::new();
    for run in object["runs"].as_array().into_iter().flatten() {
        if run["op"] == "lock" {
            let thread = run["thread"].as_str().unwrap_or_default();
            let worker = thread
                .trim_start_matches("p1.t")
                .parse::<u32>()
                .unwrap_or(0)
                - 1;
            let count = run["count"].as_u64().unwrap_or(0) as usize;
            lockers.extend(std::iter::repeat_n(worker, count));
        }
    }
    let logged: Vec<u32> = recorded
        .stdout
        .split_whitespace()
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    assert_eq!(
        lockers, logged,
        "the mutex's history is not the log's order"
    );
}

/// (b) A producer and 3 consumers on a mutex and two condition variables: which consumer a
/// signal woke (who took which item) is a race natively; every replay prints the record's.
#[test]
fn a_condvar_work_queue_replays_who_took_which_item() {
    let program = progs().join("condvar_queue");
    let args = ["3", "80"];
    assert_races_natively(&program, &args);
    let tmp = TempDir::new("locks-b");
    let recorded = record_and_replay(&tmp, &program, &args);
    assert_eq!(recorded.stdout.lines().count(), 3, "{}", recorded.stdout);
    let shown = DDBX
        .run(["show", path_str(&tmp.join("rec")), "p1", "--obj", "o2"])
        .success()
        .stdout;
    assert!(shown.contains("(cond)"), "{shown}");
    assert!(shown.contains("  signal"), "{shown}");
}

/// (c) trylock's EBUSY and timedlock's ETIMEDOUT are recorded and replayed: how many times each
/// thread found the mutex held is a race natively; every replay prints the record's counts.
#[test]
fn trylock_and_timedlock_outcomes_are_replayed() {
    let program = progs().join("trylock_busy");
    assert_races_natively(&program, &[]);
    let tmp = TempDir::new("locks-c");
    let recorded = record_and_replay(&tmp, &program, &[]);
    // The main thread holds the mutex while the threads start: some trylock found it held.
    let locks = std::fs::read(tmp.join("rec/history/p1.locks")).unwrap_or_default();
    let text = String::from_utf8_lossy(&locks);
    assert!(
        text.contains(" trylock 16\n"),
        "no EBUSY in the lock history; the record printed:\n{}",
        recorded.stdout
    );
}

/// (d) A damaged lock history is refused before anything runs: exit 102, the file and line.
#[test]
fn a_damaged_lock_history_is_refused_with_its_file_and_line() {
    let tmp = TempDir::new("locks-d");
    let rec = tmp.join("rec");
    DDBX.record(&rec, &progs().join("mutex_log"), &["2", "5"])
        .success();
    let path = rec.join("history/p1.locks");
    let text = String::from_utf8(std::fs::read(&path).unwrap_or_default())
        .unwrap_or_default()
        .trim_end_matches('\0')
        .to_string();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "o1 1 t2 grab 0";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    for args in [
        vec!["replay", path_str(&rec)],
        vec!["show", path_str(&rec), "--obj", "1"],
    ] {
        let out = DDBX.run(&args).output();
        assert_eq!(out.code, BAD_RECORDING, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("p1.locks:4") && out.stderr.contains("grab"),
            "{args:?}: the message does not name the file, line and what it found:\n{}",
            out.stderr
        );
    }
    // A line deleted from the middle (no hole left by a killed process): an access is missing.
    let mut lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("o1 2 "))
        .unwrap_or(4);
    lines.remove(at);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let out = DDBX.run(["replay", path_str(&rec)]).output();
    assert_eq!(out.code, BAD_RECORDING, "{}", out.stderr);
    assert!(out.stderr.contains("missing"), "{}", out.stderr);
}

/// (e) A program that never makes a thread writes no lock history, and its lock calls (stdio's
/// own are internal to libc) cost it nothing.
#[test]
fn a_single_threaded_program_writes_no_lock_history() {
    let tmp = TempDir::new("locks-e");
    let rec = tmp.join("rec");
    DDBX.record(&rec, &progs().join("accept_race"), &[])
        .success();
    let files: Vec<String> = std::fs::read_dir(rec.join("history"))
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(files.iter().all(|f| f.ends_with(".ron")), "{files:?}");
    let out = DDBX.run(["show", path_str(&rec), "--obj", "0"]).output();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("lock history"), "{}", out.stderr);
}

/// Threads that end with `pthread_exit` (an unwind through the thread's frames), and a fork
/// while threads run: the child is an actor with its own lock history and thread numbers, and
/// record and replays end normally with the record's output.
#[test]
fn pthread_exit_and_a_fork_from_a_threaded_process() {
    let tmp = TempDir::new("locks-f");
    let recorded = record_and_replay(&tmp, &progs().join("thread_exit_fork"), &[]);
    assert_eq!(recorded.stdout, "child: >= 200\nparent: 300\n");
    let rec = tmp.join("rec");
    assert!(rec.join("history/p2.locks").is_file());
    let ps = DDBX.run(["ps", path_str(&rec)]).success().stdout;
    for t in ["p1.t4", "p2.t2"] {
        assert!(ps.contains(&format!("  {t} ")), "no {t} in ps:\n{ps}");
    }
    assert!(!ps.contains("  p2.t3 "), "{ps}");
    let table = DDBX
        .run(["show", path_str(&rec), "p1", "--obj", "0"])
        .success()
        .stdout;
    assert_eq!(table.matches("  exit").count(), 3, "{table}");
}

/// Unnamed POSIX semaphores are lock objects: which thread's `sem_trywait` found a post, and
/// how many found none before, is a race natively, and every replay prints the record's
/// (before semaphores were ordered, replays printed other counts and another order). The lock
/// history names the semaphore's posts and takes.
#[test]
fn semaphore_posts_and_trywaits_replay_the_recorded_order() {
    let program = progs().join("sem_race");
    assert_races_natively(&program, &[]);
    let tmp = TempDir::new("locks-sem");
    record_and_replay(&tmp, &program, &[]);
    let locks = std::fs::read_to_string(tmp.join("rec/history/p1.locks")).unwrap_or_default();
    for op in [" post ", " take 0", " take 11"] {
        assert!(
            locks.contains(op),
            "no `{op}` in the lock history:\n{locks}"
        );
    }
}

/// Read-write locks are lock objects, their accesses marked read or write (paper 000): what
/// each reader saw of the writers' log, and which of its tries found the lock busy, is a race
/// natively, and every replay prints the record's. `show --obj 1` names the object a rwlock.
#[test]
fn read_write_locks_replay_who_read_what_and_which_tries_found_it_busy() {
    let program = progs().join("rwlock_race");
    assert_races_natively(&program, &[]);
    let tmp = TempDir::new("locks-rw");
    record_and_replay(&tmp, &program, &[]);
    let rec = tmp.join("rec");
    let locks = std::fs::read_to_string(rec.join("history/p1.locks")).unwrap_or_default();
    for op in [" rdlock 0", " wrlock 0", " tryrdlock ", " trywrlock "] {
        assert!(
            locks.contains(op),
            "no `{op}` in the lock history:\n{locks}"
        );
    }
    let shown = DDBX
        .run(["show", path_str(&rec), "--obj", "1"])
        .success()
        .stdout;
    assert!(shown.contains("(rwlock)"), "{shown}");
}
