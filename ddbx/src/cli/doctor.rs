//! `ddbx doctor`: checks what makes a record fail or lie on this machine, and says how to fix
//! it.
//!
//! The checks, in order: `/proc` is readable (the GD tells an exec from a reused pid by
//! `/proc/<pid>/stat`); the runtime directory can be made (`$TMPDIR`, else `/dev/shm`, else
//! `/tmp`: the GD's socket and state files); the cache directory holds the preload library; the preload loads
//! in a dynamically linked test program, recorded for real (`true` from `PATH`, one actor,
//! its `Start` event); with `--uid N`, the preload library and the runtime directory are
//! usable by a debuggee that runs as uid N (a server that drops privileges); with a
//! PROGRAM, that it is dynamically linked and does not use io_uring; the kernel's
//! `ptrace_scope`, which matters only for `gdb pN` at the prompt.
//!
//! `--json` prints `{"ok": bool, "checks": [{"check", "status": "ok" | "problem" | "note",
//! "detail", "fix": null | "…"}]}`. Exit code 0 when no check found a problem, 1 otherwise.

use crate::api::{Messages, RecordOptions, record};
use crate::error::Error;
use crate::term;
use ddbx_supervisor::session::RuntimeDir;
use ddbx_supervisor::wire::elf;
use serde_json::json;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const AFTER_HELP: &str = "\
Examples:
  ddbx doctor                      check this machine
  ddbx doctor ./server             also check that ./server can be recorded
  ddbx doctor --uid 33 ./server    also check for a server that switches to uid 33
  ddbx doctor --json

Exit code: 0 when every check passed (notes aside), 1 when one found a problem.

--json prints {\"ok\": bool, \"checks\": [{\"check\", \"status\": \"ok\"|\"problem\"|\"note\",
\"detail\", \"fix\"}]}.";

/// Arguments of `ddbx doctor`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also check what a debuggee running as this uid needs (a server that drops privileges).
    #[arg(long, value_name = "UID")]
    pub uid: Option<u32>,
    /// A program to check: dynamically linked, no io_uring (looked up in PATH).
    #[arg(value_name = "PROGRAM")]
    pub program: Option<String>,
}

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Problem,
    Note,
}

/// One check's result.
struct Check {
    name: &'static str,
    status: Status,
    detail: String,
    fix: Option<String>,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn problem(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Problem,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn note(name: &'static str, detail: impl Into<String>, fix: Option<String>) -> Check {
        Check {
            name,
            status: Status::Note,
            detail: detail.into(),
            fix,
        }
    }
}

/// Runs `ddbx doctor`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    let mut checks = vec![proc_readable()];
    let runtime = runtime_dir(&mut checks);
    checks.push(cache_dir());
    checks.push(preload_loads());
    if let Some(uid) = args.uid {
        checks.extend(other_uid(uid, runtime.as_ref().map(RuntimeDir::path)));
    }
    if let Some(program) = &args.program {
        checks.push(program_check(program));
    }
    checks.push(ptrace_scope());
    let ok = checks.iter().all(|c| c.status != Status::Problem);
    if args.json {
        let list: Vec<serde_json::Value> = checks
            .iter()
            .map(|c| {
                json!({
                    "check": c.name,
                    "status": match c.status {
                        Status::Ok => "ok",
                        Status::Problem => "problem",
                        Status::Note => "note",
                    },
                    "detail": c.detail,
                    "fix": c.fix,
                })
            })
            .collect();
        println!("{}", json!({"ok": ok, "checks": list}));
    } else {
        print_text(&checks, ok);
    }
    Ok(if ok { 0 } else { 1 })
}

/// The checks as text, one per line (and the fix under a problem or a note).
fn print_text(checks: &[Check], ok: bool) {
    use std::io::Write;
    let mut out = anstream::stdout();
    for c in checks {
        let (word, style) = match c.status {
            Status::Ok => ("ok     ", term::HALT),
            Status::Problem => ("PROBLEM", term::PROBLEM),
            Status::Note => ("note   ", term::NOTE),
        };
        let _ = writeln!(out, "{} {}: {}", term::paint(style, word), c.name, c.detail);
        if let Some(fix) = &c.fix {
            let _ = writeln!(out, "        fix: {fix}");
        }
    }
    let _ = writeln!(
        out,
        "{}",
        if ok {
            "ddbx can record and replay on this machine"
        } else {
            "ddbx: a check found a problem (see PROBLEM above)"
        }
    );
}

/// `/proc/self/stat` is readable and has the start time (field 22).
fn proc_readable() -> Check {
    const NAME: &str = "/proc";
    match std::fs::read_to_string("/proc/self/stat") {
        Ok(stat)
            if stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.split_whitespace().count() >= 20) =>
        {
            Check::ok(
                NAME,
                "readable (process start times tell an exec from a reused pid)",
            )
        }
        Ok(_) => Check::problem(
            NAME,
            "/proc/self/stat has no start time",
            "mount procfs on /proc (mount -t proc proc /proc)",
        ),
        Err(e) => Check::problem(
            NAME,
            format!("cannot read /proc/self/stat: {e}"),
            "mount procfs on /proc (mount -t proc proc /proc), or run outside a sandbox that hides it",
        ),
    }
}

/// The runtime directory can be made; returns one (removed when dropped), made as every
/// session makes its own.
fn runtime_dir(checks: &mut Vec<Check>) -> Option<RuntimeDir> {
    const NAME: &str = "runtime directory";
    match RuntimeDir::create() {
        Ok(dir) => {
            let parent = dir.path().parent().map(Path::to_path_buf);
            checks.push(Check::ok(
                NAME,
                format!(
                    "sessions make theirs in {} (the GD socket, the state files)",
                    parent.as_deref().unwrap_or(Path::new("/tmp")).display()
                ),
            ));
            Some(dir)
        }
        Err(e) => {
            checks.push(Check::problem(
                NAME,
                format!("cannot make one: {e}"),
                "set TMPDIR to a short, writable directory (or make /tmp writable)",
            ));
            None
        }
    }
}

/// `${XDG_CACHE_HOME:-$HOME/.cache}/ddbx`: a directory ddbx can write the preload into and
/// read it back from.
fn cache_dir() -> Check {
    const NAME: &str = "cache directory";
    let Some(dir) = crate::preload::cache_dir() else {
        return Check::note(
            NAME,
            "neither XDG_CACHE_HOME nor HOME is set: each session writes the preload into its runtime directory",
            Some("set HOME or XDG_CACHE_HOME".into()),
        );
    };
    let fix = format!(
        "make {} a directory you can write and read (or set XDG_CACHE_HOME elsewhere)",
        dir.display()
    );
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return Check::problem(NAME, format!("cannot create {}: {e}", dir.display()), fix);
    }
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    let result = std::fs::write(&probe, b"ddbx")
        .and_then(|()| std::fs::read(&probe))
        .and_then(|bytes| std::fs::read_dir(&dir).map(|_| bytes));
    let _ = std::fs::remove_file(&probe);
    match result {
        Ok(bytes) if bytes == b"ddbx" => Check::ok(NAME, format!("{} is usable", dir.display())),
        Ok(_) => Check::problem(
            NAME,
            format!("{} gives back other bytes", dir.display()),
            fix,
        ),
        Err(e) => Check::problem(NAME, format!("{} is not usable: {e}", dir.display()), fix),
    }
}

/// Records `true` (a dynamically linked program from PATH) for real: one actor, with events.
fn preload_loads() -> Check {
    const NAME: &str = "preload";
    let out = std::env::temp_dir().join(format!("ddbx-doctor-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let recorded = record(RecordOptions {
        command: vec!["true".into()],
        out_dir: Some(out.clone()),
        messages: Messages::Quiet,
        ..Default::default()
    });
    let events = std::fs::read_to_string(out.join("history/p1.ron"))
        .map(|text| text.lines().count().saturating_sub(1))
        .unwrap_or(0);
    let _ = std::fs::remove_dir_all(&out);
    let fix = "set DDBX_PRELOAD to a libddbx_preload.so built for this machine, or reinstall ddbx";
    match recorded {
        Ok(outcome) if outcome.actors.len() == 1 && events > 0 => Check::ok(
            NAME,
            format!(
                "loads in a dynamically linked program (`true` recorded: 1 actor, {events} events)"
            ),
        ),
        Ok(outcome) => Check::problem(
            NAME,
            format!(
                "`true` recorded {} actors and {events} events, expected 1 actor with events: {}",
                outcome.actors.len(),
                outcome.messages.join("; ")
            ),
            fix,
        ),
        Err(e) => Check::problem(NAME, format!("recording `true` failed: {e}"), fix),
    }
}

/// What a debuggee running as `uid` needs: the preload library readable, and the runtime
/// directory (the GD's socket) reachable.
fn other_uid(uid: u32, runtime: Option<&Path>) -> Vec<Check> {
    const NAME: &str = "another uid";
    let mut checks = Vec::new();
    let preload = RuntimeDir::create()
        .map_err(|e| e.to_string())
        .and_then(|dir| crate::preload::locate(dir.path()).map_err(|e| e.to_string()));
    match preload {
        Ok(path) => match blocked_for(uid, &path, 0o4) {
            None => checks.push(Check::ok(
                NAME,
                format!("uid {uid} can read the preload {}", path.display()),
            )),
            Some(dir) => checks.push(Check::problem(
                NAME,
                format!(
                    "uid {uid} cannot read the preload {}: {} is closed to it",
                    path.display(),
                    dir.display()
                ),
                "set XDG_CACHE_HOME to a directory every uid can read (e.g. /var/cache/ddbx, mode 755)",
            )),
        },
        Err(e) => checks.push(Check::problem(NAME, e, "see the preload check")),
    }
    if let Some(runtime) = runtime
        && let Some(dir) = blocked_for(uid, &runtime.join("gd.sock"), 0o2)
    {
        checks.push(Check::problem(
            NAME,
            format!(
                "a process of uid {uid} cannot reach the GD socket: {} is closed to it, so it \
                 cannot join the session (the record then fails, exit 103)",
                dir.display()
            ),
            "make the runtime directory's parent ($TMPDIR or /tmp) traversable by every uid",
        ));
    }
    checks
}

/// The first directory on the way to `path` that `uid` cannot search, or `path` itself if it
/// lacks `want` (0o4 read, 0o2 write) for `uid` (`None`: usable). Judged by the mode bits:
/// the owner's for `uid`'s own files, else "other" (groups are not looked up).
fn blocked_for(uid: u32, path: &Path, want: u32) -> Option<PathBuf> {
    if uid == 0 {
        return None;
    }
    let allows = |meta: &std::fs::Metadata, bits: u32| {
        let mode = meta.mode();
        let granted = if meta.uid() == uid { mode >> 6 } else { mode };
        granted & bits == bits
    };
    let mut dir = PathBuf::from("/");
    for part in path.parent()?.components().skip(1) {
        dir.push(part);
        match std::fs::metadata(&dir) {
            Ok(meta) if allows(&meta, 0o1) => {}
            _ => return Some(dir),
        }
    }
    match std::fs::metadata(path) {
        Ok(meta) if !allows(&meta, want) => Some(path.to_path_buf()),
        _ => None,
    }
}

/// PROGRAM is dynamically linked and does not use io_uring.
fn program_check(name: &str) -> Check {
    const NAME: &str = "program";
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let path = match crate::resolve_program(name, std::env::var("PATH").ok().as_deref(), &cwd) {
        Ok(path) => path,
        Err(e) => return Check::problem(NAME, e.to_string(), "give a program that exists"),
    };
    let mut bytes = Vec::new();
    if let Err(e) =
        std::fs::File::open(&path).and_then(|f| f.take(64 << 20).read_to_end(&mut bytes))
    {
        return Check::problem(
            NAME,
            format!("cannot read {}: {e}", path.display()),
            "check its permissions",
        );
    }
    let shown = path.display();
    if bytes.starts_with(b"#!") {
        let interpreter = bytes[2..]
            .split(|b| *b == b'\n')
            .next()
            .map(|l| String::from_utf8_lossy(l).trim().to_string())
            .unwrap_or_default();
        return Check::ok(
            NAME,
            format!("{shown} is a script for `{interpreter}` (check that program too)"),
        );
    }
    let head = &bytes[..bytes.len().min(elf::HEADER_BYTES)];
    match elf::is_static(head) {
        Some(true) => Check::problem(
            NAME,
            format!(
                "{shown} is statically linked: it does not load the preload, so none of its calls would be recorded"
            ),
            "record a dynamically linked build of it",
        ),
        None => Check::note(
            NAME,
            format!("{shown} is not an ELF program ddbx knows"),
            None,
        ),
        Some(false) if elf::is_go(head) => Check::problem(
            NAME,
            format!(
                "{shown} is a Go program: the Go runtime makes its system calls without libc, so the preload sees none of them"
            ),
            "ddbx records programs that make their calls through libc (C, C++, Rust, Python, …)",
        ),
        Some(false) if uses_io_uring(&bytes) => Check::problem(
            NAME,
            format!(
                "{shown} uses io_uring: its socket I/O bypasses libc, so the preload does not see it"
            ),
            "record a build without io_uring (most programs can turn it off)",
        ),
        Some(false) => Check::ok(
            NAME,
            format!("{shown} is dynamically linked, no io_uring seen"),
        ),
    }
}

/// Whether an ELF file names io_uring (liburing, or the io_uring system calls' names).
fn uses_io_uring(bytes: &[u8]) -> bool {
    [&b"liburing"[..], b"io_uring_setup", b"io_uring_enter"]
        .iter()
        .any(|needle| bytes.windows(needle.len()).any(|w| w == *needle))
}

/// The kernel's Yama `ptrace_scope`: only `gdb pN` at the prompt cares.
fn ptrace_scope() -> Check {
    const NAME: &str = "ptrace_scope";
    let root = nix::unistd::geteuid().is_root();
    match std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .map(|s| s.trim().to_string())
    {
        Err(_) => Check::ok(NAME, "no Yama: `gdb pN` at the prompt can attach"),
        Ok(s) if s == "0" => Check::ok(NAME, "0: `gdb pN` at the prompt can attach"),
        Ok(s) if (s == "1" || s == "2") && root => Check::ok(
            NAME,
            format!("{s}, and ddbx runs as root: `gdb pN` at the prompt can attach"),
        ),
        Ok(s) => Check::note(
            NAME,
            format!(
                "{s}: `gdb pN` at the prompt cannot attach (record and replay are not affected)"
            ),
            Some("sysctl kernel.yama.ptrace_scope=0, or run ddbx as root for `gdb pN`".into()),
        ),
    }
}
