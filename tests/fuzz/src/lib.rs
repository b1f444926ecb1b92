//! ddbx's fuzzer: a small deterministic mutation fuzzer (no nightly toolchain, no new heavy
//! dependency) for the readers of untrusted input: the history reader, the manifest reader, the
//! predicate parser and the `--stop-at` parser.
//!
//! * `rng`: the seeded PRNG ([`Rng`]);
//! * `mutate`: the mutations ([`Mutator`]);
//! * `targets`: the entry points and what each promises ([`Target`]);
//! * `engine`: executions under `catch_unwind` with a time budget, minimisation ([`fuzz`]).
//!
//! `cargo test -p ddbx-fuzz` replays the corpus (`tests/fuzz/corpus/`, a directory per
//! target) and runs a short fuzz of each target with fixed seeds; `cargo run --release -p
//! ddbx-fuzz -- --target history --execs 1000000 --seed 1` is the long run.

mod engine;
mod mutate;
mod rng;
mod targets;

pub use engine::{
    Config, Exec, Finding, Report, Run, dump_input_on_abort, fnv, fuzz, minimise, replay,
};
pub use mutate::{MAX_INPUT, Mutator};
pub use rng::Rng;
pub use targets::{Target, shape};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long one input may take before it is a hang.
pub const BUDGET: Duration = Duration::from_secs(2);

/// The files of a corpus directory, sorted by name (none if it does not exist).
pub fn corpus(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// A run of `target` over its corpus with `seed`, `execs` executions in all.
pub fn config(target: Target, seed: u64, execs: u64, save: Option<PathBuf>) -> Config {
    let entries: Vec<Vec<u8>> = corpus(&target.corpus_dir())
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    Config {
        name: target.name().to_string(),
        run: Arc::new(move |input: &[u8]| target.run(input)),
        mutator: Mutator::new(target.tokens(), target.nesting(), &entries),
        seed,
        execs,
        budget: BUDGET,
        corpus: entries,
        save,
        progress: 0,
    }
}
