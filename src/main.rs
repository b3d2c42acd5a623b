fn main() {
    std::process::exit(vyrescope::cli::main());
}
