//! A recording holds the program's environment and the bytes its outside peers sent: it is
//! its owner's only (directory 0700, files 0600); `record` names the variables it kept whose
//! names look secret, and `--env-exclude` leaves variables out (replay then takes them from
//! its own environment, and refuses to start without them).

use ddbx_tests::{Ddbx, TempDir, path_str, progs};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// Every directory and file under `dir`, with its mode bits.
fn modes(dir: &Path) -> Vec<(String, u32)> {
    let mut out = vec![(dir.display().to_string(), mode(dir))];
    for entry in std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            out.extend(modes(&path));
        } else {
            out.push((path.display().to_string(), mode(&path)));
        }
    }
    out
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// A shell that prints the secret, so that record and replay show what the program saw.
const PRINT_SECRET: &str = "echo \"key=$AWS_SECRET_ACCESS_KEY\"";

#[test]
fn a_recording_is_private_and_names_the_secrets_it_keeps() {
    let tmp = TempDir::new("private");
    let rec = tmp.join("rec");
    let out = DDBX
        .record(&rec, &progs().join("accept_race"), &[])
        .env("AWS_SECRET_ACCESS_KEY", "hunter2")
        .success();
    assert!(
        out.stderr.contains("look secret: AWS_SECRET_ACCESS_KEY"),
        "{}",
        out.stderr
    );
    let all = modes(&rec);
    assert!(all.len() >= 5, "{all:?}");
    for (path, mode) in &all {
        let private = if Path::new(path).is_dir() {
            0o700
        } else {
            0o600
        };
        assert_eq!(*mode, private, "{path} is {mode:o}: {all:?}");
    }
    // An empty directory given with -o is made private too.
    let given = tmp.join("given");
    std::fs::create_dir(&given).unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&given, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    DDBX.record(&given, Path::new("/bin/true"), &[]).success();
    assert_eq!(mode(&given), 0o700);
}

#[test]
fn env_exclude_leaves_a_variable_out_and_replay_asks_for_it() {
    let tmp = TempDir::new("exclude");
    let rec = tmp.join("rec");
    let out = DDBX
        .run([
            "record",
            "--env-exclude",
            "AWS_*",
            "-o",
            path_str(&rec),
            "--",
        ])
        .args(["/bin/sh", "-c", PRINT_SECRET])
        .env("AWS_SECRET_ACCESS_KEY", "hunter2")
        .success();
    // The program had it; the recording does not, and says nothing about secrets.
    assert_eq!(out.stdout, "key=hunter2\n");
    assert!(!out.stderr.contains("look secret"), "{}", out.stderr);
    let manifest = std::fs::read_to_string(rec.join("manifest.ron")).unwrap_or_default();
    assert!(!manifest.contains("hunter2"), "{manifest}");
    assert!(manifest.contains("AWS_SECRET_ACCESS_KEY"), "{manifest}");
    // Replay without it: refused, naming it.
    DDBX.run(["replay", path_str(&rec)])
        .output()
        .assert_exit(2, &["missing AWS_SECRET_ACCESS_KEY"]);
    // With it: the program sees it again.
    let replayed = DDBX
        .run(["replay", path_str(&rec)])
        .env("AWS_SECRET_ACCESS_KEY", "hunter2")
        .success();
    assert_eq!(replayed.stdout, "key=hunter2\n");
}
