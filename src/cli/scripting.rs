//! `mapfilter completions SHELL` and `mapfilter man`: shell completion
//! scripts and a man page generated from the clap definitions, so they
//! never disagree with `--help`.

use crate::error::{Error, Result};
use clap::{Args, CommandFactory};
use std::io::Write;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. Install e.g. with
    /// `mapfilter completions bash > ~/.local/share/bash-completion/completions/mapfilter`.
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Also write one page per subcommand (mapfilter-smooth.1, …) into DIR,
    /// beside mapfilter.1, instead of printing mapfilter(1) on stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub overwrite: super::output_args::OverwriteArg,
}

pub fn completions(args: CompletionsArgs) -> Result<()> {
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "mapfilter", &mut out);
    write_stdout(&out)
}

pub fn man(args: ManArgs) -> Result<()> {
    let cmd = super::Cli::command();
    let Some(dir) = args.dir else {
        return write_stdout(&render(&cmd, "mapfilter")?);
    };
    let mut pages = vec![("mapfilter.1".to_string(), render(&cmd, "mapfilter")?)];
    for sub in cmd.get_subcommands() {
        let name = format!("mapfilter-{}", sub.get_name());
        let sub = sub
            .clone()
            .bin_name(format!("mapfilter {}", sub.get_name()));
        pages.push((format!("{name}.1"), render(&sub, &name)?));
    }
    // Every target checked before any page is written.
    let mut targets = Vec::new();
    for (name, _) in &pages {
        targets.push(crate::output::Destination::check(
            &dir.join(name),
            args.overwrite.overwrite,
            &[],
        )?);
    }
    for ((_, page), target) in pages.iter().zip(&targets) {
        crate::output::text::write(target, &String::from_utf8_lossy(page))?;
    }
    eprintln!("wrote {} man pages in {}", pages.len(), dir.display());
    Ok(())
}

fn render(cmd: &clap::Command, title: &str) -> Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .title(title.to_string())
        .render(&mut page)
        .map_err(|e| Error::internal(format!("cannot render the man page: {e}")))?;
    Ok(page)
}

pub(super) fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| Error::io(format!("cannot write to standard output: {e}")))
}
