//! Intent lines: what a recorded process is about to do that another process may observe before
//! its record is written (issue #11, item 4).
//!
//! The LD writes an event's record after the call returns. A connect is seen by its peer (the
//! accept returns it, bytes flow) as soon as the kernel has made it, so a process killed between
//! the call and its record leaves a peer's `Accept` that no history's `Connect` made. Before the
//! real `connect`, the LD therefore writes an intent line, at once (one `write(2)`, which a
//! SIGKILL does not undo):
//!
//! ```text
//! ~k(fd: 3, remote: "127.0.0.1:4001", nonblock: false, at: 81234567890123)
//! ```
//!
//! Like a value line it starts with `~` and is not an event. The `Connect` record that follows
//! settles it; one that nothing follows (the last line of the history) is a connect that was
//! made, or under way, when the process died. Loading the recording reconciles it with the
//! peers (`supervisor/src/recording/unlogged.rs`). Histories without intent lines (older
//! recordings, optimal tracing) load as before.

use serde::{Deserialize, Serialize};

/// The prefix of an intent line.
pub const CONNECT_PREFIX: &str = "~k";

/// A connect about to be made.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ConnectIntent {
    /// The connecting socket.
    pub fd: i32,
    /// The address connected to, as the `Connect` record would name it.
    pub remote: super::Addr,
    /// The socket was non-blocking (its connect returns `EINPROGRESS` on TCP).
    #[serde(default)]
    pub nonblock: bool,
    /// CLOCK_MONOTONIC (ns) just before the call: an accept of this connection returned later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

impl ConnectIntent {
    /// The intent line (with its newline).
    pub fn to_line(&self) -> String {
        let mut line = String::from(CONNECT_PREFIX);
        let _ = super::write_compact(&mut line, self);
        line.push('\n');
        line
    }

    /// Parses an intent line (starting with [`CONNECT_PREFIX`]).
    pub fn parse(line: &str) -> Result<ConnectIntent, String> {
        let rest = line.strip_prefix(CONNECT_PREFIX).ok_or_else(|| {
            format!("expected an intent line starting with `{CONNECT_PREFIX}`, found `{line}`")
        })?;
        ron::from_str(rest).map_err(|e| {
            format!(
                "expected a connect intent such as `~k(fd: 3, remote: \"127.0.0.1:4001\", \
                 nonblock: false)`, found `{}` ({e})",
                super::clip(line)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let intent = ConnectIntent {
            fd: 3,
            remote: "unix:/tmp/a b\"c".into(),
            nonblock: true,
            at: Some(12),
        };
        let line = intent.to_line();
        assert!(line.starts_with("~k(fd: 3, "), "{line}");
        assert_eq!(ConnectIntent::parse(line.trim_end()), Ok(intent));
        let old = ConnectIntent::parse("~k(fd: 4, remote: \"127.0.0.1:1\")").unwrap();
        assert!(!old.nonblock && old.at.is_none());
        for bad in ["~k", "~k(fd: x)", "~k(remote: \"a\")", "~c1=2"] {
            let e = ConnectIntent::parse(bad).unwrap_err();
            assert!(e.contains("expected"), "{bad}: {e}");
        }
    }
}
