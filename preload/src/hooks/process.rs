//! Processes: fork, vfork, _Fork, posix_spawn, the exec family, _exit.
//!
//! Fork itself is handled by `pthread_atfork` handlers (see `ld`), so that children made inside
//! libc (daemon(), forkpty()) are covered too. Exec keeps the actor: the new image finds its
//! actor by pid. The exec hooks only make sure the new image still loads the LD when the
//! program passes an environment of its own.

#![allow(non_snake_case)]

use super::hook;
use crate::{ld, real, sys};
use ddbx_wire::history::Record;
use ddbx_wire::proto::Mode;
use libc::{c_char, c_int, c_void, pid_t};
use std::ffi::CStr;

hook! {
    /// fork(2): the fork handlers do the work.
    fn fork() -> pid_t {
        if ld::active().is_none() {
            return real::fork();
        }
        real::fork()
    }
}

hook! {
    /// vfork(2), run as fork: a vfork child would share (and clobber) our state and our
    /// caller's stack frame.
    fn vfork() -> pid_t {
        let _ = ld::active();
        real::fork()
    }
}

hook! {
    /// _Fork(3): a fork without the fork handlers, so we run ours.
    fn _Fork() -> pid_t {
        let _ = ld::active();
        ld::before_fork();
        let pid = real::_Fork();
        if pid == 0 {
            ld::after_fork_child();
        } else {
            ld::after_fork_parent();
        }
        pid
    }
}

/// An environment for a new image: the program's, plus what the LD needs (if missing) and any
/// `extra` entries (which replace entries of the same name).
///
/// # Safety
/// `envp` must be null or a null-terminated array of C strings.
unsafe fn augmented_env(envp: *const *const c_char, extra: &[(&str, Vec<u8>)]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    if !envp.is_null() {
        let mut i = 0;
        loop {
            // SAFETY: null-terminated array.
            let p = unsafe { *envp.add(i) };
            if p.is_null() {
                break;
            }
            // SAFETY: each entry is a C string.
            out.push(unsafe { CStr::from_ptr(p) }.to_bytes().to_vec());
            i += 1;
        }
    }
    let set = |out: &mut Vec<Vec<u8>>, name: &str, value: &[u8], replace: bool| {
        let prefix = format!("{name}=");
        let pos = out.iter().position(|e| e.starts_with(prefix.as_bytes()));
        let mut entry = prefix.into_bytes();
        entry.extend_from_slice(value);
        match pos {
            Some(i) if replace => out[i] = entry,
            Some(_) => {}
            None => out.push(entry),
        }
    };
    if let Some(ld) = ld::active() {
        for (name, value) in ld.required_env() {
            if !value.is_empty() {
                set(&mut out, name, value, false);
            }
        }
    }
    for (name, value) in extra {
        set(&mut out, name, value, true);
    }
    out
}

/// NUL-terminated copies and the pointer array execve wants.
fn c_array(entries: &[Vec<u8>]) -> (Vec<Vec<u8>>, Vec<*const c_char>) {
    let owned: Vec<Vec<u8>> = entries
        .iter()
        .map(|e| {
            let mut v: Vec<u8> = e.iter().copied().filter(|b| *b != 0).collect();
            v.push(0);
            v
        })
        .collect();
    let mut ptrs: Vec<*const c_char> = owned.iter().map(|v| v.as_ptr().cast()).collect();
    ptrs.push(std::ptr::null());
    (owned, ptrs)
}

/// Reports a statically linked program about to be exec'd: it will not load the LD, so
/// nothing it does is recorded. `search` looks the name up in PATH (execvp and friends).
///
/// # Safety
/// `path` must be null or a C string.
unsafe fn report_if_static(path: *const c_char, search: bool) {
    if path.is_null() {
        return;
    }
    let Some(ld) = ld::active() else { return };
    // SAFETY: a C string.
    let name = unsafe { CStr::from_ptr(path) }.to_bytes().to_vec();
    let candidates: Vec<Vec<u8>> = if !search || name.contains(&b'/') {
        vec![name]
    } else {
        let dirs = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
        std::env::split_paths(&dirs)
            .map(|d| {
                let mut p = d.into_os_string().into_encoded_bytes();
                p.push(b'/');
                p.extend_from_slice(&name);
                p
            })
            .collect()
    };
    for candidate in candidates {
        let fd = crate::sys::open(&candidate, libc::O_RDONLY | libc::O_CLOEXEC, 0);
        if fd < 0 {
            continue;
        }
        let mut head = [0u8; ddbx_wire::elf::HEADER_BYTES];
        let n = crate::sys::read(fd, &mut head).max(0) as usize;
        crate::sys::close(fd);
        if ddbx_wire::elf::is_static(&head[..n]) == Some(true) {
            let what = format!(
                "{} is statically linked and was started by {}: nothing it does is recorded",
                String::from_utf8_lossy(&candidate),
                ld.actor
            );
            ld.send(&ddbx_wire::proto::LdToGd::Passthrough {
                actor: ld.actor,
                what,
            });
        }
        return;
    }
}

fn environ() -> *const *const c_char {
    unsafe extern "C" {
        static environ: *const *const c_char;
    }
    // SAFETY: reading the libc global.
    unsafe { environ }
}

hook! {
    /// execve(2).
    fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
        report_if_static(path, false);
        ld::before_exec();
        let env = augmented_env(envp, &[]);
        let (_keep, ptrs) = c_array(&env);
        real::execve(path, argv, ptrs.as_ptr())
    }
}

hook! {
    /// execvpe(3).
    fn execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
        report_if_static(file, true);
        ld::before_exec();
        let env = augmented_env(envp, &[]);
        let (_keep, ptrs) = c_array(&env);
        real::execvpe(file, argv, ptrs.as_ptr())
    }
}

/// execv(3): glibc's own execv does not pass through execve's hook.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: as for execve, with the process environment.
    unsafe { execve(path, argv, environ()) }
}

/// execvp(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: as for execvpe, with the process environment.
    unsafe { execvpe(file, argv, environ()) }
}

hook! {
    /// fexecve(3).
    fn fexecve(fd: c_int, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
        ld::before_exec();
        let env = augmented_env(envp, &[]);
        let (_keep, ptrs) = c_array(&env);
        real::fexecve(fd, argv, ptrs.as_ptr())
    }
}

hook! {
    /// execveat(2).
    fn execveat(dirfd: c_int, path: *const c_char, argv: *const *const c_char, envp: *const *const c_char, flags: c_int) -> c_int {
        if dirfd == libc::AT_FDCWD {
            report_if_static(path, false);
        }
        ld::before_exec();
        let env = augmented_env(envp, &[]);
        let (_keep, ptrs) = c_array(&env);
        real::execveat(dirfd, path, argv, ptrs.as_ptr(), flags)
    }
}

/// posix_spawn and posix_spawnp: the child's number travels in its environment.
unsafe fn on_spawn(
    spawn: impl FnOnce(*const *mut c_char) -> c_int,
    envp: *const *mut c_char,
) -> c_int {
    let Some(ld) = ld::active() else {
        return spawn(envp);
    };
    let index = ld.next_child();
    let claim = format!("{}:{}:{}", ld.pid, ld.actor, index);
    let record = Record::Spawn { index };
    match ld.mode {
        Mode::Record => ld.emit(&record),
        Mode::Replay => {
            ld.follow(
                |r| matches!(r, Record::Spawn { index: i } if *i == index),
                || record.to_line(),
            );
            ld.advance(&record);
        }
    }
    // SAFETY: envp as the caller gave it.
    let env = unsafe {
        augmented_env(
            envp as *const *const c_char,
            &[(ddbx_wire::env::SPAWN, claim.into_bytes())],
        )
    };
    let (_keep, ptrs) = c_array(&env);
    spawn(ptrs.as_ptr() as *const *mut c_char)
}

hook! {
    /// posix_spawn(3).
    fn posix_spawn(pid: *mut pid_t, path: *const c_char, fa: *const c_void, attr: *const c_void, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int {
        report_if_static(path, false);
        on_spawn(|env| unsafe { real::posix_spawn(pid, path, fa, attr, argv, env) }, envp)
    }
}

hook! {
    /// posix_spawnp(3).
    fn posix_spawnp(pid: *mut pid_t, file: *const c_char, fa: *const c_void, attr: *const c_void, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int {
        report_if_static(file, true);
        on_spawn(|env| unsafe { real::posix_spawnp(pid, file, fa, attr, argv, env) }, envp)
    }
}

hook! {
    /// _exit(2).
    fn _exit(status: c_int) -> () {
        ld::exit_hook(status);
        real::_exit(status)
    }
}

hook! {
    /// _Exit(2).
    fn _Exit(status: c_int) -> () {
        ld::exit_hook(status);
        real::_Exit(status)
    }
}

/// Before a blocking wait for a child (not an event): a halting replay makes sure that what the
/// actor's next event needs (its children's exits, for its own exit) is under way.
fn before_wait(options: c_int) {
    if options & libc::WNOHANG != 0 {
        return;
    }
    if let Some(ld) = ld::active()
        && ld.mode == Mode::Replay
    {
        ld.before_blocking();
    }
}

/// After a wait that returned `child`: the record notes which child a blocking wait reaped
/// (not an event; a halting replay needs the child's end before the parent's next event).
/// `ended` says whether the child terminated (rather than stopped or continued).
fn after_wait(options: c_int, child: pid_t, ended: bool) {
    if options & libc::WNOHANG != 0 || child <= 0 || !ended || options & libc::WNOWAIT != 0 {
        return;
    }
    if let Some(ld) = ld::active()
        && ld.mode == Mode::Record
    {
        let msg = ddbx_wire::proto::LdToGd::Reaped {
            actor: ld.actor,
            events: ld.events(),
            pid: child,
        };
        ld.send(&msg);
    }
}

/// Whether a wait status (null: not asked for) says the child terminated.
fn terminated(status: *mut c_int, options: c_int) -> bool {
    if status.is_null() {
        // Without WUNTRACED/WCONTINUED only terminations are reported.
        return options & (libc::WUNTRACED | libc::WCONTINUED) == 0;
    }
    // SAFETY: the caller's status word, just filled by the wait.
    let s = unsafe { *status };
    libc::WIFEXITED(s) || libc::WIFSIGNALED(s)
}

hook! {
    /// waitpid(2).
    fn waitpid(pid: pid_t, status: *mut c_int, options: c_int) -> pid_t {
        before_wait(options);
        let r = real::waitpid(pid, status, options);
        if r > 0 {
            let err = sys::errno();
            after_wait(options, r, terminated(status, options));
            sys::set_errno(err);
        }
        r
    }
}

hook! {
    /// wait(2).
    fn wait(status: *mut c_int) -> pid_t {
        before_wait(0);
        let r = real::wait(status);
        if r > 0 {
            let err = sys::errno();
            after_wait(0, r, terminated(status, 0));
            sys::set_errno(err);
        }
        r
    }
}

hook! {
    /// wait3(2).
    fn wait3(status: *mut c_int, options: c_int, usage: *mut libc::rusage) -> pid_t {
        before_wait(options);
        let r = real::wait3(status, options, usage);
        if r > 0 {
            let err = sys::errno();
            after_wait(options, r, terminated(status, options));
            sys::set_errno(err);
        }
        r
    }
}

hook! {
    /// wait4(2).
    fn wait4(pid: pid_t, status: *mut c_int, options: c_int, usage: *mut libc::rusage) -> pid_t {
        before_wait(options);
        let r = real::wait4(pid, status, options, usage);
        if r > 0 {
            let err = sys::errno();
            after_wait(options, r, terminated(status, options));
            sys::set_errno(err);
        }
        r
    }
}

hook! {
    /// waitid(2).
    fn waitid(idtype: libc::idtype_t, id: libc::id_t, info: *mut libc::siginfo_t, options: c_int) -> c_int {
        before_wait(options);
        let r = real::waitid(idtype, id, info, options);
        if r == 0 && !info.is_null() {
            let err = sys::errno();
            // SAFETY: the caller's siginfo, just filled by waitid.
            let (pid, code) = unsafe { ((*info).si_pid(), (*info).si_code) };
            let ended = matches!(code, libc::CLD_EXITED | libc::CLD_KILLED | libc::CLD_DUMPED);
            after_wait(options, pid, ended);
            sys::set_errno(err);
        }
        r
    }
}
