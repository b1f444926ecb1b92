//! The history's writer and reader, together: lines round-trip, errors name file and line,
//! torn and optimal histories.

use super::*;
use crate::{Errno, Events};

fn sample() -> Vec<Record> {
    vec![
        Record::Start {
            pid: 10,
            ppid: 9,
            origin: Origin::Fork {
                parent: ActorId(1),
                index: 1,
            },
            argv: vec!["./a".into(), "x y".into()],
            host: "h".into(),
        },
        Record::Connect {
            fd: 3,
            err: Some(Errno::ECONNREFUSED),
            local: "?".into(),
            remote: "127.0.0.1:80".into(),
            at: None,
        },
        Record::Ready {
            call: WaitCall::Epoll,
            fds: vec![ReadyFd {
                fd: 4,
                ev: Events(0x11),
            }],
        },
        Record::Recv {
            fd: 4,
            n: 17,
            data: None,
            passed: Vec::new(),
        },
        Record::NoData { fd: 4 },
        Record::Fork { index: 1 },
        Record::Exit { status: 0 },
    ]
}

#[test]
fn lines_round_trip_and_read_like_the_paper() {
    let mut text = header_line(ActorId(3));
    for r in sample() {
        let line = r.to_line();
        assert!(!line.contains('\n'));
        text.push_str(&line);
        text.push('\n');
    }
    assert!(text.contains("Recv(fd: 4, n: 17)"), "{text}");
    let h = History::parse(Path::new("h.ron"), &text).unwrap();
    assert_eq!(h.actor, ActorId(3));
    assert_eq!(h.records, sample());
    assert!(!h.truncated);
}

#[test]
fn a_torn_last_line_is_dropped_and_reported() {
    let mut text = header_line(ActorId(2));
    text.push_str(&sample()[0].to_line());
    text.push('\n');
    text.push_str("Recv(fd: 4, n:");
    let h = History::parse(Path::new("h.ron"), &text).unwrap();
    assert_eq!(h.records.len(), 1);
    assert!(h.truncated);
}

#[test]
fn errors_name_the_line_and_what_was_expected() {
    let mut text = header_line(ActorId(2));
    text.push_str(&sample()[0].to_line());
    text.push_str("\nRecv(fd: 4, bytes: 3)\n");
    let e = History::parse(Path::new("h.ron"), &text).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(
        e.to_string()
            .starts_with("h.ron:3: expected a history record"),
        "{e}"
    );

    let e = History::parse(Path::new("h.ron"), "Header(format: 99, actor: \"p1\")\n").unwrap_err();
    assert!(e.problem.contains("format 99"), "{e}");

    let text = format!("{}Recv(fd: 4, n: 3)\n", header_line(ActorId(1)));
    let e = History::parse(Path::new("h.ron"), &text).unwrap_err();
    assert!(e.problem.contains("expected `Start`"), "{e}");

    let mut text = header_line(ActorId(1));
    for r in [sample()[0].clone(), Record::Fork { index: 2 }] {
        text.push_str(&r.to_line());
        text.push('\n');
    }
    let e = History::parse(Path::new("h.ron"), &text).unwrap_err();
    assert!(e.problem.contains("expected child number 1"), "{e}");
}

#[test]
fn run_details_are_blanked_for_comparison() {
    let r = Record::Connect {
        fd: 3,
        err: None,
        local: "127.0.0.1:40001".into(),
        remote: "[::1]:80".into(),
        at: None,
    };
    assert_eq!(
        r.without_run_details(),
        Record::Connect {
            fd: 3,
            err: None,
            local: "127.0.0.1:*".into(),
            remote: "[::1]:*".into(),
            at: None,
        }
    );
}

#[test]
fn optimal_histories_expand_skips_and_say_so_in_the_header() {
    let dir = std::env::temp_dir().join(format!("ddbx-wire-opt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("p2.ron");
    let mut text = header_line_optimal(ActorId(2));
    text.push_str("Start(pid: 1, ppid: 0, origin: Root, argv: [], host: \"h\")\n");
    text.push_str(&skip_line(3));
    text.push_str("Recv(fd: 3, n: 5)\n");
    std::fs::write(&path, &text).unwrap();
    assert_eq!(trace_of(&path), Trace::Optimal);
    let h = History::load(&path).unwrap();
    assert_eq!(h.records.len(), 5);
    assert_eq!(
        h.records[1..4],
        [Record::Untraced, Record::Untraced, Record::Untraced]
    );
    let bad = History::parse(&path, &text.replace("n: 3", "n: 0")).unwrap_err();
    assert_eq!(bad.line, 3, "{bad}");
    let full = dir.join("p1.ron");
    std::fs::write(&full, header_line(ActorId(1))).unwrap();
    assert_eq!(trace_of(&full), Trace::Full);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_huge_skip_is_refused_before_it_is_allocated() {
    // 2^32 untraced events would be 300 GB of records: found by the fuzzer's number extremes.
    let text = "Header(format: 1, actor: \"p2\", trace: Optimal)\n\
                Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n\
                Skip(n: 4294967296)\n";
    let e = History::parse(Path::new("p2.ron"), text).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(
        e.problem.contains("at most 16777216 untraced events"),
        "{e}"
    );
    // Two runs that each fit but together do not are refused at the second.
    let text = format!(
        "{}Skip(n: {})\nSkip(n: 2)\n",
        &text[..text.find("Skip").unwrap_or(0)],
        MAX_UNTRACED - 1
    );
    let e = History::parse(Path::new("p2.ron"), &text).unwrap_err();
    assert_eq!(e.line, 4, "{e}");
}

#[test]
fn value_lines_are_not_events() {
    let text = "Header(format: 1, actor: \"p1\")\n\
        Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n\
        ~c1=1000\n~c1+5\n\
        NoData(fd: 3)\n\
        ~r00ff\n\
        Exit(status: 0)\n";
    let h = History::parse(Path::new("t.ron"), text).unwrap();
    assert_eq!(h.records.len(), 3);
    assert_eq!(h.records[1], Record::NoData { fd: 3 });
    use value::Value;
    assert_eq!(
        h.values,
        vec![
            (1, Value::Clock { clock: 1, ns: 1000 }),
            (1, Value::Clock { clock: 1, ns: 1005 }),
            (
                2,
                Value::Random {
                    bytes: vec![0, 255]
                }
            ),
        ]
    );
    let bad = "Header(format: 1, actor: \"p1\")\n\
        Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n~c1+5\n";
    let e = History::parse(Path::new("t.ron"), bad).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
}

#[test]
fn a_header_without_its_newline_is_not_called_an_empty_file() {
    let e = History::parse(Path::new("p2.ron"), "Header(format: 1, actor: \"p2\")").unwrap_err();
    assert_eq!(e.line, 1, "{e}");
    assert!(e.problem.contains("without a newline"), "{e}");
    let e = History::parse(Path::new("p2.ron"), "").unwrap_err();
    assert!(e.problem.ends_with("found an empty file"), "{e}");
}

#[test]
fn thread_lines_say_which_thread_made_each_event_until_an_exec() {
    let text = "Header(format: 1, actor: \"p1\")\n\
                Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n\
                Close(fd: 3)\n\
                ~t3\n\
                Close(fd: 4)\n\
                Close(fd: 5)\n\
                ~t1\n\
                Close(fd: 6)\n\
                ~t2\n\
                Close(fd: 7)\n\
                Exec(argv: [\"b\"])\n\
                Close(fd: 8)\n";
    let h = History::parse(Path::new("p1.ron"), text).unwrap();
    assert_eq!(h.threads(), vec![1, 1, 3, 3, 1, 2, 1, 1]);
    let plain = "Header(format: 1, actor: \"p1\")\n\
                 Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n";
    assert!(
        History::parse(Path::new("p1.ron"), plain)
            .unwrap()
            .threads()
            .is_empty()
    );
}
