//! The offline analysis (dependencies, vector clocks, consistent cuts, Inf(P)) on hand-made
//! histories, the paper's Figure 1, and randomly generated executions checked against brute
//! force.

use ddbx_supervisor::analysis::clock::Clocks;
use ddbx_supervisor::analysis::deps::{DataRange, Deps, Direction, Event};
use ddbx_supervisor::analysis::inf::{Cut, Violation, close, inf, is_consistent};
use ddbx_supervisor::analysis::vars::variables_at;
use ddbx_supervisor::wire::history::Origin;
use ddbx_supervisor::wire::manifest::{ActorInfo, Manifest, SessionState};
use ddbx_supervisor::wire::{ActorId, FORMAT_VERSION, History};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

// ---------------------------------------------------------------------------------------------
// Hand-made histories

fn p(n: u32) -> ActorId {
    ActorId(n)
}

/// Parses `body` (one record per line, leading spaces allowed) as the history of `p<actor>`.
fn hist(actor: u32, body: &str) -> History {
    let mut text = format!("Header(format: 1, actor: \"p{actor}\")\n");
    for line in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
        text.push_str(line);
        text.push('\n');
    }
    History::parse(Path::new(&format!("p{actor}.ron")), &text)
        .unwrap_or_else(|e| panic!("bad test history: {e}"))
}

fn start() -> String {
    "Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")".into()
}

fn start_child(parent: u32, index: u32) -> String {
    format!(
        "Start(pid: 2, ppid: 1, origin: Fork(parent: \"p{parent}\", index: {index}), argv: [\"a\"], host: \"h\")"
    )
}

/// A successful TCP connect from port `local` to port `remote`.
fn connect(fd: i32, local: u16, remote: u16) -> String {
    format!(
        "Connect(fd: {fd}, err: None, local: \"127.0.0.1:{local}\", remote: \"127.0.0.1:{remote}\")"
    )
}

/// An accept on port `local` of a connection from port `remote`.
fn accept(fd: i32, new_fd: i32, local: u16, remote: u16) -> String {
    format!(
        "Accept(fd: {fd}, new_fd: {new_fd}, local: \"127.0.0.1:{local}\", remote: \"127.0.0.1:{remote}\", peer_pid: None)"
    )
}

fn cut(entries: &[(u32, u64)]) -> Cut {
    entries.iter().map(|(a, k)| (p(*a), *k)).collect()
}

/// Event `event.1` of `p<event.0>` is executed and needs event `needs.1` of `p<needs.0>`, which
/// is not.
fn violation(event: (u32, u64), needs: (u32, u64)) -> Violation {
    Violation {
        event: (p(event.0), event.1),
        needs: (p(needs.0), needs.1),
    }
}

/// Bytes `[start, end)` of `direction` of channel `channel`.
fn range(channel: u32, direction: Direction, start: u64, end: u64) -> DataRange {
    DataRange {
        channel,
        direction,
        start,
        end,
    }
}

#[test]
fn a_child_needs_its_parents_fork_or_spawn() {
    let parent = hist(
        1,
        &format!(
            "{}\nFork(index: 1)\nSpawn(index: 2)\nExit(status: 0)",
            start()
        ),
    );
    let forked = hist(2, &format!("{}\nExit(status: 0)", start_child(1, 1)));
    let spawned = hist(
        3,
        "Start(pid: 3, ppid: 1, origin: Spawn(parent: \"p1\", index: 2), argv: [\"b\"], host: \"h\")",
    );
    let unhooked = hist(
        4,
        "Start(pid: 4, ppid: 1, origin: Unhooked(parent: \"p1\", index: 1), argv: [\"c\"], host: \"h\")",
    );
    let d = Deps::from_histories(&[parent, forked, spawned, unhooked]);
    assert_eq!(d.needs(p(2), 1), &[(p(1), 2)]);
    assert_eq!(d.needs(p(3), 1), &[(p(1), 3)]);
    assert!(d.needs(p(4), 1).is_empty());
    assert!(d.needs(p(1), 2).is_empty());
    assert_eq!(
        is_consistent(&d, &cut(&[(1, 2), (3, 1)])),
        Err(violation((3, 1), (1, 3)))
    );
    assert_eq!(is_consistent(&d, &cut(&[(1, 3), (2, 2), (3, 1)])), Ok(()));
    assert_eq!(
        close(&d, cut(&[(3, 1)])),
        cut(&[(1, 3), (2, 0), (3, 1), (4, 0)])
    );
    let c = Clocks::compute(&d).unwrap();
    assert!(c.happened_before((p(1), 2), (p(2), 2)));
    assert!(c.concurrent((p(1), 3), (p(2), 1)));
    assert!(d.diagnostics().is_empty(), "{:?}", d.diagnostics());
}

#[test]
fn the_manifest_names_children() {
    // The child's Start says Root, but the manifest (the GD's word) says it was forked.
    let parent = hist(1, &format!("{}\nFork(index: 1)", start()));
    let child = hist(2, &start());
    let info = |id: u32, origin: Origin| ActorInfo {
        id: p(id),
        origin,
        pid: id as i32,
        argv: vec!["a".into()],
        host: "h".into(),
        exit: None,
        reaps: Vec::new(),
        signalled_by: Vec::new(),
        unrecorded: None,
    };
    let manifest = Manifest {
        format: FORMAT_VERSION,
        ddbx_version: "0".into(),
        command: vec!["a".into()],
        cwd: "/".into(),
        env: vec![],
        host: "h".into(),
        state: SessionState::Complete,
        actors: vec![
            info(1, Origin::Root),
            info(
                2,
                Origin::Fork {
                    parent: p(1),
                    index: 1,
                },
            ),
        ],
        passthrough: vec![],
        problem: None,
        env_left_out: Vec::new(),
        closes: true,
        signals: true,
        pipes: true,
    };
    let histories = [parent, child];
    let channels = ddbx_supervisor::analysis::match_channels(&histories);
    let d = Deps::from_parts(&manifest, &histories, &channels);
    assert_eq!(d.needs(p(2), 1), &[(p(1), 2)]);
    assert!(Deps::from_histories(&histories).needs(p(2), 1).is_empty());
}

#[test]
fn connect_and_accept_need_each_other() {
    let server = hist(
        1,
        &format!("{}\n{}\nExit(status: 0)", start(), accept(3, 4, 3000, 5001)),
    );
    let client = hist(
        2,
        &format!(
            "{}\n\
             Connect(fd: 3, err: Some(\"ECONNREFUSED\"), local: \"?\", remote: \"127.0.0.1:3000\")\n\
             Connect(fd: 3, err: Some(\"EINPROGRESS\"), local: \"127.0.0.1:5001\", remote: \"127.0.0.1:3000\")\n\
             Exit(status: 0)",
            start()
        ),
    );
    let d = Deps::from_histories(&[server, client]);
    assert!(
        d.needs(p(2), 2).is_empty(),
        "a refused connect needs nothing"
    );
    assert_eq!(d.needs(p(2), 3), &[(p(1), 2)]);
    assert_eq!(d.needs(p(1), 2), &[(p(2), 3)]);
    assert_eq!(
        is_consistent(&d, &cut(&[(1, 2), (2, 2)])),
        Err(violation((1, 2), (2, 3)))
    );
    assert_eq!(
        is_consistent(&d, &cut(&[(1, 1), (2, 3)])),
        Err(violation((2, 3), (1, 2)))
    );
    assert_eq!(is_consistent(&d, &cut(&[(1, 2), (2, 3)])), Ok(()));
    assert_eq!(is_consistent(&d, &cut(&[(1, 1), (2, 2)])), Ok(()));
    assert_eq!(close(&d, cut(&[(1, 2)])), cut(&[(1, 2), (2, 3)]));
    assert_eq!(close(&d, cut(&[(2, 3)])), cut(&[(1, 2), (2, 3)]));
    let c = Clocks::compute(&d).unwrap();
    assert!(c.happened_before((p(1), 2), (p(2), 3)));
    assert!(c.happened_before((p(2), 3), (p(1), 2)));
    assert!(c.happened_before((p(2), 2), (p(1), 3)));
    assert!(c.concurrent((p(1), 1), (p(2), 2)));
}

/// p1 (server) and p2 (client) on one channel.
fn pair(server_body: &str, client_body: &str) -> Deps {
    let server = hist(
        1,
        &format!("{}\n{}\n{server_body}", start(), accept(3, 4, 3000, 5001)),
    );
    let client = hist(
        2,
        &format!("{}\n{}\n{client_body}", start(), connect(3, 5001, 3000)),
    );
    Deps::from_histories(&[server, client])
}

#[test]
fn a_receive_needs_the_send_of_its_last_byte() {
    let d = pair(
        // server: events 3.. : one receive of all 9 bytes, then one send of 10.
        "Recv(fd: 4, n: 9)\nSend(fd: 4, n: 10)\nExit(status: 0)",
        // client: events 3.. : three sends (2, 3, 4 bytes), then two receives (4 + 6).
        "Send(fd: 3, n: 2)\nSend(fd: 3, n: 3)\nSend(fd: 3, n: 4)\nRecv(fd: 3, n: 4)\nRecv(fd: 3, n: 6)",
    );
    let c2a = Direction::ConnectorToAcceptor;
    let a2c = Direction::AcceptorToConnector;
    // Coalesced: the receive needs the third send only.
    assert_eq!(d.needs(p(1), 3), &[(p(2), 5)]);
    assert_eq!(d.data_range(p(2), 3), Some(range(1, c2a, 0, 2)));
    assert_eq!(d.data_range(p(2), 5), Some(range(1, c2a, 5, 9)));
    assert_eq!(d.data_range(p(1), 3), Some(range(1, c2a, 0, 9)));
    // Split: both receives need the one send.
    assert_eq!(d.needs(p(2), 6), &[(p(1), 4)]);
    assert_eq!(d.needs(p(2), 7), &[(p(1), 4)]);
    assert_eq!(d.data_range(p(2), 7), Some(range(1, a2c, 4, 10)));
    assert_eq!(d.data_range(p(1), 4), Some(range(1, a2c, 0, 10)));
    assert_eq!(d.data_range(p(1), 5), None);
    assert!(d.needs(p(2), 3).is_empty());
    // The server's receive cannot happen before the client's third send.
    assert_eq!(
        is_consistent(&d, &cut(&[(1, 3), (2, 4)])),
        Err(violation((1, 3), (2, 5)))
    );
    assert_eq!(close(&d, cut(&[(1, 3)])), cut(&[(1, 3), (2, 5)]));
    assert!(d.diagnostics().is_empty(), "{:?}", d.diagnostics());
}

#[test]
fn end_of_stream_needs_the_last_send() {
    let d = pair(
        "Recv(fd: 4, n: 3)\nRecv(fd: 4, n: 2)\nRecv(fd: 4, n: 0)\nRecv(fd: 4, n: 0)\nExit(status: 0)",
        "Send(fd: 3, n: 3)\nProbe(name: \"x\", value: 1)\nSend(fd: 3, n: 2)\nExit(status: 0)",
    );
    assert_eq!(d.needs(p(1), 3), &[(p(2), 3)]);
    assert_eq!(d.needs(p(1), 4), &[(p(2), 5)]);
    // The ends of stream need the last send and the sender letting go (its exit).
    assert_eq!(d.needs(p(1), 5), &[(p(2), 5), (p(2), 6)]);
    assert_eq!(d.needs(p(1), 6), &[(p(2), 5), (p(2), 6)]);
    assert_eq!(
        d.data_range(p(1), 5),
        Some(range(1, Direction::ConnectorToAcceptor, 5, 5))
    );
    // A direction nothing was sent in: the end of stream needs the sender's exit only.
    let d = pair("Recv(fd: 4, n: 0)", "Exit(status: 0)");
    assert_eq!(d.needs(p(1), 3), &[(p(2), 3)]);
    // A close, or a shutdown of the sending side, is where the end comes from.
    let d = pair(
        "Recv(fd: 4, n: 0)\nExit(status: 0)",
        "Send(fd: 3, n: 0)\nClose(fd: 3)\nExit(status: 0)",
    );
    assert_eq!(d.needs(p(1), 3), &[(p(2), 4)]);
    let d = pair(
        "Recv(fd: 4, n: 0)\nSend(fd: 4, n: 2)\nExit(status: 0)",
        "Shutdown(fd: 3, how: Write)\nRecv(fd: 3, n: 2)\nExit(status: 0)",
    );
    assert_eq!(d.needs(p(1), 3), &[(p(2), 3)]);
    // A send that found the peer gone needs the peer's close.
    let d = pair(
        "Fail(call: Send, fd: 4, err: \"EPIPE\")\nExit(status: 0)",
        "Close(fd: 3)\nExit(status: 0)",
    );
    assert_eq!(d.needs(p(1), 3), &[(p(2), 3)]);
    // More received than sent, or an end of stream before all was read: said so.
    let d = pair("Recv(fd: 4, n: 5)\nRecv(fd: 4, n: 0)", "Send(fd: 3, n: 2)");
    assert_eq!(d.needs(p(1), 3), &[(p(2), 3)]);
    assert!(d.diagnostics()[0].starts_with("unsent_bytes: p1 event 3"));
    let d = pair("Recv(fd: 4, n: 1)\nRecv(fd: 4, n: 0)", "Send(fd: 3, n: 2)");
    assert!(d.diagnostics()[0].starts_with("early_eof: p1 event 4"));
}

#[test]
fn ready_on_a_listening_socket_needs_the_connector_at_its_connect() {
    // The server waits for its listening fd 3, then accepts: the client must have reached
    // its connect (event 3): Ready needs its event 2.
    let server = hist(
        1,
        &format!(
            "{}\n\
             Ready(call: Poll, fds: [(fd: 3, ev: \"in\")])\n\
             {}\n\
             Ready(call: Epoll, fds: [(fd: 4, ev: \"out\"), (fd: 3, ev: \"in\")])\n\
             Exit(status: 0)",
            start(),
            accept(3, 4, 3000, 5001)
        ),
    );
    let client = hist(
        2,
        &format!(
            "{}\nProbe(name: \"x\", value: 1)\n{}\nExit(status: 0)",
            start(),
            connect(3, 5001, 3000)
        ),
    );
    let d = Deps::from_histories(&[server, client]);
    assert_eq!(d.needs(p(1), 2), &[(p(2), 2)]);
    assert_eq!(d.needs(p(1), 3), &[(p(2), 3)]);
    // No accept follows the second ready, and `out` needs nothing.
    assert!(d.needs(p(1), 4).is_empty());
    assert_eq!(
        is_consistent(&d, &cut(&[(1, 2), (2, 1)])),
        Err(violation((1, 2), (2, 2)))
    );
    assert_eq!(is_consistent(&d, &cut(&[(1, 2), (2, 2)])), Ok(()));
    assert_eq!(close(&d, cut(&[(1, 2)])), cut(&[(1, 2), (2, 2)]));
    // No cycle: "select, then accept" is the normal way.
    let c = Clocks::compute(&d).unwrap();
    assert!(c.happened_before((p(2), 2), (p(1), 2)));
    assert!(!c.happened_before((p(2), 3), (p(1), 2)));
}

#[test]
fn ready_on_a_connection_needs_the_next_unread_byte() {
    let d = pair(
        // server events 3..: ready, read 2 of 5, ready (byte 2: second send), read 3,
        // ready (nothing left: end of stream, last send), out-only ready.
        "Ready(call: Select, fds: [(fd: 4, ev: \"in\")])\n\
         Recv(fd: 4, n: 2)\n\
         Ready(call: Select, fds: [(fd: 4, ev: \"in\")])\n\
         Recv(fd: 4, n: 3)\n\
         Ready(call: Select, fds: [(fd: 4, ev: \"in|hup\")])\n\
         Ready(call: Select, fds: [(fd: 4, ev: \"out\")])",
        // client events 3..: send 2, send 3, exit.
        "Send(fd: 3, n: 2)\nSend(fd: 3, n: 3)\nExit(status: 0)",
    );
    assert_eq!(d.needs(p(1), 3), &[(p(2), 3)]);
    assert_eq!(d.needs(p(1), 4), &[(p(2), 3)]);
    assert_eq!(d.needs(p(1), 5), &[(p(2), 4)]);
    assert_eq!(d.needs(p(1), 6), &[(p(2), 4)]);
    // The end of stream: the last send, and the client letting go (its exit).
    assert_eq!(d.needs(p(1), 7), &[(p(2), 4), (p(2), 5)]);
    assert!(d.needs(p(1), 8).is_empty());
}

#[test]
fn a_forked_child_sends_on_an_inherited_fd() {
    // p1 accepts p3's connection on fd 4, forks p2 (which inherits fd 4 and serves p3),
    // then accepts p4's connection, again on fd 4, and serves it itself.
    let server = hist(
        1,
        &format!(
            "{}\n{}\nFork(index: 1)\n{}\nRecv(fd: 4, n: 1)\nSend(fd: 4, n: 7)",
            start(),
            accept(3, 4, 3000, 5003),
            accept(3, 4, 3000, 5004)
        ),
    );
    let child = hist(
        2,
        &format!(
            "{}\nExec(argv: [\"worker\"])\nRecv(fd: 4, n: 2)\nSend(fd: 4, n: 5)\nExit(status: 0)",
            start_child(1, 1)
        ),
    );
    let c3 = hist(
        3,
        &format!(
            "{}\n{}\nSend(fd: 3, n: 2)\nRecv(fd: 3, n: 5)",
            start(),
            connect(3, 5003, 3000)
        ),
    );
    let c4 = hist(
        4,
        &format!(
            "{}\n{}\nSend(fd: 3, n: 1)\nRecv(fd: 3, n: 7)",
            start(),
            connect(3, 5004, 3000)
        ),
    );
    let d = Deps::from_histories(&[server, child, c3, c4]);
    // Channel 1: p3 <-> p1 event 2 (served by p2); channel 2: p4 <-> p1 event 4.
    assert_eq!(d.needs(p(2), 3), &[(p(3), 3)]);
    assert_eq!(d.needs(p(3), 4), &[(p(2), 4)]);
    assert_eq!(
        d.data_range(p(2), 4),
        Some(range(1, Direction::AcceptorToConnector, 0, 5))
    );
    assert_eq!(d.needs(p(1), 5), &[(p(4), 3)]);
    assert_eq!(d.needs(p(4), 4), &[(p(1), 6)]);
    assert_eq!(
        d.data_range(p(1), 6),
        Some(range(2, Direction::AcceptorToConnector, 0, 7))
    );
    // p3's receive pulls in the child, the fork, and the accept.
    assert_eq!(
        close(&d, cut(&[(3, 4)])),
        cut(&[(1, 3), (2, 4), (3, 4), (4, 0)])
    );
    assert!(d.diagnostics().is_empty(), "{:?}", d.diagnostics());
}

#[test]
fn a_send_end_handed_off_at_a_fork_is_exact() {
    // p1 greets the client, forks p2, and p2 goes on: bytes 0..3 are p1's, 3..5 p2's.
    let server = hist(
        1,
        &format!(
            "{}\n{}\nSend(fd: 4, n: 3)\nFork(index: 1)",
            start(),
            accept(3, 4, 3000, 5003)
        ),
    );
    let child = hist(2, &format!("{}\nSend(fd: 4, n: 2)", start_child(1, 1)));
    let client = hist(
        3,
        &format!(
            "{}\n{}\nRecv(fd: 3, n: 3)\nRecv(fd: 3, n: 2)",
            start(),
            connect(3, 5003, 3000)
        ),
    );
    let d = Deps::from_histories(&[server, child, client]);
    assert_eq!(d.needs(p(3), 3), &[(p(1), 3)]);
    assert_eq!(d.needs(p(3), 4), &[(p(2), 2)]);
    assert!(d.diagnostics().is_empty(), "{:?}", d.diagnostics());
}

#[test]
fn a_send_end_used_by_parent_and_child_is_reported() {
    let server = hist(
        1,
        &format!(
            "{}\n{}\nFork(index: 1)\nSend(fd: 4, n: 3)",
            start(),
            accept(3, 4, 3000, 5003)
        ),
    );
    let child = hist(2, &format!("{}\nSend(fd: 4, n: 2)", start_child(1, 1)));
    let client = hist(
        3,
        &format!(
            "{}\n{}\nRecv(fd: 3, n: 4)\nRecv(fd: 3, n: 1)",
            start(),
            connect(3, 5003, 3000)
        ),
    );
    let d = Deps::from_histories(&[server, child, client]);
    // Ordered by actor: p1's 3 bytes, then p2's 2.
    assert_eq!(d.needs(p(3), 3), &[(p(2), 2)]);
    assert_eq!(d.needs(p(3), 4), &[(p(2), 2)]);
    assert_eq!(d.diagnostics().len(), 1);
    assert!(
        d.diagnostics()[0].starts_with("shared_send_end: channel 1 acceptor→connector"),
        "{:?}",
        d.diagnostics()
    );
}

/// The paper's Figure 1(a): p1 client_a, p2 client_b, p3 server_x (forks p4 for client_a and
/// p5 for client_b), p6 server_y; x1 = 1 in p1 after it got server_y's reply, x4 = 1 in p4.
fn figure1() -> Vec<History> {
    vec![
        hist(
            1,
            &format!(
                "{}\n{}\n{}\n\
                 Send(fd: 3, n: 9)\n\
                 Send(fd: 4, n: 9)\n\
                 Recv(fd: 4, n: 25)\n\
                 Probe(name: \"x1\", value: 1)\n\
                 Recv(fd: 3, n: 33)\n\
                 Exit(status: 0)",
                start(),
                connect(3, 5001, 3000),
                connect(4, 5002, 4000)
            ),
        ),
        hist(
            2,
            &format!(
                "{}\n{}\nSend(fd: 3, n: 9)\nRecv(fd: 3, n: 33)\nExit(status: 0)",
                start(),
                connect(3, 5003, 3000)
            ),
        ),
        hist(
            3,
            &format!(
                "{}\n{}\nFork(index: 1)\n{}\nFork(index: 2)\nExit(status: 0)",
                start(),
                accept(3, 4, 3000, 5001),
                accept(3, 4, 3000, 5003)
            ),
        ),
        hist(
            4,
            &format!(
                "{}\nRecv(fd: 4, n: 9)\nProbe(name: \"x4\", value: 1)\nSend(fd: 4, n: 33)\nExit(status: 0)",
                start_child(3, 1)
            ),
        ),
        hist(
            5,
            &format!(
                "{}\nRecv(fd: 4, n: 9)\nSend(fd: 4, n: 33)\nExit(status: 0)",
                start_child(3, 2)
            ),
        ),
        hist(
            6,
            &format!(
                "{}\nReady(call: Epoll, fds: [(fd: 3, ev: \"in\")])\n{}\n\
                 Recv(fd: 4, n: 9)\nSend(fd: 4, n: 25)\nExit(status: 0)",
                start(),
                accept(3, 4, 4000, 5002)
            ),
        ),
    ]
}

/// `holds` for the conjunction of `var == value` over the given actors, from probe values.
fn probe_equals<'a>(
    histories: &'a [History],
    terms: &'a [(u32, &'a str, i64)],
) -> impl Fn(ActorId, u64) -> bool + 'a {
    move |a, k| {
        let h = histories.iter().find(|h| h.actor == a).unwrap();
        let vars = variables_at(h, k);
        terms
            .iter()
            .filter(|(t, _, _)| p(*t) == a)
            .all(|(_, name, value)| vars.get(*name) == Some(value))
    }
}

#[test]
fn figure1_inf_of_x1_and_x4() {
    let histories = figure1();
    let d = Deps::from_histories(&histories);
    assert!(d.diagnostics().is_empty(), "{:?}", d.diagnostics());
    // Hand-checked needs.
    assert_eq!(d.needs(p(1), 6), &[(p(6), 5)]);
    assert_eq!(d.needs(p(1), 8), &[(p(4), 4)]);
    assert_eq!(d.needs(p(4), 1), &[(p(3), 3)]);
    assert_eq!(d.needs(p(4), 2), &[(p(1), 4)]);
    assert_eq!(d.needs(p(5), 2), &[(p(2), 3)]);
    assert_eq!(d.needs(p(6), 2), &[(p(1), 2)]);
    assert_eq!(d.needs(p(6), 3), &[(p(1), 3)]);

    let terms = [(1, "x1", 1), (4, "x4", 1)];
    let holds = probe_equals(&histories, &terms);
    let got = inf(&d, &[p(1), p(4)], &holds);
    // p1 just after setting x1 (event 7), p4 just after setting x4 (event 3); p6 right after
    // its send to p1 (event 5); p3 up to the fork of p4 (event 3); p2 and p5 not needed at all.
    let want = cut(&[(1, 7), (2, 0), (3, 3), (4, 3), (5, 0), (6, 5)]);
    assert_eq!(got, Some(want.clone()));
    assert_eq!(is_consistent(&d, &want), Ok(()));
    // One step less for anyone is inconsistent or loses P.
    for (a, k) in &want {
        if *k == 0 {
            continue;
        }
        let mut less = want.clone();
        less.insert(*a, k - 1);
        assert!(
            is_consistent(&d, &less).is_err() || (!holds(*a, k - 1)),
            "{a} could stop earlier"
        );
    }

    // Inf(p5.recvs >= 1): p5 after its receive needs client_b's send, server_x's second fork
    // and accept, and (through server_x's first accept) client_a's connect.
    let recvs = |a: ActorId, k: u64| variables_at(&histories[4], k)["recvs"] >= 1 && a == p(5);
    assert_eq!(
        inf(&d, &[p(5)], &recvs),
        Some(cut(&[(1, 2), (2, 3), (3, 5), (4, 0), (5, 2), (6, 0)]))
    );

    // x1 == 1 while x4 == 2: never.
    let never = [(1, "x1", 1), (4, "x4", 2)];
    assert_eq!(
        inf(&d, &[p(1), p(4)], &probe_equals(&histories, &never)),
        None
    );

    let c = Clocks::compute(&d).unwrap();
    assert!(c.happened_before((p(6), 5), (p(1), 7)));
    assert!(c.concurrent((p(4), 3), (p(1), 7)));
    assert!(c.happened_before((p(3), 3), (p(1), 8)));
    // p4's probe saw p1's send, hence p1's connect to server_y and server_y's accept of it.
    assert_eq!(
        c.clock(p(4), 3),
        Some([(p(1), 4), (p(3), 3), (p(4), 3), (p(6), 3)].into())
    );
}

// ---------------------------------------------------------------------------------------------
// Random executions against brute force

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

const MAX_EVENTS: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq)]
enum ChanState {
    Planned,
    /// The connector is blocked at its connect, having executed this many events.
    Arrived(u64),
    Open,
}

struct Chan {
    connector: usize,
    acceptor: usize,
    state: ChanState,
    /// Holder actor and fd of each end, once open: [connector end, acceptor end].
    holder: [(usize, i32); 2],
    /// Whether the holder closed that end.
    closed: [bool; 2],
}

/// One direction's bytes: the sending event of each byte, and how many were consumed.
#[derive(Default)]
struct Bytes {
    sent_by: Vec<Event>,
    last_send: Option<Event>,
    consumed: usize,
}

struct Actor {
    created: bool,
    exited: bool,
    lines: Vec<String>,
    next_fd: i32,
    listen_fd: i32,
    /// Listening readies waiting for the next accept to say whom they needed.
    pending_ready: Vec<u64>,
}

/// A random execution: histories and the dependencies the simulation knows to be true.
struct Execution {
    histories: Vec<History>,
    truth: BTreeMap<Event, BTreeSet<Event>>,
    /// How often the interesting cases came up: ends of stream, readies on a listening fd,
    /// sends or receives by a child on an end it inherited.
    eofs: usize,
    listen_readies: usize,
    inherited_uses: usize,
}

fn simulate(rng: &mut Rng) -> Execution {
    let n = 2 + rng.below(2) as usize;
    let child_of_p1 = rng.chance(2, 3); // p2 is forked by p1 instead of being a root
    let mut actors: Vec<Actor> = (0..n)
        .map(|_| Actor {
            created: false,
            exited: false,
            lines: Vec::new(),
            next_fd: 4,
            listen_fd: 3,
            pending_ready: Vec::new(),
        })
        .collect();
    let mut truth: BTreeMap<Event, BTreeSet<Event>> = BTreeMap::new();
    let (mut eofs, mut listen_readies, mut inherited_uses) = (0, 0, 0);
    let mut inherited: BTreeSet<(usize, usize)> = BTreeSet::new();
    let id = |i: usize| ActorId(i as u32 + 1);
    for (i, a) in actors.iter_mut().enumerate() {
        if !(i == 1 && child_of_p1) {
            a.created = true;
            a.lines.push(format!(
                "Start(pid: {}, ppid: 1, origin: Root, argv: [\"a\"], host: \"h\")",
                100 + i
            ));
        }
    }
    let mut chans: Vec<Chan> = Vec::new();
    for x in 0..n {
        for y in x + 1..n {
            for _ in 0..rng.below(3) {
                let (connector, acceptor) = if rng.chance(1, 2) { (x, y) } else { (y, x) };
                chans.push(Chan {
                    connector,
                    acceptor,
                    state: ChanState::Planned,
                    holder: [(0, 0); 2],
                    closed: [false; 2],
                });
            }
        }
    }
    // (channel, side): side 0 = sent by the connector end, 1 = by the acceptor end.
    let mut bytes: BTreeMap<(usize, usize), Bytes> = BTreeMap::new();
    // (channel, side): where each process that held that end let go of it (a close, an exit).
    let mut releases: BTreeMap<(usize, usize), Vec<Event>> = BTreeMap::new();

    for _ in 0..200 {
        let len = |a: &Actor| a.lines.len();
        let blocked = |i: usize, chans: &[Chan]| {
            chans
                .iter()
                .any(|c| c.connector == i && matches!(c.state, ChanState::Arrived(_)))
        };
        let able: Vec<usize> = (0..n)
            .filter(|&i| {
                let a = &actors[i];
                a.created && !a.exited && len(a) < MAX_EVENTS && !blocked(i, &chans)
            })
            .collect();
        if able.is_empty() {
            break;
        }
        let i = rng.pick(&able);
        let me = id(i);
        let k_next = actors[i].lines.len() as u64 + 1;
        let ends_held: Vec<(usize, usize, i32)> = chans
            .iter()
            .enumerate()
            .filter(|(_, c)| c.state == ChanState::Open)
            .flat_map(|(ci, c)| {
                (0..2).filter_map(move |side| {
                    (c.holder[side].0 == i && !c.closed[side]).then_some((
                        ci,
                        side,
                        c.holder[side].1,
                    ))
                })
            })
            .collect();
        // The receiving state of an end: bytes waiting, and whether the sender is gone.
        let incoming = |ci: usize, side: usize, bytes: &BTreeMap<(usize, usize), Bytes>| {
            let b = bytes.get(&(ci, 1 - side));
            let waiting = b.map_or(0, |b| b.sent_by.len() - b.consumed);
            let sender = chans[ci].holder[1 - side].0;
            (waiting, actors[sender].exited || chans[ci].closed[1 - side])
        };
        // What the end of the stream that (channel, side) sends needs: its last send, and
        // every holder of that end letting go.
        let end_needs = |ci: usize,
                         side: usize,
                         bytes: &BTreeMap<(usize, usize), Bytes>,
                         releases: &BTreeMap<(usize, usize), Vec<Event>>| {
            let last = bytes.get(&(ci, side)).and_then(|b| b.last_send);
            let gone = releases.get(&(ci, side)).into_iter().flatten().copied();
            last.into_iter().chain(gone).collect::<Vec<Event>>()
        };
        // A child that inherited ends mostly uses them.
        let action = if i == 1
            && ends_held
                .iter()
                .any(|(ci, side, _)| inherited.contains(&(*ci, *side)))
            && rng.chance(1, 2)
        {
            rng.pick(&[4, 5, 6])
        } else {
            rng.below(10)
        };
        match action {
            0 => {
                let name = rng.pick(&["x", "y"]);
                let value = rng.below(3);
                actors[i]
                    .lines
                    .push(format!("Probe(name: \"{name}\", value: {value})"));
            }
            1 if i == 0
                && child_of_p1
                && !actors[1].created
                && (!ends_held.is_empty() || rng.chance(1, 8)) =>
            {
                actors[0].lines.push("Fork(index: 1)".into());
                let fork_event = actors[0].lines.len() as u64;
                let (next_fd, _) = (actors[0].next_fd, ());
                let child = &mut actors[1];
                child.created = true;
                child.lines.push(
                    "Start(pid: 101, ppid: 100, origin: Fork(parent: \"p1\", index: 1), argv: [\"a\"], host: \"h\")"
                        .into(),
                );
                child.listen_fd = next_fd;
                child.next_fd = next_fd + 1;
                truth
                    .entry((id(1), 1))
                    .or_default()
                    .insert((id(0), fork_event));
                // Hand some of the parent's ends over to the child, which keeps the fd number
                // (the parent closes its copy); the child closes its copies of the others.
                for (ci, side, fd) in ends_held {
                    let (from, to) = if rng.chance(2, 3) {
                        chans[ci].holder[side].0 = 1;
                        inherited.insert((ci, side));
                        (0, id(0))
                    } else {
                        (1, id(1))
                    };
                    actors[from].lines.push(format!("Close(fd: {fd})"));
                    let k = actors[from].lines.len() as u64;
                    releases.entry((ci, side)).or_default().push((to, k));
                }
            }
            2 => {
                // Arrive at a connect (blocked until the acceptor accepts).
                let can: Vec<usize> = (0..chans.len())
                    .filter(|&ci| {
                        let c = &chans[ci];
                        let acc = &actors[c.acceptor];
                        c.connector == i
                            && c.state == ChanState::Planned
                            && acc.created
                            && !acc.exited
                            && len(acc) < MAX_EVENTS
                            && len(&actors[i]) < MAX_EVENTS
                    })
                    .collect();
                if !can.is_empty() {
                    let ci = rng.pick(&can);
                    chans[ci].state = ChanState::Arrived(k_next - 1);
                }
            }
            3 => {
                // Accept an arrived connection (and the connect completes with it).
                let can: Vec<usize> = (0..chans.len())
                    .filter(|&ci| {
                        chans[ci].acceptor == i && matches!(chans[ci].state, ChanState::Arrived(_))
                    })
                    .collect();
                if !can.is_empty() {
                    let ci = rng.pick(&can);
                    let ChanState::Arrived(before) = chans[ci].state else {
                        unreachable!()
                    };
                    let conn = chans[ci].connector;
                    let (lport, rport) = (3000 + i as u16, 5000 + ci as u16);
                    let new_fd = actors[i].next_fd;
                    actors[i].next_fd += 1;
                    let listen = actors[i].listen_fd;
                    actors[i].lines.push(accept(listen, new_fd, lport, rport));
                    let acc_event = (me, actors[i].lines.len() as u64);
                    let cfd = actors[conn].next_fd;
                    actors[conn].next_fd += 1;
                    actors[conn].lines.push(connect(cfd, rport, lport));
                    let conn_event = (id(conn), actors[conn].lines.len() as u64);
                    truth.entry(acc_event).or_default().insert(conn_event);
                    truth.entry(conn_event).or_default().insert(acc_event);
                    for r in std::mem::take(&mut actors[i].pending_ready) {
                        truth.entry((me, r)).or_default().insert((id(conn), before));
                    }
                    chans[ci].state = ChanState::Open;
                    chans[ci].holder = [(conn, cfd), (i, new_fd)];
                }
            }
            4 if !ends_held.is_empty() => {
                let (ci, side, fd) = rng.pick(&ends_held);
                inherited_uses += usize::from(inherited.contains(&(ci, side)));
                let n = 1 + rng.below(3);
                actors[i].lines.push(format!("Send(fd: {fd}, n: {n})"));
                let b = bytes.entry((ci, side)).or_default();
                for _ in 0..n {
                    b.sent_by.push((me, k_next));
                }
                b.last_send = Some((me, k_next));
            }
            5 => {
                // Receive: some of what waits, or the end of stream.
                let can: Vec<(usize, usize, i32)> = ends_held
                    .iter()
                    .copied()
                    .filter(|&(ci, side, _)| {
                        let (waiting, gone) = incoming(ci, side, &bytes);
                        waiting > 0 || gone
                    })
                    .collect();
                if !can.is_empty() {
                    let (ci, side, fd) = rng.pick(&can);
                    let (waiting, _) = incoming(ci, side, &bytes);
                    let n = if waiting == 0 {
                        0
                    } else {
                        1 + rng.below(waiting as u64) as usize
                    };
                    actors[i].lines.push(format!("Recv(fd: {fd}, n: {n})"));
                    eofs += usize::from(n == 0);
                    inherited_uses += usize::from(inherited.contains(&(ci, side)));
                    let needs = if n == 0 {
                        end_needs(ci, 1 - side, &bytes, &releases)
                    } else {
                        let b = bytes.entry((ci, 1 - side)).or_default();
                        vec![b.sent_by[b.consumed + n - 1]]
                    };
                    bytes.entry((ci, 1 - side)).or_default().consumed += n;
                    truth.entry((me, k_next)).or_default().extend(needs);
                }
            }
            6 => {
                // A ready set: the listening fd if a connection waits, connections with data
                // or at their end, and maybe an out-only entry.
                let mut fds = Vec::new();
                let waiting_conn = chans
                    .iter()
                    .any(|c| c.acceptor == i && matches!(c.state, ChanState::Arrived(_)));
                let listening = waiting_conn && rng.chance(2, 3);
                if listening {
                    fds.push(format!("(fd: {}, ev: \"in\")", actors[i].listen_fd));
                }
                for &(ci, side, fd) in &ends_held {
                    let (waiting, gone) = incoming(ci, side, &bytes);
                    if (waiting > 0 || gone) && rng.chance(2, 3) {
                        fds.push(format!("(fd: {fd}, ev: \"in\")"));
                        let needs = if waiting > 0 {
                            let b = bytes.entry((ci, 1 - side)).or_default();
                            vec![b.sent_by[b.consumed]]
                        } else {
                            end_needs(ci, 1 - side, &bytes, &releases)
                        };
                        truth.entry((me, k_next)).or_default().extend(needs);
                    } else if rng.chance(1, 4) {
                        fds.push(format!("(fd: {fd}, ev: \"out\")"));
                    }
                }
                if listening {
                    actors[i].pending_ready.push(k_next);
                    listen_readies += 1;
                }
                if !fds.is_empty() {
                    actors[i]
                        .lines
                        .push(format!("Ready(call: Poll, fds: [{}])", fds.join(", ")));
                }
            }
            7 if !ends_held.is_empty() => {
                let (_, _, fd) = rng.pick(&ends_held);
                actors[i].lines.push(format!("NoData(fd: {fd})"));
            }
            8 if actors[i].lines.len() >= 4 => {
                actors[i].lines.push("Exit(status: 0)".into());
                actors[i].exited = true;
                for &(ci, side, _) in &ends_held {
                    releases.entry((ci, side)).or_default().push((me, k_next));
                }
            }
            9 if !ends_held.is_empty() => {
                let (ci, side, fd) = rng.pick(&ends_held);
                actors[i].lines.push(format!("Close(fd: {fd})"));
                chans[ci].closed[side] = true;
                releases.entry((ci, side)).or_default().push((me, k_next));
            }
            _ => {}
        }
    }
    // Needs on one's own actor are program order (an actor holding both ends of a channel).
    for (e, needs) in truth.iter_mut() {
        needs.retain(|n| n.0 != e.0);
    }
    truth.retain(|_, needs| !needs.is_empty());
    let histories = actors
        .iter()
        .enumerate()
        .filter(|(_, a)| a.created)
        .map(|(i, a)| hist(i as u32 + 1, &a.lines.join("\n")))
        .collect();
    Execution {
        histories,
        truth,
        eofs,
        listen_readies,
        inherited_uses,
    }
}

/// Everything an event needs, transitively (program order and the true dependencies), itself
/// included.
fn backward_closure(ex: &Execution, e: Event) -> BTreeSet<Event> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if !seen.insert(x) {
            continue;
        }
        if x.1 > 1 {
            stack.push((x.0, x.1 - 1));
        }
        if let Some(needs) = ex.truth.get(&x) {
            stack.extend(needs.iter().copied());
        }
    }
    seen
}

/// Every cut of the execution (each actor from 0 to its length).
fn all_cuts(histories: &[History]) -> Vec<Cut> {
    let mut cuts: Vec<Cut> = vec![Cut::new()];
    for h in histories {
        cuts = cuts
            .into_iter()
            .flat_map(|c| {
                (0..=h.records.len() as u64).map(move |k| {
                    let mut c = c.clone();
                    c.insert(h.actor, k);
                    c
                })
            })
            .collect();
    }
    cuts
}

fn leq(a: &Cut, b: &Cut) -> bool {
    a.iter().all(|(x, k)| b.get(x).copied().unwrap_or(0) >= *k)
}

/// The least element of `cuts`, which must be below every other one.
fn least(cuts: &[&Cut]) -> Option<Cut> {
    let first = cuts.first()?;
    let min: Cut = first
        .keys()
        .map(|a| (*a, cuts.iter().map(|c| c[a]).min().unwrap()))
        .collect();
    assert!(
        cuts.contains(&&min),
        "the consistent cuts are not closed under min"
    );
    Some(min)
}

/// A random simple predicate over one actor's variables: (variable, comparison, value).
fn random_predicate(rng: &mut Rng) -> (&'static str, bool, i64) {
    let var = rng.pick(&["x", "y", "events", "recvs", "sends", "alive"]);
    let at_least = rng.chance(1, 2);
    (var, at_least, rng.below(4) as i64)
}

#[test]
fn random_executions_agree_with_brute_force() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut cuts_checked, mut infs_found, mut events) = (0usize, 0usize, 0usize);
    let (mut eofs, mut listen_readies, mut inherited_uses) = (0usize, 0usize, 0usize);
    for case in 0..500 {
        let ex = simulate(&mut rng);
        let d = Deps::from_histories(&ex.histories);
        eofs += ex.eofs;
        listen_readies += ex.listen_readies;
        inherited_uses += ex.inherited_uses;
        let context = || {
            ex.histories
                .iter()
                .map(|h| {
                    format!(
                        "{}:\n{}",
                        h.actor,
                        h.records
                            .iter()
                            .enumerate()
                            .map(|(i, r)| format!("  {} {r}", i + 1))
                            .collect::<Vec<_>>()
                            .join("\n")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(
            d.diagnostics().is_empty(),
            "case {case}: {:?}\n{}",
            d.diagnostics(),
            context()
        );

        // The dependencies are exactly the simulation's.
        for h in &ex.histories {
            for k in 1..=h.records.len() as u64 {
                events += 1;
                let want: Vec<Event> = ex
                    .truth
                    .get(&(h.actor, k))
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default();
                assert_eq!(
                    d.needs(h.actor, k),
                    want.as_slice(),
                    "case {case}: needs of {} event {k}\n{}",
                    h.actor,
                    context()
                );
            }
        }

        // Consistency against reachability.
        let closures: BTreeMap<Event, BTreeSet<Event>> = ex
            .histories
            .iter()
            .flat_map(|h| (1..=h.records.len() as u64).map(move |k| (h.actor, k)))
            .map(|e| (e, backward_closure(&ex, e)))
            .collect();
        let brute_consistent = |c: &Cut| {
            closures
                .iter()
                .filter(|(e, _)| c[&e.0] >= e.1)
                .all(|(_, need)| need.iter().all(|x| c[&x.0] >= x.1))
        };
        let cuts = all_cuts(&ex.histories);
        let consistent: Vec<&Cut> = cuts.iter().filter(|c| brute_consistent(c)).collect();
        for c in &cuts {
            assert_eq!(
                is_consistent(&d, c).is_ok(),
                brute_consistent(c),
                "case {case}: cut {c:?}\n{}",
                context()
            );
            if let Err(Violation {
                event: (a, k),
                needs: (b, j),
            }) = is_consistent(&d, c)
            {
                assert!(c[&a] >= k && c[&b] < j && d.needs(a, k).contains(&(b, j)));
            }
        }
        cuts_checked += cuts.len();

        // The closure: consistent, above, least.
        for _ in 0..20 {
            let c = rng.pick(&cuts.iter().collect::<Vec<_>>()).clone();
            let closed = close(&d, c.clone());
            assert!(leq(&c, &closed));
            assert!(brute_consistent(&closed), "case {case}: close({c:?})");
            let above: Vec<&Cut> = consistent.iter().copied().filter(|x| leq(&c, x)).collect();
            assert_eq!(least(&above), Some(closed), "case {case}: close({c:?})");
        }

        // Happened-before against reachability.
        let clocks =
            Clocks::compute(&d).unwrap_or_else(|e| panic!("case {case}: {e}\n{}", context()));
        for (b, need) in &closures {
            for a in closures.keys() {
                assert_eq!(
                    clocks.happened_before(*a, *b),
                    a != b && need.contains(a),
                    "case {case}: {a:?} before {b:?}\n{}",
                    context()
                );
            }
        }

        // Inf against enumeration, for a few random conjunctive predicates.
        for _ in 0..5 {
            let mut preds: BTreeMap<ActorId, (&str, bool, i64)> = BTreeMap::new();
            for h in &ex.histories {
                if rng.chance(2, 3) {
                    preds.insert(h.actor, random_predicate(&mut rng));
                }
            }
            let holds = |a: ActorId, k: u64| {
                let Some((var, at_least, value)) = preds.get(&a) else {
                    return true;
                };
                let h = ex.histories.iter().find(|h| h.actor == a).unwrap();
                match variables_at(h, k).get(*var) {
                    None => false,
                    Some(v) if *at_least => v >= value,
                    Some(v) => v == value,
                }
            };
            let constrained: Vec<ActorId> = preds.keys().copied().collect();
            let satisfying: Vec<&Cut> = consistent
                .iter()
                .copied()
                .filter(|c| constrained.iter().all(|a| holds(*a, c[a])))
                .collect();
            let want = least(&satisfying);
            infs_found += usize::from(want.is_some());
            assert_eq!(
                inf(&d, &constrained, &holds),
                want,
                "case {case}: predicates {preds:?}\n{}",
                context()
            );
        }
    }
    // The generator makes interesting cases, not just empty ones.
    assert!(events > 3000, "{events} events");
    assert!(cuts_checked > 20_000, "{cuts_checked} cuts");
    assert!(infs_found > 300, "{infs_found} Infs found");
    eprintln!(
        "{events} events, {cuts_checked} cuts, {infs_found} Infs, {eofs} ends of stream, \
         {listen_readies} listening readies, {inherited_uses} uses of inherited ends"
    );
    assert!(eofs > 20 && listen_readies > 20 && inherited_uses > 20);
}
