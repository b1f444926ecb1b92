//! The lines most histories are made of, in a short form of their own (history format 2),
//! written and read by hand, without serde (formatting was about a third of the cost of a
//! recorded event in the LD, and RON's reading most of the cost of loading a history):
//!
//! | record | line |
//! |---|---|
//! | `Recv(fd: 4, n: 64)` (no bytes kept, no fds passed) | `r4 64` |
//! | `Send(fd: 4, n: 64)` (no bytes kept, no turn, no fds passed) | `s4 64` |
//! | `Peek(fd: 4, n: 64)` | `k4 64` |
//! | `NoData(fd: 4)` | `n4` |
//! | `Close(fd: 4)` | `c4` |
//! | `Ready(call: Epoll, fds: [(fd: 5, ev: "in"), (fd: 7, ev: "in\|hup")])` | `e 5:in 7:in\|hup` |
//!
//! A ready set starts with its call (`x`: select, `p`: poll, `e`: epoll; the letter alone: the
//! call timed out), then each reported fd and its events, in the reported order. A short line
//! starts with a small letter, which no other line does (records are RON, `Name(…)`; value
//! lines start with `~`). Every other record, and these with fields the short form lacks (a
//! negative fd, kept bytes, a pipe turn, passed fds), is written as RON. Format 1 wrote these
//! records as RON too; both are read ([`parse_line`] takes format 1's `Recv(fd: 4, n: 64)` as
//! RON writes it, the common case there).

use super::{ReadyFd, Record, WaitCall};
use crate::Events;

/// Writes `record`'s short line (without newline) into `out`: the line's length, or `None`
/// (a record without a short form, or `out` too short).
pub fn write_line(record: &Record, out: &mut [u8]) -> Option<usize> {
    let mut w = Out { buf: out, len: 0 };
    match record {
        Record::Recv {
            fd,
            n,
            data: None,
            passed,
        } if passed.is_empty() => w.fd_and_count(b'r', *fd, *n)?,
        Record::Send {
            fd,
            n,
            data: None,
            turn: None,
            passed,
        } if passed.is_empty() => w.fd_and_count(b's', *fd, *n)?,
        Record::Peek { fd, n } => w.fd_and_count(b'k', *fd, *n)?,
        Record::NoData { fd } => {
            w.put(b"n")?;
            w.fd(*fd)?;
        }
        Record::Close { fd } => {
            w.put(b"c")?;
            w.fd(*fd)?;
        }
        Record::Ready { call, fds } => {
            w.put(match call {
                WaitCall::Select => b"x",
                WaitCall::Poll => b"p",
                WaitCall::Epoll => b"e",
            })?;
            for f in fds {
                w.put(b" ")?;
                w.fd(f.fd)?;
                w.put(b":")?;
                let mut text = EventText::default();
                std::fmt::Write::write_fmt(&mut text, format_args!("{}", f.ev)).ok()?;
                w.put(&text.buf[..text.len])?;
            }
        }
        _ => return None,
    }
    Some(w.len)
}

/// The record of `line` when it is a short line, or format 1's common `Recv`/`Send` line as
/// RON writes it; `None` for anything else (which RON then reads).
pub fn parse_line(line: &str) -> Option<Record> {
    let b = line.as_bytes();
    match b.first()? {
        b'R' | b'S' => return parse_ron_transfer(b),
        b'r' | b's' | b'k' => {
            let (fd, rest) = fd(&b[1..])?;
            let (n, rest) = number(rest.strip_prefix(b" ")?)?;
            if !rest.is_empty() {
                return None;
            }
            return Some(match b[0] {
                b'r' => Record::Recv {
                    fd,
                    n,
                    data: None,
                    passed: Vec::new(),
                },
                b's' => Record::Send {
                    fd,
                    n,
                    data: None,
                    turn: None,
                    passed: Vec::new(),
                },
                _ => Record::Peek { fd, n },
            });
        }
        b'n' | b'c' => {
            let (fd, rest) = fd(&b[1..])?;
            if !rest.is_empty() {
                return None;
            }
            return Some(match b[0] {
                b'n' => Record::NoData { fd },
                _ => Record::Close { fd },
            });
        }
        _ => {}
    }
    let call = match b[0] {
        b'x' => WaitCall::Select,
        b'p' => WaitCall::Poll,
        b'e' => WaitCall::Epoll,
        _ => return None,
    };
    let mut fds = Vec::new();
    let mut rest = &line[1..];
    while !rest.is_empty() {
        let entry = rest.strip_prefix(' ')?;
        let end = entry.find(' ').unwrap_or(entry.len());
        let (fd_text, ev_text) = entry[..end].split_once(':')?;
        let (fd, after) = fd(fd_text.as_bytes())?;
        if !after.is_empty() {
            return None;
        }
        fds.push(ReadyFd {
            fd,
            ev: Events::parse(ev_text).ok()?,
        });
        rest = &entry[end..];
    }
    Some(Record::Ready { call, fds })
}

/// Format 1's `Recv(fd: 4, n: 64)` / `Send(fd: 4, n: 64)`, exactly as RON wrote them.
fn parse_ron_transfer(b: &[u8]) -> Option<Record> {
    let recv = b.starts_with(b"Recv(fd: ");
    if !recv && !b.starts_with(b"Send(fd: ") {
        return None;
    }
    let rest = &b[9..];
    let (fd, rest) = fd(rest)?;
    let rest = rest.strip_prefix(b", n: ")?;
    let (n, rest) = number(rest)?;
    if rest != b")" {
        return None;
    }
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

/// A non-negative fd (as [`number`]), and what follows it.
fn fd(b: &[u8]) -> Option<(i32, &[u8])> {
    let (n, rest) = number(b)?;
    Some((i32::try_from(n).ok()?, rest))
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

/// The part of a caller's buffer a line is written into.
struct Out<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Out<'_> {
    fn put(&mut self, bytes: &[u8]) -> Option<()> {
        self.buf
            .get_mut(self.len..self.len + bytes.len())?
            .copy_from_slice(bytes);
        self.len += bytes.len();
        Some(())
    }

    /// A non-negative fd; `None` for a negative one (RON writes that record).
    fn fd(&mut self, fd: i32) -> Option<()> {
        let fd = u64::try_from(fd).ok()?;
        let mut digits = [0u8; 24];
        self.put(super::value::unsigned_decimal(fd, &mut digits))
    }

    /// `r4 64`: a letter, an fd and a count.
    fn fd_and_count(&mut self, letter: u8, fd: i32, n: u64) -> Option<()> {
        self.put(&[letter])?;
        self.fd(fd)?;
        self.put(b" ")?;
        let mut digits = [0u8; 24];
        self.put(super::value::unsigned_decimal(n, &mut digits))
    }
}

/// Room for one fd's events as text (`in|pri|out|…`, every name: 54 bytes).
struct EventText {
    buf: [u8; 80],
    len: usize,
}

impl Default for EventText {
    fn default() -> Self {
        EventText {
            buf: [0; 80],
            len: 0,
        }
    }
}

impl std::fmt::Write for EventText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let room = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
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

    fn short(r: &Record) -> Option<String> {
        let mut out = [0u8; 1024];
        let len = write_line(r, &mut out)?;
        Some(String::from_utf8(out[..len].to_vec()).unwrap())
    }

    #[test]
    fn short_lines_read_back_and_format_1_lines_still_read() {
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
                    Record::Peek { fd, n },
                    Record::NoData { fd },
                    Record::Close { fd },
                ] {
                    let line = short(&rec).unwrap();
                    assert_eq!(parse_line(&line), Some(rec.clone()), "{line}");
                    if matches!(rec, Record::Recv { .. } | Record::Send { .. }) {
                        assert_eq!(parse_line(&ron_line(&rec)), Some(rec.clone()));
                    }
                }
            }
        }
        let recv = Record::Recv {
            fd: 4,
            n: 64,
            data: None,
            passed: Vec::new(),
        };
        assert_eq!(short(&recv).unwrap(), "r4 64");
        assert_eq!(short(&Record::Close { fd: 12 }).unwrap(), "c12");
    }

    #[test]
    fn ready_sets_read_back() {
        let ready = |call, fds: &[(i32, u32)]| Record::Ready {
            call,
            fds: fds
                .iter()
                .map(|&(fd, ev)| ReadyFd { fd, ev: Events(ev) })
                .collect(),
        };
        let epoll = ready(
            WaitCall::Epoll,
            &[(5, Events::IN), (7, 0x2011), (9, 0x8000_0004)],
        );
        assert_eq!(
            short(&epoll).unwrap(),
            "e 5:in 7:in|hup|rdhup 9:out|0x80000000"
        );
        for rec in [
            epoll,
            ready(WaitCall::Poll, &[]),
            ready(WaitCall::Select, &[(0, 0), (1023, 0x4)]),
            ready(WaitCall::Poll, &[(3, 0x3ff)]),
        ] {
            let line = short(&rec).unwrap();
            assert_eq!(parse_line(&line), Some(rec), "{line}");
        }
        assert_eq!(short(&ready(WaitCall::Select, &[])).unwrap(), "x");
        assert_eq!(short(&ready(WaitCall::Poll, &[(-1, 1)])), None);
    }

    #[test]
    fn leaves_everything_else_to_ron() {
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
        assert_eq!(short(&kept), None);
        assert_eq!(short(&turned), None);
        assert_eq!(short(&passing), None);
        assert_eq!(short(&Record::Close { fd: -1 }), None);
        assert_eq!(short(&Record::Exit { status: 0 }), None);
        let mut out = [0u8; 64];
        assert_eq!(
            write_line(
                &Record::Recv {
                    fd: 4,
                    n: 64,
                    data: None,
                    passed: Vec::new(),
                },
                &mut out[..4]
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
            "r4",
            "r4 64 ",
            "r-4 64",
            "r04 64",
            "s4  64",
            "c",
            "c4 1",
            "n4x",
            "e ",
            "e 5",
            "e 5:",
            "e 5:inn",
            "e 5:in  6:in",
            "p5:in",
            "q4",
            "",
        ] {
            assert_eq!(parse_line(line), None, "{line}");
        }
    }
}
