//! ddbx's JSON output as the tests read it.

use serde_json::Value;
use std::collections::BTreeMap;

/// `text` (a command's output) as one JSON value; the failure names `what` and shows the text.
pub fn parse_json(text: &str, what: &str) -> Value {
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{what}: not one JSON object ({e}):\n{text}"))
}

/// A JSON cut (`{"p1": 3, …}`) as actor → events; `None` when `v` is not an object.
pub fn cut_of(v: &Value) -> Option<BTreeMap<String, u64>> {
    Some(
        v.as_object()?
            .iter()
            .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(u64::MAX)))
            .collect(),
    )
}

/// The id of the actor `ddbx ps --json` (`ps`) lists as child number `index` that `parent`
/// forked (origin `Fork{parent: P, index: I}`).
pub fn forked_child(ps: &Value, parent: &str, index: u32) -> String {
    let origin = format!("Fork{{parent: {parent}, index: {index}}}");
    ps["actors"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["origin"] == origin.as_str())
        .and_then(|a| a["id"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no actor with origin {origin}: {ps}"))
}
