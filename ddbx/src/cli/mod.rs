//! The `ddbx` command line: one file per subcommand, each a thin layer over the library.
//!
//! Errors print as `ddbx: error: <message>` on standard error, with the exit codes of
//! [`crate::exit`]. Every subcommand takes `--json`:
//!
//! * `ps`, `show`, `inf`, `races`: one JSON object on standard output (schemas in [`ps`],
//!   [`show`], [`inf`] and [`races`]); `view` writes an HTML file ([`view`]);
//! * `record`, `replay`: one JSON object, at the end, on the message stream (standard error or
//!   `--messages FILE`) instead of the `ddbx: …` lines (schemas in [`record`] and [`replay`]).

pub mod doctor;
pub mod explore;
pub mod inf;
pub mod json;
pub mod json_lines;
pub mod latest;
pub mod objects;
pub mod pages;
pub mod progress;
pub mod prompt;
pub mod ps;
pub mod races;
pub mod record;
pub mod replay;
pub mod run;
pub mod show;
pub mod until_fail;
pub mod view;

use crate::error::Error;
use crate::exit;
use crate::term::{self, ColorWhen};
use clap::{Parser, Subcommand};
use nix::sys::signal::{SigHandler, Signal, signal};
use std::ffi::OsString;

const AFTER_HELP: &str = "\
Examples:
  ddbx record -- ./server 4000       record a run into ddbx-run-1
  ddbx replay ddbx-run-1             replay it, forcing the recorded outcomes
  ddbx ps ddbx-run-1                 list the recorded processes (actors)
  ddbx show ddbx-run-1 p3            one actor's events, with peers resolved
  ddbx replay ddbx-run-1 --stop-if 'x1==1 && x4==1'
                                     halt every process at the first global state
                                     where the predicate holds (`ddbx help predicates`)
  ddbx inf ddbx-run-1 'x1==1 && x4==1'   the same state, computed offline
  ddbx races ddbx-run-1              the message races, locally-first and unaffected ones
  ddbx view ddbx-run-1 -o run.html   the event, first-race and affects views, one HTML file
  ddbx explore ddbx-run-1 --race 2   a new recorded run in which race 2 has another winner
  ddbx run --break-if 'p1.x == 1' -- ./server
                                     halt a live run where it holds, no replay (the others
                                     stop lazily, when they next talk to a stopped process)
  ddbx replay --stop-if 'x1==1 && x4==1'
                                     without DIR: the latest recording made from this
                                     directory (also ps, show, inf, races, view)
  ddbx record --until-fail -- ./test record until a run fails, keep that run
  ddbx doctor                        check that this machine can record
  source <(ddbx completions bash)    completions (also zsh, fish); `ddbx man` for the pages

Exit codes: the program's own status (record; replay that reached the end),
1 nothing found (inf: P never holds; record --until-fail: no run failed), 2 usage, 101 diverged, 102 bad recording, 103 unsupported, 104 internal error,
130/143 interrupted by SIGINT/SIGTERM.";

/// ddbx: record and replay multi-process socket programs.
#[derive(Debug, Parser)]
#[command(
    name = "ddbx",
    version,
    about = "Record and replay Linux programs made of processes that talk over sockets, and halt \
             them all where a global predicate first holds",
    after_help = AFTER_HELP,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// When to colour ddbx's text output: auto (at a terminal, unless NO_COLOR is set),
    /// always, never.
    #[arg(
        long,
        value_enum,
        global = true,
        default_value_t = ColorWhen::Auto,
        value_name = "WHEN",
        hide_possible_values = true,
        display_order = 1000
    )]
    pub color: ColorWhen,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record a run of a program and every process it starts.
    Record(record::Args),
    /// Replay a recording exactly.
    Replay(replay::Args),
    /// List the actors (processes) of a recording.
    Ps(ps::Args),
    /// Show one actor's events.
    Show(show::Args),
    /// Compute Inf(P) offline: the first global state of a recording where P holds.
    Inf(inf::Args),
    /// List the message races of a recording: locally-first, unaffected, affects.
    Races(races::Args),
    /// Flip message races: a new recorded run in which a race has another winner.
    Explore(explore::Args),
    /// Run a program live, recorded, and halt it without replay where a predicate first holds.
    Run(run::Args),
    /// Write the event, first-race, affects and abstract affects views as one HTML file (or a
    /// ShiViz log, or Chrome/Perfetto trace JSON).
    View(view::Args),
    /// Check what makes a record fail or lie on this machine, and how to fix it.
    Doctor(doctor::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(pages::CompletionsArgs),
    /// Print the man page, or write every page (ddbx.1, ddbx-record.1, …) into a directory.
    Man(pages::ManArgs),
    /// Help on a command, or on a topic: `ddbx help predicates` (the `stop if` language).
    Help {
        /// A command (record, replay, run, ps, show, inf, races, explore, view, doctor, completions, man) or
        /// `predicates`.
        topic: Option<String>,
    },
}

/// `ddbx help [TOPIC]`.
fn help(topic: Option<&str>) -> Result<i32, Error> {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    cli.build();
    match topic {
        Some("predicates") | Some("predicate") => {
            // Markdown escapes `|` inside a table; a terminal shows the operator as typed.
            let text = ddbx_supervisor::predicate::REFERENCE.replace(r"`a \|\| b`", "`a || b`  ");
            print!("{text}");
            Ok(0)
        }
        None => {
            let _ = cli.print_long_help();
            Ok(0)
        }
        Some(name) => match cli.find_subcommand_mut(name) {
            Some(sub) => {
                let _ = sub.print_long_help();
                Ok(0)
            }
            None => Err(Error::Usage(format!(
                "no help topic `{name}`: expected a command (record, replay, run, ps, show, inf, races, \
                 explore, view, doctor, completions, man) or `predicates`"
            ))),
        },
    }
}

/// Runs `ddbx` with the process's arguments; returns the exit code.
pub fn main() -> i32 {
    let command = std::env::args().nth(1).unwrap_or_default();
    if !matches!(command.as_str(), "record" | "replay" | "run" | "explore") {
        // Commands that only print end quietly when their reader goes away (`| head`), like
        // other Unix tools. (The commands that run sessions keep ignoring SIGPIPE: the GD
        // writes to LD sockets that a dying process may have closed.)
        // SAFETY: resetting a signal disposition to its default installs no handler, and no
        // other thread runs yet.
        let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
    }
    main_with(std::env::args_os())
}

/// An optimal recording (`record --trace optimal`) logs only racing outcomes: no sends, no
/// byte counts of untraced receives. What needs the whole history refuses it (exit 102).
fn refuse_optimal(command: &Command) -> Result<(), Error> {
    let (dir, what) = match command {
        Command::Replay(a) if !a.stop_if.is_empty() || !a.stop_at.is_empty() => (
            &a.dir,
            "--stop-if/--stop-at (halting needs every send and receive)",
        ),
        Command::Races(a) => (&a.dir, "`races` (it needs every send and receive)"),
        Command::View(a) => (&a.dir, "`view` (it needs every send and receive)"),
        Command::Explore(a) => (&a.dir, "`explore` (it needs every send and receive)"),
        Command::Inf(a) => (&a.dir, "`inf` (it needs every send and receive)"),
        _ => return Ok(()),
    };
    if ddbx_supervisor::wire::history::recording_is_optimal(dir) {
        return Err(Error::BadRecording(format!(
            "{}: expected a full recording for {what}, found one made with `--trace optimal`, \
             which logs only racing receives; record again with `ddbx record --full`",
            dir.display()
        )));
    }
    Ok(())
}

/// Runs `ddbx` with these arguments (the first is the program name); returns the exit code.
pub fn main_with<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { exit::USAGE } else { 0 };
        }
    };
    term::set_color(cli.color);
    let mut command = cli.command;
    let result = fill_in_recording(&mut command)
        .and_then(|()| refuse_optimal(&command))
        .and_then(|()| match command {
            Command::Record(args) => record::run(args),
            Command::Replay(args) => replay::run(args),
            Command::Ps(args) => ps::run(args),
            Command::Show(args) => show::run(args),
            Command::Inf(args) => inf::run(args),
            Command::Races(args) => races::run(args),
            Command::View(args) => view::run(args),
            Command::Explore(args) => explore::run(args),
            Command::Run(args) => run::run(args),
            Command::Doctor(args) => doctor::run(args),
            Command::Completions(args) => pages::completions(args),
            Command::Man(args) => pages::man(args),
            Command::Help { topic } => help(topic.as_deref()),
        });
    match result {
        Ok(code) => code,
        Err(e) => {
            term::eprint_line(&format!("ddbx: error: {e}"));
            e.exit_code()
        }
    }
}

/// Fills in each subcommand's recording directory: the one given, or the latest made from
/// this directory ([`latest`]); and, where DIR may be left out before another positional,
/// which one was given.
fn fill_in_recording(command: &mut Command) -> Result<(), Error> {
    use latest::{dir_or_latest, is_recording, split};
    match command {
        Command::Replay(a) => a.dir = dir_or_latest(a.given_dir.take(), a.json || a.json_lines)?,
        Command::Ps(a) => a.dir = dir_or_latest(a.given_dir.take(), a.json)?,
        Command::Races(a) => a.dir = dir_or_latest(a.given_dir.take(), a.json)?,
        Command::View(a) => a.dir = dir_or_latest(a.given_dir.take(), false)?,
        Command::Explore(a) => a.dir = dir_or_latest(a.given_dir.take(), a.json)?,
        Command::Show(a) if a.obj.is_some() => {
            // With --obj, ACTOR is optional: one positional is DIR when it is a recording.
            let (dir, actor) = split(a.given_dir.take(), a.given_actor.take(), is_recording);
            a.actor = actor.unwrap_or_default();
            a.dir = dir_or_latest(dir, a.json)?;
        }
        Command::Show(a) => {
            let (dir, actor) = split(a.given_dir.take(), a.given_actor.take(), |_| false);
            a.actor = actor.ok_or_else(|| {
                Error::Usage("expected an ACTOR to show (`ddbx show [DIR] ACTOR`)".into())
            })?;
            a.dir = dir_or_latest(dir, a.json)?;
        }
        Command::Inf(a) => {
            let (dir, predicate) =
                split(a.given_dir.take(), a.given_predicate.take(), is_recording);
            a.predicate = predicate;
            a.dir = dir_or_latest(dir, a.json)?;
        }
        _ => {}
    }
    Ok(())
}

/// Writes one JSON value (and a newline) to the message stream (`--messages FILE` or stderr).
pub(crate) fn write_json_message(
    value: &serde_json::Value,
    messages: Option<&std::path::Path>,
) -> Result<(), Error> {
    let text = format!("{value}\n");
    match messages {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| Error::Internal(format!("cannot write {}: {e}", path.display()))),
        None => {
            eprint!("{text}");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn argument_errors_are_usage_errors() {
        assert_eq!(main_with(["ddbx"]), exit::USAGE);
        assert_eq!(main_with(["ddbx", "record"]), exit::USAGE);
        assert_eq!(main_with(["ddbx", "record", "--"]), exit::USAGE);
        assert_eq!(main_with(["ddbx", "frobnicate"]), exit::USAGE);
        assert_eq!(main_with(["ddbx", "show", "/nonexistent"]), exit::USAGE);
        assert_eq!(main_with(["ddbx", "--help"]), 0);
        assert_eq!(main_with(["ddbx", "record", "--help"]), 0);
    }

    #[test]
    fn a_missing_program_is_a_usage_error() {
        let dir = std::env::temp_dir().join(format!("ddbx-cli-missing-{}", std::process::id()));
        let code = main_with([
            "ddbx".into(),
            "record".into(),
            "-o".into(),
            dir.clone().into_os_string(),
            "--".into(),
            OsString::from("no-such-program-for-ddbx"),
        ]);
        assert_eq!(code, exit::USAGE);
        assert!(
            !dir.exists(),
            "nothing is created for a program that does not exist"
        );
    }

    #[test]
    fn a_missing_recording_is_a_bad_recording() {
        assert_eq!(
            main_with(["ddbx", "replay", "/nonexistent/ddbx-run"]),
            exit::BAD_RECORDING
        );
        assert_eq!(
            main_with(["ddbx", "ps", "/nonexistent/ddbx-run"]),
            exit::BAD_RECORDING
        );
    }

    /// A hand-made recording: p1 forks p2, p2 connects to p1.
    fn tiny_recording(dir: &std::path::Path) {
        use ddbx_supervisor::wire::history::{Origin, Record, header_line};
        use ddbx_supervisor::wire::manifest::{ActorInfo, ExitStatus, Manifest, SessionState};
        use ddbx_supervisor::wire::{ActorId, FORMAT_VERSION};
        std::fs::create_dir_all(dir.join("history")).unwrap();
        let actor = |id: u32, origin: Origin| ActorInfo {
            id: ActorId(id),
            origin,
            pid: 100 + id as i32,
            argv: vec![format!("./prog{id}")],
            host: "h".into(),
            exit: Some(ExitStatus::Exited(0)),
            reaps: Vec::new(),
            signalled_by: Vec::new(),
            unrecorded: None,
        };
        let p2_origin = Origin::Fork {
            parent: ActorId(1),
            index: 1,
        };
        Manifest {
            format: FORMAT_VERSION,
            ddbx_version: "0".into(),
            command: vec!["./prog1".into()],
            cwd: "/".into(),
            env: vec![],
            host: "h".into(),
            state: SessionState::Complete,
            actors: vec![actor(1, Origin::Root), actor(2, p2_origin)],
            passthrough: vec![],
            problem: None,
            env_left_out: Vec::new(),
            closes: true,
            signals: true,
            pipes: true,
        }
        .store(dir)
        .unwrap();
        let start = |id: u32, origin| Record::Start {
            pid: 100 + id as i32,
            ppid: 1,
            origin,
            argv: vec![format!("./prog{id}")],
            host: "h".into(),
        };
        let histories = [
            (
                1,
                vec![
                    start(1, Origin::Root),
                    Record::Fork { index: 1 },
                    Record::Accept {
                        fd: 3,
                        new_fd: 4,
                        local: "127.0.0.1:80".into(),
                        remote: "127.0.0.1:5000".into(),
                        peer_pid: None,
                        at: None,
                    },
                    Record::Exit { status: 0 },
                ],
            ),
            (
                2,
                vec![
                    start(2, p2_origin),
                    Record::Connect {
                        fd: 3,
                        err: None,
                        local: "127.0.0.1:5000".into(),
                        remote: "127.0.0.1:80".into(),
                        at: None,
                    },
                    Record::Exit { status: 0 },
                ],
            ),
        ];
        for (id, records) in histories {
            let mut text = header_line(ActorId(id));
            for r in records {
                text.push_str(&r.to_line());
                text.push('\n');
            }
            std::fs::write(dir.join("history").join(format!("p{id}.ron")), text).unwrap();
        }
    }

    #[test]
    fn ps_and_show_read_a_recording_and_reject_bad_actors() {
        let dir = std::env::temp_dir().join(format!("ddbx-cli-tiny-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        tiny_recording(&dir);
        let d = dir.clone().into_os_string();
        let run = |args: &[&str]| {
            let mut all: Vec<OsString> = vec!["ddbx".into()];
            all.extend(args.iter().map(OsString::from));
            main_with(all)
        };
        let ds = d.to_str().unwrap();
        assert_eq!(run(&["ps", ds]), 0);
        assert_eq!(run(&["ps", "--json", ds]), 0);
        assert_eq!(run(&["show", ds, "p2"]), 0);
        assert_eq!(run(&["show", "--json", ds, "prog1"]), 0);
        assert_eq!(run(&["show", ds, "p9"]), exit::USAGE);
        assert_eq!(run(&["show", ds, "nosuch"]), exit::USAGE);
        let recording = ddbx_supervisor::Recording::open(&dir).unwrap();
        let channels = ddbx_supervisor::analysis::match_channels(&recording.histories);
        assert_eq!(channels.len(), 1);
        let e = recording.find_actor("nosuch").unwrap_err();
        // p2 is a forked child that did not exec: known by its id only.
        assert!(e.contains("p1 (prog1), p2"), "{e}");
        std::fs::remove_file(dir.join("history/p2.ron")).unwrap();
        assert_eq!(run(&["ps", ds]), exit::BAD_RECORDING);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
