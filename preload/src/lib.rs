//! `libddbx_preload.so`: ddbx's local debugger (LD), loaded into every debuggee with
//! `LD_PRELOAD` by `ddbx record` and `ddbx replay`.
//!
//! It hooks the libc entry points of process creation, sockets, socket data and readiness
//! (see `hooks/`), keeps track of which fd is which channel end, and for every
//! nondeterministic outcome either writes it to the actor's history (record) or makes the call
//! come out as the history says (replay). It is a guest in someone else's process: no output on
//! the program's stdout/stderr, no threads, no locks on the hook path, a re-entrancy guard so
//! that its own I/O is never recorded, and a panic aborts (panic = "abort") rather than falling
//! through to a second real call.
//!
//! Without `DDBX_GD` in the environment it does nothing but pass every call through.

#![deny(unsafe_op_in_unsafe_fn)]

mod fds;
mod guard;
mod halt;
mod hooks;
mod ld;
mod real;
mod record;
mod replay;
mod symbols;
mod sys;

/// Our constructor: start the LD before the program's `main` (hooks that run earlier, from
/// other libraries' constructors, start it themselves).
extern "C" fn ddbx_ld_init() {
    let _guard = guard::Guard::enter();
    ld::init();
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = ddbx_ld_init;
