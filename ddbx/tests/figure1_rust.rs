//! The Rust version of Figure 1 (examples/figure1-rust, std::net only: spawned handlers that
//! inherit an accepted socket, non-blocking reads polled in rounds instead of select). Native
//! runs differ; replays of one recording print what the record printed, every time.

use ddbx_tests::{Ddbx, figure1_rust, native_outputs};

const DDBX: Ddbx = Ddbx(env!("CARGO_BIN_EXE_ddbx"));

#[test]
fn figure1_rust_records_and_replays_identically() {
    let bin = figure1_rust();
    let native = native_outputs(bin, &["run"], 20, 2, 30);
    assert!(
        native.len() >= 2,
        "30 native runs of figure1-rust all printed the same:\n{}",
        native[0]
    );
    let (_tmp, recorded) = DDBX.record_and_replay(bin, &["run"], 20, 3);
    for line in [
        "client_a: first reply from server_",
        "client_b: server_x says: server_x child ",
        "server_y: serving client_a",
    ] {
        assert!(recorded.stdout.contains(line), "{}", recorded.stdout);
    }
}
