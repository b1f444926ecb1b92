//! Logical actor ids.
//!
//! An actor is a sequential thread of control (today: a single-threaded process image chain).
//! The first process of a session is `p1`; the others are numbered in the order the record saw
//! them created. Replay gives each new process the id its creation key had in the record, so
//! ids are the same in every run. `p0` stands for ddbx itself, the parent of `p1`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A logical actor id, written `p<N>` (`p0` is ddbx itself).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct ActorId(pub u32);

impl ActorId {
    /// ddbx itself: the parent of the session's first process.
    pub const DDBX: ActorId = ActorId(0);
    /// The session's first process.
    pub const ROOT: ActorId = ActorId(1);
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}", self.0)
    }
}

/// Why a string is not an actor id.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("expected an actor id such as `p3`, found `{0}`")]
pub struct BadActorId(pub String);

impl FromStr for ActorId {
    type Err = BadActorId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.strip_prefix('p')
            .and_then(|n| n.parse::<u32>().ok())
            .map(ActorId)
            .ok_or_else(|| BadActorId(s.to_string()))
    }
}

impl Serialize for ActorId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Formatted on the stack: the preload serialises ids on its hot path.
        let mut buf = [0u8; 12];
        let text = format_id(self.0, &mut buf);
        s.serialize_str(text)
    }
}

fn format_id(mut n: u32, buf: &mut [u8; 12]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    i -= 1;
    buf[i] = b'p';
    std::str::from_utf8(&buf[i..]).unwrap_or("p?")
}

impl<'de> Deserialize<'de> for ActorId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_text() {
        for n in [0, 1, 9, 10, 123, u32::MAX] {
            let id = ActorId(n);
            assert_eq!(id.to_string().parse::<ActorId>(), Ok(id));
            let ron = ron::to_string(&id).unwrap();
            assert_eq!(ron, format!("\"p{n}\""));
            assert_eq!(ron::from_str::<ActorId>(&ron).unwrap(), id);
        }
    }

    #[test]
    fn rejects_other_text() {
        assert!("3".parse::<ActorId>().is_err());
        assert!("px".parse::<ActorId>().is_err());
        assert!("p-1".parse::<ActorId>().is_err());
    }
}
