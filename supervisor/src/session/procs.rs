//! The process tree: subreaping, reaping, killing, and facts read from `/proc`.

use ddbx_wire::manifest::ExitStatus;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

/// Makes this process a child subreaper: orphaned descendants are re-parented to it, so that
/// it can reap them and knows when the whole tree has gone.
pub fn become_subreaper() -> std::io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(std::io::Error::from)
}

/// What one blocking wait for any child gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaped {
    /// A child ended.
    Child {
        /// Its pid.
        pid: i32,
        /// How.
        status: ExitStatus,
    },
    /// No child is left (`ECHILD`).
    NoChildren,
}

/// Waits for any child to end and reaps it.
///
/// This is the one raw `waitpid` of the supervisor: nix's `waitpid` decodes the status into its
/// `Signal` enum, which has no real-time signals, so a child killed by `SIGRTMIN+n` would be
/// reaped and reported as `EINVAL`, its pid and status lost.
pub fn wait_any() -> std::io::Result<Reaped> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: waitpid writes one int through the pointer we pass, which is valid.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid > 0 {
            let status = if libc::WIFSIGNALED(status) {
                ExitStatus::Signaled(libc::WTERMSIG(status))
            } else {
                ExitStatus::Exited(libc::WEXITSTATUS(status))
            };
            return Ok(Reaped::Child { pid, status });
        }
        match Errno::last() {
            Errno::EINTR => continue,
            Errno::ECHILD => return Ok(Reaped::NoChildren),
            errno => return Err(errno.into()),
        }
    }
}

/// The pids of every live descendant of process `ancestor`, read from `/proc`.
pub fn descendants(ancestor: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some(ppid) = stat_field(pid, 4).and_then(|f| f.parse::<i32>().ok()) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut todo = vec![ancestor];
    while let Some(pid) = todo.pop() {
        if let Some(kids) = children.get(&pid) {
            for kid in kids {
                if !found.contains(kid) {
                    found.push(*kid);
                    todo.push(*kid);
                }
            }
        }
    }
    found
}

/// Sends signal `sig` to process `pid` (gone already: nothing to do).
pub fn signal(pid: i32, sig: i32) {
    if let Ok(sig) = Signal::try_from(sig) {
        let _ = kill(Pid::from_raw(pid), sig);
    }
}

/// Whether process `pid` has signal `sig` blocked now (`/proc/PID/status`, `SigBlk`).
pub fn blocks(pid: i32, sig: i32) -> bool {
    signal_masks(pid).is_some_and(|(blocked, _)| has(blocked, sig))
}

/// Whether process `pid` is running or ready to (state `R`), rather than blocked in a call.
pub fn running(pid: i32) -> bool {
    stat_field(pid, 3).is_some_and(|state| state == "R")
}

/// Whether process `pid` has signal `sig` blocked and pending: it came, and waits.
pub fn holds(pid: i32, sig: i32) -> bool {
    signal_masks(pid).is_some_and(|(blocked, pending)| has(blocked & pending, sig))
}

/// Whether `sig` is in the mask (bit `sig - 1`).
fn has(mask: u64, sig: i32) -> bool {
    (1..=64).contains(&sig) && mask & (1u64 << (sig - 1)) != 0
}

/// A process's blocked signals and its pending ones (its own and its thread group's), from
/// `/proc/PID/status`.
fn signal_masks(pid: i32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
    };
    Some((field("SigBlk:")?, field("SigPnd:")? | field("ShdPnd:")?))
}

/// Sends SIGKILL to every live descendant of this process. Returns how many were sent.
pub fn kill_descendants() -> usize {
    kill_descendants_but(&[])
}

/// Stops every live descendant (SIGSTOP), until no new one appears (a few rounds at most),
/// so that none of them runs again before it dies: a process that a kill is about to end then
/// sees nothing of the others' deaths (a reset, an end of stream), which its history would
/// keep as its last events (a live run ended at its halt).
pub fn freeze_descendants() {
    let me = std::process::id() as i32;
    let mut stopped: Vec<i32> = Vec::new();
    for _ in 0..8 {
        let new: Vec<i32> = descendants(me)
            .into_iter()
            .filter(|pid| !stopped.contains(pid))
            .collect();
        if new.is_empty() {
            return;
        }
        for pid in new {
            let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
            stopped.push(pid);
        }
    }
}

/// Sends SIGKILL to every live descendant of this process but those in `spare`. Returns how
/// many were sent.
pub fn kill_descendants_but(spare: &[i32]) -> usize {
    let me = std::process::id() as i32;
    let pids: Vec<i32> = descendants(me)
        .into_iter()
        .filter(|pid| !spare.contains(pid))
        .collect();
    for pid in &pids {
        // Gone since /proc was read: nothing to kill.
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    pids.len()
}

/// The start time of process `pid` (clock ticks after boot, `/proc/<pid>/stat` field 22).
pub fn start_time(pid: i32) -> Option<u64> {
    stat_field(pid, 22)?.parse().ok()
}

/// How process `pid` ended, when it is a zombie not reaped yet (`/proc/<pid>/stat` fields 3
/// and 52: the state, and the status `waitpid` will report).
pub fn zombie_status(pid: i32) -> Option<i32> {
    if stat_field(pid, 3)? != "Z" {
        return None;
    }
    stat_field(pid, 52)?.parse().ok()
}

/// Whether process `pid` has died: a zombie, or gone. A process whose connection to the GD
/// closed is either dying, exec'ing or dead; this waits up to `patience` for it to end (its
/// fds are closed before it becomes a zombie): a pidfd becomes readable when it does, an exec
/// leaves it as it is.
pub fn has_died(pid: i32, patience: std::time::Duration) -> bool {
    // SAFETY: pidfd_open takes no pointer; the fd it returns is ours and closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        // ESRCH: reaped already. Anything else (an old kernel): ask /proc.
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
            || matches!(stat_field(pid, 3).as_deref(), None | Some("Z" | "X"));
    }
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = patience.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one pollfd of ours; then our own fd is closed.
    let ready = unsafe { libc::poll(&mut poll, 1, millis) };
    unsafe { libc::close(fd) };
    ready > 0
}

/// Field `n` (1-based, as in proc(5)) of `/proc/<pid>/stat`.
fn stat_field(pid: i32, n: usize) -> Option<String> {
    use std::io::Read;
    // One read into a buffer the size of any stat line (read_to_string reads /proc in growing
    // pieces: six system calls; this runs for every process that joins the session).
    let mut file = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?;
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    loop {
        let n = file.read(&mut buf[len..]).ok()?;
        if n == 0 {
            break;
        }
        len += n;
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
    }
    buf.truncate(len);
    let text = String::from_utf8(buf).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: split after it.
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace()
        .nth(n.checked_sub(3)?)
        .map(str::to_string)
}

/// This machine's host name.
pub fn host_name() -> String {
    match nix::unistd::gethostname() {
        Ok(name) => name.to_string_lossy().into_owned(),
        Err(_) => "localhost".to_string(),
    }
}

/// The pid of the process at the other end of a Unix stream socket.
pub fn peer_pid(stream: &std::os::unix::net::UnixStream) -> Option<i32> {
    getsockopt(stream, PeerCredentials)
        .ok()
        .map(|cred| cred.pid())
}

/// The parent of process `pid`, from `/proc/PID/stat` (`None` if it is gone).
pub fn parent_of(pid: i32) -> Option<i32> {
    stat_field(pid, 4).and_then(|f| f.parse::<i32>().ok())
}

/// Whether process `pid` descends from process `ancestor` (its parent chain in `/proc` reaches
/// it). A parent that exits while the chain is read re-parents its children to the nearest
/// subreaper (ddbx, for a session's processes): the child's parent is then read again.
pub fn is_descendant(pid: i32, ancestor: i32) -> bool {
    let mut child = pid;
    let Some(mut parent) = parent_of(child) else {
        return false;
    };
    // Bounded: a chain is never longer than the number of processes, and each retry follows
    // a re-parenting, which only shortens it. One read per process of the chain: the read that
    // shows a parent still there also gives its own parent.
    for _ in 0..4096 {
        if parent == ancestor {
            return true;
        }
        if parent <= 1 {
            return false;
        }
        match parent_of(parent) {
            Some(grandparent) => (child, parent) = (parent, grandparent),
            // The parent has gone since: read the child's parent again.
            None => match parent_of(child) {
                Some(p) => parent = p,
                None => return false,
            },
        }
    }
    false
}

/// The credentials (pid, uid) of the process at the other end of a Unix stream socket.
pub fn peer_credentials(stream: &std::os::unix::net::UnixStream) -> Option<(i32, u32)> {
    getsockopt(stream, PeerCredentials)
        .ok()
        .map(|cred| (cred.pid(), cred.uid()))
}

/// 16 random bytes from the kernel, in hex: a session's secret.
pub fn session_key() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// SIGINT and SIGTERM, the signals that stop a session.
fn stop_signals() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    set
}

/// Blocks SIGINT and SIGTERM in the calling thread (and the threads it starts from now on), so
/// that only a [`StopSignalReader`] receives them. Returns the previous mask, for
/// [`restore_mask`].
pub fn block_stop_signals() -> std::io::Result<SigSet> {
    stop_signals()
        .thread_swap_mask(SigmaskHow::SIG_BLOCK)
        .map_err(std::io::Error::from)
}

/// SIGINT or SIGTERM if one is pending for this process or thread (blocked, not read yet).
pub fn pending_stop_signal() -> Option<i32> {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigpending fills the set we pass, which is valid for writes; it is read only
    // after it succeeded.
    let set = unsafe {
        if libc::sigpending(set.as_mut_ptr()) != 0 {
            return None;
        }
        set.assume_init()
    };
    [libc::SIGINT, libc::SIGTERM]
        .into_iter()
        // SAFETY: the set was filled by sigpending.
        .find(|&sig| unsafe { libc::sigismember(&set, sig) } == 1)
}

/// Restores a signal mask saved by [`block_stop_signals`].
pub fn restore_mask(old: &SigSet) {
    // Only an invalid `how` makes this fail.
    let _ = old.thread_set_mask();
}

/// Reads the (blocked) SIGINT and SIGTERM sent to this process, from a signalfd.
#[derive(Debug)]
pub struct StopSignalReader {
    fd: SignalFd,
}

impl StopSignalReader {
    /// Opens the reader; the signals must be blocked in every thread ([`block_stop_signals`]
    /// before any thread starts), or one of them may take the signal instead.
    pub fn open() -> std::io::Result<StopSignalReader> {
        let flags = SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC;
        let fd = SignalFd::with_flags(&stop_signals(), flags).map_err(std::io::Error::from)?;
        Ok(StopSignalReader { fd })
    }

    /// Waits up to `timeout` for SIGINT or SIGTERM; returns it if one came.
    pub fn wait(&self, timeout: Duration) -> Option<i32> {
        self.wait_unless(timeout, None)
    }

    /// [`StopSignalReader::wait`], ending early (with `None`) when `wake` becomes readable.
    pub fn wait_unless(&self, timeout: Duration, wake: Option<BorrowedFd<'_>>) -> Option<i32> {
        let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
        let mut fds = vec![PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        fds.extend(wake.map(|w| PollFd::new(w, PollFlags::POLLIN)));
        match poll(&mut fds, timeout) {
            Ok(n) if n > 0 => {}
            _ => return None,
        }
        if !fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLIN))
        {
            return None;
        }
        let info = self.fd.read_signal().ok()??;
        Some(info.ssi_signo as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_its_descendants() {
        let me = std::process::id() as i32;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let kid = child.id() as i32;
        assert!(is_descendant(kid, me));
        assert!(!is_descendant(me, kid));
        assert!(!is_descendant(1, me));
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn keys_differ() {
        let (a, b) = (session_key().unwrap(), session_key().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    #[test]
    fn reads_own_stat() {
        let me = std::process::id() as i32;
        assert!(start_time(me).is_some());
        assert_eq!(start_time(-5), None);
        assert!(!host_name().is_empty());
    }
}
