//! The halting state machine on small hand-made recordings.

use super::*;
use ddbx_wire::History;
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// One root actor with a few events (enough for a `RunUntil` to mean something).
fn recording() -> Recording {
    let text = "Header(format: 1, actor: \"p1\")\n\
        Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n\
        Probe(name: \"x\", value: 1)\n\
        Probe(name: \"x\", value: 2)\n\
        Exit(status: 0)\n";
    let history = History::parse(Path::new("p1.ron"), text).expect("test history");
    Recording::in_memory(vec![history])
}

fn pair() -> (LdWriter, BufReader<UnixStream>) {
    let (a, b) = UnixStream::pair().expect("socketpair");
    (LdWriter::new(a), BufReader::new(b))
}

/// An image that exec'd says hello again on a new connection; if the thread of its old
/// connection attaches late, requests must still reach the new one (they were lost before:
/// a halting replay of Figure 1 hung about once in 300 runs under load).
#[test]
fn a_late_attach_of_the_image_before_exec_does_not_steal_requests() {
    let request = HaltRequest {
        primary: Vec::new(),
        text: "p1.x == 2".into(),
    };
    let mut h = Halting::new(&recording(), &request, PathBuf::from("/nonexistent"));
    let p1 = ActorId(1);
    let first = h.welcomed(p1, 10).incarnation;
    let second = h.welcomed(p1, 10).incarnation; // after exec
    let (old_w, old_r) = pair();
    let (new_w, mut new_r) = pair();
    h.attach(p1, second, new_w);
    h.attach(p1, first, old_w); // the old connection's thread, late
    h.ensure(p1, 2);
    drop(h); // closes both writers
    let mut line = String::new();
    new_r.read_line(&mut line).expect("read");
    assert!(line.contains("RunUntil"), "the new image got {line:?}");
    assert_eq!(
        old_r.lines().count(),
        0,
        "the dead connection got a request"
    );
}
