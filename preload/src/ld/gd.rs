//! The LD's connection to the GD: one line of `ddbx_wire::proto` per message, both ways.
//!
//! Sends are one-way; the LD reads only when it waits for something (a reply, a halting
//! decision, the end of the session). The messages the GD sends on its own initiative (halting
//! control) are handled by whoever reads: `halting.rs` knows them, this file only moves lines.

use super::Ld;
use crate::sys;
use ddbx_wire::proto::{self, GdToLd, LdToGd};
use libc::c_int;
use std::sync::atomic::Ordering;

/// fcntl(2)'s F_SETSIG (Linux, `<fcntl.h>` with `_GNU_SOURCE`; the libc crate lacks it).
const F_SETSIG: c_int = 10;

/// Whether the LD is writing a message to the GD now (a signal handler that interrupted it
/// must not write one of its own into the middle of it).
static SENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a message may be sent from here: not from inside a signal handler that interrupted
/// the LD's own write of one.
pub fn may_send() -> bool {
    !crate::signals::in_signal_context() || !SENDING.load(Ordering::SeqCst)
}

impl Ld {
    /// Sends a one-way message to the GD (ignored if the GD is gone).
    pub fn send(&mut self, msg: &LdToGd) {
        if self.gd_fd >= 0 {
            let line = proto::encode(msg);
            let was = SENDING.swap(true, Ordering::SeqCst);
            sys::write_all(self.gd_fd, line.as_bytes());
            SENDING.store(was, Ordering::SeqCst);
        }
    }

    /// Sends a one-way message with descriptor `fd` attached (`SCM_RIGHTS`); false if it could
    /// not be sent.
    pub fn send_with_fd(&mut self, msg: &LdToGd, fd: c_int) -> bool {
        self.gd_fd >= 0 && sys::send_with_fd(self.gd_fd, proto::encode(msg).as_bytes(), fd)
    }

    /// The next message from the GD; `None` if the GD is gone. A connection the GD delivers
    /// (`Deliver`) is kept for the accept it belongs to before the message is returned. A
    /// message this LD cannot read (a ddbx bug: both ends come from one build) stops the
    /// session with what was wrong, rather than leaving the process waiting for a message that
    /// was already sent.
    pub fn receive(&mut self) -> Option<GdToLd> {
        let line = self.read_line()?;
        match proto::decode(&line) {
            Ok(msg) => {
                if let GdToLd::Deliver { connector } = &msg {
                    self.keep_delivered(*connector);
                }
                Some(msg)
            }
            Err(e) => {
                let clipped: String = line.chars().take(80).collect();
                self.unsupported(format!(
                    "internal: this process cannot read a message from ddbx (`{clipped}…`: {e})"
                ))
            }
        }
    }

    /// A `Deliver` came: its connection (the oldest descriptor received) joins the kept ones.
    fn keep_delivered(&mut self, (actor, event): (ddbx_wire::ActorId, u64)) {
        if self.gd_fds.is_empty() {
            sys::diag(
                self.log_fd,
                "ddbx-ld: a delivered connection without its descriptor",
            );
            return;
        }
        let fd = self.gd_fds.remove(0);
        match self.replay.as_mut() {
            Some(replay) => replay.kept.push(super::KeptConnection {
                fd,
                connector: Some(super::Connector { actor, event }),
            }),
            None => {
                crate::fds::forget_ours(fd);
                sys::close(fd);
            }
        }
    }

    /// Drops what came from the GD on the connection before this one (a forked child's copy
    /// of its parent's): bytes not read and descriptors not claimed.
    pub(super) fn forget_gd_input(&mut self) {
        self.gd_pending.clear();
        for fd in self.gd_fds.drain(..) {
            crate::fds::forget_ours(fd);
            sys::close(fd);
        }
    }

    fn read_line(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.gd_pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.gd_pending.drain(..=end).collect();
                return Some(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            let mut chunk = [0u8; 4096];
            let mut fds = [-1; sys::MAX_FDS_IN];
            let (n, count) = sys::recv_with_fds(self.gd_fd, &mut chunk, &mut fds);
            for fd in &fds[..count] {
                let fd = sys::move_high(*fd, crate::fds::KEPT_FDS);
                self.gd_fds.push(crate::fds::mark_ours(fd));
            }
            if n < 0 && sys::errno() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                return None;
            }
            self.gd_pending.extend_from_slice(&chunk[..n as usize]);
        }
    }

    /// Holds this process to the GD's lifeline (`ddbx_wire::LIFELINE`, beside the GD's socket):
    /// our own open file description of the FIFO's read end, owned by this process, with
    /// `O_ASYNC` and SIGKILL as its signal. When the GD's process ends (however it ends), the
    /// FIFO loses its only writer and the kernel sends SIGKILL to every reader that asked, at
    /// once: nothing of a session outlives its supervisor, and the debuggee needs no thread and
    /// no check on the hook path. Each image and each forked child opens its own description
    /// (an inherited one names its parent as owner). Armed first, then checked: a read that
    /// finds no writer means the GD was already gone, and this process ends the same way.
    /// Without the FIFO (it cannot be opened) the process goes on as before.
    pub(super) fn hold_lifeline(&mut self) {
        let dir_len = self
            .gd_path
            .iter()
            .rposition(|b| *b == b'/')
            .map_or(0, |i| i + 1);
        let mut path = self.gd_path[..dir_len].to_vec();
        path.extend_from_slice(ddbx_wire::LIFELINE.as_bytes());
        let fd = sys::open(
            &path,
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
            0,
        );
        if fd < 0 {
            sys::diag(
                self.log_fd,
                "ddbx-ld: no lifeline to the GD; its death is noticed only when this process talks to it",
            );
            return;
        }
        let fd = crate::fds::mark_ours(sys::move_high(fd, crate::fds::HIGH_FD));
        self.lifeline_fd = fd;
        let armed = sys::fcntl(fd, libc::F_SETOWN, libc::c_long::from(sys::getpid())) == 0
            && sys::fcntl(fd, F_SETSIG, libc::c_long::from(libc::SIGKILL)) == 0
            && sys::fcntl(
                fd,
                libc::F_SETFL,
                libc::c_long::from(libc::O_NONBLOCK | libc::O_ASYNC),
            ) == 0;
        if !armed {
            sys::diag(self.log_fd, "ddbx-ld: cannot arm the lifeline to the GD");
        }
        let mut byte = [0u8; 1];
        if sys::read(fd, &mut byte) == 0 {
            // No writer: the GD is gone. End as its death ends every other process.
            sys::kill_self(libc::SIGKILL);
        }
    }

    /// Whether a whole message from the GD has been read but not handled yet.
    pub fn gd_message_buffered(&self) -> bool {
        self.gd_pending.contains(&b'\n')
    }

    /// The connection to the GD, for a wait on it together with other fds (-1: none).
    pub fn gd_fd(&self) -> c_int {
        self.gd_fd
    }

    /// Waits up to `timeout_ms` (-1: for ever) for the GD to send something: what `poll(2)` says
    /// of the connection (revents, 0 on timeout, -1 with errno on error or a signal).
    pub fn poll_gd(&self, timeout_ms: c_int) -> c_int {
        sys::poll_one(self.gd_fd, libc::POLLIN, timeout_ms)
    }

    /// Whether the GD has sent something not handled yet.
    pub fn gd_has_input(&self) -> bool {
        self.gd_message_buffered() || (self.gd_fd >= 0 && self.poll_gd(0) > 0)
    }

    /// Blocks until the GD ends the session (it kills us), then exits with `status` if the GD
    /// goes away instead.
    pub fn wait_for_the_end(&mut self, status: c_int) -> ! {
        while self.read_line().is_some() {}
        sys::exit_group(status)
    }

    /// [`Ld::wait_for_the_end`], calling `check` every 50 ms while nothing comes.
    pub fn wait_for_the_end_checking(&mut self, status: c_int, mut check: impl FnMut()) -> ! {
        loop {
            check();
            if (self.gd_message_buffered() || self.poll_gd(50) > 0) && self.read_line().is_none() {
                sys::exit_group(status)
            }
        }
    }

    /// The GD disappeared during a replay: this process cannot be replayed further.
    pub fn gd_gone(&mut self) -> ! {
        sys::write_all(
            2,
            b"ddbx: the supervisor is gone; this replayed process stops here\n",
        );
        sys::exit_group(ddbx_wire::exit::DIVERGED)
    }

    /// Refuses what ddbx cannot record faithfully: tells the GD (which stops the session).
    pub fn unsupported(&mut self, what: String) -> ! {
        self.send(&LdToGd::Unsupported {
            actor: self.actor,
            what,
        });
        self.wait_for_the_end(ddbx_wire::exit::UNSUPPORTED)
    }

    /// Socket I/O is only recorded from one thread per process (an actor is a thread, and
    /// threads are not actors yet): a second thread is refused rather than recorded wrongly.
    pub fn check_thread(&mut self) {
        if self.threads_ordered() {
            return;
        }
        let tid = crate::guard::tid();
        match self
            .io_tid
            .compare_exchange(0, tid, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => {}
            Err(first) if first == tid => {}
            Err(first) => self.unsupported(format!(
                "socket I/O from a second thread (tid {tid}; the first was tid {first}): \
                 ddbx records one thread of socket I/O per process for now"
            )),
        }
    }

    /// Whether the calling thread's pipes are recorded: the thread that did recorded I/O first,
    /// or, before any did, the main thread. A helper thread that makes and uses its own pipes
    /// before the main thread's first socket I/O (Node's inspector and platform threads each
    /// run a libuv loop with a signal pipe) must not become the actor's thread: the main
    /// thread's sockets would then be refused as a second thread's (exit 103). Its pipes pass
    /// through, reported.
    pub fn is_io_thread(&self) -> bool {
        self.threads_ordered() || self.values_thread()
    }

    /// Whether the calling thread's events are ordered among the process's other threads'
    /// (`baton.rs`, `replay/threads.rs`): the process has threads whose locks are ordered,
    /// this thread is one of them, and the history is a full one (optimal tracing keeps one
    /// thread of socket I/O).
    pub fn threads_ordered(&self) -> bool {
        crate::locks::threaded() && self.trace.is_none() && crate::locks::me() != 0
    }

    /// Whether every kind of `bits` was reported already.
    pub fn has_reported(&self, bits: u32) -> bool {
        self.passthrough_seen & bits == bits
    }

    /// Reports, once per kind, I/O that ddbx passes through unrecorded.
    pub fn passthrough(&mut self, bit: u32, what: &str) {
        if self.passthrough_seen & bit == 0 {
            self.passthrough_seen |= bit;
            let msg = LdToGd::Passthrough {
                actor: self.actor,
                what: what.to_string(),
            };
            self.send(&msg);
        }
    }
}
