//! How a global variable is read from a debuggee's memory: its type ([`MemType`]), size and
//! little-endian decoding.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The in-memory type of a global variable read by symbol (little-endian).
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
pub enum MemType {
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`, C's `int`: the default.
    #[default]
    I32,
    /// `i64`.
    I64,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64` (values above `i64::MAX` cannot be represented).
    U64,
}

impl MemType {
    /// Every type, for generators and messages.
    pub const ALL: [MemType; 8] = [
        MemType::I8,
        MemType::I16,
        MemType::I32,
        MemType::I64,
        MemType::U8,
        MemType::U16,
        MemType::U32,
        MemType::U64,
    ];

    /// Its size in bytes.
    pub fn size(self) -> usize {
        match self {
            MemType::I8 | MemType::U8 => 1,
            MemType::I16 | MemType::U16 => 2,
            MemType::I32 | MemType::U32 => 4,
            MemType::I64 | MemType::U64 => 8,
        }
    }

    /// Its name as written after `:` (`"u16"`).
    pub fn name(self) -> &'static str {
        match self {
            MemType::I8 => "i8",
            MemType::I16 => "i16",
            MemType::I32 => "i32",
            MemType::I64 => "i64",
            MemType::U8 => "u8",
            MemType::U16 => "u16",
            MemType::U32 => "u32",
            MemType::U64 => "u64",
        }
    }

    /// The type written `name` (`int` is accepted for `i32`).
    pub fn from_name(name: &str) -> Option<MemType> {
        if name == "int" {
            return Some(MemType::I32);
        }
        MemType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Decodes a value from exactly [`size`](Self::size) little-endian bytes. `None` when the
    /// length is wrong or a `u64` is above `i64::MAX`.
    pub fn decode(self, bytes: &[u8]) -> Option<i64> {
        if bytes.len() != self.size() {
            return None;
        }
        let mut b = [0u8; 8];
        b[..bytes.len()].copy_from_slice(bytes);
        Some(match self {
            MemType::I8 => i64::from(bytes[0] as i8),
            MemType::I16 => i64::from(i16::from_le_bytes([b[0], b[1]])),
            MemType::I32 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            MemType::I64 => i64::from_le_bytes(b),
            MemType::U8 => i64::from(bytes[0]),
            MemType::U16 => i64::from(u16::from_le_bytes([b[0], b[1]])),
            MemType::U32 => i64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            MemType::U64 => i64::try_from(u64::from_le_bytes(b)).ok()?,
        })
    }
}

impl fmt::Display for MemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
