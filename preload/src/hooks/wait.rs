//! Readiness: select, pselect, poll, ppoll (and fortified variants), epoll. A readiness call
//! is recorded when it watches at least one channel end; otherwise it passes through.
//!
//! Each hook decodes its arguments into a [`ReadinessCall`] (`readiness.rs`: how its
//! structures hold a ready set); record and replay are then the same for all three calls
//! (`record/ready.rs`, `replay/ready.rs`).

use super::hook;
use crate::fds::{self, epoll};
use crate::ld::Ld;
use crate::readiness::{EpollCall, PollCall, ReadinessCall, SelectCall};
use crate::{real, record, replay, sys};
use ddbx_wire::proto::Mode;
use libc::{c_int, epoll_event, fd_set, nfds_t, pollfd, sigset_t, size_t, timespec, timeval};

/// The LD, when a readiness call that watches a channel end must be recorded or replayed.
fn ld_for_wait(watches_streams: bool) -> Option<&'static mut Ld> {
    if !watches_streams {
        crate::replay::cursor::before_blocking(false);
        return None;
    }
    let ld = super::active()?;
    ld.check_thread();
    crate::replay::threads::await_turn(ld);
    Some(ld)
}

/// Records or replays a readiness call, by mode.
fn dispatch<C: ReadinessCall>(ld: &mut Ld, call: &mut C) -> c_int {
    match ld.mode {
        Mode::Record => record::ready::wait(ld, call),
        Mode::Replay => replay::ready::wait(ld, call),
    }
}

/// poll and its variants; `call()` makes the real call.
///
/// # Safety
/// `pfds` must be null or point to `n` pollfds the program lets the call read and write.
unsafe fn on_poll(
    pfds: *mut pollfd,
    n: nfds_t,
    timeout_us: Option<u64>,
    call: impl FnMut() -> c_int,
) -> c_int {
    // SAFETY: the program's array of n pollfds, as the caller promises.
    let mut poll = unsafe { PollCall::new(pfds, n, timeout_us, call) };
    let Some(ld) = ld_for_wait(poll.watches_streams()) else {
        return poll.call();
    };
    dispatch(ld, &mut poll)
}

hook! {
    /// poll(2).
    fn poll(pfds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int {
        // SAFETY: the program's pollfd array of `n` entries (poll's contract), in `on_poll`
        // and in the real call.
        unsafe { on_poll(pfds, n, replay::ready::millis(timeout), || real::poll(pfds, n, timeout)) }
    }
}

hook! {
    /// The fortified poll(2).
    fn __poll_chk(pfds: *mut pollfd, n: nfds_t, timeout: c_int, len: size_t) -> c_int {
        // SAFETY: as for poll; the real function checks `n` against `len`.
        unsafe { on_poll(pfds, n, replay::ready::millis(timeout), || real::__poll_chk(pfds, n, timeout, len)) }
    }
}

hook! {
    /// ppoll(2).
    fn ppoll(pfds: *mut pollfd, n: nfds_t, t: *const timespec, mask: *const sigset_t) -> c_int {
        // SAFETY: as for poll; `t` and `mask` are null or the program's (ppoll's contract).
        unsafe { on_poll(pfds, n, replay::ready::timespec(t), || real::ppoll(pfds, n, t, mask)) }
    }
}

hook! {
    /// The fortified ppoll(2).
    fn __ppoll_chk(pfds: *mut pollfd, n: nfds_t, t: *const timespec, mask: *const sigset_t, len: size_t) -> c_int {
        // SAFETY: as for ppoll; the real function checks `n` against `len`.
        unsafe { on_poll(pfds, n, replay::ready::timespec(t), || real::__ppoll_chk(pfds, n, t, mask, len)) }
    }
}

/// select and pselect; `call()` makes the real call.
///
/// # Safety
/// Each set must be null or the program's fd_set, valid for the whole call.
unsafe fn on_select(
    n: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    e: *mut fd_set,
    timeout_us: Option<u64>,
    mut call: impl FnMut() -> c_int,
) -> c_int {
    // SAFETY: as the caller promises.
    let mut select = unsafe { SelectCall::new(n, r, w, e, timeout_us, &mut call) };
    let Some(ld) = ld_for_wait(select.watches_streams()) else {
        return select.call();
    };
    dispatch(ld, &mut select)
}

hook! {
    /// select(2).
    fn select(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, t: *mut timeval) -> c_int {
        // SAFETY: each set and `t` null or the program's (select's contract), in `on_select`
        // and in the real call.
        unsafe { on_select(n, r, w, e, replay::ready::timeval(t), || real::select(n, r, w, e, t)) }
    }
}

hook! {
    /// pselect(2).
    fn pselect(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, t: *const timespec, mask: *const sigset_t) -> c_int {
        // SAFETY: as for select; `mask` is null or the program's (pselect's contract).
        unsafe { on_select(n, r, w, e, replay::ready::timespec(t), || real::pselect(n, r, w, e, t, mask)) }
    }
}

hook! {
    /// epoll_create(2).
    fn epoll_create(size: c_int) -> c_int {
        // SAFETY: no pointer arguments.
        let fd = super::made_fd(|| unsafe { real::epoll_create(size) });
        fds::set(fd, fds::EPOLL);
        fd
    }
}

hook! {
    /// epoll_create1(2).
    fn epoll_create1(flags: c_int) -> c_int {
        // SAFETY: no pointer arguments.
        let fd = super::made_fd(|| unsafe { real::epoll_create1(flags) });
        fds::set(fd, fds::EPOLL);
        fd
    }
}

hook! {
    /// epoll_ctl(2): the kernel gets the LD's token for the fd as `data` (`fds/epoll.rs`), and
    /// the program's `data` is remembered. An epoll set that watches a channel end, through
    /// whichever fd of the epoll instance, has its waits recorded.
    fn epoll_ctl(ep: c_int, op: c_int, fd: c_int, ev: *mut epoll_event) -> c_int {
        let adds = matches!(op, libc::EPOLL_CTL_ADD | libc::EPOLL_CTL_MOD);
        if !adds || ev.is_null() || super::active().is_none() {
            // SAFETY: `ev` is null or the program's event (epoll_ctl's contract).
            let r = unsafe { real::epoll_ctl(ep, op, fd, ev) };
            if r == 0 && op == libc::EPOLL_CTL_DEL {
                epoll::remove(ep, fd);
            }
            return r;
        }
        // SAFETY: not null, and the program's event (epoll_ctl's contract).
        let program = unsafe { *ev };
        let Some((slot, existed)) = epoll::claim(ep, fd) else {
            // No room to remember it: the kernel gets the program's data.
            // SAFETY: as above.
            return unsafe { real::epoll_ctl(ep, op, fd, ev) };
        };
        let mut ours = epoll_event {
            events: program.events,
            u64: epoll::token(fd),
        };
        // SAFETY: our own event, read by the call.
        let r = unsafe { real::epoll_ctl(ep, op, fd, &mut ours) };
        if r == 0 {
            slot.fill(program.u64);
            if fds::is_recorded_socket(fd) || fds::kind(fd) & fds::WATCHES_STREAMS != 0 {
                fds::update(ep, fds::WATCHES_STREAMS, 0);
            }
        } else if !existed {
            let err = sys::errno();
            slot.unclaim();
            sys::set_errno(err);
        }
        r
    }
}

/// epoll_wait and its variants; `call()` makes the real call.
///
/// # Safety
/// `events` must point to `max` epoll_events the program lets the call write.
unsafe fn on_epoll(
    ep: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout_us: Option<u64>,
    call: impl FnMut() -> c_int,
) -> c_int {
    // SAFETY: as the caller promises.
    let mut epoll = unsafe { EpollCall::new(ep, events, max, timeout_us, call) };
    let Some(ld) = ld_for_wait(epoll.watches_streams()) else {
        return epoll.call();
    };
    dispatch(ld, &mut epoll)
}

hook! {
    /// epoll_wait(2).
    fn epoll_wait(ep: c_int, evs: *mut epoll_event, max: c_int, timeout: c_int) -> c_int {
        // SAFETY: the program's array of `max` events (epoll_wait's contract), in `on_epoll`
        // and in the real call.
        unsafe {
            on_epoll(ep, evs, max, replay::ready::millis(timeout), || {
                real::epoll_wait(ep, evs, max, timeout)
            })
        }
    }
}

hook! {
    /// epoll_pwait(2).
    fn epoll_pwait(ep: c_int, evs: *mut epoll_event, max: c_int, timeout: c_int, mask: *const sigset_t) -> c_int {
        // SAFETY: as for epoll_wait; `mask` is null or the program's signal set.
        unsafe {
            on_epoll(ep, evs, max, replay::ready::millis(timeout), || {
                real::epoll_pwait(ep, evs, max, timeout, mask)
            })
        }
    }
}

hook! {
    /// epoll_pwait2(2).
    fn epoll_pwait2(ep: c_int, evs: *mut epoll_event, max: c_int, t: *const timespec, mask: *const sigset_t) -> c_int {
        // SAFETY: as for epoll_wait; `t` and `mask` are null or the program's (epoll_pwait2's
        // contract).
        unsafe {
            on_epoll(ep, evs, max, replay::ready::timespec(t), || {
                real::epoll_pwait2(ep, evs, max, t, mask)
            })
        }
    }
}
