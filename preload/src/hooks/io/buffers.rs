//! The program's buffers as the receive and send hooks see them: an iovec array, one buffer,
//! and for replay ([`ProgramReceive`]) where each part of a receive's outcome goes (the bytes,
//! the sender's address, the ancillary data).

use crate::replay;
use libc::{c_int, c_void, iovec, msghdr, sockaddr, socklen_t};

/// `n` bytes at `buf` (offset `off`), copied.
///
/// # Safety
/// `buf` must be null or valid for reading `off + n` initialised bytes.
pub unsafe fn bytes_at(buf: *const c_void, off: usize, n: usize) -> Vec<u8> {
    if buf.is_null() {
        return Vec::new();
    }
    // SAFETY: not null, and `off + n` readable bytes, as the caller promises.
    unsafe { std::slice::from_raw_parts((buf as *const u8).add(off), n) }.to_vec()
}

/// The program's iovec array (readv/writev, a msghdr's buffers), valid for the whole call.
#[derive(Clone, Copy)]
pub struct IoVecs {
    base: *const iovec,
    count: c_int,
}

impl IoVecs {
    /// # Safety
    /// `base` must point to `count` iovecs over buffers that stay valid while this is used.
    pub unsafe fn new(base: *const iovec, count: c_int) -> IoVecs {
        IoVecs { base, count }
    }

    /// The buffers of a msghdr.
    ///
    /// # Safety
    /// `msg` must point to a msghdr whose `msg_iov` holds `msg_iovlen` iovecs over buffers that
    /// stay valid while this is used.
    pub unsafe fn of_msg(msg: *const msghdr) -> IoVecs {
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
    pub fn total(self) -> usize {
        self.each().map(|v| v.iov_len).sum()
    }

    /// The bytes `offset..offset + n` of the buffers, as another iovec array.
    pub fn part(self, offset: usize, n: usize) -> Vec<iovec> {
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
    pub unsafe fn bytes(self, offset: usize, n: usize) -> Vec<u8> {
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

/// Where a receive's bytes go: one buffer, or the program's iovecs.
pub enum Buffers {
    /// A buffer (or null) and its length.
    One(*mut u8, usize),
    /// readv's or a msghdr's buffers.
    Many(IoVecs),
}

/// The program's side of one receive, for replay (`replay/held.rs`): its buffers, its flags,
/// and where the sender's address and the ancillary data go.
pub struct ProgramReceive {
    /// Where the bytes go (valid for writing while this is used).
    pub buffers: Buffers,
    /// The receive's flags.
    pub flags: c_int,
    /// recvmsg's msghdr (null for the other calls).
    pub msg: *mut msghdr,
    /// recvfrom's address buffer and its length (nulls for the other calls).
    pub from: (*mut sockaddr, *mut socklen_t),
}

/// No address, as for every receive but recvfrom.
pub const NO_ADDRESS: (*mut sockaddr, *mut socklen_t) =
    (std::ptr::null_mut(), std::ptr::null_mut());

impl ProgramReceive {
    /// The buffers' total length.
    pub fn len(&self) -> usize {
        match self.buffers {
            Buffers::One(_, len) => len,
            Buffers::Many(iovs) => iovs.total(),
        }
    }
}

/// Writes the address `from` into a program's address buffer `name` of `*len` bytes (nothing
/// when it is null) and sets `*len` to its length, as the kernel does.
///
/// # Safety
/// `name` null or valid for `*len` bytes; `len` valid when `name` is not null.
pub unsafe fn give_address(name: *mut c_void, len: *mut socklen_t, from: &[u8]) {
    if name.is_null() || len.is_null() {
        return;
    }
    // SAFETY: as the caller promises.
    unsafe {
        let room = *len as usize;
        std::ptr::copy_nonoverlapping(from.as_ptr(), name.cast(), from.len().min(room));
        *len = from.len() as socklen_t;
    }
}

impl replay::held::Receiver for ProgramReceive {
    fn flags(&self) -> c_int {
        self.flags
    }

    fn fill(&mut self, bytes: &[u8]) {
        match self.buffers {
            Buffers::One(buf, _) if buf.is_null() => {}
            Buffers::One(buf, len) => {
                // SAFETY: `buf` holds `len` writable bytes (see `buffers`).
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, bytes.len().min(len)) }
            }
            Buffers::Many(iovs) => {
                let mut done = 0;
                for part in iovs.part(0, bytes.len()) {
                    // SAFETY: each part lies within the program's buffers; the parts add up
                    // to at most `bytes.len()`.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            bytes[done..].as_ptr(),
                            part.iov_base.cast(),
                            part.iov_len,
                        )
                    };
                    done += part.iov_len;
                }
            }
        }
    }

    fn finish(&mut self, control: &[u8], from: &[u8]) -> usize {
        if self.msg.is_null() {
            // SAFETY: recvfrom's address buffer and length, or nulls.
            unsafe { give_address(self.from.0.cast(), self.from.1, from) };
            return 0;
        }
        // SAFETY: the program's msghdr (recvmsg's contract), readable and writable.
        let msg = unsafe { &mut *self.msg };
        // SAFETY: its name buffer of `msg_namelen` bytes, or null.
        unsafe { give_address(msg.msg_name, &mut msg.msg_namelen, from) };
        #[allow(clippy::unnecessary_cast)] // a socklen_t in other C libraries
        let room = if msg.msg_control.is_null() {
            0
        } else {
            msg.msg_controllen as usize
        };
        let taken = replay::held::fitting(control, room);
        // SAFETY: `taken <= room` bytes of the program's control buffer.
        unsafe { std::ptr::copy_nonoverlapping(control.as_ptr(), msg.msg_control.cast(), taken) };
        msg.msg_controllen = taken as _;
        msg.msg_flags = if taken < control.len() {
            libc::MSG_CTRUNC
        } else {
            0
        };
        taken
    }

    fn add_flags(&mut self, flags: c_int) {
        if !self.msg.is_null() {
            // SAFETY: the program's msghdr (recvmsg's contract), readable and writable.
            unsafe { (*self.msg).msg_flags |= flags };
        }
    }
}

/// The fds passed (`SCM_RIGHTS`) in the ancillary data of `msg` (null: none).
///
/// # Safety
/// `msg` must be null or a readable msghdr whose `msg_control` holds `msg_controllen`
/// readable bytes (or is null).
pub unsafe fn passed_in(msg: *const msghdr) -> Vec<c_int> {
    if msg.is_null() {
        return Vec::new();
    }
    #[allow(clippy::unnecessary_cast)] // a socklen_t in other C libraries
    // SAFETY: not null, readable (the contract).
    let (control, len) = unsafe { ((*msg).msg_control, (*msg).msg_controllen as usize) };
    if control.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: `control` holds `len` readable bytes (the contract).
    let bytes = unsafe { std::slice::from_raw_parts(control.cast::<u8>(), len) };
    crate::replay::held::passed_fds(bytes)
}
