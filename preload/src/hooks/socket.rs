//! Sockets and fds: creation, connect, accept, close, dup, blocking mode. The LD knows at every
//! moment which fd is a channel end and whether it blocks.

use super::hook;
use crate::{fds, ld, real, record, replay, sys};
use ddbx_wire::proto::Mode;
use libc::{c_int, c_uint, c_ulong, sockaddr, socklen_t};

hook! {
    /// socket(2).
    fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
        let fd = real::socket(domain, ty, protocol);
        if fd >= 0 {
            fds::set(fd, fds::socket_bits(domain, ty));
        }
        fd
    }
}

hook! {
    /// socketpair(2).
    fn socketpair(domain: c_int, ty: c_int, protocol: c_int, sv: *mut c_int) -> c_int {
        let r = real::socketpair(domain, ty, protocol, sv);
        if r == 0 && !sv.is_null() {
            let bits = fds::socket_bits(domain, ty) | fds::PAIRED;
            fds::set(*sv, bits);
            fds::set(*sv.add(1), bits);
        }
        r
    }
}

hook! {
    /// listen(2).
    fn listen(fd: c_int, backlog: c_int) -> c_int {
        let r = real::listen(fd, backlog);
        if r == 0 {
            fds::update(fd, fds::LISTENING, 0);
        }
        r
    }
}

hook! {
    /// connect(2).
    fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
        let Some(ld) = super::ld_for_io(fd) else {
            return real::connect(fd, addr, len);
        };
        match ld.mode {
            Mode::Record => {
                let r = real::connect(fd, addr, len);
                let err = sys::errno();
                let remote = fds::format_addr(addr, len);
                ld.emit(&record::connect(fd, remote, r, err));
                sys::set_errno(err);
                r
            }
            Mode::Replay => replay::connect::connect(ld, fd, addr, len),
        }
    }
}

/// accept and accept4.
unsafe fn on_accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int {
    let Some(ld) = super::ld_for_io(fd) else {
        // SAFETY: the caller's arguments.
        let r = unsafe { real::accept4(fd, addr, len, flags) };
        if r >= 0 {
            fds::forget(r);
        }
        return r;
    };
    match ld.mode {
        Mode::Record => {
            // SAFETY: the caller's arguments.
            let r = unsafe { real::accept4(fd, addr, len, flags) };
            let err = sys::errno();
            if r >= 0 {
                let nonblock = if flags & libc::SOCK_NONBLOCK != 0 {
                    fds::NONBLOCK
                } else {
                    0
                };
                fds::set(r, fds::STREAM | nonblock);
            }
            ld.emit(&record::accept(fd, r, err));
            sys::set_errno(err);
            r
        }
        // SAFETY: the caller's arguments.
        Mode::Replay => unsafe { replay::accept::accept(ld, fd, addr, len, flags) },
    }
}

hook! {
    /// accept(2).
    fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
        on_accept(fd, addr, len, 0)
    }
}

hook! {
    /// accept4(2).
    fn accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int {
        on_accept(fd, addr, len, flags)
    }
}

hook! {
    /// close(2). The LD's own fds cannot be closed by the program.
    fn close(fd: c_int) -> c_int {
        if fds::is_ours(fd) {
            return 0;
        }
        fds::forget(fd);
        if let Some(ld) = ld::active() {
            crate::replay::external::forget(ld, fd);
            if let Some(t) = ld.trace.as_mut() {
                t.forget_fd(fd);
            }
        }
        real::close(fd)
    }
}

hook! {
    /// close_range(2): closes the range around the LD's own fds.
    fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
        let ours = ld::active().map(|ld| ld.own_fds()).unwrap_or_default();
        if flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
            let end = (last as u64).min(65535) as c_uint;
            let mut fd = first;
            while fd <= end {
                fds::forget(fd as c_int);
                fd += 1;
            }
        }
        let mut from = first;
        for own in ours {
            let own = own as c_uint;
            if own < from || own > last {
                continue;
            }
            if own > from {
                let r = real::close_range(from, own - 1, flags);
                if r != 0 {
                    return r;
                }
            }
            from = own + 1;
        }
        if from > last {
            return 0;
        }
        real::close_range(from, last, flags)
    }
}

hook! {
    /// shutdown(2).
    fn shutdown(fd: c_int, how: c_int) -> c_int {
        real::shutdown(fd, how)
    }
}

hook! {
    /// dup(2).
    fn dup(fd: c_int) -> c_int {
        let r = real::dup(fd);
        if r >= 0 {
            fds::copy(fd, r);
        }
        r
    }
}

/// Makes room for the program at `new` if the LD uses that number.
fn make_room(new: c_int) {
    if let Some(t) = ld::active().and_then(|ld| ld.trace.as_mut()) {
        t.forget_fd(new);
    }
    if fds::is_ours(new)
        && let Some(ld) = ld::active()
    {
        ld.evacuate(new);
    }
}

hook! {
    /// dup2(2).
    fn dup2(old: c_int, new: c_int) -> c_int {
        make_room(new);
        let r = real::dup2(old, new);
        if r >= 0 && old != new {
            fds::copy(old, r);
        }
        r
    }
}

hook! {
    /// dup3(2).
    fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
        make_room(new);
        let r = real::dup3(old, new, flags);
        if r >= 0 {
            fds::copy(old, r);
        }
        r
    }
}

/// fcntl and fcntl64: dups and O_NONBLOCK are tracked.
unsafe fn on_fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    // SAFETY: the caller's arguments.
    let r = unsafe { real::fcntl(fd, cmd, arg) };
    if r < 0 {
        return r;
    }
    match cmd {
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => fds::copy(fd, r),
        libc::F_SETFL => {
            if arg as c_int & libc::O_NONBLOCK != 0 {
                fds::update(fd, fds::NONBLOCK, 0);
            } else {
                fds::update(fd, 0, fds::NONBLOCK);
            }
        }
        _ => {}
    }
    r
}

/// fcntl(2) (variadic in C; one integer-sized argument is ABI-compatible on Linux targets).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let Some(_guard) = crate::guard::Guard::enter() else {
        // SAFETY: the caller's arguments.
        return unsafe { real::fcntl(fd, cmd, arg) };
    };
    // SAFETY: the caller's arguments.
    unsafe { on_fcntl(fd, cmd, arg) }
}

/// fcntl64(2) (what Python calls).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    // SAFETY: same contract as fcntl.
    unsafe { fcntl(fd, cmd, arg) }
}

/// ioctl(2): FIONBIO sets or clears non-blocking mode.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ioctl(fd: c_int, req: c_ulong, arg: c_ulong) -> c_int {
    let Some(_guard) = crate::guard::Guard::enter() else {
        // SAFETY: the caller's arguments.
        return unsafe { real::ioctl(fd, req, arg) };
    };
    // SAFETY: the caller's arguments.
    let r = unsafe { real::ioctl(fd, req, arg) };
    if r == 0 && req == libc::FIONBIO && arg != 0 {
        // SAFETY: FIONBIO's argument points to an int.
        let on = unsafe { *(arg as *const c_int) } != 0;
        if on {
            fds::update(fd, fds::NONBLOCK, 0);
        } else {
            fds::update(fd, 0, fds::NONBLOCK);
        }
    }
    r
}
