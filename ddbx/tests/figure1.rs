//! The paper's Figure 1 (examples/figure1): client_a and client_b connect to server_x, which
//! forks a child per connection; client_a also talks to server_y and waits on both at once.
//! Native runs differ (who is served first, who answers client_a first); replays of one
//! recording print what the record printed, every time.

use ddbx_tests::{Run, TempDir, assert_same_histories, figure1, histories, native_outputs_with};

const DDBX: &str = env!("CARGO_BIN_EXE_ddbx");

#[test]
fn figure1_records_and_replays_identically() {
    let (run, bin) = figure1();
    let fig1_bin = bin.to_str().unwrap_or_default().to_string();
    let native = native_outputs_with(&run, &[], &[("FIG1_BIN", &fig1_bin)], 20, 2, 30);
    assert!(
        native.len() >= 2,
        "30 native runs of Figure 1 all printed the same:\n{}",
        native[0]
    );

    let tmp = TempDir::new("fig1");
    let rec = tmp.join("rec");
    let recorded = Run::new(DDBX)
        .args([
            "record",
            "-o",
            rec.to_str().unwrap_or_default(),
            "--",
            run.to_str().unwrap_or_default(),
        ])
        .env("DDBX_JITTER", "20")
        .env("FIG1_BIN", &fig1_bin)
        .output();
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    assert!(
        recorded.stdout.contains("client_a: first reply from"),
        "{}",
        recorded.stdout
    );

    // ps lists the four programs of the figure among the actors.
    let ps = Run::new(DDBX)
        .args(["ps", rec.to_str().unwrap_or_default()])
        .output();
    assert_eq!(ps.code, 0, "{}", ps.stderr);
    for program in ["client_a", "client_b", "server_x", "server_y"] {
        assert!(
            ps.stdout.contains(program),
            "ps does not list {program}:\n{}",
            ps.stdout
        );
    }
    // server_x and its two children: three actors run server_x.
    let server_x_rows = ps.stdout.lines().filter(|l| l.contains("server_x")).count();
    assert!(
        server_x_rows >= 3,
        "expected server_x and its two children in ps:\n{}",
        ps.stdout
    );

    // `show server_x` names the process that started server_x (its two forked children are
    // known by their ids).
    let show = Run::new(DDBX)
        .args(["show", rec.to_str().unwrap_or_default(), "server_x"])
        .output();
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert_eq!(show.stdout.matches("Accept(").count(), 2, "{}", show.stdout);
    assert_eq!(
        show.stdout.matches("Fork(index").count(),
        2,
        "{}",
        show.stdout
    );

    let recorded_histories = histories(&rec);
    for i in 1..=3 {
        let out = tmp.join(&format!("replay{i}"));
        let replayed = Run::new(DDBX)
            .args([
                "replay",
                "--history-out",
                out.to_str().unwrap_or_default(),
                rec.to_str().unwrap_or_default(),
            ])
            .output();
        assert_eq!(replayed.code, 0, "replay {i}:\n{}", replayed.stderr);
        assert_eq!(
            replayed.stdout, recorded.stdout,
            "replay {i} printed something else"
        );
        assert_same_histories(
            &recorded_histories,
            &histories(&out),
            &format!("replay {i}"),
        );
    }
}
