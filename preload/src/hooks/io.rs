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

/// Bytes `offset..offset + n` of an iovec array, copied.
///
/// # Safety
/// `iov` must point to `cnt` valid iovecs whose bytes `offset..offset + n` are initialised.
unsafe fn iov_bytes(iov: *const iovec, cnt: c_int, offset: usize, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    // SAFETY: `iov` points to `cnt` valid iovecs, as the caller promises.
    for part in unsafe { iov_slice(iov, cnt, offset, n) } {
        // SAFETY: each part lies within the caller's buffers, in their initialised bytes.
        out.extend_from_slice(unsafe {
            std::slice::from_raw_parts(part.iov_base as *const u8, part.iov_len)
        });
    }
    out
}

/// The bytes `offset..offset + n` of an iovec array, as another iovec array.
///
/// # Safety
/// `iov` must point to `cnt` valid iovecs.
unsafe fn iov_slice(iov: *const iovec, cnt: c_int, offset: usize, n: usize) -> Vec<iovec> {
    let mut out = Vec::new();
    let mut skip = offset;
    let mut left = n;
    for i in 0..cnt.max(0) as usize {
        if left == 0 {
            break;
        }
        // SAFETY: i < cnt, and `iov` points to `cnt` iovecs (the caller's promise).
        let v = unsafe { *iov.add(i) };
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

/// Total length of an iovec array.
///
/// # Safety
/// `iov` must point to `cnt` valid iovecs.
unsafe fn iov_len(iov: *const iovec, cnt: c_int) -> usize {
    (0..cnt.max(0) as usize)
        // SAFETY: i < cnt, and `iov` points to `cnt` iovecs (the caller's promise).
        .map(|i| unsafe { (*iov.add(i)).iov_len })
        .sum()
}

hook! {
    /// read(2).
    fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
        on_recv(
            fd,
            n,
            // SAFETY: `buf` holds `n >= m` writable bytes (read's contract).
            |m| unsafe { real::read(fd, buf, m) },
            // SAFETY: the first `m <= n` bytes of `buf` were just received.
            |m| unsafe { bytes_at(buf, 0, m) },
        )
    }
}

hook! {
    /// The fortified read(2).
    fn __read_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t) -> ssize_t {
        on_recv(
            fd,
            n,
            // SAFETY: `buf` holds `buflen` bytes; the real function checks `m <= buflen`.
            |m| unsafe { real::__read_chk(fd, buf, m, buflen) },
            // SAFETY: the first `m <= n` bytes of `buf` were just received.
            |m| unsafe { bytes_at(buf, 0, m) },
        )
    }
}

hook! {
    /// recv(2).
    fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
        on_recv(
            fd,
            n,
            // SAFETY: `buf` holds `n >= m` writable bytes (recv's contract).
            |m| unsafe { real::recv(fd, buf, m, flags) },
            // SAFETY: the first `m <= n` bytes of `buf` were just received.
            |m| unsafe { bytes_at(buf, 0, m) },
        )
    }
}

hook! {
    /// The fortified recv(2).
    fn __recv_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t, flags: c_int) -> ssize_t {
        on_recv(
            fd,
            n,
            // SAFETY: `buf` holds `buflen` bytes; the real function checks `m <= buflen`.
            |m| unsafe { real::__recv_chk(fd, buf, m, buflen, flags) },
            // SAFETY: the first `m <= n` bytes of `buf` were just received.
            |m| unsafe { bytes_at(buf, 0, m) },
        )
    }
}

hook! {
    /// recvfrom(2).
    fn recvfrom(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t {
        on_recv(
            fd,
            n,
            // SAFETY: `buf` holds `n >= m` writable bytes, `addr`/`len` are null or the
            // program's address buffer (recvfrom's contract).
            |m| unsafe { real::recvfrom(fd, buf, m, flags, addr, len) },
            // SAFETY: the first `m <= n` bytes of `buf` were just received.
            |m| unsafe { bytes_at(buf, 0, m) },
        )
    }
}

hook! {
    /// The fortified recvfrom(2).
    fn __recvfrom_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t {
        on_recv(
            fd,
            n,
            // SAFETY: as for recvfrom; the real function checks `m <= buflen`.
            |m| unsafe { real::__recvfrom_chk(fd, buf, m, buflen, flags, addr, len) },
            // SAFETY: the first `m <= n` bytes of `buf` were just received.
            |m| unsafe { bytes_at(buf, 0, m) },
        )
    }
}

hook! {
    /// readv(2).
    fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
        // SAFETY: `iov` points to `cnt` iovecs (readv's contract).
        let total = unsafe { iov_len(iov, cnt) };
        on_recv(
            fd,
            total,
            |m| {
                // SAFETY: as above; the parts lie within the program's buffers.
                let part = unsafe { iov_slice(iov, cnt, 0, m) };
                // SAFETY: `part` is a valid iovec array over the program's buffers.
                unsafe { real::readv(fd, part.as_ptr(), part.len() as c_int) }
            },
            // SAFETY: `iov` points to `cnt` iovecs whose first `m` bytes were just received.
            |m| unsafe { iov_bytes(iov, cnt, 0, m) },
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
        let (iov, cnt) = unsafe { ((*msg).msg_iov, (*msg).msg_iovlen as c_int) };
        // SAFETY: a msghdr's `msg_iov` points to `msg_iovlen` iovecs.
        let total = unsafe { iov_len(iov, cnt) };
        on_recv(
            fd,
            total,
            |m| {
                // SAFETY: as above; the parts lie within the program's buffers.
                let part = unsafe { iov_slice(iov, cnt, 0, m) };
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
            // SAFETY: `iov` points to `cnt` iovecs whose first `m` bytes were just received.
            |m| unsafe { iov_bytes(iov, cnt, 0, m) },
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
        on_send(
            fd,
            n,
            // SAFETY: `buf` holds `n >= off + m` readable bytes (write's contract).
            |off, m| unsafe { real::write(fd, (buf as *const u8).add(off).cast(), m) },
            // SAFETY: as above.
            |off, m| unsafe { bytes_at(buf, off, m) },
        )
    }
}

hook! {
    /// send(2).
    fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
        on_send(
            fd,
            n,
            // SAFETY: `buf` holds `n >= off + m` readable bytes (send's contract).
            |off, m| unsafe { real::send(fd, (buf as *const u8).add(off).cast(), m, flags) },
            // SAFETY: as above.
            |off, m| unsafe { bytes_at(buf, off, m) },
        )
    }
}

hook! {
    /// sendto(2).
    fn sendto(fd: c_int, buf: *const c_void, n: size_t, flags: c_int, addr: *const sockaddr, len: socklen_t) -> ssize_t {
        on_send(
            fd,
            n,
            // SAFETY: `buf` holds `n >= off + m` readable bytes, `addr` is null or `len`
            // readable bytes (sendto's contract).
            |off, m| unsafe { real::sendto(fd, (buf as *const u8).add(off).cast(), m, flags, addr, len) },
            // SAFETY: as above.
            |off, m| unsafe { bytes_at(buf, off, m) },
        )
    }
}

hook! {
    /// writev(2).
    fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
        // SAFETY: `iov` points to `cnt` iovecs (writev's contract).
        let total = unsafe { iov_len(iov, cnt) };
        on_send(
            fd,
            total,
            |off, m| {
                // SAFETY: as above; the parts lie within the program's buffers.
                let part = unsafe { iov_slice(iov, cnt, off, m) };
                // SAFETY: `part` is a valid iovec array over the program's buffers.
                unsafe { real::writev(fd, part.as_ptr(), part.len() as c_int) }
            },
            // SAFETY: `iov` points to `cnt` iovecs holding at least `off + m` bytes.
            |off, m| unsafe { iov_bytes(iov, cnt, off, m) },
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
        let (iov, cnt) = unsafe { ((*msg).msg_iov, (*msg).msg_iovlen as c_int) };
        // SAFETY: a msghdr's `msg_iov` points to `msg_iovlen` iovecs.
        let total = unsafe { iov_len(iov, cnt) };
        on_send(
            fd,
            total,
            |off, m| {
                // SAFETY: as above; the parts lie within the program's buffers.
                let part = unsafe { iov_slice(iov, cnt, off, m) };
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
            // SAFETY: `iov` points to `cnt` iovecs holding at least `off + m` bytes.
            |off, m| unsafe { iov_bytes(iov, cnt, off, m) },
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
