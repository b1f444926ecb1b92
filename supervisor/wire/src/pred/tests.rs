//! The tree, its printing and its evaluation, on hand-made expressions.

use super::*;
use crate::ids::ActorId;

fn var(actor: u32, name: &str) -> Expr {
    Expr::Var(VarRef::of(ActorId(actor), name))
}

fn int(n: i64) -> Expr {
    Expr::Int(n)
}

/// Evaluates with p1.x = 1, p1.s = "ab", p2.y = 5; everything else unset.
fn ev(e: &Expr) -> Result<Value, EvalError> {
    eval(
        e,
        &mut |v: &VarRef| match (v.actor_id().map(|a| a.0), v.name.as_str()) {
            (Some(1), "x") => Some(Value::Int(1)),
            (Some(1), "s") => Some(Value::Str("ab".into())),
            (Some(2), "y") => Some(Value::Int(5)),
            _ => None,
        },
    )
}

#[test]
fn pred_arithmetic_and_comparisons() {
    use BinOp::*;
    let sum = Expr::bin(Add, var(1, "x"), var(2, "y"));
    assert_eq!(ev(&sum), Ok(Value::Int(6)));
    assert_eq!(ev(&Expr::bin(Sub, int(1), int(3))), Ok(Value::Int(-2)));
    assert_eq!(ev(&Expr::minus(var(2, "y"))), Ok(Value::Int(-5)));
    let table = [
        (Eq, [false, true, false]),
        (Ne, [true, false, true]),
        (Lt, [true, false, false]),
        (Le, [true, true, false]),
        (Gt, [false, false, true]),
        (Ge, [false, true, true]),
    ];
    for (op, want) in table {
        for (rhs, w) in [6, 5, 4].into_iter().zip(want) {
            let e = Expr::bin(op, var(2, "y"), int(rhs));
            assert_eq!(ev(&e), Ok(Value::Bool(w)), "{e}");
            assert_eq!(
                holds(&Expr::bin(op, int(5), int(rhs)), &mut |_| None),
                w,
                "5 {op} {rhs}"
            );
        }
    }
}

#[test]
fn pred_strings_compare_lexicographically() {
    let s = |t: &str| Expr::Str(t.into());
    assert_eq!(
        ev(&Expr::bin(BinOp::Eq, var(1, "s"), s("ab"))),
        Ok(Value::Bool(true))
    );
    assert_eq!(
        ev(&Expr::bin(BinOp::Lt, s("ab"), s("b"))),
        Ok(Value::Bool(true))
    );
    assert_eq!(
        ev(&Expr::bin(BinOp::Ge, s("a"), s("ab"))),
        Ok(Value::Bool(false))
    );
}

#[test]
fn pred_logic_short_circuits() {
    use BinOp::*;
    let t = Expr::bin(Eq, int(1), int(1));
    let f = Expr::bin(Eq, int(1), int(2));
    let bad = Expr::bin(Eq, int(1), Expr::Str("a".into()));
    assert_eq!(
        ev(&Expr::bin(And, t.clone(), t.clone())),
        Ok(Value::Bool(true))
    );
    assert_eq!(
        ev(&Expr::bin(And, t.clone(), f.clone())),
        Ok(Value::Bool(false))
    );
    assert_eq!(
        ev(&Expr::bin(Or, f.clone(), t.clone())),
        Ok(Value::Bool(true))
    );
    assert_eq!(
        ev(&Expr::bin(Or, f.clone(), f.clone())),
        Ok(Value::Bool(false))
    );
    assert_eq!(ev(&Expr::logical_not(f.clone())), Ok(Value::Bool(true)));
    // The right side is not evaluated once the left decides.
    assert_eq!(
        ev(&Expr::bin(And, f.clone(), bad.clone())),
        Ok(Value::Bool(false))
    );
    assert_eq!(
        ev(&Expr::bin(Or, t.clone(), bad.clone())),
        Ok(Value::Bool(true))
    );
    assert!(ev(&Expr::bin(And, t, bad)).is_err());
}

#[test]
fn pred_unset_variables_make_comparisons_false() {
    use BinOp::*;
    let unset = var(3, "z");
    for op in [Eq, Ne, Lt, Le, Gt, Ge] {
        let e = Expr::bin(op, unset.clone(), int(0));
        assert_eq!(ev(&e), Ok(Value::Bool(false)), "{e}");
    }
    // Arithmetic on it is still unset, and so still makes the comparison false.
    let e = Expr::bin(Ne, Expr::bin(Add, unset.clone(), int(1)), int(0));
    assert_eq!(ev(&e), Ok(Value::Bool(false)));
    // A negated comparison is therefore true.
    assert_eq!(
        ev(&Expr::logical_not(Expr::bin(Eq, unset.clone(), int(0)))),
        Ok(Value::Bool(true))
    );
    // Outside any comparison it is an error naming the variable.
    let err = ev(&unset).unwrap_err();
    assert_eq!(err.to_string(), "`p3.z` has no value yet");
    assert!(!holds(&unset, &mut |_| None));
}

#[test]
fn pred_type_errors_are_reported_and_false() {
    use BinOp::*;
    let e = Expr::bin(Eq, int(1), Expr::Str("1".into()));
    let err = ev(&e).unwrap_err();
    assert_eq!(
        err,
        EvalError::Binary {
            op: Eq,
            left: Kind::Int,
            right: Kind::Str
        }
    );
    assert_eq!(err.to_string(), "`==` cannot take an integer and a string");
    assert!(!holds(&e, &mut |_| None));
    let and = Expr::bin(And, int(1), int(2));
    assert!(matches!(ev(&and), Err(EvalError::Binary { op: And, .. })));
    let lt = Expr::bin(
        Lt,
        Expr::bin(Eq, int(1), int(1)),
        Expr::bin(Eq, int(1), int(1)),
    );
    assert!(ev(&lt).is_err(), "conditions are not ordered");
    let not = Expr::logical_not(int(1));
    assert_eq!(
        ev(&not).unwrap_err().to_string(),
        "`!` cannot take an integer"
    );
    let neg = Expr::minus(Expr::Str("a".into()));
    assert_eq!(
        ev(&neg).unwrap_err().to_string(),
        "`-` cannot take a string"
    );
    let add = Expr::bin(Add, int(1), Expr::Str("a".into()));
    assert!(ev(&add).is_err());
    // Not a condition: evaluates, but does not hold.
    assert_eq!(ev(&int(1)), Ok(Value::Int(1)));
    assert!(!holds(&int(1), &mut |_| None));
}

#[test]
fn pred_overflow_is_an_error() {
    let e = Expr::bin(BinOp::Add, int(i64::MAX), int(1));
    assert_eq!(
        ev(&e).unwrap_err().to_string(),
        "`9223372036854775807 + 1` overflows a 64-bit integer"
    );
    assert!(ev(&Expr::minus(int(i64::MIN))).is_err());
    assert!(ev(&Expr::bin(BinOp::Sub, int(i64::MIN), int(1))).is_err());
}

#[test]
fn pred_display_parenthesises_by_precedence() {
    use BinOp::*;
    let x = || var(1, "x");
    let e = Expr::bin(
        And,
        Expr::bin(Or, x(), x()),
        Expr::bin(
            Eq,
            Expr::bin(Sub, x(), Expr::bin(Add, x(), int(-5))),
            int(2),
        ),
    );
    assert_eq!(e.to_string(), "(p1.x || p1.x) && p1.x - (p1.x + -5) == 2");
    assert_eq!(Expr::minus(int(5)).to_string(), "-(5)");
    assert_eq!(Expr::minus(Expr::minus(x())).to_string(), "--p1.x");
    assert_eq!(
        Expr::logical_not(Expr::bin(Eq, x(), int(1))).to_string(),
        "!(p1.x == 1)"
    );
    assert_eq!(
        Expr::bin(Eq, Expr::bin(Eq, x(), x()), x()).to_string(),
        "(p1.x == p1.x) == p1.x"
    );
    assert_eq!(Expr::Str("a\"b\\c".into()).to_string(), r#""a\"b\\c""#);
    let typed = VarRef {
        actor: ActorRef::Program("server_x".into()),
        name: "count".into(),
        ty: MemType::U8,
    };
    assert_eq!(typed.to_string(), "server_x.count:u8");
    let bare = VarRef {
        actor: ActorRef::Unqualified,
        name: "x4".into(),
        ty: MemType::I32,
    };
    assert_eq!(bare.to_string(), "x4");
}

#[test]
fn pred_actors_and_vars() {
    use BinOp::*;
    let e = Expr::bin(
        And,
        Expr::bin(Eq, var(4, "x"), int(1)),
        Expr::bin(Lt, var(1, "x"), var(4, "x")),
    );
    assert_eq!(
        e.actors().into_iter().collect::<Vec<_>>(),
        [ActorId(1), ActorId(4)]
    );
    let vars: Vec<String> = e.vars().iter().map(|v| v.to_string()).collect();
    assert_eq!(vars, ["p4.x", "p1.x"]);
}

#[test]
fn pred_mem_types_decode_little_endian() {
    assert_eq!(MemType::I8.decode(&[0xff]), Some(-1));
    assert_eq!(MemType::U8.decode(&[0xff]), Some(255));
    assert_eq!(MemType::I16.decode(&[0x00, 0x80]), Some(-32768));
    assert_eq!(MemType::U16.decode(&[0x00, 0x80]), Some(32768));
    assert_eq!(MemType::I32.decode(&(-7i32).to_le_bytes()), Some(-7));
    assert_eq!(
        MemType::U32.decode(&u32::MAX.to_le_bytes()),
        Some(u32::MAX as i64)
    );
    assert_eq!(MemType::I64.decode(&i64::MIN.to_le_bytes()), Some(i64::MIN));
    assert_eq!(MemType::U64.decode(&u64::MAX.to_le_bytes()), None);
    assert_eq!(MemType::U64.decode(&7u64.to_le_bytes()), Some(7));
    assert_eq!(MemType::I32.decode(&[1, 2]), None, "wrong length");
    for t in MemType::ALL {
        assert_eq!(MemType::from_name(t.name()), Some(t));
        assert_eq!(t.decode(&vec![0; t.size()]), Some(0));
    }
    assert_eq!(MemType::from_name("int"), Some(MemType::I32));
    assert_eq!(MemType::from_name("float"), None);
    assert_eq!(MemType::default(), MemType::I32);
}

#[test]
fn pred_serialises_through_ron() {
    let e = Expr::bin(
        BinOp::And,
        Expr::bin(BinOp::Ge, var(3, "count"), int(2)),
        Expr::logical_not(Expr::bin(BinOp::Eq, var(3, "name"), Expr::Str("a".into()))),
    );
    let text = ron::to_string(&e).unwrap();
    assert_eq!(ron::from_str::<Expr>(&text).unwrap(), e);
    let err = EvalError::Unset {
        var: VarRef::of(ActorId(2), "y"),
    };
    let text = ron::to_string(&err).unwrap();
    assert_eq!(ron::from_str::<EvalError>(&text).unwrap(), err);
}

#[test]
fn pred_counters() {
    assert!(is_counter("events") && is_counter("alive"));
    assert!(!is_counter("count"));
}
