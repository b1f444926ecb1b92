//! The bytes of a replayed receive, taken from the kernel as they come and handed to the
//! program from the LD's own buffer.
//!
//! A receive replays with exactly the recorded byte count, so replay must wait until that many
//! bytes have arrived. Waiting for them in the kernel can last for ever: a socket's receive
//! memory is counted in segments, so many small ones fill it long before the byte count is
//! reached (issue #11: 2,304 bytes in 130 KB of receive memory, the senders blocked), and a
//! recorded `recv(MSG_WAITALL)` may be larger than the receive buffer. So replay takes the
//! bytes out of the kernel (never more than the receive needs) into the LD's buffer for the
//! channel end ([`HeldBytes`], per open file description), waits on the fd for more, and
//! hands the program its bytes from there, with the ancillary data (fds passed with
//! `SCM_RIGHTS`, credentials) and the sender's address that came with them.
//!
//! Bytes stay held between receives only after a `MSG_PEEK`; readiness for reading counts them
//! ([`holds`]).

use super::cursor;
use crate::fds;
use crate::ld::{HeldBytes, Ld};
use crate::sys;
use libc::c_int;

/// The program's side of one replayed receive: its buffers, flags, and where the sender's
/// address and ancillary data go (`hooks/io.rs` implements it for each receive call).
pub trait Receiver {
    /// The receive's flags (`MSG_PEEK` and `MSG_CMSG_CLOEXEC` matter here).
    fn flags(&self) -> c_int;

    /// Copies `bytes` to the start of the program's buffers.
    fn fill(&mut self, bytes: &[u8]);

    /// Gives the program the sender's address `from` and the ancillary data `control` (whole
    /// cmsgs) that came with the bytes, as far as it has room ([`fitting`]); returns how many
    /// bytes of `control` it took. The fds passed in the rest are closed, as the kernel does.
    fn finish(&mut self, control: &[u8], from: &[u8]) -> usize;

    /// Adds `flags` to what recvmsg reports in `msg_flags` (`MSG_TRUNC` of a datagram that
    /// did not fit); nothing for the other calls.
    fn add_flags(&mut self, flags: c_int);
}

/// The held bytes of `fd`'s channel end, if any.
fn find(ld: &mut Ld, fd: c_int) -> Option<&mut HeldBytes> {
    let id = fds::id(fd)?;
    ld.replay
        .as_mut()?
        .held
        .iter_mut()
        .find(|h| h.description == id)
}

/// The held bytes of `fd`'s channel end, made empty when there are none yet.
fn entry(ld: &mut Ld, fd: c_int) -> Option<&mut HeldBytes> {
    let id = fds::id(fd)?;
    let held = &mut ld.replay.as_mut()?.held;
    let at = match held.iter().position(|h| h.description == id) {
        Some(at) => at,
        None => {
            // Bytes of channel ends that are closed since cannot be received any more.
            held.retain(|h| h.description.is_live());
            held.push(HeldBytes {
                description: id,
                bytes: Vec::new(),
                control: Vec::new(),
                from: Vec::new(),
                ended: false,
            });
            held.len() - 1
        }
    };
    held.get_mut(at)
}

/// Whether the LD holds bytes (or the end of the stream) for `fd`: it is readable.
pub fn holds(ld: &mut Ld, fd: c_int) -> bool {
    find(ld, fd).is_some_and(|h| !h.bytes.is_empty() || h.ended)
}

/// How many bytes the LD holds for `fd`.
pub fn held_bytes(ld: &mut Ld, fd: c_int) -> usize {
    find(ld, fd).map_or(0, |h| h.bytes.len())
}

/// Room for the ancillary data a receive may bring: `SCM_MAX_FD` (253) fds and credentials.
const CONTROL_ROOM: usize = 2048;

/// Takes up to `want` bytes of `fd` from the kernel into `h`, without blocking: what recvmsg
/// returned (0: the end of the stream; -1 and errno: nothing, EAGAIN when nothing is there).
fn take_from_kernel(h: &mut HeldBytes, fd: c_int, want: usize, flags: c_int) -> isize {
    if fds::pipes::is_recorded(fd) {
        return take_from_pipe(h, fd, want);
    }
    let had = h.bytes.len();
    h.bytes.reserve(want);
    let mut control = [0u64; CONTROL_ROOM / 8];
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // Into the spare capacity, not zeroed first: a receive that comes in small pieces would
    // otherwise clear what is still missing at every piece.
    let spare = h.bytes.spare_capacity_mut();
    let mut iov = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: want.min(spare.len()),
    };
    // SAFETY: all-zero is a valid msghdr; the pointers are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = CONTROL_ROOM as _;
    let flags = libc::MSG_DONTWAIT | (flags & libc::MSG_CMSG_CLOEXEC);
    // SAFETY: every pointer in `msg` points to our locals or to the spare capacity of
    // `h.bytes`, `iov_len` bytes.
    let r = unsafe { libc::syscall(libc::SYS_recvmsg, fd, &mut msg as *mut libc::msghdr, flags) }
        as isize;
    if r < 0 {
        return r;
    }
    // SAFETY: the kernel wrote `r <= iov_len` bytes right after the `had` bytes held.
    unsafe { h.bytes.set_len(had + r as usize) };
    if r == 0 {
        h.ended = true;
    }
    let control_len = (msg.msg_controllen as usize).min(CONTROL_ROOM);
    // SAFETY: the kernel wrote `control_len <= CONTROL_ROOM` bytes of our array.
    let control = unsafe { std::slice::from_raw_parts(control.as_ptr().cast::<u8>(), control_len) };
    for passed in passed_fds(control) {
        fds::forget(passed); // a new file at that number
    }
    h.control.extend_from_slice(control);
    let from_len = (msg.msg_namelen as usize).min(std::mem::size_of::<libc::sockaddr_storage>());
    // SAFETY: the kernel wrote `from_len` bytes of our sockaddr_storage.
    let from = unsafe {
        std::slice::from_raw_parts(
            (&from as *const libc::sockaddr_storage).cast::<u8>(),
            from_len,
        )
    };
    h.from.clear();
    h.from.extend_from_slice(from);
    r
}

/// [`take_from_kernel`] on the read end of a pipe, which has no `MSG_DONTWAIT`: reads only
/// what `FIONREAD` says is there (the fd may block), and tells the end of the stream by a
/// hang-up with nothing left.
fn take_from_pipe(h: &mut HeldBytes, fd: c_int, want: usize) -> isize {
    loop {
        let waiting = sys::bytes_available(fd);
        if waiting < 0 {
            return -1;
        }
        if waiting == 0 {
            let revents = sys::poll_one(fd, libc::POLLIN, 0);
            if revents > 0 && revents & (libc::POLLHUP | libc::POLLERR) as c_int != 0 {
                if sys::bytes_available(fd) > 0 {
                    continue; // written just before the last writer went
                }
                h.ended = true;
                return 0;
            }
            sys::set_errno(libc::EAGAIN);
            return -1;
        }
        let had = h.bytes.len();
        let n = want.min(waiting as usize);
        h.bytes.reserve(n);
        let spare = h.bytes.spare_capacity_mut();
        // SAFETY: reads at most `n` bytes into the spare capacity, which has room for them.
        let r = unsafe { libc::syscall(libc::SYS_read, fd, spare.as_mut_ptr(), n) } as isize;
        if r > 0 {
            // SAFETY: the kernel wrote `r <= n` bytes right after the `had` bytes held.
            unsafe { h.bytes.set_len(had + r as usize) };
        }
        return r;
    }
}

/// Waits until the LD holds the `n` bytes of a recorded receive on `fd`, or (`n == 0`) the end
/// of the stream and nothing before it, taking them from the kernel as they arrive and waiting
/// on the fd in between. Anything else (the stream ends early, more bytes where it ended, an
/// error) is a divergence.
pub fn wait_for(ld: &mut Ld, fd: c_int, n: usize, flags: c_int) {
    loop {
        let Some(h) = entry(ld, fd) else {
            return; // not a channel end the LD can track: let the receive find out
        };
        let have = h.bytes.len();
        let found = match (n, have, h.ended) {
            (0, 0, true) => return,
            (0, 0, false) => None,
            (0, _, _) => Some(format!(
                "{have} more bytes on fd {fd} where the record saw the end of the stream"
            )),
            (_, have, _) if have >= n => return,
            (_, _, true) => Some(format!(
                "the end of the stream on fd {fd} after {have} bytes, where the record received {n}"
            )),
            _ => None,
        };
        if let Some(found) = found {
            cursor::diverge(ld, &found);
        }
        // One byte more is enough to tell the end of the stream from more bytes.
        let want = n.saturating_sub(have).max(1);
        let r = take_from_kernel(h, fd, want, flags);
        if r >= 0 {
            continue;
        }
        let err = sys::errno();
        if err == libc::EAGAIN || err == libc::EINTR {
            crate::baton::put_down_for(|| sys::poll_one(fd, libc::POLLIN | libc::POLLRDHUP, -1));
            continue;
        }
        if err == libc::ENOTSOCK {
            return; // not a socket: let the receive find out
        }
        if n == 0 && err == libc::ECONNRESET {
            // The peer is gone, as the record says, but was killed here with unread bytes
            // (replay does not order its kill after our last send, which nobody receives):
            // a reset where the record saw the end. The stream is over either way.
            if let Some(h) = entry(ld, fd) {
                h.ended = true;
            }
            continue;
        }
        cursor::diverge(
            ld,
            &format!(
                "a receive on fd {fd} that failed (errno {err}) where the record received {n} bytes"
            ),
        );
    }
}

/// Hands `n` held bytes of `fd` to the program (after [`wait_for`]); with `MSG_PEEK` they stay
/// held. Returns `n`.
pub fn hand_over(ld: &mut Ld, fd: c_int, n: usize, receiver: &mut impl Receiver) -> isize {
    let peek = receiver.flags() & libc::MSG_PEEK != 0;
    let Some(h) = find(ld, fd) else {
        return 0;
    };
    let n = n.min(h.bytes.len());
    receiver.fill(&h.bytes[..n]);
    if peek {
        // A peek gets no passed fds (the kernel would install copies).
        receiver.finish(&[], &h.from);
        return n as isize;
    }
    h.bytes.drain(..n);
    let control = std::mem::take(&mut h.control);
    let taken = receiver.finish(&control, &h.from).min(control.len());
    for passed in passed_fds(&control[taken..]) {
        fds::forget(passed);
        sys::close(passed);
    }
    if h.bytes.is_empty() {
        // Nothing left to hand over: the next receive starts from the kernel again.
        let id = h.description;
        if let Some(r) = ld.replay.as_mut() {
            r.held.retain(|h| h.description != id);
        }
    }
    n as isize
}

/// The length of the longest run of whole cmsgs at the start of `control` that fits in `room`
/// bytes.
pub fn fitting(control: &[u8], room: usize) -> usize {
    cmsgs(control)
        .map(|(start, len, _)| start + len)
        .take_while(|end| *end <= room)
        .last()
        .unwrap_or(0)
}

/// The fds passed (`SCM_RIGHTS`) in `control`.
pub fn passed_fds(control: &[u8]) -> Vec<c_int> {
    let mut out = Vec::new();
    for (start, len, header) in cmsgs(control) {
        if header.cmsg_level == libc::SOL_SOCKET && header.cmsg_type == libc::SCM_RIGHTS {
            #[allow(clippy::unnecessary_cast)] // a socklen_t in other C libraries
            let data = CMSG_HEADER..(header.cmsg_len as usize).min(len);
            for fd in control[start..][data].chunks_exact(4) {
                out.push(c_int::from_ne_bytes([fd[0], fd[1], fd[2], fd[3]]));
            }
        }
    }
    out
}

/// The size of a cmsg header, padded (where its data starts).
const CMSG_HEADER: usize = align(std::mem::size_of::<libc::cmsghdr>());

const fn align(n: usize) -> usize {
    let a = std::mem::size_of::<usize>();
    (n + a - 1) & !(a - 1)
}

/// Each cmsg of `control`: its start, its padded length and its header.
fn cmsgs(control: &[u8]) -> impl Iterator<Item = (usize, usize, libc::cmsghdr)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let header_end = at + std::mem::size_of::<libc::cmsghdr>();
        if header_end > control.len() {
            return None;
        }
        // SAFETY: a cmsghdr's bytes, within `control` (checked); read unaligned.
        let header: libc::cmsghdr =
            unsafe { std::ptr::read_unaligned(control[at..].as_ptr().cast()) };
        let len = header.cmsg_len as usize;
        if len < CMSG_HEADER || at + len > control.len() {
            return None;
        }
        let padded = align(len).min(control.len() - at);
        let item = (at, padded, header);
        at += padded;
        Some(item)
    })
}
