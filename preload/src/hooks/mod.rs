//! The exported libc entry points, one file per call family. Only the entry points live here:
//! each enters the guard, decodes its arguments and hands the call to `record/` or `replay/`
//! by mode. Inside the guard (ddbx's own I/O, nested calls, a signal arriving during a hook)
//! every call goes straight to the real function.
//!
//! The libc handlers the LD registers (fork handlers, the exit handler) and the LD's start are
//! entry points too: they live in `process.rs`.

pub mod addresses;
#[cfg(target_arch = "x86_64")]
pub mod clone;
pub mod dup;
#[cfg(target_arch = "x86_64")]
pub mod execl;
pub mod io;
pub mod libc_random;
pub mod made;
pub mod mask;
pub mod nohang;
pub mod pids;
pub mod pipe;
pub mod probe;
pub mod process;
pub mod pthread;
pub mod resolv;
pub mod rwlock;
pub mod semaphore;
pub mod signal;
pub mod sigwait;
pub mod sleep;
pub mod socket;
pub mod stdio;
pub mod values;
pub mod wait;

/// Defines an exported hook: enters the guard, or calls the real function when already inside.
///
/// The body is not an unsafe block: each unsafe operation in it says why it is sound.
macro_rules! hook {
    ($(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$meta])*
        ///
        /// # Safety
        ///
        /// Called by the program in place of the libc function of this name, with arguments
        /// that are valid for it (what its manual page asks of a caller).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            let errno = crate::sys::errno();
            let r: $ret = {
                let Some(_guard) = crate::guard::Guard::enter() else {
                    // SAFETY: the caller's arguments, valid for the real function as for this
                    // one.
                    return unsafe { crate::real::$name($($arg),*) };
                };
                let _ = crate::replay::signals::at_call_of(stringify!($name));
                #[allow(clippy::redundant_closure_call)]
                (|| $body)()
            };
            // After the guard is left: what runs as the hook returns is the LD's work too.
            crate::hooks::keep_errno(errno, &r);
            r
        }
    };
}
pub(crate) use hook;

/// What a hook returned, as the program reads it: whether the call failed (its errno then
/// says why).
pub trait Outcome {
    /// The call failed.
    fn failed(&self) -> bool;
}

impl Outcome for c_int {
    fn failed(&self) -> bool {
        *self == -1
    }
}

impl Outcome for isize {
    fn failed(&self) -> bool {
        *self == -1
    }
}

impl Outcome for usize {
    /// `signal(2)`'s `SIG_ERR`.
    fn failed(&self) -> bool {
        *self == libc::SIG_ERR
    }
}

/// A call that returns nothing (arc4random_buf) never fails.
impl Outcome for () {
    fn failed(&self) -> bool {
        false
    }
}

impl<T> Outcome for *mut T {
    fn failed(&self) -> bool {
        self.is_null()
    }
}

impl Outcome for i64 {
    /// `time(2)`'s -1.
    fn failed(&self) -> bool {
        *self == -1
    }
}

impl Outcome for u32 {
    /// `sleep(3)` and arc4random's numbers: they cannot fail.
    fn failed(&self) -> bool {
        false
    }
}

/// Runs the body of a hook that is not a [`hook!`] as one: errno kept on success
/// ([`keep_errno`]).
pub fn keeping_errno<R: Outcome>(f: impl FnOnce() -> R) -> R {
    let errno = crate::sys::errno();
    let r = f();
    keep_errno(errno, &r);
    r
}

/// A call that succeeded leaves the program's errno as it found it, as libc's do: the LD's
/// own work inside the hook (a wait of its own that a signal interrupted) must not show
/// through. Python's `select` reads errno after a successful call and, finding EINTR, made
/// the call again with the sets the first call had narrowed (a gunicorn worker's replay
/// diverged: `expected Recv(fd: 7, n: 1), found a select on fds [7]`).
pub fn keep_errno(errno: c_int, r: &impl Outcome) {
    if !r.failed() {
        crate::sys::set_errno(errno);
    }
}

/// Bits for [`crate::ld::Ld::passthrough`]: one report per kind.
pub mod passthrough {
    /// Pipes.
    pub const PIPE: u32 = 1;
    /// Sockets that are neither stream nor datagram sockets ddbx records (netlink, …).
    pub const OTHER_SOCKET: u32 = 2;
    // 16 and 32: signals (`crate::signals::PASSTHROUGH_IN_COMPUTATION`, `PASSTHROUGH_LOST`).
    /// Pipes of the session used by a thread other than the actor's.
    pub const PIPE_THREAD: u32 = 4;
    /// FIFOs opened by path.
    pub const FIFO: u32 = 8;
    /// Lock order, in a process whose `malloc` is not glibc's.
    pub const LOCKS: u32 = 64;
    /// UDP sockets used by a thread other than the actor's, in a process whose threads are
    /// not ordered.
    pub const UDP_THREAD: u32 = 128;
}

use crate::fds;
use crate::ld::{self, Ld};
use libc::c_int;

/// The LD, if it is running; starts it first when nothing has yet (a hook may run before our
/// constructor, from another library's).
pub fn active() -> Option<&'static mut Ld> {
    if ld::unstarted() {
        process::start();
    }
    let ld = ld::running()?;
    if crate::locks::threaded() {
        // One thread at a time drives the LD (`baton.rs`).
        crate::baton::take(crate::guard::depth());
    }
    Some(ld)
}

/// [`active`], for a call that is about to make an event: in a replay of a process with
/// threads, first waits until the next event is this thread's.
pub fn active_for_event() -> Option<&'static mut Ld> {
    let ld = active()?;
    crate::replay::threads::await_turn(ld);
    Some(ld)
}

/// A call that makes an fd without an event (`socket`, `open`, `epoll_create`, `dup`), made
/// by `call` (a negative result: it failed). In a process with threads, the record notes which
/// thread got which number (a `~n` line) and replay moves the fd onto that number
/// (`replay::threads::onto_number`): the number the kernel gives depends on what the other
/// threads did meanwhile, and the events after it name fds by number.
pub fn made_fd(call: impl FnOnce() -> c_int) -> c_int {
    let Some((ld, t)) = ordered_thread() else {
        return call();
    };
    if ld.mode == ddbx_wire::proto::Mode::Replay {
        return crate::replay::threads::make_fd(ld, t, call);
    }
    let fd = call();
    if fd >= 0 {
        let err = crate::sys::errno();
        ld.log_value(&ddbx_wire::history::value::Value::Opened { t, fd });
        crate::sys::set_errno(err);
    }
    fd
}

/// A close of `fd` that is not an event (a file, or a connection another fd still holds),
/// made by `call`. In a process with threads, the record notes which thread closed which
/// number (a `~x` line, every close, failed or not) and replay makes it at the same place:
/// the number it frees is the one the next fd made by any thread gets.
pub fn freed_fd(fd: c_int, call: impl FnOnce() -> c_int) -> c_int {
    let Some((ld, t)) = ordered_thread() else {
        return call();
    };
    if ld.mode == ddbx_wire::proto::Mode::Replay {
        return crate::replay::threads::free_fd(ld, t, call);
    }
    let r = call();
    let err = crate::sys::errno();
    ld.log_value(&ddbx_wire::history::value::Value::Freed { t, fd });
    crate::sys::set_errno(err);
    r
}

/// The LD and the calling thread's logical id, in a process whose threads are ordered (where
/// the fds threads make and close outside events take their recorded places).
fn ordered_thread() -> Option<(&'static mut Ld, u32)> {
    if !crate::locks::threaded() {
        return None;
    }
    let ld = active().filter(|ld| ld.threads_ordered())?;
    Some((ld, crate::locks::me()))
}

/// The LD, when I/O on `fd` is recorded; `None`: pass through (after reporting, once per kind,
/// what passes through unrecorded).
pub fn ld_for_io(fd: c_int) -> Option<&'static mut Ld> {
    let kind = fds::kind(fd);
    if kind & (fds::STREAM | fds::PIPE) == fds::STREAM | fds::PIPE && kind & fds::OURS == 0 {
        // A pipe of the session: recorded from the actor's thread; another thread's use of it
        // passes through (reported), as pipes did before they were channels.
        let ld = active_for_event()?;
        if ld.is_io_thread() {
            return Some(ld);
        }
        ld.passthrough(
            passthrough::PIPE_THREAD,
            "pipes: data read from and written to pipes by a second thread",
        );
        return None;
    }
    if kind & fds::STREAM != 0 && kind & fds::OURS == 0 {
        let ld = active()?;
        ld.check_thread();
        crate::replay::threads::await_turn(ld);
        return Some(ld);
    }
    if kind & fds::DATAGRAM != 0 && kind & fds::OURS == 0 {
        let ld = active()?;
        if crate::locks::threaded() && !ld.threads_ordered() && !ld.values_thread() {
            // Not refused, as a stream socket's would be: UDP passed through before it was
            // recorded, and a threaded program's DNS or statistics thread should not stop it.
            ld.passthrough(
                passthrough::UDP_THREAD,
                "UDP sockets: datagrams sent and received by a second thread",
            );
            return None;
        }
        ld.check_thread();
        crate::replay::threads::await_turn(ld);
        return Some(ld);
    }
    if kind & fds::PIPE != 0 {
        if let Some(ld) = active()
            && !ld.has_reported(passthrough::PIPE | passthrough::FIFO)
        {
            if is_named_fifo(fd) {
                ld.passthrough(
                    passthrough::FIFO,
                    "FIFOs (named pipes): data read from and written to them",
                );
            } else {
                ld.passthrough(
                    passthrough::PIPE,
                    "pipes from outside the session: data read from and written to them",
                );
            }
        }
    } else if kind & fds::OTHER_SOCKET != 0
        && let Some(ld) = active()
    {
        ld.passthrough(
            passthrough::OTHER_SOCKET,
            "sockets other than TCP, UDP and Unix stream and datagram sockets (netlink, raw, \
             Unix seqpacket, …): what they send and receive",
        );
    }
    None
}

/// Whether the pipe open at `fd` is a FIFO opened by path (an anonymous pipe's link in
/// `/proc/self/fd` reads `pipe:[inode]`).
fn is_named_fifo(fd: c_int) -> bool {
    let path = format!("/proc/self/fd/{fd}\0");
    let mut buf = [0u8; 16];
    // SAFETY: a NUL-terminated path and a buffer of `buf.len()` bytes.
    let n = unsafe {
        libc::syscall(
            libc::SYS_readlinkat,
            libc::AT_FDCWD,
            path.as_ptr(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    n > 0 && !buf[..n as usize].starts_with(b"pipe:")
}
