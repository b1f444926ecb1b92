//! execl(3), execle(3), execlp(3): glibc's make their execve inside libc, past the hooks, so an
//! image they start would miss what the LD hands an exec (the pipes and ports it inherits, the
//! values read so far). They take their arguments as a variadic list, which Rust cannot
//! declare; each entry point is a few instructions that lay the list out as the argv array it
//! is and call execv, execve or execvp's hook with it.
//!
//! On x86-64 a variadic call passes its first six integer arguments in rdi, rsi, rdx, rcx, r8
//! and r9 and the rest on the stack, just above the return address. The entry pops the return
//! address and pushes r9 down to rsi, so that `arg0` and everything after it (register ones,
//! then the stack's) form one array; it calls [`exec_list`] with it, then puts the stack back.
//! An exec returns only when it fails.

use libc::{c_char, c_int};

/// Which of the three made the call.
const EXECL: c_int = 0;
const EXECLE: c_int = 1;
const EXECLP: c_int = 2;

/// The argument list `list` (`arg0`, …, a null pointer; then, for execle, the environment) as
/// the exec that `kind` names wants it.
///
/// # Safety
/// `list` is a null-terminated array of C strings, followed for execle by a valid `envp`.
unsafe extern "C" fn exec_list(
    path: *const c_char,
    list: *const *const c_char,
    kind: c_int,
) -> c_int {
    // SAFETY: as the caller promises.
    unsafe {
        match kind {
            EXECLE => {
                let mut end = 0;
                while !(*list.add(end)).is_null() {
                    end += 1;
                }
                let envp = *list.add(end + 1) as *const *const c_char;
                super::process::execve(path, list, envp)
            }
            EXECLP => super::process::execvp(path, list),
            _ => super::process::execv(path, list),
        }
    }
}

/// Lays out the argument list (see the module's doc) and calls [`exec_list`] with the kind in
/// r10.
#[unsafe(naked)]
unsafe extern "C" fn list_entry() {
    core::arch::naked_asm!(
        "pop r11",
        "push r9",
        "push r8",
        "push rcx",
        "push rdx",
        "push rsi",
        "mov rsi, rsp",
        // rbx keeps the return address across the call (the caller's rbx is saved below the
        // array); the stack is 16-byte aligned at the call.
        "push rbx",
        "mov rbx, r11",
        "mov edx, r10d",
        "call {list}",
        "mov r11, rbx",
        "pop rbx",
        "add rsp, 40",
        "push r11",
        "ret",
        list = sym exec_list,
    )
}

/// execl(3).
///
/// # Safety
/// Called by the program in place of execl, with valid arguments.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execl(path: *const c_char, arg0: *const c_char) -> c_int {
    core::arch::naked_asm!("mov r10d, {kind}", "jmp {entry}", kind = const EXECL, entry = sym list_entry)
}

/// execle(3).
///
/// # Safety
/// Called by the program in place of execle, with valid arguments.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execle(path: *const c_char, arg0: *const c_char) -> c_int {
    core::arch::naked_asm!("mov r10d, {kind}", "jmp {entry}", kind = const EXECLE, entry = sym list_entry)
}

/// execlp(3).
///
/// # Safety
/// Called by the program in place of execlp, with valid arguments.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execlp(file: *const c_char, arg0: *const c_char) -> c_int {
    core::arch::naked_asm!("mov r10d, {kind}", "jmp {entry}", kind = const EXECLP, entry = sym list_entry)
}
