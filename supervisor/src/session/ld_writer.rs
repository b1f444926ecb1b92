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

    /// Sends the handshake's answer (`Welcome` or `Refuse`; not counted as a control message),
    /// with the descriptors the GD opened for the LD.
    pub(crate) fn send_handshake(&self, msg: &GdToLd, fds: &[OwnedFd]) -> std::io::Result<()> {
        if fds.is_empty() {
            return self.write_line(&proto::encode(msg));
        }
        self.write_with_fds(&proto::encode(msg), fds)
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
        let _ = self.write_with_fds(&proto::encode(msg), std::slice::from_ref(fd));
    }

    /// Writes `line` with `fds` attached to its first byte.
    fn write_with_fds(&self, line: &str, fds: &[OwnedFd]) -> std::io::Result<()> {
        let mut stream = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        let raw: Vec<i32> = fds.iter().map(AsRawFd::as_raw_fd).collect();
        let sent = loop {
            let iov = [IoSlice::new(line.as_bytes())];
            match sendmsg::<()>(
                stream.as_raw_fd(),
                &iov,
                &[ControlMessage::ScmRights(&raw)],
                MsgFlags::empty(),
                None,
            ) {
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
                Ok(n) => break n,
            }
        };
        // The descriptors went with the first byte; the rest of a long line follows.
        stream.write_all(&line.as_bytes()[sent..])
    }

    fn write_line(&self, line: &str) -> std::io::Result<()> {
        // A thread that panicked while writing leaves at worst a torn line, which the LD
        // reports; go on.
        let mut stream = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        stream.write_all(line.as_bytes())
    }
}
