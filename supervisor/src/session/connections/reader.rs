//! The reading half of one LD connection: lines, and the descriptors that come with some of
//! them (`SCM_RIGHTS`: a connection an LD hands over, [`ddbx_wire::proto::LdToGd::Handover`]).
//!
//! The kernel never joins two messages that carry descriptors in one read, and an LD sends
//! each such line in one `sendmsg` with its descriptor: the descriptors queue up in the order
//! of the lines they came with, and each `Handover` line takes the first.

use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
use std::collections::VecDeque;
use std::io::IoSliceMut;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// Reads lines and descriptors from one LD.
pub(super) struct LdReader {
    stream: UnixStream,
    /// Bytes read that do not end a line yet.
    pending: Vec<u8>,
    /// Descriptors received and not taken yet, in order.
    fds: VecDeque<OwnedFd>,
}

impl LdReader {
    /// The reader of a connection (a clone of its stream).
    pub(super) fn new(stream: UnixStream) -> LdReader {
        LdReader {
            stream,
            pending: Vec::new(),
            fds: VecDeque::new(),
        }
    }

    /// The next line without its newline; `None` at the end of the stream or on an error (a
    /// last line without its newline is returned first).
    pub(super) fn read_line(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return Some(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            match self.receive() {
                Some(0) | None if self.pending.is_empty() => return None,
                Some(0) | None => {
                    let line = std::mem::take(&mut self.pending);
                    return Some(String::from_utf8_lossy(&line).into_owned());
                }
                Some(_) => {}
            }
        }
    }

    /// The oldest descriptor received and not taken yet.
    pub(super) fn take_fd(&mut self) -> Option<OwnedFd> {
        self.fds.pop_front()
    }

    /// One `recvmsg`: its bytes go to `pending`, its descriptors to `fds`. The byte count, or
    /// `None` on an error.
    fn receive(&mut self) -> Option<usize> {
        let mut chunk = [0u8; 4096];
        let mut space = nix::cmsg_space!([RawFd; 8]);
        loop {
            let mut iov = [IoSliceMut::new(&mut chunk)];
            let received = recvmsg::<()>(
                self.stream.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            );
            let msg = match received {
                Ok(msg) => msg,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return None,
            };
            let bytes = msg.bytes;
            if let Ok(cmsgs) = msg.cmsgs() {
                for cmsg in cmsgs {
                    if let ControlMessageOwned::ScmRights(fds) = cmsg {
                        // SAFETY: the kernel just gave us these descriptors; nothing else
                        // owns them.
                        self.fds.extend(
                            fds.into_iter()
                                .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                        );
                    }
                }
            }
            self.pending.extend_from_slice(&chunk[..bytes]);
            return Some(bytes);
        }
    }
}
