//! ddbx's test harness: one harness, many tiny real programs.
//!
//! * [`progs`] builds the C programs of `tests/progs/` (and the Figure 1 example) once per test
//!   run, with gcc, into the target directory.
//! * [`Run`] runs a command (natively or `ddbx …`) in its own process group with a time limit,
//!   captures its output, and checks afterwards that it left no process behind; a test that
//!   fails or times out still kills the whole group.
//! * [`Ddbx`] is the `ddbx` binary under test: it records, replays and checks that replays
//!   repeat the record ([`Ddbx::record_and_replay`]); [`Ddbx::race`] first shows natively that
//!   the program's race exists (runs differ, [`native_outputs`]) before it claims that replay
//!   removes it.
//! * [`histories`] loads a recording's histories with run details (pids, ports) blanked, so
//!   that a record and its replays can be compared record by record.
//! * [`Seeds`] runs a property test's cases (one generated program per seed) on several threads.
//! * Small pieces the tests share: [`parse_json`] and [`cut_of`] for ddbx's JSON, [`TempDir`],
//!   [`env_number`], [`panic_message`], [`path_str`].

mod cli;
mod histories;
mod json;
mod progs;
mod run;
mod seeds;

pub use cli::Ddbx;
pub use histories::{
    Histories, LoggedReceives, assert_same_histories, full_histories, histories, history_text,
    logged_receives, raw_histories,
};
pub use json::{cut_of, forked_child, parse_json};
pub use progs::{figure1, figure1_rust, progs};
pub use run::{
    GroupKiller, Output, Run, group_left_after, group_pids, native_outputs, native_outputs_with,
    spawn_in_group,
};
pub use seeds::{SeedOutcome, Seeds, SplitMix};

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The cargo target directory (`CARGO_TARGET_DIR`, else `target/` in the workspace).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

/// The `ddbx` binary the benchmarks measure: `DDBX_BIN`, else `target/release/ddbx` (built
/// with `cargo build --release -p ddbx` when missing).
pub fn release_ddbx() -> PathBuf {
    if let Some(bin) = std::env::var_os("DDBX_BIN") {
        return PathBuf::from(bin);
    }
    let bin = target_dir().join("release/ddbx");
    if !bin.exists() {
        eprintln!("{} missing, building it", bin.display());
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let built = std::process::Command::new(cargo)
            .args(["build", "--release", "-p", "ddbx"])
            .current_dir(workspace())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            built && bin.exists(),
            "cargo build --release -p ddbx failed"
        );
    }
    bin
}

/// A path as `&str`, for argument lists (the tests' paths are UTF-8; "" otherwise).
pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

/// The environment variable `name` as a number, or `default` when it is not set (a value that
/// is not a number fails the test).
pub fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// The message of a caught panic (what `catch_unwind` returned), for a failure report.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
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
    /// Removes the directory, unless `DDBX_TEST_KEEP` is set (to look at a flaky test's
    /// recordings after it failed).
    fn drop(&mut self) {
        if std::env::var_os("DDBX_TEST_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The number that ends a program's one-line output (`polls before the SIGTERM: 3`).
pub fn last_number(out: &str) -> u32 {
    out.trim()
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output {out:?}"))
}
