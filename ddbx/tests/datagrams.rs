//! UDP sockets (issue #10: every outcome a process can observe through a hooked call is
//! recorded): which datagram a receive gets, and from whom, is a race; the record keeps each
//! received datagram (`RecvDatagram`: bytes, sender, ancillary data) and each send
//! (`SendDatagram`), replay hands every receive its datagram from the history and sends
//! nothing, and the analysis pairs each datagram with its send, so that a halt stops where
//! `ddbx inf` says and `ddbx races` lists which datagram a receive could have got.
//!
//! `udp_race` is a UDP server with 4 forked clients, shown racy natively, in three ways of
//! waiting and receiving: poll + recvfrom, epoll + recvmsg with `IP_PKTINFO` ancillary data,
//! select + recvmmsg; and alone with clients outside the session (the test's), which the
//! replay does without. `dns_id` sends a query built by libc's `res_mkquery`, whose id comes
//! from a clock read no hook sees (busybox's nslookup, under the dnsmasq corpus script).

use ddbx_tests::{Ddbx, TempDir, histories, path_str, progs, spawn_in_group};
use ddbx_wire::Record;
use std::io::{BufRead, BufReader, Read};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::Duration;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// `udp_race MODE`: the race shown natively, recorded, replayed 3 times with the same output
/// and histories, and halted after each of the server's events where `ddbx inf` says.
fn udp_race(mode: &str) {
    let program = progs().join("udp_race");
    let (tmp, recorded) = DDBX.race(&program, &[mode], 20);
    assert!(recorded.stdout.starts_with("order "), "{}", recorded.stdout);
    let rec = tmp.join("rec");
    let h = histories(&rec);
    let datagrams = |actor: &str, sent: bool| {
        h[actor]
            .iter()
            .filter(|r| match r {
                Record::SendDatagram { .. } => sent,
                Record::RecvDatagram { .. } => !sent,
                _ => false,
            })
            .count()
    };
    assert_eq!(
        datagrams("p1", false),
        4,
        "the server's receives: {:?}",
        h["p1"]
    );
    assert_eq!(
        datagrams("p1", true),
        4,
        "the server's sends: {:?}",
        h["p1"]
    );
    for client in ["p2", "p3", "p4", "p5"] {
        assert_eq!((datagrams(client, true), datagrams(client, false)), (1, 1));
    }
    if mode == "epoll" {
        // The ancillary data (IP_PKTINFO) is kept with the datagram.
        assert!(
            h["p1"].iter().any(|r| matches!(
                r,
                Record::RecvDatagram {
                    control: Some(_),
                    ..
                }
            )),
            "{:?}",
            h["p1"]
        );
    }
    for k in 6..=h["p1"].len() {
        DDBX.halts_where_inf_says(&rec, &format!("p1.events >= {k}"));
    }
    // The server's first receive could have got any of the 4 datagrams (the clients send
    // independently), and its race is unaffected.
    let races = DDBX.json(["races", path_str(&rec), "--json"]);
    let first = &races["races"][0];
    assert_eq!(
        (
            first["kind"].as_str(),
            first["actor"].as_str(),
            first["unaffected"].as_bool()
        ),
        (Some("datagram"), Some("p1"), Some(true)),
        "{races}"
    );
    let messages = |what: &str| first[what].as_array().map_or(0, Vec::len);
    assert_eq!((messages("got"), messages("could")), (1, 3), "{first}");
}

#[test]
fn udp_datagrams_waited_for_with_poll_replay_and_halt() {
    udp_race("poll");
}

#[test]
fn udp_datagrams_with_ancillary_data_waited_for_with_epoll_replay_and_halt() {
    udp_race("epoll");
}

#[test]
fn udp_datagrams_taken_by_recvmmsg_replay_and_halt() {
    udp_race("mmsg");
}

/// Under `--trace optimal` too (its histories log every datagram).
#[test]
fn udp_datagrams_replay_under_optimal_tracing() {
    DDBX.replays_under_optimal_tracing(&progs().join("udp_race"), &["epoll"]);
}

/// `udp_race outside` (under `ddbx record` if `rec` is given) with 4 clients of the test's
/// that send their datagram after a random delay and check the answer; the server's output.
fn serve_outside(rec: Option<&std::path::Path>) -> String {
    let program = progs().join("udp_race");
    let mut cmd = match rec {
        Some(dir) => {
            let mut c = Command::new(DDBX.path());
            c.arg("record").arg("-o").arg(dir).arg("--").arg(&program);
            c
        }
        None => Command::new(&program),
    };
    cmd.arg("outside")
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
    let clients: Vec<_> = (1..=4u32)
        .map(|i| {
            std::thread::spawn(move || {
                // Random delays make the arrival order a real race.
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.subsec_nanos())
                    .unwrap_or(0);
                std::thread::sleep(Duration::from_micros(u64::from(
                    (nanos ^ (i * 7919)) % 4000,
                )));
                let s = UdpSocket::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
                s.send_to(format!("c{i}").as_bytes(), ("127.0.0.1", port))
                    .unwrap_or_else(|e| panic!("{e}"));
                let mut buf = [0u8; 64];
                let n = s.recv(&mut buf).unwrap_or_else(|e| panic!("{e}"));
                String::from_utf8_lossy(&buf[..n]).into_owned()
            })
        })
        .collect();
    for (i, c) in clients.into_iter().enumerate() {
        let answer = c.join().unwrap_or_else(|_| panic!("a client failed"));
        assert!(answer.starts_with(&format!("ack {} ", i + 1)), "{answer:?}");
    }
    let mut rest = String::new();
    out.read_to_string(&mut rest)
        .unwrap_or_else(|e| panic!("{e}"));
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "{status:?}");
    first + &rest
}

/// A UDP server recorded with clients outside the session replays alone: its datagrams come
/// from its history, in the recorded order, from the recorded senders.
#[test]
fn a_udp_server_with_outside_clients_replays_alone() {
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..30 {
        let out = serve_outside(None);
        let order = out.lines().skip(1).collect::<String>();
        if !seen.contains(&order) {
            seen.push(order);
        }
        if seen.len() >= 2 {
            break;
        }
    }
    assert!(
        seen.len() >= 2,
        "30 native runs took the datagrams in one order: {seen:?}"
    );
    let tmp = TempDir::new("udp-outside");
    let rec = tmp.join("rec");
    let recorded = serve_outside(Some(&rec));
    for i in 1..=3 {
        // The port too: the kernel chose it at the record's bind, the replay's bind takes it.
        let replayed = DDBX.run(["replay", path_str(&rec)]).success();
        assert_eq!(replayed.stdout, recorded, "replay {i}");
    }
    // Nothing pairs these datagrams with a send of the session's: a halt needs no sender.
    DDBX.halts_where_inf_says(&rec, "p1.events >= 4");
}

/// The id of a query built by `res_mkquery` is the record's in replay, so the client matches
/// the answer from its history to its query (before: the replay's client sent another id, a
/// divergence at its send).
#[test]
fn a_dns_query_built_by_libc_keeps_its_id() {
    let program = progs().join("dns_id");
    let (_tmp, recorded) = DDBX.race(&program, &[], 0);
    assert!(
        recorded.stdout.ends_with("answered: yes\n"),
        "{}",
        recorded.stdout
    );
}

/// Unix datagram sockets are recorded as UDP's are: `unix_dgram named` (clients bound to
/// their own paths, answered by the server) replays the race, halts where `ddbx inf` says
/// (each datagram paired with its send by the sender's path) and `ddbx races` lists the
/// server's first receive; `unix_dgram connect` (clients connecting to a server that binds
/// late, retrying while refused) replays how many tries each connect took (`~d` values).
#[test]
fn unix_datagram_sockets() {
    let program = progs().join("unix_dgram");
    let dir = TempDir::new("unix-dgram");
    let (tmp, recorded) = DDBX.race(&program, &["named", path_str(dir.path())], 20);
    assert!(
        recorded.stdout.starts_with("order: "),
        "{}",
        recorded.stdout
    );
    let rec = tmp.join("rec");
    let h = histories(&rec);
    let received = h["p1"]
        .iter()
        .filter(|r| matches!(r, Record::RecvDatagram { .. }))
        .count();
    assert_eq!(received, 4, "{:?}", h["p1"]);
    for k in 6..=h["p1"].len() {
        DDBX.halts_where_inf_says(&rec, &format!("p1.events >= {k}"));
    }
    let races = DDBX.json(["races", path_str(&rec), "--json"]);
    assert_eq!(
        races["races"][0]["kind"].as_str(),
        Some("datagram"),
        "{races}"
    );

    let (_tmp, recorded) = DDBX.race(&program, &["connect", path_str(dir.path())], 20);
    assert_eq!(
        recorded.stdout.matches(" r").count(),
        4,
        "{}",
        recorded.stdout
    );
}
