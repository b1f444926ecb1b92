//! The paper's Figure 1 (examples/figure1): client_a and client_b connect to server_x, which
//! forks a child per connection; client_a also talks to server_y and waits on both at once.
//! Native runs differ (who is served first, who answers client_a first); replays of one
//! recording print what the record printed, every time.

use ddbx_tests::{Ddbx, figure1, native_outputs_with, path_str};

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

#[test]
fn figure1_records_and_replays_identically() {
    let (run, bin) = figure1();
    let fig1_bin = path_str(&bin);
    let native = native_outputs_with(&run, &[], &[("FIG1_BIN", fig1_bin)], 20, 2, 30);
    assert!(
        native.len() >= 2,
        "30 native runs of Figure 1 all printed the same:\n{}",
        native[0]
    );

    let env = [("DDBX_JITTER", "20"), ("FIG1_BIN", fig1_bin)];
    let (tmp, recorded) = DDBX.record_and_replay_with(&run, &[], &env, 3, &|_| {});
    assert!(
        recorded.stdout.contains("client_a: first reply from"),
        "{}",
        recorded.stdout
    );
    let rec = tmp.join("rec");

    // ps lists the four programs of the figure among the actors.
    let ps = DDBX.run(["ps", path_str(&rec)]).success();
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
    let show = DDBX.run(["show", path_str(&rec), "server_x"]).success();
    assert_eq!(show.stdout.matches("Accept(").count(), 2, "{}", show.stdout);
    assert_eq!(
        show.stdout.matches("Fork(index").count(),
        2,
        "{}",
        show.stdout
    );
}
