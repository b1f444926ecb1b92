//! The embedding API on a halted replay (`ddbx::HaltingReplay`): wait for the halt with every
//! process alive, continue to a new predicate, continue to the end, or kill.
//!
//! Its own test binary: a replay session reaps with `waitpid(-1)`, so nothing else in this
//! process may have children while one runs (the recording and `ddbx inf` run before).

use ddbx::{HaltingReplay, Messages, OutcomeKind, ReplayOptions};
use ddbx_tests::{Ddbx, TempDir, cut_of, path_str};
use std::collections::BTreeMap;
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// The cut `ddbx inf` computes for `args` (which must hold).
fn inf(rec: &Path, args: &[&str]) -> BTreeMap<String, u64> {
    let v = DDBX.json(["inf", path_str(rec), "--json"].iter().chain(args));
    cut_of(&v["cut"]).unwrap_or_default()
}

/// The pids of the processes a halted state holds.
fn held(state: &ddbx::HaltedState) -> Vec<i32> {
    state
        .actors
        .iter()
        .filter(|a| a.status.starts_with("passive"))
        .filter_map(|a| a.pid)
        .collect()
}

fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[test]
fn a_halted_replay_resumes_and_is_killed_through_the_api() {
    let tmp = TempDir::new("halt-api");
    let rec = tmp.join("rec");
    DDBX.record_figure1(&rec);
    let ps = DDBX.json(["ps", path_str(&rec), "--json"]);
    let id_of = |program: &str| -> String {
        ps["actors"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| {
                a["command"][0]
                    .as_str()
                    .is_some_and(|c| c.ends_with(program))
            })
            .and_then(|a| a["id"].as_str())
            .unwrap_or_else(|| panic!("no {program}: {ps}"))
            .to_string()
    };
    let (client_a, client_b) = (id_of("/client_a"), id_of("/client_b"));
    let p1 = format!("{client_a}.x == 1");
    let p2 = format!("{client_b}.recvs >= 1");
    let inf1 = inf(&rec, &[&p1]);
    let options = ReplayOptions {
        dir: rec.clone(),
        messages: Messages::Quiet,
        stop_if: vec![p1.clone()],
        ..Default::default()
    };

    // Halt, go on to a new predicate, then to the end.
    let mut replay = HaltingReplay::start(options.clone()).unwrap_or_else(|e| panic!("{e}"));
    let first = replay
        .next_halt()
        .unwrap_or_else(|| panic!("no halt at `{p1}`"));
    let at = |state: &ddbx::wire::ActorId| state.to_string();
    let halted_a = first
        .cut
        .iter()
        .find(|(a, _)| at(a) == client_a)
        .map(|(_, k)| *k);
    assert_eq!(halted_a, inf1.get(&client_a).copied(), "{first:?}");
    let pids = held(&first);
    assert!(
        pids.iter().all(|&p| alive(p)),
        "halted processes are alive: {pids:?}"
    );
    replay.cont().unwrap_or_else(|e| panic!("{e}"));
    let second = replay.next_halt();
    // `client_a.x == 1` never becomes true again: cont ran to the end.
    assert!(second.is_none(), "{second:?}");
    let outcome = replay.finish().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        outcome.kind,
        OutcomeKind::ReachedEnd,
        "{:?}",
        outcome.messages
    );
    assert_eq!(outcome.halts.len(), 1);

    let mut replay = HaltingReplay::start(options.clone()).unwrap_or_else(|e| panic!("{e}"));
    let first = replay.next_halt().unwrap_or_else(|| panic!("no halt"));
    replay.stop_if(&p2).unwrap_or_else(|e| panic!("{e}"));
    let second = replay
        .next_halt()
        .unwrap_or_else(|| panic!("no halt at `{p2}`"));
    let b = second
        .actors
        .iter()
        .find(|a| a.actor.to_string() == client_b)
        .unwrap();
    assert!(b.vars.iter().any(|(n, v)| n == "recvs" && *v >= 1), "{b:?}");
    for (actor, k) in &first.cut {
        assert!(
            second.cut[actor] >= *k,
            "{actor} went back: {first:?} then {second:?}"
        );
    }
    let pids = held(&second);
    replay.kill().unwrap_or_else(|e| panic!("{e}"));
    let outcome = replay.finish().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.kind, OutcomeKind::Halted, "{:?}", outcome.messages);
    assert_eq!(outcome.halts.len(), 2);
    assert!(
        pids.iter().all(|&p| !alive(p)),
        "killed processes left: {pids:?}"
    );

    // A general predicate is refused as a new stop_if.
    let mut replay = HaltingReplay::start(options).unwrap_or_else(|e| panic!("{e}"));
    assert!(replay.next_halt().is_some());
    let bad = format!("{client_a}.x == 1 || {client_b}.recvs == 1");
    assert!(replay.stop_if(&bad).is_err());
    let outcome = replay.finish().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.kind, OutcomeKind::Halted);
}
