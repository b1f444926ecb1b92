//! Race flipping (`ddbx explore`): a new execution reached on purpose, in which a race of a
//! recording is won by another of its messages.
//!
//! For race N — a receive `r` of actor A that got message m1 and could have got m2 — ddbx runs
//! the recorded command again, live and recorded (a steered record, see
//! [`ddbx_supervisor::session::Steering`]): every message of the race but m2 is held at its
//! sender (before the send or the connect) until A has made `r`, so m2 is the one `r` gets.
//! The races whose receive happened before `r` keep their recorded winners the same way: their
//! other messages are held until their receives are made. Everything else runs as it comes,
//! and the new run is an ordinary recording (`ddbx replay`, `races`, `view` take it).
//!
//! With a depth above 1, each new run that flipped is explored in turn: its races that only
//! the races flipped so far affect (the next layer of paper 004's debugging order: unaffected
//! once those are set) are flipped, each run named by its path: `race-2.1` is race 1 of the
//! run made by flipping race 2.
//!
//! A flip is checked on the new recording: `flipped` says whether `r` got m2's sender's
//! message. A held event waits at most [`ExploreOptions::patience`] (the new run may not reach
//! the receive at all); the session then says which one went on.

use super::record::{RecordOptions, RecordOutcome, Run, record_run};
use super::{Messages, prepare_empty_dir};
use crate::error::Error;
use ddbx_supervisor::Recording;
use ddbx_supervisor::analysis::clock::Clocks;
use ddbx_supervisor::analysis::deps::{Deps, Event};
use ddbx_supervisor::analysis::races::{Message, MessageKind, Race, Races, find_races, outcome_of};
use ddbx_supervisor::session::{Order, Steering};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a held send waits for its receive by default.
pub const DEFAULT_PATIENCE: Duration = Duration::from_secs(5);

/// What to explore.
#[derive(Debug, Clone)]
pub struct ExploreOptions {
    /// The recording whose races are flipped.
    pub recording: PathBuf,
    /// The races to flip (ids as `ddbx races` numbers them); empty: every unaffected race.
    pub races: Vec<usize>,
    /// Where the new recordings go, one directory `race-N` each (must not exist, or be
    /// empty). `None`: `<recording>-explore`.
    pub out_dir: Option<PathBuf>,
    /// A new run whose program exits 0 fails too when this predicate holds at some consistent
    /// global state of it.
    pub fail_if: Option<String>,
    /// Where ddbx's lines go (a file is started anew, then each run's lines are appended).
    pub messages: Messages,
    /// How long a held send waits at most for the receive it must follow.
    pub patience: Duration,
    /// How many flips deep to go: 1 flips the recording's races; 2 also, in each new run that
    /// flipped, the races that only the flipped ones affect, and so on.
    pub depth: usize,
}

impl Default for ExploreOptions {
    fn default() -> ExploreOptions {
        ExploreOptions {
            recording: PathBuf::new(),
            races: Vec::new(),
            out_dir: None,
            fail_if: None,
            messages: Messages::Stderr,
            patience: DEFAULT_PATIENCE,
            depth: 1,
        }
    }
}

/// One race flipped.
#[derive(Debug, Clone)]
pub struct Flip {
    /// The race's id in the recording it was flipped in.
    pub race: usize,
    /// The races flipped from the recording explored to this run, this one last (`[2]` at
    /// depth 1; `[2, 1]`: race 1 of the run that flipped race 2).
    pub path: Vec<usize>,
    /// Its receive.
    pub receive: Event,
    /// The message made to win it, as `ddbx races` describes it.
    pub wanted: String,
    /// The sends and connects held until a receive was made.
    pub held: Vec<Event>,
    /// Whether the new run's receive got the wanted message.
    pub flipped: bool,
    /// Whether the new run failed: its program did not exit 0, or `fail_if` held.
    pub failed: bool,
    /// Whether `fail_if` held (`None`: no `fail_if`).
    pub fail_if_held: Option<bool>,
    /// When it did not flip: the events of the orders that the new run does not have as the
    /// explored one had them (the run went another way before the race).
    pub notes: Vec<String>,
    /// The new run's record.
    pub record: RecordOutcome,
}

impl Flip {
    /// The path as text, `2.1`; the run is in `race-2.1`.
    pub fn name(&self) -> String {
        dotted(&self.path)
    }
}

/// What `explore` did.
#[derive(Debug, Clone)]
pub struct ExploreOutcome {
    /// The directory holding the new recordings.
    pub dir: PathBuf,
    /// The races flipped: the recording's in id order, then the next depth's, run by run.
    pub flips: Vec<Flip>,
    /// The races that could not be flipped (named as [`Flip::name`]), with why.
    pub skipped: Vec<(String, String)>,
}

/// Flips the races `options.races` (or every unaffected race) of a recording, one new run
/// each; with `options.depth` above 1, then, in each new run that flipped, the races that only
/// the races flipped so far affect, and so on.
pub fn explore(options: ExploreOptions) -> Result<ExploreOutcome, Error> {
    let dir = &options.recording;
    let recording = Recording::open(dir)?;
    if options.depth == 0 {
        return Err(Error::Usage("--depth: expected at least 1, found 0".into()));
    }
    if let Some(text) = &options.fail_if {
        super::until_fail::check_fail_if(text)?;
    }
    let run = super::replay::recorded_run(&recording, dir)?.into_run();
    let out = match &options.out_dir {
        Some(out) => out.clone(),
        None => PathBuf::from(format!("{}-explore", dir.display())),
    };
    let mut todo = std::collections::VecDeque::from([Pending {
        recording,
        path: Vec::new(),
        fixed: Vec::new(),
    }]);
    let mut outcome = ExploreOutcome {
        dir: out.clone(),
        flips: Vec::new(),
        skipped: Vec::new(),
    };
    while let Some(pending) = todo.pop_front() {
        let (deps, clocks) = analyze(&pending.recording)?;
        let races = find_races(&pending.recording, &deps, &clocks);
        let chosen = if pending.path.is_empty() {
            let chosen = chosen_races(&races, &options.races, dir)?;
            start_output(&out, &options.messages)?;
            chosen
        } else {
            next_races(&races, &pending.fixed)
        };
        for race in chosen {
            let flip = flip_one(&options, &run, &pending, race, &races, &clocks, &out)?;
            let Some(flip) = flip else {
                outcome
                    .skipped
                    .push((dotted(&path_to(&pending.path, race.id)), why_not(race)));
                continue;
            };
            if flip.flipped && flip.path.len() < options.depth {
                todo.push_back(Pending {
                    recording: Recording::open(&flip.record.dir)?,
                    path: flip.path.clone(),
                    fixed: pending
                        .fixed
                        .iter()
                        .copied()
                        .chain([race.receive])
                        .collect(),
                });
            }
            outcome.flips.push(flip);
        }
    }
    Ok(outcome)
}

/// A recording whose races are still to flip.
struct Pending {
    /// The recording.
    recording: Recording,
    /// The races flipped to make it (empty: the recording explored).
    path: Vec<usize>,
    /// Their receives.
    fixed: Vec<Event>,
}

/// The races of a run made by flips (`fixed`: the receives flipped to make it) to flip next:
/// those that only the flipped races affect (they are the unaffected ones once those are
/// set), but not the flipped races themselves, which would only be flipped back.
fn next_races<'r>(races: &'r Races, fixed: &[Event]) -> Vec<&'r Race> {
    let is_fixed = |id: &usize| races.get(*id).is_some_and(|r| fixed.contains(&r.receive));
    races
        .races
        .iter()
        .filter(|r| !fixed.contains(&r.receive) && r.affected_by.iter().all(is_fixed))
        .collect()
}

/// `2.1`: race 1 of the run made by flipping race 2.
fn dotted(path: &[usize]) -> String {
    path.iter()
        .map(|id| id.to_string())
        .collect::<Vec<_>>()
        .join(".")
}

/// The path of race `race` of the run made by the flips `path`.
fn path_to(path: &[usize], race: usize) -> Vec<usize> {
    path.iter().copied().chain([race]).collect()
}

/// Makes the output directory and starts the messages file (each run's lines are appended).
fn start_output(out: &Path, messages: &Messages) -> Result<(), Error> {
    prepare_empty_dir(out, "-o")?;
    if let Messages::File(path) = messages {
        std::fs::File::create(path).map_err(|e| {
            Error::Usage(format!(
                "--messages {}: cannot create it: {e}",
                path.display()
            ))
        })?;
    }
    Ok(())
}

/// Flips `race` of `pending`'s recording (`races`, `clocks`: its analysis) in a new run
/// recorded into `out/race-<name>`; `None` when it cannot be flipped.
fn flip_one(
    options: &ExploreOptions,
    run: &Run,
    pending: &Pending,
    race: &Race,
    races: &Races,
    clocks: &Clocks,
    out: &Path,
) -> Result<Option<Flip>, Error> {
    let Some((wanted, orders)) = orders_for(race, races, clocks) else {
        return Ok(None);
    };
    let path = path_to(&pending.path, race.id);
    let label = dotted(&path);
    let steering = Steering {
        orders: orders.clone(),
        like: pending.recording.manifest.actors.clone(),
        patience: options.patience,
    };
    let record_options = RecordOptions {
        out_dir: Some(out.join(format!("race-{label}"))),
        messages: options.messages.clone(),
        ..RecordOptions::default()
    };
    let record = record_run(
        &record_options,
        run.clone(),
        Some(Box::new(steering)),
        None,
        vec![format!(
            "ddbx: race {label}: {} made to win {}:{}",
            wanted.describe(),
            race.receive.0,
            race.receive.1
        )],
    )?;
    let flip = judge(
        race,
        &wanted,
        orders,
        record,
        options.fail_if.as_deref(),
        path,
    )?;
    Ok(Some(flip))
}

/// The dependencies and vector clocks of a recording.
fn analyze(recording: &Recording) -> Result<(Deps, Clocks), Error> {
    let deps = Deps::from_recording(recording);
    let clocks = Clocks::compute(&deps).map_err(|e| {
        Error::BadRecording(format!(
            "{}: cannot order the events: {e}",
            recording.dir.display()
        ))
    })?;
    Ok((deps, clocks))
}

/// The races asked for (`ids`), or every unaffected one.
fn chosen_races<'r>(races: &'r Races, ids: &[usize], dir: &Path) -> Result<Vec<&'r Race>, Error> {
    if ids.is_empty() {
        return Ok(races.races.iter().filter(|r| r.unaffected()).collect());
    }
    ids.iter()
        .map(|&id| {
            races.get(id).ok_or_else(|| {
                Error::Usage(format!(
                    "--race {id}: expected a race of {} (1 to {}; `ddbx races` lists them), found none",
                    dir.display(),
                    races.races.len()
                ))
            })
        })
        .collect()
}

/// The message made to win `race` and the orders that make it win: the race's other messages
/// wait for its receive, and so do the other messages of every race whose receive happened
/// before it. The winner is its first alternative that one of the recording's actors sent;
/// for a ready set that reported several messages and could have reported no other, the last
/// of them, alone. `None`: nothing of ours can win it, or what won it came from outside (it
/// cannot be held).
fn orders_for(race: &Race, races: &Races, clocks: &Clocks) -> Option<(Message, Vec<Order>)> {
    if race.got.iter().any(|m| !issued_by_us(m)) {
        return None;
    }
    let wanted = match race.could.iter().find(|m| issued_by_us(m)) {
        Some(m) => m.clone(),
        None if race.could.is_empty() && race.got.len() >= 2 => race.got.last()?.clone(),
        None => return None,
    };
    let mut orders: Vec<Order> = race
        .messages()
        .filter(|m| **m != wanted)
        .filter_map(|m| m.event)
        .map(|then| Order {
            first: race.receive,
            then,
        })
        .collect();
    for earlier in &races.races {
        if earlier.id == race.id || !clocks.happened_before(earlier.receive, race.receive) {
            continue;
        }
        orders.extend(
            earlier
                .could
                .iter()
                .filter_map(|m| m.event)
                .map(|then| Order {
                    first: earlier.receive,
                    then,
                }),
        );
    }
    Some((wanted, orders))
}

/// Whether one of the recording's actors sent `m` (ddbx can hold it).
fn issued_by_us(m: &Message) -> bool {
    m.kind != MessageKind::External && m.event.is_some()
}

/// Why `race` cannot be flipped.
fn why_not(race: &Race) -> String {
    if race.got.iter().any(|m| !issued_by_us(m)) {
        "what won it came from outside the recording: ddbx cannot hold it".into()
    } else {
        "every other message it could have got comes from outside the recording: ddbx cannot \
         make them come first"
            .into()
    }
}

/// What the new run (made by the flips `path`) did with the race: its receive's outcome, its
/// exit, `fail_if`.
fn judge(
    race: &Race,
    wanted: &Message,
    orders: Vec<Order>,
    record: RecordOutcome,
    fail_if: Option<&str>,
    path: Vec<usize>,
) -> Result<Flip, Error> {
    let new = Recording::open(&record.dir)?;
    let (deps, clocks) = analyze(&new)?;
    let sender = wanted.event.map(|e| e.0);
    let flipped = outcome_of(&new, &deps, &clocks, race.receive).is_some_and(|got| {
        got.iter()
            .any(|m| m.kind == wanted.kind && m.event.map(|e| e.0) == sender)
    });
    let fail_if_held = match fail_if {
        Some(text) => Some(super::until_fail::fail_if_holds(&record.dir, text)?.is_some()),
        None => None,
    };
    let failed = record.exit_code != 0 || fail_if_held == Some(true);
    let mut held: Vec<Event> = orders.iter().map(|o| o.then).collect();
    held.sort_unstable();
    held.dedup();
    let notes = if flipped {
        Vec::new()
    } else {
        mismatches(&new, race.receive, &held)
    };
    Ok(Flip {
        race: race.id,
        path,
        receive: race.receive,
        wanted: wanted.describe(),
        held,
        flipped,
        failed,
        fail_if_held,
        notes,
        record,
    })
}

/// Why a flip may not have happened: the events the orders name that the new run does not
/// have where the explored one had them (a run that went another way before the race: a
/// script that polled its server more often forked its clients later, and they got other
/// names).
fn mismatches(new: &Recording, receive: Event, held: &[Event]) -> Vec<String> {
    use ddbx_supervisor::wire::Record;
    let at = |(a, k): Event| {
        new.history(a)
            .and_then(|h| h.records.get((k as usize).checked_sub(1)?))
    };
    let mut notes = Vec::new();
    match at(receive) {
        Some(Record::Ready { .. } | Record::Accept { .. } | Record::RecvDatagram { .. }) => {}
        Some(other) => notes.push(format!(
            "{}:{} is not the race's receive in the new run: {}",
            receive.0,
            receive.1,
            other.kind()
        )),
        None => notes.push(format!(
            "the new run has no {}:{} (the race's receive)",
            receive.0, receive.1
        )),
    }
    for &(a, k) in held {
        match at((a, k)) {
            Some(Record::Send { .. } | Record::Connect { .. } | Record::SendDatagram { .. }) => {}
            Some(other) => notes.push(format!(
                "{a}:{k} (held) is not a send or a connect in the new run: {}",
                other.kind()
            )),
            None => notes.push(format!("the new run has no {a}:{k} (held)")),
        }
    }
    notes
}
