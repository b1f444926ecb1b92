//! What poll, select and epoll_wait have in common, for their record and replay: a
//! [`ReadinessCall`] makes the real call and reads or writes a ready set in the program's own
//! structures (a pollfd array, three fd_sets, an epoll_event array). With it,
//! `record/ready.rs` and `replay/ready.rs` handle the three calls with one piece of code each.
//! `hooks/wait.rs` decodes each hook's arguments into a [`PollCall`], [`SelectCall`] or
//! [`EpollCall`].

use crate::fds::{self, epoll};
use crate::{real, sys};
use ddbx_wire::Events;
use ddbx_wire::history::{ReadyFd, WaitCall};
use libc::{c_int, epoll_event, fd_set, nfds_t, pollfd};

/// One readiness call of the program, with its arguments.
pub trait ReadinessCall {
    /// Which call, as histories name it.
    const KIND: WaitCall;

    /// Makes the real call as the program asked (with its timeout).
    fn call(&mut self) -> c_int;

    /// The ready fds the call left in the program's structures after it returned `r`. `Err`
    /// says what cannot be recorded (epoll data that was never registered).
    fn ready_fds(&self, r: c_int) -> Result<Vec<ReadyFd>, String>;

    /// The program's timeout in microseconds (`None`: it waits for ever).
    fn timeout_us(&self) -> Option<u64>;

    /// What the call is, for divergence messages (`a poll on fds [3, 4]`).
    fn describe(&self) -> String;

    /// Replay: writes the recorded ready `set` into the program's structures and returns what
    /// the call returns. `Err`: the program does not watch what the record saw ready (a
    /// divergence; `what` is [`ReadinessCall::describe`]).
    fn report(&mut self, set: &[ReadyFd], what: &str) -> Result<c_int, String>;

    /// Optimal tracing, record: whether the call watches for reading only and `one`, the only
    /// fd it reported, is reported readable only (then its outcome may go unlogged).
    fn reads_one(&self, one: &ReadyFd) -> bool;

    /// The fds the call watches (for optimal tracing's decision).
    fn watched(&self) -> Vec<c_int>;

    /// Optimal tracing, replay: whether the recorded outcome may be unlogged (then replay makes
    /// [`ReadinessCall::call_without_timeout`] and checks that it reports one fd).
    fn may_be_untraced(&self) -> bool;

    /// The real call without timeout, restarted after a signal.
    fn call_without_timeout(&mut self) -> c_int;

    /// A live run: the real call again with a timeout of `us` microseconds (what is left of
    /// the program's in virtual time); `None` if it cannot be made again (a select whose sets
    /// the timeout cleared).
    fn call_for(&mut self, us: u64) -> Option<c_int>;

    /// Every fd the call waits on (an epoll set's registrations included).
    fn waits_on(&self) -> Vec<c_int> {
        self.watched()
    }
}

/// Microseconds as the milliseconds of a poll or epoll timeout, rounded up.
fn ms_of(us: u64) -> c_int {
    us.div_ceil(1000).min(c_int::MAX as u64) as c_int
}

fn describe(call: &str, fds: impl Iterator<Item = c_int>) -> String {
    let list: Vec<String> = fds.map(|f| f.to_string()).collect();
    format!("a {call} on fds [{}]", list.join(", "))
}

/// A poll (or ppoll) of the program's pollfd array.
pub struct PollCall<F: FnMut() -> c_int> {
    /// The program's array (null, or valid for `n` entries while this lives).
    pfds: *mut pollfd,
    n: nfds_t,
    timeout_us: Option<u64>,
    /// The real call as the program made it.
    real_call: F,
}

impl<F: FnMut() -> c_int> PollCall<F> {
    /// A poll of the `n` entries at `pfds` with this timeout; `real_call` makes it.
    ///
    /// # Safety
    /// `pfds` must be null or point to `n` pollfds that the program lets the call read and
    /// write, valid while this lives.
    pub unsafe fn new(pfds: *mut pollfd, n: nfds_t, timeout_us: Option<u64>, real_call: F) -> Self {
        PollCall {
            pfds,
            n,
            timeout_us,
            real_call,
        }
    }

    /// The program's entries (read afresh: the real call writes them).
    fn entries(&self) -> &[pollfd] {
        if self.pfds.is_null() || self.n == 0 {
            &[]
        } else {
            // SAFETY: `n` pollfds at `pfds` (see `new`); no other reference to them is live.
            unsafe { std::slice::from_raw_parts(self.pfds, self.n as usize) }
        }
    }

    /// The program's entries, to write.
    fn entries_mut(&mut self) -> &mut [pollfd] {
        if self.pfds.is_null() || self.n == 0 {
            &mut []
        } else {
            // SAFETY: as for `entries`; `&mut self` makes this the only reference.
            unsafe { std::slice::from_raw_parts_mut(self.pfds, self.n as usize) }
        }
    }

    /// Whether the call watches a channel end.
    pub fn watches_streams(&self) -> bool {
        self.entries().iter().any(|p| fds::is_recorded_socket(p.fd))
    }
}

impl<F: FnMut() -> c_int> ReadinessCall for PollCall<F> {
    const KIND: WaitCall = WaitCall::Poll;

    fn call(&mut self) -> c_int {
        (self.real_call)()
    }

    fn ready_fds(&self, r: c_int) -> Result<Vec<ReadyFd>, String> {
        Ok(self
            .entries()
            .iter()
            .filter(|p| r > 0 && p.revents != 0)
            .map(|p| ReadyFd {
                fd: p.fd,
                ev: Events(p.revents as u16 as u32),
            })
            .collect())
    }

    fn timeout_us(&self) -> Option<u64> {
        self.timeout_us
    }

    fn describe(&self) -> String {
        describe("poll", self.entries().iter().map(|p| p.fd))
    }

    fn report(&mut self, set: &[ReadyFd], what: &str) -> Result<c_int, String> {
        if let Some(missing) = set
            .iter()
            .find(|f| !self.entries().iter().any(|p| p.fd == f.fd))
        {
            return Err(format!("{what} (the record saw fd {} ready)", missing.fd));
        }
        let mut count = 0;
        for p in self.entries_mut() {
            p.revents = set
                .iter()
                .find(|f| f.fd == p.fd)
                .map_or(0, |f| f.ev.0 as u16 as i16);
            if p.revents != 0 {
                count += 1;
            }
        }
        Ok(count)
    }

    fn reads_one(&self, one: &ReadyFd) -> bool {
        let readable = (libc::POLLIN | libc::POLLRDNORM) as u32;
        let only_reads = self
            .entries()
            .iter()
            .all(|p| p.fd < 0 || p.events as u32 & !(readable | libc::POLLRDHUP as u32) == 0);
        only_reads && one.ev.0 & !readable == 0
    }

    fn watched(&self) -> Vec<c_int> {
        self.entries()
            .iter()
            .filter(|p| p.fd >= 0)
            .map(|p| p.fd)
            .collect()
    }

    fn may_be_untraced(&self) -> bool {
        true
    }

    fn call_without_timeout(&mut self) -> c_int {
        let entries = self.entries_mut();
        let (entries, n) = (entries.as_mut_ptr(), entries.len() as nfds_t);
        // SAFETY: the program's array of `n` pollfds.
        sys::restart_on_eintr(|| unsafe { real::poll(entries, n, -1) })
    }

    fn call_for(&mut self, us: u64) -> Option<c_int> {
        let entries = self.entries_mut();
        let (entries, n) = (entries.as_mut_ptr(), entries.len() as nfds_t);
        // SAFETY: the program's array of `n` pollfds.
        Some(unsafe { real::poll(entries, n, ms_of(us)) })
    }
}

/// A select (or pselect) of the program's fd_sets, each null or valid for `n` fds.
pub struct SelectCall<F: FnMut() -> c_int> {
    n: c_int,
    read: *mut fd_set,
    write: *mut fd_set,
    except: *mut fd_set,
    /// The fds watched in any set.
    watched: Vec<c_int>,
    /// No fd is watched for writing or exceptions (as passed: select overwrites the sets).
    only_reads: bool,
    /// The read set as the program passed it (a select restarted after a signal needs it).
    read_as_passed: Option<fd_set>,
    timeout_us: Option<u64>,
    /// The real call as the program made it.
    real_call: F,
}

/// Whether `fd` is in `set` (a null set holds nothing).
///
/// # Safety
/// `set` must be null or a valid fd_set; `fd` below FD_SETSIZE.
unsafe fn isset(set: *mut fd_set, fd: c_int) -> bool {
    // SAFETY: as the caller promises.
    !set.is_null() && unsafe { libc::FD_ISSET(fd, set) }
}

impl<F: FnMut() -> c_int> SelectCall<F> {
    /// Decodes select's arguments; `real_call` makes the call.
    ///
    /// # Safety
    /// Each set must be null or the program's fd_set, valid while this lives.
    pub unsafe fn new(
        n: c_int,
        read: *mut fd_set,
        write: *mut fd_set,
        except: *mut fd_set,
        timeout_us: Option<u64>,
        real_call: F,
    ) -> Self {
        let n = n.clamp(0, libc::FD_SETSIZE as c_int);
        // SAFETY: each set null or valid (the caller's promise), fd < n <= FD_SETSIZE.
        let isset = |set: *mut fd_set, fd: c_int| unsafe { isset(set, fd) };
        let watched: Vec<c_int> = (0..n)
            .filter(|fd| isset(read, *fd) || isset(write, *fd) || isset(except, *fd))
            .collect();
        let only_reads = watched
            .iter()
            .all(|fd| !isset(write, *fd) && !isset(except, *fd));
        // SAFETY: the program's read set, valid when not null.
        let read_as_passed = unsafe { read.as_ref() }.copied();
        SelectCall {
            n,
            read,
            write,
            except,
            watched,
            only_reads,
            read_as_passed,
            timeout_us,
            real_call,
        }
    }

    /// Whether the call watches a channel end.
    pub fn watches_streams(&self) -> bool {
        self.watched.iter().any(|fd| fds::is_recorded_socket(*fd))
    }

    /// Whether `fd` is in `set`.
    fn isset(&self, set: *mut fd_set, fd: c_int) -> bool {
        // SAFETY: `set` is one of the program's sets (valid or null, see `new`), fd < n.
        unsafe { isset(set, fd) }
    }
}

impl<F: FnMut() -> c_int> ReadinessCall for SelectCall<F> {
    const KIND: WaitCall = WaitCall::Select;

    fn call(&mut self) -> c_int {
        (self.real_call)()
    }

    fn ready_fds(&self, r: c_int) -> Result<Vec<ReadyFd>, String> {
        let mut ready = Vec::new();
        if r > 0 {
            for fd in 0..self.n {
                let ev = (if self.isset(self.read, fd) {
                    Events::IN
                } else {
                    0
                }) | (if self.isset(self.write, fd) {
                    Events::OUT
                } else {
                    0
                }) | (if self.isset(self.except, fd) {
                    Events::PRI
                } else {
                    0
                });
                if ev != 0 {
                    ready.push(ReadyFd { fd, ev: Events(ev) });
                }
            }
        }
        Ok(ready)
    }

    fn timeout_us(&self) -> Option<u64> {
        self.timeout_us
    }

    fn describe(&self) -> String {
        describe("select", self.watched.iter().copied())
    }

    fn report(&mut self, set: &[ReadyFd], what: &str) -> Result<c_int, String> {
        let mut count = 0;
        for (fds, bit) in [
            (self.read, Events::IN),
            (self.write, Events::OUT),
            (self.except, Events::PRI),
        ] {
            if fds.is_null() {
                continue;
            }
            for fd in 0..self.n {
                let on = set.iter().any(|f| f.fd == fd && f.ev.0 & bit != 0);
                if on && !self.isset(fds, fd) {
                    return Err(format!("{what} (the record saw fd {fd} ready)"));
                }
                // SAFETY: fd < n <= FD_SETSIZE, in one of the program's sets (not null).
                unsafe {
                    if on {
                        libc::FD_SET(fd, fds);
                        count += 1;
                    } else {
                        libc::FD_CLR(fd, fds);
                    }
                }
            }
        }
        Ok(count)
    }

    fn reads_one(&self, one: &ReadyFd) -> bool {
        self.only_reads && one.ev.0 == Events::IN
    }

    fn watched(&self) -> Vec<c_int> {
        self.watched.clone()
    }

    fn may_be_untraced(&self) -> bool {
        self.only_reads
    }

    fn call_without_timeout(&mut self) -> c_int {
        loop {
            // SAFETY: the program's sets; no timeout: the record saw an fd ready.
            let r = unsafe {
                real::select(
                    self.n,
                    self.read,
                    self.write,
                    self.except,
                    std::ptr::null_mut(),
                )
            };
            if r < 0
                && sys::errno() == libc::EINTR
                && let Some(set) = self.read_as_passed
            {
                // SAFETY: the program's read set (not null, since it was saved).
                unsafe { *self.read = set };
                continue;
            }
            return r;
        }
    }

    fn call_for(&mut self, us: u64) -> Option<c_int> {
        let set = self.read_as_passed.filter(|_| self.only_reads)?;
        // SAFETY: the program's read set (not null, since it was saved).
        unsafe { *self.read = set };
        let mut tv = libc::timeval {
            tv_sec: (us / 1_000_000) as libc::time_t,
            tv_usec: (us % 1_000_000) as libc::suseconds_t,
        };
        // SAFETY: the program's sets and a timeval of ours.
        Some(unsafe {
            real::select(
                self.n,
                self.read,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut tv,
            )
        })
    }
}

/// An epoll_wait (or epoll_pwait, epoll_pwait2) into the program's epoll_event array, valid
/// for `max` entries.
///
/// The kernel reports the LD's tokens (`fds/epoll.rs`): [`ReadinessCall::call`] turns each
/// back into the program's `data` and keeps the fd it names.
pub struct EpollCall<F: FnMut() -> c_int> {
    ep: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout_us: Option<u64>,
    /// The fd of each event of the last real call (`None`: data the LD cannot place).
    reported: Vec<Option<c_int>>,
    /// The real call as the program made it.
    real_call: F,
}

impl<F: FnMut() -> c_int> EpollCall<F> {
    /// A wait on epoll set `ep` into `events`; `real_call` makes it.
    ///
    /// # Safety
    /// `events` must point to `max` epoll_events the program lets the call write, valid while
    /// this lives.
    pub unsafe fn new(
        ep: c_int,
        events: *mut epoll_event,
        max: c_int,
        timeout_us: Option<u64>,
        real_call: F,
    ) -> Self {
        EpollCall {
            ep,
            events,
            max,
            timeout_us,
            reported: Vec::new(),
            real_call,
        }
    }

    /// Whether the epoll set watches a channel end (through any fd of the epoll instance).
    pub fn watches_streams(&self) -> bool {
        fds::kind(self.ep) & fds::WATCHES_STREAMS != 0
    }

    /// After a real call that returned `r`: gives each event the program's own `data` back
    /// and notes the fd it is for.
    fn translate(&mut self, r: c_int) {
        self.reported.clear();
        for i in 0..r.clamp(0, self.max) as usize {
            // SAFETY: the kernel filled `r <= max` entries of the program's array.
            let e = unsafe { &mut *self.events.add(i) };
            let data = e.u64;
            let fd = match epoll::token_fd(data) {
                Some(fd) => {
                    if let Some(program) = epoll::data_of(self.ep, fd) {
                        e.u64 = program;
                    }
                    Some(fd)
                }
                None => epoll::fd_of(self.ep, data),
            };
            self.reported.push(fd);
        }
    }
}

impl<F: FnMut() -> c_int> ReadinessCall for EpollCall<F> {
    const KIND: WaitCall = WaitCall::Epoll;

    fn call(&mut self) -> c_int {
        let r = (self.real_call)();
        let err = sys::errno();
        self.translate(r);
        sys::set_errno(err);
        r
    }

    fn ready_fds(&self, r: c_int) -> Result<Vec<ReadyFd>, String> {
        let mut ready = Vec::new();
        for (i, fd) in self.reported.iter().enumerate().take(r.max(0) as usize) {
            // SAFETY: the kernel filled `r` entries of the program's array (i < r).
            let e = unsafe { *self.events.add(i) };
            let Some(fd) = *fd else {
                let data = e.u64;
                return Err(format!(
                    "epoll_wait reported data {data:#x}, which was never registered with epoll_ctl"
                ));
            };
            ready.push(ReadyFd {
                fd,
                ev: Events(e.events),
            });
        }
        Ok(ready)
    }

    fn timeout_us(&self) -> Option<u64> {
        self.timeout_us
    }

    fn describe(&self) -> String {
        format!("an epoll_wait on epoll fd {}", self.ep)
    }

    fn report(&mut self, set: &[ReadyFd], what: &str) -> Result<c_int, String> {
        if set.len() > self.max.max(0) as usize {
            return Err(format!(
                "{what} for at most {} events (the record got {})",
                self.max,
                set.len()
            ));
        }
        for (i, f) in set.iter().enumerate() {
            let Some(data) = epoll::data_of(self.ep, f.fd) else {
                return Err(format!("{what} in which fd {} is not registered", f.fd));
            };
            // SAFETY: i < max entries of the program's array (checked above).
            unsafe {
                *self.events.add(i) = epoll_event {
                    events: f.ev.0,
                    u64: data,
                }
            };
        }
        Ok(set.len() as c_int)
    }

    // Optimal tracing logs every epoll_wait (its registrations are not enumerated).

    fn reads_one(&self, _one: &ReadyFd) -> bool {
        false
    }

    fn watched(&self) -> Vec<c_int> {
        Vec::new()
    }

    fn may_be_untraced(&self) -> bool {
        false
    }

    fn call_without_timeout(&mut self) -> c_int {
        // SAFETY: the program's array of `max` events (epoll_wait's contract).
        let r = unsafe { real::epoll_wait(self.ep, self.events, self.max, -1) };
        let err = sys::errno();
        self.translate(r);
        sys::set_errno(err);
        r
    }

    fn call_for(&mut self, us: u64) -> Option<c_int> {
        // SAFETY: the program's array of `max` events (epoll_wait's contract).
        let r = unsafe { real::epoll_wait(self.ep, self.events, self.max, ms_of(us)) };
        let err = sys::errno();
        self.translate(r);
        sys::set_errno(err);
        Some(r)
    }

    fn waits_on(&self) -> Vec<c_int> {
        epoll::registered(self.ep)
    }
}
