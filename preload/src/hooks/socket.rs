//! Sockets and fds: creation, connect, accept, close, blocking mode (`ioctl`). The LD knows at every
//! moment which fd is a channel end and whether it blocks.

use super::{active, hook};
use crate::{fds, real, record, replay};
use ddbx_wire::proto::Mode;
use libc::{c_int, c_uint, c_ulong, sockaddr, socklen_t};

hook! {
    /// socket(2).
    fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
        // SAFETY: no pointer arguments.
        let fd = super::made_fd(|| unsafe { real::socket(domain, ty, protocol) });
        if fd >= 0 {
            fds::set(fd, fds::socket_bits(domain, ty));
            if matches!(domain, libc::AF_INET | libc::AF_INET6)
                && ty & 0xf == libc::SOCK_STREAM
                && active().is_some_and(|ld| ld.mode == Mode::Replay)
            {
                uncorked(fd);
            }
        }
        fd
    }
}

hook! {
    /// socketpair(2).
    fn socketpair(domain: c_int, ty: c_int, protocol: c_int, sv: *mut c_int) -> c_int {
        let bits = fds::socket_bits(domain, ty) | fds::PAIRED;
        // A stream pair is a channel: an event (see `Record::Pair`), when the history has them.
        let mut ld = (bits & fds::STREAM != 0 && !sv.is_null())
            .then(active)
            .flatten()
            .filter(|ld| match ld.mode {
                Mode::Record => true,
                Mode::Replay => ld.replay.as_ref().is_some_and(|r| r.closes),
            });
        if let Some(ld) = ld.as_mut()
            && ld.mode == Mode::Replay
        {
            replay::socket::before_pair(ld);
        }
        // SAFETY: `sv` points to two ints (socketpair's contract).
        let r = unsafe { real::socketpair(domain, ty, protocol, sv) };
        let err = crate::sys::errno();
        if r == 0 && !sv.is_null() {
            // SAFETY: as above; the call just filled both.
            let mut pair = unsafe { [*sv, *sv.add(1)] };
            if let Some(ld) = ld.as_ref()
                && ld.mode == Mode::Replay
            {
                replay::threads::ends_onto_recorded(ld, &mut pair);
                // SAFETY: as above.
                unsafe { (*sv, *sv.add(1)) = (pair[0], pair[1]) };
            }
            fds::set(pair[0], bits);
            fds::set(pair[1], bits);
            if let Some(ld) = ld {
                let rec = ddbx_wire::Record::Pair {
                    fd: pair[0],
                    peer_fd: pair[1],
                };
                match ld.mode {
                    Mode::Record => ld.emit(&rec),
                    Mode::Replay => replay::socket::after_pair(ld, &rec),
                }
            }
        }
        crate::sys::set_errno(err);
        r
    }
}

hook! {
    /// listen(2).
    fn listen(fd: c_int, backlog: c_int) -> c_int {
        // SAFETY: no pointer arguments.
        let r = unsafe { real::listen(fd, backlog) };
        if r == 0 {
            fds::update(fd, fds::LISTENING, 0);
            if let Some(ld) = active()
                && ld.mode == Mode::Record
            {
                record::peers::listening(ld, fd);
            }
        }
        r
    }
}

hook! {
    /// connect(2). Connecting a datagram socket moves nothing (a route probe, a default
    /// peer): it passes through unreported; what such a socket sends and receives is
    /// reported by those calls.
    fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
        let kind = fds::kind(fd);
        if kind & fds::DATAGRAM != 0 {
            // SAFETY: the program's arguments.
            return unsafe { super::io::datagram::connect(fd, addr, len) };
        }
        let datagram = kind & fds::OTHER_SOCKET != 0;
        let Some(ld) = (!datagram).then(|| super::ld_for_io(fd)).flatten() else {
            // SAFETY: the program's arguments, passed on unchanged.
            return unsafe { real::connect(fd, addr, len) };
        };
        // SAFETY: `addr` points to `len` readable bytes (connect's contract).
        unsafe {
            match ld.mode {
                Mode::Record => record::socket::connect(ld, fd, addr, len),
                Mode::Replay => replay::socket::connect(ld, fd, addr, len),
            }
        }
    }
}

hook! {
    /// getsockopt(2): `SO_ERROR` on a stream socket is recorded and replayed (how a program
    /// learns the outcome of a non-blocking connect); everything else passes through.
    fn getsockopt(
        fd: c_int,
        level: c_int,
        name: c_int,
        val: *mut libc::c_void,
        len: *mut socklen_t,
    ) -> c_int {
        let recorded = level == libc::SOL_SOCKET && name == libc::SO_ERROR && fds::is_stream(fd);
        let Some(ld) = recorded.then(|| super::ld_for_io(fd)).flatten() else {
            // SAFETY: the program's arguments, passed on unchanged.
            let r = unsafe { real::getsockopt(fd, level, name, val, len) };
            if r == 0 && level == libc::SOL_SOCKET && name == libc::SO_PEERCRED {
                // SAFETY: `val` and `len` as the kernel just filled them.
                unsafe { shown_peer_pid(val, len) };
            }
            return r;
        };
        // SAFETY: `val`/`len` as getsockopt(2) wants them (its contract).
        unsafe {
            match ld.mode {
                Mode::Record => record::socket::socket_error(ld, fd, val, len),
                Mode::Replay => replay::socket::socket_error(ld, fd, val, len),
            }
        }
    }
}

/// The peer's pid in the `ucred` that `SO_PEERCRED` filled, as the program sees it.
///
/// # Safety
/// `val` and `len` as getsockopt(2) just filled them.
unsafe fn shown_peer_pid(val: *mut libc::c_void, len: *mut socklen_t) {
    // SAFETY: as the caller promises: `*len` bytes of `val` are the option.
    let whole = !val.is_null()
        && !len.is_null()
        && unsafe { *len } as usize >= std::mem::size_of::<libc::ucred>();
    if whole {
        // SAFETY: a whole ucred, just filled.
        let cred = unsafe { &mut *val.cast::<libc::ucred>() };
        cred.pid = crate::pids::shown(cred.pid);
    }
}

/// In replay, a TCP socket sends each write at once (`TCP_NODELAY`; sockets accepted from it
/// inherit it), and the program cannot hold bytes back (a `TCP_NODELAY` of 0 and `TCP_CORK`
/// succeed without effect, `MSG_MORE` is dropped from sends). Bytes held back in the sender's
/// kernel are lost when its close resets the connection (it leaves bytes unread): with
/// Nagle's algorithm waiting for a delayed ACK, the peer got 34 bytes in the record and 4 in a
/// replay (`tests/progs/reset_unsent.c`; mosquitto_sub's last acknowledgements). Replay needs
/// every byte the record's receiver got; a receiver that got fewer, then a reset, has that
/// failure from its history. How a stream is cut into segments is not an outcome: the
/// receives take the recorded counts.
fn uncorked(fd: c_int) {
    let one: c_int = 1;
    // SAFETY: an int option, from our local.
    unsafe {
        real::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const c_int).cast(),
            std::mem::size_of::<c_int>() as socklen_t,
        )
    };
}

/// Whether setting option `name` at `level` to `val` would hold bytes back (see [`uncorked`]).
///
/// # Safety
/// `val` must be null or point to `len` readable bytes.
unsafe fn holds_back(level: c_int, name: c_int, val: *const libc::c_void, len: socklen_t) -> bool {
    if level != libc::IPPROTO_TCP || val.is_null() || (len as usize) < std::mem::size_of::<c_int>()
    {
        return false;
    }
    // SAFETY: at least an int, as the caller promises.
    let on = unsafe { *(val as *const c_int) } != 0;
    (name == libc::TCP_NODELAY && !on) || (name == libc::TCP_CORK && on)
}

hook! {
    /// setsockopt(2) passes through, except in replay on a stream socket: an option that would
    /// hold bytes back succeeds without effect ([`uncorked`]); and on a connection whose peer
    /// the replay's LD plays for a server outside the session: that socket is one end of an
    /// AF_UNIX socketpair (`preload/src/replay/external.rs`), which has no TCP or IP options,
    /// so setting one (`TCP_NODELAY` after the connect, as chatter, redis and many clients do)
    /// would fail with EOPNOTSUPP where the recorded TCP socket took it. It succeeds without
    /// effect.
    fn setsockopt(
        fd: c_int,
        level: c_int,
        name: c_int,
        val: *const libc::c_void,
        len: socklen_t,
    ) -> c_int {
        let inet = matches!(level, libc::IPPROTO_TCP | libc::IPPROTO_IP | libc::IPPROTO_IPV6);
        if inet
            && fds::is_stream(fd)
            && let Some(ld) = active()
            && ld.mode == Mode::Replay
            // SAFETY: the program's option value, as setsockopt(2) wants it.
            && (replay::external::is_outside(ld, fd) || unsafe { holds_back(level, name, val, len) })
        {
            return 0;
        }
        // SAFETY: the program's arguments, passed on unchanged.
        unsafe { real::setsockopt(fd, level, name, val, len) }
    }
}

/// accept and accept4.
///
/// # Safety
/// `addr`/`len` as for accept4(2): null, or `len` points to the size of the buffer at `addr`.
unsafe fn on_accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int {
    let Some(ld) = super::ld_for_io(fd) else {
        // SAFETY: the program's arguments, valid for accept4 as the caller promises.
        let r = unsafe { real::accept4(fd, addr, len, flags) };
        if r >= 0 {
            fds::forget(r);
        }
        return r;
    };
    // SAFETY: the caller's arguments, as for accept4.
    unsafe {
        match ld.mode {
            Mode::Record => record::socket::accept(ld, fd, addr, len, flags),
            Mode::Replay => replay::accept::accept(ld, fd, addr, len, flags),
        }
    }
}

hook! {
    /// accept(2).
    fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
        // SAFETY: the program's address buffer (accept's contract).
        unsafe { on_accept(fd, addr, len, 0) }
    }
}

hook! {
    /// accept4(2).
    fn accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int {
        // SAFETY: the program's address buffer (accept4's contract).
        unsafe { on_accept(fd, addr, len, flags) }
    }
}

/// close(2). The LD's own fds cannot be closed by the program.
///
/// # Safety
/// Called by the program in place of libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    super::keeping_errno(|| {
        let Some(_guard) = crate::guard::Guard::enter() else {
            // Inside a hooked call: the LD's own close, or the program's handler's (its calls are
            // not events there). A channel end the handler lets go of is noted for the analysis:
            // the readers of a pipe whose write end sig_forkreap's SIGCHLD handler closes see its
            // end long before the process exits, and taken for held until then, that end made a
            // cycle with the process's wait for those readers (a halting replay hung).
            if crate::signals::in_program_handler()
                && fds::known_kind(fd) & (fds::STREAM | fds::OURS) == fds::STREAM
            {
                crate::signals::note_closed(fd);
            }
            // SAFETY: no pointer arguments.
            return unsafe { real::close(fd) };
        };
        crate::replay::signals::at_call();
        closing(fd)
    })
}

/// close(2) of the program, outside any hooked call.
fn closing(fd: c_int) -> c_int {
    if fds::is_ours(fd) {
        return 0;
    }
    let lets_go = letting_go(fd);
    if let Some(ld) = active()
        && ld.mode == Mode::Record
    {
        record::peers::closing(ld, fd);
    }
    fds::forget(fd);
    if let Some(ld) = active() {
        if ld.mode == Mode::Replay {
            // Stop playing an outside peer on it.
            replay::external::forget(ld, fd);
        }
        if let Some(t) = ld.trace.as_mut() {
            t.forget_fd(fd);
        }
    }
    // SAFETY: no pointer arguments.
    let call = || unsafe { real::close(fd) };
    match lets_go {
        Some(ld) => let_go(ld, fd, call),
        None => super::freed_fd(fd, call),
    }
}

/// The LD, when closing `fd` now would let go of a connection and that is an event (see
/// `Record::Close`): `fd` is this process's last fd on a connected stream socket, and the
/// history records closes (recordings made before ddbx recorded closes do not).
pub(super) fn letting_go(fd: c_int) -> Option<&'static mut crate::ld::Ld> {
    if !fds::is_last_connection_ref(fd) {
        return None;
    }
    let ld = active()?;
    let events = match ld.mode {
        Mode::Record => true,
        Mode::Replay => ld.replay.as_ref().is_some_and(|r| r.closes),
    };
    events.then_some(ld)
}

/// The `Close` event of `fd`, closed by `call` (close, or a dup2 over it).
pub(super) fn let_go(ld: &mut crate::ld::Ld, fd: c_int, call: impl FnOnce() -> c_int) -> c_int {
    match ld.mode {
        Mode::Record => record::socket::close(ld, fd, call),
        Mode::Replay => replay::socket::close(ld, fd, call),
    }
}

/// Before an exec: the connections the exec closes (their fds have `FD_CLOEXEC`) are let go
/// of, as `Close` events before the `Exec`.
pub fn let_go_at_exec() {
    for fd in fds::cloexec_connections() {
        if let Some(ld) = letting_go(fd) {
            if ld.mode == Mode::Record {
                record::peers::closing(ld, fd);
            }
            // The exec closes it; if the exec fails, the fd is classified again when used.
            fds::forget(fd);
            let_go(ld, fd, || 0);
        }
    }
}

hook! {
    /// close_range(2): closes the range around the LD's own fds.
    fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
        let ours = active().map(|ld| ld.own_fds()).unwrap_or_default();
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
                // SAFETY: no pointer arguments.
                let r = unsafe { real::close_range(from, own - 1, flags) };
                if r != 0 {
                    return r;
                }
            }
            from = own + 1;
        }
        if from > last {
            return 0;
        }
        // SAFETY: no pointer arguments.
        unsafe { real::close_range(from, last, flags) }
    }
}

hook! {
    /// shutdown(2): of a connection, an event (the peer sees the end of the stream after it).
    fn shutdown(fd: c_int, how: c_int) -> c_int {
        // SAFETY: no pointer arguments.
        let call = || unsafe { real::shutdown(fd, how) };
        let Some(shut) = ddbx_wire::history::Shut::from_how(how) else {
            return call();
        };
        let Some(ld) = super::ld_for_io(fd) else {
            return call();
        };
        if fds::kind(fd) & fds::LISTENING != 0 {
            return call();
        }
        match ld.mode {
            Mode::Record => record::socket::shutdown(ld, fd, shut, call),
            Mode::Replay => replay::socket::shutdown(ld, fd, shut, call),
        }
    }
}

/// ioctl(2): FIONBIO sets or clears non-blocking mode; FIONREAD (`SIOCINQ`) on a recorded
/// stream socket or pipe is a value ([`waiting`]).
///
/// # Safety
/// Called by the program in place of ioctl, with `arg` as ioctl wants it for `req`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ioctl(fd: c_int, req: c_ulong, arg: c_ulong) -> c_int {
    let Some(_guard) = crate::guard::Guard::enter() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { real::ioctl(fd, req, arg) };
    };
    // SAFETY: the program's arguments, passed on unchanged.
    let r = unsafe { real::ioctl(fd, req, arg) };
    let kind = fds::kind(fd);
    if r == 0
        && req == libc::FIONREAD as c_ulong
        && arg != 0
        && kind & fds::STREAM != 0
        && kind & (fds::LISTENING | fds::OURS) == 0
    {
        // SAFETY: FIONREAD's argument points to an int (not null, checked), which the call
        // just wrote.
        unsafe { waiting(fd, &mut *(arg as *mut c_int)) };
        return r;
    }
    if r == 0 && req == libc::FIONBIO && arg != 0 {
        // SAFETY: FIONBIO's argument points to an int (not null, checked), which the call
        // just read.
        let on = unsafe { *(arg as *const c_int) } != 0;
        if on {
            fds::update(fd, fds::NONBLOCK, 0);
        } else {
            fds::update(fd, 0, fds::NONBLOCK);
        }
    }
    r
}

/// `ioctl(fd, FIONREAD)` said `count` bytes are waiting on a recorded channel end: how many is
/// an outcome of the race between the peer's sends and this call (libevent sizes its reads
/// with it), so record logs it as a value (`~q=17`) and replay tells the program the
/// recorded count. A count the record did not log is the real one plus the bytes the LD
/// holds for the fd (taken from the kernel ahead of the program, `replay/held.rs`).
fn waiting(fd: c_int, count: &mut c_int) {
    use ddbx_wire::history::value::{Value, ValueKey};
    let Some(ld) = super::ld_for_io(fd) else {
        return;
    };
    match ld.mode {
        Mode::Record if ld.trace.is_none() => record::values::log(
            ld,
            &Value::Waiting {
                n: i64::from(*count),
            },
        ),
        Mode::Record => {} // optimal tracing logs no values
        Mode::Replay if ld.trace.is_some() => {
            let held = replay::held::held_bytes(ld, fd);
            *count = count.saturating_add(c_int::try_from(held).unwrap_or(c_int::MAX));
        }
        Mode::Replay => {
            let real = i64::from(*count) + replay::held::held_bytes(ld, fd) as i64;
            let n = replay::values::number(ld, ValueKey::Waiting, real);
            *count = c_int::try_from(n).unwrap_or(c_int::MAX);
        }
    }
}

hook! {
    /// bind(2). A bind of an IPv4 or IPv6 socket to port 0 lets the kernel choose the port:
    /// the record logs the port it got (`~b`), and replay binds to that port when it is free
    /// (else to port 0 again), so that a program that prints its port, or hands it to another
    /// (a script's free-port helper, a server's `--port`), shows the record's.
    fn bind(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
        // SAFETY: the program's address of `len` bytes (bind's contract).
        let any_port = unsafe { port_zero(addr, len) };
        let Some(ld) = any_port.then(super::values::values_ld).flatten() else {
            // SAFETY: the program's arguments.
            return unsafe { real::bind(fd, addr, len) };
        };
        if ld.mode == Mode::Replay
            && let Some(port) = replay::values::take_bound(ld)
        {
            // SAFETY: as above: `len` readable bytes, at least a sockaddr_in's.
            let mut copy = unsafe { std::slice::from_raw_parts(addr.cast::<u8>(), len as usize) }.to_vec();
            copy[2..4].copy_from_slice(&port.to_be_bytes());
            // SAFETY: the program's address with another port: as valid.
            if reusing(fd, || unsafe { real::bind(fd, copy.as_ptr().cast(), len) }) == 0 {
                ld.log_value(&ddbx_wire::history::value::Value::Bound { port });
                return 0;
            }
        }
        // SAFETY: the program's arguments.
        let r = unsafe { real::bind(fd, addr, len) };
        if r == 0 {
            let err = crate::sys::errno();
            if let Some(port) = fds::socket_addr(fd, false)
                .rsplit_once(':')
                .and_then(|(_, p)| p.parse().ok())
            {
                ld.log_value(&ddbx_wire::history::value::Value::Bound { port });
            }
            crate::sys::set_errno(err);
        }
        r
    }
}

/// `call` (a bind) made with `SO_REUSEADDR` set on the TCP socket `fd`, then its setting put
/// back: the record's connections on that port may still be in TIME_WAIT when the replay
/// starts. The kernel then lets the bind pass only for some of them (measured: a server whose
/// one connection it closed first, yes; one whose four clients closed first, no: the replay
/// then gets another port). A UDP socket is left as it is (the option would let it share a
/// port in use).
fn reusing(fd: c_int, call: impl FnOnce() -> c_int) -> c_int {
    let size = std::mem::size_of::<c_int>() as socklen_t;
    let (mut was, mut len): (c_int, socklen_t) = (1, size);
    // SAFETY: one int and its length, ours.
    let known = unsafe {
        real::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&mut was as *mut c_int).cast(),
            &mut len,
        )
    } == 0;
    let stream = fds::kind(fd) & fds::STREAM != 0;
    let set = |on: c_int| {
        // SAFETY: one int, ours.
        unsafe {
            real::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                (&on as *const c_int).cast(),
                size,
            )
        }
    };
    let switched = stream && known && was == 0 && set(1) == 0;
    let r = call();
    if switched {
        let err = crate::sys::errno();
        set(0);
        crate::sys::set_errno(err);
    }
    r
}

/// Whether `addr` is an IPv4 or IPv6 address with port 0.
///
/// # Safety
/// `addr` must be null or point to `len` readable bytes.
unsafe fn port_zero(addr: *const sockaddr, len: socklen_t) -> bool {
    if addr.is_null() || (len as usize) < std::mem::size_of::<libc::sockaddr_in>() {
        return false;
    }
    // SAFETY: at least a sockaddr_in's bytes, as the caller promises; the port is at offset 2
    // in both families.
    unsafe {
        matches!((*addr).sa_family as c_int, libc::AF_INET | libc::AF_INET6)
            && *addr.cast::<u8>().add(2) == 0
            && *addr.cast::<u8>().add(3) == 0
    }
}
