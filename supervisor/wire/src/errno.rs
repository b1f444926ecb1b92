//! errno values as they appear in histories: by name (`"ECONNREFUSED"`), not by number.
//!
//! A program's errno is part of its run: it is recorded and replayed like any other outcome.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// An errno value, printed by its symbolic name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Errno(pub i32);

const NAMES: &[(i32, &str)] = &[
    (1, "EPERM"),
    (2, "ENOENT"),
    (4, "EINTR"),
    (5, "EIO"),
    (9, "EBADF"),
    (11, "EAGAIN"),
    (12, "ENOMEM"),
    (13, "EACCES"),
    (14, "EFAULT"),
    (16, "EBUSY"),
    (22, "EINVAL"),
    (24, "EMFILE"),
    (32, "EPIPE"),
    (35, "EDEADLK"),
    (88, "ENOTSOCK"),
    (97, "EAFNOSUPPORT"),
    (98, "EADDRINUSE"),
    (99, "EADDRNOTAVAIL"),
    (100, "ENETDOWN"),
    (101, "ENETUNREACH"),
    (103, "ECONNABORTED"),
    (104, "ECONNRESET"),
    (105, "ENOBUFS"),
    (106, "EISCONN"),
    (107, "ENOTCONN"),
    (110, "ETIMEDOUT"),
    (111, "ECONNREFUSED"),
    (113, "EHOSTUNREACH"),
    (114, "EALREADY"),
    (115, "EINPROGRESS"),
];

impl Errno {
    /// EAGAIN / EWOULDBLOCK: "nothing there now".
    pub const EAGAIN: Errno = Errno(11);
    /// The connect is under way (non-blocking connect).
    pub const EINPROGRESS: Errno = Errno(115);
    /// Nobody listens there.
    pub const ECONNREFUSED: Errno = Errno(111);
    /// The socket is already connected.
    pub const EISCONN: Errno = Errno(106);
    /// A connect on this socket is still under way.
    pub const EALREADY: Errno = Errno(114);
    /// The peer's end is closed (a send).
    pub const EPIPE: Errno = Errno(32);
    /// The peer reset the connection.
    pub const ECONNRESET: Errno = Errno(104);

    /// The symbolic name, or `None` for a value this table does not know.
    pub fn name(self) -> Option<&'static str> {
        NAMES.iter().find(|(n, _)| *n == self.0).map(|(_, s)| *s)
    }

    /// Parses `EAGAIN`, or `E123` for a value without a name.
    pub fn parse(s: &str) -> Option<Errno> {
        if let Some((n, _)) = NAMES.iter().find(|(_, name)| *name == s) {
            return Some(Errno(*n));
        }
        s.strip_prefix('E')?.parse().ok().map(Errno)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "E{}", self.0),
        }
    }
}

impl Serialize for Errno {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.name() {
            Some(name) => s.serialize_str(name),
            None => s.collect_str(self),
        }
    }
}

impl<'de> Deserialize<'de> for Errno {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Errno::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("expected an errno name, found `{s}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for e in [Errno(11), Errno(111), Errno(4242)] {
            let text = ron::to_string(&e).unwrap();
            assert_eq!(ron::from_str::<Errno>(&text).unwrap(), e);
        }
        assert_eq!(Errno(111).to_string(), "ECONNREFUSED");
        assert_eq!(Errno(4242).to_string(), "E4242");
    }
}
