//! Replay of probes: the program must publish the same value at the same point of its history.

use super::cursor;
use crate::ld::{Ld, ProbeValue};
use ddbx_wire::Record;

/// The program published `name = value`.
pub fn set(ld: &mut Ld, name: String, value: i64) {
    let record = Record::Probe {
        name: name.clone(),
        value,
    };
    cursor::follow_exactly(ld, &record);
    // The new value counts from this event on (a halting replay checks it right after).
    ld.probes.push(ProbeValue { name, value });
    cursor::advance(ld, &record);
}
