//! A process's lock history: per lock object, the sequence of (thread, operation) the record
//! saw (paper 000's per-object access histories; `history/p1.locks` beside `history/p1.ron`).
//!
//! ```text
//! Locks(format: 1, actor: "p1")
//! o0 0 t1 new threads
//! o0 1 t1 create 2
//! o1 0 t2 new mutex
//! o1 1 t2 lock 0
//! o1 2 t3 trylock 16
//! o1 3 t3 lock 0
//! ```
//!
//! A line is `o<object> <index> t<thread> <op> <arg>`: the `index`-th access to the object
//! (its birth, `new`, is access 0); with ` x<count>` after it, the line stands for `count`
//! equal accesses from `index` on (a [`Run`]: a thread taking a mutex again and again). Object 0 is the process's thread table (`create`, `exit`,
//! `join`); objects 1, 2, … are the mutexes, condition variables, semaphores and read-write
//! locks (`rdlock`, `wrlock` and their try and timed forms), numbered in the order the
//! record first touched them, so never by address. A mutex's accesses are its acquisitions
//! and failed attempts (a condition wait's `woke` is an acquisition); unlocks are not written,
//! as in paper 000: the next acquisition's turn orders them. `arg` is the call's result (an errno value,
//! 0 for success; `trylock 16` is EBUSY), the kind for `new`, the thread for `create` and
//! `join`, the mutex for a condition variable's `wait`.
//!
//! Threads append lines as they go, each into a piece of the file it reserved for itself, so
//! lines are not sorted by object; a piece a thread left (full, or at its end) is padded with
//! empty lines, and the pieces of threads still running when the process ended hold NUL bytes
//! after their last line. The reader sorts, and, when the file has such holes, stops an
//! object's history at its first missing index (the accesses after it cannot be ordered: the
//! process was killed while writing); without holes a missing or repeated index is a damaged
//! file.

use crate::ActorId;
use crate::history::HistoryError;
use std::path::Path;

/// The header line's text before the actor.
const HEADER_START: &str = "Locks(format: 1, actor: \"";

/// The header line of a new lock history, with its newline.
pub fn header_line(actor: ActorId) -> String {
    format!("{HEADER_START}{actor}\")\n")
}

/// What a thread did to a lock object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// The object's first touch (access 0); `arg`: its [`Kind`].
    New = 0,
    /// `pthread_mutex_lock`.
    Lock,
    /// `pthread_mutex_trylock` (`arg` 16: EBUSY, the mutex was held).
    TryLock,
    /// `pthread_mutex_timedlock` (`arg` 110: ETIMEDOUT).
    TimedLock,
    /// `pthread_mutex_unlock` (not written by this version: the next acquisition's turn
    /// orders it; readers accept it).
    Unlock,
    /// A condition wait began (on the condition variable; `arg` is the mutex).
    Wait,
    /// A condition wait took the mutex back (`arg` 110: the timed wait timed out).
    Woke,
    /// `pthread_cond_signal`.
    Signal,
    /// `pthread_cond_broadcast`.
    Broadcast,
    /// `pthread_create` (object 0; `arg`: the new thread).
    Create,
    /// The thread ended (object 0).
    Exit,
    /// `pthread_join` returned (object 0; `arg`: the joined thread).
    Join,
    /// `sem_post` (noted before the count goes up, so a wait it ends comes after it).
    Post,
    /// `sem_wait`, `sem_trywait`, `sem_timedwait`, `sem_clockwait` returned (`arg` 0: it took
    /// one; otherwise its errno: 11 EAGAIN, 110 ETIMEDOUT, 4 EINTR).
    Take,
    /// `pthread_rwlock_rdlock`: a read acquisition (several readers may hold the lock).
    RdLock,
    /// `pthread_rwlock_tryrdlock` (`arg` 16: EBUSY, a writer held it).
    TryRdLock,
    /// `pthread_rwlock_timedrdlock` or `clockrdlock` (`arg` 110: ETIMEDOUT).
    TimedRdLock,
    /// `pthread_rwlock_wrlock`: a write acquisition (alone).
    WrLock,
    /// `pthread_rwlock_trywrlock` (`arg` 16: EBUSY).
    TryWrLock,
    /// `pthread_rwlock_timedwrlock` or `clockwrlock` (`arg` 110: ETIMEDOUT).
    TimedWrLock,
}

/// Every [`Op`], in `repr` order, with its name in the file.
const OPS: [(Op, &str); 20] = [
    (Op::New, "new"),
    (Op::Lock, "lock"),
    (Op::TryLock, "trylock"),
    (Op::TimedLock, "timedlock"),
    (Op::Unlock, "unlock"),
    (Op::Wait, "wait"),
    (Op::Woke, "woke"),
    (Op::Signal, "signal"),
    (Op::Broadcast, "broadcast"),
    (Op::Create, "create"),
    (Op::Exit, "exit"),
    (Op::Join, "join"),
    (Op::Post, "post"),
    (Op::Take, "take"),
    (Op::RdLock, "rdlock"),
    (Op::TryRdLock, "tryrdlock"),
    (Op::TimedRdLock, "timedrdlock"),
    (Op::WrLock, "wrlock"),
    (Op::TryWrLock, "trywrlock"),
    (Op::TimedWrLock, "timedwrlock"),
];

/// The longest name in [`OPS`].
const NAME_MAX: usize = 11;

impl Op {
    /// Its name in the file.
    pub fn name(self) -> &'static str {
        OPS[self as usize].1
    }

    /// The op named `name`.
    pub fn from_name(name: &str) -> Option<Op> {
        OPS.iter().find(|(_, n)| *n == name).map(|(op, _)| *op)
    }

    /// The op whose `repr` is `n`.
    pub fn from_u8(n: u8) -> Option<Op> {
        OPS.get(n as usize).map(|(op, _)| *op)
    }
}

/// What kind of object a `new` made (its `arg`).
pub mod kind {
    /// Object 0: the thread table.
    pub const THREADS: u32 = 0;
    /// A `pthread_mutex_t`.
    pub const MUTEX: u32 = 1;
    /// A `pthread_cond_t`.
    pub const COND: u32 = 2;
    /// A `sem_t` (an unnamed POSIX semaphore).
    pub const SEM: u32 = 3;
    /// A `pthread_rwlock_t`.
    pub const RWLOCK: u32 = 4;
    /// Names, by kind.
    pub const NAMES: [&str; 5] = ["threads", "mutex", "cond", "sem", "rwlock"];
}

/// One access to a lock object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The thread (its creation index in the process: 1 is the main thread).
    pub thread: u32,
    /// What it did.
    pub op: Op,
    /// The result, kind, thread or mutex, by op (see the module's text).
    pub arg: u32,
}

impl Access {
    /// How a listing shows it: `t2 lock`, `t3 trylock EBUSY`, `t1 create t2`.
    pub fn describe(&self) -> String {
        let what = match self.op {
            Op::New => kind::NAMES
                .get(self.arg as usize)
                .copied()
                .unwrap_or("?")
                .to_string(),
            Op::Create | Op::Join => format!("t{}", self.arg),
            Op::Wait if self.arg != 0 => format!("o{}", self.arg),
            _ if self.arg == 0 => String::new(),
            _ => crate::Errno(self.arg as i32).to_string(),
        };
        let op = self.op.name();
        if what.is_empty() {
            format!("t{} {op}", self.thread)
        } else {
            format!("t{} {op} {what}", self.thread)
        }
    }
}

/// Writes the line of accesses `index` to `index + count - 1` of `object`, all `a`, into `buf`
/// (at least [`MAX_LINE`] bytes); returns its length. The bytes of `buf` after the line may be
/// overwritten too (with NULs). Allocation-free: the preload formats lines on the hook path.
pub fn write_line(buf: &mut [u8], object: u32, index: u64, a: Access, count: u64) -> usize {
    let mut n = 0;
    buf[n] = b'o';
    n += 1;
    n += write_decimal(&mut buf[n..], object as u64);
    buf[n] = b' ';
    n += 1;
    n += write_decimal(&mut buf[n..], index);
    buf[n..n + 2].copy_from_slice(b" t");
    n += 2;
    n += write_decimal(&mut buf[n..], a.thread as u64);
    buf[n] = b' ';
    n += 1;
    // A fixed-size copy (no call to memcpy on the hook path); the NUL bytes after the name
    // are overwritten by what follows.
    let name = a.op.name().as_bytes();
    let mut padded = [0u8; NAME_MAX];
    padded[..name.len()].copy_from_slice(name);
    buf[n..n + NAME_MAX].copy_from_slice(&padded);
    n += name.len();
    buf[n] = b' ';
    n += 1;
    n += write_decimal(&mut buf[n..], a.arg as u64);
    if count > 1 {
        buf[n..n + 2].copy_from_slice(b" x");
        n += 2;
        n += write_decimal(&mut buf[n..], count);
    }
    buf[n] = b'\n';
    n + 1
}

/// Writes `v` in decimal at the start of `buf`; returns the number of digits.
fn write_decimal(buf: &mut [u8], v: u64) -> usize {
    let digits = if v == 0 { 1 } else { v.ilog10() as usize + 1 };
    let mut v = v;
    for i in (0..digits).rev() {
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    digits
}

/// The longest line [`write_line`] writes.
pub const MAX_LINE: usize = 1 + 10 + 1 + 20 + 2 + 10 + 1 + NAME_MAX + 1 + 10 + 2 + 20 + 1;

/// Consecutive accesses of one object that are the same (thread, op, arg): one line
/// (`o1 5 t2 lock 0 x37`: accesses 5 to 41). A contended mutex is mostly taken again by the
/// thread that just let go of it (runs of 670 on average in the mutex benchmark), so most of a
/// history is runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Its first access's index.
    pub first: u64,
    /// How many accesses (at least 1).
    pub count: u64,
    /// What each of them is.
    pub access: Access,
}

/// The number of accesses in `runs`.
pub fn accesses(runs: &[Run]) -> u64 {
    runs.last().map_or(0, |r| r.first + r.count)
}

/// Access `index` of an object whose history is `runs` (`None`: past its end).
pub fn access_at(runs: &[Run], index: u64) -> Option<Access> {
    let i = runs.partition_point(|r| r.first + r.count <= index);
    runs.get(i).filter(|r| r.first <= index).map(|r| r.access)
}

/// A lock history read whole and checked.
#[derive(Debug, Default, Clone)]
pub struct LockHistory {
    /// Per object (its number is the index), its accesses in order, as runs.
    pub objects: Vec<Vec<Run>>,
    /// Some objects' histories stop early, at an access the process never wrote (killed while
    /// writing it).
    pub truncated: bool,
}

impl LockHistory {
    /// Reads and checks the lock history at `path`.
    pub fn load(path: &Path, actor: ActorId) -> Result<LockHistory, HistoryError> {
        let bytes = crate::file::read_regular(path).map_err(|e| HistoryError {
            path: path.to_path_buf(),
            line: 0,
            problem: format!("cannot read the lock history: {e}"),
        })?;
        LockHistory::parse(path, &bytes, actor)
    }

    /// Parses and checks the bytes of a lock history; `path` names it in messages.
    pub fn parse(path: &Path, bytes: &[u8], actor: ActorId) -> Result<LockHistory, HistoryError> {
        let error = |line: usize, problem: String| HistoryError {
            path: path.to_path_buf(),
            line,
            problem,
        };
        // The recording LD leaves the file at its grown size: NUL bytes after the last line.
        let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1);
        let bytes = &bytes[..end];
        let mut lines = bytes.split(|b| *b == b'\n').enumerate();
        let header = lines.next().map(|(_, l)| l).unwrap_or_default();
        let expected = header_line(actor);
        if header != &expected.as_bytes()[..expected.len() - 1] {
            return Err(error(
                1,
                format!(
                    "expected the header `{}`, found `{}`",
                    expected.trim_end(),
                    clip(&String::from_utf8_lossy(header))
                ),
            ));
        }
        let mut found: Vec<(u32, Run, usize)> = Vec::new();
        // The file ends with a newline; a last line without one was being written when the
        // process died.
        let mut holes = !bytes.is_empty() && !bytes.ends_with(b"\n");
        let lines: Vec<(usize, &[u8])> = lines.collect();
        let complete = lines.len().saturating_sub(1);
        for &(i, line) in &lines[..complete] {
            let n = i + 1;
            // A reserved place never written (the process died) is NUL bytes, possibly
            // followed by the next line's text in the same `\n`-separated piece.
            let text = match line.iter().rposition(|b| *b == 0) {
                Some(p) => {
                    holes = true;
                    &line[p + 1..]
                }
                None => line,
            };
            if text.is_empty() {
                continue;
            }
            let text = std::str::from_utf8(text).map_err(|_| {
                error(
                    n,
                    "expected a text line, found bytes that are not UTF-8".into(),
                )
            })?;
            let parsed = parse_line(text).ok_or_else(|| {
                error(
                    n,
                    format!(
                        "expected `o<object> <index> t<thread> <op> <number> [x<count>]`, found `{}`",
                        clip(text)
                    ),
                )
            })?;
            found.push((parsed.0, parsed.1, n));
        }
        order(found, holes, &error)
    }

    /// The threads the history names, in order, with who created each (`None`: the main
    /// thread) and whether it ended and was joined.
    pub fn threads(&self) -> Vec<ThreadInfo> {
        let mut threads = vec![ThreadInfo {
            id: 1,
            creator: None,
            exited: false,
            joined_by: None,
        }];
        let Some(table) = self.objects.first() else {
            return threads;
        };
        for a in table.iter().map(|r| r.access) {
            match a.op {
                Op::Create if a.arg != 0 => threads.push(ThreadInfo {
                    id: a.arg,
                    creator: Some(a.thread),
                    exited: false,
                    joined_by: None,
                }),
                Op::Exit => {
                    if let Some(t) = threads.iter_mut().find(|t| t.id == a.thread) {
                        t.exited = true;
                    }
                }
                Op::Join => {
                    if let Some(t) = threads.iter_mut().find(|t| t.id == a.arg) {
                        t.joined_by = Some(a.thread);
                    }
                }
                _ => {}
            }
        }
        threads
    }
}

/// The lines found (runs, with their line numbers) as per-object histories: sorted, and
/// checked for missing and repeated indexes (with `holes`, an object's history stops at its
/// first missing index instead).
fn order(
    mut found: Vec<(u32, Run, usize)>,
    holes: bool,
    error: &dyn Fn(usize, String) -> HistoryError,
) -> Result<LockHistory, HistoryError> {
    found.sort_by_key(|(o, r, _)| (*o, r.first));
    let mut history = LockHistory {
        objects: Vec::new(),
        truncated: false,
    };
    let mut stopped = Vec::new();
    for (object, run, n) in found {
        let o = object as usize;
        let limit = history.objects.len() + 1_000_000;
        if o > limit {
            return Err(error(
                n,
                format!("object {object}: expected a number below {limit}"),
            ));
        }
        while history.objects.len() <= o {
            history.objects.push(Vec::new());
            stopped.push(false);
        }
        let list = &mut history.objects[o];
        let next = accesses(list);
        if run.first < next {
            return Err(error(
                n,
                format!("object {object}: access {} appears twice", run.first),
            ));
        }
        if stopped[o] {
            continue;
        }
        if run.first != next {
            if holes {
                stopped[o] = true;
                history.truncated = true;
                continue;
            }
            return Err(error(
                n,
                format!(
                    "object {object}: expected access {next}, found access {} (the accesses \
                     between are missing)",
                    run.first
                ),
            ));
        }
        if (run.first == 0) != (run.access.op == Op::New) || (run.first == 0 && run.count != 1) {
            return Err(error(
                n,
                format!(
                    "object {object}: access 0 and only access 0 is `new`, found `{}` as \
                     access {}",
                    run.access.op.name(),
                    run.first
                ),
            ));
        }
        list.push(run);
    }
    Ok(history)
}

/// A thread of a process, as its lock history shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Its index (`p1.t2` is 2).
    pub id: u32,
    /// The thread that created it (`None`: the main thread).
    pub creator: Option<u32>,
    /// Its end is in the history.
    pub exited: bool,
    /// The thread that joined it.
    pub joined_by: Option<u32>,
}

/// Path of an actor's lock history inside recording directory `dir`.
pub fn path(dir: &Path, id: ActorId) -> std::path::PathBuf {
    dir.join("history").join(format!("{id}.locks"))
}

/// The lock history beside a history file (`…/p1.ron` → `…/p1.locks`).
pub fn path_beside(history: &str) -> String {
    match history.strip_suffix(".ron") {
        Some(stem) => format!("{stem}.locks"),
        None => format!("{history}.locks"),
    }
}

/// Object and thread numbers are below this (a bound against absurd input: replay keeps a
/// table per thread, and the LD numbers at most 65,536 objects).
const MAX_ID: u32 = 1 << 20;

/// `(object, run)` of one line.
fn parse_line(text: &str) -> Option<(u32, Run)> {
    let mut words = text.split(' ');
    let object = words.next()?.strip_prefix('o')?.parse().ok()?;
    let first: u64 = words.next()?.parse().ok()?;
    let thread = words.next()?.strip_prefix('t')?.parse().ok()?;
    let op = Op::from_name(words.next()?)?;
    let arg = words.next()?.parse().ok()?;
    let count = match words.next() {
        None => 1,
        Some(w) => w
            .strip_prefix('x')?
            .parse::<u64>()
            .ok()
            .filter(|c| *c > 1)?,
    };
    if words.next().is_some()
        || thread == 0
        || thread >= MAX_ID
        || object >= MAX_ID
        || first.checked_add(count).is_none()
    {
        return None;
    }
    let access = Access { thread, op, arg };
    Some((
        object,
        Run {
            first,
            count,
            access,
        },
    ))
}

/// The start of a long line, for a message.
fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests;
