//! The two lines most histories are made of, `Recv(fd: 4, n: 64)` and `Send(fd: 4, n: 64)`
//! (a receive or send whose bytes are not kept, a send without a pipe turn), written and read
//! by hand: exactly the text [`super::write_compact`] makes and RON reads, without serde
//! (about a third of the cost of a recorded event in the LD, and most of reading a history).
//! Every other line, and any variation of these (spaces, `data:`, `turn:`), goes through RON.

use super::Record;

/// Writes `record`'s line (without newline) into `out` when it is one of the two shapes;
/// the line's length, or `None` (another record, or `out` too short).
pub fn write_line(record: &Record, out: &mut [u8]) -> Option<usize> {
    let (name, fd, n): (&[u8], i32, u64) = match record {
        Record::Recv {
            fd,
            n,
            data: None,
            passed,
        } if passed.is_empty() => (b"Recv(fd: ", *fd, *n),
        Record::Send {
            fd,
            n,
            data: None,
            turn: None,
            passed,
        } if passed.is_empty() => (b"Send(fd: ", *fd, *n),
        _ => return None,
    };
    let mut len = 0;
    let mut put = |bytes: &[u8]| -> Option<()> {
        out.get_mut(len..len + bytes.len())?.copy_from_slice(bytes);
        len += bytes.len();
        Some(())
    };
    let mut digits = [0u8; 24];
    put(name)?;
    if fd < 0 {
        put(b"-")?;
    }
    put(super::value::unsigned_decimal(
        u64::from(fd.unsigned_abs()),
        &mut digits,
    ))?;
    put(b", n: ")?;
    put(super::value::unsigned_decimal(n, &mut digits))?;
    put(b")")?;
    Some(len)
}

/// The record of `line` when it is one of the two shapes, exactly as written by
/// [`write_line`]; `None` for anything else (which RON then reads).
pub fn parse_line(line: &str) -> Option<Record> {
    let b = line.as_bytes();
    let recv = b.starts_with(b"Recv(fd: ");
    if !recv && !b.starts_with(b"Send(fd: ") {
        return None;
    }
    let rest = &b[9..];
    let (fd, rest) = number(rest)?;
    let rest = rest.strip_prefix(b", n: ")?;
    let (n, rest) = number(rest)?;
    if rest != b")" {
        return None;
    }
    let fd = i32::try_from(fd).ok()?;
    Some(if recv {
        Record::Recv {
            fd,
            n,
            data: None,
            passed: Vec::new(),
        }
    } else {
        Record::Send {
            fd,
            n,
            data: None,
            turn: None,
            passed: Vec::new(),
        }
    })
}

/// A decimal number without sign or leading zero (as RON writes one), and what follows it.
fn number(b: &[u8]) -> Option<(u64, &[u8])> {
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || (digits > 1 && b[0] == b'0') {
        return None;
    }
    let mut n: u64 = 0;
    for c in &b[..digits] {
        n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some((n, &b[digits..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Data;

    fn ron_line(r: &Record) -> String {
        let mut s = String::new();
        super::super::write_compact(&mut s, r).unwrap();
        s
    }

    #[test]
    fn writes_and_reads_what_ron_does() {
        let mut out = [0u8; 64];
        for fd in [0, 3, 9, 10, 99, 1000, i32::MAX] {
            for n in [0, 1, 9, 10, 64, 65536, 1 << 40, u64::MAX] {
                for rec in [
                    Record::Recv {
                        fd,
                        n,
                        data: None,
                        passed: Vec::new(),
                    },
                    Record::Send {
                        fd,
                        n,
                        data: None,
                        turn: None,
                        passed: Vec::new(),
                    },
                ] {
                    let len = write_line(&rec, &mut out).unwrap();
                    let line = std::str::from_utf8(&out[..len]).unwrap();
                    assert_eq!(line, ron_line(&rec));
                    assert_eq!(parse_line(line), Some(rec.clone()));
                    let by_ron: Record = ron::from_str(line).unwrap();
                    assert_eq!(by_ron, rec);
                }
            }
        }
    }

    #[test]
    fn leaves_everything_else_to_ron() {
        let mut out = [0u8; 64];
        let kept = Record::Recv {
            fd: 4,
            n: 2,
            data: Some(Data(b"hi".to_vec())),
            passed: Vec::new(),
        };
        let turned = Record::Send {
            fd: 4,
            n: 2,
            data: None,
            turn: Some(3),
            passed: Vec::new(),
        };
        let passing = Record::Send {
            fd: 4,
            n: 1,
            data: None,
            turn: None,
            passed: vec![5],
        };
        assert_eq!(write_line(&kept, &mut out), None);
        assert_eq!(write_line(&turned, &mut out), None);
        assert_eq!(write_line(&passing, &mut out), None);
        assert_eq!(write_line(&Record::Close { fd: 4 }, &mut out), None);
        assert_eq!(
            write_line(
                &Record::Recv {
                    fd: 4,
                    n: 64,
                    data: None,
                    passed: Vec::new(),
                },
                &mut out[..5]
            ),
            None
        );
        for line in [
            "Recv(fd: 4, n: 64, data: \"aGk=\")",
            "Send(fd: 4, n: 64, turn: Some(1))",
            "Send(fd: 4, n: 1, passed: [5])",
            "Recv(fd:4, n: 64)",
            "Recv(fd: 04, n: 64)",
            "Recv(fd: 4, n: 64) ",
            "Recv(fd: -1, n: 64)",
            "Recv(fd: 4, n: )",
            "Recv(fd: 99999999999, n: 1)",
            "Recv(fd: 4, n: 18446744073709551616)",
            "NoData(fd: 4)",
        ] {
            assert_eq!(parse_line(line), None, "{line}");
        }
    }
}
