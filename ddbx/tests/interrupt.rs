//! ddbx interrupted: SIGINT/SIGTERM stop every debuggee and clean up; SIGKILL of ddbx stops
//! the recorded program too (its lifeline), and leaves a recording that still loads and a
//! runtime directory that the next ddbx removes; a held halt ends on SIGINT or SIGTERM, as
//! interrupted (130, 143).

use ddbx_tests::{
    Ddbx, GroupKiller, TempDir, group_left_after, group_pids, path_str, progs, spawn_in_group,
};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// `ddbx ARGS…` started in a process group of its own, stdin closed, the other streams as
/// given: for tests that signal ddbx while it runs.
fn start_ddbx(args: &[&str], stdout: Stdio, stderr: Stdio) -> (Child, GroupKiller) {
    start_ddbx_in(args, stdout, stderr, Path::new("/tmp"))
}

/// [`start_ddbx`] with `$TMPDIR` set to `tmpdir`, where ddbx makes its runtime directory.
fn start_ddbx_in(
    args: &[&str],
    stdout: Stdio,
    stderr: Stdio,
    tmpdir: &Path,
) -> (Child, GroupKiller) {
    spawn_in_group(
        Command::new(DDBX.path())
            .args(args)
            .env("TMPDIR", tmpdir)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr),
    )
}

/// `ddbx record` of ext_server (which waits for clients that never come), in its own process
/// group, its runtime directory under `tmpdir`; returns once the server is listening (it
/// printed its port).
fn record_waiting_server(dir: &Path, tmpdir: &Path) -> (Child, GroupKiller) {
    let server = progs().join("ext_server");
    let args = [
        "record",
        "-o",
        path_str(dir),
        "--",
        path_str(&server),
        "100",
    ];
    let (mut child, group) = start_ddbx_in(&args, Stdio::piped(), Stdio::null(), tmpdir);
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("no stdout")))
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(line.starts_with("port "), "{line:?}");
    (child, group)
}

/// The runtime directories that ddbx `pid` made under `tmpdir`.
fn runtime_dirs_of(pid: u32, tmpdir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmpdir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("ddbx-{pid}-")))
        })
        .collect()
}

#[test]
fn sigint_and_sigterm_stop_the_record_and_clean_up() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let tmp = TempDir::new("sig");
        let rec = tmp.join("rec");
        let (mut child, group) = record_waiting_server(&rec, Path::new("/tmp"));
        let pid = child.id();
        assert!(
            !runtime_dirs_of(pid, Path::new("/tmp")).is_empty(),
            "the runtime dir exists while recording"
        );
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, signal) };
        let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status.code(), Some(code), "ddbx after signal {signal}");
        assert_eq!(
            group_pids(group.0),
            Vec::<i32>::new(),
            "nothing left running after signal {signal}"
        );
        assert!(
            runtime_dirs_of(pid, Path::new("/tmp")).is_empty(),
            "runtime dir left after signal {signal}"
        );
        let manifest = std::fs::read_to_string(rec.join("manifest.ron")).unwrap_or_default();
        assert!(manifest.contains("Interrupted"), "{manifest}");
    }
}

#[test]
fn sigkill_of_ddbx_stops_the_program_and_leaves_a_loadable_recording() {
    let tmp = TempDir::new("kill");
    let rec = tmp.join("rec");
    // A $TMPDIR of its own: any other ddbx that starts meanwhile (the other tests here) would
    // remove the dead one's directory from /tmp before this test looks for it.
    let runtime = tmp.join("runtime");
    std::fs::create_dir(&runtime).unwrap_or_else(|e| panic!("{e}"));
    let (mut child, group) = record_waiting_server(&rec, &runtime);
    let pid = child.id();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let _ = child.wait();
    // The lifeline: the server, blocked in accept, dies with ddbx.
    let left = group_left_after(group.0, Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "left running after ddbx was killed: {left:?}"
    );
    // The recording loads: the actor it had is listed (from the actors log).
    let ps = DDBX.run(["ps", path_str(&rec)]).success();
    assert!(
        ps.stdout.contains("ext_server") && ps.stdout.contains("Recording"),
        "{}",
        ps.stdout
    );
    drop(group);
    // The next ddbx removes the dead one's runtime directory.
    assert!(!runtime_dirs_of(pid, &runtime).is_empty());
    let again = tmp.join("again");
    DDBX.run(["record", "-o", path_str(&again), "--", "/bin/true"])
        .env("TMPDIR", &runtime)
        .success();
    assert!(
        runtime_dirs_of(pid, &runtime).is_empty(),
        "stale runtime dir of pid {pid} not removed"
    );
}

#[test]
fn a_held_halt_ends_on_sigint_or_sigterm_as_interrupted_with_nothing_left() {
    let tmp = TempDir::new("hold");
    let rec = tmp.join("rec");
    DDBX.record(&rec, &progs().join("accept_race"), &[])
        .success();
    // The README's table: 130 / 143, ddbx was interrupted.
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let args = ["replay", "--stop-at", "p1:2", "--hold", path_str(&rec)];
        let (mut child, group) = start_ddbx(&args, Stdio::null(), Stdio::piped());
        let mut err = BufReader::new(child.stderr.take().unwrap_or_else(|| panic!("no stderr")));
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            let n = err.read_line(&mut line).unwrap_or(0);
            assert!(n > 0, "ddbx ended before holding:\n{seen}");
            seen.push_str(&line);
            if line.contains("holding") {
                break;
            }
        }
        // The halted processes are alive and held.
        assert!(group_pids(group.0).len() >= 2, "{seen}");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status.code(), Some(code), "signal {signal}: {seen}");
        assert_eq!(group_pids(group.0), Vec::<i32>::new());
    }
}

/// A record SIGTERMed while one process blocks in a call that is not an event (stuck_wait's
/// child, in pause() after its last event, its fork) and the others in calls that are: the
/// replay reaches the recorded end and stops every process, instead of waiting forever for the
/// child to make another event (the fault matrix found this as a hang, about 1 case in 10: a
/// client in waitpid for a grandchild whose replay waited at its end).
#[test]
fn a_record_interrupted_while_a_process_waits_for_its_child_replays_to_its_end() {
    let tmp = TempDir::new("stuck");
    let rec = tmp.join("rec");
    let program = progs().join("stuck_wait");
    let args = ["record", "-o", path_str(&rec), "--", path_str(&program)];
    let (mut child, _group) = start_ddbx(&args, Stdio::null(), Stdio::piped());
    let err = child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
    let mut lines = BufReader::new(err).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l == "stuck_wait: ready");
    assert!(ready, "the program never said it was ready");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(143));
    let ps = DDBX.run(["ps", path_str(&rec)]).success();
    assert!(ps.stdout.contains("signal 9"), "{}", ps.stdout);
    replays_to_its_end(&rec);
    // The child killed between its fork and the fork's record (seen once under load): the
    // grandchild exists, its parent's history never says it was created.
    let child = rec.join("history/p2.ron");
    let text = std::fs::read_to_string(&child).unwrap_or_default();
    let cut = text.replace("Fork(index: 1)\n", "");
    assert_ne!(cut, text, "{text}");
    std::fs::write(&child, cut).unwrap_or_else(|e| panic!("{e}"));
    replays_to_its_end(&rec);
    // The fork happens in replay as it did in the record (not a kill at the fork): the
    // replay's own history of the child has it.
    let again = tmp.join("again");
    let replay = DDBX
        .run(["replay", "--history-out", path_str(&again), path_str(&rec)])
        .limit(Duration::from_secs(60))
        .output();
    assert!(replay.stderr.contains("recorded end"), "{}", replay.stderr);
    let replayed = std::fs::read_to_string(again.join("history/p2.ron")).unwrap_or_default();
    assert!(replayed.contains("Fork(index: 1)"), "{replayed}");
}

/// Two replays of `rec`, each of which must reach its recorded end within a minute.
fn replays_to_its_end(rec: &std::path::Path) {
    for _ in 0..2 {
        let replay = DDBX
            .run(["replay", path_str(rec)])
            .limit(Duration::from_secs(60))
            .output();
        assert!(
            replay.stderr.contains("replay reached the recorded end"),
            "exit {}: {}",
            replay.code,
            replay.stderr
        );
    }
}
