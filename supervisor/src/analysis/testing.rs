//! Hand-made histories for the analysis's unit tests.

use ddbx_wire::{ActorId, History};
use std::path::Path;

/// The `Start` record of a root actor, with its newline.
pub(crate) const START: &str = "Start(pid: 1, ppid: 0, origin: Root, argv: [\"a\"], host: \"h\")\n";

/// The history of `p<actor>` whose records are the lines of `body`.
pub(crate) fn hist(actor: u32, body: &str) -> History {
    let text = format!("Header(format: 1, actor: \"p{actor}\")\n{body}");
    History::parse(Path::new("test.ron"), &text).unwrap()
}

/// `p<n>`.
pub(crate) fn p(n: u32) -> ActorId {
    ActorId(n)
}
