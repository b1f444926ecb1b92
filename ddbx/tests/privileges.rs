//! Programs that switch users (issue #10, class 8; issue #11, item 6): a server that binds as
//! root and then drops to `nobody` (setgroups, setgid, setuid), with and without re-executing
//! itself as that user, and a program started through `runuser -u nobody`. Their processes must
//! be in the recording (the preload loadable and the GD reachable by any uid, the histories
//! passed to them by the GD while the recording stays private), replay with the record's output
//! and histories; a process image that cannot join makes the record fail (103) naming it, and
//! only the session's own processes, holding its secret, may talk to the GD.
//!
//! Switching users needs root: each test that does says so and returns when run by another
//! user.

use ddbx_tests::{Ddbx, TempDir, histories, native_outputs, path_str, progs, spawn_in_group};
use ddbx_wire::Record;
use ddbx_wire::proto::{Claim, LdToGd};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const NOBODY: u32 = 65534;

/// Whether this test can switch users; says why not when it cannot.
fn root(test: &str) -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("{test}: skipped: switching users needs root");
    }
    root
}

/// The mode bits of `path`.
fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// The recording stays private although some of its processes ran as another user.
fn assert_private(rec: &Path) {
    assert_eq!(mode(rec), 0o700, "{}", rec.display());
    let dir = rec.join("history");
    assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
}

/// Records `drop_privs 3 [exec]` (the race shown natively first) and replays it 3 times: the
/// server, running as nobody, and its clients, forked after the drop, are all recorded.
fn drops_to_nobody(args: &[&str]) {
    let program = progs().join("drop_privs");
    let outputs = native_outputs(&program, args, 5, 2, 30);
    assert!(outputs.len() >= 2, "30 native runs, one order: {outputs:?}");
    assert!(outputs[0].starts_with("uid 65534 accepted:"), "{outputs:?}");
    let (tmp, recorded) = DDBX.record_and_replay(&program, args, 5, 3);
    let rec = tmp.join("rec");
    assert!(
        recorded.stderr.contains("recorded 4 actors"),
        "{}",
        recorded.stderr
    );
    let h = histories(&rec);
    let accepts = h
        .values()
        .flatten()
        .filter(|r| matches!(r, Record::Accept { .. }))
        .count();
    let connects = h
        .values()
        .flatten()
        .filter(|r| matches!(r, Record::Connect { .. }))
        .count();
    assert_eq!((accepts, connects), (3, 3), "{h:?}");
    assert_private(&rec);
}

#[test]
fn a_server_that_drops_to_nobody_after_binding_replays() {
    if root("a_server_that_drops_to_nobody_after_binding_replays") {
        drops_to_nobody(&["3"]);
    }
}

#[test]
fn a_server_that_drops_to_nobody_and_execs_itself_replays() {
    if root("a_server_that_drops_to_nobody_and_execs_itself_replays") {
        drops_to_nobody(&["3", "exec"]);
    }
}

/// `runuser -u nobody -- accept_race 3`.
fn runuser() -> String {
    ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("runuser")
        .to_string()
}

#[test]
fn a_program_started_with_runuser_is_recorded_and_replayed() {
    if !root("a_program_started_with_runuser_is_recorded_and_replayed") {
        return;
    }
    let race = progs().join("accept_race");
    let args = ["-u", "nobody", "--", path_str(&race), "3"];
    let runuser = runuser();
    let (tmp, recorded) = DDBX.race(Path::new(&runuser), &args, 5);
    let rec = tmp.join("rec");
    // runuser, its child (exec'd into accept_race as nobody) and accept_race's 3 clients.
    assert!(
        recorded.stderr.contains("recorded 5 actors"),
        "{}",
        recorded.stderr
    );
    let ps = DDBX.run(["ps", path_str(&rec)]).success();
    assert!(
        !ps.stdout.contains("killed") && !ps.stdout.contains("unrecorded"),
        "{}",
        ps.stdout
    );
    assert_private(&rec);
}

/// A copy of ddbx's preload in a directory only root can enter (`tmp/private`).
fn private_preload(tmp: &TempDir) -> std::path::PathBuf {
    let private = tmp.join("private");
    std::fs::create_dir_all(&private).unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700))
        .unwrap_or_else(|e| panic!("{e}"));
    let preload = private.join("libddbx_preload.so");
    let shown = DDBX
        .record(
            &tmp.join("where"),
            Path::new("/bin/sh"),
            &["-c", "echo \"$LD_PRELOAD\""],
        )
        .success();
    std::fs::copy(shown.stdout.trim(), &preload)
        .unwrap_or_else(|e| panic!("{}: {e}", shown.stdout.trim()));
    preload
}

#[test]
fn a_child_spawned_by_a_process_that_dropped_to_nobody_must_join() {
    if !root("a_child_spawned_by_a_process_that_dropped_to_nobody_must_join") {
        return;
    }
    // The process drops to nobody in its own image (its LD goes on), then posix_spawns a
    // program, whose loader, as nobody, cannot read the private preload.
    let tmp = TempDir::new("priv-spawn");
    let preload = private_preload(&tmp);
    let rec = tmp.join("rec");
    let script = "import os; os.setgroups([]); os.setgid(65534); os.setuid(65534); \
                  pid = os.posix_spawn('/bin/true', ['true'], os.environ); \
                  os.waitpid(pid, 0); print('spawned')";
    let out = DDBX
        .record(&rec, Path::new("/usr/bin/python3"), &["-c", script])
        .env("DDBX_PRELOAD", &preload)
        .output();
    out.assert_exit(
        103,
        &[
            "p1: its child number 1, spawned to run `/bin/true` by uid 65534,",
            "never joined the session",
        ],
    );
    // p1 itself was recorded to its end.
    let ps = DDBX.run(["ps", path_str(&rec)]).output();
    assert!(ps.stdout.contains("exit 0"), "{}", ps.stdout);
}

#[test]
fn an_image_that_cannot_load_the_preload_fails_the_record() {
    if !root("an_image_that_cannot_load_the_preload_fails_the_record") {
        return;
    }
    // A preload only root can read, as one in root's private cache was: the image that
    // runuser execs as nobody cannot load it, so it never says Hello.
    let tmp = TempDir::new("priv-lost");
    let preload = private_preload(&tmp);
    let rec = tmp.join("rec");
    let race = progs().join("accept_race");
    let runuser = runuser();
    let out = DDBX
        .record(
            &rec,
            Path::new(&runuser),
            &["-u", "nobody", "--", path_str(&race), "2"],
        )
        .env("DDBX_PRELOAD", &preload)
        .output();
    out.assert_exit(
        103,
        &[
            "p2: pid ",
            &format!("exec'd `{}` as uid {NOBODY}", path_str(&race)),
            "never joined the session",
        ],
    );
    assert!(!out.stderr.contains("recorded 2 actors"), "{}", out.stderr);
    // ps says what happened to it, not "killed"; a replay refuses rather than run it free.
    let ps = DDBX.run(["ps", path_str(&rec)]).output();
    let p2 = ps
        .stdout
        .lines()
        .find(|l| l.starts_with("p2 "))
        .unwrap_or_else(|| panic!("no p2 in\n{}\n{}", ps.stdout, ps.stderr));
    assert!(p2.contains("unrecorded"), "{}", ps.stdout);
    DDBX.run(["replay", path_str(&rec)])
        .output()
        .assert_exit(103, &["cannot be replayed: p2 ran unrecorded"]);
}

#[test]
fn a_process_without_the_session_secret_is_refused() {
    // A process of the session that sets its own DDBX_GD_KEY before exec (env(1)): its new
    // image says Hello with the wrong secret and is refused; the record fails naming it.
    let tmp = TempDir::new("priv-key");
    let rec = tmp.join("rec");
    let out = DDBX
        .record(
            &rec,
            Path::new("/usr/bin/env"),
            &["DDBX_GD_KEY=00112233", "true"],
        )
        .output();
    out.assert_exit(
        103,
        &["tried to join the session without its secret", "`true`"],
    );
}

#[test]
fn a_process_outside_the_session_cannot_talk_to_the_gd() {
    // The program tells us where the GD is and its secret, then waits for a line on stdin.
    let mut cmd = Command::new(DDBX.path());
    cmd.args([
        "record",
        "-o",
        "rec",
        "--",
        "/bin/sh",
        "-c",
        "echo \"$DDBX_GD $DDBX_GD_KEY\"; read line; echo \"got $line\"",
    ]);
    let tmp = TempDir::new("priv-stranger");
    cmd.current_dir(tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (mut child, _group) = spawn_in_group(&mut cmd);
    let mut stdout = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("no stdout")));
    let mut first = String::new();
    stdout
        .read_line(&mut first)
        .unwrap_or_else(|e| panic!("{e}"));
    let (socket, key) = first
        .trim()
        .split_once(' ')
        .unwrap_or_else(|| panic!("expected `SOCKET KEY`, found {first:?}"));
    assert_eq!(key.len(), 32, "{first:?}");
    // Any uid may connect to the socket; nobody may list the directory it is in.
    let socket_path = Path::new(socket);
    assert_eq!(mode(socket_path), 0o666, "{socket}");
    let runtime = socket_path.parent().unwrap_or_else(|| panic!("{socket}"));
    assert_eq!(mode(runtime), 0o711, "{}", runtime.display());
    // The socket is reachable (any uid may connect), but this process is not the session's:
    // it gets no answer, even with the secret.
    let mut stranger = UnixStream::connect(socket).unwrap_or_else(|e| panic!("{socket}: {e}"));
    let hello = LdToGd::Hello {
        protocol: ddbx_wire::PROTOCOL_VERSION,
        pid: std::process::id() as i32,
        ppid: 1,
        claim: Claim::Unknown,
        argv: vec!["stranger".into()],
        key: key.to_string(),
    };
    // The GD may have closed the connection already (it checks the peer when it accepts):
    // the write then fails with a broken pipe, which is a refusal too.
    let _ = stranger.write_all(ddbx_wire::proto::encode(&hello).as_bytes());
    let mut answer = String::new();
    let _ = stranger.read_to_string(&mut answer);
    assert_eq!(answer, "", "the GD answered a stranger");
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    stdin.write_all(b"on\n").unwrap_or_else(|e| panic!("{e}"));
    drop(stdin);
    let mut rest = String::new();
    stdout
        .read_to_string(&mut rest)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rest, "got on\n");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "refused a connection from pid {}",
            std::process::id()
        )) && stderr.contains("not a process of this session"),
        "{stderr}"
    );
}
