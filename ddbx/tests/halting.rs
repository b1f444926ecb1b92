//! Halting at Inf(P) on the paper's Figure 1 (examples/figure1; paper 003 §4, DESIGN §4):
//! `x1 == 1 && x4 == 1` (client_a got server_y's answer, and the server_x child serving
//! client_a got its request) halts server_y right after its answer, leaves client_b before its
//! connect and its server_x child uncreated, and agrees with `ddbx inf`; `--stop-at` makes
//! server_x fork a child on demand; a predicate that never holds replays to the end; a
//! malformed one is a usage error. Several `--stop-if`: the primary is halted at, the others
//! reported where they first hold; `--trace` prints at each state where its condition becomes
//! true; the `(ddbx)` prompt, driven through a pipe, prints, switches the primary, continues,
//! and attaches gdb to a held process.

use ddbx_tests::{Ddbx, Output, TempDir, cut_of, parse_json, path_str, raw_histories};
use ddbx_wire::Record;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// A recording of Figure 1 and what the tests need to know about it.
struct Fig1 {
    _tmp: TempDir,
    rec: PathBuf,
    out: Output,
    client_a: String,
    client_b: String,
    server_y: String,
    server_x: String,
    /// The server_x children serving client_a and client_b.
    child_a: String,
    child_b: String,
    /// Whether server_x accepted client_b before client_a in this recording.
    b_first: bool,
    /// Each actor's parent.
    parent: BTreeMap<String, String>,
    histories: BTreeMap<String, Vec<Record>>,
}

impl Fig1 {
    fn record(tag: &str) -> Fig1 {
        let tmp = TempDir::new(tag);
        let rec = tmp.join("rec");
        let out = DDBX.record_figure1(&rec);
        let ps = DDBX.json(["ps", path_str(&rec), "--json"]);
        let mut program: BTreeMap<String, String> = BTreeMap::new();
        let mut parent = BTreeMap::new();
        for a in ps["actors"].as_array().cloned().unwrap_or_default() {
            let id = a["id"].as_str().unwrap_or_default().to_string();
            let cmd = a["command"][0].as_str().unwrap_or_default();
            let base = cmd.rsplit('/').next().unwrap_or(cmd).to_string();
            parent.insert(
                id.clone(),
                a["parent"].as_str().unwrap_or_default().to_string(),
            );
            program.insert(id, base);
        }
        let ids_of = |name: &str| -> Vec<String> {
            program
                .iter()
                .filter(|(_, p)| p.as_str() == name)
                .map(|(id, _)| id.clone())
                .collect()
        };
        let one = |name: &str| -> String {
            let ids = ids_of(name);
            assert_eq!(ids.len(), 1, "{name}: {ids:?} in {program:?}");
            ids[0].clone()
        };
        let (client_a, client_b, server_y) = (one("client_a"), one("client_b"), one("server_y"));
        let xs = ids_of("server_x");
        assert_eq!(xs.len(), 3, "server_x and its two children: {program:?}");
        let server_x = xs
            .iter()
            .find(|id| !xs.contains(&parent[*id]))
            .cloned()
            .unwrap_or_else(|| panic!("no server_x without a server_x parent: {program:?}"));

        // server_x's history as `show` gives it: each Accept names its peer, each Fork its
        // child; the child forked after the accept of client_a serves client_a.
        let show = DDBX.json(["show", path_str(&rec), &server_x, "--json"]);
        let mut serving: Vec<(String, String)> = Vec::new(); // (client, child)
        let mut last_peer: Option<String> = None;
        for e in show["events"].as_array().cloned().unwrap_or_default() {
            match e["kind"].as_str() {
                Some("Accept") => {
                    last_peer = e["peer"]["actor"].as_str().map(str::to_string);
                }
                Some("Fork") => {
                    let child = e["child"].as_str().unwrap_or_default().to_string();
                    let client = last_peer.take().unwrap_or_else(|| {
                        panic!("server_x forked {child} without an accept first: {show}")
                    });
                    serving.push((client, child));
                }
                _ => {}
            }
        }
        let child_of = |client: &str| -> String {
            serving
                .iter()
                .find(|(c, _)| c == client)
                .map(|(_, k)| k.clone())
                .unwrap_or_else(|| panic!("no server_x child serves {client}: {serving:?}"))
        };
        let (child_a, child_b) = (child_of(&client_a), child_of(&client_b));
        let b_first = serving.first().map(|(c, _)| c) == Some(&client_b);

        let histories = raw_histories(&rec);
        Fig1 {
            _tmp: tmp,
            rec,
            out,
            client_a,
            client_b,
            server_y,
            server_x,
            child_a,
            child_b,
            b_first,
            parent,
            histories,
        }
    }

    /// The 1-based number of `actor`'s first event that `is`.
    fn event_of(&self, actor: &str, is: impl Fn(&Record) -> bool) -> u64 {
        let records = &self.histories[actor];
        records
            .iter()
            .position(is)
            .map(|i| i as u64 + 1)
            .unwrap_or_else(|| panic!("{actor} has no such event: {records:?}"))
    }

    fn bystander(&self, actor: &str) -> bool {
        ddbx_wire::history::is_bystander(&self.histories[actor])
    }

    /// `ddbx inf --json` with these arguments: (holds, cut).
    fn inf(&self, args: &[&str]) -> (bool, BTreeMap<String, u64>) {
        let out = DDBX
            .run(["inf", path_str(&self.rec), "--json"])
            .args(args)
            .output();
        assert!(
            out.code == 0 || out.code == 1,
            "inf {args:?}: {}",
            out.stderr
        );
        let v = parse_json(&out.stdout, "ddbx inf --json");
        (
            v["holds"].as_bool().unwrap_or(false),
            cut_of(&v["cut"]).unwrap_or_default(),
        )
    }

    /// `ddbx inf --json` with these arguments, which must hold: the cut.
    fn inf_holding(&self, args: &[&str]) -> BTreeMap<String, u64> {
        let (holds, cut) = self.inf(args);
        assert!(holds, "inf {args:?}: never holds");
        cut
    }

    /// A halting replay ([`Fig1::halt`]) that must halt: its JSON and the halted cut.
    fn halted(&self, args: &[&str]) -> (Value, BTreeMap<String, u64>) {
        let (out, v) = self.halt(args);
        assert_eq!(
            v["outcome"], "halted",
            "{args:?}: {v}\nstderr: {}",
            out.stderr
        );
        let cut = cut_of(&v["cut"]).unwrap_or_else(|| panic!("no cut: {v}"));
        (v, cut)
    }

    /// A predicate that becomes true twice, and where the second time begins: client_a's
    /// `recvs != 1` holds at its creation, not after its first receive, and again from its
    /// second receive (the event number returned).
    fn true_twice(&self) -> (String, u64) {
        let a = &self.client_a;
        (format!("{a}.recvs != 1"), self.second_recv(a))
    }

    /// The event number of `actor`'s second receive.
    fn second_recv(&self, actor: &str) -> u64 {
        self.histories[actor]
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r, Record::Recv { .. }))
            .nth(1)
            .map(|(i, _)| i as u64 + 1)
            .unwrap_or_else(|| panic!("{actor} has no second Recv"))
    }

    /// A halting replay with these arguments, `--json --messages`: (output, its JSON).
    fn halt(&self, args: &[&str]) -> (Output, Value) {
        self.halt_with_input(args, None)
    }

    /// [`Fig1::halt`], with `input` piped to stdin (prompt commands) if given.
    fn halt_with_input(&self, args: &[&str], input: Option<&str>) -> (Output, Value) {
        let messages = self.rec.with_file_name(format!(
            "messages-{}.json",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let started = Instant::now();
        let mut run = DDBX
            .run([
                "replay",
                path_str(&self.rec),
                "--json",
                "--messages",
                path_str(&messages),
            ])
            .args(args);
        if let Some(input) = input {
            run = run.stdin(input);
        }
        let out = run.output();
        eprintln!(
            "replay {args:?}: exit {} in {:.2?}",
            out.code,
            started.elapsed()
        );
        let text = std::fs::read_to_string(&messages).unwrap_or_default();
        let v = parse_json(&text, "ddbx replay --json");
        let _ = std::fs::remove_file(&messages);
        (out, v)
    }

    /// Asserts that the halted cut equals inf's on every actor that can be held: not a
    /// bystander, and not an actor a bystander created that inf did not need created
    /// (bystanders run freely, so the shell may create its children early).
    fn assert_cut_agrees(&self, halted: &BTreeMap<String, u64>, inf: &BTreeMap<String, u64>) {
        let mut compared = 0;
        for (actor, &want) in inf {
            if self.bystander(actor) {
                continue;
            }
            let by_bystander = self.parent.get(actor).is_some_and(|p| {
                self.histories
                    .get(p)
                    .is_some_and(|h| ddbx_wire::history::is_bystander(h))
            });
            if by_bystander && want == 0 {
                continue;
            }
            assert_eq!(
                halted.get(actor),
                Some(&want),
                "{actor}: halted at {:?} events, inf says {want}\nhalted cut {halted:?}\ninf cut    {inf:?}",
                halted.get(actor)
            );
            compared += 1;
        }
        assert!(compared >= 4, "only {compared} actors compared: {inf:?}");
    }
}

/// The replay JSON's `predicates.<what>` list (`reports`, `traces`).
fn predicates(v: &Value, what: &str) -> Vec<Value> {
    v["predicates"][what]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The cut of every halt of a replay (`predicates.halts` of its JSON), in order.
fn halts(v: &Value) -> Vec<BTreeMap<String, u64>> {
    v["predicates"]["halts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(cut_of)
        .collect()
}

/// The halted state's entry for `actor`.
fn halted_actor<'a>(v: &'a Value, actor: &str) -> &'a Value {
    v["halted"]["actors"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["id"] == actor))
        .unwrap_or_else(|| panic!("no {actor} in the halted state: {}", v["halted"]))
}

#[test]
fn x1_and_x4_halts_where_the_paper_says() {
    let f = Fig1::record("halt-fig1");
    let pred = format!("{}.x == 1 && {}.x == 1", f.client_a, f.child_a);
    let inf_cut = f.inf_holding(&[&pred]);
    let (v, halted) = f.halted(&["--stop-if", &pred]);

    // client_a stops right after setting x (nobody needs anything more from it); the child
    // serving it, at or after its own x (its answer is needed by client_a's x).
    let a_x = f.event_of(
        &f.client_a,
        |r| matches!(r, Record::Probe { name, value: 1 } if name == "x"),
    );
    let k_x = f.event_of(
        &f.child_a,
        |r| matches!(r, Record::Probe { name, value: 1 } if name == "x"),
    );
    assert_eq!(
        halted.get(&f.client_a),
        Some(&a_x),
        "client_a {}: {halted:?}",
        f.client_a
    );
    assert!(
        halted.get(&f.child_a).is_some_and(|&n| n >= k_x),
        "child {} should have set x (its event {k_x}): {halted:?}",
        f.child_a
    );
    for (id, what) in [
        (&f.client_a, "client_a"),
        (&f.child_a, "the child serving client_a"),
    ] {
        assert_eq!(
            halted_actor(&v, id)["satisfied"],
            true,
            "{what} ({id}) is not reported satisfied: {}",
            halted_actor(&v, id)
        );
    }

    // server_y stops right after its answer to client_a.
    let y_send = f.event_of(&f.server_y, |r| matches!(r, Record::Send { .. }));
    let y = halted_actor(&v, &f.server_y);
    assert_eq!(
        y["events"].as_u64(),
        Some(y_send),
        "server_y {} should stop right after its Send (event {y_send}): {y}",
        f.server_y
    );
    assert!(
        !y["next"].as_str().unwrap_or_default().starts_with("Send"),
        "server_y's next event is a Send: {y}"
    );

    // client_b: not past its creation (next: its Connect), unless server_x served it first,
    // in which case server_x's first accept needed its connect, and nothing more.
    let b_connect = f.event_of(&f.client_b, |r| matches!(r, Record::Connect { .. }));
    let b = halted_actor(&v, &f.client_b);
    let child_b = halted_actor(&v, &f.child_b);
    if f.b_first {
        assert_eq!(
            b["events"].as_u64(),
            Some(b_connect),
            "client_b (served first): {b}"
        );
        // The child serving client_b was forked before client_a's: created, not run.
        assert_eq!(
            child_b["events"].as_u64(),
            Some(1),
            "child serving client_b: {child_b}"
        );
    } else {
        assert_eq!(b["events"].as_u64(), Some(b_connect - 1), "client_b: {b}");
        assert!(
            b["next"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Connect"),
            "client_b's next event is not its Connect: {b}"
        );
        assert_eq!(
            halted.get(&f.child_b).copied().unwrap_or(0),
            0,
            "the child serving client_b ({}) should not be created: {child_b}",
            f.child_b
        );
    }

    f.assert_cut_agrees(&halted, &inf_cut);
    // The same predicate in the paper's notation names the same actors.
    let paper = format!("x{} == 1 && x{} == 1", &f.client_a[1..], &f.child_a[1..]);
    let (_, inf_paper) = f.inf(&[&paper]);
    assert_eq!(inf_paper, inf_cut, "`{paper}` vs `{pred}`");
}

#[test]
fn stop_at_a_server_x_child_forks_it_on_demand() {
    let f = Fig1::record("halt-fig1-at");
    // The child that the x1 && x4 halt does not need: server_x must fork it on demand.
    let child = f.child_b.clone();
    // server_x's first Fork creates the child of the first client it accepted.
    let nth = if f.b_first { 0 } else { 1 };
    let records = &f.histories[&f.server_x];
    let fork = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Record::Fork { .. }))
        .nth(nth)
        .map(|(i, _)| i as u64 + 1)
        .unwrap_or_else(|| panic!("server_x has no Fork number {}: {records:?}", nth + 1));
    let at = format!("{child}:2");
    let inf_cut = f.inf_holding(&["--stop-at", &at]);
    let (_, halted) = f.halted(&["--stop-at", &at]);
    assert_eq!(halted.get(&child), Some(&2), "{child}: {halted:?}");
    assert_eq!(
        halted.get(&f.server_x),
        Some(&fork),
        "server_x {} should stop right after the fork of {child} (its event {fork}): {halted:?}",
        f.server_x
    );
    f.assert_cut_agrees(&halted, &inf_cut);
}

#[test]
fn a_predicate_that_never_holds_replays_to_the_end() {
    let f = Fig1::record("halt-fig1-never");
    let pred = format!("{}.x == 2", f.client_a);
    let (holds, _) = f.inf(&[&pred]);
    assert!(!holds, "inf: `{pred}` holds");
    let started = Instant::now();
    let out = DDBX
        .run(["replay", path_str(&f.rec), "--stop-if", &pred])
        .output();
    eprintln!(
        "replay --stop-if '{pred}': exit {} in {:.2?}",
        out.code,
        started.elapsed()
    );
    // It says that the predicate never holds, and that it ran to the end.
    out.assert_exit(0, &["never holds", "reached the recorded end"]);
    assert_eq!(
        out.stdout, f.out.stdout,
        "the replay printed something else"
    );
    // In JSON too.
    let (_, v) = f.halt(&["--stop-if", &pred]);
    assert_eq!(v["outcome"], "reached_end", "{v}");
    assert_eq!(v["exit_code"], 0, "{v}");
}

#[test]
fn a_malformed_predicate_is_a_usage_error_with_a_caret() {
    let f = Fig1::record("halt-fig1-bad");
    let out = DDBX
        .run([
            "replay",
            path_str(&f.rec),
            "--stop-if",
            "x1 == 1 && && x4 == 1",
        ])
        .output();
    out.assert_exit(2, &["^", "column"]);
    assert!(out.stdout.is_empty(), "the program ran: {}", out.stdout);
}

/// `ddbx inf` arguments that put every actor that can be held at least where `cut` has it.
fn floor_args(f: &Fig1, cut: &BTreeMap<String, u64>) -> Vec<String> {
    let mut args = Vec::new();
    for (actor, &k) in cut {
        if k > 0 && !f.bystander(actor) {
            args.push("--stop-at".to_string());
            args.push(format!("{actor}:{k}"));
        }
    }
    args
}

fn strings(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn trace_prints_where_its_condition_becomes_true() {
    let f = Fig1::record("trace-fig1");
    let a = &f.client_a;
    let (cond, second_recv) = f.true_twice();
    // A general condition: either server_x child got its request.
    let general = format!("{}.x == 1 || {}.x == 1", f.child_a, f.child_b);
    let (out, v) = f.halt(&[
        "--trace",
        &format!("{a}.recvs"),
        "--if",
        &cond,
        "--trace",
        &format!("{}.events", f.client_b),
        "--if",
        &general,
    ]);
    assert_eq!(v["outcome"], "reached_end", "{v}\nstderr: {}", out.stderr);
    let traces = predicates(&v, "traces");
    assert_eq!(traces.len(), 2, "{v}");

    // The conjunctive one: exactly at Inf(cond), then at the least state past client_a's
    // second receive where it holds, as `ddbx inf` computes them.
    let points = traces[0]["points"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        points.len(),
        2,
        "`{cond}` becomes true twice: {}",
        traces[0]
    );
    let (_, first) = f.inf(&[&cond]);
    let (_, second) = f.inf(&[&cond, "--stop-at", &format!("{a}:{second_recv}")]);
    assert_eq!(cut_of(&points[0]["cut"]), Some(first), "{}", traces[0]);
    assert_eq!(cut_of(&points[1]["cut"]), Some(second), "{}", traces[0]);
    assert_eq!(points[0]["value"], "0");
    assert_eq!(points[1]["value"], "2");
    let messages: Vec<String> = v["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m.as_str().map(String::from))
        .filter(|m| m.starts_with(&format!("ddbx: trace {a}.recvs = ")))
        .collect();
    assert_eq!(messages.len(), 2, "{:?}", v["messages"]);
    assert!(
        messages[0].contains("= 0 ") && messages[1].contains("= 2 "),
        "{messages:?}"
    );

    // The general one becomes true once (x is never unset), at a state where it holds and
    // where the child that set x has just done so.
    let points = traces[1]["points"].as_array().cloned().unwrap_or_default();
    assert_eq!(points.len(), 1, "{}", traces[1]);
    let at = cut_of(&points[0]["cut"]).unwrap_or_default();
    let x_of = |child: &str| {
        f.event_of(
            child,
            |r| matches!(r, Record::Probe { name, value: 1 } if name == "x"),
        )
    };
    let (xa, xb) = (x_of(&f.child_a), x_of(&f.child_b));
    let (ka, kb) = (at[&f.child_a], at[&f.child_b]);
    assert!(
        ka == xa && kb < xb || kb == xb && ka < xa,
        "`{general}` first seen at {at:?}: x set at {xa} in {} and {xb} in {}",
        f.child_a,
        f.child_b
    );
    assert_eq!(points[0]["value"], at[&f.client_b].to_string());
}

#[test]
fn several_stop_ifs_halt_at_the_primary_and_report_the_others() {
    let f = Fig1::record("halt-fig1-several");
    let p1 = format!("{}.x == 1 && {}.x == 1", f.client_a, f.child_a);
    let p2 = format!("{}.x == 1 || {}.x == 1", f.child_a, f.child_b);
    let p3 = format!("{}.sends == 1", f.server_y);
    let (_, inf1) = f.inf(&[&p1]);
    let (_, inf3) = f.inf(&[&p3]);
    let args = ["--stop-if", &p1, "--stop-if", &p2, "--stop-if", &p3];

    let (v, halted) = f.halted(&args);
    f.assert_cut_agrees(&halted, &inf1);
    let reports = predicates(&v, "reports");
    assert_eq!(reports.len(), 2, "{v}");
    assert_eq!(reports[0]["predicate"], p2.as_str());
    assert_eq!(reports[0]["kind"], "general");
    let at = cut_of(&reports[0]["cut"]).unwrap_or_else(|| panic!("`{p2}` never seen: {v}"));
    assert!(at[&f.child_a] >= 3 || at[&f.child_b] >= 3, "{at:?}");
    assert_eq!(reports[1]["predicate"], p3.as_str());
    assert_eq!(cut_of(&reports[1]["cut"]).as_ref(), Some(&inf3), "{v}");
    let text = v["messages"].to_string();
    assert!(
        text.contains(&format!("ddbx: also `{p2}` (general")),
        "{text}"
    );

    // --primary 3: halted at p3's Inf, p1 reported.
    let mut args3 = args.to_vec();
    args3.extend(["--primary", "3"]);
    let (v, halted) = f.halted(&args3);
    f.assert_cut_agrees(&halted, &inf3);
    let reports = predicates(&v, "reports");
    assert_eq!(reports[0]["predicate"], p1.as_str());
    assert_eq!(cut_of(&reports[0]["cut"]).as_ref(), Some(&inf1), "{v}");

    // A general predicate cannot be the primary.
    let out = DDBX
        .run(["replay", path_str(&f.rec)])
        .args(args)
        .args(["--primary", "2"])
        .output();
    out.assert_exit(2, &["cannot be halted at exactly"]);
}

#[test]
fn the_prompt_prints_switches_and_continues_through_a_pipe() {
    let f = Fig1::record("prompt-fig1");
    let p1 = format!("{}.x == 1 && {}.x == 1", f.client_a, f.child_a);
    // Monotone: once client_b has received, it stays so.
    let p2 = format!("{}.recvs >= 1", f.client_b);
    let input = format!(
        "print {}.x\nshow\ninfo\nswitch 2\ncont\ncont\nquit\n",
        f.client_a
    );
    let (out, v) = f.halt_with_input(
        &["--stop-if", &p1, "--stop-if", &p2, "--prompt"],
        Some(&input),
    );
    assert_eq!(
        v["outcome"], "reached_end",
        "{v}\nstdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("(ddbx) "), "no prompt: {}", out.stdout);
    assert!(
        out.stdout.contains(&format!("{}.x = 1", f.client_a)),
        "print: {}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(&format!("stop if 1: `{p1}` conjunctive  (primary)")),
        "info: {}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!("primary: `{p2}`")),
        "switch: {}",
        out.stdout
    );
    // The program's own output is all there (the replay ran to its end).
    for line in f.out.stdout.lines() {
        assert!(
            out.stdout.contains(line),
            "missing `{line}`:\n{}",
            out.stdout
        );
    }

    let halts = halts(&v);
    assert_eq!(halts.len(), 2, "two halts: {v}");
    let (_, inf1) = f.inf(&[&p1]);
    f.assert_cut_agrees(&halts[0], &inf1);
    // After `switch 2`, `cont` halts at the least state from the first halt where p2 holds.
    let floor = floor_args(&f, &halts[0]);
    let mut inf_args = vec![p2.as_str()];
    inf_args.extend(strings(&floor));
    let (holds, inf2) = f.inf(&inf_args);
    assert!(holds, "{inf_args:?}");
    f.assert_cut_agrees(&halts[1], &inf2);
}

#[test]
fn gdb_inspects_a_held_process_from_the_prompt() {
    if !Path::new("/usr/bin/gdb").exists() {
        eprintln!("no /usr/bin/gdb: skipped");
        return;
    }
    let f = Fig1::record("prompt-gdb");
    let p1 = format!("{}.x == 1 && {}.x == 1", f.client_a, f.child_a);
    // server_x's `count` (a plain global: the connections it accepted) is its `accepts`.
    let input = format!(
        "print {0}.accepts\ngdb {0} -batch -ex 'print (long)count'\nprint {0}.accepts\nquit\n",
        f.server_x
    );
    let (out, v) = f.halt_with_input(&["--stop-if", &p1, "--prompt"], Some(&input));
    assert_eq!(v["outcome"], "halted", "{v}\nstderr: {}", out.stderr);
    let accepts = halted_actor(&v, &f.server_x)["vars"]["accepts"]
        .as_i64()
        .unwrap_or_else(|| panic!("no accepts: {v}"));
    assert!(accepts >= 1, "{v}");
    assert!(
        out.stdout.contains(&format!("$1 = {accepts}")),
        "gdb did not print count = {accepts}:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    // Back at the prompt after gdb, with the process still held.
    assert_eq!(
        out.stdout
            .matches(&format!("{}.accepts = {accepts}", f.server_x))
            .count(),
        2,
        "{}",
        out.stdout
    );
}

#[test]
fn cont_halts_where_the_primary_becomes_true_again() {
    let f = Fig1::record("prompt-cont");
    let a = &f.client_a;
    let (p, second_recv) = f.true_twice();
    let (out, v) = f.halt_with_input(&["--stop-if", &p, "--prompt"], Some("cont\ncont\n"));
    assert_eq!(
        v["outcome"], "reached_end",
        "{v}\nstdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    let halts = halts(&v);
    assert_eq!(halts.len(), 2, "{v}");
    let (_, first) = f.inf(&[&p]);
    let (_, again) = f.inf(&[&p, "--stop-at", &format!("{a}:{second_recv}")]);
    f.assert_cut_agrees(&halts[0], &first);
    f.assert_cut_agrees(&halts[1], &again);
    assert_eq!(halts[1][a], second_recv, "{halts:?}");
    assert!(
        v["messages"]
            .to_string()
            .contains(&format!("halted where `{p}` becomes true again")),
        "{}",
        v["messages"]
    );
}

#[test]
fn a_trace_over_a_global_read_from_memory_agrees_with_halting_there() {
    // server_x's C global `count` (connections accepted) is in no history: the replay reads it
    // from the live process after every event and the trace is computed from those values.
    // Where `count >= 2` becomes true must be the state a halting replay stops at.
    let f = Fig1::record("trace-memory");
    let x = &f.server_x;
    let cond = format!("{x}.count:i64 >= 2");
    let (out, traced) = f.halt(&["--trace", &format!("{x}.count:i64"), "--if", &cond]);
    assert_eq!(
        traced["outcome"], "reached_end",
        "{traced}\nstderr: {}",
        out.stderr
    );
    let points = traced["predicates"]["traces"][0]["points"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(points.len(), 1, "{traced}");
    assert_eq!(points[0]["value"], "2");

    let (halted, halted_cut) = f.halted(&["--stop-if", &cond]);
    let bystanders: Vec<String> = halted["halted"]["actors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| {
            a["status"]
                .as_str()
                .is_some_and(|s| s.starts_with("bystander"))
        })
        .filter_map(|a| a["id"].as_str().map(String::from))
        .collect();
    // Actors that run freely (the shell and its helpers) are not held: compare the others.
    let held = |c: Option<BTreeMap<String, u64>>| -> BTreeMap<String, u64> {
        c.unwrap_or_default()
            .into_iter()
            .filter(|(a, k)| *k > 0 && !bystanders.contains(a))
            .collect()
    };
    assert_eq!(
        held(cut_of(&points[0]["cut"])),
        held(Some(halted_cut)),
        "trace point vs halted cut"
    );
}

#[test]
fn a_new_primary_for_a_process_waiting_in_waitpid_moves_it() {
    // At the first halt server_x may stand in waitpid for its children (outside any event,
    // reading no control message). A new primary that needs it to end (`events` = its whole
    // history) must not be "halted at" right away: its children run to their end, its wait
    // returns, and it exits.
    let f = Fig1::record("prompt-waitpid");
    let x = &f.server_x;
    let end = f.histories[x].len();
    let p1 = format!("{}.x == 1 && {}.x == 1", f.client_a, f.child_b);
    let input = format!("stop if {x}.events >= {end}\ncont\nquit\n");
    let (out, v) = f.halt_with_input(&["--stop-if", &p1, "--prompt"], Some(&input));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let halts = halts(&v);
    assert_eq!(halts.len(), 2, "two halts: {v}\nstdout: {}", out.stdout);
    assert_eq!(
        halts[1].get(x.as_str()).copied(),
        Some(end as u64),
        "server_x ran to its end at the second halt: {v}"
    );
}
