//! The accept race and receive-from-any over the other recorded socket families: Unix stream
//! sockets (with `select`) and TCP over IPv6 loopback (with `poll`). Each shows the race
//! natively, then that three replays of one recording print what the record printed and write
//! the same histories.

use ddbx_tests::{Ddbx, Run, histories, native_outputs, progs};
use ddbx_wire::Record;
use std::path::Path;

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

/// Every `Connect` and `Accept` address in a recording.
fn addresses(rec: &Path) -> Vec<String> {
    histories(rec)
        .values()
        .flatten()
        .flat_map(|r| match r {
            Record::Connect { local, remote, .. } | Record::Accept { local, remote, .. } => {
                vec![local.clone(), remote.clone()]
            }
            _ => vec![],
        })
        .collect()
}

/// Blanks the `mkdtemp` part of unix_race's socket path (`/tmp/ddbx-unix_race.XXXXXX/sock`),
/// which differs from run to run like a port does.
fn blank_temp_dir(r: &mut Record) {
    let blank = |a: &mut String| {
        if let Some(i) = a.find("ddbx-unix_race.") {
            let start = i + "ddbx-unix_race.".len();
            if let Some(end) = a[start..].find('/') {
                a.replace_range(start..start + end, "*");
            }
        }
    };
    if let Record::Connect { local, remote, .. } | Record::Accept { local, remote, .. } = r {
        blank(local);
        blank(remote);
    }
}

/// The output of unix_race and ipv6_race: the accept order, then reads until all 3
/// connections reached their end.
fn assert_accepted_then_read_to_eof(stdout: &str) {
    assert!(stdout.starts_with("accepted: "), "{stdout}");
    assert_eq!(stdout.matches("eof on conn").count(), 3, "{stdout}");
}

#[test]
fn unix_socket_accept_race_and_select() {
    let program = progs().join("unix_race");
    let outputs = native_outputs(&program, &[], 5, 2, 30);
    assert!(
        outputs.len() >= 2,
        "30 native runs all printed:\n{}",
        outputs[0]
    );
    let jitter = [("DDBX_JITTER", "5")];
    let (tmp, recorded) = DDBX.record_and_replay_with(&program, &[], &jitter, 3, &blank_temp_dir);
    assert_accepted_then_read_to_eof(&recorded.stdout);
    // It really went over Unix sockets: 3 connects and 3 accepts, with unix: addresses.
    let h = histories(&tmp.join("rec"));
    let all: Vec<&Record> = h.values().flatten().collect();
    let connects = all
        .iter()
        .filter(|r| matches!(r, Record::Connect { remote, err: None, .. } if remote.starts_with("unix:")))
        .count();
    let accepts = all
        .iter()
        .filter(|r| matches!(r, Record::Accept { local, peer_pid: Some(_), .. } if local.starts_with("unix:")))
        .count();
    assert_eq!((connects, accepts), (3, 3), "{h:#?}");
    assert!(
        all.iter().any(|r| matches!(
            r,
            Record::Ready {
                call: ddbx_wire::history::WaitCall::Select,
                ..
            }
        )),
        "no select ready set recorded: {h:#?}"
    );
}

/// Whether this machine has a usable IPv6 loopback (the program itself says when not).
fn ipv6_available() -> bool {
    let out = Run::new(progs().join("ipv6_race")).output();
    assert_eq!(out.code, 0, "ipv6_race failed natively:\n{}", out.stderr);
    out.stdout != "ipv6 unavailable\n"
}

#[test]
fn ipv6_accept_race_and_poll() {
    if !ipv6_available() {
        eprintln!(
            "ipv6_accept_race_and_poll: ::1 is not available on this machine; nothing tested"
        );
        return;
    }
    let (tmp, recorded) = DDBX.race(&progs().join("ipv6_race"), &[], 5);
    assert_accepted_then_read_to_eof(&recorded.stdout);
    let addrs = addresses(&tmp.join("rec"));
    assert_eq!(
        addrs.len(),
        12,
        "3 connects + 3 accepts, 2 addresses each: {addrs:?}"
    );
    assert!(
        addrs.iter().all(|a| a.starts_with("[::1]:")),
        "every endpoint is on [::1]: {addrs:?}"
    );
}
