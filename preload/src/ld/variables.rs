//! An actor's variables, as predicates read them: its probes, its built-in counters, and the
//! globals a predicate names, read from the process's memory (halting replays and live runs).

use super::Ld;
use ddbx_wire::counters::Counters;
use ddbx_wire::pred::VarRef;

/// The value of one of the actor's variables: a probe, or a built-in counter.
pub fn variable(ld: &Ld, name: &str) -> Option<i64> {
    if let Some(probe) = ld.probes.iter().rev().find(|p| p.name == name) {
        return Some(probe.value);
    }
    // `events` is the actor's, which an exec'd image continues (the counters of this
    // image were recounted from its history when it started).
    let counters = Counters {
        events: ld.events() as i64,
        ..ld.counters
    };
    counters.get(name)
}

/// Every variable with a value (probes, then counters), for the halted state.
pub fn variables(ld: &Ld) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for probe in &ld.probes {
        match out.iter_mut().find(|(n, _)| *n == probe.name) {
            Some((_, value)) => *value = probe.value,
            None => out.push((probe.name.clone(), probe.value)),
        }
    }
    for name in ddbx_wire::counters::NAMES {
        if let Some(v) = variable(ld, name) {
            out.push((name.to_string(), v));
        }
    }
    out
}

/// A variable of the predicate: a probe or counter, else a global read from memory.
pub fn lookup(ld: &mut Ld, v: &VarRef) -> Option<i64> {
    variable(ld, &v.name).or_else(|| ld.symbols.read(&v.name, v.ty))
}
