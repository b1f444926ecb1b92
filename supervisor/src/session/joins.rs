//! Processes that must join the session: the execs an LD announced, and whether each new image
//! said `Hello`. An image that never does ran unmanaged — the loader could not load the preload
//! (it was out of reach of the uid the program switched to, or of a `chroot`), or its LD could
//! not reach the GD — and the session must say so rather than drop it silently.

use ddbx_wire::ActorId;
use std::collections::BTreeMap;

/// The execs of one process image of an actor, as announced and as joined.
#[derive(Debug, Default)]
struct ExecCount {
    /// `Execing` notes.
    announced: u64,
    /// `ExecFailed` notes.
    failed: u64,
    /// Exec'd images welcomed.
    joined: u64,
    /// The program of the latest announcement, and the uids it was exec'd with.
    last: (String, (u32, u32)),
}

/// Every actor's announced and joined execs, by actor and pid (counted, not paired: the new
/// image's `Hello` comes on another connection and may be read before the announcement).
#[derive(Debug, Default)]
pub(crate) struct Execs {
    by_process: BTreeMap<(ActorId, i32), ExecCount>,
}

impl Execs {
    /// `actor` (process `pid`) is about to exec `program` with real and effective `uid`.
    pub(crate) fn announced(&mut self, actor: ActorId, pid: i32, program: String, uid: (u32, u32)) {
        let count = self.by_process.entry((actor, pid)).or_default();
        count.announced += 1;
        count.last = (program, uid);
    }

    /// The exec `actor` (process `pid`) announced failed.
    pub(crate) fn failed(&mut self, actor: ActorId, pid: i32) {
        self.by_process.entry((actor, pid)).or_default().failed += 1;
    }

    /// An exec'd image of `actor` (process `pid`) was welcomed.
    pub(crate) fn joined(&mut self, actor: ActorId, pid: i32) {
        self.by_process.entry((actor, pid)).or_default().joined += 1;
    }

    /// The execs whose new image never joined: the actor, and what happened, for the user.
    pub(crate) fn lost(&self) -> Vec<(ActorId, String)> {
        self.by_process
            .iter()
            .filter(|(_, c)| c.announced > c.failed + c.joined)
            .map(|((actor, pid), c)| {
                let (program, (ruid, euid)) = &c.last;
                let program = if program.is_empty() {
                    "a program".to_string()
                } else {
                    format!("`{program}`")
                };
                let uid = if ruid == euid {
                    format!("uid {ruid}")
                } else {
                    format!("uid {ruid} (effective {euid})")
                };
                let what = format!(
                    "pid {pid} exec'd {program} as {uid}, and its new image never \
                     joined the session: the loader could not load ddbx's preload (out of that \
                     user's or a chroot's reach?) or its LD could not reach ddbx; nothing that \
                     image did is recorded"
                );
                (*actor, what)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exec_is_lost_until_its_image_joins_in_any_order() {
        let mut execs = Execs::default();
        execs.joined(ActorId(2), 40);
        execs.announced(ActorId(2), 40, "/bin/sh".into(), (0, 0));
        assert!(execs.lost().is_empty());
        execs.announced(ActorId(2), 40, "/usr/bin/env".into(), (65534, 65534));
        let lost = execs.lost();
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].0, ActorId(2));
        assert!(
            lost[0]
                .1
                .starts_with("pid 40 exec'd `/usr/bin/env` as uid 65534,")
        );
        execs.failed(ActorId(2), 40);
        assert!(execs.lost().is_empty());
    }
}
