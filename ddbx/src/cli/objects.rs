//! Threads and lock objects in the offline commands: `ddbx show --obj N` (one lock object's
//! history, paper 000's `obj` listing) and the thread rows of `ddbx ps`.
//!
//! ```text
//! p1 object 1 (mutex): 401 accesses
//!      0  p1.t5  new mutex
//!      1  p1.t5  lock  (x37: to access 37)
//!     38  p1.t3  trylock EBUSY
//! ```
//!
//! One line per run of equal accesses (as the lock history stores them). `--json` prints
//! `{"actor": "p1", "object": 1, "kind": "mutex", "accesses": 401, "truncated": false,
//! "runs": [{"n": 0, "count": 1, "thread": "p1.t5", "op": "new", "arg": 1, "text": "new
//! mutex"}]}`.

use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::wire::ActorId;
use ddbx_supervisor::wire::locks::{self, LockHistory, ThreadInfo, kind};

/// The lock history of `actor` (given), or of the only actor that has one.
fn lock_history<'a>(
    recording: &'a Recording,
    actor: Option<&str>,
) -> Result<(ActorId, &'a LockHistory), Error> {
    match actor {
        Some(name) => {
            let id = recording.find_actor(name).map_err(Error::Usage)?;
            recording
                .locks
                .iter()
                .find(|(a, _)| *a == id)
                .map(|(a, h)| (*a, h))
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "{id} has no lock history (it made no thread), so no object to show"
                    ))
                })
        }
        None => match recording.locks.as_slice() {
            [(a, h)] => Ok((*a, h)),
            [] => Err(Error::Usage(
                "expected a recording with a lock history (a process that made threads), \
                 found none"
                    .into(),
            )),
            many => Err(Error::Usage(format!(
                "several actors have lock objects ({}): name one (`ddbx show DIR ACTOR --obj N`)",
                many.iter()
                    .map(|(a, _)| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        },
    }
}

/// `N` or `oN`.
fn object_number(spec: &str) -> Result<usize, Error> {
    spec.strip_prefix('o').unwrap_or(spec).parse().map_err(|_| {
        Error::Usage(format!(
            "--obj: expected an object number such as 0 or o3, found `{spec}`"
        ))
    })
}

/// `ddbx show [DIR] [ACTOR] --obj N`: prints one lock object's history.
pub fn show(
    recording: &Recording,
    actor: Option<&str>,
    spec: &str,
    json: bool,
) -> Result<i32, Error> {
    let (id, history) = lock_history(recording, actor)?;
    let n = object_number(spec)?;
    let runs = history.objects.get(n).ok_or_else(|| {
        Error::Usage(format!(
            "{id} has objects 0 to {}, not {n}",
            history.objects.len().saturating_sub(1)
        ))
    })?;
    let kind_name = runs
        .first()
        .and_then(|r| kind::NAMES.get(r.access.arg as usize))
        .copied()
        .unwrap_or("?");
    let total = locks::accesses(runs);
    if json {
        let list: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| {
                let text = r.access.describe();
                let text = text.split_once(' ').map_or("", |(_, t)| t);
                serde_json::json!({
                    "n": r.first,
                    "count": r.count,
                    "thread": format!("{id}.t{}", r.access.thread),
                    "op": r.access.op.name(),
                    "arg": r.access.arg,
                    "text": text,
                })
            })
            .collect();
        let value = serde_json::json!({
            "actor": id.to_string(),
            "object": n,
            "kind": kind_name,
            "accesses": total,
            "truncated": history.truncated,
            "runs": list,
        });
        println!("{value}");
        return Ok(0);
    }
    println!("{id} object {n} ({kind_name}): {total} accesses");
    let width = total.saturating_sub(1).to_string().len().max(4);
    for r in runs {
        let text = r.access.describe();
        let (thread, what) = text.split_once(' ').unwrap_or((&text, ""));
        if r.count == 1 {
            println!("  {:>width$}  {id}.{thread}  {what}", r.first);
        } else {
            let last = r.first + r.count - 1;
            println!(
                "  {:>width$}  {id}.{thread}  {what}  (x{}: to access {last})",
                r.first, r.count
            );
        }
    }
    if history.truncated {
        println!(
            "(the lock history has places never written: the process was killed while writing it)"
        );
    }
    Ok(0)
}

/// The threads of `actor`, for `ddbx ps` (empty: it made none).
pub fn threads(recording: &Recording, actor: ActorId) -> Vec<ThreadRow> {
    let Some((_, history)) = recording.locks.iter().find(|(a, _)| *a == actor) else {
        return Vec::new();
    };
    history
        .threads()
        .into_iter()
        .map(|t| ThreadRow {
            accesses: history
                .objects
                .iter()
                .flatten()
                .filter(|r| r.access.thread == t.id)
                .map(|r| r.count)
                .sum(),
            info: t,
        })
        .collect()
}

/// One thread of a process, with its number of lock accesses.
pub struct ThreadRow {
    /// Who it is, who made it, how it ended.
    pub info: ThreadInfo,
    /// Its accesses to lock objects (the thread table included).
    pub accesses: u64,
}

impl ThreadRow {
    /// How it ended, in words: `joined by t1`, `ended`, `-`.
    pub fn end(&self) -> String {
        match (self.info.exited, self.info.joined_by) {
            (_, Some(t)) => format!("joined by t{t}"),
            (true, None) => "ended".into(),
            (false, None) => "-".into(),
        }
    }
}
