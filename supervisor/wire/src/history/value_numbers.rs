//! Each value's key and number: what the delta-coded lines carry.

use super::{Value, ValueKey};

impl ValueKey {
    /// Whether values of this key belong to the thread whose call they answer, in a process
    /// with threads ([`Value::ValuesOf`]): clocks and randomness, which any thread reads as it
    /// goes, and the outcomes of its calls that are not events (a shared file's turns, a
    /// bind's port, `FIONREAD`, a datagram connect, a sigwait). The others (signals, waits
    /// for children, the thread and fd lines) belong to the process.
    pub fn by_thread(self) -> bool {
        matches!(
            self,
            ValueKey::Clock(_)
                | ValueKey::TimeOfDay
                | ValueKey::Time
                | ValueKey::Random
                | ValueKey::Waiting
                | ValueKey::Bound
                | ValueKey::Linked
                | ValueKey::Taken
                | ValueKey::Appended
                | ValueKey::ReadAfter
                | ValueKey::Locked
        )
    }
}

impl Value {
    /// The call this value answers.
    pub fn key(&self) -> ValueKey {
        match self {
            Value::Clock { clock, .. } => ValueKey::Clock(*clock),
            Value::TimeOfDay { .. } => ValueKey::TimeOfDay,
            Value::Time { .. } => ValueKey::Time,
            Value::Random { .. } => ValueKey::Random,
            Value::Signal { .. } => ValueKey::Signal,
            Value::Reaped { .. } => ValueKey::Reaped,
            Value::Closed { .. } => ValueKey::Closed,
            Value::Waiting { .. } => ValueKey::Waiting,
            Value::Bound { .. } => ValueKey::Bound,
            Value::Taken { .. } => ValueKey::Taken,
            Value::Linked { .. } => ValueKey::Linked,
            Value::Appended { .. } => ValueKey::Appended,
            Value::ReadAfter { .. } => ValueKey::ReadAfter,
            Value::Thread { .. } => ValueKey::Thread,
            Value::ValuesOf { .. } => ValueKey::ValuesOf,
            Value::Opened { .. } => ValueKey::Opened,
            Value::Freed { .. } => ValueKey::Freed,
            Value::Locked { .. } => ValueKey::Locked,
        }
    }

    /// The numeric value (0 for random bytes, the number for a signal).
    pub fn number(&self) -> i64 {
        match self {
            Value::Clock { ns, .. } => *ns,
            Value::TimeOfDay { us } => *us,
            Value::Time { s } => *s,
            Value::Random { .. } => 0,
            Value::Signal { sig, .. } => i64::from(*sig),
            Value::Reaped { child } => i64::from(*child),
            Value::Closed { fd } => i64::from(*fd),
            Value::Waiting { n } => *n,
            Value::Bound { port } => i64::from(*port),
            Value::Taken { sig } => i64::from(*sig),
            Value::Linked { err } => i64::from(*err),
            Value::Appended { turn, .. } => i64::try_from(*turn).unwrap_or(i64::MAX),
            Value::ReadAfter { writes, .. } => i64::try_from(*writes).unwrap_or(i64::MAX),
            Value::Thread { t } | Value::ValuesOf { t } => i64::from(*t),
            Value::Opened { fd, .. } | Value::Freed { fd, .. } => i64::from(*fd),
            Value::Locked { turn, .. } => match turn {
                Ok(turn) => i64::try_from(*turn).unwrap_or(i64::MAX),
                Err(errno) => -i64::from(*errno),
            },
        }
    }

    /// A value of key `key` with number `n` (not for [`ValueKey::Random`] or
    /// [`ValueKey::Signal`]).
    pub fn numeric(key: ValueKey, n: i64) -> Value {
        match key {
            ValueKey::Clock(clock) => Value::Clock { clock, ns: n },
            ValueKey::TimeOfDay => Value::TimeOfDay { us: n },
            ValueKey::Reaped => Value::Reaped {
                child: u32::try_from(n).unwrap_or(0),
            },
            ValueKey::Closed => Value::Closed {
                fd: i32::try_from(n).unwrap_or(-1),
            },
            ValueKey::Waiting => Value::Waiting { n },
            ValueKey::Bound => Value::Bound {
                port: u16::try_from(n).unwrap_or(0),
            },
            ValueKey::Taken => Value::Taken {
                sig: i32::try_from(n).unwrap_or(0),
            },
            ValueKey::Linked => Value::Linked {
                err: i32::try_from(n).unwrap_or(0),
            },
            ValueKey::Appended => Value::Appended {
                turn: u64::try_from(n).unwrap_or(0),
                reads: 0,
                file: None,
            },
            ValueKey::ReadAfter => Value::ReadAfter {
                writes: u64::try_from(n).unwrap_or(0),
                file: None,
            },
            ValueKey::Thread => Value::Thread {
                t: u32::try_from(n).unwrap_or(1),
            },
            ValueKey::ValuesOf => Value::ValuesOf {
                t: u32::try_from(n).unwrap_or(1),
            },
            ValueKey::Opened => Value::Opened {
                t: 1,
                fd: i32::try_from(n).unwrap_or(-1),
            },
            ValueKey::Freed => Value::Freed {
                t: 1,
                fd: i32::try_from(n).unwrap_or(-1),
            },
            ValueKey::Locked => Value::Locked {
                turn: u64::try_from(n).map_err(|_| i32::try_from(-n).unwrap_or(0)),
                file: None,
            },
            ValueKey::Time | ValueKey::Random | ValueKey::Signal => Value::Time { s: n },
        }
    }
}
