//! Pipes made by recorded processes are channel ends (`Record::Pipe`): their fds carry
//! [`STREAM`] | [`PAIRED`] | [`PIPE`], so that reads, writes, ready sets and closes on them are
//! recorded like a socketpair's. A fork keeps that in memory; an exec does not, so the exec'd
//! image learns which of the pipes it inherits are the session's from `DDBX_PIPES` (fd and
//! inode of each), which the LD puts in the environment of every exec. A pipe inherited from
//! outside the session (ddbx's own stdin) is not listed and passes through.

use super::{DESCRIPTIONS, FD_DESCRIPTION, MAX_DESCRIPTIONS, NONBLOCK, OURS, PAIRED, PIPE, STREAM};
use libc::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

/// For each description that is an end of a session pipe: the other end's description (its
/// slot + 1 in the high half, its generation in the low half; 0: not known).
static PEER: [AtomicU64; MAX_DESCRIPTIONS] = [const { AtomicU64::new(0) }; MAX_DESCRIPTIONS];

/// The description slot `fd` refers to, with its generation.
fn slot_of(fd: c_int) -> Option<(usize, u32)> {
    let slot = FD_DESCRIPTION
        .get(usize::try_from(fd).ok()?)?
        .load(Ordering::Relaxed)
        .checked_sub(1)? as usize;
    let generation = DESCRIPTIONS.get(slot)?.generation.load(Ordering::Relaxed);
    Some((slot, generation))
}

/// `read_fd` and `write_fd` are the two ends of one pipe.
pub fn link(read_fd: c_int, write_fd: c_int) {
    if let (Some(r), Some(w)) = (slot_of(read_fd), slot_of(write_fd)) {
        let pack = |(slot, generation): (usize, u32)| ((slot as u64 + 1) << 32) | generation as u64;
        PEER[w.0].store(pack(r), Ordering::Relaxed);
        PEER[r.0].store(pack(w), Ordering::Relaxed);
    }
}

/// The description in `slot` is new: it has no other end yet.
pub(super) fn unlink(slot: usize) {
    if let Some(p) = PEER.get(slot) {
        p.store(0, Ordering::Relaxed);
    }
}

/// Whether a write on `fd` goes into a *self-pipe*: this process also holds the pipe's read
/// end (a signal handler, or a Python one run later, writes a byte to wake its own event
/// loop). Such a write is not an event: where it lands depends on when the signal came, which
/// replay does not decide (issue #10, class 5); the reads and ready sets on the read end are
/// still recorded, and replay waits for the byte.
pub fn is_self_pipe_write(fd: c_int) -> bool {
    if !is_recorded(fd) {
        return false;
    }
    let Some((slot, _)) = slot_of(fd) else {
        return false;
    };
    let peer = PEER[slot].load(Ordering::Relaxed);
    let (Some(other), generation) = (((peer >> 32) as usize).checked_sub(1), peer as u32) else {
        return false;
    };
    DESCRIPTIONS.get(other).is_some_and(|d| {
        d.refs.load(Ordering::Relaxed) > 0 && d.generation.load(Ordering::Relaxed) == generation
    })
}

/// The bits of one end of a recorded pipe made with pipe2 `flags`.
pub fn bits(flags: c_int) -> u32 {
    let nonblock = if flags & libc::O_NONBLOCK != 0 {
        NONBLOCK
    } else {
        0
    };
    STREAM | PAIRED | PIPE | nonblock
}

/// Whether `fd` is an end of a recorded pipe.
pub fn is_recorded(fd: c_int) -> bool {
    let k = super::kind(fd);
    k & (STREAM | PIPE) == STREAM | PIPE && k & OURS == 0
}

/// The inode of the file open at `fd` and its access mode, if it is a pipe or FIFO.
fn pipe_inode(fd: c_int) -> Option<(u64, c_int)> {
    // SAFETY: all-zero is a valid stat; fstat writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is ours.
    if unsafe { libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) } != 0 {
        return None;
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return None;
    }
    let mode = crate::sys::fcntl(fd, libc::F_GETFL, 0);
    (mode >= 0).then_some((st.st_ino, mode))
}

/// `DDBX_PIPES` for an exec or a spawn now: every recorded pipe end of this process, as
/// `fd:inode` separated by commas.
pub fn for_exec() -> Vec<u8> {
    let mut out = String::new();
    for (fd, slot) in FD_DESCRIPTION.iter().enumerate() {
        let Some(d) = slot
            .load(Ordering::Relaxed)
            .checked_sub(1)
            .and_then(|s| DESCRIPTIONS.get(s as usize))
        else {
            continue;
        };
        let b = d.bits.load(Ordering::Relaxed);
        if b & (STREAM | PIPE) != STREAM | PIPE || b & OURS != 0 {
            continue;
        }
        // `FD_CLOEXEC` ones too: a posix_spawn's file actions may dup2 them onto the child's
        // standard fds (the new image matches them by inode).
        let fd = fd as c_int;
        if let Some((ino, _)) = pipe_inode(fd) {
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(&format!("{fd}:{ino}"));
        }
    }
    out.into_bytes()
}

/// At the start of an exec'd image: the pipe ends `DDBX_PIPES` lists (`value`) that are still
/// the same pipes, and fds 0 to 2 when they are one of those pipes, become recorded channel
/// ends; fds on the same end of the same pipe share one description, as they did before the
/// exec.
pub fn adopt(value: &[u8]) {
    let text = String::from_utf8_lossy(value);
    let listed: Vec<(c_int, u64)> = text
        .split(',')
        .filter_map(|item| {
            let (fd, ino) = item.split_once(':')?;
            Some((fd.parse().ok()?, ino.parse().ok()?))
        })
        .collect();
    // A spawned child's file actions (posix_spawn's dup2, made inside libc) may have put one of
    // those pipes on its standard fds under another number.
    let standard = (0..3).filter(|fd| !listed.iter().any(|(f, _)| f == fd));
    let mut candidates = listed.clone();
    for fd in standard {
        if let Some((ino, _)) = pipe_inode(fd)
            && listed.iter().any(|(_, i)| *i == ino)
        {
            candidates.push((fd, ino));
        }
    }
    // (inode, access mode, the first fd adopted on that end).
    let mut ends: Vec<(u64, c_int, c_int)> = Vec::new();
    for (fd, ino) in candidates {
        let Some((found, mode)) = pipe_inode(fd) else {
            continue;
        };
        if found != ino || super::is_ours(fd) {
            continue;
        }
        let access = mode & libc::O_ACCMODE;
        match ends.iter().find(|e| e.0 == ino && e.1 == access) {
            Some(&(_, _, first)) => super::dup(first, fd),
            None => {
                super::set(fd, bits(mode));
                ends.push((ino, access, fd));
            }
        }
    }
    for &(ino, access, read_fd) in ends.iter().filter(|e| e.1 == libc::O_RDONLY) {
        if let Some(&(_, _, write_fd)) = ends.iter().find(|e| e.0 == ino && e.1 != access) {
            link(read_fd, write_fd);
        }
    }
}
