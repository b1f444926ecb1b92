//! Record of values: what a clock or a source of randomness returned to the program. Not an
//! event (`ddbx_wire::history::value`): the line waits in the LD's value log until the next
//! event's line is written (`preload/src/ld/journal.rs`). Replay logs what it handed out the
//! same way, in the replay's own history.
//!
//! In a process whose threads are ordered, every thread's clock reads and random bytes are
//! values, each thread's after a `~T` line naming it (`Value::ValuesOf`): replay hands each
//! thread its own (`preload/src/replay/thread_values.rs`).

use crate::ld::Ld;
use ddbx_wire::history::value::{Value, ValueKey};

/// The program got `value`.
pub fn log(ld: &mut Ld, value: &Value) {
    if by_thread(value.key()) && ld.threads_ordered() {
        let me = crate::locks::me();
        if ld.values_of != me {
            ld.values_of = me;
            ld.log_value(&Value::ValuesOf { t: me });
        }
    }
    ld.log_value(value);
}

/// Whether values of `key` belong to the thread that read them (in a process with threads):
/// clocks and randomness, which any thread reads as it goes. The others answer calls that are
/// ordered with the process's events.
pub fn by_thread(key: ValueKey) -> bool {
    matches!(
        key,
        ValueKey::Clock(_) | ValueKey::TimeOfDay | ValueKey::Time | ValueKey::Random
    )
}
