//! Raw system calls for the LD's own I/O.
//!
//! Everything the LD does for itself (talking to the GD, writing its history, waiting for
//! data in replay) goes through these, never through the libc entry points that the preload
//! exports: those are our own hooks. They are async-signal-safe and allocation-free.

mod kernel;

use libc::{c_int, c_long, c_void};

/// The calling thread's errno.
pub fn errno() -> c_int {
    // SAFETY: __errno_location always returns a valid pointer to this thread's errno.
    unsafe { *libc::__errno_location() }
}

/// Sets the calling thread's errno.
pub fn set_errno(value: c_int) {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = value }
}

fn ret(r: c_long) -> isize {
    r as isize
}

/// read(2).
pub fn read(fd: c_int, buf: &mut [u8]) -> isize {
    // SAFETY: buf is valid for buf.len() bytes.
    ret(unsafe { libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len()) })
}

/// write(2) of the whole buffer, retrying on EINTR and short writes. Returns false on error.
pub fn write_all(fd: c_int, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = ret(unsafe { libc::syscall(libc::SYS_write, fd, buf.as_ptr(), buf.len()) });
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        buf = &buf[n as usize..];
    }
    true
}

/// Makes `call` again while it fails with EINTR (a signal handler ran); returns its result.
pub fn restart_on_eintr<R: PartialOrd + Default>(mut call: impl FnMut() -> R) -> R {
    loop {
        let r = call();
        if r < R::default() && errno() == libc::EINTR {
            continue;
        }
        return r;
    }
}

/// close(2).
pub fn close(fd: c_int) {
    // SAFETY: closing an fd has no memory-safety preconditions.
    unsafe { libc::syscall(libc::SYS_close, fd) };
}

/// fcntl(2) with an integer argument.
pub fn fcntl(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    // SAFETY: integer-argument fcntl commands only.
    unsafe { libc::syscall(libc::SYS_fcntl, fd, cmd, arg) as c_int }
}

/// Moves `fd` to the lowest free number at or above `min` (close-on-exec), closing the original.
/// When `min` is at or above the process's fd limit (a soft `RLIMIT_NOFILE` of 1024, as PAM
/// sets it for `runuser` and `su`), to the lowest free number at or above the limit less 256:
/// still out of the program's way, which takes the lowest free numbers.
pub fn move_high(fd: c_int, min: c_int) -> c_int {
    let mut high = fcntl(fd, libc::F_DUPFD_CLOEXEC, min as c_long);
    if high < 0 && errno() == libc::EINVAL {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given, which lives on our stack.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            let lower = (limit.rlim_cur as i64 - 256).clamp(3, i64::from(min)) as c_int;
            high = fcntl(fd, libc::F_DUPFD_CLOEXEC, lower as c_long);
        }
    }
    if high >= 0 {
        close(fd);
        high
    } else {
        fd
    }
}

/// openat(2) relative to the cwd.
pub fn open(path: &[u8], flags: c_int, mode: libc::mode_t) -> c_int {
    let mut buf = [0u8; 512];
    let Some(cpath) = cstr(path, &mut buf) else {
        set_errno(libc::ENAMETOOLONG);
        return -1;
    };
    // SAFETY: cpath is NUL-terminated.
    unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, cpath, flags, mode) as c_int }
}

/// The size of the file open at `fd` (0 when fstat fails).
pub fn file_size(fd: c_int) -> i64 {
    // SAFETY: fstat writes one struct stat into our zeroed local.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat);
        st.st_size
    }
}

/// Copies `s` into `buf` with a NUL terminator.
pub fn cstr(s: &[u8], buf: &mut [u8; 512]) -> Option<*const libc::c_char> {
    if s.len() >= buf.len() || s.contains(&0) {
        return None;
    }
    buf[..s.len()].copy_from_slice(s);
    buf[s.len()] = 0;
    Some(buf.as_ptr().cast())
}

/// A connected Unix stream socket to `path`, close-on-exec, or -1.
pub fn connect_unix(path: &[u8]) -> c_int {
    // SAFETY: plain syscalls on a sockaddr_un we fill ourselves.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_socket,
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
        ) as c_int;
        if fd < 0 {
            return -1;
        }
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        if path.len() >= addr.sun_path.len() {
            close(fd);
            return -1;
        }
        for (dst, src) in addr.sun_path.iter_mut().zip(path) {
            *dst = *src as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sa_family_t>() + path.len() + 1;
        loop {
            let r = libc::syscall(
                libc::SYS_connect,
                fd,
                &addr as *const libc::sockaddr_un,
                len as libc::socklen_t,
            );
            if r == 0 {
                return fd;
            }
            if errno() != libc::EINTR {
                close(fd);
                return -1;
            }
        }
    }
}

/// SIGPIPE's bit in a kernel signal set.
const SIGPIPE_BIT: u64 = 1 << (libc::SIGPIPE - 1);

/// Runs `f` with SIGPIPE blocked in this thread (unless the program blocks it already), and
/// takes back a SIGPIPE that `f` raised: a replayed send whose peer has ended already must
/// not kill the sender, whose recorded send succeeded. Errno is `f`'s.
pub fn without_sigpipe<T>(f: impl FnOnce() -> T) -> T {
    let block = SIGPIPE_BIT;
    let mut old: u64 = 0;
    // SAFETY: rt_sigprocmask with 8-byte sets (the kernel's size), ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_BLOCK,
            &block as *const u64,
            &mut old as *mut u64,
            8usize,
        )
    };
    let out = f();
    if r != 0 || old & SIGPIPE_BIT != 0 {
        return out;
    }
    let err = errno();
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the set and timeout are ours; a null siginfo is allowed. Takes a SIGPIPE that
    // is pending for this thread, if any, without waiting.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigtimedwait,
            &block as *const u64,
            std::ptr::null_mut::<libc::siginfo_t>(),
            &zero as *const libc::timespec,
            8usize,
        );
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &old as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        );
    }
    set_errno(err);
    out
}

/// poll(2) on one fd; returns revents, 0 on timeout, -1 on error.
pub fn poll_one(fd: c_int, events: i16, timeout_ms: c_int) -> c_int {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: (timeout_ms / 1000) as libc::time_t,
        tv_nsec: ((timeout_ms % 1000) as libc::c_long) * 1_000_000,
    };
    let tsp: *const libc::timespec = if timeout_ms < 0 {
        std::ptr::null()
    } else {
        &ts
    };
    // SAFETY: one valid pollfd; a valid or null timespec.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ppoll,
            &mut p as *mut libc::pollfd,
            1,
            tsp,
            std::ptr::null::<c_void>(),
            0,
        )
    };
    if r < 0 {
        -1
    } else if r == 0 {
        0
    } else {
        p.revents as c_int
    }
}

/// A TCP socket bound to a free loopback port (`127.0.0.1`, or `[::1]` if `v6`) that does not
/// listen, close-on-exec; or -1. A connect to its port is refused by the kernel.
pub fn bound_loopback(v6: bool) -> c_int {
    let family = if v6 { libc::AF_INET6 } else { libc::AF_INET };
    // SAFETY: plain syscalls on addresses we fill ourselves.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_socket,
            family,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
        ) as c_int;
        if fd < 0 {
            return -1;
        }
        let r = if v6 {
            let mut a: libc::sockaddr_in6 = std::mem::zeroed();
            a.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            a.sin6_addr.s6_addr = std::net::Ipv6Addr::LOCALHOST.octets();
            libc::syscall(
                libc::SYS_bind,
                fd,
                &a as *const libc::sockaddr_in6,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        } else {
            let mut a: libc::sockaddr_in = std::mem::zeroed();
            a.sin_family = libc::AF_INET as libc::sa_family_t;
            a.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            libc::syscall(
                libc::SYS_bind,
                fd,
                &a as *const libc::sockaddr_in,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if r != 0 {
            close(fd);
            return -1;
        }
        fd
    }
}

/// The most descriptors one [`recv_with_fds`] takes.
pub const MAX_FDS_IN: usize = 4;

/// recvmsg(2) on a Unix stream socket into `buf`, taking the descriptors that come with the
/// bytes (`SCM_RIGHTS`, close-on-exec) into `fds`. Returns the byte count (or -1) and how many
/// descriptors came.
pub fn recv_with_fds(sock: c_int, buf: &mut [u8], fds: &mut [c_int; MAX_FDS_IN]) -> (isize, usize) {
    // Room for one SCM_RIGHTS message of MAX_FDS_IN ints (CMSG_SPACE, with u64 alignment).
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: a zeroed msghdr is valid; we point it at our iovec and control buffer.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg points to valid buffers of the sizes it says.
    let n = ret(unsafe {
        libc::syscall(
            libc::SYS_recvmsg,
            sock,
            &mut msg as *mut libc::msghdr,
            libc::MSG_CMSG_CLOEXEC,
        )
    });
    let mut count = 0;
    if n < 0 {
        return (n, 0);
    }
    // SAFETY: the kernel filled msg_controllen bytes of `control` with cmsghdrs; the CMSG_
    // macros walk them within that length.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c) as *const c_int;
                let bytes = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..bytes / std::mem::size_of::<c_int>() {
                    let fd = std::ptr::read_unaligned(data.add(i));
                    if count < MAX_FDS_IN {
                        fds[count] = fd;
                        count += 1;
                    } else {
                        close(fd);
                    }
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    (n, count)
}

/// Writes all of `buf` to a Unix stream socket with descriptor `fd` attached to its first byte
/// (`SCM_RIGHTS`). Returns false on error.
pub fn send_with_fd(sock: c_int, buf: &[u8], fd: c_int) -> bool {
    let mut control = [0u64; 4];
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut c_void,
        iov_len: buf.len(),
    };
    // SAFETY: a zeroed msghdr is valid; we point it at our iovec and control buffer, and fill
    // one cmsghdr inside the control buffer (CMSG_SPACE(sizeof int) <= its size).
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<c_int>() as u32) as usize;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<c_int>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut c_int, fd);
        loop {
            let r = ret(libc::syscall(
                libc::SYS_sendmsg,
                sock,
                &msg as *const libc::msghdr,
                libc::MSG_NOSIGNAL,
            ));
            if r < 0 && errno() == libc::EINTR {
                continue;
            }
            break r;
        }
    };
    sent >= 0 && write_all(sock, &buf[sent as usize..])
}

/// poll(2) on several fds (`timeout_ms` < 0: no timeout); what it returns, -1 with errno.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: c_int) -> c_int {
    let ts = libc::timespec {
        tv_sec: (timeout_ms / 1000) as libc::time_t,
        tv_nsec: ((timeout_ms % 1000) as libc::c_long) * 1_000_000,
    };
    let tsp: *const libc::timespec = if timeout_ms < 0 {
        std::ptr::null()
    } else {
        &ts
    };
    // SAFETY: `fds` is a valid pollfd array of its length; a valid or null timespec.
    unsafe {
        libc::syscall(
            libc::SYS_ppoll,
            fds.as_mut_ptr(),
            fds.len(),
            tsp,
            std::ptr::null::<c_void>(),
            0,
        ) as c_int
    }
}

/// Bytes waiting in a socket's receive queue (FIONREAD), or -1.
pub fn bytes_available(fd: c_int) -> isize {
    let mut n: c_int = 0;
    // SAFETY: FIONREAD writes one int.
    let r = unsafe { libc::syscall(libc::SYS_ioctl, fd, libc::FIONREAD, &mut n as *mut c_int) };
    if r < 0 { -1 } else { n as isize }
}

/// Sleeps `micros` microseconds (restarting after signals).
pub fn sleep_us(micros: u64) {
    let mut ts = libc::timespec {
        tv_sec: (micros / 1_000_000) as libc::time_t,
        tv_nsec: ((micros % 1_000_000) * 1000) as libc::c_long,
    };
    loop {
        let mut rem = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid timespecs.
        let r = unsafe { libc::syscall(libc::SYS_nanosleep, &ts as *const _, &mut rem as *mut _) };
        if r == 0 || errno() != libc::EINTR {
            return;
        }
        ts = rem;
    }
}

pub use kernel::{getpid, getppid, gettid, kill, kill_self, tgkill};

/// _exit(2) of the whole process.
pub fn exit_group(status: c_int) -> ! {
    // SAFETY: never returns.
    unsafe {
        libc::syscall(libc::SYS_exit_group, status);
    }
    #[allow(clippy::empty_loop)]
    loop {}
}

/// Writes a diagnostic line to the LD log fd (if the user asked for one), never to the
/// program's stdout/stderr.
pub fn diag(fd: c_int, msg: &str) {
    if fd >= 0 {
        write_all(fd, msg.as_bytes());
        write_all(fd, b"\n");
    }
}

/// Whether the program has a handler (a function, not SIG_DFL or SIG_IGN) for any standard
/// signal.
pub fn has_signal_handlers() -> bool {
    (1..32).any(|sig| {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            return false;
        }
        // SAFETY: a query into a zeroed local; no handler is changed.
        let handler = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                return false;
            }
            old.sa_sigaction
        };
        handler != libc::SIG_DFL && handler != libc::SIG_IGN
    })
}

/// CLOCK_MONOTONIC now, in ns, by the system call (not the program's `clock_gettime`, which
/// the LD records): what orders the connects and accepts of one address pair when ports are
/// reused (the `at` of `Connect` and `Accept`). 0 if the clock cannot be read.
pub fn monotonic_ns() -> u64 {
    kernel::monotonic_ns()
}

/// Whether child `pid` has ended (a zombie not reaped yet, or already reaped: no such child).
pub fn child_ended(pid: c_int) -> bool {
    // SAFETY: a siginfo of our own; waitid with WNOWAIT reaps nothing.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the raw call bypasses the program's (hooked) waitid.
    let r = unsafe {
        libc::syscall(
            libc::SYS_waitid,
            libc::P_PID,
            pid,
            &mut info as *mut libc::siginfo_t,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    // SAFETY: filled by the kernel (or still zeroed).
    r < 0 || unsafe { info.si_pid() } == pid
}

/// Whether `sig` is pending for this thread (sent to it or to the process, and blocked).
pub fn is_pending(sig: c_int) -> bool {
    let mut set: u64 = 0;
    // SAFETY: rt_sigpending into an 8-byte set, the kernel's sigset size.
    let r = unsafe { libc::syscall(libc::SYS_rt_sigpending, &mut set as *mut u64, 8usize) };
    r == 0 && set & (1u64 << (sig - 1)) != 0
}

/// Adds `set` (signals 1 to 64, bit `sig - 1`) to this thread's signal mask; the mask before.
pub fn block_signals(set: u64) -> u64 {
    let mut old: u64 = 0;
    // SAFETY: rt_sigprocmask with 8-byte sets, which is the kernel's sigset size.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_BLOCK,
            &set as *const u64,
            &mut old as *mut u64,
            8usize,
        )
    };
    old
}

/// Sets this thread's signal mask to `set` (as [`block_signals`] returned it).
pub fn set_signal_mask(set: u64) {
    // SAFETY: as in block_signals.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &set as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        )
    };
}
