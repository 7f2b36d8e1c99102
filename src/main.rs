fn main() {
    std::process::exit(mapfilter::cli::main());
}
