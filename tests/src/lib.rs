//! ddbx's test harness: one harness, many tiny real programs.
//!
//! * [`progs`] builds the C programs of `tests/progs/` (and the Figure 1 example) once per test
//!   run, with gcc, into the target directory.
//! * [`Run`] runs a command (natively or `ddbx …`) in its own process group with a time limit,
//!   captures its output, and checks afterwards that it left no process behind; a test that
//!   fails or times out still kills the whole group.
//! * [`native_outputs`] runs a program natively several times, to show that a race really
//!   exists (runs differ) before a test claims that replay removes it.
//! * [`histories`] loads a recording's histories with run details (pids, ports) blanked, so
//!   that a record and its replays can be compared record by record.

use ddbx_wire::{History, Record};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Where built test programs go.
fn build_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    target.join("ddbx-test-progs")
}

/// The built test programs: `progs().join("accept_race")`.
pub fn progs() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = build_dir();
        std::fs::create_dir_all(&out)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", out.display()));
        let src = workspace().join("tests/progs");
        let mut builds: Vec<(String, PathBuf, Vec<String>)> = Vec::new();
        let entries = std::fs::read_dir(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "c") {
                let name = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if name == "diverge" {
                    builds.push(("diverge1".into(), path.clone(), vec!["-DVARIANT=1".into()]));
                    builds.push(("diverge2".into(), path.clone(), vec!["-DVARIANT=2".into()]));
                } else {
                    let flags = link_flags(&path);
                    builds.push((name, path, flags));
                }
            }
        }
        for (name, source, defines) in builds {
            let bin = out.join(&name);
            let tmp = out.join(format!(".{name}.{}", std::process::id()));
            let (defines, libs): (Vec<String>, Vec<String>) =
                defines.into_iter().partition(|f| f.starts_with("-D"));
            let status = Command::new("gcc")
                .args(["-O1", "-Wall", "-Wextra", "-Werror", "-I"])
                .arg(workspace().join("preload/probe/include"))
                .arg("-o")
                .arg(&tmp)
                .args(&defines)
                .arg(&source)
                .args(&libs)
                .status()
                .unwrap_or_else(|e| panic!("cannot run gcc: {e}"));
            assert!(status.success(), "gcc failed on {}", source.display());
            std::fs::rename(&tmp, &bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        }
        let fig1 = out.join("figure1");
        std::fs::create_dir_all(&fig1).unwrap_or_else(|e| panic!("{}: {e}", fig1.display()));
        let status = Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(workspace().join("examples/figure1"))
            .arg(format!("OUT={}", fig1.display()))
            .status()
            .unwrap_or_else(|e| panic!("cannot run make: {e}"));
        assert!(status.success(), "building examples/figure1 failed");
        out
    })
}

/// Extra gcc flags of a test program, from a first line `// link: -pthread …` (only
/// `-pthread` and `-l…` flags are accepted).
fn link_flags(source: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(source).unwrap_or_default();
    let first = text.lines().next().unwrap_or("");
    let Some(rest) = first.trim().strip_prefix("// link:") else {
        return vec![];
    };
    rest.split_whitespace()
        .map(|f| {
            assert!(
                f == "-pthread" || f.starts_with("-l"),
                "{}: unexpected link flag {f}",
                source.display()
            );
            f.to_string()
        })
        .collect()
}

/// The Figure 1 example's `run` script and the directory of its built programs.
pub fn figure1() -> (PathBuf, PathBuf) {
    (
        workspace().join("examples/figure1/run"),
        progs().join("figure1"),
    )
}

/// A temporary directory, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new empty directory.
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("ddbx-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        TempDir(path)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A path inside it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a finished command did.
#[derive(Debug, Clone)]
pub struct Output {
    /// Exit code (128 + signal if killed).
    pub code: i32,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// A command to run with a time limit, in its own process group.
pub struct Run {
    cmd: Command,
    limit: Duration,
    input: Option<Vec<u8>>,
    /// Processes of the group still running at the end are killed instead of failing the test.
    leftovers_ok: bool,
}

impl Run {
    /// `program args…`, 120 s limit.
    pub fn new(program: impl AsRef<std::ffi::OsStr>) -> Run {
        let mut cmd = Command::new(program);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Run {
            cmd,
            limit: Duration::from_secs(120),
            input: None,
            leftovers_ok: false,
        }
    }

    /// Feeds `input` to the command's stdin through a pipe (closed after it).
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Run {
        self.cmd.stdin(Stdio::piped());
        self.input = Some(input.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Run {
        self.cmd.env(key, value);
        self
    }

    /// Runs in `dir`.
    pub fn current_dir(mut self, dir: &Path) -> Run {
        self.cmd.current_dir(dir);
        self
    }

    /// For programs that are not ddbx's and leave helpers finishing after they exit (a
    /// browser's): what is left of the group at the end is killed, not reported as a failure.
    pub fn leftovers_ok(mut self) -> Run {
        self.leftovers_ok = true;
        self
    }

    /// Changes the time limit.
    pub fn limit(mut self, limit: Duration) -> Run {
        self.limit = limit;
        self
    }

    /// Runs to completion (killing the whole process group at the time limit, and failing the
    /// test then), and checks that nothing of the group is left running.
    pub fn output(mut self) -> Output {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        self.cmd.process_group(0);
        let mut child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", self.cmd));
        let pgid = child.id() as i32;
        let group = GroupKiller(pgid);
        let feeder = match (child.stdin.take(), self.input.take()) {
            (Some(mut pipe), Some(input)) => Some(std::thread::spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(&input);
            })),
            _ => None,
        };
        let mut out_pipe = child.stdout.take();
        let mut err_pipe = child.stderr.take();
        let out_reader = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(p) = out_pipe.as_mut() {
                let _ = p.read_to_string(&mut s);
            }
            s
        });
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(p) = err_pipe.as_mut() {
                let _ = p.read_to_string(&mut s);
            }
            s
        });
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let status = child.wait();
            let _ = done_tx.send(());
            status
        });
        if done_rx.recv_timeout(self.limit).is_err() {
            drop(group);
            let _ = waiter.join();
            panic!(
                "{:?} did not finish within {:?}; its process group was killed",
                self.cmd, self.limit
            );
        }
        let status = match waiter.join() {
            Ok(Ok(status)) => status,
            other => panic!("waiting for {:?}: {other:?}", self.cmd),
        };
        if let Some(feeder) = feeder {
            let _ = feeder.join();
        }
        let stdout = out_reader.join().unwrap_or_default();
        let stderr = err_reader.join().unwrap_or_default();
        let leftovers = group_members(pgid);
        drop(group);
        assert!(
            leftovers.is_empty() || self.leftovers_ok,
            "{:?} left processes behind: {leftovers:?}\nstderr:\n{stderr}",
            self.cmd
        );
        let code = status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
        Output {
            code,
            stdout,
            stderr,
        }
    }
}

/// Kills a process group when dropped (a failing test leaves nothing running).
struct GroupKiller(i32);

impl Drop for GroupKiller {
    fn drop(&mut self) {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(-self.0, libc::SIGKILL) };
    }
}

/// Processes (other than zombies) still in process group `pgid`.
fn group_members(pgid: i32) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // After the command (in parentheses): state ppid pgrp …
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            found.push(format!(
                "pid {name}: {}",
                stat.split(')').next().unwrap_or("")
            ));
        }
    }
    found
}

/// Runs `program args` natively up to `max_runs` times with `DDBX_JITTER=jitter`, stopping as
/// soon as `want` distinct outputs were seen; returns the distinct outputs.
pub fn native_outputs(
    program: &Path,
    args: &[&str],
    jitter: u32,
    want: usize,
    max_runs: usize,
) -> Vec<String> {
    native_outputs_with(program, args, &[], jitter, want, max_runs)
}

/// [`native_outputs`] with extra environment variables.
pub fn native_outputs_with(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    jitter: u32,
    want: usize,
    max_runs: usize,
) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..max_runs {
        let mut run = Run::new(program)
            .args(args)
            .env("DDBX_JITTER", jitter.to_string());
        for (k, v) in env {
            run = run.env(k, v);
        }
        let out = run.output();
        assert_eq!(
            out.code,
            0,
            "{} failed natively:\n{}",
            program.display(),
            out.stderr
        );
        if !seen.contains(&out.stdout) {
            seen.push(out.stdout);
        }
        if seen.len() >= want {
            break;
        }
    }
    seen
}

/// The histories of a recording (or of a replay's `--history-out`), by actor, with run
/// details (pids, ports) blanked.
pub fn histories(dir: &Path) -> BTreeMap<String, Vec<Record>> {
    let mut out = BTreeMap::new();
    let hist = dir.join("history");
    let entries = std::fs::read_dir(&hist).unwrap_or_else(|e| panic!("{}: {e}", hist.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        let h = History::load(&path).unwrap_or_else(|e| panic!("{e}"));
        out.insert(
            h.actor.to_string(),
            h.records.iter().map(Record::without_run_details).collect(),
        );
    }
    out
}

/// Asserts that two sets of histories are equal, naming the first difference.
pub fn assert_same_histories(
    a: &BTreeMap<String, Vec<Record>>,
    b: &BTreeMap<String, Vec<Record>>,
    what: &str,
) {
    let actors_a: Vec<&String> = a.keys().collect();
    let actors_b: Vec<&String> = b.keys().collect();
    assert_eq!(actors_a, actors_b, "{what}: different actors");
    for (actor, ra) in a {
        let rb = &b[actor];
        for (i, (x, y)) in ra.iter().zip(rb).enumerate() {
            assert_eq!(x, y, "{what}: {actor} event {} differs", i + 1);
        }
        assert_eq!(
            ra.len(),
            rb.len(),
            "{what}: {actor} has {} events vs {}",
            ra.len(),
            rb.len()
        );
    }
}

/// Records `program args` with `ddbx` (the path of the `ddbx` binary) and `DDBX_JITTER=jitter`,
/// then replays the recording `replays` times with `--history-out` and checks each replay: same
/// exit code and output as the record, same histories (pids and ports aside). Returns the
/// temporary directory (the recording is `rec` in it, replay *i* wrote `replay<i>`) and the
/// record's output.
pub fn record_and_replay(
    ddbx: &Path,
    program: &Path,
    args: &[&str],
    jitter: u32,
    replays: usize,
) -> (TempDir, Output) {
    record_and_replay_with(ddbx, program, args, jitter, replays, &|_| {})
}

/// [`record_and_replay`], with `blank` applied to every record (after
/// [`Record::without_run_details`]) before histories are compared: for run details that only
/// the program knows, such as a `mkdtemp` name in a Unix socket path.
pub fn record_and_replay_with(
    ddbx: &Path,
    program: &Path,
    args: &[&str],
    jitter: u32,
    replays: usize,
    blank: &dyn Fn(&mut Record),
) -> (TempDir, Output) {
    let blanked = |mut h: BTreeMap<String, Vec<Record>>| {
        h.values_mut().flatten().for_each(blank);
        h
    };
    let tmp = TempDir::new("rr");
    let rec = tmp.join("rec");
    let mut cmd = vec!["record", "-o", rec.to_str().unwrap_or_default(), "--"];
    let prog = program.to_str().unwrap_or_default();
    cmd.push(prog);
    cmd.extend_from_slice(args);
    let recorded = Run::new(ddbx)
        .args(&cmd)
        .env("DDBX_JITTER", jitter.to_string())
        .output();
    assert_eq!(recorded.code, 0, "record failed:\n{}", recorded.stderr);
    assert!(
        !recorded.stdout.is_empty(),
        "the program printed nothing under record"
    );
    let recorded_histories = blanked(histories(&rec));
    for i in 1..=replays {
        let out_dir = tmp.join(&format!("replay{i}"));
        let replayed = Run::new(ddbx)
            .args([
                "replay",
                "--history-out",
                out_dir.to_str().unwrap_or_default(),
                rec.to_str().unwrap_or_default(),
            ])
            .output();
        assert_eq!(
            replayed.code, recorded.code,
            "replay {i} exit code differs from the record's; stderr:\n{}",
            replayed.stderr
        );
        assert_eq!(
            replayed.stdout, recorded.stdout,
            "replay {i} printed something else than the record"
        );
        assert_same_histories(
            &recorded_histories,
            &blanked(histories(&out_dir)),
            &format!("record vs replay {i}"),
        );
    }
    (tmp, recorded)
}

/// Shows the race of `program args` natively (at least two different outputs in up to 30 runs
/// with `DDBX_JITTER=jitter`), then [`record_and_replay`]s it 3 times.
pub fn race(ddbx: &Path, program: &Path, args: &[&str], jitter: u32) -> (TempDir, Output) {
    let outputs = native_outputs(program, args, jitter, 2, 30);
    assert!(
        outputs.len() >= 2,
        "{}: 30 native runs all printed the same output, so this test would show nothing:\n{}",
        program.display(),
        outputs[0]
    );
    record_and_replay(ddbx, program, args, jitter, 3)
}

/// The Rust Figure 1 example (`examples/figure1-rust`, a standalone cargo package), built once
/// per test run in release mode; returns its binary.
pub fn figure1_rust() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let target = build_dir().join("figure1-rust-target");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "--release", "--manifest-path"])
            .arg(workspace().join("examples/figure1-rust/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .status()
            .unwrap_or_else(|e| panic!("cannot run cargo: {e}"));
        assert!(status.success(), "building examples/figure1-rust failed");
        target.join("release/figure1-rust")
    })
}
