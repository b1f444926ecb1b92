//! `ddbx races --method two-pass`: Park & Jun's method
//! ([`ddbx_supervisor::analysis::twopass`]), which finds only each actor's locally-first race,
//! with the actors whose first race affects it. Its output has the exact method's shapes
//! ([`Shown`], [`Found`]) plus pass 1's cutoffs.

use super::{
    Args, Found, Loaded, Shown, actor_label, analyze_loaded, plural, print_notes, race_list,
};
use crate::error::Error;
use ddbx_supervisor::analysis::twopass::{FirstRace, TwoPass, two_pass};
use ddbx_supervisor::wire::ActorId;
use serde_json::{Value, json};
use std::path::Path;

impl Shown<'_> {
    /// A two-pass race (always locally-first): the races of its affecters affect it.
    fn two_pass<'a>(r: &'a FirstRace, tp: &TwoPass) -> Shown<'a> {
        let id_of = |a: ActorId| tp.races.iter().find(|r| r.receive.0 == a).map(|r| r.id);
        Shown {
            id: r.id,
            receive: r.receive,
            kind: r.kind,
            got: &r.got,
            could: &r.could,
            locally_first: true,
            unaffected: r.unaffected(),
            affected_by: r.affecters.iter().filter_map(|q| id_of(*q)).collect(),
            affects: tp
                .races
                .iter()
                .filter(|o| o.affecters.contains(&r.receive.0))
                .map(|o| o.id)
                .collect(),
            stop_at: r.stop_at(),
        }
    }
}

/// `ddbx races --method two-pass`: Park & Jun's method
/// ([`ddbx_supervisor::analysis::twopass`]); only the locally-first races.
pub(super) fn run(args: &Args) -> Result<i32, Error> {
    let steps = super::Steps::new("races", crate::cli::progress::wanted(args.json));
    let an = analyze_loaded(&args.dir, &steps)?;
    let rec = &an.recording;
    steps.step("the two passes");
    let tp = two_pass(rec, &an.deps, &an.clocks);
    drop(steps);
    let unaffected: Vec<usize> = tp
        .races
        .iter()
        .filter(|r| r.unaffected())
        .map(|r| r.id)
        .collect();
    if args.json {
        println!("{}", two_pass_json(&an, &tp, &args.dir, &unaffected));
        return Ok(0);
    }
    println!("pass 1 (cutoffs: each actor's locally-first race receive):");
    for c in &tp.cutoffs {
        println!(
            "  {} event {}, first channel: {}",
            actor_label(rec, c.actor),
            c.event,
            c.first_channel
        );
    }
    if tp.cutoffs.is_empty() {
        println!("  none: no actor has a race");
    }
    println!();
    for r in &tp.races {
        let flags = if r.unaffected() {
            "locally-first, unaffected".to_string()
        } else {
            format!(
                "locally-first, affected by the first races of {}",
                actors_text(&r.affecters)
            )
        };
        let text = Shown::two_pass(r, &tp).text(rec, &args.dir, &flags, false);
        crate::term::println(&crate::term::paint_race(&text));
        println!();
    }
    // Shaped like the exact method's summary in `run`, worded for what this method finds
    // (only locally-first races).
    println!(
        "two-pass: {} locally-first race{} in {} actors, {} events: {} unaffected ({})",
        tp.races.len(),
        plural(tp.races.len()),
        rec.histories.len(),
        rec.event_count(),
        unaffected.len(),
        race_list(&unaffected),
    );
    if !tp.actor_edges.is_empty() {
        println!(
            "affects edges: {}",
            tp.actor_edges
                .iter()
                .map(|(q, p)| format!("{q} → {p}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    print_notes(&an.deps);
    Ok(0)
}

/// The JSON output of `--method two-pass` (see the module docs).
fn two_pass_json(an: &Loaded, tp: &TwoPass, dir: &Path, unaffected: &[usize]) -> Value {
    let rec = &an.recording;
    let races: Vec<Value> = tp
        .races
        .iter()
        .map(|r| {
            let mut value = Shown::two_pass(r, tp).json(rec, dir);
            value["affecters"] = json!(
                r.affecters
                    .iter()
                    .map(ActorId::to_string)
                    .collect::<Vec<_>>()
            );
            value["first_channel"] = json!(r.first_channel);
            value
        })
        .collect();
    let locally_first: Vec<usize> = tp.races.iter().map(|r| r.id).collect();
    let found = Found {
        races,
        locally_first: &locally_first,
        unaffected,
        actor_edges: &tp.actor_edges,
        components: &tp.components,
    };
    let mut value = found.json(rec, &an.deps, dir);
    value["method"] = json!("two-pass");
    value["cutoffs"] = tp
        .cutoffs
        .iter()
        .map(|c| {
            json!({
                "actor": c.actor.to_string(),
                "event": c.event,
                "first_channel": c.first_channel,
            })
        })
        .collect();
    value
}

/// `p1, p4`.
fn actors_text(actors: &[ActorId]) -> String {
    actors
        .iter()
        .map(ActorId::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
