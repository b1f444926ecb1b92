//! What ends the program when ddbx itself dies without a word (SIGKILL, a crash, the OOM
//! killer): no code of ddbx runs then, so it is all arranged beforehand, in the kernel.
//!
//! * **The lifeline FIFO** (`ddbx_wire::LIFELINE`, in the runtime directory). ddbx holds it open
//!   read-write for the whole session and is its only writer; it never writes to it. Every LD
//!   opens its own read end with `O_ASYNC` and SIGKILL as its signal
//!   (`preload/src/ld/gd.rs`): when ddbx's process is gone, the FIFO loses its last writer and
//!   the kernel kills every debuggee at once. The root also gets `PR_SET_PDEATHSIG` (in
//!   `supervisor/src/session/launch.rs`) for the moments before its LD is up.
//! * **The sentinel**: a small process outside the session's tree (made by a double fork while
//!   ddbx is not a subreaper, so `waitpid(-1)` never waits for it) that waits on a socket from
//!   ddbx. At the normal end ddbx says so and waits for it to exit (a pidfd); if the socket
//!   closes without that word, ddbx died, and the sentinel writes one line on stderr saying so.
//!   It blocks every signal but SIGKILL/SIGSTOP (a Ctrl-C for the terminal's group is ddbx's
//!   to handle) and keeps no descriptor but stderr and its socket.

use super::RuntimeDir;
use crate::error::{Error, Result};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// How long the normal end waits for the sentinel to exit.
const SENTINEL_EXIT: Duration = Duration::from_secs(10);

/// The session's lifeline; dropping it (at the end of the session, when no debuggee is left)
/// lets the sentinel go quietly.
pub(super) struct Lifeline {
    /// ddbx's read-write end of the FIFO: the only writer.
    _fifo: File,
    /// `None`: it could not be started (the death still kills the program, without a word).
    sentinel: Option<Sentinel>,
}

struct Sentinel {
    /// ddbx's end of the socket the sentinel waits on.
    tell: UnixStream,
    /// The sentinel's pidfd (`None`: the kernel has none to give).
    pidfd: Option<OwnedFd>,
}

impl Lifeline {
    /// Makes the FIFO in `runtime` and starts the sentinel, which writes `message` (one line)
    /// if ddbx dies before the lifeline is dropped.
    pub(super) fn start(runtime: &RuntimeDir, message: &str) -> Result<Lifeline> {
        let path = runtime.path().join(ddbx_wire::LIFELINE);
        // 0644: reading it is all an LD does, and a reader can neither keep ddbx's end alive
        // nor learn anything (nothing is ever written).
        make_fifo(&path).map_err(|e| Error::io_at("cannot make the lifeline FIFO", &path, e))?;
        // Read-write: the open does not wait for a reader, and ddbx is a writer from now on.
        let fifo = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io_at("cannot open the lifeline FIFO", &path, e))?;
        let mut line = message.as_bytes().to_vec();
        line.push(b'\n');
        Ok(Lifeline {
            _fifo: fifo,
            sentinel: start_sentinel(&line).ok(),
        })
    }
}

impl Drop for Lifeline {
    fn drop(&mut self) {
        let Some(mut sentinel) = self.sentinel.take() else {
            return;
        };
        let _ = sentinel.tell.write_all(b"e");
        drop(sentinel.tell);
        if let Some(pidfd) = &sentinel.pidfd {
            // Readable once the sentinel has exited: nothing of the session's process group
            // is then left running when ddbx returns.
            use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
            let timeout = PollTimeout::try_from(SENTINEL_EXIT).unwrap_or(PollTimeout::MAX);
            let _ = poll(
                &mut [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)],
                timeout,
            );
        }
    }
}

/// mkfifo(3) with mode 0644.
fn make_fifo(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let cpath = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: cpath is a NUL-terminated string that outlives the call.
    if unsafe { libc::mkfifo(cpath.as_ptr(), 0o644) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Starts the sentinel (see the module doc) and returns ddbx's side of it.
fn start_sentinel(line: &[u8]) -> std::io::Result<Sentinel> {
    let (tell, listen) = UnixStream::pair()?;
    let (mut pid_in, pid_out) = UnixStream::pair()?;
    // An orphan goes to the nearest subreaper: ddbx must not be one while the sentinel is
    // orphaned (an earlier session in this process made it one).
    let was_subreaper = nix::sys::prctl::get_child_subreaper().unwrap_or(false);
    if was_subreaper {
        nix::sys::prctl::set_child_subreaper(false)?;
    }
    let forked = double_fork(listen.as_raw_fd(), pid_out.as_raw_fd(), line);
    if was_subreaper {
        nix::sys::prctl::set_child_subreaper(true)?;
    }
    forked?;
    drop(pid_out);
    drop(listen);
    let mut pid = [0u8; 4];
    pid_in.read_exact(&mut pid)?;
    let pid = i32::from_ne_bytes(pid);
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let pidfd = (pidfd >= 0).then(|| {
        // SAFETY: pidfd_open returned a new descriptor that nothing else owns.
        unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) }
    });
    Ok(Sentinel { tell, pidfd })
}

/// Forks a child that forks the sentinel, writes its pid to `pid_out` and exits; reaps that
/// child, so that the sentinel is an orphan of the nearest subreaper above ddbx.
fn double_fork(listen: RawFd, pid_out: RawFd, line: &[u8]) -> std::io::Result<()> {
    // SAFETY: ddbx may have threads, so the children make only async-signal-safe calls: fork,
    // write, _exit, and (in the sentinel) raw system calls on memory copied by the fork.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if child == 0 {
        // SAFETY: as above; `line` is this process's copy of ddbx's memory.
        unsafe {
            let sentinel = libc::fork();
            if sentinel == 0 {
                sentinel_main(listen, line);
            }
            let pid = sentinel.to_ne_bytes();
            libc::write(pid_out, pid.as_ptr().cast(), pid.len());
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: waitpid writes one int through a valid pointer.
    let reaped = unsafe { libc::waitpid(child, &mut status, 0) };
    if reaped < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The sentinel: waits for ddbx's word on `listen`; writes `line` on stderr if the socket
/// closes without it. Raw system calls only (it runs in the child of a fork of a process that
/// may have threads).
fn sentinel_main(listen: RawFd, line: &[u8]) -> ! {
    const WAIT_ON: RawFd = 3;
    // SAFETY: raw system calls on integers and on buffers that live on this stack or in this
    // process's copy of ddbx's memory; none allocates or locks.
    unsafe {
        let all: u64 = !0;
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &all as *const u64,
            std::ptr::null_mut::<u64>(),
            std::mem::size_of::<u64>(),
        );
        if listen != WAIT_ON {
            libc::syscall(libc::SYS_dup3, listen, WAIT_ON, 0);
        }
        // Only stderr and the socket stay: holding ddbx's stdin or stdout (or anything else
        // of its) open would keep a reader of them waiting.
        libc::syscall(libc::SYS_close_range, 0, 1, 0);
        libc::syscall(libc::SYS_close_range, WAIT_ON + 1, u32::MAX, 0);
        let mut byte = 0u8;
        loop {
            let n = libc::syscall(libc::SYS_read, WAIT_ON, &mut byte as *mut u8, 1);
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n == 0 {
                libc::syscall(libc::SYS_write, 2, line.as_ptr(), line.len());
            }
            libc::_exit(0);
        }
    }
}
