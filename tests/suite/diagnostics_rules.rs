//! Launch and performance diagnostics: one test per rule, each on a small Program written
//! for it, with the expected figures worked out in the comments.

use vyrescope::diagnostics::launch::{launch_diagnostics, workgroup_bytes};
use vyrescope::diagnostics::perf::perf_diagnostics;
use vyrescope::diagnostics::{Diagnostic, Severity};
use vyrescope::inputs::LaunchShape;
use vyrescope::ir::{parse_program, Program};
use vyrescope::occupancy::{estimate, profiles, DeviceCaps, KernelResources};
use vyrescope::validate::{prove, ProgramInfo};

fn h200() -> DeviceCaps {
    profiles::load("h200").unwrap()
}

fn program(buffers: &str, body: &str) -> Program {
    let text = format!(
        r#"{{"format":1,"name":"k","workgroup_size":[256,1,1],"buffers":[{buffers}],"body":[{body}]}}"#
    );
    parse_program(&text, "k.json").unwrap()
}

/// The validator's facts about `p`, which the launch rules take.
fn valid(p: &Program) -> ProgramInfo {
    prove(p).unwrap_or_else(|e| panic!("{e}"))
}

/// c[i] = a[i] guarded, the usual elementwise shape.
fn elementwise() -> Program {
    program(
        r#"{"name":"a","binding":0,"access":"read","type":"f32"},
           {"name":"c","binding":1,"access":"read_write","type":"f32"}"#,
        r#"{"let":"i","value":{"gid":"x"}},
           {"if":{"lt":["i",{"len":"c"}]},"then":[{"store":"c","index":"i","value":{"load":"a","index":"i"}}]}"#,
    )
}

fn res(regs: u32) -> KernelResources {
    KernelResources {
        regs_per_thread: regs,
        ..KernelResources::default()
    }
}

fn codes(d: &[Diagnostic]) -> Vec<&'static str> {
    d.iter().map(|d| d.code).collect()
}

fn one<'a>(d: &'a [Diagnostic], code: &str) -> &'a Diagnostic {
    let v: Vec<_> = d.iter().filter(|x| x.code == code).collect();
    assert_eq!(v.len(), 1, "expected one {code} in {d:#?}");
    v[0]
}

#[test]
fn clean_launch_has_no_diagnostics() {
    let d = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        Some(&res(16)),
        [256, 1, 1],
        [4096, 1, 1],
        &[("a", 1 << 20), ("c", 1 << 20)],
    );
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn every_launch_failure_is_collected() {
    // Block z = 128 > 64, block 8*8*128 = 8192 threads > 1024, grid y = 70000 > 65535,
    // grid z = 0: four rules at once, all errors with fixes.
    let d = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        None,
        [8, 8, 128],
        [1, 70000, 0],
        &[],
    );
    assert_eq!(codes(&d), vec!["L001", "L002", "L005", "L005"]);
    assert!(d
        .iter()
        .all(|x| x.severity == Severity::Error && !x.fix.is_empty()));
    assert!(d[0].message.contains("z = 128") && d[0].message.contains("64"));
    let d = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        None,
        [0, 1, 1],
        [1, 1, 1],
        &[],
    );
    assert_eq!(codes(&d), vec!["L001"]);
}

#[test]
fn register_limited_block_size() {
    // 128 regs: 4096 per warp; 1024 threads = 32 warps need 131072 > 65536; the largest
    // block that fits is 16 warps = 512 threads.
    let d = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        Some(&res(128)),
        [1024, 1, 1],
        [64, 1, 1],
        &[],
    );
    let l3 = one(&d, "L003");
    assert!(l3.message.contains("limit of 512"), "{}", l3.message);
    assert!(l3.fix.contains("512"));
}

#[test]
fn shared_memory_default_and_opt_in_limits() {
    // 13000 f32 = 52000 B of static shared memory: over the 48 KiB static limit.
    let p = program(
        r#"{"name":"t","access":"workgroup","type":"f32","count":13000}"#,
        r#"{"store":"t","index":{"lid":"x"},"value":1.0}"#,
    );
    assert_eq!(workgroup_bytes(&p), 52000);
    // The validator refuses it (V008), so the launch rules see such a footprint only as a
    // compiled kernel's static shared memory.
    assert!(prove(&p).is_err());
    let smem = |bytes: u64| KernelResources {
        static_smem_bytes: bytes as u32,
        ..res(32)
    };
    let ok = valid(&elementwise());
    let d = launch_diagnostics(
        &ok,
        &h200(),
        Some(&smem(52000)),
        [256, 1, 1],
        [1, 1, 1],
        &[],
    );
    assert!(one(&d, "L004").message.contains("49152"));
    // 60000 f32 = 240000 B: over the 232448 B opt-in maximum too.
    let p = program(
        r#"{"name":"t","access":"workgroup","type":"f32","count":60000}"#,
        r#"{"store":"t","index":{"lid":"x"},"value":1.0}"#,
    );
    let bytes = workgroup_bytes(&p);
    let d = launch_diagnostics(
        &ok,
        &h200(),
        Some(&smem(bytes)),
        [256, 1, 1],
        [1, 1, 1],
        &[],
    );
    assert!(one(&d, "L004").message.contains("232448"));
    // Mixed element sizes are laid out with alignment: 3 u8 then an f64 at offset 8.
    let p = program(
        r#"{"name":"b","access":"workgroup","type":"u8","count":3},
           {"name":"d","access":"workgroup","type":"f64","count":2}"#,
        r#"{"store":"d","index":0,"value":1.0}"#,
    );
    assert_eq!(workgroup_bytes(&p), 24);
}

#[test]
fn invocation_id_overflow() {
    // 2^31 - 1 workgroups of 4 threads = 8589934588 invocations along x > 2^32.
    let d = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        None,
        [4, 1, 1],
        [2147483647, 1, 1],
        &[],
    );
    assert_eq!(codes(&d), vec!["L006"]);
    // Exactly 2^32 invocations is fine (the last gid is 2^32 - 1).
    let d = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        None,
        [256, 1, 1],
        [16777216, 1, 1],
        &[],
    );
    assert!(!codes(&d).contains(&"L006"));
}

fn grid_barrier() -> Program {
    program(
        r#"{"name":"c","binding":0,"access":"read_write","type":"u32"}"#,
        r#"{"let":"i","value":{"gid":"x"}},
           {"store":"c","index":"i","value":1},
           {"barrier":"grid"},
           {"store":"c","index":"i","value":2}"#,
    )
}

#[test]
fn cooperative_co_residency_with_largest_grid() {
    // 64 regs, 256 threads: 2048 regs/warp -> 8 warps per sub-partition -> 32 warps -> 4
    // blocks/SM; x 132 SMs = 528 co-resident workgroups at most.
    let caps = h200();
    assert_eq!(estimate(&caps, &res(64), 256, 0).blocks_per_sm, 4);
    let lens = [("c", 600 * 256)];
    let d = launch_diagnostics(
        &valid(&grid_barrier()),
        &caps,
        Some(&res(64)),
        [256, 1, 1],
        [600, 1, 1],
        &lens,
    );
    let l7 = one(&d, "L007");
    assert!(l7.message.contains("only 528 fit"), "{}", l7.message);
    assert!(l7.fix.contains("grid [528, 1, 1]"), "{}", l7.fix);
    assert!(l7.fix.contains("register"), "{}", l7.fix);
    let lens = [("c", 528 * 256)];
    let d = launch_diagnostics(
        &valid(&grid_barrier()),
        &caps,
        Some(&res(64)),
        [256, 1, 1],
        [528, 1, 1],
        &lens,
    );
    assert!(d.is_empty(), "{d:#?}");
    // Without cooperative launch support the Program cannot run at all.
    let mut no_coop = caps.clone();
    no_coop.cooperative_launch = false;
    let d = launch_diagnostics(
        &valid(&grid_barrier()),
        &no_coop,
        None,
        [256, 1, 1],
        [1, 1, 1],
        &[("c", 256)],
    );
    assert_eq!(codes(&d), vec!["L010"]);
}

#[test]
fn buffer_coverage_and_overshoot() {
    // 1000 elements need 4 workgroups of 256. 3 workgroups leave 768..1000 unwritten.
    let lens = [("a", 1000), ("c", 1000)];
    let d = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        None,
        [256, 1, 1],
        [3, 1, 1],
        &lens,
    );
    let l8 = one(&d, "L008");
    assert!(l8.message.contains("768..1000"), "{}", l8.message);
    assert_eq!(l8.node.as_deref(), Some("body[1].then[0]"));
    assert!(l8.fix.contains("launch 4 workgroups"));
    // 10 workgroups: 6 do nothing.
    let d = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        None,
        [256, 1, 1],
        [10, 1, 1],
        &lens,
    );
    assert!(one(&d, "L009")
        .message
        .starts_with("6 of the 10 workgroups"));
    // Exactly 4: clean. A buffer longer than u32 indices reach is an error.
    let d = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        None,
        [256, 1, 1],
        [4, 1, 1],
        &lens,
    );
    assert!(d.is_empty(), "{d:#?}");
    let d = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        None,
        [256, 1, 1],
        [4, 1, 1],
        &[("c", (1 << 32) + 1)],
    );
    assert!(codes(&d).contains(&"L011"));
    // Strided writes c[2i], c[2i+1]: 1000 elements need 500 invocations = 2 workgroups.
    let p = program(
        r#"{"name":"c","binding":0,"access":"write","type":"f32"}"#,
        r#"{"let":"i","value":{"mul":[{"gid":"x"},2]}},
           {"store":"c","index":"i","value":1.0},
           {"store":"c","index":{"add":["i",1]},"value":2.0}"#,
    );
    let d = launch_diagnostics(
        &valid(&p),
        &h200(),
        None,
        [256, 1, 1],
        [2, 1, 1],
        &[("c", 1000)],
    );
    assert!(d.is_empty(), "{d:#?}");
    let d = launch_diagnostics(
        &valid(&p),
        &h200(),
        None,
        [256, 1, 1],
        [1, 1, 1],
        &[("c", 1000)],
    );
    assert!(one(&d, "L008").message.contains("512..1000"));
}

fn shape(wg: u32, grid: u32) -> LaunchShape {
    LaunchShape {
        workgroup_size: [wg, 1, 1],
        grid: [grid, 1, 1],
    }
}

#[test]
fn spills_and_low_occupancy() {
    let caps = h200();
    let r = KernelResources {
        regs_per_thread: 255,
        local_bytes: 64,
        ..KernelResources::default()
    };
    let d = perf_diagnostics(&elementwise(), &caps, Some(&r), None, &shape(256, 1320));
    assert!(one(&d, "P001").message.contains("64 B of local memory"));
    // 255 regs, 256 threads: 8192 regs/warp -> 8 warps/SM = 12.5%, limited by registers.
    let p2 = one(&d, "P002");
    assert!(
        p2.message.contains("12.5%") && p2.message.contains("registers"),
        "{}",
        p2.message
    );
    // 32-thread blocks at 16 regs: 32 block slots x 1 warp = 50%: not below 50%.
    let d = perf_diagnostics(
        &elementwise(),
        &caps,
        Some(&res(16)),
        None,
        &shape(32, 4224),
    );
    assert!(!codes(&d).contains(&"P002"), "{d:#?}");
}

#[test]
fn small_grids_and_tail_waves() {
    let caps = h200();
    // 100 workgroups on 132 SMs.
    let d = perf_diagnostics(
        &elementwise(),
        &caps,
        Some(&res(16)),
        None,
        &shape(256, 100),
    );
    assert!(one(&d, "P003").message.contains("32 SMs stay idle"));
    // 8 blocks/SM x 132 = 1056 per wave; 1100 workgroups = 1.04 waves: the second wave runs
    // 44 and leaves 95.8% idle, (1 - 44/1056) / 2 = 47.9% of the run.
    let d = perf_diagnostics(
        &elementwise(),
        &caps,
        Some(&res(16)),
        None,
        &shape(256, 1100),
    );
    let p4 = one(&d, "P004");
    assert!(
        p4.message.contains("about 48% of the run"),
        "{}",
        p4.message
    );
    assert!(p4.fix.contains("1056 or 2112"));
    // 10 waves + 44: (1012/1056)/11 = 8.7% < 20%: quiet. Exact waves: quiet.
    for g in [10 * 1056 + 44, 2112] {
        let d = perf_diagnostics(&elementwise(), &caps, Some(&res(16)), None, &shape(256, g));
        assert!(!codes(&d).contains(&"P004"), "{g}: {d:#?}");
    }
}

#[test]
fn block_not_multiple_of_32() {
    let d = perf_diagnostics(&elementwise(), &h200(), None, None, &shape(100, 1000));
    let p5 = one(&d, "P005");
    assert!(p5.message.contains("runs 4 of 32 lanes"), "{}", p5.message);
    assert!(p5.fix.contains("128"));
}

#[test]
fn uncoalesced_global_access() {
    // Array of structures: c[3*i], c[3*i+1], c[3*i+2]: stride 3, 12 sectors for 4.
    let p = program(
        r#"{"name":"c","binding":0,"access":"write","type":"f32"}"#,
        r#"{"let":"i","value":{"mul":[{"gid":"x"},3]}},
           {"store":"c","index":"i","value":1.0},
           {"store":"c","index":{"add":["i",1]},"value":2.0},
           {"store":"c","index":{"add":["i",2]},"value":3.0}"#,
    );
    let d = perf_diagnostics(&p, &h200(), None, None, &shape(256, 1000));
    let p6 = one(&d, "P006");
    assert_eq!(p6.node.as_deref(), Some("body[1]"));
    assert!(
        p6.message.contains("3 elements apart")
            && p6.message.contains("12 32-byte sectors where 4"),
        "{}",
        p6.message
    );
    assert!(p6.message.contains("also at body[2], body[3]"));
    // Unit stride through a shift-free chain of lets, and a broadcast: quiet.
    let d = perf_diagnostics(&elementwise(), &h200(), None, None, &shape(256, 1000));
    assert!(d.is_empty(), "{d:#?}");
    // Row-major 2-D access in a 16x16 workgroup, row length read at run time: each half
    // warp reads 16 consecutive floats of its row = 2 sectors, 4 per warp: coalesced.
    let p = program(
        r#"{"name":"m","binding":0,"access":"read","type":"f32"},
           {"name":"n","binding":1,"access":"uniform","type":"u32"},
           {"name":"o","binding":2,"access":"write","type":"f32"}"#,
        r#"{"let":"w","value":{"load":"n","index":0}},
           {"let":"v","value":{"load":"m","index":{"add":[{"mul":[{"gid":"y"},"w"]},{"gid":"x"}]}}},
           {"store":"o","index":{"add":[{"mul":[{"gid":"x"},"w"]},{"gid":"y"}]},"value":"v"}"#,
    );
    let s = LaunchShape {
        workgroup_size: [16, 16, 1],
        grid: [64, 64, 1],
    };
    let d = perf_diagnostics(&p, &h200(), None, None, &s);
    // The transposed store steps by the run-time row length along x: reported as info.
    assert_eq!(codes(&d), vec!["P008"], "{d:#?}");
    assert_eq!(d[0].node.as_deref(), Some("body[2]"));
    // Data-dependent gather.
    let p = program(
        r#"{"name":"idx","binding":0,"access":"read","type":"u32"},
           {"name":"a","binding":1,"access":"read","type":"f32"},
           {"name":"c","binding":2,"access":"write","type":"f32"}"#,
        r#"{"let":"i","value":{"gid":"x"}},
           {"store":"c","index":"i","value":{"load":"a","index":{"load":"idx","index":"i"}}}"#,
    );
    let d = perf_diagnostics(&p, &h200(), None, None, &shape(256, 1000));
    assert_eq!(codes(&d), vec!["P008"]);
    assert_eq!(d[0].severity, Severity::Info);
}

#[test]
fn workgroup_bank_conflicts() {
    // t[lid.x * 32]: every thread of a warp in bank 0 -> 32-way; t[lid.x * 33]: conflict-free;
    // t[lid.x * 2]: 2-way.
    let make = |stride: u32| {
        program(
            r#"{"name":"t","access":"workgroup","type":"f32","count":8448}"#,
            &format!(r#"{{"store":"t","index":{{"mul":[{{"lid":"x"}},{stride}]}},"value":1.0}}"#),
        )
    };
    let d = perf_diagnostics(&make(32), &h200(), None, None, &shape(256, 1000));
    let p7 = one(&d, "P007");
    assert!(p7.message.contains("32-way"), "{}", p7.message);
    assert!(p7.fix.contains("pad"));
    let d = perf_diagnostics(&make(2), &h200(), None, None, &shape(256, 1000));
    assert!(one(&d, "P007").message.contains("2-way"));
    let d = perf_diagnostics(&make(33), &h200(), None, None, &shape(256, 1000));
    assert!(d.is_empty(), "{d:#?}");
    // Column access in a 2-D tile t[lid.x * 16 + lid.y] with a 16x16 workgroup: a warp holds
    // lid.x 0..16 for lid.y 0 and 1; word 16*x + y lands in bank y (x even) or 16 + y (x odd):
    // 32 threads on 4 banks, 8-way.
    let p = program(
        r#"{"name":"t","access":"workgroup","type":"f32","count":256}"#,
        r#"{"store":"t","index":{"add":[{"mul":[{"lid":"x"},16]},{"lid":"y"}]},"value":1.0}"#,
    );
    let s = LaunchShape {
        workgroup_size: [16, 16, 1],
        grid: [200, 1, 1],
    };
    let d = perf_diagnostics(&p, &h200(), None, None, &s);
    assert!(one(&d, "P007").message.contains("8-way"), "{d:#?}");
}

#[test]
fn invalid_launch_shapes_get_one_quick_error_and_no_analysis() {
    // Regression (issue 13 item 2): a workgroup of 1024x1024x64 froze the inspector for 24 s
    // at 1 GB, and 4294967295 threads reached 3 GB, because every thread was walked.
    let p = program(
        r#"{"name":"a","binding":0,"access":"read","type":"f32"},
           {"name":"t","access":"workgroup","type":"f32","count":64},
           {"name":"c","binding":1,"access":"read_write","type":"f32"}"#,
        r#"{"let":"i","value":{"gid":"x"}},
           {"store":"t","index":{"mul":[{"lid":"x"},2]},"value":{"load":"a","index":{"mul":["i",3]}}},
           {"store":"c","index":{"add":[{"mul":[{"gid":"y"},7]},{"gid":"z"}]},"value":1.0}"#,
    );
    for wg in [[1024, 1024, 64], [u32::MAX, 1, 1], [0, 1, 1], [1024, 2, 1]] {
        let shape = LaunchShape {
            workgroup_size: wg,
            grid: [1, 1, 1],
        };
        let t = std::time::Instant::now();
        let d = perf_diagnostics(&p, &h200(), Some(&res(32)), None, &shape);
        assert!(
            t.elapsed().as_millis() < 500,
            "{wg:?} took {:?}",
            t.elapsed()
        );
        assert_eq!(codes(&d), ["P000"], "{wg:?}: {d:?}");
        assert_eq!(d[0].severity, Severity::Error);
        assert!(!d[0].fix.is_empty());
    }
    let big_grid = LaunchShape {
        workgroup_size: [256, 1, 1],
        grid: [1, 65536, 1],
    };
    assert_eq!(
        codes(&perf_diagnostics(&p, &h200(), None, None, &big_grid)),
        ["P000"]
    );
}

#[test]
fn warp_analysis_samples_a_bounded_number_of_warps() {
    use vyrescope::analysis::affine::{accesses, MAX_SAMPLED_WARPS};
    // Strided index 3*gid.x: every warp has the same pattern, so sampling loses nothing.
    let p = program(
        r#"{"name":"a","binding":0,"access":"read","type":"f32"}"#,
        r#"{"let":"x","value":{"load":"a","index":{"mul":[{"gid":"x"},3]}}}"#,
    );
    let acc = accesses(&p);
    let index = &acc[0].index;
    let t = std::time::Instant::now();
    let huge = index.warp_segments([u32::MAX, u32::MAX, 64]).unwrap();
    assert!(t.elapsed().as_millis() < 500, "took {:?}", t.elapsed());
    assert!(huge.len() as u64 <= MAX_SAMPLED_WARPS, "{}", huge.len());
    // A valid workgroup is examined whole: 1024 threads = 32 warps of 32 offsets.
    let full = index.warp_segments([1024, 1, 1]).unwrap();
    assert_eq!(full.len(), 32);
    assert_eq!(full[1], vec![(32..64).map(|t| 3 * t).collect::<Vec<i64>>()]);
}

/// L015: a Program whose barriers are uniform only at one workgroup (V064) on a larger grid.
#[test]
fn l013_one_workgroup_program_on_a_larger_grid() {
    let text = r#"{"format": 1, "name": "t", "workgroup_size": [64, 1, 1],
        "buffers": [{"name": "flag", "binding": 0, "access": "read_write", "type": "u32"}],
        "body": [{"loop": "k", "from": 0, "to": 8, "body": [
            {"if": {"eq": [{"lid": "x"}, 0]}, "then": [{"store": "flag", "index": 0, "value": 0}]},
            {"barrier": "workgroup"},
            {"if": {"lt": [{"lid": "x"}, "k"]}, "then": [{"store": "flag", "index": 0, "value": 1}]},
            {"barrier": "workgroup"},
            {"if": {"eq": [{"load": "flag", "index": 0}, 0]}, "then": [{"return": {}}]},
            {"barrier": "workgroup"}]}], "run": {"grid": [1, 1, 1]}}"#;
    let p = parse_program(text, "f.json").unwrap();
    let two = launch_diagnostics(
        &valid(&p),
        &h200(),
        None,
        [64, 1, 1],
        [2, 1, 1],
        &[("flag", 1)],
    );
    assert!(codes(&two).contains(&"L015"), "{two:#?}");
    let one = launch_diagnostics(
        &valid(&p),
        &h200(),
        None,
        [64, 1, 1],
        [1, 1, 1],
        &[("flag", 1)],
    );
    assert!(!codes(&one).contains(&"L015"), "{one:#?}");
    // A Program without the relaxation is not affected by the grid.
    let e = launch_diagnostics(
        &valid(&elementwise()),
        &h200(),
        None,
        [256, 1, 1],
        [8, 1, 1],
        &[("a", 2048), ("c", 2048)],
    );
    assert!(!codes(&e).contains(&"L015"), "{e:#?}");
}
