//! Pipes: pipe(2) and pipe2(2). A pipe made by a recorded process is a one-way channel (see
//! `fds/pipes.rs` and `Record::Pipe`): its making is an event, and from then on its ends are
//! recorded like a socketpair's.

use super::{active, hook};
use crate::{fds, real, replay};
use ddbx_wire::proto::Mode;
use libc::c_int;

/// A pipe with these pipe2 `flags`; `call` makes it into `out`.
fn on_pipe(out: *mut c_int, flags: c_int, call: impl FnOnce() -> c_int) -> c_int {
    let ld = (!out.is_null())
        .then(active)
        .flatten()
        .filter(|ld| ld.records_pipes() && ld.is_io_thread());
    let Some(ld) = ld else {
        let r = call();
        if r == 0 && !out.is_null() {
            // SAFETY: the call just filled both ints of `out`.
            let ends = unsafe { [*out, *out.add(1)] };
            for fd in ends {
                fds::forget(fd); // classified as a pipe (passed through) when used
            }
        }
        return r;
    };
    if ld.mode == Mode::Replay {
        replay::socket::before_pipe(ld);
    }
    let r = call();
    let err = crate::sys::errno();
    if r == 0 {
        // SAFETY: `out` points to two ints (pipe's contract), which the call just filled.
        let mut ends = unsafe { [*out, *out.add(1)] };
        if ld.mode == Mode::Replay {
            replay::threads::ends_onto_recorded(ld, &mut ends);
            // SAFETY: as above.
            unsafe { (*out, *out.add(1)) = (ends[0], ends[1]) };
        }
        let [read_fd, write_fd] = ends;
        let bits = fds::pipes::bits(flags);
        fds::set(read_fd, bits);
        fds::set(write_fd, bits);
        fds::pipes::link(read_fd, write_fd);
        ld.pipe_made(write_fd);
        let rec = ddbx_wire::Record::Pipe { read_fd, write_fd };
        match ld.mode {
            Mode::Record => ld.emit(&rec),
            Mode::Replay => replay::socket::after_pair(ld, &rec),
        }
    }
    crate::sys::set_errno(err);
    r
}

hook! {
    /// pipe(2).
    fn pipe(out: *mut c_int) -> c_int {
        // SAFETY: `out` points to two ints (pipe's contract).
        on_pipe(out, 0, || unsafe { real::pipe(out) })
    }
}

hook! {
    /// pipe2(2).
    fn pipe2(out: *mut c_int, flags: c_int) -> c_int {
        // SAFETY: `out` points to two ints (pipe2's contract).
        on_pipe(out, flags, || unsafe { real::pipe2(out, flags) })
    }
}
