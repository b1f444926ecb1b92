//! A live run (`ddbx run --break-if P`, paper 001): the LD's part of lazy halting. The record
//! goes on as usual; on top of it:
//!
//! * after each event, the actor's simple predicate of P (from the `Welcome`'s [`LivePlan`])
//!   is evaluated; when it becomes true or false the GD is told (`Break`), and when true the
//!   LD waits for `Proceed` (at once, unless this completes P: then the actor *stops* there
//!   until `cont`);
//! * while a halt is on (the clock page says so: a load from memory per event), the LD asks
//!   before a send or a receive on a channel to another process of the session (`Touch`); if
//!   that process stands, this one is *delayed* there until the halt is over;
//! * a timed wait (poll, epoll, select, a receive with `SO_RCVTIMEO`) whose timeout expires
//!   with a halt in between asks the same for each channel it watched, and, if one of their
//!   peers stood, waits again for what is left of its timeout in virtual time (real time minus
//!   the halts): a halt makes no peer time out.
//!
//! The peer of a channel is a process id: for a Unix socket, the kernel's `SO_PEERCRED`; for
//! a TCP connection, the size of the peer's endpoint note (`record/peers.rs`), which is its
//! pid in a live run. The waits are inside hooks: no handler of the program runs meanwhile.

use super::Ld;
use ddbx_wire::live_clock::LiveClock;
use ddbx_wire::pred::{self, Value};
use ddbx_wire::proto::{GdToLd, LdToGd, LivePlan};
use libc::c_int;

/// The LD's state in a live run.
pub struct LiveState {
    /// This actor's simple predicate (`None`: it has none).
    sp: Option<pred::Expr>,
    /// Whether it held after the last event.
    holds: bool,
    /// The clock page, mapped for reading (null: it could not be).
    clock: *const u8,
}

impl LiveState {
    /// The state for `plan`, with the clock page mapped.
    pub fn new(plan: LivePlan) -> LiveState {
        LiveState {
            sp: plan.sp,
            holds: false,
            clock: map_clock(plan.clock.as_bytes()),
        }
    }

    fn clock(&self) -> Option<&LiveClock> {
        // SAFETY: a mapping of the page's SIZE bytes that stays for the process's life.
        (!self.clock.is_null()).then(|| unsafe { LiveClock::at(self.clock) })
    }
}

/// Maps the clock page at `path` for reading; null if it cannot be (the run goes on, without
/// lazy halting for this process).
fn map_clock(path: &[u8]) -> *const u8 {
    let fd = crate::sys::open(path, libc::O_RDONLY | libc::O_CLOEXEC, 0);
    if fd < 0 {
        return std::ptr::null();
    }
    // SAFETY: a read-only shared mapping of a file we opened; the kernel checks the rest.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ddbx_wire::live_clock::SIZE,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    crate::sys::close(fd);
    if p == libc::MAP_FAILED {
        std::ptr::null()
    } else {
        p.cast()
    }
}

/// When a timed wait started: real time and the halts' time then (ns).
#[derive(Debug, Clone, Copy)]
pub struct WaitStart {
    real: u64,
    halted: u64,
}

impl Ld {
    /// Live run: after an event, says when the simple predicate changed; when it became true
    /// and completes P, the actor stands here until the halt is over.
    pub(super) fn live_after(&mut self) {
        let Some(sp) = self.live.as_mut().and_then(|l| l.sp.take()) else {
            return;
        };
        let holds = pred::holds(&sp, &mut |v| {
            super::variables::lookup(self, v).map(Value::Int)
        });
        let Some(live) = self.live.as_mut() else {
            return;
        };
        live.sp = Some(sp);
        if holds == live.holds {
            return;
        }
        live.holds = holds;
        let vars = if holds {
            super::variables::variables(self)
        } else {
            Vec::new()
        };
        self.send(&LdToGd::Break {
            actor: self.actor,
            events: self.events(),
            holds,
            vars,
        });
        if holds {
            self.wait_to_proceed();
        }
    }

    /// Waits for the GD's `Proceed`; whether the peer of a `Touch` stood.
    fn wait_to_proceed(&mut self) -> bool {
        while let Some(message) = self.receive() {
            if let GdToLd::Proceed { peer_stopped } = message {
                return peer_stopped;
            }
        }
        false
    }

    /// Whether a halt is on (false outside a live run).
    fn live_halted(&self) -> bool {
        self.live
            .as_ref()
            .and_then(LiveState::clock)
            .is_some_and(LiveClock::halted)
    }

    /// Live run, during a halt: before `doing` on `fd`, asks whether its peer stands; if so,
    /// waits here until the halt is over.
    pub fn live_touch(&mut self, fd: c_int, doing: &str) {
        if !self.live_halted() {
            return;
        }
        if let Some(peer) = self.peer_pid(fd) {
            self.touch(peer, false, format!("{doing} on fd {fd}"));
        }
    }

    fn touch(&mut self, peer: i32, timed_out: bool, doing: String) -> bool {
        let vars = super::variables::variables(self);
        self.send(&LdToGd::Touch {
            actor: self.actor,
            events: self.events(),
            peer,
            timed_out,
            doing,
            vars,
        });
        self.wait_to_proceed()
    }

    /// Live run: the start of a timed wait (`None` outside a live run).
    pub fn live_wait_start(&self) -> Option<WaitStart> {
        let clock = self.live.as_ref()?.clock()?;
        let real = crate::sys::monotonic_ns();
        Some(WaitStart {
            real,
            halted: clock.halted_time(real),
        })
    }

    /// Live run: a wait on `fds` that started at `start` timed out after `timeout_us`. If a
    /// halt came in between and one of the fds' peers stood in it (the LD waits for the halt
    /// to end if it is still on), what is left of the timeout in virtual time (µs, at least
    /// 1); `None`: the timeout stands.
    pub fn live_timed_out(
        &mut self,
        start: WaitStart,
        fds: &[c_int],
        timeout_us: u64,
        doing: &str,
    ) -> Option<u64> {
        let clock = self.live.as_ref()?.clock()?;
        let overlapped =
            clock.halted() || clock.halted_time(crate::sys::monotonic_ns()) > start.halted;
        if !overlapped {
            return None;
        }
        let mut stood = false;
        for &fd in fds {
            if let Some(peer) = self.peer_pid(fd) {
                stood |= self.touch(peer, true, format!("{doing} (timed out)"));
            }
        }
        if !stood {
            return None;
        }
        let clock = self.live.as_ref()?.clock()?;
        let now = crate::sys::monotonic_ns();
        let halted = clock.halted_time(now).saturating_sub(start.halted);
        let elapsed = now.saturating_sub(start.real).saturating_sub(halted);
        let timeout = timeout_us.saturating_mul(1000);
        (elapsed < timeout).then(|| ((timeout - elapsed) / 1000).max(1))
    }

    /// The process at the other end of `fd`, if it is another one of the session's.
    fn peer_pid(&self, fd: c_int) -> Option<i32> {
        let me = crate::sys::getpid();
        let local = crate::fds::socket_addr(fd, false);
        let pid = if crate::fds::inet(&local) {
            self.noted_peer(fd, &local)
        } else {
            peer_cred(fd)
        }?;
        (pid > 0 && pid != me).then_some(pid)
    }
}

impl Ld {
    /// `<runtime>/ep/<from>><to>`, or `<runtime>/ep/<from>` when `to` is empty: the note of a
    /// TCP endpoint of a recorded process (`record/peers.rs`).
    pub fn endpoint_note(&self, from: &str, to: &str) -> Option<Vec<u8>> {
        let mut path = self.runtime_dir()?.to_vec();
        path.extend_from_slice(b"/ep/");
        path.extend_from_slice(from.as_bytes());
        if !to.is_empty() {
            path.push(b'>');
            path.extend_from_slice(to.as_bytes());
        }
        Some(path)
    }

    /// The pid of the recorded process at the other end of TCP connection `fd` (`local`: its
    /// own address), from the size of that end's note, which is its pid in a live run;
    /// `None` if it has none (an outside peer, or one that has not noted its end yet).
    fn noted_peer(&self, fd: c_int, local: &str) -> Option<i32> {
        let remote = crate::fds::socket_addr(fd, true);
        let path = self.endpoint_note(&remote, local)?;
        let mut buf = [0u8; 512];
        let p = crate::sys::cstr(&path, &mut buf)?;
        // SAFETY: a zeroed stat buffer of ours.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated path and the buffer.
        let r = unsafe { libc::syscall(libc::SYS_newfstatat, libc::AT_FDCWD, p, &mut st, 0) };
        (r == 0 && st.st_size > 0).then_some(st.st_size as i32)
    }
}

/// The process that made the other end of Unix socket `fd` (`SO_PEERCRED`).
fn peer_cred(fd: c_int) -> Option<i32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a ucred of ours and its length.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(cred.pid)
}
