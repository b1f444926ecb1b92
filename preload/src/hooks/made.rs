//! Calls that make an fd and are no event: eventfd, timerfd_create, signalfd (a new one),
//! inotify_init, inotify_init1, memfd_create. In a process whose threads are ordered, the
//! number each gets is noted and replay moves the fd onto it ([`super::made_fd`]): the number
//! the kernel gives depends on what the other threads made meanwhile, and the events after it
//! name fds by number (memcached's and libevent's worker threads each make an eventfd for
//! their loop while the main thread makes its listening sockets).

use super::hook;
use crate::{fds, real};
use libc::{c_char, c_int, c_uint, sigset_t};

hook! {
    /// eventfd(2).
    fn eventfd(initval: c_uint, flags: c_int) -> c_int {
        // SAFETY: no pointer arguments.
        super::made_fd(|| unsafe { real::eventfd(initval, flags) })
    }
}

hook! {
    /// timerfd_create(2).
    fn timerfd_create(clock: c_int, flags: c_int) -> c_int {
        // SAFETY: no pointer arguments.
        super::made_fd(|| unsafe { real::timerfd_create(clock, flags) })
    }
}

hook! {
    /// signalfd(2): a new fd when `fd` is -1 (else it changes the mask of an existing one).
    /// What its reads take is recorded (`sigwait.rs`).
    fn signalfd(fd: c_int, mask: *const sigset_t, flags: c_int) -> c_int {
        if fd != -1 {
            // SAFETY: the program's arguments (signalfd's contract).
            return unsafe { real::signalfd(fd, mask, flags) };
        }
        // SAFETY: as above.
        let made = super::made_fd(|| unsafe { real::signalfd(fd, mask, flags) });
        if made >= 0 {
            let nonblock = if flags & libc::SFD_NONBLOCK != 0 { fds::NONBLOCK } else { 0 };
            fds::set(made, fds::SIGNAL_FD | nonblock);
        }
        made
    }
}

hook! {
    /// inotify_init(2).
    fn inotify_init() -> c_int {
        // SAFETY: no arguments.
        super::made_fd(|| unsafe { real::inotify_init() })
    }
}

hook! {
    /// inotify_init1(2).
    fn inotify_init1(flags: c_int) -> c_int {
        // SAFETY: no pointer arguments.
        super::made_fd(|| unsafe { real::inotify_init1(flags) })
    }
}

hook! {
    /// memfd_create(2).
    fn memfd_create(name: *const c_char, flags: c_uint) -> c_int {
        // SAFETY: the program's name (memfd_create's contract).
        super::made_fd(|| unsafe { real::memfd_create(name, flags) })
    }
}
