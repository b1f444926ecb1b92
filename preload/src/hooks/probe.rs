//! The probe API a debuggee may call: `ddbx_set("x", 1)` publishes variable `x` of this actor.
//!
//! Each call is a probe event: logged while recording (so that the offline analysis can
//! evaluate predicates), checked against the history while replaying (the same value must be
//! published at the same point). Without ddbx, programs get a no-op from `ddbx.h`'s weak
//! definition (or from the `ddbx-probe` crate).

use crate::{record, replay};
use ddbx_wire::proto::Mode;
use libc::{c_char, c_long};
use std::ffi::CStr;

/// Publishes `name = value` for this actor.
///
/// # Safety
/// `name` must be a C string (or null, which is ignored).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ddbx_set(name: *const c_char, value: c_long) {
    if name.is_null() {
        return;
    }
    let Some(_guard) = crate::guard::Guard::enter() else {
        return;
    };
    let Some(ld) = super::active() else { return };
    // SAFETY: a C string (not null), as documented.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    match ld.mode {
        Mode::Record => record::probe::set(ld, name, value),
        Mode::Replay => replay::probe::set(ld, name, value),
    }
}
