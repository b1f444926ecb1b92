//! Unit tests of the value lines (`value.rs`): writing, parsing, deltas, errors.

use super::*;

fn line(d: &mut Deltas, v: &Value) -> String {
    let mut s = String::new();
    d.write(&mut s, v).unwrap();
    s
}

#[test]
fn round_trip_with_deltas() {
    let values = vec![
        Value::Clock {
            clock: 1,
            ns: 81_234_567_890_123,
        },
        Value::Clock {
            clock: 1,
            ns: 81_234_567_895_246,
        },
        Value::Clock {
            clock: 0,
            ns: 1_764_154_321_000_000_000,
        },
        Value::Clock {
            clock: 0,
            ns: 1_764_154_320_999_999_988,
        },
        Value::TimeOfDay {
            us: 1_764_154_321_123_456,
        },
        Value::Time { s: 1_764_154_321 },
        Value::Time { s: 1_764_154_322 },
        Value::Random {
            bytes: vec![0x3f, 0xa2, 0, 255],
        },
        Value::Clock { clock: -6, ns: 12 },
        Value::Signal {
            sig: 17,
            in_call: true,
            ended: None,
            entry: None,
        },
        Value::Signal {
            sig: 10,
            in_call: false,
            ended: None,
            entry: Some(0),
        },
        Value::Signal {
            sig: 17,
            in_call: false,
            ended: Some(3),
            entry: Some(4_000_000),
        },
        Value::Reaped { child: 3 },
        Value::Reaped { child: 0 },
        Value::Closed { fd: 6 },
        Value::Waiting { n: 17 },
        Value::Clock {
            clock: i32::MAX,
            ns: i64::MIN,
        },
        Value::Thread { t: 3 },
        Value::Opened { t: 3, fd: 23 },
        Value::Bound { port: 34661 },
        Value::Taken { sig: 10 },
        Value::Taken { sig: 0 },
        Value::Linked { err: 111 },
        Value::Linked { err: 0 },
    ];
    let mut w = Deltas::default();
    let lines: Vec<String> = values.iter().map(|v| line(&mut w, v)).collect();
    assert_eq!(lines[0], "~c1=81234567890123");
    assert_eq!(lines[1], "~c1+5123");
    assert_eq!(lines[3], "~c0-12");
    assert_eq!(lines[6], "~s+1");
    assert_eq!(lines[7], "~r3fa200ff");
    assert_eq!(lines[9], "~g17");
    assert_eq!(lines[10], "~G10#0");
    assert_eq!(lines[11], "~G17@3#4000000");
    assert_eq!(lines[12], "~w3");
    assert_eq!(lines[14], "~h6");
    assert_eq!(lines[15], "~q=17");
    assert_eq!(lines[17], "~t3");
    assert_eq!(lines[18], "~n3:23");
    assert_eq!(lines[19], "~b=34661");
    let mut r = Deltas::default();
    let back: Vec<Value> = lines.iter().map(|l| r.parse(l).unwrap()).collect();
    assert_eq!(back, values);
    // The fast writer writes the same lines.
    let mut fast = Deltas::default();
    for (v, l) in values.iter().zip(&lines) {
        let mut buf = [0u8; 64];
        match fast.write_number(&mut buf, v) {
            Some(n) => assert_eq!(std::str::from_utf8(&buf[..n]).unwrap(), l),
            None => assert!(matches!(
                v,
                Value::Random { .. }
                    | Value::Signal { .. }
                    | Value::Reaped { .. }
                    | Value::Closed { .. }
                    | Value::Appended { .. }
                    | Value::ReadAfter { .. }
                    | Value::Thread { .. }
                    | Value::Opened { .. }
            )),
        }
    }
}

#[test]
fn a_threads_values_line_round_trips() {
    let mut w = Deltas::default();
    let text = line(&mut w, &Value::ValuesOf { t: 4 });
    assert_eq!(text, "~T4");
    assert_eq!(Deltas::default().parse(&text), Ok(Value::ValuesOf { t: 4 }));
    assert!(Deltas::default().parse("~T0").is_err());
}

#[test]
fn turns_round_trip_with_their_file_or_without() {
    let values = [
        Value::Appended {
            turn: 12,
            reads: 0,
            file: None,
        },
        Value::ReadAfter {
            writes: 12,
            file: Some(5),
        },
        Value::Appended {
            turn: 13,
            reads: 3,
            file: Some(5),
        },
    ];
    let mut w = Deltas::default();
    let lines: Vec<String> = values.iter().map(|v| line(&mut w, v)).collect();
    assert_eq!(lines, ["~a12", "~f12#5", "~a13/3#5"]);
    let mut r = Deltas::default();
    let back: Vec<Value> = lines.iter().map(|l| r.parse(l).unwrap()).collect();
    assert_eq!(back, values);
    for bad in ["~a1#", "~f#2", "~a1/x#2", "~l4#-1", "~f1#2#3"] {
        assert!(r.parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn closes_and_locks_round_trip() {
    let values = [
        Value::Freed { t: 2, fd: 7 },
        Value::Locked {
            turn: Ok(4),
            file: Some(9),
        },
        Value::Locked {
            turn: Err(11),
            file: None,
        },
        Value::Locked {
            turn: Ok(5),
            file: None,
        },
    ];
    let mut w = Deltas::default();
    let lines: Vec<String> = values.iter().map(|v| line(&mut w, v)).collect();
    assert_eq!(lines, ["~x2:7", "~l4#9", "~l-11", "~l5"]);
    let mut r = Deltas::default();
    let back: Vec<Value> = lines.iter().map(|l| r.parse(l).unwrap()).collect();
    assert_eq!(back, values);
    // Not numbers the fast writer writes.
    let mut buf = [0u8; 64];
    assert!(values.iter().all(|v| w.write_number(&mut buf, v).is_none()));
}

#[test]
fn bad_lines_say_what_was_expected() {
    let mut r = Deltas::default();
    for bad in [
        "~", "~x=1", "~c=1", "~c1", "~c1=x", "~r3", "~rzz", "~u", "~g", "~g0", "~G65", "~gx",
        "~g17@", "~g17@x", "~w", "~wx", "~h", "~hx", "~g17@", "~g17@x", "~w", "~wx", "~q", "~qx",
        "~a", "~ax", "~a-1", "~a1/", "~a1/x", "~f", "~fx", "~t", "~tx", "~t0", "~t-1", "~n", "~n3",
        "~n3:", "~n0:4", "~n3:-1", "~nx:4", "~x3", "~x0:4", "~x3:-1", "~l", "~lx", "~l-", "~l-x",
    ] {
        let e = r.parse(bad).unwrap_err();
        assert!(e.contains("expected"), "{bad}: {e}");
    }
    let e = r.parse("~c1+5").unwrap_err();
    assert!(e.contains("no earlier value"), "{e}");
}
