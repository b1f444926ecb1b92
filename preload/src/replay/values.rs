//! Replay of values: a clock read or a request for random bytes gets what the record's call at
//! the same place returned. The place is the gap between two events: the values logged after
//! event *k* are handed out, in order and by kind (each clock on its own), to the reads the
//! replay makes after its event *k*.
//!
//! The replay may read more or less often than the record did (a loop that reads the clock
//! until a deadline; an exit handler that runs after the last event; a process whose history
//! ended). That never diverges:
//!
//! * **fewer reads** than recorded in a gap: the values left over are dropped when the next
//!   event starts (a read after event *k+1* never gets a value of gap *k*);
//! * **more reads**, or a kind the gap does not have: the real call's value is used, as the
//!   continuation of what the program saw last — the last returned value plus the real time
//!   elapsed since it was returned — so that no clock goes backwards or jumps to the replay's
//!   own date. A recorded value returned after such a read is raised to it if it was lower,
//!   for clocks that never go backwards (everything but the realtime clocks), which the record
//!   guarantees too.
//! * random bytes: a recorded value fits a request for at least as many bytes (exactly as
//!   many for getentropy); otherwise the real bytes are used.

use super::thread_values;
use crate::ld::{Ld, ReplayValues};
use ddbx_wire::history::value::{Deltas, FileSlot, Value, ValueKey};

/// Drops the values of the gaps before the current one.
fn skip_to_gap(values: &mut ReplayValues, gap: u64) {
    while let Some((after, v)) = values.list.get(values.cursor) {
        if *after < gap || v.is_none() {
            values.cursor += 1;
        } else {
            break;
        }
    }
}

/// The first value of key `key` of this gap that `fits`, left in the list.
fn peek(ld: &mut Ld, key: ValueKey, fits: impl Fn(&Value) -> bool) -> Option<Value> {
    if key.by_thread() && thread_values::owned(ld) {
        return thread_values::find(ld, fits, false);
    }
    let gap = ld.events();
    let values = &mut ld.replay.as_mut()?.values;
    skip_to_gap(values, gap);
    values.list[values.cursor..]
        .iter()
        .take_while(|(after, _)| *after == gap)
        .filter_map(|(_, v)| v.as_ref())
        .find(|v| fits(v))
        .cloned()
}

/// The first value of key `key` of this gap that `fits`, taken out of the list (the calling
/// thread's own list, for a key whose values are a thread's: `thread_values`).
fn take(ld: &mut Ld, key: ValueKey, fits: impl Fn(&Value) -> bool) -> Option<Value> {
    if key.by_thread() && thread_values::owned(ld) {
        return thread_values::find(ld, fits, true);
    }
    let gap = ld.events();
    let values = &mut ld.replay.as_mut()?.values;
    skip_to_gap(values, gap);
    let mut i = values.cursor;
    while let Some((after, v)) = values.list.get_mut(i) {
        if *after != gap {
            return None;
        }
        if v.as_ref().is_some_and(&fits) {
            return v.take();
        }
        i += 1;
    }
    None
}

/// Whether this clock can never go backwards.
fn monotonic(key: ValueKey) -> bool {
    // CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_REALTIME_ALARM, CLOCK_TAI, gettimeofday and
    // time can be set back.
    !matches!(
        key,
        ValueKey::Clock(0 | 5 | 8 | 11) | ValueKey::TimeOfDay | ValueKey::Time
    )
}

/// A numeric read of `key` that really returned `real`: what the program gets.
pub fn number(ld: &mut Ld, key: ValueKey, real: i64) -> i64 {
    let recorded = take(ld, key, |v| v.key() == key).map(|v| v.number());
    let clock = matches!(
        key,
        ValueKey::Clock(_) | ValueKey::TimeOfDay | ValueKey::Time
    );
    if clock && recorded.is_some() {
        // A signal the record took in computation after this read runs as it returns.
        crate::signals::clock_taken(ld.events());
        super::signals::after_clock(ld);
    }
    let slot = Deltas::slot(key);
    let last = slot.and_then(|i| ld.replay.as_ref().and_then(|r| r.values.last[i]));
    let value = match (recorded, last) {
        (Some(v), Some((prev, _))) if monotonic(key) => v.max(prev),
        (Some(v), _) => v,
        // Not in the record: continue from what the program saw last.
        (None, Some((prev, real_then))) => {
            prev.saturating_add(real.saturating_sub(real_then).max(0))
        }
        (None, None) => real,
    };
    if let (Some(i), Some(r)) = (slot, ld.replay.as_mut()) {
        r.values.last[i] = Some((value, real));
    }
    ld.log_value(&Value::numeric(key, value));
    value
}

/// How far the clock `key`, as the program is shown it, runs ahead of the real one (in its
/// unit; negative: behind), as of its last read; `None` before the first.
pub fn offset(ld: &Ld, key: ValueKey) -> Option<i64> {
    let (shown, real) = ld.replay.as_ref()?.values.last[Deltas::slot(key)?]?;
    Some(shown.saturating_sub(real))
}

/// The recorded random bytes of this gap whose length `fits`, if any.
pub fn take_random(ld: &mut Ld, fits: impl Fn(usize) -> bool) -> Option<Vec<u8>> {
    let fits = |v: &Value| matches!(v, Value::Random { bytes } if fits(bytes.len()));
    match take(ld, ValueKey::Random, fits)? {
        Value::Random { bytes } => Some(bytes),
        _ => None,
    }
}

/// The port the record's next bind to port 0 in this gap got, if any.
pub fn take_bound(ld: &mut Ld) -> Option<u16> {
    match take(ld, ValueKey::Bound, |v| matches!(v, Value::Bound { .. }))? {
        Value::Bound { port } => Some(port),
        _ => None,
    }
}

/// What the record's next connect of a datagram socket in this gap returned (0 or the errno),
/// if it logged one.
pub fn take_linked(ld: &mut Ld) -> Option<i32> {
    match take(ld, ValueKey::Linked, |v| matches!(v, Value::Linked { .. }))? {
        Value::Linked { err } => Some(err),
        _ => None,
    }
}

/// The signal the record's next sigwait-family call in this gap took (0: it timed out), if
/// any.
pub fn take_taken(ld: &mut Ld) -> Option<i32> {
    match take(ld, ValueKey::Taken, |v| matches!(v, Value::Taken { .. }))? {
        Value::Taken { sig } => Some(sig),
        _ => None,
    }
}

/// The turn the record logged for the next write into a shared file in this gap, if any,
/// with the count of the reads of the file before it and the file's slot.
pub fn take_turn(ld: &mut Ld) -> Option<(u64, u64, FileSlot)> {
    match take(ld, ValueKey::Appended, |v| {
        matches!(v, Value::Appended { .. })
    })? {
        Value::Appended { turn, reads, file } => Some((turn, reads, file)),
        _ => None,
    }
}

/// What the record logged for the next lock on a shared file in this gap, if anything: its
/// turn, or the errno it was refused with; and the file's slot.
pub fn take_lock(ld: &mut Ld) -> Option<(Result<u64, i32>, FileSlot)> {
    match take(ld, ValueKey::Locked, |v| matches!(v, Value::Locked { .. }))? {
        Value::Locked { turn, file } => Some((turn, file)),
        _ => None,
    }
}

/// The count of a shared file's writes the record logged for the next read of such a file
/// in this gap, if any, with the file's slot.
pub fn take_read_after(ld: &mut Ld) -> Option<(u64, FileSlot)> {
    match take(ld, ValueKey::ReadAfter, |v| {
        matches!(v, Value::ReadAfter { .. })
    })? {
        Value::ReadAfter { writes, file } => Some((writes, file)),
        _ => None,
    }
}

/// The turn the record logged for the next write into a shared file in this gap, if any,
/// left for that write, with the file's slot.
pub fn next_turn(ld: &mut Ld) -> Option<(u64, FileSlot)> {
    match peek(ld, ValueKey::Appended, |v| {
        matches!(v, Value::Appended { .. })
    })? {
        Value::Appended { turn, file, .. } => Some((turn, file)),
        _ => None,
    }
}
