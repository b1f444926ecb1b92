//! Builds the preload (`libddbx_preload.so`) with a nested `cargo build` and hands its path to
//! the crate as `DDBX_PRELOAD_SO`, so that `ddbx` embeds it and needs nothing else installed.
//!
//! The nested build uses its own target directory under `OUT_DIR` (no lock shared with the
//! outer build), the release profile with `panic = "abort"`, and a clean environment: only
//! the variables that locate the toolchain, the registry and the network are passed on, never
//! the outer build's `RUSTFLAGS`, target directory or build-script variables.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Variables the nested cargo keeps; everything else of the outer build is dropped.
const KEEP: &[&str] = &[
    "PATH",
    "HOME",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "TMPDIR",
    "CARGO_NET_OFFLINE",
    "CARGO_HTTP_PROXY",
    "CARGO_HTTP_CAINFO",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "NO_PROXY",
    "no_proxy",
];

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env("OUT_DIR"));
    let workspace = manifest_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let preload = workspace.join("preload");
    let wire = workspace.join("supervisor").join("wire");
    println!("cargo:rerun-if-env-changed=DDBX_SKIP_PRELOAD_BUILD");
    // A directory here means "any file below it" to cargo.
    for dir in [&preload, &wire] {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        workspace.join("Cargo.lock").display()
    );

    let embedded = out_dir.join("libddbx_preload.so");
    if !preload.join("Cargo.toml").exists() || std::env::var_os("DDBX_SKIP_PRELOAD_BUILD").is_some()
    {
        // Built outside the workspace (or on request): embed nothing; at run time ddbx then
        // asks for DDBX_PRELOAD.
        println!(
            "cargo:warning=ddbx: the preload is not embedded (no {} or DDBX_SKIP_PRELOAD_BUILD set): set DDBX_PRELOAD at run time",
            preload.display()
        );
        write_or_die(&embedded, b"");
        println!("cargo:rustc-env=DDBX_PRELOAD_SO={}", embedded.display());
        println!("cargo:rustc-env=DDBX_PRELOAD_FNV={:016x}", fnv1a(b""));
        return;
    }

    let target_dir = out_dir.join("preload-target");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .env_clear()
        .args([
            "build",
            "--release",
            "-p",
            "ddbx-preload",
            "--manifest-path",
        ])
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort");
    for name in KEEP {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    let status = command.status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => die(&format!(
            "building the preload (nested `cargo build -p ddbx-preload`) failed: {s}"
        )),
        Err(e) => die(&format!("cannot run cargo to build the preload: {e}")),
    }
    let built = target_dir.join("release").join("libddbx_preload.so");
    match std::fs::read(&built) {
        Ok(bytes) => {
            write_or_die(&embedded, &bytes);
            // Hashed here, not at each start of ddbx (15 MB: about 20 ms).
            println!("cargo:rustc-env=DDBX_PRELOAD_FNV={:016x}", fnv1a(&bytes));
        }
        Err(e) => die(&format!(
            "expected {} after building the preload: {e}",
            built.display()
        )),
    }
    println!("cargo:rustc-env=DDBX_PRELOAD_SO={}", embedded.display());
}

/// FNV-1a, 64 bits: `ddbx_supervisor::session::runtime_dir::fnv1a` (a unit test of
/// `ddbx/src/preload.rs` checks that both agree on the embedded bytes).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| die(&format!("cargo did not set {name}")))
}

fn write_or_die(path: &Path, bytes: &[u8]) {
    // Only rewrite when different, so that the crate is not rebuilt for nothing.
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return;
    }
    if let Err(e) = std::fs::write(path, bytes) {
        die(&format!("cannot write {}: {e}", path.display()));
    }
}

fn die(message: &str) -> ! {
    eprintln!("ddbx build: {message}");
    std::process::exit(1);
}
