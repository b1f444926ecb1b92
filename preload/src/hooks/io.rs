//! Data on channel ends: the read/write, recv/send families and their fortified variants.
//! Only stream sockets are recorded; every other fd passes straight through.
//!
//! Each hook describes its buffers to [`on_recv`]/[`on_send`] as two closures: one makes the
//! real call on a part of the buffers, one copies bytes out of them.

use super::{hook, ld_for_io};
use crate::{real, record, replay};
use ddbx_wire::proto::Mode;
use libc::{
    c_int, c_uint, c_void, iovec, mmsghdr, msghdr, off_t, size_t, sockaddr, socklen_t, ssize_t,
    timespec,
};

/// A receive of at most `len` bytes on `fd`; `call(n)` does the real receive of at most `n`;
/// `gather(n)` copies the first `n` bytes received.
fn on_recv(
    fd: c_int,
    len: usize,
    mut call: impl FnMut(usize) -> isize,
    gather: impl Fn(usize) -> Vec<u8>,
) -> isize {
    let Some(ld) = ld_for_io(fd) else {
        return call(len);
    };
    match ld.mode {
        Mode::Record => record::io::recv(ld, fd, len, call, gather),
        Mode::Replay => replay::io::recv(ld, fd, len, call),
    }
}

/// A send of `len` bytes on `fd`; `call(offset, n)` sends bytes `offset..offset + n`;
/// `gather(offset, n)` copies those bytes.
fn on_send(
    fd: c_int,
    len: usize,
    mut call: impl FnMut(usize, usize) -> isize,
    gather: impl Fn(usize, usize) -> Vec<u8>,
) -> isize {
    let Some(ld) = ld_for_io(fd) else {
        return call(0, len);
    };
    match ld.mode {
        Mode::Record => record::io::send(ld, fd, len, call, gather),
        Mode::Replay => replay::io::send(ld, fd, len, call),
    }
}

/// A receive into one buffer of `n` bytes; `call(m)` receives at most `m <= n` bytes into it.
///
/// # Safety
/// `buf` must be null or valid for writing `n` bytes.
unsafe fn recv_into(
    fd: c_int,
    buf: *mut c_void,
    n: usize,
    call: impl FnMut(usize) -> isize,
) -> isize {
    // SAFETY: the first `m <= n` bytes of `buf` were just received.
    on_recv(fd, n, call, |m| unsafe { bytes_at(buf, 0, m) })
}

/// A send from one buffer of `n` bytes; `call(part, m)` sends the `m` bytes at `part`.
///
/// # Safety
/// `buf` must be null or valid for reading `n` bytes.
unsafe fn send_from(
    fd: c_int,
    buf: *const c_void,
    n: usize,
    mut call: impl FnMut(*const c_void, usize) -> isize,
) -> isize {
    on_send(
        fd,
        n,
        // SAFETY: `off + m <= n`: within `buf`.
        |off, m| call(unsafe { (buf as *const u8).add(off) }.cast(), m),
        // SAFETY: as above; `buf` holds the program's bytes.
        |off, m| unsafe { bytes_at(buf, off, m) },
    )
}

/// `n` bytes at `buf` (offset `off`), copied.
///
/// # Safety
/// `buf` must be null or valid for reading `off + n` initialised bytes.
unsafe fn bytes_at(buf: *const c_void, off: usize, n: usize) -> Vec<u8> {
    if buf.is_null() {
        return Vec::new();
    }
    // SAFETY: not null, and `off + n` readable bytes, as the caller promises.
    unsafe { std::slice::from_raw_parts((buf as *const u8).add(off), n) }.to_vec()
}

/// The program's iovec array (readv/writev, a msghdr's buffers), valid for the whole call.
#[derive(Clone, Copy)]
struct IoVecs {
    base: *const iovec,
    count: c_int,
}

impl IoVecs {
    /// # Safety
    /// `base` must point to `count` iovecs over buffers that stay valid while this is used.
    unsafe fn new(base: *const iovec, count: c_int) -> IoVecs {
        IoVecs { base, count }
    }

    /// The buffers of a msghdr.
    ///
    /// # Safety
    /// `msg` must point to a msghdr whose `msg_iov` holds `msg_iovlen` iovecs over buffers that
    /// stay valid while this is used.
    unsafe fn of_msg(msg: *const msghdr) -> IoVecs {
        // SAFETY: `msg` points to a msghdr, as the caller promises.
        let (base, count) = unsafe { ((*msg).msg_iov, (*msg).msg_iovlen as c_int) };
        // SAFETY: as the caller promises.
        unsafe { IoVecs::new(base, count) }
    }

    /// The iovecs, read from the program's array.
    fn each(self) -> impl Iterator<Item = iovec> {
        (0..self.count.max(0) as usize)
            // SAFETY: i < count, and `base` points to `count` iovecs (see `new`).
            .map(move |i| unsafe { *self.base.add(i) })
    }

    /// The total length of the buffers.
    fn total(self) -> usize {
        self.each().map(|v| v.iov_len).sum()
    }

    /// The bytes `offset..offset + n` of the buffers, as another iovec array.
    fn part(self, offset: usize, n: usize) -> Vec<iovec> {
        let mut out = Vec::new();
        let mut skip = offset;
        let mut left = n;
        for v in self.each() {
            if left == 0 {
                break;
            }
            if skip >= v.iov_len {
                skip -= v.iov_len;
                continue;
            }
            let take = (v.iov_len - skip).min(left);
            out.push(iovec {
                // SAFETY: skip < iov_len: within this iovec's buffer.
                iov_base: unsafe { (v.iov_base as *mut u8).add(skip) }.cast(),
                iov_len: take,
            });
            left -= take;
            skip = 0;
        }
        out
    }

    /// The bytes `offset..offset + n` of the buffers, copied.
    ///
    /// # Safety
    /// Those bytes must be initialised (sent by the program, or just received).
    unsafe fn bytes(self, offset: usize, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n);
        for part in self.part(offset, n) {
            // SAFETY: each part lies within the program's buffers, in initialised bytes.
            out.extend_from_slice(unsafe {
                std::slice::from_raw_parts(part.iov_base as *const u8, part.iov_len)
            });
        }
        out
    }
}

hook! {
    /// read(2).
    fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
        // SAFETY: `buf` holds `n` writable bytes (read's contract).
        unsafe { recv_into(fd, buf, n, |m| real::read(fd, buf, m)) }
    }
}

hook! {
    /// The fortified read(2).
    fn __read_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t) -> ssize_t {
        // SAFETY: `buf` holds `n` writable bytes; the real function checks them against `buflen`.
        unsafe { recv_into(fd, buf, n, |m| real::__read_chk(fd, buf, m, buflen)) }
    }
}

hook! {
    /// recv(2).
    fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
        // SAFETY: `buf` holds `n` writable bytes (recv's contract).
        unsafe { recv_into(fd, buf, n, |m| real::recv(fd, buf, m, flags)) }
    }
}

hook! {
    /// The fortified recv(2).
    fn __recv_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t, flags: c_int) -> ssize_t {
        // SAFETY: `buf` holds `n` writable bytes; the real function checks them against `buflen`.
        unsafe { recv_into(fd, buf, n, |m| real::__recv_chk(fd, buf, m, buflen, flags)) }
    }
}

hook! {
    /// recvfrom(2).
    fn recvfrom(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t {
        // SAFETY: `buf` holds `n` writable bytes, `addr`/`len` are null or the
        // program's address buffer (recvfrom's contract).
        unsafe { recv_into(fd, buf, n, |m| real::recvfrom(fd, buf, m, flags, addr, len)) }
    }
}

hook! {
    /// The fortified recvfrom(2).
    fn __recvfrom_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t {
        // SAFETY: as for recvfrom; the real function checks `n` against `buflen`.
        unsafe { recv_into(fd, buf, n, |m| real::__recvfrom_chk(fd, buf, m, buflen, flags, addr, len)) }
    }
}

hook! {
    /// readv(2).
    fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
        // SAFETY: `iov` points to `cnt` iovecs (readv's contract).
        let iovs = unsafe { IoVecs::new(iov, cnt) };
        on_recv(
            fd,
            iovs.total(),
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

hook! {
    /// recvmsg(2).
    fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
        if msg.is_null() {
            // SAFETY: the program's arguments, passed on unchanged.
            return unsafe { real::recvmsg(fd, msg, flags) };
        }
        // SAFETY: `msg` is not null and points to the program's msghdr (recvmsg's contract).
        let iovs = unsafe { IoVecs::of_msg(msg) };
        on_recv(
            fd,
            iovs.total(),
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
}

hook! {
    /// recvmmsg(2): on a stream socket, received as one message.
    fn recvmmsg(fd: c_int, msgs: *mut mmsghdr, vlen: c_uint, flags: c_int, timeout: *mut timespec) -> c_int {
        if msgs.is_null() || vlen == 0 || !crate::fds::is_stream(fd) {
            // SAFETY: the program's arguments, passed on unchanged.
            return unsafe { real::recvmmsg(fd, msgs, vlen, flags, timeout) };
        }
        // SAFETY: `msgs` points to `vlen >= 1` mmsghdrs (recvmmsg's contract); the first one's
        // header is a valid msghdr for recvmsg.
        let r = unsafe { recvmsg(fd, &mut (*msgs).msg_hdr, flags & !libc::MSG_WAITFORONE) };
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
        unsafe { send_from(fd, buf, n, |part, m| real::write(fd, part, m)) }
    }
}

hook! {
    /// send(2).
    fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
        // SAFETY: `buf` holds `n` readable bytes (send's contract).
        unsafe { send_from(fd, buf, n, |part, m| real::send(fd, part, m, flags)) }
    }
}

hook! {
    /// sendto(2).
    fn sendto(fd: c_int, buf: *const c_void, n: size_t, flags: c_int, addr: *const sockaddr, len: socklen_t) -> ssize_t {
        // SAFETY: `buf` holds `n` readable bytes, `addr` is null or `len` readable
        // bytes (sendto's contract).
        unsafe { send_from(fd, buf, n, |part, m| real::sendto(fd, part, m, flags, addr, len)) }
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

hook! {
    /// sendmsg(2).
    fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
        if msg.is_null() {
            // SAFETY: the program's arguments, passed on unchanged.
            return unsafe { real::sendmsg(fd, msg, flags) };
        }
        // SAFETY: `msg` is not null and points to the program's msghdr (sendmsg's contract).
        let iovs = unsafe { IoVecs::of_msg(msg) };
        on_send(
            fd,
            iovs.total(),
            |off, m| {
                let part = iovs.part(off, m);
                // SAFETY: `msg` points to the program's msghdr.
                let mut copy = unsafe { *msg };
                copy.msg_iov = part.as_ptr() as *mut iovec;
                copy.msg_iovlen = part.len() as _;
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
}

hook! {
    /// sendmmsg(2): on a stream socket, sent as one message.
    fn sendmmsg(fd: c_int, msgs: *mut mmsghdr, vlen: c_uint, flags: c_int) -> c_int {
        if msgs.is_null() || vlen == 0 || !crate::fds::is_stream(fd) {
            // SAFETY: the program's arguments, passed on unchanged.
            return unsafe { real::sendmmsg(fd, msgs, vlen, flags) };
        }
        // SAFETY: `msgs` points to `vlen >= 1` mmsghdrs (sendmmsg's contract); the first one's
        // header is a valid msghdr for sendmsg.
        let r = unsafe { sendmsg(fd, &(*msgs).msg_hdr, flags) };
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
