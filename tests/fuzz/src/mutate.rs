//! The mutations: byte-level ones (bit and byte flips, insertions, deletions, truncation at any
//! offset), structure-aware ones on lines and numbers (repeat, swap or drop a line, replace a
//! number with an extreme), splices of two corpus entries, unicode and invalid UTF-8, deep
//! nesting, and tokens of the target's language (its dictionary plus the identifiers found in
//! its corpus).

use crate::rng::Rng;

/// Inputs are cut to this size after mutation (deep nesting reaches it).
pub const MAX_INPUT: usize = 1 << 20;

/// Numbers that find overflow and unbounded allocation.
const EXTREMES: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "4294967297",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "99999999999999999999999999999999999999999999999999",
    "1e308",
    "-1e308",
    "0x7fffffff",
    "0b1",
    "1_000",
    "NaN",
    "inf",
];

/// Unicode that tends to break column arithmetic, and bytes that are not UTF-8.
const UNICODE: &[&[u8]] = &[
    "é".as_bytes(),
    "\u{301}".as_bytes(),
    "\u{202e}".as_bytes(),
    "\u{200b}".as_bytes(),
    "\u{feff}".as_bytes(),
    "\u{2028}".as_bytes(),
    "\u{ffff}".as_bytes(),
    "𝕏".as_bytes(),
    "\u{1F600}".as_bytes(),
    "中文".as_bytes(),
    b"\0",
    b"\r",
    b"\t",
    b"\x1b[31m",
    b"\xc3",
    b"\xff",
    b"\xed\xa0\x80",
    b"\xf0\x9f",
    b"\xc0\x80",
];

/// How many times an opener is repeated for deep nesting.
const DEPTHS: &[usize] = &[
    2, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 10_000, 100_000,
];

/// The mutations of one target.
#[derive(Clone, Debug)]
pub struct Mutator {
    /// Tokens of the target's language.
    dict: Vec<Vec<u8>>,
    /// Opening and closing texts that nest (`(` and `)`; `!` and nothing).
    nesting: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Mutator {
    /// A mutator with the target's tokens and nesting pairs, plus the identifiers of `corpus`.
    pub fn new(tokens: &[&str], nesting: &[(&str, &str)], corpus: &[Vec<u8>]) -> Mutator {
        let mut dict: Vec<Vec<u8>> = tokens.iter().map(|t| t.as_bytes().to_vec()).collect();
        for entry in corpus {
            for word in identifiers(entry) {
                if dict.len() >= 1000 {
                    break;
                }
                if !dict.contains(&word) {
                    dict.push(word);
                }
            }
        }
        Mutator {
            dict,
            nesting: nesting
                .iter()
                .map(|(a, b)| (a.as_bytes().to_vec(), b.as_bytes().to_vec()))
                .collect(),
        }
    }

    /// A new input: an entry of `pool` with 1 to 4 mutations.
    pub fn mutate(&self, rng: &mut Rng, pool: &[Vec<u8>]) -> Vec<u8> {
        let mut data = if pool.is_empty() {
            Vec::new()
        } else {
            rng.pick(pool).clone()
        };
        for _ in 0..1 + rng.below(4) {
            self.once(rng, &mut data, pool);
        }
        data.truncate(MAX_INPUT);
        data
    }

    /// One mutation, in place.
    // size: one arm per mutation, each a few lines; split, they would only be harder to compare.
    fn once(&self, rng: &mut Rng, data: &mut Vec<u8>, pool: &[Vec<u8>]) {
        let len = data.len();
        // What may still be added without passing MAX_INPUT.
        let room = MAX_INPUT.saturating_sub(len);
        match rng.below(15) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = *rng.pick(b"\0\x01\x7f\x80\xff\n\"\\()[],:.-+!&|=<> 0123456789");
            }
            2 => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                data.splice(at..at, bytes);
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(64));
                data.drain(at..at + n);
            }
            4 => data.truncate(rng.below(len + 1)),
            5 if !pool.is_empty() => {
                let other = rng.pick(pool);
                let (a, b) = if rng.one_in(2) {
                    (line_start(data, rng.below(len + 1)), {
                        line_start(other, rng.below(other.len() + 1))
                    })
                } else {
                    (rng.below(len + 1), rng.below(other.len() + 1))
                };
                data.truncate(a);
                data.extend_from_slice(&other[b..other.len().min(b + room + len - a)]);
            }
            6 => {
                if let Some((s, e)) = pick_line(rng, data) {
                    let times = if rng.one_in(8) {
                        1000
                    } else {
                        1 + rng.below(3)
                    };
                    let times = times.min(room / (e - s).max(1));
                    let line = data[s..e].to_vec();
                    let copies: Vec<u8> = line.repeat(times);
                    data.splice(e..e, copies);
                }
            }
            7 => replace_number(rng, data),
            8 => {
                let at = rng.below(len + 1);
                data.splice(at..at, rng.pick(UNICODE).to_vec());
            }
            9 if !self.nesting.is_empty() => {
                let (open, close) = rng.pick(&self.nesting);
                let depth = (*rng.pick(DEPTHS)).min(room / (open.len() + close.len()).max(1));
                let a = rng.below(len + 1);
                let b = a + rng.below(len - a + 1);
                data.splice(b..b, close.repeat(depth));
                data.splice(a..a, open.repeat(depth));
            }
            10 if !self.dict.is_empty() => {
                let at = rng.below(len + 1);
                data.splice(at..at, rng.pick(&self.dict).clone());
            }
            11 => {
                if let Some((s, e)) = pick_line(rng, data) {
                    data.drain(s..e);
                }
            }
            12 => {
                let a = pick_line(rng, data);
                let b = pick_line(rng, data);
                if let (Some((s1, e1)), Some((s2, e2))) = (a, b)
                    && e1 <= s2
                {
                    let second = data[s2..e2].to_vec();
                    let first = data[s1..e1].to_vec();
                    data.splice(s2..e2, first);
                    data.splice(s1..e1, second);
                }
            }
            13 if len > 0 => {
                let from = rng.below(len);
                let n = 1 + rng.below((len - from).min(256));
                let chunk = data[from..from + n].to_vec();
                let at = rng.below(len + 1);
                data.splice(at..at, chunk);
            }
            _ => {
                // Replace a dictionary token by another one of the same class (a word by a word).
                if let Some((s, e)) = pick_word(rng, data)
                    && !self.dict.is_empty()
                {
                    data.splice(s..e, rng.pick(&self.dict).clone());
                }
            }
        }
    }
}

/// The start of the line holding byte `at`.
fn line_start(data: &[u8], at: usize) -> usize {
    data[..at.min(data.len())]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1)
}

/// A random line, newline included: `(start, end)`.
fn pick_line(rng: &mut Rng, data: &[u8]) -> Option<(usize, usize)> {
    if data.is_empty() {
        return None;
    }
    let s = line_start(data, rng.below(data.len()));
    let e = data[s..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(data.len(), |i| s + i + 1);
    Some((s, e))
}

/// A random identifier of `data`: `(start, end)`.
fn pick_word(rng: &mut Rng, data: &[u8]) -> Option<(usize, usize)> {
    let words = spans(data, |b| b.is_ascii_alphanumeric() || b == b'_');
    (!words.is_empty()).then(|| *rng.pick(&words))
}

/// Replaces a random number of `data` (digits, with a `-` before them) by an extreme.
fn replace_number(rng: &mut Rng, data: &mut Vec<u8>) {
    let numbers = spans(data, |b| b.is_ascii_digit());
    let extreme = rng.pick(EXTREMES).as_bytes().to_vec();
    if numbers.is_empty() {
        let at = rng.below(data.len() + 1);
        data.splice(at..at, extreme);
        return;
    }
    let (mut s, e) = *rng.pick(&numbers);
    if s > 0 && data[s - 1] == b'-' {
        s -= 1;
    }
    data.splice(s..e, extreme);
}

/// The maximal runs of bytes satisfying `ok`.
fn spans(data: &[u8], ok: impl Fn(u8) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if ok(data[i]) {
            let s = i;
            while i < data.len() && ok(data[i]) {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

/// The identifiers of a corpus entry (with the `(` or `: ` that follows, if any).
fn identifiers(entry: &[u8]) -> Vec<Vec<u8>> {
    spans(entry, |b| b.is_ascii_alphanumeric() || b == b'_')
        .into_iter()
        .filter(|(s, e)| e - s >= 2 && !entry[*s].is_ascii_digit())
        .map(|(s, e)| {
            let end = match entry.get(e) {
                Some(b'(') => e + 1,
                Some(b':') => (e + 2).min(entry.len()),
                _ => e,
            };
            entry[s..end].to_vec()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let pool = vec![b"Recv(fd: 4, n: 17)\nExit(status: 0)\n".to_vec()];
        let m = Mutator::new(&["Skip(n: "], &[("(", ")")], &pool);
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..200)
                .map(|_| m.mutate(&mut rng, &pool))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let inputs = run(7);
        assert!(inputs.iter().any(|i| i.len() > 1000), "nesting or repeats");
        assert!(inputs.iter().any(|i| i.len() < pool[0].len()), "cuts");
    }
}
