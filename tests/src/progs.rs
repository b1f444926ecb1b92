//! The programs the tests run: the C programs of `tests/progs/` and the Figure 1 examples,
//! built once per test run into the target directory.

use crate::{target_dir, workspace};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Where built test programs go.
fn build_dir() -> PathBuf {
    target_dir().join("ddbx-test-progs")
}

/// One program to build: its name, its source and its extra gcc flags.
struct Build {
    name: String,
    source: PathBuf,
    flags: Vec<String>,
}

/// The built test programs: `progs().join("accept_race")`.
///
/// Every `tests/progs/*.c` is built with `gcc -O1 -Wall -Wextra -Werror` (plus the flags of its
/// `// link:` first line); `diverge.c` twice, as `diverge1` and `diverge2` (`-DVARIANT=1|2`).
/// The Figure 1 example is built with its Makefile into `figure1/`.
pub fn progs() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = build_dir();
        std::fs::create_dir_all(&out)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", out.display()));
        for build in builds() {
            compile(&out, &build);
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

/// What to build from `tests/progs/`.
fn builds() -> Vec<Build> {
    let src = workspace().join("tests/progs");
    let mut builds = Vec::new();
    let entries = std::fs::read_dir(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    for entry in entries.flatten() {
        let source = entry.path();
        if source.extension().is_none_or(|e| e != "c") {
            continue;
        }
        let name = source
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == "diverge" {
            for variant in ["1", "2"] {
                builds.push(Build {
                    name: format!("diverge{variant}"),
                    source: source.clone(),
                    flags: vec![format!("-DVARIANT={variant}")],
                });
            }
        } else {
            let flags = link_flags(&source);
            builds.push(Build {
                name,
                source,
                flags,
            });
        }
    }
    builds
}

/// Builds one program into `out` (through a temporary name, so that a concurrent test run never
/// sees half a binary).
fn compile(out: &Path, build: &Build) {
    let bin = out.join(&build.name);
    let tmp = out.join(format!(".{}.{}", build.name, std::process::id()));
    let (defines, libs): (Vec<&String>, Vec<&String>) =
        build.flags.iter().partition(|f| f.starts_with("-D"));
    let status = Command::new("gcc")
        .args(["-O1", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(workspace().join("preload/probe/include"))
        .arg("-o")
        .arg(&tmp)
        .args(defines)
        .arg(&build.source)
        .args(libs)
        .status()
        .unwrap_or_else(|e| panic!("cannot run gcc: {e}"));
    assert!(status.success(), "gcc failed on {}", build.source.display());
    std::fs::rename(&tmp, &bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
}

/// Extra gcc flags of a test program, from a first line `// link: -pthread …` (only
/// `-pthread`, `-rdynamic`, `-fno-pie`, `-no-pie` and `-l…` flags are accepted).
fn link_flags(source: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(source).unwrap_or_default();
    let first = text.lines().next().unwrap_or("");
    let Some(rest) = first.trim().strip_prefix("// link:") else {
        return vec![];
    };
    rest.split_whitespace()
        .map(|f| {
            assert!(
                f == "-pthread"
                    || f == "-rdynamic"
                    || f == "-fno-pie"
                    || f == "-no-pie"
                    || f.starts_with("-l"),
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
