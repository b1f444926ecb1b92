//! Readiness event bits as they appear in histories: `"in"`, `"out|hup"`.
//!
//! The bit values are poll(2)'s, which epoll shares for the bits ddbx records; select's
//! read/write/except sets map to `in`/`out`/`pri`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A set of readiness bits (poll(2) values).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Events(pub u32);

const BITS: &[(u32, &str)] = &[
    (0x001, "in"),
    (0x002, "pri"),
    (0x004, "out"),
    (0x008, "err"),
    (0x010, "hup"),
    (0x020, "nval"),
    (0x040, "rdnorm"),
    (0x080, "rdband"),
    (0x100, "wrnorm"),
    (0x200, "wrband"),
    (0x2000, "rdhup"),
];

impl Events {
    /// Readable.
    pub const IN: u32 = 0x001;
    /// Exceptional condition (select's except set).
    pub const PRI: u32 = 0x002;
    /// Writable.
    pub const OUT: u32 = 0x004;
    /// Error.
    pub const ERR: u32 = 0x008;
    /// Hang-up.
    pub const HUP: u32 = 0x010;
    /// Peer closed its writing half.
    pub const RDHUP: u32 = 0x2000;

    /// Whether every bit of `other` is set here.
    pub fn contains(self, other: u32) -> bool {
        self.0 & other == other
    }

    /// Whether some bit of `other` is set here.
    pub fn intersects(self, other: u32) -> bool {
        self.0 & other != 0
    }
}

impl fmt::Display for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        let mut first = true;
        for (bit, name) in BITS {
            if rest & bit != 0 {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
                rest &= !bit;
            }
        }
        if rest != 0 {
            if !first {
                f.write_str("|")?;
            }
            write!(f, "{rest:#x}")?;
        } else if first {
            f.write_str("none")?;
        }
        Ok(())
    }
}

impl Serialize for Events {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Events {
    /// The events written as [`Display`](fmt::Display) writes them (`in|hup`, `none`, unknown
    /// bits in hex); `Err` names the part that is not an event name.
    pub fn parse(s: &str) -> Result<Events, String> {
        if s == "none" {
            return Ok(Events(0));
        }
        let mut bits = 0;
        for part in s.split('|') {
            bits |= match BITS.iter().find(|(_, name)| *name == part) {
                Some((bit, _)) => *bit,
                None => part
                    .strip_prefix("0x")
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .ok_or_else(|| {
                        format!("expected event names such as `in|hup`, found `{part}`")
                    })?,
            };
        }
        Ok(Events(bits))
    }
}

impl<'de> Deserialize<'de> for Events {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Events::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_and_parses() {
        for bits in [0, 1, 0x11, 0x2001, 0x8000_0001] {
            let text = ron::to_string(&Events(bits)).unwrap();
            assert_eq!(
                ron::from_str::<Events>(&text).unwrap(),
                Events(bits),
                "{text}"
            );
        }
        assert_eq!(Events(0x11).to_string(), "in|hup");
    }
}
