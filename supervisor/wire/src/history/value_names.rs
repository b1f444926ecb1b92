//! Names of value keys, for listings (`ddbx show`), and the parsers of the value lines that
//! carry more than a number.

use super::{FileSlot, Value, ValueKey};

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
        ValueKey::Bound => "port chosen at a bind".into(),
        ValueKey::Taken => "signal taken by sigwait".into(),
        ValueKey::Linked => "datagram socket's connect".into(),
        ValueKey::Appended => "write turn in a shared file".into(),
        ValueKey::ReadAfter => "read of a shared file after its writes".into(),
        ValueKey::Thread => "thread".into(),
        ValueKey::ValuesOf => "thread of the values".into(),
        ValueKey::Opened => "fd made by a thread".into(),
        ValueKey::Freed => "fd closed by a thread".into(),
        ValueKey::Locked => "lock on a shared file".into(),
    }
}

/// A thread's value line without its `~`: `t3` (whose events follow), `T3` (whose values
/// follow), `n3:23` (thread 3 made
/// fd 23), `x3:23` (thread 3 closed fd 23). `None`: not one of those shapes; `Some(Err)`: a
/// thread id 0 or a negative fd.
pub(super) fn thread_value(rest: &str) -> Option<Result<Value, String>> {
    let out_of_range = || {
        Err(format!(
            "expected a thread id from 1 up and an fd from 0 up, found `~{rest}`"
        ))
    };
    if let Some(t) = rest.strip_prefix(['t', 'T']) {
        let t: u32 = t.parse().ok()?;
        return Some(if t == 0 {
            out_of_range()
        } else if rest.starts_with('T') {
            Ok(Value::ValuesOf { t })
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

/// A turn's value line without its `~`: `a12/3#5` (a write), `f13#5` (a read), `l4#5` or `l-11`
/// (a lock); the file (`#5`) may be missing. `None`: not one of those shapes.
pub(super) fn turn_value(rest: &str) -> Option<Value> {
    let (number, file) = match rest.get(1..)?.split_once('#') {
        Some((n, file)) => (n, Some(file.parse::<u32>().ok()?)),
        None => (rest.get(1..)?, None),
    };
    match rest.as_bytes().first()? {
        b'a' => {
            let (turn, reads) = number.split_once('/').unwrap_or((number, "0"));
            Some(Value::Appended {
                turn: turn.parse().ok()?,
                reads: reads.parse().ok()?,
                file,
            })
        }
        b'f' => Some(Value::ReadAfter {
            writes: number.parse().ok()?,
            file,
        }),
        _ => {
            let turn = match number.strip_prefix('-') {
                Some(errno) => Err(errno.parse::<i32>().ok()?),
                None => Ok(number.parse::<u64>().ok()?),
            };
            Some(Value::Locked { turn, file })
        }
    }
}

/// A turn's file, as its line ends (`#5`; nothing when not said).
pub(super) fn write_file<W: std::fmt::Write>(out: &mut W, file: FileSlot) -> std::fmt::Result {
    match file {
        Some(file) => write!(out, "#{file}"),
        None => Ok(()),
    }
}
