//! `ddbx completions SHELL` and `ddbx man`: shell completions and man pages made from the
//! command line's own definitions (clap_complete, clap_mangen), so they never disagree with
//! `--help`.

use super::Cli;
use crate::error::Error;
use clap::CommandFactory;
use std::path::{Path, PathBuf};

const COMPLETIONS_HELP: &str = "\
Examples:
  source <(ddbx completions bash)                  this shell only
  ddbx completions bash > ~/.local/share/bash-completion/completions/ddbx
  ddbx completions zsh > ~/.zfunc/_ddbx            (with fpath+=~/.zfunc before compinit)
  ddbx completions fish > ~/.config/fish/completions/ddbx.fish";

const MAN_HELP: &str = "\
Examples:
  ddbx man | man -l -                              read ddbx(1) now
  ddbx man --dir ~/.local/share/man/man1           every page: ddbx.1, ddbx-record.1, …
  man ddbx-replay                                  (once that directory is in MANPATH)";

/// Arguments of `ddbx completions`.
#[derive(Debug, clap::Args)]
#[command(after_help = COMPLETIONS_HELP)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Arguments of `ddbx man`.
#[derive(Debug, clap::Args)]
#[command(after_help = MAN_HELP)]
pub struct ManArgs {
    /// Write every page (ddbx.1 and one per subcommand) into DIR instead of printing ddbx.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints the completion script for a shell on standard output.
pub fn completions(args: CompletionsArgs) -> Result<i32, Error> {
    let mut cli = Cli::command();
    clap_complete::generate(args.shell, &mut cli, "ddbx", &mut std::io::stdout());
    Ok(0)
}

/// Prints ddbx.1, or writes every page into `--dir`.
pub fn man(args: ManArgs) -> Result<i32, Error> {
    let cli = Cli::command();
    match args.dir {
        None => {
            clap_mangen::Man::new(cli)
                .render(&mut std::io::stdout())
                .map_err(|e| Error::Internal(format!("cannot write the man page: {e}")))?;
        }
        Some(dir) => {
            write_pages(cli, &dir)?;
            println!("ddbx: man pages written to {}", dir.display());
        }
    }
    Ok(0)
}

/// Writes `ddbx.1` and `ddbx-SUB.1` for each subcommand into `dir` (created if need be).
pub fn write_pages(cli: clap::Command, dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Usage(format!("--dir {}: cannot create it: {e}", dir.display())))?;
    clap_mangen::generate_to(cli, dir).map_err(|e| {
        Error::Usage(format!(
            "--dir {}: cannot write the pages: {e}",
            dir.display()
        ))
    })
}
