//! The probe API a debuggee may call: `ddbx_set("x", 1)` publishes variable `x` of this actor.
//!
//! Each call is a probe event: logged while recording (so that the offline analysis can
//! evaluate predicates), checked against the history while replaying (the same value must be
//! published at the same point). Without ddbx, programs get a no-op from `ddbx.h`'s weak
//! definition (or from the `ddbx-probe` crate).

use crate::ld;
use ddbx_wire::Record;
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
    let Some(ld) = ld::active() else { return };
    // SAFETY: a C string, as documented.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    let record = Record::Probe {
        name: name.clone(),
        value,
    };
    match ld.mode {
        Mode::Record => {
            ld.probes.push((name, value));
            ld.emit(&record);
        }
        Mode::Replay => {
            ld.follow(
                |r| matches!(r, Record::Probe { name: n, value: v } if *n == name && *v == value),
                || record.to_line(),
            );
            // The new value counts from this event on (a halting replay checks it right after).
            ld.probes.push((name, value));
            ld.advance(&record);
        }
    }
}
