//! Processes: the LD's start, fork (fork, vfork, _Fork and libc's fork handlers), posix_spawn,
//! the exec family, the ways out (exit handler, _exit, _Exit) and the waits for a child.
//!
//! Fork itself is handled by `pthread_atfork` handlers, so that children made inside libc
//! (daemon(), forkpty()) are covered too. Exec keeps the actor: the new image finds its actor
//! by pid. The exec hooks only make sure the new image still loads the LD when the program
//! passes an environment of its own (`ld/exec.rs`).

#![allow(non_snake_case)]

use super::nohang::{after_wait, before_wait};
use super::{active, hook};
use crate::guard::Guard;
use crate::ld::exec::{CStringArray, Unseen, exec_environment, without_ld};
use crate::ld::lifecycle::{self, Joined};
use crate::ld::{self, Ld};
use crate::{real, record, replay, sys};
use ddbx_wire::history::Record;
use ddbx_wire::manifest::ExitStatus;
use ddbx_wire::proto::Mode;
use libc::{c_char, c_int, c_void, pid_t};
use std::ffi::CStr;

/// Starts the LD for this image (from our constructor, or from the first hook that runs before
/// it): joins the session, records or replays the image's first event, and registers the fork
/// and exit handlers. The LD stays off when there is no session to join.
pub fn start() {
    if !ld::claim_start() {
        return;
    }
    super::pids::resolve_path_calls();
    crate::guard::on_each_entry(super::signal::at_entry);
    let Some(Joined { mut ld, first }) = lifecycle::start() else {
        ld::stop();
        return;
    };
    first_event(&mut ld, &first);
    let pipes = ld.records_pipes();
    // SAFETY: registering handlers that are plain functions of this library, which stays
    // loaded for the life of the process.
    unsafe {
        libc::pthread_atfork(
            Some(atfork_prepare),
            Some(atfork_parent),
            Some(atfork_child),
        );
        on_exit_register(at_exit, std::ptr::null_mut());
    }
    ld::install(ld);
    if pipes {
        super::stdio::wrap_standard_streams();
    }
}

/// The image's first event (`Start`, or `Exec`), by mode.
fn first_event(ld: &mut Ld, first: &Record) {
    match ld.mode {
        Mode::Record => record::process::start(ld, first),
        Mode::Replay => replay::process::start(ld, first),
    }
}

/// libc's fork handler, before the fork: claims the child's number.
pub(super) extern "C" fn atfork_prepare() {
    let Some(ld) = ld::running() else { return };
    if ld.mode == Mode::Replay {
        replay::process::before_fork(ld);
    }
    ld.fork_index = ld.next_child();
    crate::signals::forking(ld.fork_index);
}

/// libc's fork handler, in the parent after the fork: the fork event.
pub(super) extern "C" fn atfork_parent() {
    let Some(ld) = ld::running() else { return };
    let _guard = Guard::enter();
    match ld.mode {
        Mode::Record => record::process::fork(ld),
        Mode::Replay => replay::process::fork(ld),
    }
}

/// libc's fork handler, in the child: becomes the new actor (or runs unrecorded).
pub(super) extern "C" fn atfork_child() {
    crate::baton::forked_child();
    crate::locks::forked_child();
    let Some(ld) = ld::running() else { return };
    let _guard = Guard::enter();
    match ld.become_child() {
        Some(first) => first_event(ld, &first),
        None => ld::stop(),
    }
}

unsafe extern "C" {
    /// glibc's on_exit(3): like atexit, but the handler gets the exit status.
    #[link_name = "on_exit"]
    fn on_exit_register(
        f: extern "C" fn(c_int, *mut libc::c_void),
        arg: *mut libc::c_void,
    ) -> c_int;
}

/// Our exit handler (on_exit).
extern "C" fn at_exit(status: c_int, _arg: *mut libc::c_void) {
    // What the program's streams still buffer is written now, as recorded writes.
    super::stdio::flush_streams();
    exiting(status);
}

/// Every way out of the process that we see (the exit handler, _exit, _Exit): the exit event,
/// then nothing more is recorded (atexit handlers of other libraries, stdio flush).
fn exiting(status: c_int) {
    // The exiting thread's piece of the lock history is complete: no NUL bytes are left in it
    // (the reader takes those for a process killed while writing).
    crate::locks::flush_runs();
    crate::locks::log::thread_ends();
    let Some(ld) = ld::running() else { return };
    let _guard = Guard::enter();
    if ld.pid != sys::getpid() {
        return;
    }
    let status = status & 0xff;
    match ld.mode {
        Mode::Record => record::process::exit(ld, status),
        Mode::Replay => replay::process::exit(ld, status),
    }
    ld.announce_exit(status);
    ld::stop();
}

/// fork(2): the fork handlers do the work. The child's number is noted even inside a hook,
/// when the program's signal handler forks there (postgres's reaper starts the background
/// processes from its SIGCHLD handler): its waits and its SIGCHLDs name the child by number.
///
/// # Safety
/// Called by the program in place of libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fork() -> pid_t {
    forked_by_program(false, || {
        // SAFETY: no arguments.
        unsafe { real::fork() }
    })
}

/// vfork(2), run as fork: a vfork child would share (and clobber) our state and our caller's
/// stack frame.
///
/// # Safety
/// Called by the program in place of libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vfork() -> pid_t {
    forked_by_program(false, || {
        // SAFETY: no arguments.
        unsafe { real::fork() }
    })
}

/// _Fork(3): a fork without the fork handlers, so we run ours.
///
/// # Safety
/// Called by the program in place of libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Fork() -> pid_t {
    forked_by_program(true, || {
        // SAFETY: no arguments.
        unsafe { real::_Fork() }
    })
}

/// A fork the program makes with `call`: outside our hooks, or from its signal handler run
/// inside one (`handlers`: `call` does not run the fork handlers, so they are run here). The
/// LD's own forks (none today) are left alone. SIGCHLD waits, in record, until the child is
/// known and the program is out of the hook (`hooks::nohang::hold_sigchld`).
fn forked_by_program(handlers: bool, call: impl FnOnce() -> pid_t) -> pid_t {
    let guard = Guard::enter();
    if guard.is_some() {
        let _ = active();
    } else if !crate::signals::in_program_handler() {
        return call();
    }
    let held = super::nohang::hold_sigchld();
    let pid = if handlers {
        atfork_prepare();
        let pid = call();
        if pid == 0 {
            atfork_child();
        } else {
            atfork_parent();
        }
        pid
    } else {
        call()
    };
    let pid = super::nohang::forked(pid);
    if pid == 0 && guard.is_none() {
        crate::guard::forked_out_of_hook();
    }
    drop(guard);
    super::nohang::release_sigchld(held);
    pid
}

/// The entries of a C environment array, copied.
///
/// # Safety
/// `envp` must be null or a null-terminated array of C strings.
unsafe fn read_env(envp: *const *const c_char) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if envp.is_null() {
        return out;
    }
    let mut i = 0;
    loop {
        // SAFETY: a null-terminated array, read up to its null.
        let p = unsafe { *envp.add(i) };
        if p.is_null() {
            return out;
        }
        // SAFETY: each entry is a C string.
        out.push(unsafe { CStr::from_ptr(p) }.to_bytes().to_vec());
        i += 1;
    }
}

/// Before an exec of `path` (null: a program we cannot name, as for fexecve): reports a
/// statically linked program, lets record write out what optimal tracing still holds, and
/// makes the new image's environment: the program's `envp`, plus what the LD needs.
///
/// # Safety
/// `path` must be null or a C string; `envp` null or a null-terminated array of C strings.
unsafe fn prepare_exec(
    path: *const c_char,
    search: bool,
    envp: *const *const c_char,
) -> CStringArray {
    // SAFETY: as the caller promises.
    let unseen = unsafe { report_if_unrecorded(path, search, true) };
    super::socket::let_go_at_exec();
    if let Some(ld) = ld::running() {
        match ld.mode {
            Mode::Record => record::process::exec(ld),
            // The values read so far belong to this image's part of the replay's history.
            Mode::Replay => ld.flush_values(),
        }
    }
    if unseen.is_none()
        && let Some(ld) = active()
    {
        let name = if path.is_null() {
            &[][..]
        } else {
            // SAFETY: a C string (not null), as the caller promises.
            unsafe { CStr::from_ptr(path) }.to_bytes()
        };
        ld.announce_exec(name);
    }
    // SAFETY: as the caller promises.
    let program = unsafe { read_env(envp) };
    let mut env = exec_environment(program, active().as_deref(), &[]);
    if unseen == Some(Unseen::Go) {
        without_ld(&mut env);
    }
    CStringArray::new(&env)
}

/// Reports a program about to be exec'd (`exec`) or spawned that will run unrecorded (static,
/// or Go: [`Ld::report_if_unrecorded`]); returns what it is, if one.
///
/// # Safety
/// `path` must be null or a C string.
unsafe fn report_if_unrecorded(path: *const c_char, search: bool, exec: bool) -> Option<Unseen> {
    if path.is_null() {
        return None;
    }
    let ld = active()?;
    // SAFETY: a C string (not null), as the caller promises.
    let name = unsafe { CStr::from_ptr(path) }.to_bytes();
    ld.report_if_unrecorded(name, search, exec)
}

/// An exec returned (`r`, always -1): it failed, and the image announced to the GD goes on.
fn exec_returned(r: c_int) -> c_int {
    let saved = crate::sys::errno();
    if let Some(ld) = active() {
        ld.exec_failed();
    }
    crate::sys::set_errno(saved);
    r
}

fn environ() -> *const *const c_char {
    unsafe extern "C" {
        static environ: *const *const c_char;
    }
    // SAFETY: reading the libc global (a pointer, read once).
    unsafe { environ }
}

hook! {
    /// execve(2).
    fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
        // SAFETY: `path` is null or a C string, `envp` null or a null-terminated array of C
        // strings (execve's contract).
        let env = unsafe { prepare_exec(path, false, envp) };
        // SAFETY: the program's path and arguments, with an environment of our own making.
        exec_returned(unsafe { real::execve(path, argv, env.as_ptr()) })
    }
}

hook! {
    /// execvpe(3).
    fn execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
        // SAFETY: as for execve.
        let env = unsafe { prepare_exec(file, true, envp) };
        // SAFETY: the program's file and arguments, with an environment of our own making.
        exec_returned(unsafe { real::execvpe(file, argv, env.as_ptr()) })
    }
}

/// execv(3): glibc's own execv does not pass through execve's hook.
///
/// # Safety
/// Called by the program in place of execv, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: as for execve, with the process environment.
    unsafe { execve(path, argv, environ()) }
}

/// execvp(3).
///
/// # Safety
/// Called by the program in place of execvp, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: as for execvpe, with the process environment.
    unsafe { execvpe(file, argv, environ()) }
}

hook! {
    /// fexecve(3).
    fn fexecve(fd: c_int, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
        // SAFETY: `envp` null or a null-terminated array of C strings (fexecve's contract).
        let env = unsafe { prepare_exec(std::ptr::null(), false, envp) };
        // SAFETY: the program's arguments, with an environment of our own making.
        exec_returned(unsafe { real::fexecve(fd, argv, env.as_ptr()) })
    }
}

hook! {
    /// execveat(2).
    fn execveat(dirfd: c_int, path: *const c_char, argv: *const *const c_char, envp: *const *const c_char, flags: c_int) -> c_int {
        // A path relative to another directory is not looked at.
        let named = if dirfd == libc::AT_FDCWD { path } else { std::ptr::null() };
        // SAFETY: as for execve.
        let env = unsafe { prepare_exec(named, false, envp) };
        // SAFETY: the program's arguments, with an environment of our own making.
        exec_returned(unsafe { real::execveat(dirfd, path, argv, env.as_ptr(), flags) })
    }
}

/// posix_spawn and posix_spawnp of `path` (`search`: looked up in PATH): the spawn event; the
/// child's number travels in its environment. A statically linked program is reported; any
/// other spawned child is announced to the GD, which checks that it joins.
///
/// # Safety
/// `envp` must be null or a null-terminated array of C strings; `path` null or a C string;
/// `pid` null or the program's pid_t, which `spawn` fills (then shown the record's pid).
unsafe fn on_spawn(
    spawn: impl FnOnce(*const *mut c_char) -> c_int,
    pid: *mut pid_t,
    envp: *const *mut c_char,
    path: *const c_char,
    search: bool,
) -> c_int {
    // SAFETY: as the caller promises.
    let unseen = unsafe { report_if_unrecorded(path, search, false) };
    let Some(ld) = active() else {
        return spawn(envp);
    };
    let index = ld.next_child();
    let claim = format!("{}:{}:{}", ld.pid, ld.actor, index);
    match ld.mode {
        Mode::Record => record::process::spawn(ld, index),
        Mode::Replay => replay::process::spawn(ld, index),
    }
    // SAFETY: as the caller promises.
    let program = unsafe { read_env(envp as *const *const c_char) };
    let mut env = exec_environment(
        program,
        Some(ld),
        &[(ddbx_wire::env::SPAWN, claim.into_bytes())],
    );
    if unseen == Some(Unseen::Go) {
        without_ld(&mut env);
    }
    let env = CStringArray::new(&env);
    let r = spawn(env.as_ptr() as *const *mut c_char);
    if r == 0 && unseen.is_none() {
        let saved = crate::sys::errno();
        let name = if path.is_null() {
            &[][..]
        } else {
            // SAFETY: a C string (not null), as the caller promises.
            unsafe { CStr::from_ptr(path) }.to_bytes()
        };
        ld.announce_spawn(index, name);
        if !pid.is_null() {
            // Known by its number, as a forked child is (its SIGCHLD, the waits that return
            // it), then shown as the record's.
            // SAFETY: the program's pid_t, just filled by posix_spawn (its contract).
            unsafe {
                crate::signals::add_kid(*pid, index);
                *pid = ld.created_child(index, *pid);
            }
        }
        crate::sys::set_errno(saved);
    }
    r
}

hook! {
    /// posix_spawn(3).
    fn posix_spawn(pid: *mut pid_t, path: *const c_char, fa: *const c_void, attr: *const c_void, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int {
        // SAFETY: the program's arguments (posix_spawn's contract), passed on with an
        // environment of our own making.
        unsafe { on_spawn(|env| real::posix_spawn(pid, path, fa, attr, argv, env), pid, envp, path, false) }
    }
}

hook! {
    /// posix_spawnp(3).
    fn posix_spawnp(pid: *mut pid_t, file: *const c_char, fa: *const c_void, attr: *const c_void, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int {
        // SAFETY: as for posix_spawn.
        unsafe { on_spawn(|env| real::posix_spawnp(pid, file, fa, attr, argv, env), pid, envp, file, true) }
    }
}

// _exit and _Exit are not `hook!`s: called from a signal handler that interrupted a hooked call
// (rsync's daemon, killed in its select, cleans up and calls _exit in its SIGTERM handler), the
// guard is held, and a hook would pass the call through: the process then ended without its
// `Exit` event, the manifest said it exited, and the recording was refused as damaged. The exit
// event is written whatever the guard says, as the exit handler (`at_exit`) writes it after an
// `exit` from such a handler.

/// _exit(2).
///
/// # Safety
/// None beyond _exit's own (it does not return).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _exit(status: c_int) {
    exiting(status);
    // SAFETY: no pointer arguments.
    unsafe { real::_exit(status) }
}

/// _Exit(2).
///
/// # Safety
/// As for [`_exit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Exit(status: c_int) {
    exiting(status);
    // SAFETY: no pointer arguments.
    unsafe { real::_Exit(status) }
}

hook! {
    /// waitid(2).
    fn waitid(idtype: libc::idtype_t, id: libc::id_t, info: *mut libc::siginfo_t, options: c_int) -> c_int {
        before_wait(options);
        let id = match idtype {
            libc::P_PID | libc::P_PGID => crate::pids::real(id as pid_t) as libc::id_t,
            _ => id,
        };
        // SAFETY: `info` is null or the program's siginfo (waitid's contract).
        let r = crate::baton::put_down_for(|| unsafe { real::waitid(idtype, id, info, options) });
        if r == 0 && !info.is_null() {
            let err = sys::errno();
            // SAFETY: the program's siginfo (not null), just filled by waitid.
            let (pid, code, value) = unsafe { ((*info).si_pid(), (*info).si_code, (*info).si_status()) };
            let ended = match code {
                libc::CLD_EXITED => Some(ExitStatus::Exited(value)),
                libc::CLD_KILLED | libc::CLD_DUMPED => Some(ExitStatus::Signaled(value)),
                _ => None,
            };
            after_wait(options, pid, ended);
            // SAFETY: the program's siginfo (not null), as above.
            unsafe { *info = crate::pids::shown_siginfo(libc::SIGCHLD, *info) };
            sys::set_errno(err);
        }
        r
    }
}
