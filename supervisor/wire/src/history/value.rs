//! Value records: what a clock or a source of randomness returned to the program.
//!
//! They are not events. An actor's event *k* is still its *k*-th record; a value sits between
//! two events (after event `after`), and nothing that counts, orders or analyses events sees
//! it. Replay hands the program the value the record saw at the same place
//! (`preload/src/replay/values.rs`).
//!
//! Programs read clocks very often (a server's event loop several times a turn), so the lines
//! are short and carry deltas. A line starts with `~`, which no record line does:
//!
//! ```text
//! ~c1=81234567890123   clock_gettime(CLOCK_MONOTONIC), absolute nanoseconds
//! ~c1+5123             the next monotonic read, 5,123 ns after the last one of this history
//! ~c0-12               CLOCK_REALTIME went back 12 ns (a realtime clock may be set back)
//! ~u=1764154321123456  gettimeofday, microseconds since the epoch (then `~u+…`)
//! ~s=1764154321        time(), seconds (then `~s+…`)
//! ~r3fa2…              random bytes (getrandom, getentropy, a read of /dev/urandom), hex
//! ~g17                 signal 17 (SIGCHLD) ran the program's handler during a hooked call
//! ~G10                 signal 10 (SIGUSR1) ran it outside any hooked call (computation)
//! ~g17@3               a SIGCHLD that the end of the image's child number 3 raised
//! ~w3                  a wait with WNOHANG returned the process's child number 3 (~w0: none)
//! ~q=17                ioctl(FIONREAD) said 17 bytes were waiting on a recorded stream
//! ~b=34661             a bind to port 0 got port 34661
//! ~v=10                sigwait (sigwaitinfo, sigtimedwait, a signalfd read) took signal 10
//!                      (~v=0: timed out; ends a signalfd read's list; ~v=-11: EAGAIN)
//! ~d=111               a datagram socket's connect failed with errno 111 (~d=0: connected)
//! ~a12                 a write into a shared file (O_APPEND, or standard output or error) was
//!                      that file's 12th write (from 0) by any process of the session
//! ~a12/3               … and 3 reads of the file (`~f` lines) came between it and the write before
//! ~f12                 a read of such a file came after its first 12 writes
//! ~t3                  the events from here on are thread t3's (a process with threads),
//!                      until the next `~t` line or the image's `Exec`
//! ~T3                  the clock and random values from here on are thread t3's (a process
//!                      with threads), until the next `~T` line or the image's `Exec`
//! ~n3:23               thread t3 made fd 23 (socket, open, epoll_create, dup: not events)
//! ~x3:23               thread t3 closed fd 23 (a close that is not an event)
//! ~l4                  a lock on a file (flock, fcntl, lockf) was that file's 4th (from 0)
//! ~l-11                a non-blocking lock on a file was refused (errno 11)
//! ```
//!
//! A signal line is where an asynchronous signal was delivered: replay runs the program's
//! handler in the same gap (`preload/src/replay/signals.rs`).
//!
//! A delta is relative to the last value of the same key *in the file* (an exec'd image keeps
//! appending to its actor's history); a writer that does not know that value (a new image)
//! writes an absolute value first.

use std::fmt;

/// What one value line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `clock_gettime(clock)`: nanoseconds.
    Clock {
        /// The clock id (`CLOCK_REALTIME` 0, `CLOCK_MONOTONIC` 1, …).
        clock: i32,
        /// Seconds × 10⁹ + nanoseconds.
        ns: i64,
    },
    /// `gettimeofday`: microseconds since the epoch.
    TimeOfDay {
        /// Seconds × 10⁶ + microseconds.
        us: i64,
    },
    /// `time()`: seconds since the epoch.
    Time {
        /// Seconds.
        s: i64,
    },
    /// Random bytes: `getrandom`, `getentropy`, a read of `/dev/urandom` or `/dev/random`.
    Random {
        /// The bytes the program got.
        bytes: Vec<u8>,
    },
    /// An asynchronous signal ran the program's handler here.
    Signal {
        /// The signal number.
        sig: i32,
        /// Whether it came during a hooked call (`~g`: a blocking call it interrupted, or the
        /// LD's own work) rather than in the program's computation (`~G`).
        in_call: bool,
        /// A SIGCHLD raised by the end of a child the image forked: its number (as in
        /// `Fork`), so that the analysis knows the delivery needs that child's last event.
        ended: Option<u32>,
        /// A signal that landed in the program's computation, whose handler the record ran at
        /// the program's next hooked call: which entry into a hook since the event before
        /// (`~G15#2`: the third), where replay runs it too. None: it ran where it landed.
        entry: Option<u32>,
    },
    /// A wait with `WNOHANG` returned this child of the image (its number, as in `Fork`), or
    /// nothing yet (0).
    Reaped {
        /// The child's number, 0 for none.
        child: u32,
    },
    /// The program's handler, run inside a hooked call (whose own calls are not events),
    /// closed this channel end (`~h5`): the analysis learns when the process let go of it (a
    /// pipe's readers see its end once every holder has). Replay gives it no value.
    Closed {
        /// The fd it closed.
        fd: i32,
    },
    /// `ioctl(FIONREAD)` (`SIOCINQ`) on a recorded stream socket or pipe: how many bytes were
    /// waiting, as the program was told (libevent sizes its reads with it).
    Waiting {
        /// The count.
        n: i64,
    },
    /// `bind` to port 0 (the kernel chooses): the port it chose. Replay binds to it, so that a
    /// program that prints its port, or passes it to another, shows the record's.
    Bound {
        /// The port.
        port: u16,
    },
    /// A connect of a datagram socket (UDP, Unix): 0, or the errno it failed with (a Unix
    /// datagram socket's server may not have bound its path yet). Replay returns it.
    Linked {
        /// 0 or the errno.
        err: i32,
    },
    /// A signal taken synchronously (`sigwait`, `sigwaitinfo`, `sigtimedwait`): its number,
    /// or 0 when a `sigtimedwait` timed out. Replay waits for that signal alone, so that
    /// signals from several senders are taken in the record's order.
    Taken {
        /// The signal number (0: none came in time).
        sig: i32,
    },
    /// A write into a regular file that several processes may write (opened with O_APPEND, or
    /// a process's standard output or error): how many writes into that file by the
    /// session's processes came before it. Replay makes it wait for them, so that the file's
    /// lines come out in the recorded order.
    Appended {
        /// The write's turn (0: the file's first).
        turn: u64,
        /// The reads of the file ([`Value::ReadAfter`]) made between the write before and
        /// this one: replay makes the write wait for them too, so that they do not see it.
        reads: u64,
        /// The file ([`FileSlot`]); `None` in histories made before files were named.
        file: FileSlot,
    },
    /// A read of a regular file whose writes take turns ([`Value::Appended`]): how many of
    /// those writes came before it. Replay makes the read wait for them, so that a script's
    /// `grep` of a server's log finds every line the record's found.
    ReadAfter {
        /// The count of the file's writes made before the read.
        writes: u64,
        /// The file ([`FileSlot`]).
        file: FileSlot,
    },
    /// In a process with threads: the events after this line are thread `t`'s (`t1` the main
    /// thread, then the threads in their recorded order of creation), until the next such
    /// line; an image starts with `t1` (after an `Exec` too). Replay makes each thread wait
    /// for the events before its own.
    Thread {
        /// The thread's logical id.
        t: u32,
    },
    /// In a process with threads: the clock reads and random bytes after this line are thread
    /// `t`'s, until the next such line (an image's values before its first one are its
    /// main thread's). Replay hands each thread its own, resynchronised at its own events.
    ValuesOf {
        /// The thread's logical id.
        t: u32,
    },
    /// In a process with threads: thread `t` made fd `fd` with a call that is not an event
    /// (`socket`, `open`, `epoll_create`, `dup`). The kernel gives the lowest free number, which
    /// depends on what the other threads opened and closed meanwhile; replay moves the fd onto
    /// the recorded number, so that the events after it name the same fds.
    Opened {
        /// The thread's logical id.
        t: u32,
        /// The fd it got.
        fd: i32,
    },
    /// In a process with threads: thread `t` closed fd `fd`, not as an event; the number it
    /// frees is the next [`Value::Opened`]'s, so replay makes it at its recorded place too.
    Freed {
        /// The thread's logical id.
        t: u32,
        /// The fd it closed.
        fd: i32,
    },
    /// A lock on a regular file (`flock`, `fcntl`'s record locks, `lockf`): its turn among the
    /// session's locks on that file, or the errno of a non-blocking one that was refused.
    /// Replay takes each in the recorded order, so that what the processes then read from the
    /// file is what they read in the record.
    Locked {
        /// The lock's turn (0: the file's first), or `Err(errno)`: refused.
        turn: Result<u64, i32>,
        /// The file ([`FileSlot`]; `None` for a refused lock, which waits for nothing).
        file: FileSlot,
    },
}

/// Which file a turn ([`Value::Appended`], [`Value::ReadAfter`], [`Value::Locked`]) counts in:
/// its entry in the table of shared files the record's processes shared, the same number in
/// every history of one recording (written `#5` after the value: `~a12/3#5`, `~f13#5`). A
/// halting replay reads from it which process's write a read waited for. `None`: not said
/// (a history made before files were named).
pub type FileSlot = Option<u32>;

/// Which call a value answers: replay gives a read the next recorded value of its own key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueKey {
    /// `clock_gettime` of this clock.
    Clock(i32),
    /// `gettimeofday`.
    TimeOfDay,
    /// `time`.
    Time,
    /// Randomness.
    Random,
    /// A signal's delivery.
    Signal,
    /// A non-blocking wait's outcome.
    Reaped,
    /// A close made by a handler inside a hooked call.
    Closed,
    /// What `FIONREAD` said.
    Waiting,
    /// The port a bind to port 0 got.
    Bound,
    /// A signal taken by sigwait and friends.
    Taken,
    /// A datagram socket's connect.
    Linked,
    /// A shared file's write turn.
    Appended,
    /// The writes a read of a shared file came after.
    ReadAfter,
    /// Whose events follow.
    Thread,
    /// Whose clock and random values follow.
    ValuesOf,
    /// An fd a thread made.
    Opened,
    /// An fd a thread closed.
    Freed,
    /// A file lock's turn.
    Locked,
}

/// How many keys have a delta base: clocks 0 to 15, gettimeofday, time.
const SLOTS: usize = 18;
/// [`SLOTS`], for others' tables.
pub const SLOT_COUNT: usize = SLOTS;

fn slot(key: ValueKey) -> Option<usize> {
    match key {
        ValueKey::Clock(c) if (0..16).contains(&c) => Some(c as usize),
        ValueKey::TimeOfDay => Some(16),
        ValueKey::Time => Some(17),
        _ => None,
    }
}

/// The last value of each key, on one side of the file (writer or reader): what deltas are
/// relative to.
#[derive(Debug, Clone, Copy, Default)]
pub struct Deltas {
    last: [Option<i64>; SLOTS],
}

impl Deltas {
    /// No value seen yet.
    pub const fn new() -> Deltas {
        Deltas {
            last: [None; SLOTS],
        }
    }

    /// The delta slot of `key` (`None`: always written whole), for whoever keeps per-key
    /// state next to these (below [`SLOT_COUNT`]).
    pub fn slot(key: ValueKey) -> Option<usize> {
        slot(key)
    }

    /// Writes the value line for `value` (without `~`'s line end: no newline) into `out`, and
    /// remembers the value. Allocation-free.
    pub fn write<W: fmt::Write>(&mut self, out: &mut W, value: &Value) -> fmt::Result {
        let tag = |out: &mut W| -> fmt::Result {
            match value.key() {
                ValueKey::Clock(c) => write!(out, "~c{c}"),
                ValueKey::TimeOfDay => out.write_str("~u"),
                ValueKey::Time => out.write_str("~s"),
                ValueKey::Random => out.write_str("~r"),
                ValueKey::Waiting => out.write_str("~q"),
                ValueKey::Bound => out.write_str("~b"),
                ValueKey::Taken => out.write_str("~v"),
                ValueKey::Linked => out.write_str("~d"),
                ValueKey::Signal
                | ValueKey::Reaped
                | ValueKey::Closed
                | ValueKey::Appended
                | ValueKey::ReadAfter
                | ValueKey::Thread
                | ValueKey::ValuesOf
                | ValueKey::Opened
                | ValueKey::Freed
                | ValueKey::Locked => Ok(()),
            }
        };
        if let Value::Signal {
            sig,
            in_call,
            ended,
            entry,
        } = value
        {
            let tag = if *in_call { 'g' } else { 'G' };
            write!(out, "~{tag}{sig}")?;
            if let Some(pid) = ended {
                write!(out, "@{pid}")?;
            }
            return entry.map_or(Ok(()), |entry| write!(out, "#{entry}"));
        }
        if let Value::Reaped { child } = value {
            return write!(out, "~w{child}");
        }
        if let Value::Closed { fd } = value {
            return write!(out, "~h{fd}");
        }
        if let Value::Appended { turn, reads, file } = value {
            write!(out, "~a{turn}")?;
            if *reads > 0 {
                write!(out, "/{reads}")?;
            }
            return write_file(out, *file);
        }
        if let Value::ReadAfter { writes, file } = value {
            write!(out, "~f{writes}")?;
            return write_file(out, *file);
        }
        if let Value::Locked { turn, file } = value {
            match turn {
                Ok(turn) => write!(out, "~l{turn}")?,
                Err(errno) => write!(out, "~l-{errno}")?,
            }
            return write_file(out, *file);
        }
        if let Value::Thread { t } = value {
            return write!(out, "~t{t}");
        }
        if let Value::ValuesOf { t } = value {
            return write!(out, "~T{t}");
        }
        if let Value::Opened { t, fd } | Value::Freed { t, fd } = value {
            let tag = if value.key() == ValueKey::Opened {
                'n'
            } else {
                'x'
            };
            return write!(out, "~{tag}{t}:{fd}");
        }
        tag(out)?;
        if let Value::Random { bytes } = value {
            for b in bytes {
                write!(out, "{b:02x}")?;
            }
            return Ok(());
        }
        let n = value.number();
        match slot(value.key()) {
            Some(i) => {
                let written = match self.last[i] {
                    Some(prev) => match n.checked_sub(prev) {
                        Some(d) if d >= 0 => write!(out, "+{d}"),
                        Some(d) => write!(out, "{d}"),
                        None => write!(out, "={n}"),
                    },
                    None => write!(out, "={n}"),
                };
                self.last[i] = Some(n);
                written
            }
            None => write!(out, "={n}"),
        }
    }

    /// [`Deltas::write`] for a numeric value, into `out` without `fmt` (a clock read is on a
    /// server's hot path): the line's length, or `None` (nothing remembered) when it does not
    /// fit or the value is random bytes. Writes exactly what `write` writes.
    pub fn write_number(&mut self, out: &mut [u8], value: &Value) -> Option<usize> {
        let key = value.key();
        let mut len = 0;
        let mut put = |bytes: &[u8], len: &mut usize| -> Option<()> {
            out.get_mut(*len..*len + bytes.len())?
                .copy_from_slice(bytes);
            *len += bytes.len();
            Some(())
        };
        let mut digits = [0u8; 24];
        match key {
            ValueKey::Clock(c) => {
                put(b"~c", &mut len)?;
                put(decimal(i64::from(c), &mut digits), &mut len)?;
            }
            ValueKey::TimeOfDay => put(b"~u", &mut len)?,
            ValueKey::Time => put(b"~s", &mut len)?,
            ValueKey::Waiting => put(b"~q", &mut len)?,
            ValueKey::Bound => put(b"~b", &mut len)?,
            ValueKey::Taken => put(b"~v", &mut len)?,
            ValueKey::Linked => put(b"~d", &mut len)?,
            ValueKey::Random
            | ValueKey::Signal
            | ValueKey::Reaped
            | ValueKey::Closed
            | ValueKey::Appended
            | ValueKey::ReadAfter
            | ValueKey::Thread
            | ValueKey::ValuesOf
            | ValueKey::Opened
            | ValueKey::Freed
            | ValueKey::Locked => {
                return None;
            }
        }
        let n = value.number();
        let slot = slot(key);
        let delta = slot
            .and_then(|i| self.last[i])
            .and_then(|prev| n.checked_sub(prev));
        match delta {
            Some(d) if d >= 0 => {
                put(b"+", &mut len)?;
                put(decimal(d, &mut digits), &mut len)?;
            }
            Some(d) => put(decimal(d, &mut digits), &mut len)?,
            None => {
                put(b"=", &mut len)?;
                put(decimal(n, &mut digits), &mut len)?;
            }
        }
        if let Some(i) = slot {
            self.last[i] = Some(n);
        }
        Some(len)
    }

    /// Parses a value line (starting with `~`), against the values before it in the file.
    pub fn parse(&mut self, line: &str) -> Result<Value, String> {
        let rest = line
            .strip_prefix('~')
            .ok_or_else(|| format!("expected a value line starting with `~`, found `{line}`"))?;
        let expected =
            "a value line such as `~c1+5123`, `~u=1764154321123456`, `~s=1764154321` or `~r3fa2`";
        let bad = || format!("expected {expected}, found `~{rest}`");
        let (key, number) = match rest.as_bytes().first() {
            Some(b'r') => {
                let hex = &rest[1..];
                if hex.len() % 2 != 0 {
                    return Err(bad());
                }
                let bytes = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(bad)?;
                return Ok(Value::Random { bytes });
            }
            Some(b'c') => {
                // A dynamic clock's id is negative: its sign is not the delta's.
                let from = if rest[1..].starts_with('-') { 2 } else { 1 };
                let end = rest
                    .get(from..)
                    .and_then(|r| r.find(['=', '+', '-']))
                    .map(|i| i + from)
                    .ok_or_else(bad)?;
                let clock: i32 = rest[1..end].parse().map_err(|_| bad())?;
                (ValueKey::Clock(clock), &rest[end..])
            }
            Some(tag @ (b'g' | b'G')) => {
                let (body, entry) = match rest[1..].split_once('#') {
                    Some((body, n)) => (body, Some(n.parse::<u32>().map_err(|_| bad())?)),
                    None => (&rest[1..], None),
                };
                let (sig, ended) = match body.split_once('@') {
                    Some((sig, kid)) => (sig, Some(kid.parse::<u32>().map_err(|_| bad())?)),
                    None => (body, None),
                };
                let sig: i32 = sig.parse().map_err(|_| bad())?;
                if !(1..=64).contains(&sig) {
                    return Err(format!(
                        "expected a signal number from 1 to 64, found `~{rest}`"
                    ));
                }
                return Ok(Value::Signal {
                    sig,
                    in_call: *tag == b'g',
                    ended,
                    entry,
                });
            }
            Some(b'w') => {
                let child: u32 = rest[1..].parse().map_err(|_| bad())?;
                return Ok(Value::Reaped { child });
            }
            Some(b'h') => {
                let fd: i32 = rest[1..].parse().map_err(|_| bad())?;
                return Ok(Value::Closed { fd });
            }
            Some(b'a' | b'f' | b'l') => return turn_value(rest).ok_or_else(bad),
            Some(b't' | b'T' | b'n' | b'x') => return thread_value(rest).ok_or_else(bad)?,
            Some(b'u') => (ValueKey::TimeOfDay, &rest[1..]),
            Some(b's') => (ValueKey::Time, &rest[1..]),
            Some(b'q') => (ValueKey::Waiting, &rest[1..]),
            Some(b'b') => (ValueKey::Bound, &rest[1..]),
            Some(b'v') => (ValueKey::Taken, &rest[1..]),
            Some(b'd') => (ValueKey::Linked, &rest[1..]),
            _ => return Err(bad()),
        };
        let (absolute, digits) = match number.as_bytes().first() {
            Some(b'=') => (true, &number[1..]),
            Some(b'+') => (false, &number[1..]),
            Some(b'-') => (false, number),
            _ => return Err(bad()),
        };
        let n: i64 = digits.parse().map_err(|_| bad())?;
        let slot = slot(key);
        let value = if absolute {
            n
        } else {
            let prev = slot.and_then(|i| self.last[i]).ok_or_else(|| {
                format!("a delta (`~{rest}`) with no earlier value of its kind in this history")
            })?;
            prev.checked_add(n).ok_or_else(bad)?
        };
        if let Some(i) = slot {
            self.last[i] = Some(value);
        }
        Ok(Value::numeric(key, value))
    }
}

#[path = "value_names.rs"]
mod names;
pub use names::key_name;
use names::{thread_value, turn_value, write_file};

#[path = "value_numbers.rs"]
mod numbers;

#[path = "value_decimal.rs"]
mod decimal;
use decimal::decimal;
pub(crate) use decimal::unsigned_decimal;

#[cfg(test)]
#[path = "value_tests.rs"]
mod tests;
