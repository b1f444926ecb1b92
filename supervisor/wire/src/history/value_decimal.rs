//! Numbers in decimal, written without `fmt` (a value line is written on a server's hot path).

/// `n` in decimal, in the end of `buf`.
pub(super) fn decimal(n: i64, buf: &mut [u8; 24]) -> &[u8] {
    let digits = unsigned_decimal(n.unsigned_abs(), buf).len();
    let mut i = buf.len() - digits;
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// `m` in decimal, in the end of `buf` (room is left for a sign: 20 digits at most).
pub(crate) fn unsigned_decimal(mut m: u64, buf: &mut [u8; 24]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    &buf[i..]
}
