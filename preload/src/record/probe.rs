//! Record of probes: `ddbx_set(name, value)` is an event of its own, logged so that the
//! offline analysis can evaluate predicates over it.

use crate::ld::{Ld, ProbeValue};
use ddbx_wire::Record;

/// The program published `name = value`.
pub fn set(ld: &mut Ld, name: String, value: i64) {
    let record = Record::Probe {
        name: name.clone(),
        value,
    };
    ld.probes.push(ProbeValue { name, value });
    ld.emit(&record);
}
