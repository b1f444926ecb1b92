//! The real libc functions behind our hooks, found with `dlsym(RTLD_NEXT, …)`.
//!
//! Each is resolved once, eagerly in our constructor (and lazily if a hook runs before it, as
//! hooks do when another library's constructor makes a socket), and cached in an atomic. A
//! symbol that cannot be found aborts with a message: a hook that silently did nothing would be
//! a wrong recording.

#![allow(non_snake_case)]

use libc::{
    c_char, c_int, c_uint, c_void, epoll_event, fd_set, iovec, mmsghdr, msghdr, nfds_t, off_t,
    pid_t, pollfd, sigset_t, size_t, sockaddr, socklen_t, ssize_t, timespec, timeval,
};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The address of the libc function `name` (NUL-terminated) behind ours; aborts, saying so,
/// when there is none.
pub(crate) fn lookup(name: &'static [u8]) -> usize {
    // SAFETY: name is NUL-terminated; dlsym has no other preconditions.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) };
    if p.is_null() {
        let msg = b"ddbx: cannot find the real libc function behind a hook; aborting\n";
        crate::sys::write_all(2, msg);
        crate::sys::write_all(2, &name[..name.len() - 1]);
        crate::sys::write_all(2, b"\n");
        // SAFETY: abort has no preconditions.
        unsafe { libc::abort() }
    }
    p as usize
}

macro_rules! reals {
    ($( fn $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty ; )*) => {
        /// Cached addresses, one per real function (0: not resolved yet).
        #[allow(non_upper_case_globals)]
        pub mod slot {
            use super::AtomicUsize;
            $( pub static $name: AtomicUsize = AtomicUsize::new(0); )*
        }
        $(
            /// The real libc function of this name.
            ///
            /// # Safety
            /// As for the libc function: the arguments must be valid for it.
            #[inline]
            pub unsafe fn $name($($arg: $ty),*) -> $ret {
                let mut p = slot::$name.load(Ordering::Relaxed);
                if p == 0 {
                    p = lookup(concat!(stringify!($name), "\0").as_bytes());
                    slot::$name.store(p, Ordering::Relaxed);
                }
                // SAFETY: p is the address of the libc function with this signature.
                unsafe {
                    let f: unsafe extern "C" fn($($ty),*) -> $ret = std::mem::transmute(p);
                    f($($arg),*)
                }
            }
        )*
        /// Resolves every real function now (from the constructor), so that no hook resolves
        /// one later inside a signal handler or across a fork.
        pub fn resolve_all() {
            $(
                if slot::$name.load(Ordering::Relaxed) == 0 {
                    slot::$name.store(
                        lookup(concat!(stringify!($name), "\0").as_bytes()),
                        Ordering::Relaxed,
                    );
                }
            )*
            if FCNTL.load(Ordering::Relaxed) == 0 {
                FCNTL.store(lookup(b"fcntl\0"), Ordering::Relaxed);
            }
            if IOCTL.load(Ordering::Relaxed) == 0 {
                IOCTL.store(lookup(b"ioctl\0"), Ordering::Relaxed);
            }
        }
    };
}

reals! {
    fn fork() -> pid_t;
    fn _Fork() -> pid_t;
    fn posix_spawn(pid: *mut pid_t, path: *const c_char, fa: *const c_void, attr: *const c_void, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int;
    fn posix_spawnp(pid: *mut pid_t, file: *const c_char, fa: *const c_void, attr: *const c_void, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int;
    fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int;
    fn execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int;
    fn fexecve(fd: c_int, argv: *const *const c_char, envp: *const *const c_char) -> c_int;
    fn execveat(dirfd: c_int, path: *const c_char, argv: *const *const c_char, envp: *const *const c_char, flags: c_int) -> c_int;
    fn _exit(status: c_int) -> ();
    fn waitpid(pid: pid_t, status: *mut c_int, options: c_int) -> pid_t;
    fn wait4(pid: pid_t, status: *mut c_int, options: c_int, usage: *mut libc::rusage) -> pid_t;
    fn waitid(idtype: libc::idtype_t, id: libc::id_t, info: *mut libc::siginfo_t, options: c_int) -> c_int;
    fn _Exit(status: c_int) -> ();
    fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int;
    fn socketpair(domain: c_int, ty: c_int, protocol: c_int, sv: *mut c_int) -> c_int;
    fn pipe(fds: *mut c_int) -> c_int;
    fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    fn listen(fd: c_int, backlog: c_int) -> c_int;
    fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    fn accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int;
    fn close(fd: c_int) -> c_int;
    fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int;
    fn shutdown(fd: c_int, how: c_int) -> c_int;
    fn dup(fd: c_int) -> c_int;
    fn dup2(old: c_int, new: c_int) -> c_int;
    fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int;
    fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t;
    fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t;
    fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t;
    fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t;
    fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t;
    fn recvfrom(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t;
    fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t;
    fn recvmmsg(fd: c_int, msgs: *mut mmsghdr, vlen: c_uint, flags: c_int, timeout: *mut timespec) -> c_int;
    fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t;
    fn sendto(fd: c_int, buf: *const c_void, n: size_t, flags: c_int, addr: *const sockaddr, len: socklen_t) -> ssize_t;
    fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t;
    fn sendmmsg(fd: c_int, msgs: *mut mmsghdr, vlen: c_uint, flags: c_int) -> c_int;
    fn sendfile(out: c_int, input: c_int, off: *mut off_t, n: size_t) -> ssize_t;
    fn sendfile64(out: c_int, input: c_int, off: *mut off_t, n: size_t) -> ssize_t;
    fn __read_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t) -> ssize_t;
    fn __recv_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t, flags: c_int) -> ssize_t;
    fn __recvfrom_chk(fd: c_int, buf: *mut c_void, n: size_t, buflen: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t;
    fn select(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, t: *mut timeval) -> c_int;
    fn pselect(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, t: *const timespec, mask: *const sigset_t) -> c_int;
    fn poll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int;
    fn ppoll(fds: *mut pollfd, n: nfds_t, t: *const timespec, mask: *const sigset_t) -> c_int;
    fn __poll_chk(fds: *mut pollfd, n: nfds_t, timeout: c_int, fdslen: size_t) -> c_int;
    fn __ppoll_chk(fds: *mut pollfd, n: nfds_t, t: *const timespec, mask: *const sigset_t, fdslen: size_t) -> c_int;
    fn epoll_create(size: c_int) -> c_int;
    fn epoll_create1(flags: c_int) -> c_int;
    fn eventfd(initval: c_uint, flags: c_int) -> c_int;
    fn timerfd_create(clock: c_int, flags: c_int) -> c_int;
    fn signalfd(fd: c_int, mask: *const sigset_t, flags: c_int) -> c_int;
    fn inotify_init() -> c_int;
    fn inotify_init1(flags: c_int) -> c_int;
    fn memfd_create(name: *const c_char, flags: c_uint) -> c_int;
    fn epoll_ctl(ep: c_int, op: c_int, fd: c_int, ev: *mut epoll_event) -> c_int;
    fn epoll_wait(ep: c_int, evs: *mut epoll_event, max: c_int, timeout: c_int) -> c_int;
    fn epoll_pwait(ep: c_int, evs: *mut epoll_event, max: c_int, timeout: c_int, mask: *const sigset_t) -> c_int;
    fn epoll_pwait2(ep: c_int, evs: *mut epoll_event, max: c_int, t: *const timespec, mask: *const sigset_t) -> c_int;
    fn bind(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    fn getsockname(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    fn getpeername(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    fn getsockopt(fd: c_int, level: c_int, name: c_int, val: *mut c_void, len: *mut socklen_t) -> c_int;
    fn setsockopt(fd: c_int, level: c_int, name: c_int, val: *const c_void, len: socklen_t) -> c_int;
    fn kill(pid: pid_t, sig: c_int) -> c_int;
    fn sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int;
    fn sigsuspend(mask: *const sigset_t) -> c_int;
    fn sigprocmask(how: c_int, set: *const sigset_t, old: *mut sigset_t) -> c_int;
    fn pthread_sigmask(how: c_int, set: *const sigset_t, old: *mut sigset_t) -> c_int;
    fn pause() -> c_int;
    fn fdopen(fd: c_int, mode: *const c_char) -> *mut libc::FILE;
    fn fopen(path: *const c_char, mode: *const c_char) -> *mut libc::FILE;
    fn fopen64(path: *const c_char, mode: *const c_char) -> *mut libc::FILE;
    fn fileno(stream: *mut libc::FILE) -> c_int;
    fn fileno_unlocked(stream: *mut libc::FILE) -> c_int;
    fn clock_gettime(clock: libc::clockid_t, tp: *mut timespec) -> c_int;
    fn clock_nanosleep(clock: libc::clockid_t, flags: c_int, req: *const timespec, rem: *mut timespec) -> c_int;
    fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int;
    fn gettimeofday(tv: *mut timeval, tz: *mut c_void) -> c_int;
    fn time(t: *mut libc::time_t) -> libc::time_t;
    fn getrandom(buf: *mut c_void, n: size_t, flags: c_uint) -> ssize_t;
    fn getentropy(buf: *mut c_void, n: size_t) -> c_int;
    fn flock(fd: c_int, op: c_int) -> c_int;
    fn lockf(fd: c_int, cmd: c_int, len: libc::off_t) -> c_int;
    fn pthread_create(thread: *mut libc::pthread_t, attr: *const libc::pthread_attr_t, start: *mut c_void, arg: *mut c_void) -> c_int;
    fn pthread_join(thread: libc::pthread_t, ret: *mut *mut c_void) -> c_int;
    fn pthread_mutex_lock(m: *mut libc::pthread_mutex_t) -> c_int;
    fn pthread_mutex_trylock(m: *mut libc::pthread_mutex_t) -> c_int;
    fn pthread_mutex_timedlock(m: *mut libc::pthread_mutex_t, t: *const timespec) -> c_int;
    fn pthread_mutex_clocklock(m: *mut libc::pthread_mutex_t, clock: libc::clockid_t, t: *const timespec) -> c_int;
    fn pthread_mutex_unlock(m: *mut libc::pthread_mutex_t) -> c_int;
    fn pthread_mutex_init(m: *mut libc::pthread_mutex_t, attr: *const libc::pthread_mutexattr_t) -> c_int;
    fn pthread_mutex_destroy(m: *mut libc::pthread_mutex_t) -> c_int;
    fn pthread_cond_wait(c: *mut libc::pthread_cond_t, m: *mut libc::pthread_mutex_t) -> c_int;
    fn pthread_cond_timedwait(c: *mut libc::pthread_cond_t, m: *mut libc::pthread_mutex_t, t: *const timespec) -> c_int;
    fn pthread_cond_clockwait(c: *mut libc::pthread_cond_t, m: *mut libc::pthread_mutex_t, clock: libc::clockid_t, t: *const timespec) -> c_int;
    fn pthread_cond_signal(c: *mut libc::pthread_cond_t) -> c_int;
    fn pthread_cond_broadcast(c: *mut libc::pthread_cond_t) -> c_int;
    fn pthread_cond_init(c: *mut libc::pthread_cond_t, attr: *const libc::pthread_condattr_t) -> c_int;
    fn pthread_cond_destroy(c: *mut libc::pthread_cond_t) -> c_int;
    fn sem_init(s: *mut libc::sem_t, shared: c_int, value: c_uint) -> c_int;
    fn sem_destroy(s: *mut libc::sem_t) -> c_int;
    fn sem_post(s: *mut libc::sem_t) -> c_int;
    fn sem_wait(s: *mut libc::sem_t) -> c_int;
    fn sem_trywait(s: *mut libc::sem_t) -> c_int;
    fn sem_timedwait(s: *mut libc::sem_t, t: *const timespec) -> c_int;
    fn sem_clockwait(s: *mut libc::sem_t, clock: libc::clockid_t, t: *const timespec) -> c_int;
    fn pthread_rwlock_rdlock(l: *mut libc::pthread_rwlock_t) -> c_int;
    fn pthread_rwlock_tryrdlock(l: *mut libc::pthread_rwlock_t) -> c_int;
    fn pthread_rwlock_timedrdlock(l: *mut libc::pthread_rwlock_t, t: *const timespec) -> c_int;
    fn pthread_rwlock_clockrdlock(l: *mut libc::pthread_rwlock_t, clock: libc::clockid_t, t: *const timespec) -> c_int;
    fn pthread_rwlock_wrlock(l: *mut libc::pthread_rwlock_t) -> c_int;
    fn pthread_rwlock_trywrlock(l: *mut libc::pthread_rwlock_t) -> c_int;
    fn pthread_rwlock_timedwrlock(l: *mut libc::pthread_rwlock_t, t: *const timespec) -> c_int;
    fn pthread_rwlock_clockwrlock(l: *mut libc::pthread_rwlock_t, clock: libc::clockid_t, t: *const timespec) -> c_int;
    fn pthread_rwlock_init(l: *mut libc::pthread_rwlock_t, attr: *const libc::pthread_rwlockattr_t) -> c_int;
    fn pthread_rwlock_destroy(l: *mut libc::pthread_rwlock_t) -> c_int;
}

static FCNTL: AtomicUsize = AtomicUsize::new(0);
static IOCTL: AtomicUsize = AtomicUsize::new(0);

/// The real (variadic) fcntl, called with one integer-sized argument.
///
/// # Safety
/// As for fcntl(2): `arg` must be what `cmd` takes (a valid pointer for the commands that take
/// one).
pub unsafe fn fcntl(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    let mut p = FCNTL.load(Ordering::Relaxed);
    if p == 0 {
        p = lookup(b"fcntl\0");
        FCNTL.store(p, Ordering::Relaxed);
    }
    // SAFETY: p is libc's variadic fcntl.
    unsafe {
        let f: unsafe extern "C" fn(c_int, c_int, ...) -> c_int = std::mem::transmute(p);
        f(fd, cmd, arg)
    }
}

/// The real (variadic) ioctl, called with one integer-sized argument.
///
/// # Safety
/// As for ioctl(2): `arg` must be what `req` takes (a valid pointer for the requests that take
/// one).
pub unsafe fn ioctl(fd: c_int, req: libc::c_ulong, arg: libc::c_ulong) -> c_int {
    let mut p = IOCTL.load(Ordering::Relaxed);
    if p == 0 {
        p = lookup(b"ioctl\0");
        IOCTL.store(p, Ordering::Relaxed);
    }
    // SAFETY: p is libc's variadic ioctl.
    unsafe {
        let f: unsafe extern "C" fn(c_int, libc::c_ulong, ...) -> c_int = std::mem::transmute(p);
        f(fd, req, arg)
    }
}

static OPENS: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];
const OPEN_NAMES: [&[u8]; 4] = [b"open\0", b"open64\0", b"openat\0", b"openat64\0"];

/// The real (variadic) open, open64, openat or openat64: `which` indexes those names (`dirfd`
/// is for the last two).
///
/// # Safety
/// As for open(2): `path` a C string.
pub unsafe fn open_at(
    which: usize,
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    let which = which.min(3);
    let mut p = OPENS[which].load(Ordering::Relaxed);
    if p == 0 {
        p = lookup(OPEN_NAMES[which]);
        OPENS[which].store(p, Ordering::Relaxed);
    }
    // SAFETY: p is libc's variadic function of that name, of this type.
    unsafe {
        if which < 2 {
            let f: unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int =
                std::mem::transmute(p);
            f(path, flags, mode)
        } else {
            let f: unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int =
                std::mem::transmute(p);
            f(dirfd, path, flags, mode)
        }
    }
}

/// glibc's `syscall` behind ours (`hooks/clone.rs`), once [`resolve_syscall`] found it (0: not
/// yet: calls are then made with the `syscall` instruction).
pub static SYSCALL: AtomicUsize = AtomicUsize::new(0);

/// Finds glibc's `syscall` (from the LD's start, with the other real functions).
pub fn resolve_syscall() {
    // SAFETY: a NUL-terminated name; dlsym has no other preconditions.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, c"syscall".as_ptr()) };
    SYSCALL.store(p as usize, Ordering::Relaxed);
}
