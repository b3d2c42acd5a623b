//! A large `data` array: a Program whose `run.inputs.a.data` held 50 M numbers aborted `check`
//! with "memory allocation of 1600000000 bytes failed" (32 bytes per parsed element, about 47
//! in all). Parsing now holds each element compactly (2 bytes for a small integer), so the
//! array parses and checks in an address space a few times the file's size.

use crate::support::cli;
use vyrescope::ir::{parse_program, InputSource};

/// A Program whose input `a` (u16) holds `n` random digits as `data`.
fn program_text(n: usize, seed: u64) -> String {
    let mut s = seed;
    let mut data = String::with_capacity(2 * n);
    for i in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        if i > 0 {
            data.push(',');
        }
        data.push(char::from(b'0' + (s % 10) as u8));
    }
    format!(
        r#"{{"format": 1, "name": "big", "workgroup_size": [256, 1, 1],
  "buffers": [{{"name": "a", "binding": 0, "access": "read", "type": "u16"}},
              {{"name": "c", "binding": 1, "access": "read_write", "type": "u16"}}],
  "body": [{{"let": "i", "value": {{"gid": "x"}}}},
           {{"if": {{"lt": ["i", {{"len": "c"}}]}}, "then": [
             {{"store": "c", "index": "i", "value": {{"load": "a", "index": "i"}}}}]}}],
  "run": {{"inputs": {{"a": {{"data": [{data}]}}, "c": {{"fill": "zeros", "len": {n}}}}}}}}}"#
    )
}

#[test]
fn a_data_array_takes_about_two_bytes_per_small_integer() {
    let n = 1_000_000;
    let p = parse_program(&program_text(n, 0x1234_5678), "big.json").expect("parses");
    let run = p.run.expect("run");
    let InputSource::Data(d) = &run.inputs[0].1.source else {
        panic!("not data");
    };
    assert_eq!(d.len(), n);
    // Before: a Vec<Literal> of 32 bytes per element.
    assert!(d.encoded_bytes() <= 2 * n, "{} bytes", d.encoded_bytes());
}

/// 20 M elements (a 40 MB file) under a 700 MiB address-space limit: before, the parsed
/// elements alone took 640 MB (and 1 GB while the vector grew) and the process aborted.
#[test]
fn check_of_a_twenty_million_element_data_array_fits_a_small_address_space() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.json");
    let n = 20_000_000;
    std::fs::write(&file, program_text(n, 0x9e37_79b9)).unwrap();
    let mut cmd = cli::command();
    cmd.current_dir(dir.path())
        .env("HOME", dir.path())
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        // Few threads and malloc arenas: the limit measures the data, not the machine's cores.
        .env("RAYON_NUM_THREADS", "2")
        .env("MALLOC_ARENA_MAX", "2")
        .args(["check", "big.json"]);
    vyrescope::util::os::tool_child(&mut cmd, 700 << 20);
    let (code, out, err) = cli::output(&mut cmd);
    assert!(!err.contains("memory allocation"), "{err}");
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
}

/// Whatever the memory, `check` ends with its result or an error naming the place with a
/// `Fix:`: never the allocator's abort. The limits step from one the file barely fits to
/// one the whole check fits; each fails (if at all) somewhere else in the parse.
#[test]
fn running_out_of_memory_while_parsing_data_is_an_error_with_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.json");
    std::fs::write(&file, program_text(10_000_000, 0x0dd_ba11)).unwrap();
    for mib in [48u64, 64, 80, 96, 128, 192] {
        let mut cmd = cli::command();
        cmd.current_dir(dir.path())
            .env("HOME", dir.path())
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env("RAYON_NUM_THREADS", "2")
            .env("MALLOC_ARENA_MAX", "2")
            .args(["check", "big.json"]);
        vyrescope::util::os::tool_child(&mut cmd, mib << 20);
        let (code, out, err) = cli::output(&mut cmd);
        let all = format!("{out}{err}");
        assert!(!all.contains("memory allocation of"), "{mib} MiB: {all}");
        match code {
            0 => assert!(out.contains("big.json: ok"), "{mib} MiB: {all}"),
            1 => assert!(
                all.contains("Fix:") && all.contains("big.json"),
                "{mib} MiB: {all}"
            ),
            _ => panic!("{mib} MiB: exit {code}: {all}"),
        }
    }
}
