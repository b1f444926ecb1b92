//! Readiness: select, pselect, poll, ppoll (and fortified variants), epoll. A readiness call
//! is recorded when it watches at least one channel end; otherwise it passes through.

use super::hook;
use crate::{fds, ld, real, record, replay, sys};
use ddbx_wire::Events;
use ddbx_wire::history::{ReadyFd, WaitCall};
use ddbx_wire::proto::Mode;
use libc::{c_int, epoll_event, fd_set, nfds_t, pollfd, sigset_t, size_t, timespec, timeval};

/// The LD, when a readiness call that watches a channel end must be recorded or replayed.
fn ld_for_wait(watches_streams: bool) -> Option<&'static mut ld::Ld> {
    if !watches_streams {
        return None;
    }
    let ld = ld::active()?;
    ld.check_thread();
    Some(ld)
}

fn describe(call: &str, fds: impl Iterator<Item = c_int>) -> String {
    let list: Vec<String> = fds.map(|f| f.to_string()).collect();
    format!("a {call} on fds [{}]", list.join(", "))
}

/// poll and its variants; `call()` makes the real call.
unsafe fn on_poll(
    pfds: *mut pollfd,
    n: nfds_t,
    timeout_us: Option<u64>,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let entries: &mut [pollfd] = if pfds.is_null() || n == 0 {
        &mut []
    } else {
        // SAFETY: the caller's array of n pollfds.
        unsafe { std::slice::from_raw_parts_mut(pfds, n as usize) }
    };
    let Some(ld) = ld_for_wait(entries.iter().any(|p| fds::is_stream(p.fd))) else {
        return call();
    };
    let untraced = ld.mode == Mode::Replay && replay::ready::untraced_next(ld);
    match ld.mode {
        Mode::Record if ld.trace.is_some() => {
            let r = call();
            let err = sys::errno();
            let ready: Vec<ReadyFd> = entries
                .iter()
                .filter(|p| r > 0 && p.revents != 0)
                .map(|p| ReadyFd {
                    fd: p.fd,
                    ev: Events(p.revents as u16 as u32),
                })
                .collect();
            let readable = (libc::POLLIN | libc::POLLRDNORM) as u32;
            let only_reads = entries
                .iter()
                .all(|p| p.fd < 0 || p.events as u32 & !(readable | libc::POLLRDHUP as u32) == 0);
            let decision = match (ld.trace.as_mut(), ready.as_slice()) {
                (Some(t), [one]) if only_reads && one.ev.0 & !readable == 0 => {
                    let watched: Vec<c_int> =
                        entries.iter().filter(|p| p.fd >= 0).map(|p| p.fd).collect();
                    t.ready_one(&watched, one.fd)
                }
                _ => crate::trace::Decision::Logged,
            };
            ld.emit_decided(&record::ready(WaitCall::Poll, r, err, ready), decision);
            sys::set_errno(err);
            r
        }
        Mode::Replay if untraced => {
            let r = loop {
                // SAFETY: the caller's array.
                let r = unsafe { real::poll(entries.as_mut_ptr(), entries.len() as nfds_t, -1) };
                if r < 0 && sys::errno() == libc::EINTR {
                    continue;
                }
                break r;
            };
            let err = sys::errno();
            let ready = entries
                .iter()
                .filter(|p| r > 0 && p.revents != 0)
                .map(|p| ReadyFd {
                    fd: p.fd,
                    ev: Events(p.revents as u16 as u32),
                })
                .collect();
            replay::ready::untraced_done(ld, WaitCall::Poll, r, err, ready);
            r
        }
        Mode::Record => {
            let r = call();
            let err = sys::errno();
            let ready = entries
                .iter()
                .filter(|p| r > 0 && p.revents != 0)
                .map(|p| ReadyFd {
                    fd: p.fd,
                    ev: Events(p.revents as u16 as u32),
                })
                .collect();
            ld.emit(&record::ready(WaitCall::Poll, r, err, ready));
            sys::set_errno(err);
            r
        }
        Mode::Replay => {
            let what = describe("poll", entries.iter().map(|p| p.fd));
            match replay::ready::next_ready_set(ld, WaitCall::Poll, &what, timeout_us) {
                Err(e) => {
                    sys::set_errno(e);
                    -1
                }
                Ok(set) => {
                    if let Some(missing) =
                        set.iter().find(|f| !entries.iter().any(|p| p.fd == f.fd))
                    {
                        ld.diverge(&format!("{what} (the record saw fd {} ready)", missing.fd));
                    }
                    let mut count = 0;
                    for p in entries.iter_mut() {
                        p.revents = set
                            .iter()
                            .find(|f| f.fd == p.fd)
                            .map_or(0, |f| f.ev.0 as u16 as i16);
                        if p.revents != 0 {
                            count += 1;
                        }
                    }
                    replay::ready::done(ld, WaitCall::Poll, set);
                    count
                }
            }
        }
    }
}

hook! {
    /// poll(2).
    fn poll(pfds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int {
        on_poll(pfds, n, replay::ready::millis(timeout), || unsafe { real::poll(pfds, n, timeout) })
    }
}

hook! {
    /// The fortified poll(2).
    fn __poll_chk(pfds: *mut pollfd, n: nfds_t, timeout: c_int, len: size_t) -> c_int {
        on_poll(pfds, n, replay::ready::millis(timeout), || unsafe { real::__poll_chk(pfds, n, timeout, len) })
    }
}

hook! {
    /// ppoll(2).
    fn ppoll(pfds: *mut pollfd, n: nfds_t, t: *const timespec, mask: *const sigset_t) -> c_int {
        on_poll(pfds, n, replay::ready::timespec(t), || unsafe { real::ppoll(pfds, n, t, mask) })
    }
}

hook! {
    /// The fortified ppoll(2).
    fn __ppoll_chk(pfds: *mut pollfd, n: nfds_t, t: *const timespec, mask: *const sigset_t, len: size_t) -> c_int {
        on_poll(pfds, n, replay::ready::timespec(t), || unsafe { real::__ppoll_chk(pfds, n, t, mask, len) })
    }
}

/// select and pselect; `call()` makes the real call.
unsafe fn on_select(
    n: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    e: *mut fd_set,
    timeout_us: Option<u64>,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let n = n.clamp(0, libc::FD_SETSIZE as c_int);
    // SAFETY: each set is null or the caller's fd_set.
    let isset = |set: *mut fd_set, fd: c_int| !set.is_null() && unsafe { libc::FD_ISSET(fd, set) };
    let watched: Vec<c_int> = (0..n)
        .filter(|fd| isset(r, *fd) || isset(w, *fd) || isset(e, *fd))
        .collect();
    let Some(ld) = ld_for_wait(watched.iter().any(|fd| fds::is_stream(*fd))) else {
        return call();
    };
    let only_reads = watched.iter().all(|fd| !isset(w, *fd) && !isset(e, *fd));
    let saved = (!r.is_null()).then(|| {
        // SAFETY: the caller's set.
        unsafe { *r }
    });
    let untraced = ld.mode == Mode::Replay && only_reads && replay::ready::untraced_next(ld);
    match ld.mode {
        Mode::Replay if untraced => {
            let ret = loop {
                // SAFETY: the caller's sets; no timeout: the record saw an fd ready.
                let ret = unsafe { real::select(n, r, w, e, std::ptr::null_mut()) };
                if ret < 0
                    && sys::errno() == libc::EINTR
                    && let Some(set) = saved
                {
                    // SAFETY: restoring the caller's set.
                    unsafe { *r = set };
                    continue;
                }
                break ret;
            };
            let err = sys::errno();
            let ready = (0..n)
                .filter(|fd| ret > 0 && isset(r, *fd))
                .map(|fd| ReadyFd {
                    fd,
                    ev: Events(Events::IN),
                })
                .collect();
            replay::ready::untraced_done(ld, WaitCall::Select, ret, err, ready);
            ret
        }
        Mode::Record => {
            let ret = call();
            let err = sys::errno();
            let mut ready = Vec::new();
            if ret > 0 {
                for fd in 0..n {
                    let ev = (if isset(r, fd) { Events::IN } else { 0 })
                        | (if isset(w, fd) { Events::OUT } else { 0 })
                        | (if isset(e, fd) { Events::PRI } else { 0 });
                    if ev != 0 {
                        ready.push(ReadyFd { fd, ev: Events(ev) });
                    }
                }
            }
            let decision = match (ld.trace.as_mut(), ready.as_slice()) {
                (Some(t), [one]) if only_reads && one.ev.0 == Events::IN => {
                    t.ready_one(&watched, one.fd)
                }
                _ => crate::trace::Decision::Logged,
            };
            if ld.trace.is_some() {
                ld.emit_decided(&record::ready(WaitCall::Select, ret, err, ready), decision);
            } else {
                ld.emit(&record::ready(WaitCall::Select, ret, err, ready));
            }
            sys::set_errno(err);
            ret
        }
        Mode::Replay => {
            let what = describe("select", watched.iter().copied());
            match replay::ready::next_ready_set(ld, WaitCall::Select, &what, timeout_us) {
                Err(err) => {
                    sys::set_errno(err);
                    -1
                }
                Ok(set) => {
                    let mut count = 0;
                    for (set_ptr, bit) in [(r, Events::IN), (w, Events::OUT), (e, Events::PRI)] {
                        if set_ptr.is_null() {
                            continue;
                        }
                        for fd in 0..n {
                            let on = set.iter().any(|f| f.fd == fd && f.ev.0 & bit != 0);
                            if on && !isset(set_ptr, fd) {
                                ld.diverge(&format!("{what} (the record saw fd {fd} ready)"));
                            }
                            // SAFETY: fd < FD_SETSIZE, the caller's set.
                            unsafe {
                                if on {
                                    libc::FD_SET(fd, set_ptr);
                                    count += 1;
                                } else {
                                    libc::FD_CLR(fd, set_ptr);
                                }
                            }
                        }
                    }
                    replay::ready::done(ld, WaitCall::Select, set);
                    count
                }
            }
        }
    }
}

hook! {
    /// select(2).
    fn select(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, t: *mut timeval) -> c_int {
        on_select(n, r, w, e, replay::ready::timeval(t), || unsafe { real::select(n, r, w, e, t) })
    }
}

hook! {
    /// pselect(2).
    fn pselect(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, t: *const timespec, mask: *const sigset_t) -> c_int {
        on_select(n, r, w, e, replay::ready::timespec(t), || unsafe { real::pselect(n, r, w, e, t, mask) })
    }
}

hook! {
    /// epoll_create(2).
    fn epoll_create(size: c_int) -> c_int {
        let fd = real::epoll_create(size);
        if fd >= 0 {
            fds::forget(fd);
        }
        fd
    }
}

hook! {
    /// epoll_create1(2).
    fn epoll_create1(flags: c_int) -> c_int {
        let fd = real::epoll_create1(flags);
        if fd >= 0 {
            fds::forget(fd);
        }
        fd
    }
}

hook! {
    /// epoll_ctl(2): registrations are remembered (fd ↔ data).
    fn epoll_ctl(ep: c_int, op: c_int, fd: c_int, ev: *mut epoll_event) -> c_int {
        let r = real::epoll_ctl(ep, op, fd, ev);
        if r == 0 {
            match op {
                libc::EPOLL_CTL_ADD | libc::EPOLL_CTL_MOD if !ev.is_null() => {
                    let e = *ev;
                    fds::ep_set(ep, fd, e.u64);
                    if fds::is_stream(fd) {
                        fds::update(ep, fds::WATCHES_STREAMS, 0);
                    }
                }
                libc::EPOLL_CTL_DEL => fds::ep_remove(ep, fd),
                _ => {}
            }
        }
        r
    }
}

/// epoll_wait and its variants; `call()` makes the real call.
unsafe fn on_epoll(
    ep: c_int,
    evs: *mut epoll_event,
    max: c_int,
    timeout_us: Option<u64>,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let Some(ld) = ld_for_wait(fds::kind(ep) & fds::WATCHES_STREAMS != 0) else {
        return call();
    };
    match ld.mode {
        Mode::Record => {
            let r = call();
            let err = sys::errno();
            let mut ready = Vec::new();
            for i in 0..r.max(0) as usize {
                // SAFETY: the kernel filled r entries.
                let e = unsafe { *evs.add(i) };
                let data = e.u64;
                let Some(fd) = fds::ep_fd_of(ep, data) else {
                    ld.unsupported(format!(
                        "epoll_wait reported data {data:#x}, which was never registered with epoll_ctl"
                    ));
                };
                ready.push(ReadyFd {
                    fd,
                    ev: Events(e.events),
                });
            }
            ld.emit(&record::ready(WaitCall::Epoll, r, err, ready));
            sys::set_errno(err);
            r
        }
        Mode::Replay => {
            let what = format!("an epoll_wait on epoll fd {ep}");
            match replay::ready::next_ready_set(ld, WaitCall::Epoll, &what, timeout_us) {
                Err(err) => {
                    sys::set_errno(err);
                    -1
                }
                Ok(set) => {
                    if set.len() > max.max(0) as usize {
                        ld.diverge(&format!(
                            "{what} for at most {max} events (the record got {})",
                            set.len()
                        ));
                    }
                    for (i, f) in set.iter().enumerate() {
                        let Some(data) = fds::ep_data(ep, f.fd) else {
                            ld.diverge(&format!("{what} in which fd {} is not registered", f.fd));
                        };
                        // SAFETY: i < max entries of the caller's array.
                        unsafe {
                            *evs.add(i) = epoll_event {
                                events: f.ev.0,
                                u64: data,
                            }
                        };
                    }
                    let count = set.len() as c_int;
                    replay::ready::done(ld, WaitCall::Epoll, set);
                    count
                }
            }
        }
    }
}

hook! {
    /// epoll_wait(2).
    fn epoll_wait(ep: c_int, evs: *mut epoll_event, max: c_int, timeout: c_int) -> c_int {
        on_epoll(ep, evs, max, replay::ready::millis(timeout), || unsafe { real::epoll_wait(ep, evs, max, timeout) })
    }
}

hook! {
    /// epoll_pwait(2).
    fn epoll_pwait(ep: c_int, evs: *mut epoll_event, max: c_int, timeout: c_int, mask: *const sigset_t) -> c_int {
        on_epoll(ep, evs, max, replay::ready::millis(timeout), || unsafe { real::epoll_pwait(ep, evs, max, timeout, mask) })
    }
}

hook! {
    /// epoll_pwait2(2).
    fn epoll_pwait2(ep: c_int, evs: *mut epoll_event, max: c_int, t: *const timespec, mask: *const sigset_t) -> c_int {
        on_epoll(ep, evs, max, replay::ready::timespec(t), || unsafe { real::epoll_pwait2(ep, evs, max, t, mask) })
    }
}
