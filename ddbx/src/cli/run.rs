//! `ddbx run --break-if P -- PROGRAM…`: run a program live, recorded as `ddbx record` does, and
//! halt it without replay where P first holds (paper 001's lazy halting; see
//! `supervisor/src/session/live.rs`).
//!
//! At the halt, with a terminal on stdin or with `--prompt`, the `(ddbx)` prompt reads
//! commands (`show`, `ps`, `print`, `cont`, `gdb`, `kill`); `show` and `ps` look again, since
//! the state changes while it stands (actors that interact with a stopped one stop in turn).
//! Without the prompt the halted state is shown and every process ends (or, with `--hold`,
//! stays until ddbx is interrupted); the recording ends there and replays to it.

use super::json;
use super::json_lines::JsonLines;
use crate::api::{
    LiveDriver, Messages, RecordOptions, RunOptions, describe_live, open_sink_append, run_live,
};
use crate::error::Error;
use ddbx_supervisor::session::{HaltAction, HaltedState, Resume};
use std::io::{BufRead, Write};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Examples:
  ddbx run --break-if 'p2.recvs >= 3' -- ./server 4000
  ddbx run --break-if 'x3 == 1' -o run1 -- sh ./start-all.sh   (x3: probe x of p3)
  printf 'show\\ncont\\n' | ddbx run --break-if 'p1.accepts >= 2' --prompt -- ./srv
  ddbx run --break-if 'p2.sends >= 1' --hold -- ./prog   (then gdb -p PID; Ctrl-C ends)
  ddbx run --break-at p1:40 -- ./server 4000      (right after p1's 40th event)

No recording is replayed: the program runs in real time and is recorded as it runs
(into -o DIR, or ddbx-run-N). When the processes named by P have all made their
conditions true, the one that completed P stops there. No other process is told:
each stops when it next sends to, receives from, or times out waiting for a stopped
one (it is then `delayed`), and processes that never interact with a stopped one
run on. A wait's timeout (poll, epoll, select, SO_RCVTIMEO) does not expire because
of a halt: it counts virtual time, the time the program did not stand still.

P names processes as pN (p1 is the program started; the others in the order they
appear) or as PROGRAM.VAR (the first process image that runs PROGRAM, the basename
of its argv[0]: `server.x == 1`), over probes and the built-in counters (`ddbx help
predicates`); a bare xN is x of pN. Only conjunctions of conditions on single
processes (`p1.x == 1 && p3.sends >= 2`).

At the halt, with a terminal on stdin or --prompt, the (ddbx) prompt reads: show,
ps, print pN.VAR, cont (run on as if nobody had stopped; halt again when P becomes
true again), gdb pN [ARGS], kill, quit, help. Without it: the halted state is shown
and every process ends, the recording ending there (`ddbx replay DIR` replays to
it); --hold keeps the processes until ddbx is interrupted.

Exit code: the program's own if it ran to its end; 0 if it ended halted; 2 usage,
103 unsupported, 104 internal error, 130/143 interrupted.

--json writes one object at the end: {\"command\": \"run\", \"outcome\":
\"complete\"|\"halted\"|\"unsupported\"|\"interrupted\", \"exit_code\", \"recording\",
\"root_status\", \"actors\", \"halts\": [{\"predicate\", \"cut\", \"actors\": [{\"id\",
\"events\", \"status\", \"next\", \"vars\", \"satisfied\", \"pid\"}]}], \"passthrough\",
\"problem\", \"messages\"}: the cut has the stopped actors; a status is `stopped
(break)`, `stopped (delayed by pN)`, `running` or `exited`. --json-lines adds
\"actor_stopped\" {\"actor\", \"events\", \"why\"} lines as they happen.";

/// Arguments of `ddbx run`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Halt where this predicate first holds (a conjunction of conditions on single
    /// processes: `p2.recvs >= 3 && p3.x == 1`).
    #[arg(long, value_name = "P", required_unless_present = "break_at")]
    pub break_if: Option<String>,
    /// Halt right after this actor's EVENT-th event (`p3:17`; repeatable; joined to
    /// --break-if with `&&`).
    #[arg(long, value_name = "ACTOR:EVENT")]
    pub break_at: Vec<String>,
    /// Recording directory (new or empty) [default: ddbx-run-N]
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// At the halt, read prompt commands from stdin even if it is not a terminal.
    #[arg(long, conflicts_with = "no_prompt")]
    pub prompt: bool,
    /// At the halt, never open the prompt, even at a terminal.
    #[arg(long)]
    pub no_prompt: bool,
    /// Without the prompt: keep the processes at the halt until ddbx is interrupted.
    #[arg(long)]
    pub hold: bool,
    /// Print one JSON object at the end instead of ddbx's lines.
    #[arg(long)]
    pub json: bool,
    /// Print one JSON object per line as things happen; the last one is the --json object.
    #[arg(long, conflicts_with = "json")]
    pub json_lines: bool,
    /// Write ddbx's lines (or the JSON) to FILE instead of stderr.
    #[arg(long, value_name = "FILE")]
    pub messages: Option<PathBuf>,
    /// Leave the environment variables whose names match PATTERN out of the recording.
    #[arg(long = "env-exclude", value_name = "PATTERN")]
    pub env_exclude: Vec<String>,
    /// The program to run and its arguments (after `--`).
    #[arg(value_name = "PROGRAM", required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// Runs `ddbx run`; returns the exit code.
pub fn run(args: Args) -> Result<i32, Error> {
    let quiet = args.json || args.json_lines;
    let messages = match (&args.messages, quiet) {
        (_, true) => Messages::Quiet,
        (Some(path), false) => Messages::File(path.clone()),
        (None, false) => Messages::Stderr,
    };
    // SAFETY: no other thread runs yet; a live run records every outcome.
    unsafe { std::env::remove_var(ddbx_supervisor::wire::env::TRACE) };
    let lines = args
        .json_lines
        .then(|| JsonLines::open(args.messages.as_deref()))
        .transpose()?;
    let observer = match &lines {
        Some(lines) => lines.observer("run"),
        None => crate::api::Observer::default(),
    };
    let predicate = break_predicate(args.break_if, &args.break_at)?;
    let prompt = !args.no_prompt && (args.prompt || super::prompt::stdin_is_terminal());
    let driver = if prompt {
        Some(prompt_driver())
    } else {
        Some(quiet_driver(messages.clone(), args.hold))
    };
    let sink = messages.clone();
    let outcome = run_live(RunOptions {
        record: RecordOptions {
            command: args.command,
            out_dir: args.out,
            messages,
            handle_signals: true,
            observer,
            env_exclude: args.env_exclude,
        },
        break_if: predicate.clone(),
        driver,
        hold: args.hold,
    })?;
    let record = &outcome.record;
    super::latest::remember(&record.dir);
    if outcome.halts.is_empty() && record.kind == crate::api::OutcomeKind::Complete {
        open_sink_append(&sink)(&format!(
            "ddbx: `{predicate}` never held: the program ran to its end"
        ));
    }
    if quiet {
        let (_, problem) = json::end_details(&record.end);
        let value = serde_json::json!({
            "command": "run",
            "outcome": record.kind.as_str(),
            "exit_code": record.exit_code,
            "recording": record.dir.display().to_string(),
            "root_status": json::status(record.root_status),
            "actors": record.actors.iter().map(json::actor).collect::<Vec<_>>(),
            "halts": outcome.halts.iter().map(json::halted_json).collect::<Vec<_>>(),
            "passthrough": record.passthrough,
            "problem": problem,
            "messages": record.messages,
        });
        match &lines {
            Some(lines) => lines.end(value),
            None => super::write_json_message(&value, args.messages.as_deref())?,
        }
    }
    Ok(record.exit_code)
}

/// The breakpoint: `--break-if` and each `--break-at pN:K` (as `pN.events >= K`), joined.
fn break_predicate(break_if: Option<String>, break_at: &[String]) -> Result<String, Error> {
    let mut parts: Vec<String> = break_if.into_iter().collect();
    for point in break_at {
        let bad = || {
            Error::Usage(format!(
                "--break-at: expected ACTOR:EVENT such as `p3:17` (after p3's 17th event), \
                 found `{}`",
                point.escape_debug()
            ))
        };
        let (actor, event) = point.rsplit_once(':').ok_or_else(bad)?;
        let event: u64 = event.parse().map_err(|_| bad())?;
        let number = actor.strip_prefix('p').and_then(|n| n.parse::<u32>().ok());
        if event == 0 || number.is_none_or(|n| n == 0) {
            return Err(bad());
        }
        parts.push(format!("{actor}.events >= {event}"));
    }
    Ok(parts.join(" && "))
}

/// Without the prompt: shows the halted state, then ends every process (or holds them).
fn quiet_driver(messages: Messages, hold: bool) -> LiveDriver {
    let say = open_sink_append(&messages);
    let mut say = say;
    Box::new(move |state: &HaltedState| {
        for line in describe_live(state).lines() {
            say(line);
        }
        if hold {
            HaltAction::Hold
        } else {
            HaltAction::Kill
        }
    })
}

/// The commands of the live prompt, for `help`.
pub const HELP: &str = "\
commands:
  show               the halted state as it is now (who stopped where, who runs on)
  ps                 the processes: id, pid, events, status
  print pN.VAR       a variable of a stopped process (a probe or a counter)
  cont               run on as if nobody had stopped (halt again when P becomes true again)
  gdb pN [ARGS…]     run `gdb -p PID [ARGS…]` on that process; back here when gdb ends
  kill               end every process (the recording ends here)
  quit               the same, and leave
  help               this list";

/// The `(ddbx)` prompt of a live run, reading commands from stdin.
fn prompt_driver() -> LiveDriver {
    // A command that looks again at the state (`show`, `ps`) runs once the state is new.
    let mut pending: Option<String> = None;
    Box::new(move |state: &HaltedState| {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut out = std::io::stdout();
        match pending.take() {
            Some(line) => fresh_command(&line, state, &mut out),
            None => {
                let _ = write!(out, "{}", describe_live(state));
                let _ = writeln!(out, "halted; type `help` for the commands");
            }
        }
        let (action, again) = session(state, &mut input, &mut out);
        pending = again;
        action
    })
}

/// Reads commands until one continues, ends, or needs the state anew (returned with it).
fn session(
    state: &HaltedState,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> (HaltAction, Option<String>) {
    loop {
        let _ = write!(out, "(ddbx) ");
        let _ = out.flush();
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                let _ = writeln!(out);
                return (HaltAction::Kill, None);
            }
            Ok(_) => {}
        }
        let line = line.trim();
        let (word, rest) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(w, r)| (w, r.trim()));
        match word {
            "" => {}
            "help" | "h" | "?" => {
                let _ = writeln!(out, "{HELP}");
            }
            "show" | "ps" => return (HaltAction::Refresh, Some(line.to_string())),
            "print" | "p" => print(state, rest, out),
            "cont" | "c" | "continue" => {
                let _ = writeln!(out, "continuing");
                return (HaltAction::Resume(Resume::ToEnd), None);
            }
            "gdb" => super::prompt::gdb(state, rest, out),
            "kill" => {
                let _ = writeln!(out, "ending every process");
                return (HaltAction::Kill, None);
            }
            "quit" | "q" | "exit" => return (HaltAction::Kill, None),
            other => {
                let _ = writeln!(out, "unknown command `{other}`; `help` lists them");
            }
        }
    }
}

/// `show` or `ps` on the state as it is now.
fn fresh_command(line: &str, state: &HaltedState, out: &mut dyn Write) {
    if line == "show" {
        let _ = write!(out, "{}", describe_live(state));
        return;
    }
    let _ = writeln!(out, "{:<6} {:>8} {:>7}  status", "actor", "pid", "events");
    for a in &state.actors {
        let pid = a.pid.map_or("-".to_string(), |p| p.to_string());
        let events = if a.status.starts_with("stopped") {
            a.events.to_string()
        } else {
            "-".to_string()
        };
        let _ = writeln!(
            out,
            "{:<6} {:>8} {:>7}  {}",
            a.actor.to_string(),
            pid,
            events,
            a.status
        );
    }
}

/// `print pN.VAR`: a variable of a stopped process.
fn print(state: &HaltedState, text: &str, out: &mut dyn Write) {
    let Some((actor, name)) = text.split_once('.') else {
        let _ = writeln!(out, "expected `print pN.VAR`, e.g. `print p2.recvs`");
        return;
    };
    let Some(a) = state.actors.iter().find(|a| a.actor.to_string() == actor) else {
        let _ = writeln!(out, "print: no actor `{actor}` (`ps` lists them)");
        return;
    };
    match a.vars.iter().find(|(n, _)| n == name) {
        Some((_, v)) => {
            let _ = writeln!(out, "{text} = {v}");
        }
        None if !a.status.starts_with("stopped") => {
            let _ = writeln!(
                out,
                "print: {actor} is {} (only stopped processes have values; `show` looks again)",
                a.status
            );
        }
        None => {
            let _ = writeln!(out, "print: {actor} has no variable `{name}`");
        }
    }
}
