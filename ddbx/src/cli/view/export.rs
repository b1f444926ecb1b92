//! The exports of `ddbx view --format`: the same events and arrows as the event view, as a
//! ShiViz log (vector clocks over happened-before) or as Chrome/Perfetto trace JSON.

use super::layout::Diagram;
use ddbx_supervisor::analysis::deps::Event;
use ddbx_supervisor::wire::ActorId;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

/// One history record as one line of text.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// The ShiViz log: the parsing regex, the execution delimiter, then for each event (in a
/// topological order of happened-before) its host and vector clock on one line and its record
/// on the next. The clocks are computed over the exported events and the graph the event view
/// is drawn from (program order, needs, arrows; a connect before its accept), so each host's
/// own entry is its event number: 1 for its first event, +1 per event.
pub(super) fn shiviz(d: &Diagram, dir: &Path) -> String {
    let mut out = String::new();
    out.push_str("(?<host>\\S*) (?<clock>{.*})\\n(?<event>.*)\n");
    out.push_str("=== (?<trace>.*) ===\n");
    let _ = writeln!(out, "=== {} ===", one_line(&dir.to_string_lossy()));
    let mut clocks: HashMap<Event, BTreeMap<ActorId, u64>> = HashMap::new();
    for &e in &d.order {
        let mut vc: BTreeMap<ActorId, u64> = BTreeMap::new();
        for p in d.preds.get(&e).map_or(&[][..], Vec::as_slice) {
            for (a, k) in clocks.get(p).into_iter().flatten() {
                let v = vc.entry(*a).or_insert(0);
                *v = (*v).max(*k);
            }
        }
        vc.insert(e.0, e.1);
        let record = d
            .rec
            .history(e.0)
            .and_then(|h| h.records.get(e.1 as usize - 1))
            .map_or(String::new(), |r| one_line(&r.to_string()));
        let clock = vc
            .iter()
            .map(|(a, k)| format!("\"{a}\": {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(out, "{} {{{clock}}}\n{record}\n", e.0);
        clocks.insert(e, vc);
    }
    out
}

/// One end of a Perfetto flow (an arrow) on an event's slice.
struct FlowEnd {
    /// The flow's id (`bind_id`).
    id: String,
    /// The arrow leaves this event (`flow_out`) rather than arrives (`flow_in`).
    outgoing: bool,
}

/// Chrome/Perfetto trace JSON: a process per actor (pid = the actor's number), an `X` slice
/// per event at `ts` = logical rank × 10 µs, each arrow a flow (`bind_id`, `flow_out` on its
/// source slice, `flow_in` on its target). A slice binds one flow; an event with several
/// flows gets one extra slice (same time, same record) per further flow.
pub(super) fn perfetto(d: &Diagram) -> String {
    let rec = d.rec;
    let mut flows: BTreeMap<Event, Vec<FlowEnd>> = BTreeMap::new();
    for (i, arrow) in d.arrows.iter().enumerate() {
        let id = format!("0x{:x}", i + 1);
        flows.entry(arrow.from).or_default().push(FlowEnd {
            id: id.clone(),
            outgoing: true,
        });
        flows.entry(arrow.to).or_default().push(FlowEnd {
            id,
            outgoing: false,
        });
    }
    let mut events = Vec::new();
    for &a in &d.actors {
        let pid = a.0;
        let name = format!(
            "{a} {}",
            rec.program_names(a).first().cloned().unwrap_or_default()
        );
        events.push(serde_json::json!({
            "name": "process_name", "ph": "M", "pid": pid, "tid": pid,
            "args": {"name": name.trim_end()},
        }));
        events.push(serde_json::json!({
            "name": "process_sort_index", "ph": "M", "pid": pid, "tid": pid,
            "args": {"sort_index": d.column[&a]},
        }));
        let Some(h) = rec.history(a) else { continue };
        for (i, record) in h.records.iter().enumerate() {
            let e = (a, i as u64 + 1);
            let ts = d.rank.get(&e).copied().unwrap_or(0) * 10;
            let slice = || {
                serde_json::json!({
                    "name": record.kind(), "cat": "ddbx", "ph": "X", "pid": pid, "tid": pid,
                    "ts": ts, "dur": 1,
                    "args": {"record": record.to_string(), "event": format!("{a}:{}", e.1)},
                })
            };
            let fs = flows.get(&e).map_or(&[][..], Vec::as_slice);
            if fs.is_empty() {
                events.push(slice());
            }
            for flow in fs {
                let mut s = slice();
                s["bind_id"] = serde_json::json!(flow.id);
                s[if flow.outgoing { "flow_out" } else { "flow_in" }] = serde_json::json!(true);
                events.push(s);
            }
        }
    }
    let mut text = serde_json::json!({ "traceEvents": events }).to_string();
    text.push('\n');
    text
}
