//! The handshake: a `Hello` resolved to an actor by the registry, answered with `Welcome`
//! (what the LD must know: its actor, its mode, its files, its replay and halting plans) or
//! `Refuse` (and the session stops: a process the session cannot place).

use super::note;
use crate::actors::{HelloFacts, Resolution};
use crate::session::events::{MainEvent, SessionEvent};
use crate::session::gd_state::{GdState, Tables};
use crate::session::halting::HaltingWelcome;
use crate::session::outcome::{Divergence, End};
use ddbx_wire::ActorId;
use ddbx_wire::history::Origin;
use ddbx_wire::manifest::Manifest;
use ddbx_wire::proto::{GdToLd, HaltPlan, Mode, Passed};

use crate::session::spares::open_private;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::MutexGuard;

/// The answer to a `Hello`.
pub(super) struct Greeting {
    /// The actor the process is (`None`: refused).
    pub(super) actor: Option<ActorId>,
    /// Its halting incarnation (0 outside a halting replay).
    pub(super) incarnation: u64,
    /// What to send.
    pub(super) reply: GdToLd,
    /// The descriptors that go with it (the `Welcome`'s `passed`, in order).
    pub(super) fds: Vec<OwnedFd>,
}

/// Resolves a `Hello` and makes the reply.
pub(super) fn welcome(gd: &GdState, hello: &HelloFacts) -> Greeting {
    let mut tables = gd.lock();
    let resolution = tables.registry.hello(hello);
    gd.changed.notify_all();
    match resolution {
        Resolution::Welcome {
            actor,
            origin,
            exec,
            new_actor,
        } => {
            let (halting, incarnation) = match tables.halting.as_mut() {
                Some(h) => {
                    let HaltingWelcome { plan, incarnation } = h.welcomed(actor, hello.pid);
                    (Some(plan), incarnation)
                }
                None => (None, 0),
            };
            if new_actor {
                append_to_manifest(gd, tables, actor);
            } else {
                drop(tables);
            }
            gd.send(MainEvent::Event(SessionEvent::ActorStarted {
                actor,
                pid: hello.pid,
                origin,
                argv: hello.argv.clone(),
                exec,
            }));
            if exec {
                gd.lock().execs.joined(actor, hello.pid);
            }
            if let ddbx_wire::proto::Claim::Spawn { parent, index } = hello.claim {
                gd.lock().execs.spawn_joined(parent, index);
            }
            if let Some(live) = gd.lock().live.as_mut() {
                live.bind(actor, &hello.argv);
            }
            let (reply, fds) = welcome_reply(gd, actor, origin, exec, halting);
            Greeting {
                actor: Some(actor),
                incarnation,
                reply,
                fds,
            }
        }
        Resolution::Refuse { why, .. } => {
            drop(tables);
            refuse(gd, hello, why)
        }
    }
}

/// Record (or replay with `--history-out`): a new actor goes into the manifest at once, so
/// that a session killed midway leaves a loadable recording.
fn append_to_manifest(gd: &GdState, tables: MutexGuard<'_, Tables>, actor: ActorId) {
    let Some(dir) = &gd.manifest_dir else {
        return;
    };
    let Some(info) = tables.registry.actors().iter().find(|a| a.id == actor) else {
        return;
    };
    if let Err(e) = Manifest::append_actor(dir, info) {
        let line = format!(
            "ddbx: cannot update {}: {e}",
            dir.join(Manifest::FILE).display()
        );
        drop(tables);
        note(gd, line);
    }
}

/// The `Welcome` of `actor`, and the descriptors that go with it: the GD opens the actor's
/// files itself, so that a process that switched to another uid still writes its history in
/// the private recording directory (the LD opens by path what could not be opened here).
fn welcome_reply(
    gd: &GdState,
    actor: ActorId,
    origin: Origin,
    exec: bool,
    halting: Option<HaltPlan>,
) -> (GdToLd, Vec<OwnedFd>) {
    let history_out = gd
        .manifest_dir
        .as_ref()
        .map(|d| Manifest::history_path(d, actor));
    let state_file = gd.state_dir.join(actor.to_string());
    let replay = gd
        .plans
        .as_ref()
        .map(|plans| Box::new(plans.get(&actor).cloned().unwrap_or_default()));
    let files = [
        (Passed::State, Some(open_private(&state_file, false))),
        (
            Passed::History,
            history_out.as_deref().map(|p| gd.spares.open(p)),
        ),
        (
            Passed::Replay,
            replay
                .as_ref()
                .filter(|plan| !plan.history.is_empty())
                .map(|plan| ddbx_wire::file::open_regular(Path::new(&plan.history))),
        ),
    ];
    let mut passed = Vec::new();
    let mut fds = Vec::new();
    for (what, file) in files {
        if let Some(Ok(file)) = file {
            passed.push(what);
            fds.push(OwnedFd::from(file));
        }
    }
    let reply = GdToLd::Welcome {
        actor,
        origin,
        exec,
        mode: if gd.plans.is_some() {
            Mode::Replay
        } else {
            Mode::Record
        },
        history_out: history_out.map(|p| p.to_string_lossy().into_owned()),
        state_file: state_file.to_string_lossy().into_owned(),
        replay,
        halting,
        passed,
        steer: gd.steer.as_ref().and_then(|s| s.plan_for(actor)),
        live: gd.lock().live.as_ref().map(|l| l.plan_for(actor)),
    };
    (reply, fds)
}

/// Refuses a process: the LD is told first; the session then stops (a replay diverged, or a
/// record met a process it cannot place).
fn refuse(gd: &GdState, hello: &HelloFacts, why: String) -> Greeting {
    let end = if gd.plans.is_some() {
        End::Diverged(Divergence {
            actor: None,
            event: None,
            expected: "only the processes of the record".into(),
            found: why.clone(),
            message: format!("ddbx: replay diverged: {why} (pid {})", hello.pid),
        })
    } else {
        End::Unsupported {
            actor: None,
            what: format!("pid {} refused: {why}", hello.pid),
        }
    };
    gd.send(MainEvent::Stop(end));
    Greeting {
        actor: None,
        incarnation: 0,
        reply: GdToLd::Refuse { why },
        fds: Vec::new(),
    }
}
