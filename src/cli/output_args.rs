//! The `--overwrite` flag shared by every command that writes files.

use clap::Args;

#[derive(Args, Debug, Clone, Copy, Default)]
pub struct OverwriteArg {
    /// Replace output files that exist. Without it an existing output is
    /// refused before any work is done; with it, the old file is replaced
    /// only once the new one is complete.
    #[arg(long)]
    pub overwrite: bool,
}
