//! ddbx's own exit codes, defined once: the `ddbx` command exits with them, and a debuggee's LD
//! uses the same numbers when it must end a process itself (a diverged or unsupported replay
//! whose supervisor is gone).
//!
//! | code | meaning |
//! |---|---|
//! | the program's own | `record`: the root process's status as a shell sees it (128 + signal when killed); `replay`: the recorded root status, when the replay reached the recorded end |
//! | 0 | `ps`, `show`, `help`: success; `inf`: P holds; `record --until-fail`: a failing run was kept |
//! | [`NOT_FOUND`] = 1 | `inf`: P never holds; `record --until-fail`: no run failed within `--runs` |
//! | [`USAGE`] = 2 | bad command line, unknown actor, output directory not empty, program not found |
//! | [`DIVERGED`] = 101 | the replay did not follow the recording |
//! | [`BAD_RECORDING`] = 102 | missing, corrupt or truncated-beyond-use recording, or another format version |
//! | [`UNSUPPORTED`] = 103 | the program did something ddbx cannot record or replay faithfully |
//! | [`INTERNAL`] = 104 | ddbx itself failed (a system call, a bug) |
//! | [`INTERRUPTED_SIGINT`] = 130, [`INTERRUPTED_SIGTERM`] = 143 | ddbx got SIGINT / SIGTERM and stopped every process |

/// What was looked for never happened: `inf`'s predicate never holds, no run of `record
/// --until-fail` failed.
pub const NOT_FOUND: i32 = 1;
/// Bad command line, unknown actor, unusable output directory, program not found.
pub const USAGE: i32 = 2;
/// The replay did not follow the recording.
pub const DIVERGED: i32 = 101;
/// The recording cannot be used (missing, corrupt, truncated beyond use, other format).
pub const BAD_RECORDING: i32 = 102;
/// The program did something ddbx cannot handle faithfully.
pub const UNSUPPORTED: i32 = 103;
/// ddbx itself failed.
pub const INTERNAL: i32 = 104;
/// ddbx was interrupted by SIGINT (128 + 2).
pub const INTERRUPTED_SIGINT: i32 = 130;
/// ddbx was interrupted by SIGTERM (128 + 15).
pub const INTERRUPTED_SIGTERM: i32 = 143;

/// The exit code for an interruption by `signal`.
pub fn interrupted(signal: i32) -> i32 {
    128 + signal
}
