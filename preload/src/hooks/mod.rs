//! The exported libc entry points, one file per call family. Only the entry points live here:
//! each enters the guard and hands over to the shared logic (record/, replay/). Inside the
//! guard (ddbx's own I/O, nested calls, a signal arriving during a hook) every call goes
//! straight to the real function.

pub mod io;
pub mod probe;
pub mod process;
pub mod signal;
pub mod socket;
pub mod stdio;
pub mod wait;

/// Defines an exported hook: enters the guard, or calls the real function when already inside.
macro_rules! hook {
    ($(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$meta])*
        #[unsafe(no_mangle)]
        #[allow(unused_unsafe, clippy::missing_safety_doc)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            let Some(_guard) = crate::guard::Guard::enter() else {
                // SAFETY: same arguments as the caller gave us.
                return unsafe { crate::real::$name($($arg),*) };
            };
            // SAFETY: the caller's arguments are valid for the libc function we stand in for.
            unsafe { $body }
        }
    };
}
pub(crate) use hook;

/// Bits for [`crate::ld::Ld::passthrough`]: one report per kind.
pub mod passthrough {
    /// Pipes.
    pub const PIPE: u32 = 1;
    /// Datagram and other non-stream sockets.
    pub const OTHER_SOCKET: u32 = 2;
}

use crate::fds;
use crate::ld::{self, Ld};
use libc::c_int;

/// The LD, when I/O on `fd` is recorded; `None`: pass through (after reporting, once per kind,
/// what passes through unrecorded).
pub fn ld_for_io(fd: c_int) -> Option<&'static mut Ld> {
    let kind = fds::kind(fd);
    if kind & fds::STREAM != 0 && kind & fds::OURS == 0 {
        let ld = ld::active()?;
        ld.check_thread();
        return Some(ld);
    }
    if kind & fds::PIPE != 0 {
        if let Some(ld) = ld::active() {
            ld.passthrough(
                passthrough::PIPE,
                "pipes: data read from and written to pipes",
            );
        }
    } else if kind & fds::OTHER_SOCKET != 0
        && let Some(ld) = ld::active()
    {
        ld.passthrough(
            passthrough::OTHER_SOCKET,
            "datagram sockets (UDP and other non-stream sockets): what they send and receive",
        );
    }
    None
}
