//! Record of values: what a clock or a source of randomness returned to the program. Not an
//! event (`ddbx_wire::history::value`): the line waits in the LD's value log until the next
//! event's line is written (`preload/src/ld/journal.rs`). Replay logs what it handed out the
//! same way, in the replay's own history.

use crate::ld::Ld;
use ddbx_wire::history::value::Value;

/// The program got `value`.
pub fn log(ld: &mut Ld, value: &Value) {
    ld.log_value(value);
}
