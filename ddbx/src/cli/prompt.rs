//! The `(ddbx)` prompt of a halted replay (paper 003 §5): look at the halted global state,
//! add predicates and traces, change the primary, continue, attach gdb to a held process.
//!
//! It opens when `ddbx replay` halts with a terminal on stdin, or with `--prompt` (which
//! reads commands from stdin whatever it is, so that a script can drive it through a pipe).
//! Commands are read one per line; the prompt and answers go to stdout, ddbx's own `ddbx: …`
//! lines to the message stream as usual. End of input is `quit`.

use crate::debugger::Debugger;
use crate::debugger::render::{cut_text, describe};
use crate::halt::RecordingCatalog;
use ddbx_supervisor::analysis::cut::at_or_before;
use ddbx_supervisor::predicate;
use ddbx_supervisor::session::{HaltAction, HaltedState};
use ddbx_supervisor::wire::pred::{self as pred, Value};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::io::{BufRead, IsTerminal, Write};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};

/// The commands, for `help`.
pub const HELP: &str = "\
commands:
  show               the halted global state (per process: events, next event, variables)
  ps                 the processes: id, pid, events, status
  print EXPR         EXPR in the halted state, e.g. `print p4.x` or `print x1 + x4`
  stop if P          add a predicate; a conjunctive one becomes the primary (cont halts at it)
  trace E if P       show E each time P becomes true (now for the past, later as cont passes)
  switch N           make the N-th stop if the primary (`info` lists them)
  info               the stop ifs (the primary marked) and traces
  cont               run to the next time the primary becomes true (or to its first state
                     at or after this one after `switch`/`stop if`), else to the end
  gdb pN [ARGS…]     run `gdb -p PID [ARGS…]` on that held process; back here when gdb ends
  kill               end every process (the replay ends halted here)
  quit               the same, and leave
  help               this list";

/// The prompt as a replay driver, reading commands from stdin.
pub fn driver() -> crate::api::Driver {
    Box::new(|state: &HaltedState, debugger: &mut Debugger| {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut out = std::io::stdout();
        session(state, debugger, &mut input, &mut out)
    })
}

/// Whether stdin is a terminal (the prompt opens by itself then).
pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// Runs the prompt at one halt until a command continues or ends the replay.
pub fn session(
    state: &HaltedState,
    debugger: &mut Debugger,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> HaltAction {
    let _ = writeln!(out, "halted; type `help` for the commands");
    loop {
        let _ = write!(out, "(ddbx) ");
        let _ = out.flush();
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                let _ = writeln!(out);
                return HaltAction::Kill;
            }
            Ok(_) => {}
        }
        if let Some(action) = command(line.trim(), state, debugger, out) {
            return action;
        }
    }
}

/// Runs one command line. `Some`: the replay goes on that way, and the prompt closes.
fn command(
    line: &str,
    state: &HaltedState,
    debugger: &mut Debugger,
    out: &mut dyn Write,
) -> Option<HaltAction> {
    let (word, rest) = line
        .split_once(char::is_whitespace)
        .map_or((line, ""), |(w, r)| (w, r.trim()));
    match word {
        "" => {}
        "help" | "h" | "?" => {
            let _ = writeln!(out, "{HELP}");
        }
        "show" => {
            let _ = write!(out, "{}", describe(state));
        }
        "ps" => ps(state, out),
        "print" | "p" => print(state, debugger, rest, out),
        "info" => info(debugger, out),
        "stop" => match rest.strip_prefix("if") {
            Some(p) if p.starts_with(char::is_whitespace) => stop_if(debugger, p.trim(), out),
            _ => {
                let _ = writeln!(out, "expected `stop if P`, found `{line}`");
            }
        },
        "trace" => match split_trace(rest) {
            Some((expr, cond)) => trace(state, debugger, expr, cond, out),
            None => {
                let _ = writeln!(out, "expected `trace EXPR if P`, found `{line}`");
            }
        },
        "switch" => match rest.parse::<usize>() {
            Ok(n) => switch(debugger, n, out),
            Err(_) => {
                let _ = writeln!(out, "expected `switch N` (N from `info`), found `{line}`");
            }
        },
        "cont" | "c" | "continue" => match debugger.cont() {
            Ok(resume) => return Some(HaltAction::Resume(resume)),
            Err(e) => {
                let _ = writeln!(out, "{e}");
            }
        },
        "gdb" => gdb(state, rest, out),
        "kill" => {
            let _ = writeln!(out, "ending every process");
            return Some(HaltAction::Kill);
        }
        "quit" | "q" | "exit" => return Some(HaltAction::Kill),
        other => {
            let _ = writeln!(out, "unknown command `{other}`; `help` lists them");
        }
    }
    None
}

/// `stop if P`.
fn stop_if(debugger: &mut Debugger, predicate: &str, out: &mut dyn Write) {
    match debugger.add_stop_if(predicate) {
        Ok(n) => {
            let primary = debugger.primary == Some(n - 1);
            let _ = writeln!(
                out,
                "stop if {n}: `{predicate}`{}",
                if primary {
                    " (the primary: cont halts at it)"
                } else {
                    " (not conjunctive: reported, not halted at)"
                }
            );
        }
        Err(e) => {
            let _ = writeln!(out, "{e}");
        }
    }
}

/// `trace EXPR if P`: adds it, and shows the points the replay has passed already.
fn trace(
    state: &HaltedState,
    debugger: &mut Debugger,
    expr: &str,
    cond: &str,
    out: &mut dyn Write,
) {
    if let Err(e) = debugger.add_trace(expr, cond, "trace") {
        let _ = writeln!(out, "{e}");
        return;
    }
    let t = debugger.traces.last();
    let n = t.map_or(0, |t| t.points.len());
    let _ = writeln!(
        out,
        "trace {}: `{expr}` when `{cond}` becomes true ({n} times in this run)",
        debugger.traces.len()
    );
    let passed = t
        .into_iter()
        .flat_map(|t| &t.points)
        .filter(|p| at_or_before(&p.cut, &state.cut));
    for p in passed {
        let _ = writeln!(
            out,
            "  {expr} = {}   (became true at {})",
            p.value,
            cut_text(&p.cut)
        );
    }
}

/// `switch N`.
fn switch(debugger: &mut Debugger, n: usize, out: &mut dyn Write) {
    match debugger.switch(n) {
        Ok(()) => {
            let _ = writeln!(
                out,
                "primary: `{}` (cont halts at its first state from here)",
                debugger.stop_ifs[n - 1].text
            );
        }
        Err(e) => {
            let _ = writeln!(out, "{e}");
        }
    }
}

/// `E if P` → (E, P), split at the last ` if `.
fn split_trace(text: &str) -> Option<(&str, &str)> {
    let at = text.rfind(" if ")?;
    let (e, p) = (text[..at].trim(), text[at + 4..].trim());
    (!e.is_empty() && !p.is_empty()).then_some((e, p))
}

fn ps(state: &HaltedState, out: &mut dyn Write) {
    let _ = writeln!(out, "{:<6} {:>8} {:>7}  status", "actor", "pid", "events");
    for a in &state.actors {
        let pid = a.pid.map_or("-".to_string(), |p| p.to_string());
        let _ = writeln!(
            out,
            "{:<6} {:>8} {:>7}  {}",
            a.actor.to_string(),
            pid,
            a.events,
            a.status
        );
    }
}

fn print(state: &HaltedState, debugger: &Debugger, text: &str, out: &mut dyn Write) {
    if text.is_empty() {
        let _ = writeln!(out, "expected `print EXPR`, e.g. `print p4.x`");
        return;
    }
    let catalog = RecordingCatalog(debugger.recording());
    let expr = match predicate::parse(text) {
        Ok(e) => e,
        Err(e) => {
            let _ = writeln!(out, "{}", e.render(text));
            return;
        }
    };
    let expr = match predicate::resolve_value(expr, &catalog) {
        Ok(e) => e,
        Err(e) => {
            let _ = writeln!(out, "{e}");
            return;
        }
    };
    let mut missing = None;
    let value = pred::eval(&expr, &mut |v| {
        let found = v.actor_id().and_then(|id| {
            state
                .actors
                .iter()
                .find(|a| a.actor == id)
                .and_then(|a| a.vars.iter().find(|(n, _)| *n == v.name))
                .map(|(_, value)| Value::Int(*value))
        });
        if found.is_none() && missing.is_none() {
            missing = Some(v.to_string());
        }
        found
    });
    match value {
        Ok(Value::Int(n)) => {
            let _ = writeln!(out, "{text} = {n}");
        }
        Ok(Value::Bool(b)) => {
            let _ = writeln!(out, "{text} = {b}");
        }
        Ok(Value::Str(s)) => {
            let _ = writeln!(out, "{text} = {s:?}");
        }
        Err(_) if missing.is_some() => {
            let _ = writeln!(
                out,
                "{text}: `{}` has no value in the halted state (not set yet, or a memory \
                 variable the predicate does not read: use `gdb`)",
                missing.unwrap_or_default()
            );
        }
        Err(e) => {
            let _ = writeln!(out, "{text}: {e}");
        }
    }
}

fn info(debugger: &Debugger, out: &mut dyn Write) {
    for (i, w) in debugger.stop_ifs.iter().enumerate() {
        let mark = if debugger.primary == Some(i) {
            "  (primary)"
        } else {
            ""
        };
        let _ = writeln!(out, "stop if {}: `{}` {}{mark}", i + 1, w.text, w.kind());
    }
    for (i, t) in debugger.traces.iter().enumerate() {
        let _ = writeln!(
            out,
            "trace {}: `{}` if `{}` ({} times in this run)",
            i + 1,
            t.expr_text,
            t.cond.text,
            t.points.len()
        );
    }
}

/// Splits gdb's arguments like a shell would for simple cases: words, '…' and "…".
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        out.push(word);
    }
    out
}

/// `gdb pN [ARGS…]`: gdb on a process held at a halt (a replay's passive one, a live run's).
pub(crate) fn gdb(state: &HaltedState, rest: &str, out: &mut dyn Write) {
    let args = words(rest);
    let Some(actor) = args.first() else {
        let _ = writeln!(out, "expected `gdb pN`");
        return;
    };
    let Some(a) = state.actors.iter().find(|a| a.actor.to_string() == *actor) else {
        let _ = writeln!(out, "gdb: no actor `{actor}` (`ps` lists them)");
        return;
    };
    let held = ["passive", "stopped", "running"]
        .iter()
        .any(|s| a.status.starts_with(s));
    let Some(pid) = a.pid.filter(|_| held) else {
        let _ = writeln!(
            out,
            "gdb: {actor} is not a live held process ({})",
            a.status
        );
        return;
    };
    let _ = out.flush();
    let mut command = std::process::Command::new("gdb");
    command.arg("-p").arg(pid.to_string()).args(&args[1..]);
    if !stdin_is_terminal() {
        command.stdin(std::process::Stdio::null());
    }
    match command.spawn() {
        Ok(child) => wait_for(child.id() as i32),
        Err(e) => {
            let _ = writeln!(out, "gdb: cannot start gdb: {e}");
        }
    }
}

/// Waits until process `pid` (our child) has ended. The session's reaper owns `waitpid`, so
/// this watches a pidfd instead: it becomes readable when the process ends.
fn wait_for(pid: i32) {
    // SAFETY: pidfd_open takes a pid and flags, reads no memory of ours, and returns a new fd
    // or -1 (nix has no wrapper for it).
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return; // already gone (and reaped)
    }
    // SAFETY: `fd` was just returned by pidfd_open: it is open, and nothing else owns it.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
    while let Err(Errno::EINTR) = poll(&mut fds, PollTimeout::NONE) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gdb_arguments_split_like_a_shell() {
        assert_eq!(
            words("p3 -batch -ex 'print count'"),
            ["p3", "-batch", "-ex", "print count"]
        );
        assert_eq!(words(" a  \"b c\" ''"), ["a", "b c", ""]);
    }

    #[test]
    fn trace_splits_at_the_last_if() {
        assert_eq!(
            split_trace("p3.count if x1 == 1"),
            Some(("p3.count", "x1 == 1"))
        );
        assert_eq!(split_trace("p3.count"), None);
    }
}
