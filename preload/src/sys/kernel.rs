//! The LD's own pid calls and clock reads, made to the kernel directly: libc's `syscall`,
//! which the LD exports (`hooks/clone.rs`), shows the program pids as its record had them
//! and its clock reads as values, and the LD's own are the kernel's.

use super::set_errno;
use libc::c_int;

/// A system call with up to three arguments made with the `syscall` instruction itself, not
/// through libc's `syscall`. The raw result (a negated errno on failure).
#[cfg(target_arch = "x86_64")]
fn kernel_call3(
    n: libc::c_long,
    a: libc::c_long,
    b: libc::c_long,
    c: libc::c_long,
) -> libc::c_long {
    let ret: libc::c_long;
    // SAFETY: the `syscall` instruction with the kernel's x86_64 convention (number in rax,
    // arguments in rdi, rsi and rdx; rcx and r11 clobbered; memory may be written: no
    // `nomem`); only the calls below come here, with plain integers or a pointer to the
    // caller's own timespec.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") n => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// As above, where libc's `syscall` is not hooked.
#[cfg(not(target_arch = "x86_64"))]
fn kernel_call3(
    n: libc::c_long,
    a: libc::c_long,
    b: libc::c_long,
    c: libc::c_long,
) -> libc::c_long {
    // SAFETY: only the calls below come here, with plain integers or a pointer to the
    // caller's own timespec.
    let r = unsafe { libc::syscall(n, a, b, c) };
    if r == -1 {
        -libc::c_long::from(super::errno())
    } else {
        r
    }
}

/// [`kernel_call3`] with two arguments.
fn kernel_call(n: libc::c_long, a: libc::c_long, b: libc::c_long) -> libc::c_long {
    kernel_call3(n, a, b, 0)
}

/// clock_gettime(2) of CLOCK_MONOTONIC: ns, or 0 if it cannot be read.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let r = kernel_call(
        libc::SYS_clock_gettime,
        libc::c_long::from(libc::CLOCK_MONOTONIC),
        (&raw mut ts) as libc::c_long,
    );
    if r != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// getpid(2): the kernel's pid of this process.
pub fn getpid() -> c_int {
    kernel_call(libc::SYS_getpid, 0, 0) as c_int
}

/// getppid(2): the kernel's pid of the parent.
pub fn getppid() -> c_int {
    kernel_call(libc::SYS_getppid, 0, 0) as c_int
}

/// gettid(2).
pub fn gettid() -> c_int {
    kernel_call(libc::SYS_gettid, 0, 0) as c_int
}

/// kill(2) of the process the kernel knows as `pid`: 0, or -1 with errno.
pub fn kill(pid: c_int, sig: c_int) -> c_int {
    let r = kernel_call(
        libc::SYS_kill,
        libc::c_long::from(pid),
        libc::c_long::from(sig),
    );
    if r < 0 {
        set_errno(-r as c_int);
        -1
    } else {
        0
    }
}

/// tgkill(2): `sig` to thread `tid` of process `pid` (both as the kernel knows them).
pub fn tgkill(pid: c_int, tid: c_int, sig: c_int) -> c_int {
    let r = kernel_call3(
        libc::SYS_tgkill,
        libc::c_long::from(pid),
        libc::c_long::from(tid),
        libc::c_long::from(sig),
    );
    if r < 0 {
        set_errno(-r as c_int);
        -1
    } else {
        0
    }
}

/// Kills this process with `sig`.
pub fn kill_self(sig: c_int) {
    kill(getpid(), sig);
}
