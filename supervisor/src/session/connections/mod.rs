//! The GD socket: one thread accepts LD connections, one thread per connection serves it.
//!
//! Each connection starts with `Hello`, answered with `Welcome` or `Refuse` ([`welcome`]); the
//! messages that follow ([`messages`]) update the [`GdState`]. A replay `WhoIs` blocks its own
//! connection's thread on [`GdState::changed`] until the matching `Connected` arrives or the
//! session ends.

mod messages;
mod reader;
mod welcome;

use super::events::MainEvent;
use super::gd_state::GdState;
use super::ld_writer::LdWriter;
use super::procs;
use crate::actors::HelloFacts;
use ddbx_wire::proto::{self, LdToGd};
use messages::Connection;
use reader::LdReader;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Starts the thread that accepts LD connections until [`GdState::finish`] connects.
pub(crate) fn start_acceptor(
    listener: UnixListener,
    gd: Arc<GdState>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ddbx-gd-accept".into())
        .spawn(move || accept_all(&listener, &gd))
}

/// Accepts connections, each served by its own thread, until ddbx itself connects.
fn accept_all(listener: &UnixListener, gd: &Arc<GdState>) {
    let me = std::process::id() as i32;
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(stream) => stream,
            Err(_) => {
                // Out of fds or similar: the LD will see its connect fail.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if procs::peer_pid(&stream) == Some(me) {
            return;
        }
        gd.lock().open += 1;
        let for_thread = Arc::clone(gd);
        let spawned = std::thread::Builder::new()
            .name("ddbx-gd-ld".into())
            .spawn(move || {
                serve(&for_thread, stream);
                let mut tables = for_thread.lock();
                tables.open -= 1;
                for_thread.changed.notify_all();
            });
        if spawned.is_err() {
            let mut tables = gd.lock();
            tables.open -= 1;
            tables
                .notes
                .push("ddbx: internal: cannot start a thread for an LD connection".into());
        }
    }
}

/// Serves one LD connection until it closes.
fn serve(gd: &GdState, stream: UnixStream) {
    // The socket can be reached by any uid: only the session's own processes may go on.
    let Some(peer) = session_peer(gd, &stream) else {
        return;
    };
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = LdReader::new(read_half);
    let Some((hello, key)) = read_hello(gd, &mut reader) else {
        return;
    };
    if !keys_match(&key, &gd.access.key) {
        // One of the session's processes that does not hold its secret: it cannot be
        // recorded, and a record that lost a process must not succeed.
        let what = format!(
            "pid {} (uid {}, `{}`) tried to join the session without its secret ({}): it              runs unrecorded",
            peer.0,
            peer.1,
            hello.argv.join(" "),
            ddbx_wire::env::GD_KEY
        );
        let refusal = ddbx_wire::proto::GdToLd::Refuse { why: what.clone() };
        let _ = LdWriter::new(stream).send_handshake(&refusal, &[]);
        gd.send(MainEvent::Stop(super::outcome::End::Unsupported {
            actor: None,
            what,
        }));
        return;
    }
    let writer = LdWriter::new(stream);
    let greeting = welcome::welcome(gd, &hello);
    // A refused process is gone from the session's point of view once told so.
    if writer
        .send_handshake(&greeting.reply, &greeting.fds)
        .is_err()
    {
        return;
    }
    drop(greeting.fds);
    let Some(actor) = greeting.actor else {
        return;
    };
    // The next process's history, made now that this one is not waiting for it.
    gd.spares.refill();
    // Only now may others' requests reach this LD: after its Welcome.
    {
        let mut tables = gd.lock();
        if let Some(h) = tables.halting.as_mut() {
            h.attach(actor, greeting.incarnation, writer.clone());
        }
        if gd.plans.is_some() {
            tables.handovers.attach(actor, writer.clone());
        }
    }
    let from = Connection {
        actor,
        pid: hello.pid,
        incarnation: greeting.incarnation,
    };
    while let Some(line) = reader.read_line() {
        let message = match proto::decode::<LdToGd>(&line) {
            Ok(message) => message,
            Err(e) => {
                note(
                    gd,
                    format!(
                        "ddbx: internal: cannot read a message from {actor}: `{}` ({e})",
                        clip(&line)
                    ),
                );
                continue;
            }
        };
        let answer = match message {
            LdToGd::Handover { connector, .. } => {
                handed_over(gd, actor, connector, reader.take_fd());
                None
            }
            other => messages::handle(gd, &from, other),
        };
        if let Some(answer) = answer {
            writer.send(&answer);
        }
    }
    lost(gd, &from);
}

/// The connection of `from` ended. After an exit the GD knows already (counting it again
/// changes nothing); after an exec the process lives on and its new image says hello again. A
/// process killed from outside said nothing (or killed itself where its record was killed):
/// a halting replay counts it as exited, and a replay as at its end, or they would wait for it
/// for ever (its parent, held or blocked in a call that is not an event, does not reap it).
fn lost(gd: &GdState, from: &Connection) {
    if !procs::has_died(from.pid, std::time::Duration::from_millis(200)) {
        return;
    }
    if gd.plans.is_some() {
        messages::at_end(gd, from.actor);
    }
    let mut tables = gd.lock();
    if let Some(h) = tables.halting.as_mut() {
        h.exited(from.actor, 0);
        if h.check() {
            gd.send(MainEvent::Halted);
        }
    }
    drop(tables);
    gd.changed.notify_all();
}

/// The peer's pid and uid when it is one of the session's processes (a descendant of ddbx);
/// `None` after noting who else connected.
fn session_peer(gd: &GdState, stream: &UnixStream) -> Option<(i32, u32)> {
    let peer = procs::peer_credentials(stream);
    if let Some((pid, uid)) = peer
        && pid > 0
        && (forked_by_an_actor(gd, pid) || procs::is_descendant(pid, gd.access.ddbx_pid))
    {
        return Some((pid, uid));
    }
    let who = match peer {
        Some((pid, uid)) => format!("pid {pid} (uid {uid})"),
        None => "a process whose credentials could not be read".to_string(),
    };
    note(
        gd,
        format!("ddbx: refused a connection from {who}: not a process of this session"),
    );
    None
}

/// Whether the parent of process `pid` is a live process of the session, which descends from
/// ddbx: one `/proc` read, where walking the parent chain up to ddbx reads one per generation
/// (the GD answers every new process only after this check).
fn forked_by_an_actor(gd: &GdState, pid: i32) -> bool {
    procs::parent_of(pid).is_some_and(|parent| gd.lock().registry.live_actor(parent).is_some())
}

/// Compares two secrets in time that does not depend on where they differ.
fn keys_match(given: &str, key: &str) -> bool {
    given.len() == key.len()
        && given
            .bytes()
            .zip(key.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// Replay: `actor` handed over a connection (`fd`) that `connector` made.
fn handed_over(
    gd: &GdState,
    actor: ddbx_wire::ActorId,
    connector: super::handover::Connector,
    fd: Option<std::os::fd::OwnedFd>,
) {
    let (Some(plans), Some(fd)) = (gd.plans.as_ref(), fd) else {
        note(
            gd,
            format!(
                "ddbx: internal: {actor} handed over a connection that did not come with its message"
            ),
        );
        return;
    };
    gd.lock().handovers.handover(plans, connector, fd);
}

/// Reads the connection's first message, which must be `Hello`, with what the GD learns of the
/// process on its own (its start time), and the secret it carried.
fn read_hello(gd: &GdState, reader: &mut LdReader) -> Option<(HelloFacts, String)> {
    let first = reader.read_line()?;
    match proto::decode::<LdToGd>(&first) {
        Ok(LdToGd::Hello {
            protocol,
            pid,
            ppid,
            claim,
            argv,
            key,
        }) => Some((
            HelloFacts {
                protocol,
                pid,
                ppid,
                claim,
                argv,
                start_time: procs::start_time(pid),
            },
            key,
        )),
        Ok(other) => {
            note(
                gd,
                format!(
                    "ddbx: internal: an LD connection began with `{other:?}` instead of `Hello`"
                ),
            );
            None
        }
        Err(e) => {
            note(
                gd,
                format!(
                    "ddbx: internal: expected a `Hello` from an LD, found `{}` ({e})",
                    clip(&first)
                ),
            );
            None
        }
    }
}

/// A line for the user, shown by the main loop.
fn note(gd: &GdState, line: String) {
    gd.send(MainEvent::Note(line));
}

/// The start of a line that could not be read, for a message.
fn clip(s: &str) -> String {
    s.chars().take(120).collect()
}
