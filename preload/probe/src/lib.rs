//! Publish variables for ddbx's `stop if` predicates.
//!
//! ```
//! ddbx_probe::set("x", 1); // a no-op unless the program runs under `ddbx record`/`replay`
//! ```
//!
//! Under ddbx, the preload library provides `ddbx_set`; each call is an event of the process,
//! logged while recording and checked while replaying. Without ddbx the symbol is absent and
//! [`set`] does nothing.

use std::ffi::CString;
use std::sync::OnceLock;

type SetFn = unsafe extern "C" fn(*const libc::c_char, libc::c_long);

fn ddbx_set() -> Option<SetFn> {
    static FOUND: OnceLock<Option<SetFn>> = OnceLock::new();
    *FOUND.get_or_init(|| {
        // SAFETY: dlsym with a NUL-terminated name; the symbol, if present, has this type.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"ddbx_set".as_ptr()) };
        if p.is_null() {
            None
        } else {
            // SAFETY: ddbx_set's C signature is `void ddbx_set(const char *, long)`.
            Some(unsafe { std::mem::transmute::<*mut libc::c_void, SetFn>(p) })
        }
    })
}

/// Publishes `name = value` for this process (a no-op without ddbx).
pub fn set(name: &str, value: i64) {
    let Some(f) = ddbx_set() else { return };
    let Ok(name) = CString::new(name) else { return };
    // SAFETY: a valid C string; the value fits a C long on Linux targets.
    unsafe { f(name.as_ptr(), value as libc::c_long) }
}

/// Whether the program runs under ddbx (the probe is live).
pub fn active() -> bool {
    ddbx_set().is_some()
}
