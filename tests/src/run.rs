//! Running commands in a test: each in its own process group, with a time limit, its output
//! captured, and nothing of it left running afterwards (even when the test fails).

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// What a finished command did.
#[derive(Debug, Clone)]
pub struct Output {
    /// The command, as failure messages name it.
    pub command: String,
    /// Exit code (128 + signal if killed).
    pub code: i32,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Output {
    /// Asserts that the command exited with `code` and said each of `needles` on stderr.
    pub fn assert_exit(&self, code: i32, needles: &[&str]) {
        assert_eq!(
            self.code, code,
            "{}: exit code; stdout:\n{}\nstderr:\n{}",
            self.command, self.stdout, self.stderr
        );
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "{}: stderr does not say {needle:?}:\n{}",
                self.command,
                self.stderr
            );
        }
    }
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
    pub fn new(program: impl AsRef<OsStr>) -> Run {
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
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Run {
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

    /// [`Run::output`], and the command must exit 0 (the failure names the command and shows its
    /// stderr).
    pub fn success(self) -> Output {
        let out = self.output();
        assert_eq!(
            out.code, 0,
            "{} exited with {}; stderr:\n{}",
            out.command, out.code, out.stderr
        );
        out
    }

    /// Runs to completion (killing the whole process group at the time limit, and failing the
    /// test then), and checks that nothing of the group is left running.
    pub fn output(mut self) -> Output {
        use std::os::unix::process::ExitStatusExt;
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
        let out_reader = read_all_in_thread(child.stdout.take());
        let err_reader = read_all_in_thread(child.stderr.take());
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
            command: format!("{:?}", self.cmd),
            code,
            stdout,
            stderr,
        }
    }
}

/// Reads `pipe` to its end in a thread of its own (so that a full stdout never blocks stderr).
fn read_all_in_thread(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

/// Kills a process group when dropped (a failing test leaves nothing running).
pub struct GroupKiller(pub i32);

impl Drop for GroupKiller {
    fn drop(&mut self) {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(-self.0, libc::SIGKILL) };
    }
}

/// Starts `cmd` as the leader of a new process group; the group is killed when the returned
/// [`GroupKiller`] is dropped. For tests that talk to a command while it runs.
pub fn spawn_in_group(cmd: &mut Command) -> (Child, GroupKiller) {
    let child = cmd
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let group = GroupKiller(child.id() as i32);
    (child, group)
}

/// The pids of the processes (other than zombies) in process group `pgid`.
pub fn group_pids(pgid: i32) -> Vec<i32> {
    group_members(pgid)
        .into_iter()
        .map(|(pid, _)| pid)
        .collect()
}

/// Waits up to `limit` for process group `pgid` to have no process left (zombies aside),
/// looking every 10 ms; returns what is still there at the limit (empty: all gone). For tests
/// that check how fast a session's processes go once something killed its supervisor.
pub fn group_left_after(pgid: i32, limit: std::time::Duration) -> Vec<(i32, String)> {
    let start = std::time::Instant::now();
    loop {
        let left = group_members(pgid);
        if left.is_empty() || start.elapsed() >= limit {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The processes (other than zombies) in process group `pgid`: pid, and `pid (command)` as
/// `/proc/PID/stat` names it.
fn group_members(pgid: i32) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // After the command (in parentheses): state ppid pgrp …
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            let command = stat.split(')').next().unwrap_or("");
            found.push((pid, format!("{command})")));
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
