//! Data on channel ends: the read/write, recv/send families and their fortified variants.
//! Only stream sockets are recorded; every other fd passes straight through.

use super::{hook, ld_for_io};
use crate::{real, record, replay, sys};
use ddbx_wire::proto::Mode;
use libc::{
    c_int, c_uint, c_void, iovec, mmsghdr, msghdr, off_t, size_t, sockaddr, socklen_t, ssize_t,
    timespec,
};

/// Whether the bytes on `fd` are kept while recording: a stream socket whose peer may be
/// outside the session (not one end of a socketpair). The GD drops the bytes of channels
/// between two recorded processes when the record ends.
fn keeps_bytes(fd: c_int) -> bool {
    crate::fds::kind(fd) & crate::fds::PAIRED == 0
}

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
        Mode::Record if ld.trace.is_some() => {
            let r = call(len);
            let err = sys::errno();
            // Bytes are kept only from peers that describe none (outside the session).
            let (decision, described) = match ld.trace.as_mut() {
                Some(t) if r >= 0 => t.received(fd, len, r as usize),
                _ => (crate::trace::Decision::Logged, false),
            };
            let data = (r > 0 && keeps_bytes(fd) && !described).then(|| gather(r as usize));
            ld.emit_decided(&record::recv(fd, r, err, data), decision);
            sys::set_errno(err);
            r
        }
        Mode::Record => {
            let r = call(len);
            let err = sys::errno();
            let data = (r > 0 && keeps_bytes(fd)).then(|| gather(r as usize));
            ld.emit(&record::recv(fd, r, err, data));
            sys::set_errno(err);
            r
        }
        Mode::Replay => replay::io::recv(ld, fd, len, call, gather),
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
        Mode::Record if ld.trace.is_some() => {
            let events = ld.events() + 1;
            let token = ld
                .trace
                .as_mut()
                .and_then(|t| t.before_send(fd, len, events));
            let r = call(0, len);
            let err = sys::errno();
            if let Some(t) = ld.trace.as_mut() {
                t.after_send(token, r);
            }
            // A send that took everything is what replay does anyway; a partial or failed
            // one is logged, with its bytes when no side channel says the peer is ours.
            if r >= 0 && r as usize == len && len > 0 {
                let rec = record::send(fd, r, err, None);
                ld.emit_decided(&rec, crate::trace::Decision::Untraced);
            } else {
                let data = (r > 0 && keeps_bytes(fd) && token.is_none())
                    .then(|| gather(0, r as usize))
                    .filter(|d| d.len() == r as usize);
                ld.emit(&record::send(fd, r, err, data));
            }
            sys::set_errno(err);
            r
        }
        Mode::Record => {
            let r = call(0, len);
            let err = sys::errno();
            let data = (r > 0 && keeps_bytes(fd))
                .then(|| gather(0, r as usize))
                .filter(|d| d.len() == r as usize); // sendfile's bytes are not at hand
            ld.emit(&record::send(fd, r, err, data));
            sys::set_errno(err);
            r
        }
        Mode::Replay => replay::io::send(ld, fd, len, call, gather),
    }
}

/// `n` bytes at `buf` (offset `off`), copied.
///
/// # Safety
/// `buf` must be valid for `off + n` bytes.
unsafe fn bytes_at(buf: *const c_void, off: usize, n: usize) -> Vec<u8> {
    if buf.is_null() {
        return Vec::new();
    }
    // SAFETY: as the caller promises.
    unsafe { std::slice::from_raw_parts((buf as *const u8).add(off), n) }.to_vec()
}

/// Bytes `offset..offset + n` of an iovec array, copied.
///
/// # Safety
/// `iov` must point to `cnt` valid iovecs.
unsafe fn iov_bytes(iov: *const iovec, cnt: c_int, offset: usize, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    // SAFETY: as the caller promises.
    for part in unsafe { iov_slice(iov, cnt, offset, n) } {
        // SAFETY: each part lies within the caller's buffers.
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
        // SAFETY: i < cnt.
        let v = unsafe { *iov.add(i) };
        if skip >= v.iov_len {
            skip -= v.iov_len;
            continue;
        }
        let take = (v.iov_len - skip).min(left);
        out.push(iovec {
            // SAFETY: within the caller's buffer.
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
        // SAFETY: i < cnt.
        .map(|i| unsafe { (*iov.add(i)).iov_len })
        .sum()
}

hook! {
    /// read(2).
    fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
        on_recv(fd, n, |m| unsafe { real::read(fd, buf, m) }, |m| unsafe { bytes_at(buf, 0, m) })
    }
}

hook! {
    /// The fortified read(2).
    fn __read_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t) -> ssize_t {
        on_recv(fd, n, |m| unsafe { real::__read_chk(fd, buf, m, buflen) }, |m| unsafe { bytes_at(buf, 0, m) })
    }
}

hook! {
    /// recv(2).
    fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
        on_recv(fd, n, |m| unsafe { real::recv(fd, buf, m, flags) }, |m| unsafe { bytes_at(buf, 0, m) })
    }
}

hook! {
    /// The fortified recv(2).
    fn __recv_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t, flags: c_int) -> ssize_t {
        on_recv(fd, n, |m| unsafe { real::__recv_chk(fd, buf, m, buflen, flags) }, |m| unsafe { bytes_at(buf, 0, m) })
    }
}

hook! {
    /// recvfrom(2).
    fn recvfrom(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t {
        on_recv(fd, n, |m| unsafe { real::recvfrom(fd, buf, m, flags, addr, len) }, |m| unsafe { bytes_at(buf, 0, m) })
    }
}

hook! {
    /// The fortified recvfrom(2).
    fn __recvfrom_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t {
        on_recv(fd, n, |m| unsafe { real::__recvfrom_chk(fd, buf, m, buflen, flags, addr, len) }, |m| unsafe { bytes_at(buf, 0, m) })
    }
}

hook! {
    /// readv(2).
    fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
        let total = iov_len(iov, cnt);
        on_recv(fd, total, |m| {
            let part = iov_slice(iov, cnt, 0, m);
            real::readv(fd, part.as_ptr(), part.len() as c_int)
        }, |m| iov_bytes(iov, cnt, 0, m))
    }
}

hook! {
    /// recvmsg(2).
    fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
        if msg.is_null() {
            return real::recvmsg(fd, msg, flags);
        }
        let total = iov_len((*msg).msg_iov, (*msg).msg_iovlen as c_int);
        on_recv(fd, total, |m| {
            let part = iov_slice((*msg).msg_iov, (*msg).msg_iovlen as c_int, 0, m);
            let mut copy = *msg;
            copy.msg_iov = part.as_ptr() as *mut iovec;
            copy.msg_iovlen = part.len() as _;
            let r = real::recvmsg(fd, &mut copy, flags);
            (*msg).msg_namelen = copy.msg_namelen;
            (*msg).msg_controllen = copy.msg_controllen;
            (*msg).msg_flags = copy.msg_flags;
            r
        }, |m| iov_bytes((*msg).msg_iov, (*msg).msg_iovlen as c_int, 0, m))
    }
}

hook! {
    /// recvmmsg(2): on a stream socket, received as one message.
    fn recvmmsg(fd: c_int, msgs: *mut mmsghdr, vlen: c_uint, flags: c_int, timeout: *mut timespec) -> c_int {
        if msgs.is_null() || vlen == 0 || !crate::fds::is_stream(fd) {
            return real::recvmmsg(fd, msgs, vlen, flags, timeout);
        }
        let r = recvmsg(fd, &mut (*msgs).msg_hdr, flags & !libc::MSG_WAITFORONE);
        if r < 0 {
            return -1;
        }
        (*msgs).msg_len = r as c_uint;
        1
    }
}

hook! {
    /// write(2).
    fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
        on_send(fd, n, |off, m| unsafe { real::write(fd, (buf as *const u8).add(off).cast(), m) }, |off, m| unsafe { bytes_at(buf, off, m) })
    }
}

hook! {
    /// send(2).
    fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
        on_send(fd, n, |off, m| unsafe { real::send(fd, (buf as *const u8).add(off).cast(), m, flags) }, |off, m| unsafe { bytes_at(buf, off, m) })
    }
}

hook! {
    /// sendto(2).
    fn sendto(fd: c_int, buf: *const c_void, n: size_t, flags: c_int, addr: *const sockaddr, len: socklen_t) -> ssize_t {
        on_send(fd, n, |off, m| unsafe { real::sendto(fd, (buf as *const u8).add(off).cast(), m, flags, addr, len) }, |off, m| unsafe { bytes_at(buf, off, m) })
    }
}

hook! {
    /// writev(2).
    fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
        let total = iov_len(iov, cnt);
        on_send(fd, total, |off, m| {
            let part = iov_slice(iov, cnt, off, m);
            real::writev(fd, part.as_ptr(), part.len() as c_int)
        }, |off, m| iov_bytes(iov, cnt, off, m))
    }
}

hook! {
    /// sendmsg(2).
    fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
        if msg.is_null() {
            return real::sendmsg(fd, msg, flags);
        }
        let total = iov_len((*msg).msg_iov, (*msg).msg_iovlen as c_int);
        on_send(fd, total, |off, m| {
            let part = iov_slice((*msg).msg_iov, (*msg).msg_iovlen as c_int, off, m);
            let mut copy = *msg;
            copy.msg_iov = part.as_ptr() as *mut iovec;
            copy.msg_iovlen = part.len() as _;
            if off > 0 {
                // Ancillary data goes with the first part only.
                copy.msg_control = std::ptr::null_mut();
                copy.msg_controllen = 0;
            }
            real::sendmsg(fd, &copy, flags)
        }, |off, m| iov_bytes((*msg).msg_iov, (*msg).msg_iovlen as c_int, off, m))
    }
}

hook! {
    /// sendmmsg(2): on a stream socket, sent as one message.
    fn sendmmsg(fd: c_int, msgs: *mut mmsghdr, vlen: c_uint, flags: c_int) -> c_int {
        if msgs.is_null() || vlen == 0 || !crate::fds::is_stream(fd) {
            return real::sendmmsg(fd, msgs, vlen, flags);
        }
        let r = sendmsg(fd, &(*msgs).msg_hdr, flags);
        if r < 0 {
            return -1;
        }
        (*msgs).msg_len = r as c_uint;
        1
    }
}

hook! {
    /// sendfile(2): a send on the output fd.
    fn sendfile(out: c_int, input: c_int, off: *mut off_t, n: size_t) -> ssize_t {
        on_send(out, n, |_, m| unsafe { real::sendfile(out, input, off, m) }, |_, _| Vec::new())
    }
}

hook! {
    /// sendfile64(2).
    fn sendfile64(out: c_int, input: c_int, off: *mut off_t, n: size_t) -> ssize_t {
        on_send(out, n, |_, m| unsafe { real::sendfile64(out, input, off, m) }, |_, _| Vec::new())
    }
}
