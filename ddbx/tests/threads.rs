//! Threads: socket I/O from a second thread is refused (exit 103, a message naming threads,
//! nothing left running, the manifest says Interrupted); a thread that does no socket I/O is
//! recorded and replayed like any program.

use ddbx_tests::{Ddbx, Run, TempDir, path_str, progs};
use ddbx_wire::manifest::{Manifest, SessionState};

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const UNSUPPORTED: i32 = 103;

#[test]
fn socket_io_from_a_second_thread_is_refused() {
    let program = progs().join("threads_io");
    // The program itself works.
    let native = Run::new(&program).output();
    assert_eq!(native.code, 0, "{}", native.stderr);
    assert_eq!(native.stdout, "got: hello\\n\n");

    let tmp = TempDir::new("threads");
    let rec = tmp.join("rec");
    // Run::output checks that nothing of the process group is left running.
    let out = DDBX
        .record(&rec, &program, &[])
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
