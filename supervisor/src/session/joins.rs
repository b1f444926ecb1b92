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

/// What must join: the next image of a process (an actor and its pid), or a child a
/// posix_spawn made (the parent actor and the child's number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Joiner {
    Exec(ActorId, i32),
    Spawn(ActorId, u32),
}

/// Every announced exec and spawn, and the images that joined (counted, not paired: the new
/// image's `Hello` comes on another connection and may be read before the announcement).
#[derive(Debug, Default)]
pub(crate) struct Execs {
    by_process: BTreeMap<Joiner, ExecCount>,
    /// Images exec'd to run unrecorded (their LD said why: a static or a Go program), by
    /// actor and pid.
    unrecorded: BTreeMap<(ActorId, i32), String>,
}

impl Execs {
    /// `actor` (process `pid`) is about to exec `program` with real and effective `uid`.
    pub(crate) fn announced(&mut self, actor: ActorId, pid: i32, program: String, uid: (u32, u32)) {
        let count = self.by_process.entry(Joiner::Exec(actor, pid)).or_default();
        count.announced += 1;
        count.last = (program, uid);
    }

    /// `actor` spawned its child number `index`, running `program`, with real and effective
    /// `uid`.
    pub(crate) fn spawned(&mut self, actor: ActorId, index: u32, program: String, uid: (u32, u32)) {
        let count = self
            .by_process
            .entry(Joiner::Spawn(actor, index))
            .or_default();
        count.announced += 1;
        count.last = (program, uid);
    }

    /// The child number `index` that `parent` spawned was welcomed.
    pub(crate) fn spawn_joined(&mut self, parent: ActorId, index: u32) {
        self.by_process
            .entry(Joiner::Spawn(parent, index))
            .or_default()
            .joined += 1;
    }

    /// `actor` (process `pid`) is about to exec a program that will run unrecorded (`what`
    /// says which and why).
    pub(crate) fn unrecorded(&mut self, actor: ActorId, pid: i32, what: String) {
        self.unrecorded.insert((actor, pid), what);
    }

    /// The exec `actor` (process `pid`) announced failed.
    pub(crate) fn failed(&mut self, actor: ActorId, pid: i32) {
        if self.unrecorded.remove(&(actor, pid)).is_some() {
            return; // an exec to run unrecorded, which was not announced
        }
        self.by_process
            .entry(Joiner::Exec(actor, pid))
            .or_default()
            .failed += 1;
    }

    /// An exec'd image of `actor` (process `pid`) was welcomed.
    pub(crate) fn joined(&mut self, actor: ActorId, pid: i32) {
        self.by_process
            .entry(Joiner::Exec(actor, pid))
            .or_default()
            .joined += 1;
    }

    /// The execs and spawns whose new image never joined, and the images exec'd to run
    /// unrecorded: the actor (the one that exec'd, or the spawning parent), what happened, for
    /// the user, and whether the actor itself ran unrecorded from then on (an exec; a spawned
    /// child never became an actor).
    pub(crate) fn lost(&self) -> Vec<(ActorId, String, bool)> {
        self.by_process
            .iter()
            .filter(|(_, c)| c.announced > c.failed + c.joined)
            .map(|(joiner, c)| {
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
                let (actor, did) = match *joiner {
                    Joiner::Exec(actor, pid) => (
                        actor,
                        format!("pid {pid} exec'd {program} as {uid}, and its new image"),
                    ),
                    Joiner::Spawn(actor, index) => (
                        actor,
                        format!("its child number {index}, spawned to run {program} by {uid},"),
                    ),
                };
                let what = format!(
                    "{did} never joined the session: the loader did not load ddbx's preload \
                     (out of that user's or a chroot's reach, or a set-user-ID or file-capability \
                     program, for which the loader ignores LD_PRELOAD) or its LD could not reach \
                     ddbx; nothing it did is recorded"
                );
                (actor, what, matches!(joiner, Joiner::Exec(..)))
            })
            .chain(
                self.unrecorded
                    .iter()
                    .map(|((actor, _), what)| (*actor, what.clone(), true)),
            )
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
        assert_eq!((lost[0].0, lost[0].2), (ActorId(2), true));
        assert!(
            lost[0]
                .1
                .starts_with("pid 40 exec'd `/usr/bin/env` as uid 65534,")
        );
        execs.failed(ActorId(2), 40);
        assert!(execs.lost().is_empty());
        execs.spawned(ActorId(3), 2, "/bin/true".into(), (1000, 1000));
        assert_eq!(execs.lost().len(), 1);
        assert!(
            execs.lost()[0]
                .1
                .starts_with("its child number 2, spawned to run `/bin/true`")
        );
        execs.spawn_joined(ActorId(3), 2);
        assert!(execs.lost().is_empty());
    }
}
