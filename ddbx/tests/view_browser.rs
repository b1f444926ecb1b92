//! `ddbx view` in a real browser, and its two exports (issue 5). A recording of Figure 1
//! (examples/figure1) is written as the HTML page, loaded in headless Chromium (Debian's
//! `chromium`, installed by `.ci/run` when missing): a screenshot must be a non-blank PNG, and
//! the DOM after the page's script ran must hold the SVG diagrams, the race list and the mark
//! the script sets as its last step (`data-ddbx="ok"` on `<html>`: a script error before it
//! leaves it out). The ShiViz log must follow ShiViz's clock rule and the Perfetto JSON must
//! parse, with every flow bound exactly twice (out, then in).

use ddbx_tests::{Ddbx, Output, Run, TempDir};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const CHROMIUM: &str = "/usr/bin/chromium";

/// Records Figure 1 into `tmp/rec`.
fn record_figure1(tmp: &TempDir) -> std::path::PathBuf {
    let rec = tmp.join("rec");
    DDBX.record_figure1(&rec);
    rec
}

/// `ddbx view rec -o out [--format f]`.
fn view(rec: &Path, out: &Path, format: Option<&str>) {
    let mut args = vec![
        "view".to_string(),
        rec.to_string_lossy().into_owned(),
        "-o".to_string(),
        out.to_string_lossy().into_owned(),
    ];
    if let Some(f) = format {
        args.push("--format".into());
        args.push(f.into());
    }
    DDBX.run(&args).success();
    assert!(out.is_file(), "ddbx {args:?} wrote nothing");
}

/// Headless Chromium on `url` with `extra` arguments and a fresh profile directory.
fn chromium(tmp: &TempDir, profile: &str, extra: &[String], url: &str) -> Output {
    let profile = tmp.join(profile);
    let mut args: Vec<String> = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    args.extend(extra.iter().cloned());
    args.push(url.to_string());
    // Chromium's helper processes may still be shutting down when it exits: that is the
    // browser's business (the group is killed afterwards), not a ddbx leftover.
    let o = Run::new(CHROMIUM)
        .args(&args)
        .env("HOME", tmp.path())
        .limit(Duration::from_secs(120))
        .leftovers_ok()
        .output();
    assert_eq!(o.code, 0, "chromium {args:?} failed:\n{}", o.stderr);
    o
}

#[test]
fn view_page_renders_in_headless_chromium() {
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: this test needs Debian's chromium (`apt-get install -y chromium`; .ci/run installs it when missing)"
    );
    let tmp = TempDir::new("view-browser");
    let rec = record_figure1(&tmp);
    let html = tmp.join("view.html");
    view(&rec, &html, None);
    let url = format!("file://{}", html.display());

    // A screenshot: a PNG of the window's size, and not a blank page (a blank 1400x900 PNG
    // compresses to about 6 KB; the diagrams, text and side bar make over 100 KB).
    let shot = tmp.join("shot.png");
    chromium(
        &tmp,
        "profile-shot",
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,900".into(),
        ],
        &url,
    );
    let png = std::fs::read(&shot)
        .unwrap_or_else(|e| panic!("chromium wrote no screenshot {}: {e}", shot.display()));
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "the screenshot is not a PNG"
    );
    assert_eq!(&png[12..16], b"IHDR", "the PNG has no IHDR first");
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    let height = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
    assert!(
        width >= 1000 && height >= 600,
        "screenshot is {width}x{height}"
    );
    assert!(
        png.len() > 30_000,
        "the screenshot is {} bytes: a blank page?",
        png.len()
    );

    // The DOM after the page's script ran.
    let dom = chromium(&tmp, "profile-dom", &["--dump-dom".into()], &url);
    let dom = dom.stdout;
    assert!(
        dom.contains("data-ddbx=\"ok\""),
        "the page's script did not finish its init (a script error?): the DOM lacks data-ddbx=\"ok\":\n{}",
        &dom[..dom.len().min(2000)]
    );
    assert!(
        dom.matches("<svg").count() >= 4,
        "fewer than four SVGs in the DOM"
    );
    for needle in [
        "aria-label=\"event view\"",
        "aria-label=\"first view\"",
        "aria-label=\"affects view\"",
        "<ul id=\"races\">",
        "<li data-race=\"1\"",
        "<circle class=\"ev",
    ] {
        assert!(dom.contains(needle), "the DOM lacks {needle}");
    }
    // The script ran: the event view is shown and the first race is selected.
    assert!(
        dom.contains("class=\"view on\" id=\"v-event\""),
        "the script did not show the event view"
    );
    assert!(
        dom.contains("ddbx replay "),
        "the first race's replay command is not shown"
    );
}

/// The hosts' clocks of a ShiViz log: the rule is that each host's own entry is 1 for its first
/// event and +1 per event; every other entry must not exceed how many events that host has
/// logged before (the log is in a topological order), and clocks of one host never decrease.
#[test]
fn view_exports_shiviz_and_perfetto() {
    let tmp = TempDir::new("view-exports");
    let rec = record_figure1(&tmp);

    let shiviz = tmp.join("fig1.shiviz");
    view(&rec, &shiviz, Some("shiviz"));
    let text = std::fs::read_to_string(&shiviz).expect("the ShiViz log");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], r"(?<host>\S*) (?<clock>{.*})\n(?<event>.*)");
    assert_eq!(lines[1], "=== (?<trace>.*) ===");
    assert!(lines[2].starts_with("=== ") && lines[2].ends_with(" ==="));
    let body = &lines[3..];
    assert!(
        body.len() >= 20 && body.len() % 2 == 0,
        "{} log lines",
        body.len()
    );
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut last: HashMap<String, BTreeMap<String, u64>> = HashMap::new();
    for pair in body.chunks(2) {
        let (head, event) = (pair[0], pair[1]);
        let (host, clock) = head
            .split_once(' ')
            .unwrap_or_else(|| panic!("bad clock line {head:?}"));
        assert!(host.starts_with('p'), "host {host:?}");
        assert!(!event.is_empty(), "empty event text after {head:?}");
        let clock: BTreeMap<String, u64> = serde_json::from_str(clock)
            .unwrap_or_else(|e| panic!("clock of {head:?} is not JSON: {e}"));
        let n = seen.entry(host.to_string()).or_insert(0);
        *n += 1;
        assert_eq!(
            clock.get(host),
            Some(&*n),
            "{head}: the host's own entry must count its events"
        );
        for (h, k) in &clock {
            assert!(*k > 0, "{head}: zero entry for {h}");
            if h != host {
                assert!(
                    seen.get(h).copied().unwrap_or(0) >= *k,
                    "{head}: {h}'s entry {k} is ahead of {h}'s logged events (not a topological order)"
                );
            }
        }
        if let Some(prev) = last.get(host) {
            for (h, k) in prev {
                assert!(
                    clock.get(h).copied().unwrap_or(0) >= *k,
                    "{head}: {h}'s entry went down"
                );
            }
        }
        last.insert(host.to_string(), clock);
    }
    assert!(seen.len() >= 4, "only {} hosts", seen.len());
    // Messages: some event's clock names another host.
    assert!(
        last.values().any(|c| c.len() > 1),
        "no clock names another host"
    );

    let perfetto = tmp.join("fig1.json");
    view(&rec, &perfetto, Some("perfetto"));
    let text = std::fs::read_to_string(&perfetto).expect("the Perfetto JSON");
    let json: serde_json::Value = serde_json::from_str(&text).expect("Perfetto JSON parses");
    let events = json["traceEvents"]
        .as_array()
        .expect("traceEvents is an array");
    let mut names = 0;
    let mut slices = 0;
    let mut flows: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for e in events {
        assert!(e["pid"].as_u64().is_some(), "no pid: {e}");
        match e["ph"].as_str() {
            Some("M") => {
                if e["name"] == "process_name" {
                    names += 1;
                    assert!(e["args"]["name"].as_str().is_some(), "{e}");
                }
            }
            Some("X") => {
                slices += 1;
                assert!(e["ts"].as_u64().is_some_and(|t| t % 10 == 0), "{e}");
                assert_eq!(e["dur"].as_u64(), Some(1), "{e}");
                assert!(e["args"]["record"].as_str().is_some(), "{e}");
                if let Some(id) = e["bind_id"].as_str() {
                    let f = flows.entry(id.to_string()).or_default();
                    match (e.get("flow_out"), e.get("flow_in")) {
                        (Some(serde_json::Value::Bool(true)), None) => f.0 += 1,
                        (None, Some(serde_json::Value::Bool(true))) => f.1 += 1,
                        other => panic!("slice {e} binds {id} but has {other:?}"),
                    }
                }
            }
            other => panic!("unexpected phase {other:?} in {e}"),
        }
    }
    assert!(names >= 4, "{names} process_name records");
    assert!(slices >= 20, "{slices} slices");
    assert!(flows.len() >= 4, "{} flows", flows.len());
    for (id, (out, inn)) in &flows {
        assert_eq!(
            (*out, *inn),
            (1, 1),
            "flow {id}: {out} flow_out, {inn} flow_in"
        );
    }

    // Deterministic: the same recording gives the same bytes.
    let again = tmp.join("fig1-again.json");
    view(&rec, &again, Some("perfetto"));
    assert_eq!(std::fs::read(&again).ok(), Some(text.into_bytes()));
    let again = tmp.join("fig1-again.shiviz");
    view(&rec, &again, Some("shiviz"));
    assert_eq!(
        std::fs::read(&again).ok(),
        std::fs::read(&shiviz).ok(),
        "ShiViz export differs between two runs"
    );
}
