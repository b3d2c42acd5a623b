//! Writes the `selftest --fuzz` Program of each seed given as an argument to `DIR/fuzz_<seed>.json`
//! (first argument DIR), so a GPU finding can be reproduced on the CPU:
//! `cargo run --example fuzz_case -- /tmp/cases 15 22 74`.
fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("usage: fuzz_case DIR SEED..."));
    for s in args {
        let seed: u64 = s.parse().expect("a seed is a decimal u64");
        let p = vyrescope::harness::fuzz::fuzz_program(seed);
        let path = vyrescope::harness::fuzz::write_case(&dir, seed, &p).expect("write");
        println!("{}", path.display());
    }
}
