//! sigwait(3), sigwaitinfo(2), sigtimedwait(2) and reads of a signalfd: signals taken
//! synchronously. Which pending
//! signal such a call returns is the order in which they arrived (the lowest number first
//! among those pending at once): with several senders, a race. Record logs the signal each
//! call took as a value (`~v=10`; `~v=0`: a sigtimedwait that timed out); replay waits for that
//! signal alone (the others stay pending for the calls after) and returns it, with the
//! sender's pid as the record had it. A timeout the record saw is returned at once.
//!
//! A read of a signalfd logs the signal of each `signalfd_siginfo` it returned, then `~v=0`
//! (`~v=-11` alone: EAGAIN); replay takes those signals one at a time as sigtimedwait does
//! and writes their `signalfd_siginfo`s itself.
//!
//! A call the record did not log (from a thread whose values are not recorded, under
//! `--trace optimal`, or interrupted by a handler) is made for real. Like the other value
//! hooks these never start the LD.

use super::values::values_ld;
use crate::guard::Guard;
use crate::{pids, replay};
use ddbx_wire::history::value::Value;
use ddbx_wire::proto::Mode;
use libc::{c_int, siginfo_t, sigset_t, timespec};

/// rt_sigtimedwait(2) itself (libc's functions of that family are our hooks).
///
/// # Safety
/// `set` a valid signal set; `info` null or writable; `timeout` null or valid.
unsafe fn real_taken(
    set: *const sigset_t,
    info: *mut siginfo_t,
    timeout: *const timespec,
) -> c_int {
    // SAFETY: as the caller promises; the kernel's sigset size is 8 bytes.
    unsafe { libc::syscall(libc::SYS_rt_sigtimedwait, set, info, timeout, 8usize) as c_int }
}

/// The call the three hooks make: the signal taken, or -1 with errno.
///
/// # Safety
/// As for [`real_taken`].
unsafe fn taken(set: *const sigset_t, info: *mut siginfo_t, timeout: *const timespec) -> c_int {
    let Some(_guard) = Guard::enter() else {
        // SAFETY: as the caller promises.
        return unsafe { real_taken(set, info, timeout) };
    };
    let ld = values_ld().filter(|_| !set.is_null());
    let Some(ld) = ld else {
        // SAFETY: as the caller promises.
        return unsafe { real_taken(set, info, timeout) };
    };
    if ld.mode == Mode::Replay
        && let Some(sig) = replay::values::take_taken(ld)
    {
        ld.log_value(&Value::Taken { sig });
        if sig == 0 {
            crate::sys::set_errno(libc::EAGAIN);
            return -1;
        }
        let got = wait_for(sig);
        if !info.is_null() {
            // SAFETY: `info` is writable (the call's contract).
            unsafe { *info = got };
        }
        return sig;
    }
    // SAFETY: as the caller promises.
    let r = unsafe { real_taken(set, info, timeout) };
    let errno = crate::sys::errno();
    if r > 0 {
        ld.log_value(&Value::Taken { sig: r });
        if !info.is_null() {
            // SAFETY: the kernel just filled it.
            unsafe { *info = pids::shown_siginfo(r, *info) };
        }
    } else if r < 0 && errno == libc::EAGAIN {
        ld.log_value(&Value::Taken { sig: 0 });
    }
    crate::sys::set_errno(errno);
    r
}

/// sigwaitinfo(2).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigwaitinfo(set: *const sigset_t, info: *mut siginfo_t) -> c_int {
    // SAFETY: as the caller promises.
    super::keeping_errno(|| unsafe { taken(set, info, std::ptr::null()) })
}

/// sigtimedwait(2).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigtimedwait(
    set: *const sigset_t,
    info: *mut siginfo_t,
    timeout: *const timespec,
) -> c_int {
    // SAFETY: as the caller promises.
    super::keeping_errno(|| unsafe { taken(set, info, timeout) })
}

/// sigwait(3): the signal in `*sig`; returns 0 or an error number (it retries EINTR, as
/// glibc's does).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigwait(set: *const sigset_t, sig: *mut c_int) -> c_int {
    let errno = crate::sys::errno();
    let r = loop {
        // SAFETY: as the caller promises.
        let r = unsafe { taken(set, std::ptr::null_mut(), std::ptr::null()) };
        if r >= 0 || crate::sys::errno() != libc::EINTR {
            break r;
        }
    };
    let e = crate::sys::errno();
    crate::sys::set_errno(errno);
    if r < 0 {
        return e;
    }
    if !sig.is_null() {
        // SAFETY: `sig` is writable (the call's contract).
        unsafe { *sig = r };
    }
    0
}

/// A read of the signalfd `fd` into the program's `n` bytes at `buf` (see the module's doc).
///
/// # Safety
/// `buf` holds `n` writable bytes.
pub unsafe fn signalfd_read(fd: c_int, buf: *mut libc::c_void, n: usize) -> isize {
    let real = || {
        // SAFETY: as the caller promises.
        unsafe { libc::syscall(libc::SYS_read, fd, buf, n) as isize }
    };
    // (Called from the read hook, inside the guard.)
    let Some(ld) = values_ld() else {
        return real();
    };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    let errno = crate::sys::errno();
    if ld.mode == Mode::Replay
        && let Some(first) = replay::values::take_taken(ld)
    {
        ld.log_value(&Value::Taken { sig: first });
        if first < 0 {
            crate::sys::set_errno(-first);
            return -1;
        }
        let mut sig = first;
        let mut done = 0;
        while sig > 0 {
            if (done + 1) * size <= n {
                let got = wait_for(sig);
                // SAFETY: room for one more `signalfd_siginfo` at `done` (checked above).
                unsafe {
                    buf.cast::<u8>()
                        .add(done * size)
                        .cast::<libc::signalfd_siginfo>()
                        .write_unaligned(as_signalfd(sig, &got))
                };
                done += 1;
            }
            sig = replay::values::take_taken(ld).unwrap_or(0);
            ld.log_value(&Value::Taken { sig });
        }
        crate::sys::set_errno(errno);
        return (done * size) as isize;
    }
    let r = real();
    let err = crate::sys::errno();
    if r >= 0 {
        for i in 0..r as usize / size {
            // SAFETY: the kernel wrote `r` bytes: whole `signalfd_siginfo`s.
            let info = unsafe {
                buf.cast::<u8>()
                    .add(i * size)
                    .cast::<libc::signalfd_siginfo>()
                    .read_unaligned()
            };
            ld.log_value(&Value::Taken {
                sig: info.ssi_signo as i32,
            });
        }
        ld.log_value(&Value::Taken { sig: 0 });
    } else if err == libc::EAGAIN {
        ld.log_value(&Value::Taken { sig: -err });
    }
    crate::sys::set_errno(if r >= 0 { errno } else { err });
    r
}

/// Waits for signal `sig` alone (the record's), and takes it.
fn wait_for(sig: c_int) -> siginfo_t {
    // SAFETY: all-zero is a valid sigset_t, filled by sigemptyset/sigaddset.
    let mut only: sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: our own set.
    unsafe {
        libc::sigemptyset(&mut only);
        libc::sigaddset(&mut only, sig);
    }
    // SAFETY: all-zero is a valid siginfo_t, for the kernel to fill.
    let mut got: siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: our set and siginfo; no timeout: the record's signal comes (its sender is
        // replayed).
        if unsafe { real_taken(&only, &mut got, std::ptr::null()) } == sig {
            return pids::shown_siginfo(sig, got);
        }
    }
}

/// The `signalfd_siginfo` a signalfd read would have given for `info`.
fn as_signalfd(sig: c_int, info: &siginfo_t) -> libc::signalfd_siginfo {
    // SAFETY: all-zero is a valid signalfd_siginfo.
    let mut out: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    out.ssi_signo = sig as u32;
    out.ssi_errno = info.si_errno;
    out.ssi_code = info.si_code;
    // SAFETY: the union fields the kernel fills for a sent signal and for SIGCHLD (others
    // read as zero from the zeroed siginfo).
    unsafe {
        out.ssi_pid = info.si_pid() as u32;
        out.ssi_uid = info.si_uid();
        if sig == libc::SIGCHLD {
            out.ssi_status = info.si_status();
            out.ssi_utime = info.si_utime() as u64;
            out.ssi_stime = info.si_stime() as u64;
        } else {
            out.ssi_int = info.si_value().sival_ptr as usize as i32;
            out.ssi_ptr = info.si_value().sival_ptr as u64;
        }
    }
    out
}
