//! Corrupted recordings through the real binary: a recording of `accept_race` (a server and two
//! clients) is mutated by the fuzzer's mutations (`tests/fuzz/`), one file per case (the
//! manifest or one history), and `ddbx show`, `ddbx races` (the offline analyses) and `ddbx replay` run on it with a time limit.
//! Each must exit 0 (the change still makes a valid recording), 102 naming the file that is
//! wrong and where, or, for a replay only, 101 with a divergence that names the actor and what
//! the record had; never a panic, never another code, never a hang.
//!
//! `DDBX_FUZZ_RECORDINGS` cases (default 200), seed `DDBX_FUZZ_SEED` (default 1).

use ddbx_fuzz::{Mutator, Rng, Target};
use ddbx_tests::{Ddbx, Output, TempDir, env_number, panic_message, path_str, progs};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// What one command did with one corrupted recording, or why that is wrong.
fn judge(command: &str, out: &Output) -> Result<&'static str, String> {
    let said = |s: &str| out.stderr.contains(s);
    if said("panicked at") {
        return Err(format!("{command} panicked (exit {})", out.code));
    }
    match out.code {
        0 => Ok("0"),
        // Where (the file and its line, or the events that contradict each other), and what
        // was wrong.
        102 if said("/rec")
            && (said(".ron:")
                || said("missing")
                || said("at line")
                || said("expected")
                || said("inconsistent")) =>
        {
            Ok("102")
        }
        // A change that keeps the recording valid but not what the program does: the
        // divergence names the actor and what the record had.
        101 if command == "replay" && said("replay diverged: p") => Ok("101 diverged"),
        // The manifest's command names a program that is not there, or a directory that is
        // not there for it to run in (2, as for a program not found).
        2 if command == "replay" && said("no such program") => Ok("2 no program"),
        2 if command == "replay" && said("which is not a directory here") => Ok("2 no cwd"),
        code => Err(format!(
            "{command} exited {code} without the message that code needs"
        )),
    }
}

/// One case: `file` of the recording replaced by `bytes`, then `show`, `races` and `replay`.
fn case(rec: &Path, file: &Path, bytes: &[u8]) -> Result<Vec<&'static str>, String> {
    let path = rec.join(file);
    let original = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let r = path_str(rec);
    let mut outcomes = Vec::new();
    let mut result = Ok(());
    for (command, args) in [
        ("show", vec!["show", r, "p1"]),
        ("races", vec!["races", r]),
        ("replay", vec!["replay", r]),
    ] {
        let run = DDBX.run(&args).limit(Duration::from_secs(30));
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.output())) {
            Ok(out) => match judge(command, &out) {
                Ok(o) => outcomes.push(o),
                Err(why) => {
                    result = Err(format!("{why}\nstderr:\n{}", out.stderr));
                    break;
                }
            },
            Err(p) => {
                result = Err(format!("{command}: {}", panic_message(&*p)));
                break;
            }
        }
    }
    std::fs::write(&path, original).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    result.map(|()| outcomes)
}

#[test]
fn corrupted_recordings_are_refused_never_a_panic_or_a_hang() {
    let tmp = TempDir::new("fuzz-recordings");
    let rec = tmp.join("rec");
    DDBX.record(&rec, &progs().join("accept_race"), &[])
        .success();
    let mut files: Vec<PathBuf> = vec![PathBuf::from("manifest.ron")];
    let mut names: Vec<PathBuf> = std::fs::read_dir(rec.join("history"))
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| Path::new("history").join(e.file_name()))
        .collect();
    names.sort();
    files.extend(names);
    let original: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(rec.join(f)).unwrap_or_default())
        .collect();
    let manifest = Mutator::new(
        Target::Manifest.tokens(),
        Target::Manifest.nesting(),
        &original[..1],
    );
    let history = Mutator::new(
        Target::History.tokens(),
        Target::History.nesting(),
        &original[1..],
    );
    let cases = env_number("DDBX_FUZZ_RECORDINGS", 200);
    let seed = env_number("DDBX_FUZZ_SEED", 1);
    let mut rng = Rng::new(seed);
    let mut tally: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    for i in 0..cases {
        let which = rng.below(files.len());
        let bytes = if which == 0 {
            manifest.mutate(&mut rng, &original[..1])
        } else {
            history.mutate(&mut rng, &original[which..=which])
        };
        match case(&rec, &files[which], &bytes) {
            Ok(outcomes) => *tally.entry(outcomes.join(" / ")).or_default() += 1,
            Err(why) => {
                // Kept for whoever reads the failure (the temp dir goes with the test).
                let keep = std::env::temp_dir().join(format!(
                    "ddbx-fuzz-recording-seed{seed}-case{i}-{}",
                    files[which].display().to_string().replace('/', "-")
                ));
                let _ = std::fs::write(&keep, &bytes);
                failures.push(format!(
                    "case {i} ({} mutated, saved as {}): {why}",
                    files[which].display(),
                    keep.display()
                ));
            }
        }
    }
    eprintln!(
        "{cases} corrupted recordings, seed {seed}: show / races / replay outcomes {tally:?}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        tally.keys().any(|k| k.starts_with("102")),
        "no case was refused: the mutations did nothing? {tally:?}"
    );
}
