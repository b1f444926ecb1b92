//! The lock history's writer and reader together: round trips, runs, damage.

use super::*;

fn text(lines: &[&str]) -> Vec<u8> {
    let mut t = header_line(ActorId(1));
    for l in lines {
        t.push_str(l);
        t.push('\n');
    }
    t.into_bytes()
}

#[test]
fn lines_round_trip() {
    let mut buf = [0u8; MAX_LINE];
    let a = Access {
        thread: 3,
        op: Op::TryLock,
        arg: 16,
    };
    let n = write_line(&mut buf, 2, 7, a, 1);
    assert_eq!(&buf[..n], b"o2 7 t3 trylock 16\n");
    let line = std::str::from_utf8(&buf[..n - 1]).unwrap();
    let run = Run {
        first: 7,
        count: 1,
        access: a,
    };
    assert_eq!(parse_line(line), Some((2, run)));
    assert_eq!(a.describe(), "t3 trylock EBUSY");
    let n = write_line(&mut buf, 1, 5, a, 37);
    assert_eq!(&buf[..n], b"o1 5 t3 trylock 16 x37\n");
    let line = std::str::from_utf8(&buf[..n - 1]).unwrap();
    assert_eq!(parse_line(line).map(|(_, r)| r.count), Some(37));
    let big = Access {
        thread: u32::MAX,
        op: Op::Broadcast,
        arg: u32::MAX,
    };
    assert!(write_line(&mut buf, u32::MAX, u64::MAX, big, u64::MAX) <= MAX_LINE);
}

#[test]
fn sorts_by_object_and_index_and_finds_accesses_in_runs() {
    let t = text(&[
        "o1 0 t1 new 1",
        "o0 0 t1 new 0",
        "o1 3 t3 lock 0",
        "o1 1 t2 lock 0 x2",
    ]);
    let h = LockHistory::parse(Path::new("x"), &t, ActorId(1)).unwrap();
    assert_eq!(h.objects.len(), 2);
    assert_eq!(accesses(&h.objects[1]), 4);
    assert_eq!(access_at(&h.objects[1], 2).map(|a| a.thread), Some(2));
    assert_eq!(access_at(&h.objects[1], 3).map(|a| a.thread), Some(3));
    assert_eq!(access_at(&h.objects[1], 4), None);
    assert!(!h.truncated);
}

#[test]
fn refuses_damage_and_tolerates_holes() {
    let p = Path::new("x");
    let gap = text(&["o1 0 t1 new 1", "o1 2 t2 lock 0"]);
    let e = LockHistory::parse(p, &gap, ActorId(1)).unwrap_err();
    assert_eq!(e.line, 3, "{}", e.problem);
    let overlap = text(&["o1 0 t1 new 1", "o1 1 t2 lock 0 x3", "o1 2 t3 lock 0"]);
    let e = LockHistory::parse(p, &overlap, ActorId(1)).unwrap_err();
    assert!(e.problem.contains("twice"), "{}", e.problem);
    let garbage = text(&["o1 0 t1 new 1", "o1 1 t2 grab 0"]);
    let e = LockHistory::parse(p, &garbage, ActorId(1)).unwrap_err();
    assert!(e.problem.contains("grab"), "{}", e.problem);
    let wrong_actor = LockHistory::parse(p, &gap, ActorId(2)).unwrap_err();
    assert_eq!(wrong_actor.line, 1);
    let mut holes = text(&["o1 0 t1 new 1"]);
    holes.extend_from_slice(&[0; 12]);
    holes.extend_from_slice(b"o1 2 t2 lock 0\no1 3 t2 unl");
    let h = LockHistory::parse(p, &holes, ActorId(1)).unwrap();
    assert!(h.truncated);
    assert_eq!(h.objects[1].len(), 1);
}

/// Damaged files (bytes flipped, cut, lines repeated) give an error or a history, never a
/// panic: the reader runs in `ddbx` and in the LD of every replayed process.
#[test]
fn damaged_files_never_panic() {
    let good = text(&[
        "o0 0 t1 new 0",
        "o0 1 t1 create 2",
        "o1 0 t2 new 1",
        "o1 1 t2 lock 0 x40",
        "o1 41 t1 trylock 16",
        "o2 0 t2 new 2",
        "o2 1 t2 wait 1",
        "o1 42 t2 woke 0",
        "o0 2 t2 exit 0",
        "o0 3 t1 join 2",
    ]);
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let bytes = b"o t0123456789 x\n\0-";
    for _ in 0..20_000 {
        let mut damaged = good.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % damaged.len() as u64) as usize;
            match next() % 4 {
                0 => damaged[at] = bytes[(next() % bytes.len() as u64) as usize],
                1 => damaged.truncate(at),
                2 => {
                    damaged.remove(at);
                }
                _ => damaged.insert(at, bytes[(next() % bytes.len() as u64) as usize]),
            }
            if damaged.is_empty() {
                break;
            }
        }
        let _ = LockHistory::parse(Path::new("x"), &damaged, ActorId(1));
    }
}
