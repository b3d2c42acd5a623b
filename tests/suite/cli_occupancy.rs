//! `vyrescope occupancy` as a user runs it: calculator mode, JSON rows, the default device
//! notice, Program files through ptxas, and refusals with a Fix.

fn vy(args: &[&str], ptxas: Option<&str>) -> (i32, String, String) {
    let mut c = crate::support::cli::in_root();
    c.args(args);
    if let Some(p) = ptxas {
        c.env("VYRESCOPE_PTXAS", p);
    }
    crate::support::cli::output(&mut c)
}

#[test]
fn calculator_sweep_json_rows() {
    let (code, out, _) = vy(
        &[
            "occupancy",
            "--device",
            "h100-sxm",
            "--regs",
            "37",
            "--json",
        ],
        None,
    );
    assert_eq!(code, 0);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 32);
    let keys: Vec<&String> = rows[0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        vec![
            "active_warps_per_sm",
            "block_size",
            "blocks_per_sm",
            "limiter",
            "occupancy_pct"
        ]
    );
    let r128 = rows.iter().find(|r| r["block_size"] == 128).unwrap();
    assert_eq!(r128["blocks_per_sm"], 12);
    assert_eq!(r128["occupancy_pct"], 75.0);
    assert_eq!(r128["limiter"], "registers");
}

#[test]
fn calculator_one_block_explains() {
    let (code, out, _) = vy(
        &[
            "occupancy",
            "--device",
            "a100",
            "--regs",
            "32",
            "--dynamic-smem",
            "49152",
            "--block",
            "128",
        ],
        None,
    );
    assert_eq!(code, 0);
    assert!(out.contains("3 blocks/SM"), "{out}");
    assert!(out.contains("limited by shared_memory"), "{out}");
    assert!(out.contains("more bytes per block would"), "{out}");
    let (code, out, _) = vy(
        &[
            "occupancy",
            "--device",
            "a100",
            "--regs",
            "32",
            "--block",
            "128",
            "--dynamic-smem",
            "200000",
            "--json",
        ],
        None,
    );
    // The exit code says the launch cannot run, as in text mode; the JSON still explains.
    assert_eq!(code, 1, "a launch that cannot run exits 1 with --json too");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["blocks_per_sm"], 0);
    assert!(v["launchable"].as_str().unwrap().contains("Fix:"));
}

#[test]
fn default_device_is_said_and_bad_input_refused() {
    let (code, out, _) = vy(&["occupancy", "--regs", "32"], None);
    assert_eq!(code, 0);
    assert!(out.contains("bundled profile `h200`"), "{out}");
    // A bundled profile is not a probed device (issue 36: "(probed)" on a machine without
    // a GPU).
    assert!(!out.contains("probed"), "{out}");
    let (_, out, _) = vy(&["occupancy", "--regs", "32", "--device", "sm86"], None);
    assert!(out.contains("bundled profile `sm86`"), "{out}");
    let (code, _, err) = vy(&["occupancy", "--device", "gtx480", "--regs", "32"], None);
    assert_eq!(code, 1);
    assert!(err.contains("h100-sxm") && err.contains("Fix:"), "{err}");
    let (code, _, err) = vy(&["occupancy", "--device", "h200"], None);
    assert_eq!(code, 1);
    assert!(err.contains("--regs"), "{err}");
}

#[test]
fn program_file_without_ptxas_estimates_registers() {
    // Offline: the registers come from the PTX estimate, labelled so, with how to get exact
    // figures; text and JSON agree.
    let args = [
        "occupancy",
        "fixtures/programs/math_f32.json",
        "--device",
        "h100-sxm",
    ];
    let (code, out, err) = vy(&args, Some("/nonexistent/ptxas"));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("estimated, ptxas not found"), "{out}");
    assert!(out.contains("scripts/install-ptxas.sh"), "{out}");
    let (code, out, _) = vy(
        &[&args[..], &["--json"]].concat(),
        Some("/nonexistent/ptxas"),
    );
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["resources_estimated"], true);
    let regs = v["resources"]["regs_per_thread"].as_u64().unwrap();
    let ptx = vyrescope::emit::emit(
        &vyrescope::ir::load_program(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/programs/math_f32.json"
        )))
        .unwrap(),
        &vyrescope::emit::EmitOptions {
            sm: 90,
            workgroup_size: [256, 1, 1],
            lineinfo: false,
            unroll: true,
            grid_barrier: Default::default(),
            version_bounds: false,
        },
    )
    .unwrap()
    .ptx;
    assert_eq!(
        regs,
        u64::from(vyrescope::emit::reg_estimate::estimate_registers(&ptx))
    );
    assert!((16..=255).contains(&regs), "{regs}");
    // --regs overrides the estimate (and ptxas): 200 registers cap the blocks per SM.
    let (code, out, _) = vy(
        &[&args[..], &["--regs", "200", "--json"]].concat(),
        Some("/nonexistent/ptxas"),
    );
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["resources"]["regs_per_thread"], 200);
    assert_eq!(v["resources_estimated"], false);
    assert!(v["resources_source"]
        .as_str()
        .unwrap()
        .starts_with("--regs 200"));
    assert!(
        v["estimate"]["occupancy_pct"].as_f64().unwrap() < 50.0,
        "{v}"
    );
}

#[test]
fn program_file_through_ptxas() {
    let Some(bin) = crate::support::tools::ptxas("the Program-file occupancy check") else {
        return;
    };
    let bin = bin.to_string_lossy().into_owned();
    let (code, out, err) = vy(
        &[
            "occupancy",
            "fixtures/programs/vadd_f32.json",
            "--device",
            "a100",
            "--json",
        ],
        Some(&bin),
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["resources_source"]
        .as_str()
        .unwrap()
        .starts_with("ptxas -v for sm_80"));
    let regs = v["resources"]["regs_per_thread"].as_u64().unwrap();
    assert!((8..=64).contains(&regs), "{regs}");
    assert_eq!(v["workgroup"], serde_json::json!([256, 1, 1]));
    assert_eq!(v["estimate"]["block_size"], 256);
    assert_eq!(v["sweep"].as_array().unwrap().len(), 32);
    // A workgroup override is emitted and estimated at that size.
    let (code, out, _) = vy(
        &[
            "occupancy",
            "fixtures/programs/vadd_f32.json",
            "--workgroup",
            "64,1,1",
        ],
        Some(&bin),
    );
    assert_eq!(code, 0);
    assert!(out.contains("workgroup 64x1x1"), "{out}");
    assert!(out.contains("block 64:"), "{out}");
}
