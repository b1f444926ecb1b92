//! `ddbx-fuzz --target NAME|all [--execs N] [--seed N] [--budget-ms N] [--no-save]`: the long
//! fuzz run (`--outcomes N` also prints the N most frequent outcomes; `--run FILE` instead runs
//! one input and prints its outcome). Prints executions, time, distinct outcomes, crashes and hangs per target; each
//! finding is minimised, printed, and saved to the target's corpus as `regress-HASH` (a
//! regression case the corpus replay of `cargo test -p ddbx-fuzz` runs from then on).
//! Exit status: 0 with no finding, 1 with findings, 2 on bad arguments.

use ddbx_fuzz::{Target, config, dump_input_on_abort, fuzz};
use std::time::Duration;

const USAGE: &str = "usage: ddbx-fuzz --target history|manifest|predicate|stop-at|all \
                     [--execs N] [--seed N] [--budget-ms N] [--no-save] [--outcomes N] [--run FILE]…";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut targets = Vec::new();
    let (mut execs, mut seed, mut budget, mut save) = (1_000_000u64, 1u64, 2000u64, true);
    let mut inputs: Vec<String> = Vec::new();
    let mut top = 0usize;
    let mut i = 0;
    let bad = |what: &str| -> ! {
        eprintln!("ddbx-fuzz: {what}\n{USAGE}");
        std::process::exit(2)
    };
    while i < args.len() {
        let value = |i: usize| -> &str {
            args.get(i + 1)
                .map(String::as_str)
                .unwrap_or_else(|| bad(&format!("{} needs a value", args[i])))
        };
        let number = |i: usize| -> u64 {
            let v = value(i);
            v.parse()
                .unwrap_or_else(|_| bad(&format!("{}: expected a number, found `{v}`", args[i])))
        };
        match args[i].as_str() {
            "--target" => {
                let name = value(i);
                if name == "all" {
                    targets.extend(Target::ALL);
                } else {
                    targets.push(
                        Target::from_name(name)
                            .unwrap_or_else(|| bad(&format!("no target `{name}`"))),
                    );
                }
                i += 1;
            }
            "--execs" => (execs, i) = (number(i), i + 1),
            "--seed" => (seed, i) = (number(i), i + 1),
            "--budget-ms" => (budget, i) = (number(i), i + 1),
            "--no-save" => save = false,
            "--outcomes" => (top, i) = (number(i) as usize, i + 1),
            "--run" => {
                (inputs, i) = (
                    {
                        let mut v = inputs;
                        v.push(value(i).to_string());
                        v
                    },
                    i + 1,
                )
            }
            other => bad(&format!("unknown argument `{other}`")),
        }
        i += 1;
    }
    if targets.is_empty() {
        bad("--target is required");
    }
    if !inputs.is_empty() {
        run_inputs(&targets, &inputs);
    }
    let mut findings = 0;
    for target in targets {
        let dir = target.corpus_dir();
        dump_input_on_abort(&std::env::temp_dir().join(format!(
            "ddbx-fuzz-{}-abort-{}",
            target.name(),
            std::process::id()
        )));
        let mut c = config(target, seed, execs, save.then(|| dir.clone()));
        c.budget = Duration::from_millis(budget);
        c.progress = (execs / 10).max(1);
        eprintln!(
            "ddbx-fuzz: {} from {} corpus entries in {}",
            target.name(),
            c.corpus.len(),
            dir.display()
        );
        let report = fuzz(&c);
        println!("{}", report.summary(target.name(), seed));
        let mut common: Vec<(&String, &u64)> = report.outcomes.iter().collect();
        common.sort_by(|a, b| b.1.cmp(a.1));
        for (outcome, n) in common.into_iter().take(top) {
            println!("  {n:>8}  {outcome}");
        }
        for f in report.crashes.iter().chain(&report.hangs) {
            findings += 1;
            println!(
                "  {}\n    input ({} bytes, minimised to {}): {:?}\n    saved: {}",
                f.what,
                f.input.len(),
                f.minimised.len(),
                String::from_utf8_lossy(&f.minimised[..f.minimised.len().min(400)]),
                f.saved
                    .as_ref()
                    .map_or("no".into(), |p| p.display().to_string())
            );
        }
    }
    std::process::exit(if findings == 0 { 0 } else { 1 });
}

/// `--run FILE…`: each file once through each target, its outcome printed (a panic is a
/// panic): reproducing a finding.
fn run_inputs(targets: &[Target], files: &[String]) -> ! {
    for target in targets {
        for file in files {
            let input = std::fs::read(file).unwrap_or_else(|e| {
                eprintln!("ddbx-fuzz: {file}: {e}");
                std::process::exit(2)
            });
            println!("{} {file}: {}", target.name(), target.run(&input));
        }
    }
    std::process::exit(0)
}
