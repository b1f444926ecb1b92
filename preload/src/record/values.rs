//! Record of values: what a clock or a source of randomness returned to the program. Not an
//! event (`ddbx_wire::history::value`): the line waits in the LD's value log until the next
//! event's line is written (`preload/src/ld/journal.rs`). Replay logs what it handed out the
//! same way, in the replay's own history.
//!
//! In a process whose threads are ordered, every thread's clock reads and random bytes are
//! values, each thread's after a `~T` line naming it (`Ld::log_value`): replay hands each
//! thread its own (`preload/src/replay/thread_values.rs`).

use crate::ld::Ld;
use ddbx_wire::history::value::Value;

/// The program got `value`.
pub fn log(ld: &mut Ld, value: &Value) {
    ld.log_value(value);
}
