//! `ddbx record ./server` with clients that are not under ddbx: their bytes are input, logged;
//! the replay plays them, so the server replays alone; what the server sends them is compared
//! with the record. An event loop (poll, edge-triggered epoll) waits for its listening socket
//! to be readable before it accepts (issue #10, class 1): the replay's stand-in clients must
//! exist by then.

use ddbx_tests::{
    Ddbx, Histories, TempDir, assert_same_histories, cut_of, full_histories, histories, parse_json,
    path_str, progs, spawn_in_group,
};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const CLIENTS: usize = 4;

/// Runs ext_server with its arguments (under `ddbx record` if `rec` is given)
/// and CLIENTS concurrent outside clients with random delays; returns the server's output.
fn serve(
    program: &std::path::Path,
    wording: &std::path::Path,
    rec: Option<&std::path::Path>,
) -> String {
    let args = [CLIENTS.to_string(), path_str(wording).to_string()];
    serve_with(program, &args, rec, &[])
}

/// Runs `program args` (under `ddbx record OPTIONS` if `rec` is given), which prints
/// `port P` first, and CLIENTS concurrent outside clients with random delays that each send
/// `client I` and expect `you are number K`; returns the server's output.
fn serve_with(
    program: &std::path::Path,
    args: &[String],
    rec: Option<&std::path::Path>,
    options: &[&str],
) -> String {
    let mut cmd = match rec {
        Some(dir) => {
            let mut c = Command::new(DDBX.path());
            c.arg("record")
                .args(options)
                .arg("-o")
                .arg(dir)
                .arg("--")
                .arg(program);
            if !options.is_empty() {
                // Optimal tracing: the full history next to the optimal one.
                c.env("DDBX_TRACE_CHECK", "1");
            }
            c
        }
        None => Command::new(program),
    };
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let (mut child, _group) = spawn_in_group(&mut cmd);
    let mut out = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("no stdout")));
    let mut first = String::new();
    out.read_line(&mut first).unwrap_or_else(|e| panic!("{e}"));
    let port: u16 = first
        .trim()
        .strip_prefix("port ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("expected `port N`, found {first:?}"));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            std::thread::spawn(move || {
                // Random delays make the accept order a real race.
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.subsec_nanos())
                    .unwrap_or(0);
                std::thread::sleep(Duration::from_micros(u64::from(
                    (nanos ^ (i as u32 * 7919)) % 4000,
                )));
                let mut s =
                    TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("{e}"));
                s.write_all(format!("client {i}\n").as_bytes())
                    .unwrap_or_else(|e| panic!("{e}"));
                let mut reply = String::new();
                s.read_to_string(&mut reply)
                    .unwrap_or_else(|e| panic!("{e}"));
                reply
            })
        })
        .collect();
    for c in clients {
        let reply = c.join().unwrap_or_else(|_| panic!("a client failed"));
        assert!(reply.starts_with("you are number "), "{reply:?}");
    }
    let mut rest = String::new();
    out.read_to_string(&mut rest)
        .unwrap_or_else(|e| panic!("{e}"));
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "{status:?}");
    first + &rest
}

#[test]
fn a_server_with_outside_clients_replays_alone() {
    let program = progs().join("ext_server");
    let tmp = TempDir::new("ext");
    let wording = tmp.join("wording");
    std::fs::write(&wording, "you are number\n").unwrap_or_else(|e| panic!("{e}"));
    // The race exists: natively, clients are served in different orders.
    let mut seen = Vec::new();
    for _ in 0..30 {
        let out = serve(&program, &wording, None);
        let order: String = out.lines().skip(1).collect::<Vec<_>>().join("|");
        if !seen.contains(&order) {
            seen.push(order);
        }
        if seen.len() >= 2 {
            break;
        }
    }
    assert!(
        seen.len() >= 2,
        "30 native runs served the clients in the same order: {seen:?}"
    );

    let rec = tmp.join("rec");
    let recorded = serve(&program, &wording, Some(&rec));
    // The history keeps what the outside clients sent, and `show` marks them.
    let show = DDBX.run(["show", path_str(&rec), "p1"]).success();
    assert_eq!(
        show.stdout.matches("outside peer").count(),
        CLIENTS,
        "{}",
        show.stdout
    );

    // Three replays without any client: the same requests in the same order, every time.
    for i in 1..=3 {
        let replayed = DDBX.run(["replay", path_str(&rec)]).success();
        // Not the port line: the replay's bind to port 0 asks for the record's port, but the
        // record's connections on it are in TIME_WAIT for a minute, and ext_server's listener
        // does not set SO_REUSEADDR (datagrams.rs shows a UDP server's port replayed).
        assert_eq!(
            replayed.stdout.lines().skip(1).collect::<Vec<_>>(),
            recorded.lines().skip(1).collect::<Vec<_>>(),
            "replay {i}"
        );
    }

    // A server that answers its outside clients differently diverges, at the first reply.
    std::fs::write(&wording, "you are client\n").unwrap_or_else(|e| panic!("{e}"));
    let changed = DDBX.run(["replay", path_str(&rec)]).output();
    changed.assert_exit(101, &["sent to an outside peer", "differ"]);
}

#[test]
fn a_server_that_peeks_at_outside_clients_replays_alone() {
    // Each read is a `MSG_PEEK` first: the peek is a `Peek` (no bytes kept), the read after it
    // keeps the client's bytes, and the replay's played client is fed them once, at the peek.
    let program = progs().join("ext_server");
    let tmp = TempDir::new("ext-peek");
    let wording = tmp.join("wording");
    std::fs::write(&wording, "you are number\n").unwrap_or_else(|e| panic!("{e}"));
    let args = [
        CLIENTS.to_string(),
        path_str(&wording).to_string(),
        "peek".to_string(),
    ];
    let rec = tmp.join("rec");
    let recorded = serve_with(&program, &args, Some(&rec), &[]);
    let want = histories(&rec);
    let peeks = want["p1"]
        .iter()
        .filter(|r| matches!(r, ddbx_wire::Record::Peek { n, .. } if *n > 0))
        .count();
    assert!(peeks >= CLIENTS, "{:?}", want["p1"]);
    replays_alone(&tmp, &rec, &recorded, &want);
}

/// Three replays of `rec` without any client: the record's requests (`recorded`: its output)
/// in the same order, and its histories (`want`).
fn replays_alone(tmp: &TempDir, rec: &std::path::Path, recorded: &str, want: &Histories) {
    for i in 1..=3 {
        let out_dir = tmp.join(&format!("replay{i}"));
        let replayed = DDBX
            .run(["replay", "--history-out", path_str(&out_dir), path_str(rec)])
            .success();
        assert_eq!(requests(&replayed.stdout), requests(recorded), "replay {i}");
        assert_same_histories(want, &histories(&out_dir), &format!("replay {i}"));
    }
}

/// The server's output without its first line (`port P`: the kernel's choice in each run).
fn requests(out: &str) -> Vec<&str> {
    out.lines().skip(1).collect()
}

/// `ext_loop MODE` with outside clients: the race natively, then record, 3 replays alone
/// (same requests in the same order, same histories), a halting replay at `ddbx inf`'s cut,
/// and an optimal-tracing record replayed twice.
fn event_loop_with_outside_clients(mode: &str) {
    let program = progs().join("ext_loop");
    let args = [mode.to_string(), CLIENTS.to_string()];
    let mut seen = Vec::new();
    for _ in 0..30 {
        let out = serve_with(&program, &args, None, &[]);
        let order = requests(&out).join("|");
        if !seen.contains(&order) {
            seen.push(order);
        }
        if seen.len() >= 2 {
            break;
        }
    }
    assert!(
        seen.len() >= 2,
        "30 native runs in the same order: {seen:?}"
    );

    let tmp = TempDir::new("ext-loop");
    let rec = tmp.join("rec");
    let recorded = serve_with(&program, &args, Some(&rec), &[]);
    let want = histories(&rec);
    replays_alone(&tmp, &rec, &recorded, &want);

    let half = format!("p1:{}", want["p1"].len() / 2);
    let inf = DDBX.json(["inf", path_str(&rec), "--stop-at", &half, "--json"]);
    let messages = tmp.join("halt.json");
    DDBX.run([
        "replay",
        path_str(&rec),
        "--stop-at",
        &half,
        "--json",
        "--messages",
        path_str(&messages),
    ])
    .success();
    let halted = parse_json(
        &std::fs::read_to_string(&messages).unwrap_or_default(),
        "ddbx replay --json",
    );
    assert_eq!(halted["outcome"], "halted", "{halted}");
    assert_eq!(cut_of(&halted["cut"]), cut_of(&inf["cut"]), "{halted}");

    let optimal = tmp.join("optimal");
    let recorded = serve_with(&program, &args, Some(&optimal), &["--trace", "optimal"]);
    let full = full_histories(&optimal);
    for i in 1..=2 {
        let out_dir = tmp.join(&format!("optimal-replay{i}"));
        let replayed = DDBX
            .run([
                "replay",
                "--history-out",
                path_str(&out_dir),
                path_str(&optimal),
            ])
            .success();
        assert_eq!(
            requests(&replayed.stdout),
            requests(&recorded),
            "optimal replay {i}"
        );
        assert_same_histories(&full, &histories(&out_dir), &format!("optimal replay {i}"));
    }
}

#[test]
fn a_poll_loop_with_outside_clients_replays_alone() {
    event_loop_with_outside_clients("poll");
}

#[test]
fn an_edge_triggered_epoll_loop_with_outside_clients_replays_alone() {
    event_loop_with_outside_clients("et");
}

/// A client of an outside server that names the server's address on each send of its
/// connected TCP socket (sendto, and sendmsg with `msg_name`; ldns's drill does so), which TCP
/// ignores. In replay the server is played through a Unix socket, which refuses an address on
/// a connected socket (EISCONN): before, the replay diverged at the first send ("a send on fd 3
/// that failed (errno 106)"). The address is left out in replay, as TCP leaves it out.
#[test]
fn a_send_naming_the_peer_on_a_connected_socket_replays_against_a_played_server() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let server = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap_or_else(|e| panic!("{e}"));
        let mut line = String::new();
        BufReader::new(&conn)
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("{e}"));
        (&conn)
            .write_all(format!("got {}", line).as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
    });
    let tmp = TempDir::new("sendto-peer");
    let rec = tmp.join("rec");
    let port = port.to_string();
    let recorded = DDBX
        .record(&rec, &progs().join("sendto_peer"), &[&port])
        .success();
    server
        .join()
        .unwrap_or_else(|_| panic!("the outside server failed"));
    assert_eq!(recorded.stdout, "reply: got hello there\n");
    for _ in 0..2 {
        let replayed = DDBX.run(["replay", path_str(&rec)]).success();
        assert_eq!(replayed.stdout, recorded.stdout, "{}", replayed.stderr);
    }
}
