//! syscall(2): a `clone` that makes a process the way fork does runs the fork handlers of
//! `process.rs` around it; every call, the LD's own `libc::syscall`s included, is then made by
//! glibc's `syscall` (so a process held in one is in glibc's frame, as before: `ddbx gdb`
//! evaluates the program's expressions in C), or, before the LD resolved it (allocators make
//! system calls while the loader starts), with the `syscall` instruction.

use super::active;
use super::process::{atfork_child, atfork_parent, atfork_prepare};
use crate::guard::Guard;
use crate::sys;
use libc::c_int;

/// The system call `n` with arguments `a`, as glibc's `syscall` makes it: -1 and errno on
/// failure.
///
/// # Safety
/// As for the system call: the arguments must be valid for it.
unsafe fn raw_syscall(n: libc::c_long, a: [libc::c_long; 6]) -> libc::c_long {
    let real = crate::real::SYSCALL.load(std::sync::atomic::Ordering::Relaxed);
    if real != 0 {
        type Syscall = unsafe extern "C" fn(libc::c_long, ...) -> libc::c_long;
        // SAFETY: `real` is glibc's variadic `syscall`, of this type.
        let f: Syscall = unsafe { std::mem::transmute(real) };
        // SAFETY: as the caller promises.
        return unsafe { f(n, a[0], a[1], a[2], a[3], a[4], a[5]) };
    }
    let ret: libc::c_long;
    // SAFETY: the `syscall` instruction with the kernel's x86_64 convention (number in rax,
    // arguments in rdi, rsi, rdx, r10, r8, r9; rcx and r11 clobbered); the arguments are valid
    // for the call as the caller promises. A fork-like clone returns twice, each time here,
    // with the same stack contents (the child's memory is a copy).
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") n => ret,
            in("rdi") a[0],
            in("rsi") a[1],
            in("rdx") a[2],
            in("r10") a[3],
            in("r8") a[4],
            in("r9") a[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    if (-4095..0).contains(&ret) {
        sys::set_errno(-ret as c_int);
        -1
    } else {
        ret
    }
}

/// syscall(2), which programs call to reach system calls libc wraps differently or not at all.
/// A `clone` that makes a process the way fork does (no `CLONE_VM`, no `CLONE_THREAD`, no new
/// stack) is a fork: the fork handlers run around it, so the child is an actor with a `Fork`
/// event in its parent. vsftpd makes each session's process so (`syscall(__NR_clone,
/// CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET | SIGCHLD, NULL)`): without this the child went
/// on writing its events into its parent's history. Every other call is made as glibc makes
/// it, but for the calls that take or return pids, which go where the libc functions' hooks
/// go (`hooks/pids.rs`), and the clock and random-byte calls, which are values
/// (`hooks/values.rs`). (Declared with six `long` arguments after the number: on x86_64 a variadic call passes
/// them in the same registers.)
///
/// # Safety
/// As for the system call: the arguments must be valid for it.
#[cfg(target_arch = "x86_64")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn syscall(
    n: libc::c_long,
    a1: libc::c_long,
    a2: libc::c_long,
    a3: libc::c_long,
    a4: libc::c_long,
    a5: libc::c_long,
    a6: libc::c_long,
) -> libc::c_long {
    let args = [a1, a2, a3, a4, a5, a6];
    // Pids as the program sees them (`hooks/pids.rs`).
    match n {
        libc::SYS_getpid => return libc::c_long::from(super::pids::getpid()),
        libc::SYS_getppid => return libc::c_long::from(super::pids::getppid()),
        libc::SYS_gettid => return libc::c_long::from(super::pids::gettid()),
        libc::SYS_kill => {
            // SAFETY: no pointer arguments.
            let r = unsafe { super::signal::kill(a1 as c_int, a2 as c_int) };
            return libc::c_long::from(r);
        }
        _ => {}
    }
    // Clocks and random bytes are values (`hooks/values.rs`), whichever way they are asked;
    // not the LD's own (inside the guard: those hooks' fallbacks make this very call, and
    // would come back here for ever).
    let program = !crate::guard::inside();
    match n {
        libc::SYS_getrandom if program => {
            // SAFETY: the program's arguments, valid for the system call, are valid for
            // the libc function of the same name.
            let r = unsafe { super::values::getrandom(a1 as _, a2 as _, a3 as _) };
            return r as libc::c_long;
        }
        libc::SYS_clock_gettime if program => {
            // SAFETY: the program's arguments, valid for the system call, are valid for
            // the libc function of the same name.
            let r = unsafe { super::values::clock_gettime(a1 as _, a2 as _) };
            return libc::c_long::from(r);
        }
        libc::SYS_gettimeofday if program => {
            // SAFETY: the program's arguments, valid for the system call, are valid for
            // the libc function of the same name.
            let r = unsafe { super::values::gettimeofday(a1 as _, a2 as _) };
            return libc::c_long::from(r);
        }
        _ => {}
    }
    let fork_like = n == libc::SYS_clone
        && (a1 as c_int) & (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_VFORK) == 0
        && a2 == 0;
    let outside_hooks = fork_like && Guard::enter().is_some();
    if !outside_hooks || active().is_none() {
        // SAFETY: the program's arguments, valid for the call (its contract).
        return unsafe { raw_syscall(n, args) };
    }
    let held = super::nohang::hold_sigchld();
    atfork_prepare();
    // SAFETY: as above.
    let r = unsafe { raw_syscall(n, args) };
    let errno = sys::errno();
    // As glibc's fork: the parent's handlers run on failure too.
    if r == 0 {
        atfork_child();
    } else {
        atfork_parent();
    }
    let shown = super::nohang::forked(r as libc::pid_t);
    sys::set_errno(errno);
    super::nohang::release_sigchld(held);
    if r > 0 { libc::c_long::from(shown) } else { r }
}
