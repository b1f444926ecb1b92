//! Data on channel ends: the read/write, recv/send families and their fortified variants.
//! Only stream sockets are recorded; every other fd passes straight through.
//!
//! Each hook describes its buffers to [`on_recv`]/[`on_send`] as two closures: one makes the
//! real call on a part of the buffers, one copies bytes out of them.

mod buffers;
pub(super) mod datagram;

use super::{hook, ld_for_io};
use crate::{real, record, replay};
use buffers::{Buffers, IoVecs, NO_ADDRESS, ProgramReceive, bytes_at};
use datagram::{Dest, NO_DEST};
use ddbx_wire::proto::Mode;
use libc::{
    c_int, c_uint, c_void, iovec, mmsghdr, msghdr, off_t, size_t, sockaddr, socklen_t, ssize_t,
    timespec,
};

/// A receive into the program's buffers `into` (`len` bytes at most) on `fd`; `call(n)` does
/// the real receive of at most `n`; `gather(n)` copies the first `n` bytes received. Replay
/// hands the recorded bytes to `into` instead.
fn on_recv(
    fd: c_int,
    into: &mut ProgramReceive,
    mut call: impl FnMut(usize) -> isize,
    gather: impl Fn(usize) -> Vec<u8>,
) -> isize {
    let len = into.len();
    if crate::fds::kind(fd) & crate::fds::RANDOM != 0 {
        return random_read(fd, into, call, gather);
    }
    if let Some(key) = crate::fds::file_key(fd) {
        return file_read(key, fd, || call(len));
    }
    if crate::fds::is_datagram(fd) {
        return datagram::recv(fd, into, call, gather);
    }
    let Some(ld) = ld_for_io(fd) else {
        return call(len);
    };
    match ld.mode {
        Mode::Record => {
            let msg = into.msg;
            // SAFETY: `msg` is null or the program's msghdr, which the receive filled.
            let passed = || unsafe { buffers::passed_in(msg) };
            record::io::recv(ld, fd, (len, into.flags), call, (gather, passed))
        }
        Mode::Replay => replay::io::recv(ld, fd, len, into, call),
    }
}

/// A read of `/dev/urandom` or `/dev/random`: its bytes are a value (`values.rs`).
fn random_read(
    _fd: c_int,
    into: &mut ProgramReceive,
    mut call: impl FnMut(usize) -> isize,
    gather: impl Fn(usize) -> Vec<u8>,
) -> isize {
    use replay::held::Receiver;
    let len = into.len();
    let n = call(len);
    let Some(ld) = super::values::own_values_ld() else {
        return n;
    };
    let errno = crate::sys::errno();
    if ld.mode == Mode::Replay
        && let Some(bytes) = replay::values::take_random(ld, |m| m <= len)
    {
        into.fill(&bytes);
        let m = bytes.len();
        record::values::log(ld, &ddbx_wire::history::value::Value::Random { bytes });
        crate::sys::set_errno(errno);
        return m as isize;
    }
    if n > 0 {
        let bytes = gather(n as usize);
        record::values::log(ld, &ddbx_wire::history::value::Value::Random { bytes });
    }
    crate::sys::set_errno(errno);
    n
}

/// A read of the regular file `key` (open at `fd`): it comes after as many of the session's
/// writes into that file as in the record, when they take turns (`ld/appends.rs`).
fn file_read(key: u64, fd: c_int, mut call: impl FnMut() -> isize) -> isize {
    let Some(ld) = super::active().filter(|ld| ld.trace.is_none() && ld.is_io_thread()) else {
        return call();
    };
    // Empty: no byte, and nothing read from it yet (a `/proc` file's size is 0 too, but its
    // read at the end comes after bytes).
    // SAFETY: lseek on the program's fd moves nothing (SEEK_CUR by 0).
    let at_start = || unsafe { libc::syscall(libc::SYS_lseek, fd, 0, libc::SEEK_CUR) } == 0;
    let empty = || crate::sys::file_size(fd) == 0 && at_start();
    match ld.mode {
        Mode::Record => record::io::file_read(ld, key, empty, &mut call),
        Mode::Replay => replay::io::file_read(ld, key, empty, call),
    }
}

/// The LD, when writes into `fd` take turns (`fds::TURNS`; not a session pipe, whose writes
/// are sends), with the file's key.
fn turn_taker(fd: c_int) -> Option<(&'static mut crate::ld::Ld, u64)> {
    if crate::fds::kind(fd) & (crate::fds::TURNS | crate::fds::STREAM) != crate::fds::TURNS {
        return None;
    }
    let key = crate::fds::turn_key(fd)?;
    let ld = super::active().filter(|ld| ld.trace.is_none() && ld.is_io_thread())?;
    Some((ld, key))
}

/// A lock on `fd` (flock, fcntl's record locks, lockf), made by `call` (0: taken);
/// `blocking` makes the same lock, waiting for it. On a regular file the session's locks take
/// turns: the record logs each one's turn, replay takes them in that order
/// (`record::io::lock`, `replay::io::lock`), so that a counter that processes update under a
/// lock (a ticket, a sequence number) comes out as recorded.
pub fn file_lock(
    fd: c_int,
    call: impl FnOnce() -> c_int,
    blocking: impl FnOnce() -> c_int,
) -> c_int {
    let _ = crate::fds::kind(fd); // classified, for its key
    let Some(key) = crate::fds::file_key(fd) else {
        return call();
    };
    let Some(ld) = super::active().filter(|ld| ld.trace.is_none() && ld.is_io_thread()) else {
        return call();
    };
    match ld.mode {
        Mode::Record => record::io::lock(ld, key, call),
        Mode::Replay => replay::io::lock(ld, key, call, blocking),
    }
}

/// Before a lock for writing is taken on `fd` (vsftpd locks its log around each line): in
/// replay, the turn of the write it guards is waited for first, or a process that took the
/// lock out of turn would wait for its turn while the one whose turn it is waits for the lock.
pub fn before_file_lock(fd: c_int) {
    if let Some((ld, key)) = turn_taker(fd)
        && ld.mode == Mode::Replay
    {
        replay::io::before_lock(ld, key);
    }
}

/// A send of `len` bytes on `fd`; `call(offset, n)` sends bytes `offset..offset + n`;
/// `gather(offset, n)` copies those bytes.
fn on_send(
    fd: c_int,
    len: usize,
    call: impl FnMut(usize, usize) -> isize,
    gather: impl Fn(usize, usize) -> Vec<u8>,
) -> isize {
    on_send_passing(fd, (len, Vec::new(), NO_DEST), call, gather)
}

/// [`on_send`] of a send that passes the fds `passed` (sendmsg's `SCM_RIGHTS`) to `to` (what
/// sendto or sendmsg names; only UDP sockets note it).
fn on_send_passing(
    fd: c_int,
    (len, passed, to): (usize, Vec<c_int>, Dest),
    mut call: impl FnMut(usize, usize) -> isize,
    gather: impl Fn(usize, usize) -> Vec<u8>,
) -> isize {
    if crate::fds::pipes::is_self_pipe_write(fd) {
        return call(0, len);
    }
    if crate::fds::is_datagram(fd) {
        return datagram::send(fd, len, to, || call(0, len), || gather(0, len));
    }
    if let Some((ld, key)) = turn_taker(fd) {
        // A file several processes may write: the order of their writes is its content.
        return match ld.mode {
            Mode::Record => record::io::append(ld, key, || call(0, len)),
            Mode::Replay => replay::io::append(ld, key, || call(0, len)),
        };
    }
    let Some(ld) = ld_for_io(fd) else {
        return call(0, len);
    };
    match ld.mode {
        Mode::Record => record::io::send(ld, fd, (len, passed), call, gather),
        Mode::Replay => replay::io::send(ld, fd, len, call),
    }
}

/// A receive into one buffer of `n` bytes with these flags; `call(m)` receives at most `m <= n`
/// bytes into it; `from` is recvfrom's address buffer and its length (or nulls).
///
/// # Safety
/// `buf` must be null or valid for writing `n` bytes; `from` as recvfrom(2) wants it.
unsafe fn recv_into(
    fd: c_int,
    buf: *mut c_void,
    n: usize,
    flags: c_int,
    from: (*mut sockaddr, *mut socklen_t),
    call: impl FnMut(usize) -> isize,
) -> isize {
    let mut into = ProgramReceive {
        buffers: Buffers::One(buf.cast(), n),
        flags,
        msg: std::ptr::null_mut(),
        from,
    };
    // SAFETY: the first `m <= n` bytes of `buf` were just received.
    on_recv(fd, &mut into, call, |m| unsafe { bytes_at(buf, 0, m) })
}

/// A send from one buffer of `n` bytes; `call(part, m)` sends the `m` bytes at `part`.
///
/// # Safety
/// `buf` must be null or valid for reading `n` bytes.
unsafe fn send_from(
    fd: c_int,
    (buf, n, to): (*const c_void, usize, Dest),
    mut call: impl FnMut(*const c_void, usize) -> isize,
) -> isize {
    on_send_passing(
        fd,
        (n, Vec::new(), to),
        // SAFETY: `off + m <= n`: within `buf`.
        |off, m| call(unsafe { (buf as *const u8).add(off) }.cast(), m),
        // SAFETY: as above; `buf` holds the program's bytes.
        |off, m| unsafe { bytes_at(buf, off, m) },
    )
}

hook! {
    /// read(2).
    fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
        if crate::fds::known_kind(fd) & crate::fds::SIGNAL_FD != 0 {
            // SAFETY: `buf` holds `n` writable bytes (read's contract).
            return unsafe { super::sigwait::signalfd_read(fd, buf, n) };
        }
        // SAFETY: `buf` holds `n` writable bytes (read's contract).
        unsafe { recv_into(fd, buf, n, 0, NO_ADDRESS, |m| real::read(fd, buf, m)) }
    }
}

hook! {
    /// The fortified read(2).
    fn __read_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t) -> ssize_t {
        if n > buflen {
            // SAFETY: the program's arguments: the real function reports the overflow.
            return unsafe { real::__read_chk(fd, buf, n, buflen) };
        }
        // SAFETY: `buf` holds `n <= buflen` writable bytes.
        unsafe { recv_into(fd, buf, n, 0, NO_ADDRESS, |m| real::__read_chk(fd, buf, m, buflen)) }
    }
}

hook! {
    /// recv(2).
    fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
        // SAFETY: `buf` holds `n` writable bytes (recv's contract).
        unsafe { recv_into(fd, buf, n, flags, NO_ADDRESS, |m| real::recv(fd, buf, m, flags)) }
    }
}

hook! {
    /// The fortified recv(2).
    fn __recv_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t, flags: c_int) -> ssize_t {
        if n > buflen {
            // SAFETY: the program's arguments: the real function reports the overflow.
            return unsafe { real::__recv_chk(fd, buf, n, buflen, flags) };
        }
        // SAFETY: `buf` holds `n <= buflen` writable bytes.
        unsafe { recv_into(fd, buf, n, flags, NO_ADDRESS, |m| real::__recv_chk(fd, buf, m, buflen, flags)) }
    }
}

hook! {
    /// recvfrom(2).
    fn recvfrom(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t {
        // SAFETY: `buf` holds `n` writable bytes, `addr`/`len` are null or the
        // program's address buffer (recvfrom's contract).
        unsafe { recv_into(fd, buf, n, flags, (addr, len), |m| real::recvfrom(fd, buf, m, flags, addr, len)) }
    }
}

hook! {
    /// The fortified recvfrom(2).
    fn __recvfrom_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t {
        if n > buflen {
            // SAFETY: the program's arguments: the real function reports the overflow.
            return unsafe { real::__recvfrom_chk(fd, buf, n, buflen, flags, addr, len) };
        }
        // SAFETY: as for recvfrom, with `n <= buflen`.
        unsafe { recv_into(fd, buf, n, flags, (addr, len), |m| real::__recvfrom_chk(fd, buf, m, buflen, flags, addr, len)) }
    }
}

hook! {
    /// readv(2).
    fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
        // SAFETY: `iov` points to `cnt` iovecs (readv's contract).
        let iovs = unsafe { IoVecs::new(iov, cnt) };
        let mut into = ProgramReceive {
            buffers: Buffers::Many(iovs),
            flags: 0,
            msg: std::ptr::null_mut(),
            from: NO_ADDRESS,
        };
        on_recv(
            fd,
            &mut into,
            |m| {
                let part = iovs.part(0, m);
                // SAFETY: `part` is a valid iovec array over the program's buffers.
                unsafe { real::readv(fd, part.as_ptr(), part.len() as c_int) }
            },
            // SAFETY: the first `m` bytes were just received.
            |m| unsafe { iovs.bytes(0, m) },
        )
    }
}

/// recvmsg on `fd` (also the one message of a recvmmsg).
///
/// # Safety
/// `msg` must be null or the program's msghdr, as recvmsg(2) wants it.
unsafe fn on_recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
    if msg.is_null() {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { real::recvmsg(fd, msg, flags) };
    }
    // SAFETY: `msg` is not null and points to the program's msghdr (recvmsg's contract).
    let iovs = unsafe { IoVecs::of_msg(msg) };
    let mut into = ProgramReceive {
        buffers: Buffers::Many(iovs),
        flags,
        msg,
        from: NO_ADDRESS,
    };
    on_recv(
        fd,
        &mut into,
        |m| {
            let part = iovs.part(0, m);
            // SAFETY: `msg` points to the program's msghdr, readable and writable.
            let mut copy = unsafe { *msg };
            copy.msg_iov = part.as_ptr() as *mut iovec;
            copy.msg_iovlen = part.len() as _;
            // SAFETY: `copy` is the program's msghdr over a part of its own buffers.
            let r = unsafe { real::recvmsg(fd, &mut copy, flags) };
            // SAFETY: as above: the program's msghdr, whose results it expects.
            unsafe {
                (*msg).msg_namelen = copy.msg_namelen;
                (*msg).msg_controllen = copy.msg_controllen;
                (*msg).msg_flags = copy.msg_flags;
            }
            r
        },
        // SAFETY: the first `m` bytes were just received.
        |m| unsafe { iovs.bytes(0, m) },
    )
}

hook! {
    /// recvmsg(2).
    fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
        // SAFETY: the program's msghdr (recvmsg's contract).
        unsafe { on_recvmsg(fd, msg, flags) }
    }
}

hook! {
    /// recvmmsg(2): on a stream socket, received as one message; on a UDP socket, one
    /// receive per message.
    fn recvmmsg(fd: c_int, msgs: *mut mmsghdr, vlen: c_uint, flags: c_int, timeout: *mut timespec) -> c_int {
        if !msgs.is_null() && vlen > 0 && crate::fds::is_datagram(fd) {
            // SAFETY: `msgs` points to `vlen` mmsghdrs (recvmmsg's contract), each with a
            // valid msghdr for recvmsg.
            return unsafe { datagram::recvmmsg(msgs, vlen, (flags, !timeout.is_null()), |m, f| on_recvmsg(fd, m, f)) };
        }
        if msgs.is_null() || vlen == 0 || !crate::fds::is_stream(fd) {
            // SAFETY: the program's arguments, passed on unchanged.
            return unsafe { real::recvmmsg(fd, msgs, vlen, flags, timeout) };
        }
        // SAFETY: `msgs` points to `vlen >= 1` mmsghdrs (recvmmsg's contract); the first one's
        // header is a valid msghdr for recvmsg.
        let r = unsafe { on_recvmsg(fd, &mut (*msgs).msg_hdr, flags & !libc::MSG_WAITFORONE) };
        if r < 0 {
            return -1;
        }
        // SAFETY: as above, the program's first mmsghdr.
        unsafe { (*msgs).msg_len = r as c_uint };
        1
    }
}

hook! {
    /// write(2).
    fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
        // SAFETY: `buf` holds `n` readable bytes (write's contract).
        unsafe { send_from(fd, (buf, n, NO_DEST), |part, m| real::write(fd, part, m)) }
    }
}

hook! {
    /// send(2).
    fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
        let flags = send_flags(fd, flags);
        // SAFETY: `buf` holds `n` readable bytes (send's contract).
        unsafe { send_from(fd, (buf, n, NO_DEST), |part, m| real::send(fd, part, m, flags)) }
    }
}

/// Whether a send on `fd` must leave out the destination address the program names: in replay,
/// on a recorded stream socket. TCP ignores the address of a send on a connected socket (ldns
/// names it on every send), but a played outside peer is a Unix socket, which refuses it
/// (EISCONN); a send that failed in the record is not made again.
fn drops_address(fd: c_int) -> bool {
    let kind = crate::fds::kind(fd);
    kind & crate::fds::STREAM != 0
        && kind & (crate::fds::PIPE | crate::fds::OURS) == 0
        && crate::ld::running().is_some_and(|ld| ld.mode == Mode::Replay)
}

/// The flags a send on `fd` is made with: in replay, on a recorded stream socket, without
/// `MSG_MORE`, which holds the bytes back in the kernel (see `preload/src/hooks/socket.rs`, `uncorked`).
fn send_flags(fd: c_int, flags: c_int) -> c_int {
    if flags & libc::MSG_MORE != 0 && drops_address(fd) {
        flags & !libc::MSG_MORE
    } else {
        flags
    }
}

hook! {
    /// sendto(2).
    fn sendto(fd: c_int, buf: *const c_void, n: size_t, flags: c_int, addr: *const sockaddr, len: socklen_t) -> ssize_t {
        let (addr, len) = if drops_address(fd) { (std::ptr::null(), 0) } else { (addr, len) };
        let flags = send_flags(fd, flags);
        // SAFETY: `buf` holds `n` readable bytes, `addr` is null or `len` readable
        // bytes (sendto's contract).
        unsafe { send_from(fd, (buf, n, (addr, len)), |part, m| real::sendto(fd, part, m, flags, addr, len)) }
    }
}

hook! {
    /// writev(2).
    fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
        // SAFETY: `iov` points to `cnt` iovecs (writev's contract).
        let iovs = unsafe { IoVecs::new(iov, cnt) };
        on_send(
            fd,
            iovs.total(),
            |off, m| {
                let part = iovs.part(off, m);
                // SAFETY: `part` is a valid iovec array over the program's buffers.
                unsafe { real::writev(fd, part.as_ptr(), part.len() as c_int) }
            },
            // SAFETY: the program's bytes to send.
            |off, m| unsafe { iovs.bytes(off, m) },
        )
    }
}

/// sendmsg on `fd` (also the one message of a sendmmsg).
///
/// # Safety
/// `msg` must be null or the program's msghdr, as sendmsg(2) wants it.
unsafe fn on_sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    if msg.is_null() {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { real::sendmsg(fd, msg, flags) };
    }
    // SAFETY: `msg` is not null and points to the program's msghdr (sendmsg's contract).
    let iovs = unsafe { IoVecs::of_msg(msg) };
    let drop_address = drops_address(fd);
    let flags = send_flags(fd, flags);
    // SAFETY: as above.
    let passed = unsafe { buffers::passed_in(msg) };
    // SAFETY: as above.
    let to = unsafe { ((*msg).msg_name as *const sockaddr, (*msg).msg_namelen) };
    on_send_passing(
        fd,
        (iovs.total(), passed, to),
        |off, m| {
            let part = iovs.part(off, m);
            // SAFETY: `msg` points to the program's msghdr.
            let mut copy = unsafe { *msg };
            copy.msg_iov = part.as_ptr() as *mut iovec;
            copy.msg_iovlen = part.len() as _;
            if drop_address {
                copy.msg_name = std::ptr::null_mut();
                copy.msg_namelen = 0;
            }
            if off > 0 {
                // Ancillary data goes with the first part only.
                copy.msg_control = std::ptr::null_mut();
                copy.msg_controllen = 0;
            }
            // SAFETY: `copy` is the program's msghdr over a part of its own buffers.
            unsafe { real::sendmsg(fd, &copy, flags) }
        },
        // SAFETY: the program's bytes to send.
        |off, m| unsafe { iovs.bytes(off, m) },
    )
}

hook! {
    /// sendmsg(2).
    fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
        // SAFETY: the program's msghdr (sendmsg's contract).
        unsafe { on_sendmsg(fd, msg, flags) }
    }
}

hook! {
    /// sendmmsg(2): on a stream socket, sent as one message; on a UDP socket, one send per
    /// message.
    fn sendmmsg(fd: c_int, msgs: *mut mmsghdr, vlen: c_uint, flags: c_int) -> c_int {
        if !msgs.is_null() && vlen > 0 && crate::fds::is_datagram(fd) {
            // SAFETY: `msgs` points to `vlen` mmsghdrs (sendmmsg's contract), each with a
            // valid msghdr for sendmsg.
            return unsafe { datagram::sendmmsg(msgs, vlen, |m| on_sendmsg(fd, m, flags)) };
        }
        if msgs.is_null() || vlen == 0 || !crate::fds::is_stream(fd) {
            // SAFETY: the program's arguments, passed on unchanged.
            return unsafe { real::sendmmsg(fd, msgs, vlen, flags) };
        }
        // SAFETY: `msgs` points to `vlen >= 1` mmsghdrs (sendmmsg's contract); the first one's
        // header is a valid msghdr for sendmsg.
        let r = unsafe { on_sendmsg(fd, &(*msgs).msg_hdr, flags) };
        if r < 0 {
            return -1;
        }
        // SAFETY: as above, the program's first mmsghdr.
        unsafe { (*msgs).msg_len = r as c_uint };
        1
    }
}

hook! {
    /// sendfile(2): a send on the output fd.
    fn sendfile(out: c_int, input: c_int, off: *mut off_t, n: size_t) -> ssize_t {
        on_send(
            out,
            n,
            // SAFETY: `off` is null or the program's offset (sendfile's contract).
            |_, m| unsafe { real::sendfile(out, input, off, m) },
            |_, _| Vec::new(),
        )
    }
}

hook! {
    /// sendfile64(2).
    fn sendfile64(out: c_int, input: c_int, off: *mut off_t, n: size_t) -> ssize_t {
        on_send(
            out,
            n,
            // SAFETY: `off` is null or the program's offset (sendfile's contract).
            |_, m| unsafe { real::sendfile64(out, input, off, m) },
            |_, _| Vec::new(),
        )
    }
}
