//! The occupancy model against hand-worked cases from NVIDIA's documentation (CUDA C++ Best
//! Practices Guide "Calculating Occupancy", Programming Guide "Compute Capabilities" limits,
//! the CUDA Occupancy Calculator's allocation rules), worked by hand in the comments.

use proptest::prelude::*;
use vyrescope::occupancy::{
    blocks_per_sm, estimate, estimate_with, max_threads_for_regs, profiles, suggest_block_sizes,
    sweep_block_sizes, sweep_dynamic_smem, sweep_registers, DeviceCaps, DynamicSmemAttr,
    FuncConfig, KernelResources, Limiter, Unlaunchable,
};

fn dev(name: &str) -> DeviceCaps {
    profiles::load(name).unwrap()
}

/// A Tesla V100 (compute capability 7.0), the device of the Best Practices Guide example.
fn v100() -> DeviceCaps {
    DeviceCaps {
        name: "Tesla V100-SXM2-16GB".into(),
        cc_major: 7,
        cc_minor: 0,
        sm_count: 80,
        max_threads_per_block: 1024,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        regs_per_block: 65536,
        smem_per_block: 49152,
        smem_per_sm: 98304,
        smem_per_block_optin: 98304,
        smem_reserved_per_block: 0,
        warp_size: 32,
        max_block_dim: [1024, 1024, 64],
        max_grid_dim: [2147483647, 65535, 65535],
        l2_bytes: 6 << 20,
        clock_khz: 1530000,
        mem_clock_khz: 877000,
        bus_width_bits: 4096,
        cooperative_launch: true,
        total_mem_bytes: 16 << 30,
        driver_version: 0,
        source: "from tables".into(),
        provenance: "test".into(),
    }
}

fn res(regs: u32, static_smem: u32) -> KernelResources {
    KernelResources {
        regs_per_thread: regs,
        static_smem_bytes: static_smem,
        ..KernelResources::default()
    }
}

#[test]
fn best_practices_guide_37_registers() {
    // Best Practices Guide: "on a device of compute capability 7.0, a kernel with 128-thread
    // blocks using 37 registers per thread results in an occupancy of 75% with 12 active
    // 128-thread blocks per multiprocessor, whereas a kernel with 320-thread blocks using the
    // same 37 registers per thread results in an occupancy of 63% because only four 320-thread
    // blocks can reside on a multiprocessor."
    // By hand: 37*32 = 1184 -> 1280 regs/warp; 16384 regs per sub-partition / 1280 = 12 warps,
    // x4 = 48 warps/SM; 48/4 = 12 blocks (75%), 48/10 = 4 blocks (40 warps, 62.5%).
    // sm_80 and sm_90 have the same register file and warp slots, so the same answer.
    for caps in [v100(), dev("a100"), dev("h100-sxm"), dev("h200")] {
        let e = estimate(&caps, &res(37, 0), 128, 0);
        assert_eq!(e.blocks_per_sm, 12, "{}", caps.name);
        assert_eq!(e.occupancy_pct, 75.0);
        assert_eq!(e.limiter, Limiter::Registers);
        assert_eq!(e.regs_per_warp, 1280);
        let e = estimate(&caps, &res(37, 0), 320, 0);
        assert_eq!(e.blocks_per_sm, 4);
        assert_eq!(e.active_warps_per_sm, 40);
        assert_eq!(e.occupancy_pct, 62.5);
        assert_eq!(e.limiter, Limiter::Registers);
    }
}

#[test]
fn registers_split_across_four_sub_partitions() {
    // 40 regs: 1280 regs/warp. Per sub-partition 16384/1280 = 12.8 -> 12 warps, 48 per SM (a
    // flat 65536/1280 would say 51). 96-thread blocks (3 warps): 48/3 = 16 blocks, 75%.
    let e = estimate(&dev("h100-sxm"), &res(40, 0), 96, 0);
    assert_eq!(e.limits.registers, Some(16));
    assert_eq!(e.blocks_per_sm, 16);
    assert_eq!(e.occupancy_pct, 75.0);
}

#[test]
fn hardware_register_check_rounds_warps_to_four() {
    // 80 regs: 2560/warp. 800 threads = 25 warps, rounded up to 28 for the hardware check:
    // 28*2560 = 71680 > 65536, so it cannot launch; 768 threads (24 warps) = 61440 fits.
    let caps = dev("a100");
    let e = estimate(&caps, &res(80, 0), 800, 0);
    assert_eq!(e.blocks_per_sm, 0);
    match &e.launchable {
        Err(Unlaunchable::RegistersPerBlock {
            needed, max_block, ..
        }) => {
            assert_eq!(*needed, 71680);
            assert_eq!(*max_block, 768);
        }
        other => panic!("{other:?}"),
    }
    assert!(e
        .launchable
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("Fix:"));
    assert_eq!(estimate(&caps, &res(80, 0), 768, 0).blocks_per_sm, 1);
    assert_eq!(max_threads_for_regs(&caps, 80), 768);
    // 255 regs: 8160 -> 8192/warp, 8 warps per block at most.
    assert_eq!(max_threads_for_regs(&caps, 255), 256);
    assert_eq!(max_threads_for_regs(&caps, 32), 1024);
    let e = estimate(&caps, &res(256, 0), 32, 0);
    assert!(matches!(
        e.launchable,
        Err(Unlaunchable::TooManyRegisters { .. })
    ));
}

#[test]
fn warp_and_block_slot_limits_per_architecture() {
    // 1024 threads at 32 regs on sm_90: 64/32 = 2 blocks by warps, and 1024 regs/warp -> 16
    // warps per sub-partition -> 64 warps -> 2 blocks by registers: a tie, 100%.
    let e = estimate(&dev("h200"), &res(32, 0), 1024, 0);
    assert_eq!(e.blocks_per_sm, 2);
    assert_eq!(e.limiters, vec![Limiter::Warps, Limiter::Registers]);
    assert_eq!(e.occupancy_pct, 100.0);
    // 32-thread blocks: 32 block slots on sm_90 -> 32 warps, 50%.
    let e = estimate(&dev("h200"), &res(16, 0), 32, 0);
    assert_eq!((e.blocks_per_sm, e.limiter), (32, Limiter::BlocksPerSm));
    assert_eq!(e.occupancy_pct, 50.0);
    // sm_86: 48 warp slots, 16 block slots: 1024 threads -> 1 block (66.7%); 64 threads -> 16.
    let e = estimate(&dev("sm86"), &res(16, 0), 1024, 0);
    assert_eq!(e.blocks_per_sm, 1);
    assert!((e.occupancy_pct - 200.0 / 3.0).abs() < 1e-9);
    assert_eq!(estimate(&dev("sm86"), &res(16, 0), 64, 0).blocks_per_sm, 16);
    // sm_89: 24 block slots: 64 threads -> 24 blocks = 48 warps = 100%.
    let e = estimate(&dev("sm89"), &res(16, 0), 64, 0);
    assert_eq!(e.blocks_per_sm, 24);
    assert_eq!(e.occupancy_pct, 100.0);
    // A partial warp takes a whole warp slot: 33 threads = 2 warps.
    assert_eq!(
        estimate(&dev("h200"), &res(16, 0), 1000, 0).warps_per_block,
        32
    );
    assert!(matches!(
        estimate(&dev("h200"), &res(16, 0), 1056, 0).launchable,
        Err(Unlaunchable::BlockTooLarge { max: 1024, .. })
    ));
}

#[test]
fn shared_memory_with_reserved_kilobyte_and_128_byte_unit() {
    // 48 KiB dynamic: 49152 + 1024 reserved = 50176 B per block (a multiple of 128).
    // A100: 167936 / 50176 = 3 blocks; H100/H200: 233472 / 50176 = 4 blocks.
    let r = res(32, 0);
    assert_eq!(estimate(&dev("a100"), &r, 128, 49152).blocks_per_sm, 3);
    let e = estimate(&dev("h200"), &r, 128, 49152);
    assert_eq!((e.blocks_per_sm, e.limiter), (4, Limiter::SharedMemory));
    assert_eq!(e.smem_per_block, 50176);
    // 64-thread blocks, 7000 B dynamic: 8024 -> 8064 B; 233472/8064 = 28 blocks (56 warps,
    // 87.5%) while warps, registers and block slots allow 32.
    let e = estimate(&dev("h200"), &r, 64, 7000);
    assert_eq!(e.smem_per_block, 8064);
    assert_eq!((e.blocks_per_sm, e.limiter), (28, Limiter::SharedMemory));
    assert_eq!(e.occupancy_pct, 87.5);
    // Static + dynamic + reserved, rounded: 1 B static -> 1152 B.
    assert_eq!(
        estimate(&dev("h200"), &res(32, 1), 64, 0).smem_per_block,
        1152
    );
}

#[test]
fn opt_in_shared_memory_limits() {
    // A100: 163 KiB per block with opt-in (166912 B); + 1 KiB reserved = the whole 164 KiB SM.
    let r = res(32, 0);
    assert_eq!(estimate(&dev("a100"), &r, 256, 166912).blocks_per_sm, 1);
    let e = estimate(&dev("a100"), &r, 256, 166913);
    assert_eq!(e.blocks_per_sm, 0);
    assert!(matches!(
        e.launchable,
        Err(Unlaunchable::SharedMemoryPerBlock { .. })
    ));
    // H200: 227 KiB per block.
    assert_eq!(estimate(&dev("h200"), &r, 256, 232448).blocks_per_sm, 1);
    assert_eq!(estimate(&dev("h200"), &r, 256, 232449).blocks_per_sm, 0);
    // Static memory counts against the same limit.
    assert_eq!(
        estimate(&dev("h200"), &res(32, 1000), 256, 231448).blocks_per_sm,
        1
    );
    assert_eq!(
        estimate(&dev("h200"), &res(32, 1000), 256, 231449).blocks_per_sm,
        0
    );
    // Without raising the max-dynamic attribute, more than 48 KiB - static is refused.
    let cfg = FuncConfig {
        max_dynamic_smem: DynamicSmemAttr::DriverDefault,
        carveout_pct: None,
    };
    let e = estimate_with(&dev("h200"), &r, 256, 49153, &cfg);
    assert!(matches!(
        e.launchable,
        Err(Unlaunchable::DynamicAboveAttribute { attr: 49152, .. })
    ));
    assert_eq!(
        estimate_with(&dev("h200"), &r, 256, 49152, &cfg).blocks_per_sm,
        4
    );
}

#[test]
fn carveout_preference_aligns_up_and_yields_to_one_block() {
    let caps = dev("h200");
    let r = res(32, 0);
    // No preference: the largest carveout (228 KiB).
    assert_eq!(estimate(&caps, &r, 128, 49152).smem_config_bytes, 233472);
    // 50%: 116736 B aligned up to the 132 KiB carveout: 135168 / 50176 = 2 blocks.
    let half = FuncConfig {
        carveout_pct: Some(50),
        ..FuncConfig::default()
    };
    let e = estimate_with(&caps, &r, 128, 49152, &half);
    assert_eq!((e.smem_config_bytes, e.blocks_per_sm), (135168, 2));
    // 0% ("max L1"): too small for one block, so the 64 KiB carveout that holds one: 1 block.
    let l1 = FuncConfig {
        carveout_pct: Some(0),
        ..FuncConfig::default()
    };
    let e = estimate_with(&caps, &r, 128, 49152, &l1);
    assert_eq!((e.smem_config_bytes, e.blocks_per_sm), (65536, 1));
}

#[test]
fn headroom_counts_registers_and_bytes_exactly() {
    // 37 regs, 128 threads (12 blocks): 41 regs -> 1536/warp -> 10 warps per partition ->
    // 10 blocks, so 4 more lose blocks; 32 regs -> 1024/warp -> 16 blocks, 5 fewer gain.
    let e = estimate(&dev("h200"), &res(37, 0), 128, 0);
    let h = e
        .headroom
        .iter()
        .find(|h| h.resource == Limiter::Registers)
        .unwrap();
    assert_eq!(h.to_lose_block, Some(4));
    assert_eq!((h.to_gain_block, h.gained_blocks), (Some(5), Some(16)));
    assert!(h.text.contains("4 more per thread (41)"), "{}", h.text);
    // 32 regs, 256 threads (8 blocks): 33 regs -> 1280/warp -> 48 warps -> 6 blocks.
    let e = estimate(&dev("h200"), &res(32, 0), 256, 0);
    let h = &e.headroom[0];
    assert!(
        h.text
            .contains("1 more per thread (33) would drop to 6 blocks per SM"),
        "{}",
        h.text
    );
    // 64 threads, 7000 B dynamic (8024 B used, 8064 allocated, 28 blocks): 28*8448 > 233472
    // first at 8448 B allocated, i.e. 8321 B used: 297 more bytes; 29 blocks need at most
    // 8050 -> 7936 B allocated: 88 fewer bytes.
    let e = estimate(&dev("h200"), &res(32, 0), 64, 7000);
    let h = e
        .headroom
        .iter()
        .find(|h| h.resource == Limiter::SharedMemory)
        .unwrap();
    assert_eq!(h.to_lose_block, Some(297));
    assert_eq!((h.to_gain_block, h.gained_blocks), (Some(88), Some(29)));
}

#[test]
fn sweeps_and_suggestion() {
    let caps = dev("h200");
    let rows = sweep_block_sizes(&caps, &res(32, 0), 0, &FuncConfig::default());
    assert_eq!(rows.len(), 32);
    assert!(rows.iter().all(|r| r.block_size % 32 == 0));
    let s = suggest_block_sizes(&rows, None, &mut |_| None).unwrap();
    // 32 regs: every block size that divides 2048 threads into <= 32 blocks reaches 100%.
    assert_eq!(s.tied, vec![64, 128, 256, 512, 1024]);
    assert_eq!((s.block_size, s.driver_pick), (128, 1024));
    assert!(s.explanation.contains("64, 128, 256, 512, 1024"));
    assert!(s.refused.is_empty());
    // A size the check refuses (it changes the Program's results) is never suggested: the
    // next one in the preferred order is, here the Program's own 256, accepted unasked.
    let mut asked = Vec::new();
    let s = suggest_block_sizes(&rows, Some(256), &mut |b| {
        asked.push(b);
        (b == 128).then(|| "changes results: out[3] 12.0 vs 9.5".to_string())
    })
    .unwrap();
    assert_eq!(asked, vec![128]);
    assert_eq!(s.block_size, 256);
    assert_eq!(s.refused.len(), 1);
    assert_eq!(s.refused[0].block_size, 128);
    assert!(s.refused[0].why.contains("out[3] 12.0 vs 9.5"));
    // Every size of the best occupancy refused and the own size not among them: the next
    // occupancy down, never a refused one.
    let s = suggest_block_sizes(&rows, Some(96), &mut |b| {
        [64, 128, 256, 512, 1024]
            .contains(&b)
            .then(|| "changes results".to_string())
    })
    .unwrap();
    assert!(![64, 128, 256, 512, 1024].contains(&s.block_size), "{s:?}");
    assert!(s.explanation.contains("refused"), "{}", s.explanation);
    // Register-limited kernels stop at their max block size.
    let rows = sweep_block_sizes(&caps, &res(255, 0), 0, &FuncConfig::default());
    assert_eq!(rows.last().unwrap().block_size, 256);
    // Register sweep: blocks never increase with registers.
    let rows = sweep_registers(&caps, &res(1, 0), 256, 0, &FuncConfig::default());
    assert_eq!(rows.len(), 255);
    assert!(rows
        .windows(2)
        .all(|w| w[0].blocks_per_sm >= w[1].blocks_per_sm));
    assert_eq!(rows.last().unwrap().blocks_per_sm, 1);
    // Dynamic shared memory sweep ends at the last size that launches.
    let rows = sweep_dynamic_smem(&caps, &res(32, 0), 256, 1024, &FuncConfig::default());
    assert_eq!(rows.last().unwrap().dynamic_smem_bytes, 227 * 1024);
    assert_eq!(rows[0].blocks_per_sm, 8);
}

proptest! {
    #[test]
    fn model_invariants(
        prof in 0usize..5,
        regs in 1u32..=255,
        warps in 1u32..=32,
        dynamic in 0u32..240_000,
        stat in 0u32..50_000,
    ) {
        let caps = dev(profiles::names()[prof]);
        let block = warps * 32;
        let r = res(regs, stat);
        let cfg = FuncConfig::default();
        let e = estimate(&caps, &r, block, dynamic);
        prop_assert_eq!(e.blocks_per_sm, blocks_per_sm(&caps, &r, block, dynamic, &cfg));
        prop_assert!(e.active_warps_per_sm <= caps.max_threads_per_sm / 32);
        prop_assert!(e.blocks_per_sm <= caps.max_blocks_per_sm);
        prop_assert_eq!(e.blocks_per_sm == 0, e.launchable.is_err());
        // Blocks of the same size fit in the configured shared memory and the register file.
        prop_assert!(u64::from(e.blocks_per_sm) * e.smem_per_block <= u64::from(caps.smem_per_sm));
        prop_assert!(u64::from(e.blocks_per_sm) * e.regs_per_block <= u64::from(caps.regs_per_sm));
        // More of any resource never gives more blocks.
        let more_regs = res((regs + 1).min(255), stat);
        prop_assert!(blocks_per_sm(&caps, &more_regs, block, dynamic, &cfg) <= e.blocks_per_sm);
        prop_assert!(blocks_per_sm(&caps, &r, block, dynamic + 128, &cfg) <= e.blocks_per_sm);
    }
}
