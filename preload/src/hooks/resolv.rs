//! The DNS query builders of libc's resolver: `res_mkquery` and `res_nmkquery` (and their
//! `__res_` names in libresolv, for programs built against a libc older than 2.34). The query
//! id a query starts with comes from a clock read inside libc that no hook sees, so a replayed
//! program would send other ids than its record, and the answers it gets from its history
//! (`replay/datagram.rs`) would match none of its queries (busybox's nslookup then waits for
//! its answers until it times out). The id's two bytes are a value, like random bytes
//! (`values.rs`).

use super::values::{own_values_ld, random_in};
use crate::guard::Guard;
use libc::{c_char, c_int, c_uchar, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// res_mkquery(3)'s signature.
type MkQuery = unsafe extern "C" fn(
    c_int,
    *const c_char,
    c_int,
    c_int,
    *const c_uchar,
    c_int,
    *const c_uchar,
    *mut c_uchar,
    c_int,
) -> c_int;

/// res_nmkquery(3)'s signature: res_mkquery's, after the resolver state.
type NMkQuery = unsafe extern "C" fn(
    *mut c_void,
    c_int,
    *const c_char,
    c_int,
    c_int,
    *const c_uchar,
    c_int,
    *const c_uchar,
    *mut c_uchar,
    c_int,
) -> c_int;

/// The function `name` behind ours (`dlsym(RTLD_NEXT)`, resolved at the first call), or 0.
fn real_fn(slot: &AtomicUsize, name: &'static [u8]) -> usize {
    let mut p = slot.load(Ordering::Relaxed);
    if p == 0 {
        // SAFETY: `name` is NUL-terminated; dlsym has no other preconditions.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
        slot.store(p, Ordering::Relaxed);
    }
    p
}

/// A query of `len` bytes (the builder's result) at `buf`: record logs its id, replay puts the
/// recorded id there.
fn query_id(buf: *mut c_uchar, len: c_int) {
    if buf.is_null() || len < 2 {
        return;
    }
    let Some(ld) = own_values_ld() else { return };
    // SAFETY: the builder wrote `len >= 2` bytes into the program's `buf`.
    let id = unsafe { std::slice::from_raw_parts_mut(buf, 2) };
    random_in(ld, id, 2, true);
}

static REAL_MKQUERY: AtomicUsize = AtomicUsize::new(0);
static REAL_OLD_MKQUERY: AtomicUsize = AtomicUsize::new(0);
static REAL_NMKQUERY: AtomicUsize = AtomicUsize::new(0);
static REAL_OLD_NMKQUERY: AtomicUsize = AtomicUsize::new(0);

/// res_mkquery through the real function at `real` (0: none, the call fails).
///
/// # Safety
/// The program's arguments, as res_mkquery(3) wants them.
#[allow(clippy::too_many_arguments)]
unsafe fn mkquery(
    real: usize,
    (op, dname, class, ty): (c_int, *const c_char, c_int, c_int),
    (data, datalen, newrr): (*const c_uchar, c_int, *const c_uchar),
    buf: *mut c_uchar,
    buflen: c_int,
) -> c_int {
    if real == 0 {
        return -1;
    }
    // SAFETY: `real` is the resolver's function of this name, whose signature this is.
    let f: MkQuery = unsafe { std::mem::transmute(real) };
    let guard = Guard::enter();
    // SAFETY: the program's arguments.
    let r = unsafe { f(op, dname, class, ty, data, datalen, newrr, buf, buflen) };
    if guard.is_some() {
        query_id(buf, r);
    }
    r
}

/// res_nmkquery through the real function at `real` (0: none, the call fails).
///
/// # Safety
/// The program's arguments, as res_nmkquery(3) wants them.
unsafe fn nmkquery(
    real: usize,
    state: *mut c_void,
    (op, dname, class, ty): (c_int, *const c_char, c_int, c_int),
    (data, datalen, newrr): (*const c_uchar, c_int, *const c_uchar),
    (buf, buflen): (*mut c_uchar, c_int),
) -> c_int {
    if real == 0 {
        return -1;
    }
    // SAFETY: `real` is the resolver's function of this name, whose signature this is.
    let f: NMkQuery = unsafe { std::mem::transmute(real) };
    let guard = Guard::enter();
    // SAFETY: the program's arguments.
    let r = unsafe {
        f(
            state, op, dname, class, ty, data, datalen, newrr, buf, buflen,
        )
    };
    if guard.is_some() {
        query_id(buf, r);
    }
    r
}

/// res_mkquery(3).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn res_mkquery(
    op: c_int,
    dname: *const c_char,
    class: c_int,
    ty: c_int,
    data: *const c_uchar,
    datalen: c_int,
    newrr: *const c_uchar,
    buf: *mut c_uchar,
    buflen: c_int,
) -> c_int {
    let real = real_fn(&REAL_MKQUERY, b"res_mkquery\0");
    // SAFETY: the program's arguments.
    unsafe {
        mkquery(
            real,
            (op, dname, class, ty),
            (data, datalen, newrr),
            buf,
            buflen,
        )
    }
}

/// libresolv's `__res_mkquery` (res_mkquery before glibc 2.34).
///
/// # Safety
/// Called by the program in place of libresolv's, with valid arguments.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __res_mkquery(
    op: c_int,
    dname: *const c_char,
    class: c_int,
    ty: c_int,
    data: *const c_uchar,
    datalen: c_int,
    newrr: *const c_uchar,
    buf: *mut c_uchar,
    buflen: c_int,
) -> c_int {
    let real = real_fn(&REAL_OLD_MKQUERY, b"__res_mkquery\0");
    // SAFETY: the program's arguments.
    unsafe {
        mkquery(
            real,
            (op, dname, class, ty),
            (data, datalen, newrr),
            buf,
            buflen,
        )
    }
}

/// res_nmkquery(3).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn res_nmkquery(
    state: *mut c_void,
    op: c_int,
    dname: *const c_char,
    class: c_int,
    ty: c_int,
    data: *const c_uchar,
    datalen: c_int,
    newrr: *const c_uchar,
    buf: *mut c_uchar,
    buflen: c_int,
) -> c_int {
    let real = real_fn(&REAL_NMKQUERY, b"res_nmkquery\0");
    // SAFETY: the program's arguments.
    unsafe {
        nmkquery(
            real,
            state,
            (op, dname, class, ty),
            (data, datalen, newrr),
            (buf, buflen),
        )
    }
}

/// libresolv's `__res_nmkquery` (res_nmkquery before glibc 2.34).
///
/// # Safety
/// Called by the program in place of libresolv's, with valid arguments.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __res_nmkquery(
    state: *mut c_void,
    op: c_int,
    dname: *const c_char,
    class: c_int,
    ty: c_int,
    data: *const c_uchar,
    datalen: c_int,
    newrr: *const c_uchar,
    buf: *mut c_uchar,
    buflen: c_int,
) -> c_int {
    let real = real_fn(&REAL_OLD_NMKQUERY, b"__res_nmkquery\0");
    // SAFETY: the program's arguments.
    unsafe {
        nmkquery(
            real,
            state,
            (op, dname, class, ty),
            (data, datalen, newrr),
            (buf, buflen),
        )
    }
}
