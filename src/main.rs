fn main() {
    // Die quietly on a closed pipe (`mapfilter info x.tif | head`) like other
    // Unix tools, instead of panicking inside println!.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE at start-up, before any thread runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(mapfilter::cli::main());
}
