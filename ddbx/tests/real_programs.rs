//! Real, unmodified programs nobody here wrote, under ddbx: Python's socketserver and asyncio,
//! socat, busybox httpd and wget, dash and bash. The scripts in `tests/real/` (see its README)
//! start a server and several clients, every one of them under ddbx, with random delays; each
//! test shows that the outcome varies natively, then records once and replays 3 times with the
//! same output and histories.
//!
//! socat and busybox come from Debian's packages (`.ci/run` installs them); where one is not
//! installed its test says so on stderr and passes without running.

use ddbx_tests::{Ddbx, Run, TempDir, histories, path_str, progs, workspace};
use ddbx_wire::Record;
use std::path::{Path, PathBuf};
use std::time::Duration;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
/// Jitter (ms) for the scripts' random delays.
const JITTER: u32 = 20;

fn script(name: &str) -> PathBuf {
    workspace().join("tests/real").join(name)
}

/// Shows that the outcome of `tests/real/NAME` varies natively, then records it once and
/// replays it 3 times ([`Ddbx::race`]).
fn race_script(name: &str) {
    DDBX.race(&script(name), &[], JITTER);
}

/// Whether `program` is on PATH; if not, says so on stderr (the caller then skips).
fn installed(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !found {
        eprintln!("SKIPPED: `{program}` is not installed (Debian package `{program}`)");
    }
    found
}

#[test]
fn python_forking_tcp_server_with_four_clients() {
    // The root forks a handler per connection (ForkingMixIn), after a poll on the listening
    // socket (socketserver's selector); the reply says in which order connections were accepted.
    race_script("forking_server.py");
}

#[test]
fn python_asyncio_server_with_four_asyncio_clients() {
    // epoll event loops everywhere, each with its self-pipe socketpair; the reply says in which
    // order the server handled the requests.
    race_script("asyncio_server.py");
}

#[test]
fn python_asyncio_clients_with_a_timer() {
    // The same with a fixed asyncio.sleep(0.02) in every client: a timer is an epoll_wait
    // that times out, so replay must reproduce timed-out waits as the loop saw them.
    DDBX.record_and_replay(&script("asyncio_server.py"), &["timer"], JITTER, 3);
}

#[test]
fn socat_fork_mode_echo_server_with_four_socat_clients() {
    // socat TCP-LISTEN,fork: the listener forks a handler per connection; each handler echoes
    // through a pipe; the clients are socat too, in shell pipelines. The root stops the
    // listener with SIGTERM: socat's handler only notes it and the interrupted select returns
    // EINTR, so replay must make that select wait for the root's signal.
    if installed("socat") {
        race_script("socat_echo.py");
    }
}

#[test]
fn busybox_httpd_with_busybox_wget_and_urllib_clients() {
    // httpd -f forks a handler per connection that answers with sendfile; busybox wget reads
    // and writes the socket through stdio (fdopen), which the preload turns into a stream whose
    // I/O goes through its hooks. The bodies arrive at the collector in the order the
    // responses completed.
    if installed("busybox") {
        race_script("busybox_httpd.py");
    }
}

#[test]
fn stdio_streams_on_sockets_are_recorded() {
    // The same mechanism as busybox wget's, in a tiny C program (tests/progs/stdio_socket.c):
    // clients write and read their socket only through a fdopen'd stream.
    let (tmp, _) = DDBX.race(&progs().join("stdio_socket"), &[], 5);
    let recorded = histories(&tmp.join("rec"));
    let clients: Vec<_> = recorded
        .iter()
        .filter(|(_, h)| h.iter().any(|r| matches!(r, Record::Connect { .. })))
        .collect();
    assert_eq!(clients.len(), 3, "{recorded:#?}");
    for (actor, h) in clients {
        // fprintf + fflush: one send of "client I\n"; fgets: the 2-byte reply, then the end.
        assert!(
            h.iter().any(|r| matches!(r, Record::Send { n: 9, .. })),
            "{actor}: the stream's write was not recorded: {h:#?}"
        );
        assert!(
            h.iter().any(|r| matches!(r, Record::Recv { n: 2, .. })),
            "{actor}: the stream's read was not recorded: {h:#?}"
        );
    }
}

#[test]
fn a_bash_script_prints_its_records_pids_in_replay() {
    // `$$`, `$PPID`, `$BASHPID`, `$!`, a child's `$$`, a pid file read back and killed.
    let program = script("pids.sh");
    let native = ddbx_tests::native_outputs(&program, &[], 0, 2, 5);
    assert_eq!(native.len(), 2, "{native:?}");
    let (_tmp, recorded) = DDBX.record_and_replay(&program, &[], 0, 3);
    let last = recorded.stdout.lines().last().unwrap_or_default();
    let words: Vec<&str> = last.split_whitespace().collect();
    assert!(
        words.len() == 7 && words[3] == format!("{},", words[1]) && words[6] == "143",
        "the pid file names the server, killed by it: {last:?}"
    );
    DDBX.replays_under_optimal_tracing(&program, &[]);
}

/// Also halted just after the script's `wait` (dash awaits SIGCHLD in `sigsuspend`, then
/// reaps with non-blocking waits: no event), where `ddbx inf` says. (Before, that halt hung:
/// the script waited in `sigsuspend` for children held before their first event, and asked
/// nobody to run them; a wait in `waitpid` asked.)
#[test]
fn sh_script_with_a_server_and_clients_in_the_background() {
    let (run, _) = DDBX.race(&script("sh_background.sh"), &[], JITTER);
    let rec = run.join("rec");
    let p1 = std::fs::read_to_string(rec.join("history/p1.ron")).unwrap();
    // The first event after a gap in which the script reaped three children or more.
    let (mut events, mut reaped, mut stop) = (0, 0, None);
    for line in p1.lines().skip(1) {
        match line.strip_prefix("~w") {
            Some(child) => reaped += usize::from(child != "0"),
            None if line.starts_with('~') => {}
            None => {
                events += 1;
                if reaped >= 3 {
                    stop = Some(events);
                    break;
                }
                reaped = 0;
            }
        }
    }
    let stop = stop.unwrap_or_else(|| panic!("no wait for the clients in p1:\n{p1}"));
    DDBX.halts_at_where_inf_says(&rec, &format!("p1:{stop}"));
}

/// `tests/real/stdout_socket.sh`: a client function whose `printf … >&3` sends through stdio
/// (fd 1 pointed at a `/dev/tcp` socket), called with its output in a file or thrown away.
/// Recorded with its standard output in a file and replayed with it in a pipe, and the other
/// way round, it replays: before, the sends were events only where the standard output was
/// a file at the start (`p1 at event 22: expected Send(fd: 1, n: 11), found Dup(fd: 3,
/// new_fd: 0)` with memcached's readiness loop).
#[test]
fn sends_through_stdio_are_events_wherever_the_scripts_output_goes() {
    let program = script("stdout_socket.sh");
    let native = ddbx_tests::native_outputs(&program, &[], JITTER, 2, 30);
    assert!(
        native.len() >= 2,
        "30 native runs printed the same: {native:?}"
    );
    let tmp = TempDir::new("stdout");
    let jitter = JITTER.to_string();
    // Record into a file, replay into a pipe.
    let rec = tmp.join("rec");
    let recorded = ddbx_into_file(
        &["record", "-o", path_str(&rec), "--", path_str(&program)],
        &tmp.join("record.out"),
    );
    assert_eq!(recorded.lines().count(), 3, "{recorded}");
    for _ in 0..2 {
        let replayed = DDBX.run(["replay", path_str(&rec)]).success();
        assert_eq!(replayed.stdout, recorded, "{}", replayed.stderr);
    }
    // Record into a pipe, replay into a file.
    let rec = tmp.join("rec2");
    let recorded = DDBX
        .record(&rec, &program, &[])
        .env("DDBX_JITTER", &jitter)
        .success()
        .stdout;
    for i in 0..2 {
        let file = tmp.join(&format!("replay{i}.out"));
        let replayed = ddbx_into_file(&["replay", path_str(&rec)], &file);
        assert_eq!(replayed, recorded);
    }
}

/// `ddbx ARGS… > FILE` (run by sh, with the test's jitter), which must succeed; what it wrote
/// into FILE.
fn ddbx_into_file(args: &[&str], file: &Path) -> String {
    let mut argv = vec![
        "-c",
        r#"out=$1; shift; exec "$@" > "$out""#,
        "sh",
        path_str(file),
    ];
    argv.push(path_str(DDBX.path()));
    argv.extend_from_slice(args);
    Run::new("/bin/sh")
        .args(argv)
        .env("DDBX_JITTER", JITTER.to_string())
        .success();
    std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// xargs polls its standard streams as it starts; the record saw its standard output, a file,
/// report `in|out`. Replayed into a pipe, whose write end never becomes readable, the replay
/// waited for ever for that `in` (the corpus's nginx script hung so under the corpus
/// benchmark); now a ready set waits only for what the fd's access mode can report. The
/// other way round too: recorded into a pipe, replayed into a file.
#[test]
fn a_ready_set_over_the_scripts_own_output_replays_whatever_that_output_is() {
    let program = script("xargs_jobs.sh");
    let native = ddbx_tests::native_outputs(&program, &[], JITTER, 2, 30);
    assert!(
        native.len() >= 2,
        "30 native runs printed the same: {native:?}"
    );
    let tmp = TempDir::new("xargs-out");
    let rec = tmp.join("rec");
    let recorded = ddbx_into_file(
        &["record", "-o", path_str(&rec), "--", path_str(&program)],
        &tmp.join("record.out"),
    );
    assert_eq!(recorded.lines().count(), 6, "{recorded}");
    for _ in 0..2 {
        let replayed = DDBX
            .run(["replay", path_str(&rec)])
            .limit(Duration::from_secs(30))
            .success();
        assert_eq!(replayed.stdout, recorded, "{}", replayed.stderr);
    }
    let rec = tmp.join("rec2");
    let recorded = DDBX
        .record(&rec, &program, &[])
        .env("DDBX_JITTER", JITTER.to_string())
        .success()
        .stdout;
    let replayed = ddbx_into_file(&["replay", path_str(&rec)], &tmp.join("replay.out"));
    assert_eq!(replayed, recorded);
}

#[test]
fn bash_clients_over_dev_tcp() {
    // bash writes to the socket through stdio, which the LD does not see; replay must still
    // give every client the reply it got in the record.
    race_script("bash_devtcp.sh");
}
