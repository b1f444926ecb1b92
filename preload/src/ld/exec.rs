//! What an exec'd image needs: the LD in its environment (a program may exec with an
//! environment of its own, without `LD_PRELOAD` or `DDBX_GD`), a note to the GD when the new
//! program is statically linked and so will not load the LD at all, and otherwise an
//! announcement (`Execing`) that the GD checks against the new image's `Hello`.
//!
//! Exec keeps the actor: the new image finds its actor by pid when it says `Hello`.

use super::Ld;
use libc::c_char;

/// An environment for a new image: the program's `entries`, plus what the LD needs (if
/// missing; `ld` is `None` when the LD is not running) and any `extra` entries (which replace
/// entries of the same name).
pub fn exec_environment(
    mut entries: Vec<Vec<u8>>,
    ld: Option<&Ld>,
    extra: &[(&str, Vec<u8>)],
) -> Vec<Vec<u8>> {
    let set = |out: &mut Vec<Vec<u8>>, name: &str, value: &[u8], replace: bool| {
        let prefix = format!("{name}=");
        let pos = out.iter().position(|e| e.starts_with(prefix.as_bytes()));
        let mut entry = prefix.into_bytes();
        entry.extend_from_slice(value);
        match pos {
            Some(i) if replace => out[i] = entry,
            Some(_) => {}
            None => out.push(entry),
        }
    };
    if let Some(ld) = ld {
        for (name, value) in ld.required_env() {
            if !value.is_empty() {
                set(&mut entries, name, value, false);
            }
        }
    }
    if let Some(ld) = ld
        && ld.records_pipes()
    {
        let pipes = crate::fds::pipes::for_exec();
        set(&mut entries, ddbx_wire::env::PIPES, &pipes, true);
    }
    if ld.is_some_and(|ld| ld.mode == ddbx_wire::proto::Mode::Replay) {
        let ports = crate::fds::ports::for_exec();
        if !ports.is_empty() {
            set(&mut entries, ddbx_wire::env::PORTS, &ports, true);
        }
    }
    for (name, value) in extra {
        set(&mut entries, name, value, true);
    }
    entries
}

/// A program whose calls the LD cannot see ([`Ld::report_if_unrecorded`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Unseen {
    /// Statically linked: the loader does not load the LD.
    Static,
    /// A Go program: the loader would load the LD, but its runtime bypasses libc. It gets an
    /// environment without the LD ([`without_ld`]), so that neither it nor what it starts
    /// joins the session half-seen.
    Go,
}

/// Takes ddbx's preload out of `LD_PRELOAD` in an exec's environment (`NAME=value` entries),
/// keeping any other library the user preloads.
pub fn without_ld(entries: &mut Vec<Vec<u8>>) {
    let Some(i) = entries.iter().position(|e| e.starts_with(b"LD_PRELOAD=")) else {
        return;
    };
    let value = &entries[i][b"LD_PRELOAD=".len()..];
    let kept: Vec<&[u8]> = value
        .split(|b| *b == b':' || *b == b' ')
        .filter(|lib| !lib.is_empty() && !lib.ends_with(b"libddbx_preload.so"))
        .collect();
    if kept.is_empty() {
        entries.remove(i);
    } else {
        entries[i] = [&b"LD_PRELOAD="[..], &kept.join(&b':')].concat();
    }
}

/// NUL-terminated copies of some byte strings and the null-terminated pointer array that
/// execve and posix_spawn want (valid while this lives).
pub struct CStringArray {
    /// The copies the pointers point into.
    _owned: Vec<Vec<u8>>,
    pointers: Vec<*const c_char>,
}

impl CStringArray {
    /// Copies `entries` (dropping any NUL inside them).
    pub fn new(entries: &[Vec<u8>]) -> CStringArray {
        let owned: Vec<Vec<u8>> = entries
            .iter()
            .map(|e| {
                let mut v: Vec<u8> = e.iter().copied().filter(|b| *b != 0).collect();
                v.push(0);
                v
            })
            .collect();
        let mut pointers: Vec<*const c_char> = owned.iter().map(|v| v.as_ptr().cast()).collect();
        pointers.push(std::ptr::null());
        CStringArray {
            _owned: owned,
            pointers,
        }
    }

    /// The pointer array.
    pub fn as_ptr(&self) -> *const *const c_char {
        self.pointers.as_ptr()
    }
}

impl Ld {
    /// Reports a program about to be exec'd (`exec`) or spawned that will run unrecorded: a
    /// statically linked one (it will not load the LD) or a Go program (its runtime makes its
    /// system calls without libc). An exec's actor runs unrecorded from then on, which the
    /// session reports at its end; a spawned child never becomes an actor. `search` looks
    /// `name` up in PATH (execvp and friends). Returns what it is, if one.
    pub fn report_if_unrecorded(
        &mut self,
        name: &[u8],
        search: bool,
        exec: bool,
    ) -> Option<Unseen> {
        let candidates: Vec<Vec<u8>> = if !search || name.contains(&b'/') {
            vec![name.to_vec()]
        } else {
            let dirs = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
            std::env::split_paths(&dirs)
                .map(|d| {
                    let mut p = d.into_os_string().into_encoded_bytes();
                    p.push(b'/');
                    p.extend_from_slice(name);
                    p
                })
                .collect()
        };
        for candidate in candidates {
            let fd = crate::sys::open(&candidate, libc::O_RDONLY | libc::O_CLOEXEC, 0);
            if fd < 0 {
                continue;
            }
            let mut head = [0u8; ddbx_wire::elf::HEADER_BYTES];
            let n = crate::sys::read(fd, &mut head).max(0) as usize;
            crate::sys::close(fd);
            let program = String::from_utf8_lossy(&candidate);
            let (unseen, what) = if ddbx_wire::elf::is_static(&head[..n]) == Some(true) {
                let what = format!("{program} is statically linked: nothing it does is recorded");
                (Unseen::Static, what)
            } else if ddbx_wire::elf::is_go(&head[..n]) {
                let what = format!(
                    "{program} is a Go program: the Go runtime makes its system calls without libc, so nothing it does is recorded"
                );
                (Unseen::Go, what)
            } else {
                return None;
            };
            let actor = self.actor;
            self.send(&if exec {
                ddbx_wire::proto::LdToGd::RunsUnrecorded { actor, what }
            } else {
                ddbx_wire::proto::LdToGd::Passthrough { actor, what }
            });
            return Some(unseen);
        }
        None
    }

    /// Tells the GD that this image is about to exec `program`: the new image must join (the
    /// GD reports it if it never does). `exec_failed` takes it back.
    pub fn announce_exec(&mut self, program: &[u8]) {
        // SAFETY: getuid and geteuid cannot fail and touch no memory.
        let uid = unsafe { (libc::getuid(), libc::geteuid()) };
        self.send(&ddbx_wire::proto::LdToGd::Execing {
            actor: self.actor,
            program: String::from_utf8_lossy(program).into_owned(),
            uid,
        });
    }

    /// Tells the GD that a posix_spawn made child number `index`, running `program`: the GD
    /// reports it if it never joins.
    pub fn announce_spawn(&mut self, index: u32, program: &[u8]) {
        // SAFETY: getuid and geteuid cannot fail and touch no memory.
        let uid = unsafe { (libc::getuid(), libc::geteuid()) };
        self.send(&ddbx_wire::proto::LdToGd::Spawned {
            actor: self.actor,
            index,
            program: String::from_utf8_lossy(program).into_owned(),
            uid,
        });
    }

    /// The exec announced by [`Ld::announce_exec`] returned: it failed, this image goes on.
    pub fn exec_failed(&mut self) {
        self.send(&ddbx_wire::proto::LdToGd::ExecFailed { actor: self.actor });
    }
}
