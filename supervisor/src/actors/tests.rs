//! The resolution rules as tables: each `Hello` and the answer it must get.

use super::*;
use ddbx_wire::PROTOCOL_VERSION;
use ddbx_wire::history::Origin;
use ddbx_wire::manifest::ExitStatus;
use ddbx_wire::proto::Claim;

const DDBX: i32 = 1000;

const ROOT_CLAIM: Claim = Claim::Spawn {
    parent: ActorId(0),
    index: 1,
};

fn hello(pid: i32, ppid: i32, claim: Claim) -> HelloFacts {
    HelloFacts {
        protocol: PROTOCOL_VERSION,
        pid,
        ppid,
        claim,
        argv: vec![format!("./prog{pid}")],
        start_time: Some(pid as u64 * 10),
    }
}

fn p(n: u32) -> ActorId {
    ActorId(n)
}

fn fork_claim(parent: u32, index: u32) -> Claim {
    Claim::Fork {
        parent: p(parent),
        index,
    }
}

fn spawn_claim(parent: u32, index: u32) -> Claim {
    Claim::Spawn {
        parent: p(parent),
        index,
    }
}

fn forked(parent: u32, index: u32) -> Origin {
    Origin::Fork {
        parent: p(parent),
        index,
    }
}

fn spawned(parent: u32, index: u32) -> Origin {
    Origin::Spawn {
        parent: p(parent),
        index,
    }
}

fn unhooked(parent: u32, index: u32) -> Origin {
    Origin::Unhooked {
        parent: p(parent),
        index,
    }
}

/// A new actor welcomed.
fn new_actor(actor: u32, origin: Origin) -> Resolution {
    Resolution::Welcome {
        actor: ActorId(actor),
        origin,
        exec: false,
        new_actor: true,
    }
}

/// An exec of a live actor welcomed.
fn exec_of(actor: u32, origin: Origin) -> Resolution {
    Resolution::Welcome {
        actor: ActorId(actor),
        origin,
        exec: true,
        new_actor: false,
    }
}

fn check_table(reg: &mut Registry, table: Vec<(HelloFacts, Resolution)>) {
    for (i, (facts, expected)) in table.into_iter().enumerate() {
        assert_eq!(reg.hello(&facts), expected, "row {i}: {facts:?}");
    }
}

#[test]
fn record_table() {
    let mut reg = Registry::for_record(DDBX, "h");
    check_table(
        &mut reg,
        vec![
            (hello(10, DDBX, ROOT_CLAIM), new_actor(1, Origin::Root)),
            // exec of the root: same pid, same start time
            (hello(10, DDBX, ROOT_CLAIM), exec_of(1, Origin::Root)),
            (hello(11, 10, fork_claim(1, 1)), new_actor(2, forked(1, 1))),
            (
                hello(12, 10, spawn_claim(1, 2)),
                new_actor(3, spawned(1, 2)),
            ),
            (hello(13, 11, Claim::Unknown), new_actor(4, unhooked(2, 1))),
            (hello(14, 11, Claim::Unknown), new_actor(5, unhooked(2, 2))),
            // parent pid unknown: attached to ddbx itself
            (
                hello(15, 4242, Claim::Unknown),
                new_actor(6, unhooked(0, 1)),
            ),
            // an orphan re-parented to ddbx with the root's environment: not a second root
            (hello(16, DDBX, ROOT_CLAIM), new_actor(7, unhooked(0, 2))),
        ],
    );
    let ids: Vec<u32> = reg.actors().iter().map(|a| a.id.0).collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(reg.actors()[1].argv, vec!["./prog11".to_string()]);
    assert_eq!(reg.actors()[1].host, "h");
}

#[test]
fn exited_pids_are_free_for_new_processes() {
    let mut reg = Registry::for_record(DDBX, "h");
    reg.hello(&hello(10, DDBX, ROOT_CLAIM));
    reg.hello(&hello(11, 10, fork_claim(1, 1)));
    reg.exited(11, Some(ExitStatus::Exited(3)));
    assert_eq!(reg.live_actor(11), None);
    assert_eq!(reg.actors()[1].exit, Some(ExitStatus::Exited(3)));
    // pid 11 reused by the root's second child
    let r = reg.hello(&hello(11, 10, fork_claim(1, 2)));
    assert_eq!(r, new_actor(3, forked(1, 2)));
    // a reused pid whose exit the GD never heard of: the start time tells them apart
    let mut other = hello(11, 10, fork_claim(1, 3));
    other.start_time = Some(999);
    assert_eq!(reg.hello(&other), new_actor(4, forked(1, 3)));
    assert_eq!(reg.live_pids(), vec![10, 11]);
}

#[test]
fn an_image_that_says_hello_after_its_end_was_told_is_its_actors_exec() {
    let mut reg = Registry::for_record(DDBX, "h");
    reg.hello(&hello(10, DDBX, ROOT_CLAIM));
    let mut child = hello(11, 10, fork_claim(1, 1));
    child.start_time = Some(500);
    reg.hello(&child);
    // Killed as its exec'd image said hello: the parent's reap came in first.
    reg.exited(11, Some(ExitStatus::Signaled(15)));
    let mut image = hello(11, 10, Claim::Unknown);
    image.start_time = Some(500);
    let exec = Resolution::Welcome {
        actor: ActorId(2),
        origin: forked(1, 1),
        exec: true,
        new_actor: false,
    };
    assert_eq!(reg.hello(&image), exec);
    // The same, its process gone by the time the GD reads its start time.
    image.start_time = None;
    assert_eq!(reg.hello(&image), exec);
    // Another process with that pid since: not the actor's.
    image.start_time = Some(501);
    assert_eq!(reg.hello(&image), new_actor(3, unhooked(1, 1)));
}

#[test]
fn duplicate_origins_and_wrong_protocols_are_refused() {
    let mut reg = Registry::for_record(DDBX, "h");
    reg.hello(&hello(10, DDBX, ROOT_CLAIM));
    reg.hello(&hello(11, 10, fork_claim(1, 1)));
    let r = reg.hello(&hello(12, 10, fork_claim(1, 1)));
    assert!(
        matches!(r, Resolution::Refuse { ref why, .. } if why.contains("p2")),
        "{r:?}"
    );
    let mut old = hello(13, 10, Claim::Unknown);
    old.protocol = PROTOCOL_VERSION + 1;
    let r = reg.hello(&old);
    assert!(
        matches!(r, Resolution::Refuse { ref why, .. } if why.contains("protocol")),
        "{r:?}"
    );
}

fn recorded(id: u32, origin: Origin) -> ActorInfo {
    ActorInfo {
        id: p(id),
        origin,
        pid: 500 + id as i32,
        argv: vec!["./x".into()],
        host: "h".into(),
        exit: Some(ExitStatus::Exited(0)),
        reaps: Vec::new(),
        signalled_by: Vec::new(),
        unrecorded: None,
    }
}

#[test]
fn replay_table() {
    let manifest = vec![
        recorded(1, Origin::Root),
        recorded(2, forked(1, 2)),
        recorded(3, forked(1, 1)),
        recorded(4, unhooked(3, 1)),
    ];
    let mut reg = Registry::for_replay(DDBX, "h", manifest);
    check_table(
        &mut reg,
        vec![
            (hello(20, DDBX, ROOT_CLAIM), new_actor(1, Origin::Root)),
            // replay creates the children in another order: ids follow the origin
            (hello(21, 20, fork_claim(1, 1)), new_actor(3, forked(1, 1))),
            (hello(22, 20, fork_claim(1, 2)), new_actor(2, forked(1, 2))),
            (hello(21, 20, Claim::Unknown), exec_of(3, forked(1, 1))),
            (hello(23, 21, Claim::Unknown), new_actor(4, unhooked(3, 1))),
        ],
    );
    let r = reg.hello(&hello(24, 21, fork_claim(3, 2)));
    assert_eq!(
        r,
        Resolution::Refuse {
            why: "a process the record did not have: created as Fork{parent: p3, index: 2}".into(),
            origin: Some(forked(3, 2)),
        }
    );
    assert_eq!(reg.actors().len(), 4);
    assert_eq!(reg.actors()[1].pid, 21);
}

#[test]
fn a_signal_sent_before_its_targets_hello_is_the_targets() {
    let mut reg = Registry::for_record(DDBX, "h");
    reg.hello(&hello(10, DDBX, ROOT_CLAIM));
    // The root kills its new child before the GD has read the child's `Hello`.
    reg.signalled(11, ActorId(1), 15);
    reg.hello(&hello(11, 10, fork_claim(1, 1)));
    assert_eq!(reg.actors()[1].signalled_by, vec![(ActorId(1), 15)]);
    // Given once: a later process with that pid is not signalled.
    reg.exited(11, Some(ExitStatus::Signaled(15)));
    reg.hello(&hello(11, 10, fork_claim(1, 2)));
    assert!(reg.actors()[2].signalled_by.is_empty());
}
