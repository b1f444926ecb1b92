//! The writing half of one LD connection, shared by the connection's own thread (its answers)
//! and the halting state machine (requests sent from whichever thread decides them).

use super::control_count::count_message;
use ddbx_wire::proto::{self, GdToLd};
use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
use std::io::{IoSlice, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

/// Where the GD writes to one LD; clones write to the same connection, one line at a time.
#[derive(Debug, Clone)]
pub(crate) struct LdWriter {
    stream: Arc<Mutex<UnixStream>>,
}

impl LdWriter {
    /// The writer of a connection.
    pub(crate) fn new(stream: UnixStream) -> LdWriter {
        LdWriter {
            stream: Arc::new(Mutex::new(stream)),
        }
    }

    /// Sends the handshake's answer (`Welcome` or `Refuse`; not counted as a control message).
    pub(crate) fn send_handshake(&self, msg: &GdToLd) -> std::io::Result<()> {
        self.write_line(&proto::encode(msg))
    }

    /// Sends one control message (ignored if the connection is closed: its LD is gone, and
    /// the reaper tells the session so).
    pub(crate) fn send(&self, msg: &GdToLd) {
        count_message();
        let _ = self.write_line(&proto::encode(msg));
    }

    /// Sends one message with a descriptor attached to it (`SCM_RIGHTS`; ignored if the
    /// connection is closed).
    pub(crate) fn send_with_fd(&self, msg: &GdToLd, fd: &OwnedFd) {
        let line = proto::encode(msg);
        let mut stream = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        let fds = [fd.as_raw_fd()];
        let sent = loop {
            let iov = [IoSlice::new(line.as_bytes())];
            match sendmsg::<()>(
                stream.as_raw_fd(),
                &iov,
                &[ControlMessage::ScmRights(&fds)],
                MsgFlags::empty(),
                None,
            ) {
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return,
                Ok(n) => break n,
            }
        };
        // The descriptor went with the first byte; the rest of a long line follows.
        let _ = stream.write_all(&line.as_bytes()[sent..]);
    }

    fn write_line(&self, line: &str) -> std::io::Result<()> {
        // A thread that panicked while writing leaves at worst a torn line, which the LD
        // reports; go on.
        let mut stream = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        stream.write_all(line.as_bytes())
    }
}
