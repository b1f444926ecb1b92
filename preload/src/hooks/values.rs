//! Clocks and randomness: `clock_gettime`, `gettimeofday`, `time`, `getrandom`, `getentropy`
//! (reads of `/dev/urandom` go through `io.rs`). What they return is a value record, not an
//! event (`ddbx_wire::history::value`): record logs it, replay hands back the recorded one.
//!
//! These hooks never start the LD: allocators and the dynamic loader read the clock and ask
//! for random bytes while the process starts, before the LD can run (starting it from there
//! deadlocked a program under record). Until the LD runs, and whenever the guard is held, a
//! hook calls the real function, or the system call itself while the real function is not
//! resolved yet (resolving it means `dlsym`, which may allocate).

use crate::guard::Guard;
use crate::ld::{self, Ld};
use crate::real;
use crate::{record, replay};
use ddbx_wire::history::value::{Value, ValueKey};
use ddbx_wire::proto::Mode;
use libc::{c_int, c_uint, c_void, clockid_t, size_t, ssize_t, time_t, timespec, timeval};
use std::sync::atomic::Ordering;

/// The LD, when this thread's values are recorded or replayed; `None`: pass through.
pub fn values_ld() -> Option<&'static mut Ld> {
    let ld = ld::running()?;
    if ld.trace.is_some() || !ld.values_thread() {
        return None;
    }
    // The value lines wait in one buffer: with threads ordered, another thread may be
    // writing its own there (a worker's clock read), so this thread takes the baton first.
    // (Without it, a bind's `~b` line and a worker's line were once written over each other.)
    if ld.threads_ordered() {
        crate::baton::take(crate::guard::depth());
    }
    Some(ld)
}

/// [`values_ld`] for clock reads and random bytes, which in a process whose threads are
/// ordered are every thread's, one thread at a time (the baton), each thread's its own
/// (`record::values::log`).
pub fn own_values_ld() -> Option<&'static mut Ld> {
    let ld = ld::running()?;
    if ld.threads_ordered() {
        crate::baton::take(crate::guard::depth());
        return Some(ld);
    }
    values_ld()
}

fn resolved(slot: &std::sync::atomic::AtomicUsize) -> bool {
    slot.load(Ordering::Relaxed) != 0
}

/// The real clock_gettime.
///
/// # Safety
/// `tp` valid for writing a timespec (or null: the kernel reports EFAULT).
unsafe fn real_clock_gettime(clock: clockid_t, tp: *mut timespec) -> c_int {
    if resolved(&real::slot::clock_gettime) {
        // SAFETY: as the caller promises.
        return unsafe { real::clock_gettime(clock, tp) };
    }
    // SAFETY: the system call checks its arguments.
    let r = unsafe { libc::syscall(libc::SYS_clock_gettime, clock, tp) };
    r as c_int
}

/// # Safety
/// As gettimeofday(2).
unsafe fn real_gettimeofday(tv: *mut timeval, tz: *mut c_void) -> c_int {
    if resolved(&real::slot::gettimeofday) {
        // SAFETY: as the caller promises.
        return unsafe { real::gettimeofday(tv, tz) };
    }
    // SAFETY: the system call checks its arguments.
    unsafe { libc::syscall(libc::SYS_gettimeofday, tv, tz) as c_int }
}

/// # Safety
/// As time(2).
unsafe fn real_time(t: *mut time_t) -> time_t {
    if resolved(&real::slot::time) {
        // SAFETY: as the caller promises.
        return unsafe { real::time(t) };
    }
    // SAFETY: the system call checks its argument.
    unsafe { libc::syscall(libc::SYS_time, t) as time_t }
}

/// # Safety
/// As getrandom(2).
unsafe fn real_getrandom(buf: *mut c_void, n: size_t, flags: c_uint) -> ssize_t {
    if resolved(&real::slot::getrandom) {
        // SAFETY: as the caller promises.
        return unsafe { real::getrandom(buf, n, flags) };
    }
    // SAFETY: the system call checks its arguments.
    unsafe { libc::syscall(libc::SYS_getrandom, buf, n, flags) as ssize_t }
}

/// # Safety
/// As getentropy(3).
unsafe fn real_getentropy(buf: *mut c_void, n: size_t) -> c_int {
    if resolved(&real::slot::getentropy) {
        // SAFETY: as the caller promises.
        return unsafe { real::getentropy(buf, n) };
    }
    if n > 256 {
        crate::sys::set_errno(libc::EIO);
        return -1;
    }
    let mut done = 0;
    while done < n {
        // SAFETY: `buf + done .. buf + n` is the caller's buffer.
        let r = unsafe { real_getrandom(buf.cast::<u8>().add(done).cast(), n - done, 0) };
        if r < 0 {
            if crate::sys::errno() == libc::EINTR {
                continue;
            }
            return -1;
        }
        done += r as usize;
    }
    0
}

/// A numeric value `real` just read for `key`: record logs it, replay returns the recorded one.
fn number(ld: &mut Ld, key: ValueKey, real: i64) -> i64 {
    match ld.mode {
        Mode::Record => {
            record::values::log(ld, &Value::numeric(key, real));
            real
        }
        Mode::Replay => replay::values::number(ld, key, real),
    }
}

const NS: i64 = 1_000_000_000;

/// The body of a clock read's or a random draw's hook: errno kept, and a signal that lands in
/// it taken as landing in the program's computation (`crate::replay::kept::instant`).
fn value_call<R: super::Outcome>(f: impl FnOnce() -> R) -> R {
    super::keeping_errno(|| replay::kept::instant(f))
}

/// clock_gettime(2).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clock_gettime(clock: clockid_t, tp: *mut timespec) -> c_int {
    value_call(|| {
        let Some(_guard) = Guard::enter() else {
            // SAFETY: the program's arguments, valid for the real function.
            return unsafe { real_clock_gettime(clock, tp) };
        };
        // SAFETY: the program's arguments, valid for the real function.
        let r = unsafe { real_clock_gettime(clock, tp) };
        if r != 0 || tp.is_null() {
            return r;
        }
        let Some(ld) = own_values_ld() else { return r };
        // SAFETY: the real call just filled `*tp`.
        let ts = unsafe { &mut *tp };
        let real = ts.tv_sec.saturating_mul(NS).saturating_add(ts.tv_nsec);
        let ns = number(ld, ValueKey::Clock(clock), real);
        ts.tv_sec = ns.div_euclid(NS);
        ts.tv_nsec = ns.rem_euclid(NS);
        r
    })
}

/// clock(3): glibc's reads `CLOCK_PROCESS_CPUTIME_ID` inside libc, past the clock_gettime
/// hook. The processor time is a value of that clock (`~c2`), returned in µs as clock()
/// counts it.
///
/// # Safety
/// Called by the program in place of libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clock() -> libc::clock_t {
    value_call(|| {
        // SAFETY: all-zero is a valid timespec, for the call to fill.
        let mut ts: timespec = unsafe { std::mem::zeroed() };
        // SAFETY: our own timespec.
        if unsafe { real_clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } != 0 {
            return -1;
        }
        let real = ts.tv_sec.saturating_mul(NS).saturating_add(ts.tv_nsec);
        let Some(_guard) = Guard::enter() else {
            return real / 1000;
        };
        let Some(ld) = own_values_ld() else {
            return real / 1000;
        };
        number(ld, ValueKey::Clock(libc::CLOCK_PROCESS_CPUTIME_ID), real) / 1000
    })
}

/// clock_nanosleep(2). A sleep until an absolute time of a replayed clock: the program
/// computed its deadline from the clock it was shown, the record's, which runs behind (or
/// ahead of) the real one. The deadline moves by that difference, so the sleep lasts as long
/// as the program meant (Python's `time.sleep` sleeps so: gunicorn's arbiter, sleeping 0.1 s
/// at a time while its workers stopped, spun for 30 s, every sleep over at once).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clock_nanosleep(
    clock: clockid_t,
    flags: c_int,
    req: *const timespec,
    rem: *mut timespec,
) -> c_int {
    super::keeping_errno(|| {
        crate::replay::cursor::before_blocking(true);
        let mut moved = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let mut deadline = req;
        if flags & libc::TIMER_ABSTIME != 0 && !req.is_null() {
            let guard = Guard::enter();
            if let (Some(_), Some(ld)) = (&guard, own_values_ld())
                && ld.mode == Mode::Replay
                && let Some(ahead) = replay::values::offset(ld, ValueKey::Clock(clock))
            {
                // SAFETY: the program's timespec (checked non-null).
                let t = unsafe { &*req };
                let ns = t.tv_sec.saturating_mul(NS).saturating_add(t.tv_nsec);
                let real = ns.saturating_sub(ahead);
                moved.tv_sec = real.div_euclid(NS);
                moved.tv_nsec = real.rem_euclid(NS);
                deadline = &moved;
            }
        }
        // The guard is left: a signal that ends the sleep runs where the program sleeps.
        // SAFETY: the program's arguments, `deadline` its own or our copy of it moved.
        unsafe { super::sleep::clock_sleep(clock, flags, deadline, rem) }
    })
}

/// gettimeofday(2).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gettimeofday(tv: *mut timeval, tz: *mut c_void) -> c_int {
    value_call(|| {
        let Some(_guard) = Guard::enter() else {
            // SAFETY: the program's arguments, valid for the real function.
            return unsafe { real_gettimeofday(tv, tz) };
        };
        // SAFETY: the program's arguments, valid for the real function.
        let r = unsafe { real_gettimeofday(tv, tz) };
        if r != 0 || tv.is_null() {
            return r;
        }
        let Some(ld) = own_values_ld() else { return r };
        // SAFETY: the real call just filled `*tv`.
        let t = unsafe { &mut *tv };
        let real = t.tv_sec.saturating_mul(1_000_000).saturating_add(t.tv_usec);
        let us = number(ld, ValueKey::TimeOfDay, real);
        t.tv_sec = us.div_euclid(1_000_000);
        t.tv_usec = us.rem_euclid(1_000_000);
        r
    })
}

/// time(2).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn time(t: *mut time_t) -> time_t {
    value_call(|| {
        let Some(_guard) = Guard::enter() else {
            // SAFETY: the program's arguments, valid for the real function.
            return unsafe { real_time(t) };
        };
        // SAFETY: the program's arguments, valid for the real function.
        let r = unsafe { real_time(t) };
        if r == -1 {
            return r;
        }
        let Some(ld) = own_values_ld() else { return r };
        let s = number(ld, ValueKey::Time, r);
        if !t.is_null() {
            // SAFETY: the program's pointer, which the real call just wrote.
            unsafe { *t = s };
        }
        s
    })
}

/// getrandom(2).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getrandom(buf: *mut c_void, n: size_t, flags: c_uint) -> ssize_t {
    value_call(|| {
        let Some(_guard) = Guard::enter() else {
            // SAFETY: the program's arguments, valid for the real function.
            return unsafe { real_getrandom(buf, n, flags) };
        };
        // SAFETY: the program's arguments, valid for the real function.
        let r = unsafe { real_getrandom(buf, n, flags) };
        if r <= 0 || buf.is_null() {
            return r;
        }
        let Some(ld) = own_values_ld() else { return r };
        // SAFETY: the real call just wrote `r <= n` bytes of the program's buffer; replay may
        // write up to `n`.
        let whole = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n) };
        let got = random_in(ld, whole, r as usize, false);
        got as ssize_t
    })
}

/// getentropy(3).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getentropy(buf: *mut c_void, n: size_t) -> c_int {
    value_call(|| {
        let Some(_guard) = Guard::enter() else {
            // SAFETY: the program's arguments, valid for the real function.
            return unsafe { real_getentropy(buf, n) };
        };
        // SAFETY: the program's arguments, valid for the real function.
        let r = unsafe { real_getentropy(buf, n) };
        if r != 0 || buf.is_null() || n == 0 {
            return r;
        }
        let Some(ld) = own_values_ld() else { return r };
        // SAFETY: the real call just filled the program's `n` bytes.
        let whole = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n) };
        random_in(ld, whole, n, true);
        r
    })
}

/// OpenSSL's `RAND_bytes`/`RAND_priv_bytes` behind ours (`dlsym(RTLD_NEXT)`, resolved at the
/// first call: libcrypto is loaded by then, since its users call it), or 0 if there is none.
fn real_openssl_rand(slot: &std::sync::atomic::AtomicUsize, name: &'static [u8]) -> usize {
    let mut p = slot.load(Ordering::Relaxed);
    if p == 0 {
        // SAFETY: `name` is NUL-terminated; dlsym has no other preconditions.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
        slot.store(p, Ordering::Relaxed);
    }
    p
}

/// OpenSSL's random bytes (`RAND_bytes`, `RAND_priv_bytes`) as values. Its generator mixes the
/// CPU's time stamp counter into every draw, which no hooked call returns, so recording its
/// seeds (getrandom) does not make its output replay: ldns's drill picks DNS query ids with it,
/// TLS its randoms. `None` from `real`: no OpenSSL behind us, the draw fails (returns 0) as
/// OpenSSL's does when it cannot draw.
fn openssl_rand(real: usize, buf: *mut u8, num: c_int) -> c_int {
    if real == 0 {
        return 0;
    }
    // SAFETY: `real` is OpenSSL's function of this name, whose signature this is.
    let f: unsafe extern "C" fn(*mut u8, c_int) -> c_int = unsafe { std::mem::transmute(real) };
    let Some(_guard) = Guard::enter() else {
        // SAFETY: the program's arguments, valid for OpenSSL's function.
        return unsafe { f(buf, num) };
    };
    // SAFETY: as above.
    let r = unsafe { f(buf, num) };
    if r != 1 || buf.is_null() || num <= 0 {
        return r;
    }
    let Some(ld) = own_values_ld() else { return r };
    // SAFETY: OpenSSL just filled the program's `num` bytes.
    let whole = unsafe { std::slice::from_raw_parts_mut(buf, num as usize) };
    random_in(ld, whole, num as usize, true);
    r
}

static REAL_RAND_BYTES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static REAL_RAND_PRIV_BYTES: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// OpenSSL's RAND_bytes(3).
///
/// # Safety
/// Called by the program in place of OpenSSL's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn RAND_bytes(buf: *mut u8, num: c_int) -> c_int {
    openssl_rand(
        real_openssl_rand(&REAL_RAND_BYTES, b"RAND_bytes\0"),
        buf,
        num,
    )
}

/// OpenSSL's RAND_priv_bytes(3).
///
/// # Safety
/// Called by the program in place of OpenSSL's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn RAND_priv_bytes(buf: *mut u8, num: c_int) -> c_int {
    openssl_rand(
        real_openssl_rand(&REAL_RAND_PRIV_BYTES, b"RAND_priv_bytes\0"),
        buf,
        num,
    )
}

/// The first `got` bytes of `whole` (the program's buffer) came from the real call: record
/// logs them; replay puts the recorded bytes there instead and returns their count (at most
/// `whole.len()`; exactly that with `exact`, for getentropy). A read the record did not log
/// keeps the real bytes.
pub fn random_in(ld: &mut Ld, whole: &mut [u8], got: usize, exact: bool) -> usize {
    if ld.mode == Mode::Replay {
        let room = whole.len();
        if let Some(bytes) =
            replay::values::take_random(ld, |len| if exact { len == room } else { len <= room })
        {
            whole[..bytes.len()].copy_from_slice(&bytes);
            let n = bytes.len();
            record::values::log(ld, &Value::Random { bytes });
            return n;
        }
    }
    record::values::log(
        ld,
        &Value::Random {
            bytes: whole[..got].to_vec(),
        },
    );
    got
}
