//! The order of writes into a regular file that several processes write: the log that every
//! session process of an FTP or HTTP server appends to, the output file a script's children
//! share (`./test.sh >out 2>&1`). Which process's line comes first is decided by the race
//! between them; the file keeps that order, so the record counts each write into such a file
//! (its *turn*, logged as a value, `~a12`) and replay makes every writer wait for its turn.
//!
//! Which files: those the program opened with O_APPEND and those that are a process's
//! standard output or error (`fds::TURNS`); files a process writes at explicit offsets
//! (`pwrite`), or that only one process writes, are not concerned (a sole writer is always
//! in turn). Writes that go through glibc's stdio buffers (`fprintf` to a `FILE`) are made
//! by libc's internal calls, which no preload sees: they take no turn.
//!
//! Every process of the session shares one table, the file [`ddbx_wire::FILE_TURNS`] in the
//! runtime directory (made by the GD, writable by any uid the program switches to), mapped
//! shared when the LD starts (forked children keep the mapping; an exec'd image maps it
//! again), before the program can chroot or drop its privileges: an
//! entry per file, keyed by device and inode, holding a lock and the count of writes so far.
//! While recording, a write takes its file's lock, writes, and counts itself, so that the turn
//! it logs is the order in which the file took the bytes. Nothing here waits for ever: a lock
//! whose holder died is taken over, and a writer that has waited [`PATIENCE`] without the
//! count moving goes on (record: without a turn; replay: out of turn, said in `DDBX_LD_LOG`).

use super::Ld;
use super::turns::{futex_wait, futex_wake, lock_shared, map_shared, unlock_shared};
use crate::sys;
use ddbx_wire::history::value::FileSlot;
use ddbx_wire::{FILE_TURN_ENTRY, FILE_TURN_SLOTS, FILE_TURNS};
use libc::c_int;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// How long (ns) a writer waits for its file's lock or turn while nothing moves: long enough
/// for a writer that is only slower than in the record, short enough that a turn that never
/// comes (its write was not made in this replay, or another of replay's waits holds its
/// writer behind this one) costs little.
const PATIENCE: u64 = 1_000_000_000;
/// How long (ns) a read of a shared file waits for the writes it came after in the record
/// while nothing moves: longer than a writer's [`PATIENCE`], so that a write that waits in
/// vain for a read (one made, in this replay, before its file was known to take turns) is
/// made before the read after it gives up (the grep that found `ready` in the record found
/// nothing: 1 clean-clone CI run in 2).
const READ_PATIENCE: u64 = 5_000_000_000;
/// How many entries a file's key is looked for in, from its hash on.
const PROBES: usize = 64;

/// One file's counter.
#[repr(C)]
struct Entry {
    /// The file ([`crate::fds::file_key`]); 0: a free entry.
    key: AtomicU64,
    /// The pid of the writer holding the lock (0: free).
    lock: AtomicU32,
    /// Writes into the file so far (the next write's turn).
    writes: AtomicU32,
    /// Processes waiting on `lock`, `writes` or `reads`: a writer wakes them only when there
    /// are some.
    waiters: AtomicU32,
    /// Reads of the file counted since its last write (each logged: `~f`).
    reads: AtomicU32,
    /// Locks taken on the file so far (the next lock's turn; `~l`).
    locks: AtomicU32,
    /// Replay: the writes made so far, in whatever order (a halting replay lets some writes
    /// go out of turn: `writes` is then the highest turn made, not their count).
    made: AtomicU32,
}

const _: () = assert!(std::mem::size_of::<Entry>() <= FILE_TURN_ENTRY);
const _: () = assert!(std::mem::offset_of!(Entry, writes) == ddbx_wire::FILE_TURN_OUT_OF_TURN);

/// An entry's number in the table: what names its file in histories ([`FileSlot`]), the same
/// in every process of the session.
fn slot_of(entry: &Entry) -> u32 {
    let base = TABLE.load(Ordering::Acquire);
    ((entry as *const Entry as usize - base) / FILE_TURN_ENTRY) as u32
}

/// The table's address in this image (0: not mapped yet; 1: it cannot be).
static TABLE: AtomicUsize = AtomicUsize::new(0);
const UNAVAILABLE: usize = 1;

impl Ld {
    /// The entry of the file `key`, the table mapped first if need be; `None` when there is no
    /// table (an LD not started by a GD that made one) or no room left in it.
    fn file_entry(&self, key: u64) -> Option<&'static Entry> {
        self.find_entry(key, true)
    }

    /// The entry of the file `key`; a new one only if `claim`.
    fn find_entry(&self, key: u64, claim: bool) -> Option<&'static Entry> {
        let base = match TABLE.load(Ordering::Acquire) {
            0 => self.map_file_turns(),
            UNAVAILABLE => return None,
            base => base,
        };
        if base == UNAVAILABLE {
            return None;
        }
        let start = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize;
        for i in 0..PROBES {
            // Entry 0 is no file's: it counts the writes made out of turn.
            let at = base + (1 + (start + i) % (FILE_TURN_SLOTS - 1)) * FILE_TURN_ENTRY;
            // SAFETY: within the mapping of FILE_TURN_SLOTS entries, which stays mapped for the
            // life of the image; entries are atomics only.
            let entry = unsafe { &*(at as *const Entry) };
            if !claim {
                match entry.key.load(Ordering::Acquire) {
                    0 => return None,
                    k if k == key => return Some(entry),
                    _ => continue,
                }
            }
            match entry
                .key
                .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(entry),
                Err(k) if k == key => return Some(entry),
                Err(_) => {}
            }
        }
        None
    }

    /// Makes the file `key` one whose reads are counted ([`Ld::read_between_turns`]) before
    /// any process writes it: a process's standard output or error in a file, as the image
    /// starts or the fd is made so.
    pub fn claim_turn_file(&self, key: u64) {
        if self.trace.is_none() {
            self.file_entry(key);
        }
    }

    /// Maps the session's table at the LD's start, before the program can make it
    /// unreachable (a server's session process chroots and switches users before it logs;
    /// forked children keep the mapping). Not under optimal tracing, which logs no turns.
    pub fn map_file_turns_early(&self) {
        if self.trace.is_none() && TABLE.load(Ordering::Acquire) == 0 {
            self.map_file_turns();
        }
    }

    /// Maps the session's table (see the module's documentation); its address, or
    /// [`UNAVAILABLE`].
    fn map_file_turns(&self) -> usize {
        let mut path = [0u8; 512];
        let dir = self.runtime_dir().unwrap_or(b"");
        let name = FILE_TURNS.as_bytes();
        let len = dir.len() + 1 + name.len();
        let mapped = if dir.is_empty() || len > path.len() {
            None
        } else {
            path[..dir.len()].copy_from_slice(dir);
            path[dir.len()] = b'/';
            path[dir.len() + 1..len].copy_from_slice(name);
            map_table(&path[..len])
        };
        let base = mapped.unwrap_or(UNAVAILABLE);
        TABLE.store(base, Ordering::Release);
        base
    }

    /// Record: a write into the shared file `key`, made by `call` in turn. Returns what `call`
    /// returned and the write's turn (`None`: no table, no lock within [`PATIENCE`], or
    /// nothing written).
    /// With the turn, the count of the reads of the file counted since the write before, and
    /// the file's slot.
    pub fn append_in_turn(
        &self,
        key: u64,
        call: impl FnOnce() -> isize,
    ) -> (isize, Option<(u64, u64, FileSlot)>) {
        let Some(entry) = self.file_entry(key) else {
            return (call(), None);
        };
        if !lock_shared(&entry.lock, &entry.waiters, self.pid as u32, PATIENCE) {
            return (call(), None);
        }
        let r = call();
        let err = sys::errno();
        let turn = (r > 0).then(|| {
            let reads = entry.reads.swap(0, Ordering::AcqRel);
            let turn = entry.writes.fetch_add(1, Ordering::AcqRel);
            (u64::from(turn), u64::from(reads), Some(slot_of(entry)))
        });
        unlock_shared(&entry.lock, &entry.waiters);
        sys::set_errno(err);
        (r, turn)
    }

    /// Record: a read of the regular file `key`, made by `call`. When the session's writes
    /// into that file take turns (or it is still empty, and no process wrote it in turn yet),
    /// the read is made between two of them; the count of the
    /// writes before it is returned when it is to be logged (`~f`): the first read of this
    /// image after each write and each event, which the file's next write counts (`None`: no
    /// process wrote the file in turn, or a read after the same writes and in the same gap
    /// as this image's last one: the reads of one run, a buffer at a time to the end), with
    /// the file's slot.
    pub fn read_between_turns(
        &self,
        key: u64,
        empty: impl FnOnce() -> bool,
        call: impl FnOnce() -> isize,
    ) -> (isize, Option<(u64, FileSlot)>) {
        /// The file, count and gap of this image's last logged read.
        static LAST: (AtomicU64, AtomicU64, AtomicU64) = (
            AtomicU64::new(0),
            AtomicU64::new(u64::MAX),
            AtomicU64::new(0),
        );
        let (r, entry) = match self.find_entry(key, false) {
            Some(entry) => {
                if !lock_shared(&entry.lock, &entry.waiters, self.pid as u32, PATIENCE) {
                    return (call(), None);
                }
                (call(), entry)
            }
            None => {
                let r = call();
                // A read that found nothing in a file no process writes in turn yet: a test
                // script's loop that greps a server's log before the server's shell has made
                // the log its output (that child may join the session later than the grep).
                // It counts as a read before the file's first write (`empty`: the file has
                // no byte; a read at the end of a file with some is no such read).
                if r != 0 || !empty() {
                    return (r, None);
                }
                let Some(entry) = self.file_entry(key) else {
                    return (r, None);
                };
                if !lock_shared(&entry.lock, &entry.waiters, self.pid as u32, PATIENCE) {
                    return (r, None);
                }
                if entry.writes.load(Ordering::Acquire) != 0 {
                    unlock_shared(&entry.lock, &entry.waiters);
                    return (r, None);
                }
                (r, entry)
            }
        };
        let err = sys::errno();
        let writes = u64::from(entry.writes.load(Ordering::Acquire));
        let gap = self.events();
        let new = LAST.0.load(Ordering::Relaxed) != key
            || LAST.1.load(Ordering::Relaxed) != writes
            || LAST.2.load(Ordering::Relaxed) != gap;
        let logged = (r >= 0 && new).then(|| {
            LAST.0.store(key, Ordering::Relaxed);
            LAST.1.store(writes, Ordering::Relaxed);
            LAST.2.store(gap, Ordering::Relaxed);
            entry.reads.fetch_add(1, Ordering::AcqRel);
            (writes, Some(slot_of(entry)))
        });
        unlock_shared(&entry.lock, &entry.waiters);
        sys::set_errno(err);
        (r, logged)
    }

    /// Whether the file `key` is one whose writes take turns (some process wrote it in turn,
    /// or has it as its standard output or error).
    pub fn is_turn_file(&self, key: u64) -> bool {
        self.find_entry(key, false).is_some()
    }

    /// Replay: the read the record logged after `writes` writes into the file `key` is made;
    /// it counts for the next write while the file has no more.
    pub fn read_counted(&self, key: u64, writes: u64) {
        let Some(entry) = self.file_entry(key) else {
            return;
        };
        if !lock_shared(&entry.lock, &entry.waiters, self.pid as u32, PATIENCE) {
            return;
        }
        if u64::from(entry.writes.load(Ordering::Acquire)) == writes {
            entry.reads.fetch_add(1, Ordering::AcqRel);
        }
        unlock_shared(&entry.lock, &entry.waiters);
        if entry.waiters.load(Ordering::Acquire) > 0 {
            futex_wake(&entry.reads);
        }
    }

    /// Replay: before the write of turn `turn` into the file `key`, waits for the `reads`
    /// reads the record made since the write before (at most [`PATIENCE`] while their count
    /// does not move): they must not see it (a script's loop that greps a server's log until
    /// the server says it is ready greps as many times as in the record).
    pub fn wait_for_reads(&self, key: u64, turn: u64, reads: u64) {
        let Some(entry) = self.file_entry(key) else {
            return;
        };
        let still_this_turn = || u64::from(entry.writes.load(Ordering::Acquire)) == turn;
        let waited = await_count(
            &entry.reads,
            &entry.waiters,
            reads,
            PATIENCE,
            still_this_turn,
        );
        if let Some(seen) = waited {
            let msg = format!(
                "ddbx-ld: pid {}: a shared file's write turn {turn} still waits for {reads} reads before it, {seen} made; writing now",
                self.pid
            );
            sys::diag(self.log_fd, &msg);
        }
    }

    /// Replay: waits until `count` writes into the file `key` are made (at most
    /// [`READ_PATIENCE`] while their count does not move, then says so in `DDBX_LD_LOG`): the
    /// turns before `count` (`made`: that many writes, in a halting replay, which lets the
    /// writes after a file's horizon go in any order).
    pub fn wait_for_writes(&self, key: u64, count: u64, made: bool) {
        let waited = self.file_entry(key).and_then(|e| {
            let word = if made { &e.made } else { &e.writes };
            await_count(word, &e.waiters, count, READ_PATIENCE, || true)
        });
        if let Some(seen) = waited {
            let msg = format!(
                "ddbx-ld: pid {}: a read of a shared file still waits for {count} writes into it, {seen} made; reading now",
                self.pid
            );
            sys::diag(self.log_fd, &msg);
        }
    }

    /// Replay: waits until the writes into the shared file `key` before turn `turn` are made
    /// (at most [`PATIENCE`] while their count does not move).
    pub fn wait_for_append_turn(&self, key: u64, turn: u64) {
        let Some(entry) = self.file_entry(key) else {
            return;
        };
        if let Some(seen) = await_writes(entry, turn) {
            let msg = format!(
                "ddbx-ld: pid {}: a shared file's write turn {turn} still waits for write {seen}; writing out of turn",
                self.pid
            );
            sys::diag(self.log_fd, &msg);
            let base = TABLE.load(Ordering::Acquire);
            // SAFETY: entry 0 of the mapped table (a mapping is never `UNAVAILABLE` here:
            // the entry above came from it); its `writes` is the count the GD reports.
            let stats = unsafe { &*(base as *const Entry) };
            stats.writes.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Replay: the write of turn `turn` into the shared file `key` is made; the next writer
    /// goes (a write that came out of turn never moves the count back).
    pub fn append_turn_done(&self, key: u64, turn: u64) {
        let Some(entry) = self.file_entry(key) else {
            return;
        };
        let next = u32::try_from(turn + 1).unwrap_or(u32::MAX);
        let locked = lock_shared(&entry.lock, &entry.waiters, self.pid as u32, PATIENCE);
        if entry.writes.fetch_max(next, Ordering::AcqRel) < next {
            entry.reads.store(0, Ordering::Release);
        }
        entry.made.fetch_add(1, Ordering::AcqRel);
        if locked {
            unlock_shared(&entry.lock, &entry.waiters);
        }
        if entry.waiters.load(Ordering::Acquire) > 0 {
            futex_wake(&entry.writes);
            futex_wake(&entry.made);
        }
    }

    /// Record: a lock on the regular file `key` (flock, fcntl's record locks, lockf), taken
    /// by `call` (0: taken). Returns what `call` returned and, when it took the lock, the
    /// lock's turn among the session's locks on that file (`None`: not taken, or no table),
    /// with the file's slot.
    /// Counted once the kernel granted it: a lock that excludes this one can only be taken
    /// after this process lets go of it, so after the count.
    pub fn lock_in_turn(
        &self,
        key: u64,
        call: impl FnOnce() -> c_int,
    ) -> (c_int, Option<(u64, FileSlot)>) {
        let r = call();
        if r != 0 {
            return (r, None);
        }
        let err = sys::errno();
        let turn = self.file_entry(key).map(|entry| {
            let turn = u64::from(entry.locks.fetch_add(1, Ordering::AcqRel));
            (turn, Some(slot_of(entry)))
        });
        sys::set_errno(err);
        (r, turn)
    }

    /// Replay: waits until the locks on the file `key` before turn `turn` are taken (at most
    /// [`PATIENCE`] while their count does not move, then says so in `DDBX_LD_LOG`).
    pub fn wait_for_lock_turn(&self, key: u64, turn: u64) {
        let Some(entry) = self.file_entry(key) else {
            return;
        };
        if let Some(seen) = await_count(&entry.locks, &entry.waiters, turn, PATIENCE, || true) {
            let msg = format!(
                "ddbx-ld: pid {}: a file lock's turn {turn} still waits for lock {seen}; locking out of turn",
                self.pid
            );
            sys::diag(self.log_fd, &msg);
        }
    }

    /// Replay: the lock of turn `turn` on the file `key` is taken; the next one goes.
    pub fn lock_turn_done(&self, key: u64, turn: u64) {
        let Some(entry) = self.file_entry(key) else {
            return;
        };
        let next = u32::try_from(turn + 1).unwrap_or(u32::MAX);
        entry.locks.fetch_max(next, Ordering::AcqRel);
        if entry.waiters.load(Ordering::Acquire) > 0 {
            futex_wake(&entry.locks);
        }
    }
}

/// Waits until `entry` counts `count` writes; `Some(count so far)` when it gave up, the count
/// still over [`PATIENCE`].
fn await_writes(entry: &Entry, count: u64) -> Option<u32> {
    await_count(&entry.writes, &entry.waiters, count, PATIENCE, || true)
}

/// Waits until the shared counter `word` reaches `count`, while `still()` holds (futex waits,
/// counted in `waiters`); `Some(value so far)` when it gave up, the value unmoved over
/// `patience` ns.
fn await_count(
    word: &AtomicU32,
    waiters: &AtomicU32,
    count: u64,
    patience: u64,
    still: impl Fn() -> bool,
) -> Option<u32> {
    let mut seen = word.load(Ordering::Acquire);
    let mut since = sys::monotonic_ns();
    while u64::from(seen) < count && still() {
        waiters.fetch_add(1, Ordering::AcqRel);
        futex_wait(word, seen);
        waiters.fetch_sub(1, Ordering::AcqRel);
        let now = word.load(Ordering::Acquire);
        if now != seen {
            seen = now;
            since = sys::monotonic_ns();
        } else if sys::monotonic_ns().saturating_sub(since) >= patience {
            return Some(seen);
        }
    }
    None
}

/// Maps the table file at `path` shared, read-write; its address.
fn map_table(path: &[u8]) -> Option<usize> {
    let file = sys::open(path, libc::O_RDWR | libc::O_CLOEXEC, 0);
    if file < 0 {
        return None;
    }
    map_shared(file, FILE_TURN_SLOTS * FILE_TURN_ENTRY).map(|p| p as usize)
}
