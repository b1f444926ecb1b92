//! `ddbx races` and `ddbx view` on programs with known races (paper 004, DESIGN §5):
//!
//! * `race_three`: one select over three senders: exactly one race, |M| = 3, the receiver's
//!   first race, unaffected;
//! * `accept_race 3`: accepts of three clients: two races; the first (|M| = 3) is
//!   locally-first and unaffected, the second (|M| = 2) is affected by it;
//! * `race_fig004`: paper 004's Figure 1: three locally-first races, only `<x, X>` (P2's)
//!   unaffected, affecting the two others;
//! * paper 003's Figure 1 (`examples/figure1`): server_x's accept race is unaffected and
//!   affects client_a's select race;
//!
//! and for each, the `--stop-at` command printed for a race really halts the replay right
//! before the race's receive. The HTML view of Figure 1 has an `<svg>` per view and the race
//! list, refers to nothing outside itself, and is byte-identical when made twice.

use ddbx_tests::{Ddbx, TempDir, forked_child, parse_json, path_str, progs};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Instant;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// A recording of a race program and what `ddbx races --json` says about it.
struct Raced {
    /// Holds the recording until the test ends.
    _tmp: TempDir,
    rec: PathBuf,
    /// `ddbx races --json`.
    json: Value,
    /// Its races.
    races: Vec<Value>,
}

/// Records `tests/progs/PROGRAM args` with `DDBX_JITTER=5` and lists its races ([`races`]).
fn raced(tag: &str, program: &str, args: &[&str]) -> Raced {
    let tmp = TempDir::new(tag);
    let rec = tmp.join("rec");
    DDBX.record(&rec, &progs().join(program), args)
        .env("DDBX_JITTER", "5")
        .success();
    let json = races(&rec);
    let races = list(&json["races"]);
    Raced {
        _tmp: tmp,
        rec,
        json,
        races,
    }
}

/// `ddbx races --json DIR`, also checking that the text output has one block per race.
fn races(rec: &Path) -> Value {
    let started = Instant::now();
    let v = DDBX.json(["races", "--json", path_str(rec)]);
    eprintln!("races: {:.2?}", started.elapsed());
    let text = DDBX.run(["races", path_str(rec)]).success();
    let n = v["races"].as_array().map_or(0, Vec::len);
    assert_eq!(
        text.stdout
            .matches("\n  replay:       ddbx replay ")
            .count(),
        n,
        "{}",
        text.stdout
    );
    v
}

fn list(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

/// |M| of a race.
fn m_size(race: &Value) -> usize {
    list(&race["got"]).len() + list(&race["could"]).len()
}

/// Runs the replay command a race printed (with `--json --messages`) and checks that it
/// halted with the race's actor right before the race's receive.
fn assert_stops_before(rec: &Path, race: &Value) {
    let actor = race["actor"].as_str().unwrap_or_default();
    let event = race["event"].as_u64().unwrap_or(0);
    let stop_at = race["stop_at"].as_str().unwrap_or_default();
    assert_eq!(stop_at, format!("{actor}:{}", event - 1));
    assert_eq!(
        race["replay"].as_str().unwrap_or_default(),
        format!("ddbx replay {} --stop-at {stop_at}", path_str(rec))
    );
    let messages = rec.with_file_name(format!("messages-{actor}-{event}.json"));
    let started = Instant::now();
    let out = DDBX
        .run(["replay", path_str(rec), "--stop-at", stop_at, "--json"])
        .args(["--messages", path_str(&messages)])
        .output();
    eprintln!(
        "replay --stop-at {stop_at}: exit {} in {:.2?}",
        out.code,
        started.elapsed()
    );
    assert_eq!(out.code, 0, "replay --stop-at {stop_at}: {}", out.stderr);
    let text = std::fs::read_to_string(&messages).unwrap_or_default();
    let v = parse_json(&text, "ddbx replay --json");
    assert_eq!(
        v["cut"][actor].as_u64(),
        Some(event - 1),
        "cut of {actor}: {}",
        v["cut"]
    );
    let halted = list(&v["halted"]["actors"])
        .into_iter()
        .find(|a| a["id"] == actor)
        .unwrap_or_else(|| panic!("{actor} not in the halted state: {v}"));
    let next = halted["next"].as_str().unwrap_or_default();
    let record = race["record"].as_str().unwrap_or_default();
    let kind = record.split('(').next().unwrap_or_default();
    assert!(
        next.starts_with(kind),
        "{actor} should be halted right before its {kind}, its next event is {next}"
    );
}

#[test]
fn three_senders_to_one_select_are_one_unaffected_race() {
    let raced = raced("races-three", "race_three", &[]);
    let (rec, v, rs) = (&raced.rec, &raced.json, &raced.races);
    assert_eq!(rs.len(), 1, "{v}");
    let r = &rs[0];
    assert_eq!(r["actor"], "p1", "{r}");
    assert_eq!(r["kind"], "ready", "{r}");
    assert_eq!(m_size(r), 3, "{r}");
    for m in list(&r["got"]).iter().chain(&list(&r["could"])) {
        assert_eq!(m["kind"], "send", "{m}");
        assert_eq!(m["received_by"]["actor"], "p1", "{m}");
    }
    assert_eq!(r["locally_first"], true);
    assert_eq!(r["unaffected"], true);
    assert_eq!(v["unaffected"], serde_json::json!([1]));
    assert_stops_before(rec, r);
}

#[test]
fn the_first_accept_race_affects_the_second() {
    let raced = raced("races-accept", "accept_race", &["3"]);
    let (rec, v, rs) = (&raced.rec, &raced.json, &raced.races);
    assert_eq!(rs.len(), 2, "{v}");
    for r in rs {
        assert_eq!(r["actor"], "p1", "{r}");
        assert_eq!(r["kind"], "accept", "{r}");
    }
    assert_eq!(m_size(&rs[0]), 3, "{}", rs[0]);
    assert_eq!(m_size(&rs[1]), 2, "{}", rs[1]);
    assert_eq!(rs[0]["locally_first"], true);
    assert_eq!(rs[0]["unaffected"], true);
    assert_eq!(rs[0]["affects"], serde_json::json!([2]));
    assert_eq!(rs[1]["locally_first"], false);
    assert_eq!(rs[1]["unaffected"], false);
    assert_eq!(rs[1]["affected_by"], serde_json::json!([1]));
    // What the second accept could have got is what the first did not take.
    let got1 = &rs[0]["got"][0]["actor"];
    assert!(
        list(&rs[1]["got"])
            .iter()
            .chain(&list(&rs[1]["could"]))
            .all(|m| &m["actor"] != got1),
        "{v}"
    );
    assert_stops_before(rec, &rs[0]);
    assert_stops_before(rec, &rs[1]);
}

#[test]
fn paper_004_figure_1_has_three_locally_first_races_and_one_unaffected() {
    let raced = raced("races-fig004", "race_fig004", &[]);
    let (rec, v, rs) = (&raced.rec, &raced.json, &raced.races);
    // The root is P0 (no race); its children 1, 2, 3 are P1 (race w), P2 (race x) and
    // P3 (race y), whatever actor ids the record gave them.
    let ps = DDBX.json(["ps", "--json", path_str(rec)]);
    let child = |i| forked_child(&ps, "p1", i);
    let (p1, p2, p3) = (child(1), child(2), child(3));
    let race_of = |actor: &str| -> Value {
        let mine: Vec<Value> = rs.iter().filter(|r| r["actor"] == actor).cloned().collect();
        assert_eq!(mine.len(), 1, "{actor} should have one race: {v}");
        mine[0].clone()
    };
    let (w, x, y) = (race_of(&p1), race_of(&p2), race_of(&p3));
    assert_eq!(rs.len(), 3, "{v}");
    assert_eq!((m_size(&w), m_size(&x), m_size(&y)), (2, 2, 3), "{v}");
    assert!(rs.iter().all(|r| r["locally_first"] == true), "{v}");
    assert_eq!(
        v["unaffected"],
        serde_json::json!([x["id"]]),
        "only <x, X>: {v}"
    );
    assert_eq!(w["affected_by"], serde_json::json!([x["id"]]));
    assert_eq!(y["affected_by"], serde_json::json!([x["id"]]));
    let mut affects = vec![w["id"].clone(), y["id"].clone()];
    affects.sort_by_key(|i| i.as_u64());
    assert_eq!(x["affects"], Value::Array(affects));
    let mut edges = vec![[p2.clone(), p1.clone()], [p2.clone(), p3.clone()]];
    edges.sort_by_key(|[_, b]| b[1..].parse::<u32>().unwrap_or(0));
    assert_eq!(v["actor_edges"], serde_json::json!(edges));
    // y2 (from P2) is one of Y's messages, and was sent after x.
    assert!(
        list(&y["got"])
            .iter()
            .chain(&list(&y["could"]))
            .any(|m| m["actor"] == p2.as_str()),
        "{y}"
    );
    assert_stops_before(rec, &x);
    assert_stops_before(rec, &y);
}

#[test]
fn figure_1_races_and_a_deterministic_self_contained_view() {
    let tmp = TempDir::new("races-fig1");
    let rec = tmp.join("rec");
    DDBX.record_figure1(&rec);
    let v = races(&rec);
    let rs = list(&v["races"]);
    assert_eq!(rs.len(), 2, "{v}");
    // Races are listed by actor id, which follows the order processes started in: find them
    // by kind.
    let by_kind = |kind: &str| {
        rs.iter()
            .find(|r| r["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} race: {v}"))
    };
    let (accept, select) = (by_kind("accept"), by_kind("ready"));
    assert_eq!(m_size(accept), 2);
    assert_eq!(m_size(select), 2);
    assert_eq!(accept["unaffected"], true);
    assert_eq!(
        select["affected_by"],
        serde_json::json!([accept["id"].clone()])
    );
    assert!(rs.iter().all(|r| r["locally_first"] == true), "{v}");
    assert_stops_before(&rec, select);

    let html1 = tmp.join("a.html");
    let html2 = tmp.join("b.html");
    for h in [&html1, &html2] {
        let started = Instant::now();
        DDBX.run(["view", path_str(&rec), "-o", path_str(h)])
            .success();
        eprintln!("view: {:.2?}", started.elapsed());
    }
    let a = std::fs::read(&html1).unwrap_or_else(|e| panic!("{e}"));
    let b = std::fs::read(&html2).unwrap_or_else(|e| panic!("{e}"));
    assert!(a == b, "two views of one recording differ");
    let html = String::from_utf8(a).unwrap_or_else(|e| panic!("{e}"));
    assert!(html.starts_with("<!DOCTYPE html>"));
    for view in ["event", "first", "affects", "abstract"] {
        let section = format!("<section class=\"view\" id=\"v-{view}\">");
        let at = html
            .find(&section)
            .unwrap_or_else(|| panic!("no {view} view"));
        assert!(
            html[at..]
                .split("</section>")
                .next()
                .unwrap_or("")
                .contains("<svg"),
            "the {view} view has no <svg>"
        );
    }
    assert_eq!(html.matches("<svg").count(), 4);
    for r in &rs {
        let id = r["id"].as_u64().unwrap_or(0);
        assert!(
            html.contains(&format!("<li data-race=\"{id}\">race {id}: ")),
            "race {id} missing from the race list"
        );
        let cmd = r["replay"].as_str().unwrap_or_default();
        assert!(html.contains(cmd), "no replay command {cmd}");
    }
    // Nothing outside the file: no URL, no external reference.
    for bad in [
        "http://",
        "https://",
        " src=",
        "href=\"http",
        "@import",
        "url(http",
    ] {
        assert!(!html.contains(bad), "the view contains {bad:?}");
    }
    assert!(html.contains("<title>p"), "events have hover titles");
}
