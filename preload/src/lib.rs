//! `libddbx_preload.so`: ddbx's local debugger (LD), loaded into every debuggee with
//! `LD_PRELOAD` by `ddbx record` and `ddbx replay`.
//!
//! It hooks the libc entry points of process creation, sockets, socket data and readiness
//! (see `hooks/`), keeps track of which fd is which channel end, and for every
//! nondeterministic outcome either writes it to the actor's history (`record/`) or makes the
//! call come out as the history says (`replay/`). It is a guest in someone else's process: no
//! output on the program's stdout/stderr, no threads, no locks on the hook path, a heap of its
//! own (`alloc`: the LD runs inside the program's signal handlers, which may have interrupted
//! libc's malloc), and a re-entrancy guard so that its own I/O is never recorded.
//!
//! A panic never falls through to the real call (which would be a missing event): the copy
//! that `ddbx` embeds is built by `ddbx/build.rs` with `panic = "abort"`, so a panic prints its
//! message on stderr and aborts the process. A build without it (`cargo build -p
//! ddbx-preload`) aborts too, with the same message: the unwind cannot leave the hook's
//! `extern "C"` frame.
//!
//! Without `DDBX_GD` in the environment it does nothing but pass every call through.
//!
//! The modules, from the bottom up (each uses only those before it): `alloc`, `sys`, `guard`,
//! `real`, `symbols`, `fds`, `trace`, `locks` (threads and lock order), `ld` (the state, the GD
//! connection, the history writer, the lifecycle), `halting`, `readiness`, `record`, `replay`, `hooks`.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::missing_safety_doc, clippy::undocumented_unsafe_blocks)]

mod alloc;
mod baton;
mod fatal;
mod fds;
mod guard;
mod halting;
mod hooks;
mod ld;
mod locks;
mod pids;
mod readiness;
mod real;
mod record;
mod replay;
mod signals;
mod symbols;
mod sys;
mod trace;

/// Our constructor: start the LD before the program's `main` (hooks that run earlier, from
/// other libraries' constructors, start it themselves).
extern "C" fn ddbx_ld_init() {
    let _guard = guard::Guard::enter();
    hooks::process::start();
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = ddbx_ld_init;
