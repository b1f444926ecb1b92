//! `--stop-if` at its edges (issue #11, items 2 and 8): a predicate of 1,000 conditions halts
//! where `ddbx inf` says (39 of them used to hang the replay at 0% CPU: the predicate did not
//! fit the message that carried it to the LDs), and a lone disjunction is reported where it
//! first holds while the replay runs to its end, as README.md says.

use ddbx_tests::{Ddbx, TempDir, path_str, progs};

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// A recording of `chatter 1 200`: a server (p1), a client and its child (p2, p3; which is
/// which may change between recordings, so the predicates below treat them alike).
fn chatter_recording(tmp: &TempDir) -> std::path::PathBuf {
    let rec = tmp.join("rec");
    DDBX.record(&rec, &progs().join("chatter"), &["1", "200"])
        .success();
    rec
}

#[test]
fn a_stop_if_of_a_thousand_conditions_halts_where_inf_says() {
    let tmp = TempDir::new("long-pred");
    let rec = chatter_recording(&tmp);
    // p1, p2, p3 in turn, each a little further: the last ones decide the cut.
    let conditions: Vec<String> = (0..1000)
        .map(|i| format!("p{}.events >= {}", 1 + i % 3, 1 + i / 10))
        .collect();
    let predicate = conditions.join(" && ");
    DDBX.halts_where_inf_says(&rec, &predicate);
}

#[test]
fn a_lone_disjunction_is_reported_where_it_first_holds_and_the_replay_runs_to_its_end() {
    let tmp = TempDir::new("lone-disj");
    let rec = chatter_recording(&tmp);
    let predicate = "p2.events == 5 || p3.events == 5";
    let out = DDBX
        .run(["replay", path_str(&rec), "--stop-if", predicate])
        .output();
    // The program's own status (chatter exits 0), not a usage error: nothing is refused.
    out.assert_exit(
        0,
        &[
            "is a disjunction over p2 and p3",
            "first holds at",
            "replay reached the recorded end",
        ],
    );
    assert!(!out.stderr.contains("ddbx: halted"), "{}", out.stderr);
}
