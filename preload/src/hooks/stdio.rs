//! stdio streams on sockets: `fdopen(3)` of a recorded stream socket.
//!
//! glibc's stdio reads and writes a stream's fd with internal calls that do not go through the
//! PLT, so the preload's `read`/`write` never see them: a program that talks over a socket
//! with `fgets`/`fread`/`fprintf` (busybox wget does) would leave gaps in its history, and its
//! replay would make other calls than its record (a `poll` after a read found nothing yet).
//! Here `fdopen` on a recorded socket returns a stream made with `fopencookie(3)` instead,
//! whose reads, writes and close call our hooks: every byte the stream moves is then a
//! recorded receive or send, replayed like any other. `fileno` of such a stream gives the
//! socket back. The same is done for files whose writes take turns (`ld/appends.rs`): a
//! stream that `fopen` opens for appending (a daemon's log written with `fprintf`), or that
//! `fdopen` makes on such a file. Streams on anything else (files, pipes) are glibc's own.

use super::hook;
use crate::{fds, real};
use libc::{FILE, c_char, c_int, c_void, size_t, ssize_t};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// How many socket streams can be open at once; more fall back to glibc's own stream
/// (unrecorded, as without this module).
const SLOTS: usize = 64;

/// The stream (`FILE *` as an address) of each slot; 0: free.
static STREAM: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// The socket of each slot (valid while its stream is set; -1 while being set up).
static FD: [AtomicI32; SLOTS] = [const { AtomicI32::new(-1) }; SLOTS];
/// A slot claimed but whose stream is not made yet.
const CLAIMED: usize = 1;

/// glibc's `cookie_io_functions_t`.
#[repr(C)]
struct CookieFunctions {
    read: Option<unsafe extern "C" fn(*mut c_void, *mut c_char, size_t) -> ssize_t>,
    write: Option<unsafe extern "C" fn(*mut c_void, *const c_char, size_t) -> ssize_t>,
    seek: Option<unsafe extern "C" fn(*mut c_void, *mut i64, c_int) -> c_int>,
    close: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
}

unsafe extern "C" {
    /// glibc's fopencookie(3) (not in the libc crate).
    fn fopencookie(cookie: *mut c_void, mode: *const c_char, io: CookieFunctions) -> *mut FILE;
}

/// The socket behind a cookie (the slot index).
fn fd_of(cookie: *mut c_void) -> c_int {
    FD.get(cookie as usize)
        .map_or(-1, |f| f.load(Ordering::Acquire))
}

/// The stream's reads: our `read` hook, so the receive is recorded (or replayed).
///
/// # Safety
/// `buf` is valid for `size` bytes (stdio's buffer).
unsafe extern "C" fn cookie_read(cookie: *mut c_void, buf: *mut c_char, size: size_t) -> ssize_t {
    // SAFETY: as stdio promises.
    unsafe { super::io::read(fd_of(cookie), buf.cast(), size) }
}

/// The stream's writes: our `write` hook.
///
/// # Safety
/// `buf` is valid for `size` bytes.
unsafe extern "C" fn cookie_write(
    cookie: *mut c_void,
    buf: *const c_char,
    size: size_t,
) -> ssize_t {
    // SAFETY: as stdio promises.
    unsafe { super::io::write(fd_of(cookie), buf.cast(), size) }
}

/// fseek and ftell: the fd's own offset (a standard output in a file has one; a socket or a
/// pipe says ESPIPE, as the stream without this function did).
///
/// # Safety
/// `offset` points to stdio's offset.
unsafe extern "C" fn cookie_seek(cookie: *mut c_void, offset: *mut i64, whence: c_int) -> c_int {
    // SAFETY: as stdio promises; lseek takes no pointer.
    unsafe {
        let r = libc::syscall(libc::SYS_lseek, fd_of(cookie), *offset, whence);
        if r < 0 {
            return -1;
        }
        *offset = r;
    }
    0
}

/// fclose: frees the slot and closes the socket through our `close` hook.
///
/// # Safety
/// Called once per stream, by stdio.
unsafe extern "C" fn cookie_close(cookie: *mut c_void) -> c_int {
    let fd = fd_of(cookie);
    if let Some(slot) = STREAM.get(cookie as usize) {
        FD[cookie as usize].store(-1, Ordering::Release);
        slot.store(0, Ordering::Release);
    }
    // SAFETY: the program gave this fd to fdopen, which owns it from then on.
    unsafe { super::socket::close(fd) }
}

/// Whether `fd` is a socket whose I/O the LD records.
fn recorded_socket(fd: c_int) -> bool {
    let kind = fds::kind(fd);
    kind & fds::STREAM != 0 && kind & fds::OURS == 0 && super::active().is_some()
}

/// Whether writes into `fd` take turns (a file opened for appending, or a standard output in
/// a file) while the LD runs.
fn turn_file(fd: c_int) -> bool {
    fds::kind(fd) & fds::TURNS != 0 && super::active().is_some_and(|ld| ld.trace.is_none())
}

hook! {
    /// fdopen(3): on a recorded stream socket, or a file whose writes take turns, a stream
    /// whose I/O goes through our hooks.
    fn fdopen(fd: c_int, mode: *const c_char) -> *mut FILE {
        if !recorded_socket(fd) && !turn_file(fd) {
            // SAFETY: the program's arguments, passed on unchanged.
            return unsafe { real::fdopen(fd, mode) };
        }
        // SAFETY: the program's mode string.
        unsafe { cookie_stream(fd, mode) }
    }
}

hook! {
    /// fopen(3): see [`open_for_appending`].
    fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
        let mut room: super::pids::ProcPath = [0; 256];
        // SAFETY: the program's C strings (the path perhaps ours, naming this run's process).
        unsafe {
            let path = super::pids::real_proc_path(path, &mut room);
            open_for_appending(path, mode).unwrap_or_else(|| real::fopen(path, mode))
        }
    }
}

hook! {
    /// fopen64(3): see [`open_for_appending`].
    fn fopen64(path: *const c_char, mode: *const c_char) -> *mut FILE {
        let mut room: super::pids::ProcPath = [0; 256];
        // SAFETY: as for fopen.
        unsafe {
            let path = super::pids::real_proc_path(path, &mut room);
            open_for_appending(path, mode).unwrap_or_else(|| real::fopen64(path, mode))
        }
    }
}

/// `fopen(path, mode)` when `mode` opens for appending (`a`, `a+`, with glibc's `b`, `e`,
/// `x`, `m` and `c` flags) a regular file: the file opened as fopen would, with a stream whose
/// writes reach our `write`, so that they take turns; `None`: any other mode or file, or no
/// LD, which the caller leaves to glibc's fopen.
///
/// # Safety
/// `path` and `mode` are C strings.
unsafe fn open_for_appending(path: *const c_char, mode: *const c_char) -> Option<*mut FILE> {
    if path.is_null() || mode.is_null() {
        return None;
    }
    // SAFETY: the caller's C string.
    let flags = unsafe { std::ffi::CStr::from_ptr(mode) }.to_bytes();
    let (first, rest) = flags.split_first()?;
    if *first != b'a' || !rest.iter().all(|c| b"+bexmc".contains(c)) {
        return None;
    }
    super::active().filter(|ld| ld.trace.is_none())?;
    let plus = rest.contains(&b'+');
    let open_flags = libc::O_APPEND
        | libc::O_CREAT
        | if plus { libc::O_RDWR } else { libc::O_WRONLY }
        | if rest.contains(&b'e') {
            libc::O_CLOEXEC
        } else {
            0
        }
        | if rest.contains(&b'x') {
            libc::O_EXCL
        } else {
            0
        };
    // SAFETY: a C path; openat applies the umask to 0666 as fopen does.
    let fd = unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, path, open_flags, 0o666) };
    if fd < 0 {
        return Some(std::ptr::null_mut()); // fopen's failure, errno set by openat
    }
    let fd = fd as c_int;
    fds::forget(fd);
    let simple = if plus { c"a+" } else { c"a" };
    // SAFETY: `fd` was just opened; the modes are C strings.
    let stream = unsafe {
        if fds::kind(fd) & fds::TURNS != 0 {
            cookie_stream(fd, simple.as_ptr())
        } else {
            real::fdopen(fd, mode)
        }
    };
    if stream.is_null() {
        let err = crate::sys::errno();
        crate::sys::close(fd);
        crate::sys::set_errno(err);
    }
    Some(stream)
}

/// A stream on `fd` whose reads, writes and close go through our hooks (glibc's own stream
/// when no slot is left; null when fopencookie failed).
///
/// # Safety
/// `mode` is a C string.
unsafe fn cookie_stream(fd: c_int, mode: *const c_char) -> *mut FILE {
    let Some(index) = STREAM.iter().position(|s| {
        s.compare_exchange(0, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }) else {
        // SAFETY: the caller's arguments, passed on unchanged.
        return unsafe { real::fdopen(fd, mode) };
    };
    FD[index].store(fd, Ordering::Release);
    let io = CookieFunctions {
        read: Some(cookie_read),
        write: Some(cookie_write),
        seek: Some(cookie_seek),
        close: Some(cookie_close),
    };
    // SAFETY: mode is the caller's C string; the cookie is a slot index, not a pointer.
    let stream = unsafe { fopencookie(index as *mut c_void, mode, io) };
    if stream.is_null() {
        FD[index].store(-1, Ordering::Release);
        STREAM[index].store(0, Ordering::Release);
    } else {
        STREAM[index].store(stream as usize, Ordering::Release);
    }
    stream
}

unsafe extern "C" {
    static mut stdin: *mut FILE;
    static mut stdout: *mut FILE;
    static mut stderr: *mut FILE;
}

/// glibc's stdio reads and writes the standard streams with internal calls that the hooks
/// never see (`seq`, `tr`, `sort` and most of coreutils write with stdio, and so do bash's
/// builtins). So while fd 0, 1 or 2 is an end of a pipe of the session (a shell's `a | b`), a
/// recorded socket (`printf … >&3`), or fd 1 or 2 a file whose writes take turns
/// (`./test.sh >out 2>&1`, `ld/appends.rs`),
/// its standard stream is replaced by one whose I/O goes through our hooks on the same fd
/// number, as `fdopen` does for sockets: at the start of an image, and when a `dup2`/`dup3`
/// puts such a pipe there (a forked subshell running a builtin in `$(…)`). The stream keeps
/// working on that fd number whatever the fd becomes later. stderr stays unbuffered.
pub fn wrap_standard_streams() {
    for fd in 0..3 {
        wrap_standard_stream(fd);
    }
}

/// [`wrap_standard_streams`] for `fd` alone (0, 1 or 2; anything else is left alone).
pub fn wrap_standard_stream(fd: c_int) {
    // A file as standard output or error takes turns with the other processes that write it
    // (`ld/appends.rs`): what stdio writes there must reach our `write` too.
    let shared_file =
        (fd == 1 || fd == 2) && fds::kind(fd) & (fds::TURNS | fds::STREAM) == fds::TURNS;
    if shared_file
        && let Some(ld) = super::active()
        && let Some(key) = fds::turn_key(fd)
    {
        // From now on, the reads of that file count before its writes (a script's loop that
        // greps this server's output until it says it is ready), from the first write on.
        ld.claim_turn_file(key);
    }
    // A recorded socket there too (bash's `printf … >&3` to a `/dev/tcp` connection, an
    // inetd-style child): whether the stream was wrapped before must not decide whether its
    // writes are events, or a replay whose standard output is a terminal where the record's
    // was a file would miss the sends the record had.
    if !fds::pipes::is_recorded(fd) && !shared_file && !recorded_socket(fd) {
        return;
    }
    // SAFETY: the standard streams are globals of the C library; the program changes them
    // only through freopen or by assignment, on this thread (one thread does the I/O).
    unsafe {
        let (slot, mode) = match fd {
            0 => (&raw mut stdin, c"r"),
            1 => (&raw mut stdout, c"w"),
            2 => (&raw mut stderr, c"w"),
            _ => return,
        };
        let current = *slot;
        if current.is_null() || socket_of(current).is_some() {
            return; // none, or one of ours already
        }
        libc::fflush(current);
        let stream = cookie_stream(fd, mode.as_ptr());
        if stream.is_null() || socket_of(stream).is_none() {
            return;
        }
        // The buffering the program chose for the stream it had (bash makes stdout line
        // buffered as it starts): a stream wrapped later, at a dup2, writes in the same pieces
        // as one wrapped at the start, whose mode the program set itself. glibc's `_flags`
        // are the first int of its FILE.
        let flags = *current.cast::<c_int>();
        if fd == 2 || flags & IO_UNBUFFERED != 0 {
            libc::setvbuf(stream, std::ptr::null_mut(), libc::_IONBF, 0);
        } else if flags & IO_LINE_BUF != 0 {
            libc::setvbuf(stream, std::ptr::null_mut(), libc::_IOLBF, 0);
        }
        *slot = stream;
    }
}

/// glibc's FILE flag of an unbuffered stream (`_IO_UNBUFFERED`).
const IO_UNBUFFERED: c_int = 0x0002;
/// glibc's FILE flag of a line-buffered stream (`_IO_LINE_BUF`).
const IO_LINE_BUF: c_int = 0x0200;

/// Flushes the streams made here (before the exit event: glibc flushes streams after the exit
/// handlers, when nothing is recorded any more).
pub fn flush_streams() {
    for s in &STREAM {
        let addr = s.load(Ordering::Acquire);
        if addr > CLAIMED {
            // SAFETY: one of our streams, still open (a closed one's slot is 0).
            unsafe { libc::fflush(addr as *mut FILE) };
        }
    }
}

/// The socket of one of our streams.
fn socket_of(stream: *mut FILE) -> Option<c_int> {
    let addr = stream as usize;
    if addr <= CLAIMED {
        return None;
    }
    let index = STREAM
        .iter()
        .position(|s| s.load(Ordering::Acquire) == addr)?;
    Some(FD[index].load(Ordering::Acquire))
}

hook! {
    /// fileno(3): the socket behind one of our streams (a cookie stream has no fd of its own).
    fn fileno(stream: *mut FILE) -> c_int {
        match socket_of(stream) {
            Some(fd) => fd,
            // SAFETY: the program's stream, passed on unchanged.
            None => unsafe { real::fileno(stream) },
        }
    }
}

hook! {
    /// fileno_unlocked(3).
    fn fileno_unlocked(stream: *mut FILE) -> c_int {
        match socket_of(stream) {
            Some(fd) => fd,
            // SAFETY: the program's stream, passed on unchanged.
            None => unsafe { real::fileno_unlocked(stream) },
        }
    }
}
