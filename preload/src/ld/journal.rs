//! Writing the actor's history: one line per event, appended to the file the GD named (in a
//! replay too: the replay's own history, which the GD compares).
//!
//! Every event goes through [`Ld::emit`] (or [`Ld::emit_decided`] under optimal tracing): it
//! counts the event in the actor's progress and its built-in counters, then writes the line, or
//! hands it to the tracer's queue, which releases it once its decision is known ([`Ld::drain`]).
//! Lines are formatted on the stack when they fit; errno is left as the program had it.

use super::Ld;
use crate::sys;
use crate::trace::{Decision, Out};
use ddbx_wire::ActorId;
use ddbx_wire::history::intent::ConnectIntent;
use ddbx_wire::history::value::Value;
use ddbx_wire::history::{Record, header_line, write_compact};
use libc::c_int;

impl Ld {
    /// Logs an event that happened (record), or that replay has just made happen.
    pub fn emit(&mut self, record: &Record) {
        let mut mark = usize::MAX;
        crate::guard::event_done();
        if self.mode == ddbx_wire::proto::Mode::Record {
            self.send_deferred_reaps();
            mark = crate::guard::take_returned_mark();
        }
        // The deliveries noted after the real call returned stay for the gap after this event.
        self.note_signals_before(mark);
        self.write_values();
        self.count_event();
        self.steer_after();
        self.counters.count(record);
        self.note_connection(record);
        if self.trace.as_ref().is_some_and(|t| t.recording) {
            self.queue(record, Decision::Logged);
        } else {
            self.note_thread();
            write_line(self.history_fd, record);
        }
        // Last: an actor that stops here has its event in its history (a run that ends at
        // the halt replays to it). Not at its exit: a process that ends does not stand.
        if !matches!(record, Record::Exit { .. }) {
            self.live_after();
        }
    }

    /// In a process with threads: a `~t` line before an event of another thread than the
    /// last one's (replay makes each thread wait for the events before its own).
    fn note_thread(&mut self) {
        if !crate::locks::threaded() {
            return;
        }
        let me = crate::locks::me();
        if me == 0 || me == self.thread_logged {
            return;
        }
        self.thread_logged = me;
        if self.history_fd >= 0 {
            let mut line = crate::locks::StackText::new();
            let _ = std::fmt::Write::write_fmt(&mut line, format_args!("~t{me}\n"));
            let e = sys::errno();
            sys::write_all(self.history_fd, line.as_str().as_bytes());
            sys::set_errno(e);
        }
    }

    /// Logs what a clock or a source of randomness returned to the program (not an event): the
    /// line waits in [`super::ValueLog`] until the next event's line, or until it is full. A
    /// value that answers the calling thread's own call ([`ValueKey::by_thread`]) in a process
    /// whose threads are ordered comes after a `~T` line naming the thread, when another
    /// thread's values came last.
    pub fn log_value(&mut self, value: &Value) {
        if value.key().by_thread() && self.threads_ordered() {
            let me = crate::locks::me();
            if self.values_of != me {
                self.values_of = me;
                self.write_value(&Value::ValuesOf { t: me });
            }
        }
        self.write_value(value);
    }

    /// [`Ld::log_value`] without the thread's line.
    fn write_value(&mut self, value: &Value) {
        if self.history_fd < 0 {
            return;
        }
        // A signal's line before the values its handler read.
        if !matches!(value, Value::Signal { .. } | Value::Reaped { .. }) {
            self.note_signals();
        }
        let saved = self.values.deltas;
        let log = &mut self.values;
        // The hot path: a clock read, formatted by hand.
        if let Some(n) = log.deltas.write_number(&mut log.buf[log.len..], value)
            && log.len + n < log.buf.len()
        {
            log.buf[log.len + n] = b'\n';
            log.len += n + 1;
            return;
        }
        let log = &mut self.values;
        log.deltas = saved;
        let mut out = Tail {
            buf: &mut log.buf[log.len..],
            len: 0,
        };
        if log.deltas.write(&mut out, value).is_ok() && out.push(b'\n') {
            log.len += out.len;
            return;
        }
        // No room: write out what is there, and try again in the empty buffer.
        log.deltas = saved;
        self.flush_values();
        let log = &mut self.values;
        let mut out = Tail {
            buf: &mut log.buf[..],
            len: 0,
        };
        if log.deltas.write(&mut out, value).is_ok() && out.push(b'\n') {
            log.len = out.len;
            return;
        }
        // Longer than the buffer (a big read of /dev/urandom): one line of its own.
        log.deltas = saved;
        let mut text = String::new();
        if log.deltas.write(&mut text, value).is_ok() {
            text.push('\n');
            let e = sys::errno();
            sys::write_all(self.history_fd, text.as_bytes());
            sys::set_errno(e);
        }
    }

    /// Writes an intent line at once, after the value lines before it: what this process is
    /// about to do that a peer may see before the event's record is written (not an event).
    /// Not under optimal tracing, whose records wait in the tracer's queue: the line would
    /// come before records of earlier events.
    pub fn log_intent(&mut self, intent: &ConnectIntent) {
        if self.history_fd < 0 || self.trace.is_some() {
            return;
        }
        self.flush_values();
        let e = sys::errno();
        sys::write_all(self.history_fd, intent.to_line().as_bytes());
        sys::set_errno(e);
    }

    /// Writes the value lines not written yet (before an event's line, an exec, the exit).
    pub fn flush_values(&mut self) {
        self.note_signals();
        self.write_values();
    }

    /// Writes the value lines logged so far.
    fn write_values(&mut self) {
        if self.values.len == 0 {
            return;
        }
        if self.history_fd >= 0 {
            let e = sys::errno();
            sys::write_all(self.history_fd, &self.values.buf[..self.values.len]);
            sys::set_errno(e);
        }
        self.values.len = 0;
    }

    /// Turns the signal deliveries noted since the last event into value lines (a record's
    /// deliveries, or those a replay made). One delivery outside any hooked call is reported
    /// once: replay runs its handler in the same gap, not at the same instruction.
    fn note_signals(&mut self) {
        self.note_signals_before(usize::MAX);
    }

    /// [`Self::note_signals`] for the notes pushed before ring index `mark` only
    /// (`crate::guard::call_returned`).
    fn note_signals_before(&mut self, mark: usize) {
        if NOTING.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        while let Some(note) = crate::signals::next_note_before(mark) {
            let d = match note {
                crate::signals::Note::Signal(d) => d,
                crate::signals::Note::Reaped(child) => {
                    self.log_value(&Value::Reaped { child });
                    continue;
                }
                crate::signals::Note::Closed(fd) => {
                    self.log_value(&Value::Closed { fd });
                    continue;
                }
            };
            self.log_value(&Value::Signal {
                sig: d.sig,
                in_call: d.in_call,
                ended: d.ended,
                entry: d.entry,
            });
            if !d.in_call
                && !d.after_call
                && d.entry.is_none()
                && self.mode == ddbx_wire::proto::Mode::Record
            {
                self.passthrough(
                    crate::signals::PASSTHROUGH_IN_COMPUTATION,
                    "signals that came during the program's computation and could not wait \
                     for its next hooked call (a system call ddbx does not hook, a thread, or \
                     200 ms without a call): replay runs their handler between the same two \
                     events, not at the same instruction",
                );
            }
        }
        if crate::signals::take_lost() > 0 && self.mode == ddbx_wire::proto::Mode::Record {
            self.passthrough(
                crate::signals::PASSTHROUGH_LOST,
                "signals: more than 256 deliveries between two events (some are not recorded)",
            );
        }
        NOTING.store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Optimal tracing: an event happened whose outcome is `decision`.
    pub fn emit_decided(&mut self, record: &Record, decision: Decision) {
        crate::guard::event_done();
        crate::guard::take_returned_mark();
        self.count_event();
        self.steer_after();
        self.counters.count(record);
        self.note_connection(record);
        self.queue(record, decision);
        self.live_after();
    }

    /// Optimal tracing: a connection just made finds its side channels now, while both
    /// addresses can be read (once both ends are closed, the peer's no longer can: a receive
    /// of the last bytes would find no side channel).
    fn note_connection(&mut self, record: &Record) {
        let Some(t) = self.trace.as_mut() else {
            return;
        };
        let fd = match record {
            Record::Accept { new_fd, .. } => *new_fd,
            Record::Connect { fd, err: None, .. }
            | Record::ConnectAgain { fd, err: None }
            | Record::SocketError { fd, err: None } => *fd,
            _ => return,
        };
        t.side(fd, crate::trace::Dir::In);
        t.side(fd, crate::trace::Dir::Out);
    }

    fn queue(&mut self, record: &Record, decision: Decision) {
        let ordinal = self.events();
        if self.full_fd >= 0 {
            write_line(self.full_fd, record);
            // What the readiness call watched, which no record says (a comment line).
            if let (Record::Ready { .. }, Some(t)) = (record, self.trace.as_mut())
                && !t.watched.is_empty()
            {
                let fds: Vec<String> = t.watched.drain(..).map(|f| f.to_string()).collect();
                let line = format!("// watched: {}\n", fds.join(" "));
                sys::write_all(self.full_fd, line.as_bytes());
            }
        }
        if let Some(t) = self.trace.as_mut() {
            t.push(ordinal, record.clone(), decision);
        }
        self.drain(false);
    }

    /// Optimal tracing: writes what is decided (everything, with `settle`).
    pub fn drain(&mut self, settle: bool) {
        if settle && let Some(t) = self.trace.as_mut() {
            t.settle_all();
        }
        loop {
            let Some(out) = self.trace.as_mut().and_then(|t| t.next_out(settle)) else {
                return;
            };
            match out {
                Out::Skip(n) => {
                    if self.history_fd >= 0 {
                        let saved = sys::errno();
                        let line = ddbx_wire::history::skip_line(n);
                        sys::write_all(self.history_fd, line.as_bytes());
                        sys::set_errno(saved);
                    }
                }
                Out::Record(r) => write_line(self.history_fd, &r),
            }
        }
    }
}

/// Set while [`Ld::note_signals`] runs (writing a value may flush, which notes again).
static NOTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Opens (appending) the history at `path` for `actor`, writing its header if the file is new;
/// -1 if it cannot be opened. `optimal`: the header says the history is optimally traced.
pub fn open_history(path: &[u8], actor: ActorId, optimal: bool) -> c_int {
    let fd = sys::open(
        path,
        libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
        0o600,
    );
    if fd < 0 {
        return -1;
    }
    let fd = crate::fds::mark_ours(sys::move_high(fd, crate::fds::HIGH_FD));
    write_header_if_new(fd, actor, optimal);
    fd
}

/// Takes `fd`, a history the GD opened for appending and passed to this LD (already ours),
/// writing its header if the file is new.
pub fn adopt_history(fd: c_int, actor: ActorId, optimal: bool) -> c_int {
    write_header_if_new(fd, actor, optimal);
    fd
}

fn write_header_if_new(fd: c_int, actor: ActorId, optimal: bool) {
    if sys::file_size(fd) == 0 {
        let header = if optimal {
            ddbx_wire::history::header_line_optimal(actor)
        } else {
            header_line(actor)
        };
        sys::write_all(fd, header.as_bytes());
    }
}

/// Appends `record` as one line to `fd` (nothing if `fd` is -1), keeping errno.
fn write_line(fd: c_int, record: &Record) {
    if fd < 0 {
        return;
    }
    let saved = sys::errno();
    let mut line = LineBuf::new();
    if let Some(n) = ddbx_wire::history::fast::write_line(record, &mut line.buf) {
        // The common receive or send, formatted by hand.
        line.len = n;
        if line.push(b'\n') {
            sys::write_all(fd, line.as_bytes());
            sys::set_errno(saved);
            return;
        }
        line.len = 0;
    }
    if write_compact(&mut line, record).is_ok() && line.push(b'\n') {
        sys::write_all(fd, line.as_bytes());
    } else {
        let mut text = record.to_line();
        text.push('\n');
        sys::write_all(fd, text.as_bytes());
    }
    sys::set_errno(saved);
}

/// The free part of the value log's buffer, as a `fmt::Write`.
struct Tail<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Tail<'_> {
    fn push(&mut self, b: u8) -> bool {
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
            true
        } else {
            false
        }
    }
}

impl std::fmt::Write for Tail<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A stack buffer for one history line (most records fit: no allocation on the hook path).
struct LineBuf {
    buf: [u8; 1024],
    len: usize,
}

impl LineBuf {
    fn new() -> LineBuf {
        LineBuf {
            buf: [0; 1024],
            len: 0,
        }
    }

    /// Appends one byte; false when the buffer is full.
    fn push(&mut self, b: u8) -> bool {
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
            true
        } else {
            false
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl std::fmt::Write for LineBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}
