//! Names of value keys, for listings (`ddbx show`), and the parsers of the value lines that
//! carry more than a number.

use super::{Value, ValueKey};

/// A short name for a key, for listings: `monotonic`, `realtime`, `gettimeofday`, ….
pub fn key_name(key: ValueKey) -> String {
    match key {
        ValueKey::Clock(0) => "realtime".into(),
        ValueKey::Clock(1) => "monotonic".into(),
        ValueKey::Clock(2) => "process cputime".into(),
        ValueKey::Clock(3) => "thread cputime".into(),
        ValueKey::Clock(4) => "monotonic raw".into(),
        ValueKey::Clock(5) => "realtime coarse".into(),
        ValueKey::Clock(6) => "monotonic coarse".into(),
        ValueKey::Clock(7) => "boottime".into(),
        ValueKey::Clock(c) => format!("clock {c}"),
        ValueKey::TimeOfDay => "gettimeofday".into(),
        ValueKey::Time => "time".into(),
        ValueKey::Random => "random".into(),
        ValueKey::Signal => "signal".into(),
        ValueKey::Reaped => "non-blocking wait".into(),
        ValueKey::Closed => "close in a handler".into(),
        ValueKey::Waiting => "bytes waiting (FIONREAD)".into(),
        ValueKey::Appended => "write turn in a shared file".into(),
        ValueKey::ReadAfter => "read of a shared file after its writes".into(),
        ValueKey::Thread => "thread".into(),
        ValueKey::Opened => "fd made by a thread".into(),
        ValueKey::Freed => "fd closed by a thread".into(),
        ValueKey::Locked => "lock on a shared file".into(),
    }
}

/// A thread's value line without its `~`: `t3` (whose events follow), `n3:23` (thread 3 made
/// fd 23), `x3:23` (thread 3 closed fd 23). `None`: not one of those shapes; `Some(Err)`: a
/// thread id 0 or a negative fd.
pub(super) fn thread_value(rest: &str) -> Option<Result<Value, String>> {
    let out_of_range = || {
        Err(format!(
            "expected a thread id from 1 up and an fd from 0 up, found `~{rest}`"
        ))
    };
    if let Some(t) = rest.strip_prefix('t') {
        let t: u32 = t.parse().ok()?;
        return Some(if t == 0 {
            out_of_range()
        } else {
            Ok(Value::Thread { t })
        });
    }
    let closes = rest.starts_with('x');
    let (t, fd) = rest.get(1..)?.split_once(':')?;
    let (t, fd): (u32, i32) = (t.parse().ok()?, fd.parse().ok()?);
    Some(if t == 0 || fd < 0 {
        out_of_range()
    } else if closes {
        Ok(Value::Freed { t, fd })
    } else {
        Ok(Value::Opened { t, fd })
    })
}

/// A lock's value line after its `~l`: `4` (its turn) or `-11` (refused with errno 11).
pub(super) fn lock_value(rest: &str) -> Option<Value> {
    let turn = match rest.strip_prefix('-') {
        Some(errno) => Err(errno.parse::<i32>().ok()?),
        None => Ok(rest.parse::<u64>().ok()?),
    };
    Some(Value::Locked { turn })
}
