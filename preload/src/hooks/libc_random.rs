//! Randomness that glibc makes inside itself, past the `getrandom` hook: `arc4random`,
//! `arc4random_buf`, `arc4random_uniform`, and the names `mkstemp` and its family make for
//! temporary files and directories (a clock read and a `getrandom` inside libc). What they
//! return is a `Random` value, as for `getrandom` (`values.rs`): record logs it, replay hands
//! back the recorded one, so that a program that prints, sends or decides from it does the
//! same in replay.
//!
//! A temporary name is replayed by creating the recorded name itself (`O_CREAT | O_EXCL`, as
//! libc does); when something holds that name already, the real call makes another, and the
//! replay goes on with it. Like the other value hooks these never start the LD, and each real
//! function is found with `dlsym(RTLD_NEXT)` at its first call (arc4random is glibc 2.36's).

use super::values::{own_values_ld, random_in};
use crate::guard::Guard;
use crate::replay;
use ddbx_wire::history::value::Value;
use ddbx_wire::proto::Mode;
use libc::{c_char, c_int, c_void, size_t};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The next definition of `name` after ours, looked up once into `slot`; 0 when there is none.
fn resolve(slot: &AtomicUsize, name: &'static [u8]) -> usize {
    let mut p = slot.load(Ordering::Relaxed);
    if p == 0 {
        // SAFETY: `name` is NUL-terminated; dlsym has no other preconditions.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
        slot.store(p, Ordering::Relaxed);
    }
    p
}

/// Defines an exported function that calls the next definition of its name (found with
/// [`resolve`]) and then `$after` on what it returned.
macro_rules! random_hook {
    ($(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty, $missing:expr, $after:expr) => {
        $(#[$meta])*
        ///
        /// # Safety
        /// Called by the program in place of libc's, with valid arguments.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            static REAL: AtomicUsize = AtomicUsize::new(0);
            let real = resolve(&REAL, concat!(stringify!($name), "\0").as_bytes());
            if real == 0 {
                return $missing;
            }
            type Real = unsafe extern "C" fn($($ty),*) -> $ret;
            // SAFETY: `real` is libc's function of this name, whose signature this is.
            let f = unsafe { std::mem::transmute::<usize, Real>(real) };
            super::keeping_errno(|| {
                let Some(_guard) = Guard::enter() else {
                    // SAFETY: the program's arguments, valid for the real function.
                    return unsafe { f($($arg),*) };
                };
                // SAFETY: as above.
                let r = unsafe { f($($arg),*) };
                let after: fn($ret, $($ty),*) -> $ret = $after;
                after(r, $($arg),*)
            })
        }
    };
}

/// A random number the real call returned, through the values: the record's in replay.
fn random_u32(real: u32) -> u32 {
    let Some(ld) = own_values_ld() else {
        return real;
    };
    let mut bytes = real.to_ne_bytes();
    random_in(ld, &mut bytes, 4, true);
    u32::from_ne_bytes(bytes)
}

random_hook! {
    /// arc4random(3).
    fn arc4random() -> u32, 0, |r| random_u32(r)
}

random_hook! {
    /// arc4random_uniform(3): the number it returned, below `upper`.
    fn arc4random_uniform(upper: u32) -> u32, 0, |r, _upper| random_u32(r)
}

/// arc4random_buf(3).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn arc4random_buf(buf: *mut c_void, n: size_t) {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let real = resolve(&REAL, b"arc4random_buf\0");
    if real == 0 {
        return;
    }
    type Real = unsafe extern "C" fn(*mut c_void, size_t);
    // SAFETY: `real` is libc's arc4random_buf, whose signature this is.
    let f = unsafe { std::mem::transmute::<usize, Real>(real) };
    super::keeping_errno(|| {
        // SAFETY: the program's arguments, valid for the real function.
        unsafe { f(buf, n) };
        let Some(_guard) = Guard::enter() else { return };
        if let Some(ld) = own_values_ld()
            && !buf.is_null()
            && n > 0
        {
            // SAFETY: the real call just filled the program's `n` bytes.
            let whole = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n) };
            random_in(ld, whole, n, true);
        }
    })
}

/// The six `X`s of a template with `suffix` bytes after them, as a range of its bytes.
///
/// # Safety
/// `template` is a NUL-terminated string.
unsafe fn xs(template: *const c_char, suffix: c_int) -> Option<std::ops::Range<usize>> {
    if template.is_null() || suffix < 0 {
        return None;
    }
    // SAFETY: as the caller promises.
    let len = unsafe { libc::strlen(template) };
    let end = len.checked_sub(suffix as usize)?;
    Some(end.checked_sub(6)?..end)
}

/// What a temporary-name call makes with the name: a file opened with `flags`, or a directory.
#[derive(Clone, Copy)]
enum Made {
    File(c_int),
    Dir,
}

/// Replay: the record's name for this template, made as libc would; `None` when the record
/// logged none here or the name is taken (the real call then runs). Record: `None`.
///
/// # Safety
/// `template` is the program's writable NUL-terminated template; `at` its X range.
unsafe fn made_as_recorded(
    template: *mut c_char,
    at: &std::ops::Range<usize>,
    made: Made,
) -> Option<c_int> {
    let ld = own_values_ld()?;
    if ld.mode != Mode::Replay {
        return None;
    }
    let bytes = replay::values::take_random(ld, |len| len == 6)?;
    // SAFETY: `at` lies within the template (from `xs`), which is writable.
    let name = unsafe { std::slice::from_raw_parts_mut(template.cast::<u8>().add(at.start), 6) };
    let before: [u8; 6] = name.try_into().ok()?;
    name.copy_from_slice(&bytes);
    // SAFETY: a NUL-terminated path, the program's.
    let r = unsafe {
        match made {
            Made::File(flags) => libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                template,
                (flags & !libc::O_ACCMODE) | libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
                0o600,
            ) as c_int,
            Made::Dir => libc::syscall(libc::SYS_mkdirat, libc::AT_FDCWD, template, 0o700) as c_int,
        }
    };
    if r < 0 && crate::sys::errno() == libc::EEXIST {
        name.copy_from_slice(&before);
        return None;
    }
    crate::record::values::log(ld, &Value::Random { bytes });
    Some(r)
}

/// Record (or a replay that made its own name): logs the name the real call put into the
/// template.
///
/// # Safety
/// As for [`made_as_recorded`], after the real call succeeded.
unsafe fn log_name(template: *mut c_char, at: &std::ops::Range<usize>) {
    let Some(ld) = own_values_ld() else { return };
    // SAFETY: `at` lies within the template.
    let name = unsafe { std::slice::from_raw_parts_mut(template.cast::<u8>().add(at.start), 6) };
    let mut bytes = [0u8; 6];
    bytes.copy_from_slice(name);
    crate::record::values::log(
        ld,
        &Value::Random {
            bytes: bytes.to_vec(),
        },
    );
}

/// Defines a `mkstemp`-family entry point: `$suffix` and `$made` from its arguments; the real
/// function of the same name when the record's name cannot be had.
macro_rules! temp_hook {
    ($(#[$meta:meta])* fn $name:ident(template: *mut c_char $(, $arg:ident: $ty:ty)*) -> $ret:ty,
     suffix: $suffix:expr, made: $made:expr, ok: $ok:expr, from: $from:expr) => {
        $(#[$meta])*
        ///
        /// # Safety
        /// Called by the program in place of libc's, with valid arguments.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(template: *mut c_char $(, $arg: $ty)*) -> $ret {
            static REAL: AtomicUsize = AtomicUsize::new(0);
            let real = resolve(&REAL, concat!(stringify!($name), "\0").as_bytes());
            if real == 0 {
                crate::sys::set_errno(libc::ENOSYS);
                return $from(-1, template);
            }
            type Real = unsafe extern "C" fn(*mut c_char $(, $ty)*) -> $ret;
            // SAFETY: `real` is libc's function of this name, whose signature this is.
            let f = unsafe { std::mem::transmute::<usize, Real>(real) };
            super::keeping_errno(|| {
                let Some(_guard) = Guard::enter() else {
                    // SAFETY: the program's arguments, valid for the real function.
                    return unsafe { f(template $(, $arg)*) };
                };
                // SAFETY: the program's template (a NUL-terminated string).
                let Some(at) = (unsafe { xs(template, $suffix) }) else {
                    // SAFETY: as above.
                    return unsafe { f(template $(, $arg)*) };
                };
                // SAFETY: the program's writable template; `at` within it.
                if let Some(r) = unsafe { made_as_recorded(template, &at, $made) } {
                    return $from(r, template);
                }
                // SAFETY: as above.
                let r = unsafe { f(template $(, $arg)*) };
                let ok: fn(&$ret) -> bool = $ok;
                if ok(&r) {
                    // SAFETY: the template now holds the name the call made.
                    unsafe { log_name(template, &at) };
                }
                r
            })
        }
    };
}

/// A file descriptor as returned.
fn fd_result(r: c_int, _template: *mut c_char) -> c_int {
    r
}

/// mkdtemp's result: the template, or null.
fn dir_result(r: c_int, template: *mut c_char) -> *mut c_char {
    if r < 0 {
        std::ptr::null_mut()
    } else {
        template
    }
}

temp_hook! {
    /// mkstemp(3).
    fn mkstemp(template: *mut c_char) -> c_int,
    suffix: 0, made: Made::File(0), ok: |r| *r >= 0, from: fd_result
}

temp_hook! {
    /// mkstemp64(3).
    fn mkstemp64(template: *mut c_char) -> c_int,
    suffix: 0, made: Made::File(0), ok: |r| *r >= 0, from: fd_result
}

temp_hook! {
    /// mkostemp(3).
    fn mkostemp(template: *mut c_char, flags: c_int) -> c_int,
    suffix: 0, made: Made::File(flags), ok: |r| *r >= 0, from: fd_result
}

temp_hook! {
    /// mkostemp64(3).
    fn mkostemp64(template: *mut c_char, flags: c_int) -> c_int,
    suffix: 0, made: Made::File(flags), ok: |r| *r >= 0, from: fd_result
}

temp_hook! {
    /// mkstemps(3).
    fn mkstemps(template: *mut c_char, suffixlen: c_int) -> c_int,
    suffix: suffixlen, made: Made::File(0), ok: |r| *r >= 0, from: fd_result
}

temp_hook! {
    /// mkstemps64(3).
    fn mkstemps64(template: *mut c_char, suffixlen: c_int) -> c_int,
    suffix: suffixlen, made: Made::File(0), ok: |r| *r >= 0, from: fd_result
}

temp_hook! {
    /// mkostemps(3).
    fn mkostemps(template: *mut c_char, suffixlen: c_int, flags: c_int) -> c_int,
    suffix: suffixlen, made: Made::File(flags), ok: |r| *r >= 0, from: fd_result
}

temp_hook! {
    /// mkostemps64(3).
    fn mkostemps64(template: *mut c_char, suffixlen: c_int, flags: c_int) -> c_int,
    suffix: suffixlen, made: Made::File(flags), ok: |r| *r >= 0, from: fd_result
}

temp_hook! {
    /// mkdtemp(3).
    fn mkdtemp(template: *mut c_char) -> *mut c_char,
    suffix: 0, made: Made::Dir, ok: |r| !r.is_null(), from: dir_result
}
