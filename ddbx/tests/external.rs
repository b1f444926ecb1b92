//! `ddbx record ./server` with clients that are not under ddbx: their bytes are input, logged;
//! the replay plays them, so the server replays alone; what the server sends them is compared
//! with the record.

use ddbx_tests::{Ddbx, TempDir, path_str, progs, spawn_in_group};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));
const CLIENTS: usize = 4;

/// Runs ext_server (under `ddbx record` if `rec` is given) and CLIENTS concurrent outside
/// clients with random delays; returns the server's output.
fn serve(
    program: &std::path::Path,
    wording: &std::path::Path,
    rec: Option<&std::path::Path>,
) -> String {
    let mut cmd = match rec {
        Some(dir) => {
            let mut c = Command::new(DDBX.path());
            c.arg("record").arg("-o").arg(dir).arg("--").arg(program);
            c
        }
        None => Command::new(program),
    };
    cmd.arg(CLIENTS.to_string())
        .arg(wording)
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
