//! Pids as the program sees them (`preload/src/ld/pids.rs`): in replay, the record's. These
//! entry points return a process's own ids, and take or return other processes' and process
//! groups'; the fork, spawn, wait, kill, `waitid`, `SO_PEERCRED`, `F_SETOWN` and
//! signal-handler paths translate in their own files, with [`shown_to_program`],
//! [`real_for_program`] or the table itself (`preload/src/pids.rs`).
//!
//! Not `hook!`s: they start nothing and take no guard (a pid is read early in a process's
//! life, by allocators and libraries' constructors, and from signal handlers). What the LD
//! itself asks goes through `sys`'s system calls, and never here; a call made from inside one
//! of our hooks is the LD's, unless the program's signal handler made it there.

use crate::pids;
use crate::{real, signals, sys};
use libc::{c_char, c_int, c_uint, pid_t};

/// Whether the running code is the program's: outside our hooks, or the program's signal
/// handler run inside one.
fn programs() -> bool {
    !crate::guard::inside() || signals::in_program_handler()
}

/// The pid (or process group id) `real`, as the program sees it.
pub fn shown_to_program(real: pid_t) -> pid_t {
    if real > 0 && programs() {
        pids::shown(real)
    } else {
        real
    }
}

/// The pid argument `pid` the program gave (a process, or a process group negated, as `kill`
/// and `waitpid` take it), as the kernel knows it.
pub fn real_for_program(pid: pid_t) -> pid_t {
    if programs() {
        pids::real_target(pid)
    } else {
        pid
    }
}

/// A pid or process group id the program gave that names no group by sign (`setpgid`,
/// `getsid`): 0 is the caller.
fn real_id(id: pid_t) -> pid_t {
    if id > 0 { real_for_program(id) } else { id }
}

/// A result that is a pid (or -1 with errno), as the program sees it.
fn shown_result(r: pid_t) -> pid_t {
    if r > 0 { shown_to_program(r) } else { r }
}

/// getpid(2).
#[unsafe(no_mangle)]
pub extern "C" fn getpid() -> pid_t {
    shown_to_program(sys::getpid())
}

/// getppid(2). A parent outside the session (ddbx, for the first process) is shown as the
/// record's; an orphan adopted by init stays 1.
#[unsafe(no_mangle)]
pub extern "C" fn getppid() -> pid_t {
    shown_to_program(sys::getppid())
}

/// gettid(2): the main thread's id is its process's pid; other threads' pass unchanged.
#[unsafe(no_mangle)]
pub extern "C" fn gettid() -> pid_t {
    let tid = sys::gettid();
    if tid == sys::getpid() {
        shown_to_program(tid)
    } else {
        tid
    }
}

/// getpgrp(2).
#[unsafe(no_mangle)]
pub extern "C" fn getpgrp() -> pid_t {
    // SAFETY: no pointer arguments.
    shown_result(unsafe { libc::syscall(libc::SYS_getpgid, 0) } as pid_t)
}

/// getpgid(2).
#[unsafe(no_mangle)]
pub extern "C" fn getpgid(pid: pid_t) -> pid_t {
    // SAFETY: no pointer arguments.
    shown_result(unsafe { libc::syscall(libc::SYS_getpgid, real_id(pid)) } as pid_t)
}

/// getsid(2).
#[unsafe(no_mangle)]
pub extern "C" fn getsid(pid: pid_t) -> pid_t {
    // SAFETY: no pointer arguments.
    shown_result(unsafe { libc::syscall(libc::SYS_getsid, real_id(pid)) } as pid_t)
}

/// setpgid(2).
#[unsafe(no_mangle)]
pub extern "C" fn setpgid(pid: pid_t, pgid: pid_t) -> c_int {
    // SAFETY: no pointer arguments.
    unsafe { libc::syscall(libc::SYS_setpgid, real_id(pid), real_id(pgid)) as c_int }
}

/// tcgetpgrp(3).
#[unsafe(no_mangle)]
pub extern "C" fn tcgetpgrp(fd: c_int) -> pid_t {
    let mut pgrp: pid_t = 0;
    // SAFETY: TIOCGPGRP writes one pid_t into our local.
    let r = unsafe { libc::syscall(libc::SYS_ioctl, fd, libc::TIOCGPGRP, &mut pgrp) };
    if r < 0 { -1 } else { shown_result(pgrp) }
}

/// tcsetpgrp(3).
#[unsafe(no_mangle)]
pub extern "C" fn tcsetpgrp(fd: c_int, pgrp: pid_t) -> c_int {
    let pgrp = real_id(pgrp);
    // SAFETY: TIOCSPGRP reads one pid_t from our local.
    unsafe { libc::syscall(libc::SYS_ioctl, fd, libc::TIOCSPGRP, &pgrp) as c_int }
}

/// Room for a `/proc/<pid>/…` path the program gave, turned into this run's.
pub type ProcPath = [u8; 256];

/// `path` with its `/proc/<pid>` prefix naming this run's process, when the pid is one the
/// program was shown (a child's `/proc/<pid>/stat`, a script's `cat /proc/$pid/status`),
/// written into `room`; `path` itself otherwise. Only for the program's own calls: a hook's
/// body, or where [`programs`] says so.
///
/// # Safety
/// `path` must be null or a C string.
pub unsafe fn real_proc_path(path: *const c_char, room: &mut ProcPath) -> *const c_char {
    if path.is_null() || !pids::installed() {
        return path;
    }
    // SAFETY: a C string, as the caller promises.
    let bytes = unsafe { std::ffi::CStr::from_ptr(path) }.to_bytes();
    let Some(rest) = bytes.strip_prefix(b"/proc/") else {
        return path;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let tail = &rest[digits..];
    let shown: Option<pid_t> = std::str::from_utf8(&rest[..digits])
        .ok()
        .and_then(|d| d.parse().ok());
    let Some(shown) = shown.filter(|_| tail.is_empty() || tail[0] == b'/') else {
        return path;
    };
    let real = pids::real(shown);
    let head = format!("/proc/{real}");
    if real == shown || head.len() + tail.len() >= room.len() {
        return path;
    }
    room[..head.len()].copy_from_slice(head.as_bytes());
    room[head.len()..head.len() + tail.len()].copy_from_slice(tail);
    room[head.len() + tail.len()] = 0;
    room.as_ptr().cast()
}

/// An open of `path` by the program (`which`, `dirfd`: as [`real::open_at`] takes them).
///
/// # Safety
/// `path` must be null or a C string.
unsafe fn open_for_program(
    which: usize,
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    let mut room: ProcPath = [0; 256];
    let path = if pids::installed() && programs() {
        // SAFETY: as the caller promises.
        unsafe { real_proc_path(path, &mut room) }
    } else {
        path
    };
    // SAFETY: the program's arguments, the path perhaps ours.
    let open = || unsafe { real::open_at(which, dirfd, path, flags, mode) };
    if !crate::locks::threaded() {
        return open();
    }
    // A thread's open: its number as recorded (`hooks::made_fd`).
    let Some(_guard) = crate::guard::Guard::enter() else {
        return open();
    };
    super::made_fd(open)
}

/// open(2) (variadic in C: the mode, when given, comes in the same register as a third
/// argument on Linux targets).
///
/// # Safety
/// As for open(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: as the caller promises.
    unsafe { open_for_program(0, libc::AT_FDCWD, path, flags, mode) }
}

/// open64(2).
///
/// # Safety
/// As for open(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: as the caller promises.
    unsafe { open_for_program(1, libc::AT_FDCWD, path, flags, mode) }
}

/// openat(2).
///
/// # Safety
/// As for openat(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    // SAFETY: as the caller promises.
    unsafe { open_for_program(2, dirfd, path, flags, mode) }
}

/// openat64(2).
///
/// # Safety
/// As for openat(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    // SAFETY: as the caller promises.
    unsafe { open_for_program(3, dirfd, path, flags, mode) }
}

/// Defines exported calls that take a path, which go to libc's function of the same name
/// with a `/proc/<pid>` prefix naming this run's process ([`real_proc_path`]); `$path` names
/// the path argument. libc's functions are found by [`resolve_path_calls`] as the LD starts
/// (not every libc exports every one), or when first called before that.
macro_rules! proc_path_calls {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; path = $path:ident;)*) => {
        $(
            #[allow(non_snake_case)]
            mod $name {
                /// libc's function (0: not found yet).
                pub static REAL: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
            }

            /// The libc call of this name, with a `/proc/<pid>` path naming this run's process.
            ///
            /// # Safety
            /// As for the libc function of this name: its arguments must be valid for it.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                let mut room: ProcPath = [0; 256];
                let $path = if pids::installed() && programs() {
                    // SAFETY: the program's path, a C string (its contract).
                    unsafe { real_proc_path($path, &mut room) }
                } else {
                    $path
                };
                let mut p = $name::REAL.load(std::sync::atomic::Ordering::Relaxed);
                if p == 0 {
                    p = real::lookup(concat!(stringify!($name), "\0").as_bytes());
                    $name::REAL.store(p, std::sync::atomic::Ordering::Relaxed);
                }
                // SAFETY: `p` is libc's function of this name, of this type; the program's
                // arguments, the path perhaps ours.
                unsafe {
                    let f: unsafe extern "C" fn($($ty),*) -> $ret = std::mem::transmute(p);
                    f($($arg),*)
                }
            }
        )*

        /// Finds libc's functions behind [`proc_path_calls`]'s (from the LD's start, with the
        /// other real functions); one libc does not export stays unfound.
        pub fn resolve_path_calls() {
            $(
                // SAFETY: a NUL-terminated name; dlsym has no other preconditions.
                let p = unsafe {
                    libc::dlsym(libc::RTLD_NEXT, concat!(stringify!($name), "\0").as_ptr().cast())
                };
                $name::REAL.store(p as usize, std::sync::atomic::Ordering::Relaxed);
            )*
        }
    };
}

// Not readlink: an allocator reads its configuration's link while it starts (jemalloc's
// `/etc/malloc.conf`), where finding libc's function could re-enter it.
proc_path_calls! {
    fn stat(path: *const c_char, buf: *mut libc::stat) -> c_int; path = path;
    fn stat64(path: *const c_char, buf: *mut libc::stat64) -> c_int; path = path;
    fn lstat(path: *const c_char, buf: *mut libc::stat) -> c_int; path = path;
    fn lstat64(path: *const c_char, buf: *mut libc::stat64) -> c_int; path = path;
    fn fstatat(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int; path = path;
    fn fstatat64(dirfd: c_int, path: *const c_char, buf: *mut libc::stat64, flags: c_int) -> c_int; path = path;
    fn __xstat(ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int; path = path;
    fn __xstat64(ver: c_int, path: *const c_char, buf: *mut libc::stat64) -> c_int; path = path;
    fn __lxstat(ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int; path = path;
    fn __lxstat64(ver: c_int, path: *const c_char, buf: *mut libc::stat64) -> c_int; path = path;
    fn statx(dirfd: c_int, path: *const c_char, flags: c_int, mask: c_uint, buf: *mut libc::statx) -> c_int; path = path;
    fn access(path: *const c_char, mode: c_int) -> c_int; path = path;
    fn faccessat(dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int; path = path;
    fn opendir(path: *const c_char) -> *mut libc::DIR; path = path;
}
