//! The bytes exchanged with peers outside the session, as histories store them: base64 text.

use serde::{Deserialize, Serialize};

/// Bytes exchanged with a peer outside the session, written as base64 text in histories.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Data(pub Vec<u8>);

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

impl Data {
    /// The bytes as base64 text.
    pub fn to_base64(&self) -> String {
        let mut out = String::with_capacity(self.0.len().div_ceil(3) * 4);
        for chunk in self.0.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    /// Parses base64 text.
    pub fn from_base64(text: &str) -> Option<Data> {
        let mut out = Vec::with_capacity(text.len() / 4 * 3);
        let bytes = text.as_bytes();
        if bytes.len() % 4 != 0 {
            return None;
        }
        for quad in bytes.chunks(4) {
            let mut n = 0u32;
            let mut pad = 0;
            for &c in quad {
                let v = match c {
                    b'=' => {
                        pad += 1;
                        0
                    }
                    _ if pad > 0 => return None,
                    _ => B64.iter().position(|x| *x == c)? as u32,
                };
                n = (n << 6) | v;
            }
            let full = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            out.extend_from_slice(&full[..3 - pad.min(2)]);
        }
        Some(Data(out))
    }
}

impl Serialize for Data {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_base64())
    }
}

impl<'de> Deserialize<'de> for Data {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Data::from_base64(&s).ok_or_else(|| serde::de::Error::custom("expected base64 bytes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Record;

    #[test]
    fn base64_round_trips() {
        for len in 0..20usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let d = Data(bytes.clone());
            assert_eq!(Data::from_base64(&d.to_base64()), Some(Data(bytes)));
        }
        assert_eq!(Data(b"hi\n".to_vec()).to_base64(), "aGkK");
        assert_eq!(Data::from_base64("a=b="), None);
        let r = Record::Recv {
            fd: 3,
            n: 3,
            data: Some(Data(b"hi\n".to_vec())),
            passed: Vec::new(),
        };
        assert_eq!(r.to_line(), "Recv(fd: 3, n: 3, data: Some(\"aGkK\"))");
        let plain = Record::Recv {
            fd: 3,
            n: 3,
            data: None,
            passed: Vec::new(),
        };
        assert_eq!(plain.to_line(), "Recv(fd: 3, n: 3)");
    }
}
