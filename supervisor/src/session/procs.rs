//! The process tree: subreaping, reaping, killing, and facts read from `/proc`.

use ddbx_wire::manifest::ExitStatus;
use std::collections::HashMap;

/// Makes this process a child subreaper: orphaned descendants are re-parented to it, so that
/// it can reap them and knows when the whole tree has gone.
pub fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument and touches no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
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
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ECHILD) => return Ok(Reaped::NoChildren),
            _ => return Err(err),
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

/// Sends SIGKILL to every live descendant of this process. Returns how many were sent.
pub fn kill_descendants() -> usize {
    let me = std::process::id() as i32;
    let pids = descendants(me);
    for pid in &pids {
        // SAFETY: kill takes two integers and touches no memory.
        unsafe {
            libc::kill(*pid, libc::SIGKILL);
        }
    }
    pids.len()
}

/// The start time of process `pid` (clock ticks after boot, `/proc/<pid>/stat` field 22).
pub fn start_time(pid: i32) -> Option<u64> {
    stat_field(pid, 22)?.parse().ok()
}

/// Field `n` (1-based, as in proc(5)) of `/proc/<pid>/stat`.
fn stat_field(pid: i32, n: usize) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: split after it.
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace()
        .nth(n.checked_sub(3)?)
        .map(str::to_string)
}

/// This machine's host name.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".to_string();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The pid of the process at the other end of a Unix stream socket.
pub fn peer_pid(stream: &std::os::unix::net::UnixStream) -> Option<i32> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED writes a ucred of at most `len` bytes into `cred`.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.pid)
}

/// Blocks SIGINT and SIGTERM in the calling thread (and the threads it starts from now on), so
/// that only [`wait_signal`] receives them. Returns the previous mask, for [`restore_mask`].
pub fn block_stop_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; the libc calls only write into the sets we pass.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        old
    }
}

/// Restores a signal mask saved by [`block_stop_signals`].
pub fn restore_mask(old: &libc::sigset_t) {
    // SAFETY: `old` is a valid sigset_t.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut());
    }
}

/// Waits up to `timeout` for a (blocked) SIGINT or SIGTERM; returns it if one came.
pub fn wait_signal(timeout: std::time::Duration) -> Option<i32> {
    // SAFETY: plain-data sets and timespec; sigtimedwait only reads them and writes nothing
    // we did not pass (the info pointer is null).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        let sig = libc::sigtimedwait(&set, std::ptr::null_mut(), &ts);
        (sig > 0).then_some(sig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_stat() {
        let me = std::process::id() as i32;
        assert!(start_time(me).is_some());
        assert_eq!(start_time(-5), None);
        assert!(!host_name().is_empty());
    }
}
