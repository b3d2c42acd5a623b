//! Device profiles: [`DeviceCaps`] as JSON, bundled for offline use (`--device h100-sxm`) or
//! read from a file (`--device my-gpu.json`).
//!
//! The bundled files live in `fixtures/devices/` and are compiled in with `include_str!`, so
//! they work from any directory. Each says in `source` whether it is "probed" or "from tables"
//! and in `provenance` where its figures come from.

use std::path::Path;

use super::arch::ArchConstants;
use super::DeviceCaps;

/// A bundled profile: its name, other accepted spellings, and the JSON text.
struct Bundled {
    name: &'static str,
    aliases: &'static [&'static str],
    json: &'static str,
}

const BUNDLED: [Bundled; 5] = [
    Bundled {
        name: "a100",
        aliases: &["sm80", "sm_80", "a100-sxm"],
        json: include_str!("../../fixtures/devices/a100.json"),
    },
    Bundled {
        name: "sm86",
        aliases: &["sm_86", "rtx3090"],
        json: include_str!("../../fixtures/devices/sm86.json"),
    },
    Bundled {
        name: "sm89",
        aliases: &["sm_89", "l40s"],
        json: include_str!("../../fixtures/devices/sm89.json"),
    },
    Bundled {
        name: "h100-sxm",
        aliases: &["h100", "sm90", "sm_90"],
        json: include_str!("../../fixtures/devices/h100-sxm.json"),
    },
    Bundled {
        name: "h200",
        aliases: &[],
        json: include_str!("../../fixtures/devices/h200.json"),
    },
];

/// The profile used when no device is given and no GPU is present.
pub const DEFAULT_PROFILE: &str = "h200";

/// Why a profile could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// Neither a bundled name nor an existing file.
    Unknown(String),
    /// The file could not be read.
    Read {
        /// File path.
        path: String,
        /// OS error.
        reason: String,
    },
    /// The JSON does not have the DeviceCaps shape.
    Parse {
        /// Name or path.
        origin: String,
        /// serde's message with the JSON path.
        reason: String,
    },
    /// Valid JSON, impossible figures or an unsupported architecture.
    Invalid {
        /// Name or path.
        origin: String,
        /// What is wrong.
        reason: String,
        /// How to fix it.
        fix: String,
    },
}

/// Names of the bundled profiles.
pub fn names() -> Vec<&'static str> {
    BUNDLED.iter().map(|b| b.name).collect()
}

/// A bundled profile by name or alias (case-insensitive).
pub fn bundled(name: &str) -> Option<Result<DeviceCaps, ProfileError>> {
    let lower = name.to_ascii_lowercase();
    BUNDLED
        .iter()
        .find(|b| b.name == lower || b.aliases.contains(&lower.as_str()))
        .map(|b| parse(b.json, b.name))
}

/// Largest device profile file read (1 MiB).
pub const MAX_PROFILE_BYTES: u64 = 1 << 20;

/// Loads `name_or_path`: a bundled profile name (see [`names`]) or a JSON file path.
pub fn load(name_or_path: &str) -> Result<DeviceCaps, ProfileError> {
    if let Some(b) = bundled(name_or_path) {
        return b;
    }
    let path = Path::new(name_or_path);
    if !path.exists() {
        return Err(ProfileError::Unknown(name_or_path.to_string()));
    }
    // Only a regular file of at most 1 MiB (a profile is a few hundred bytes).
    let bytes =
        crate::util::read_limited(path, MAX_PROFILE_BYTES, "device profile").map_err(|e| {
            ProfileError::Read {
                path: name_or_path.to_string(),
                reason: e.message,
            }
        })?;
    let text = String::from_utf8(bytes).map_err(|e| ProfileError::Read {
        path: name_or_path.to_string(),
        reason: format!("not UTF-8: {e}"),
    })?;
    parse(&text, name_or_path)
}

/// Where a profile's figures come from, for display: `bundled profile `h200`` or `profile
/// file `my-gpu.json``, plus `, figures from tables` for a profile not probed on its GPU. A
/// profile is never called "probed" on its own: that word is for a live device (a bundled
/// profile shown on a machine without a GPU read as if one had been probed).
pub fn label(name_or_path: &str, caps: &DeviceCaps) -> String {
    let what = match bundled(name_or_path) {
        Some(_) => format!("bundled profile `{name_or_path}`"),
        None => format!("profile file `{name_or_path}`"),
    };
    if caps.source == "from tables" {
        format!("{what}, figures from tables")
    } else {
        what
    }
}

/// Parses and checks a DeviceCaps JSON text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<DeviceCaps, ProfileError> {
    if let Some(d) = crate::util::find_duplicate_key(text) {
        return Err(ProfileError::Invalid {
            origin: origin.to_string(),
            reason: format!("at `{}` (line {}): {}", d.path, d.line, d.message()),
            fix: d.fix(),
        });
    }
    let de = &mut serde_json::Deserializer::from_str(text);
    let caps: DeviceCaps =
        serde_path_to_error::deserialize(de).map_err(|e| ProfileError::Parse {
            origin: origin.to_string(),
            reason: e.to_string(),
        })?;
    check(&caps, origin)?;
    Ok(caps)
}

/// Checks that a profile can drive the occupancy model.
pub fn check(caps: &DeviceCaps, origin: &str) -> Result<(), ProfileError> {
    let invalid = |reason: String, fix: &str| ProfileError::Invalid {
        origin: origin.to_string(),
        reason,
        fix: fix.to_string(),
    };
    if ArchConstants::for_caps(caps).is_none() {
        return Err(invalid(
            format!(
                "compute capability {}.{} has no allocation table",
                caps.cc_major, caps.cc_minor
            ),
            &format!(
                "use a device of compute capability {}",
                ArchConstants::SUPPORTED
            ),
        ));
    }
    for (field, v) in [
        ("sm_count", caps.sm_count),
        ("max_threads_per_block", caps.max_threads_per_block),
        ("max_threads_per_sm", caps.max_threads_per_sm),
        ("max_blocks_per_sm", caps.max_blocks_per_sm),
        ("regs_per_sm", caps.regs_per_sm),
        ("regs_per_block", caps.regs_per_block),
        ("smem_per_block", caps.smem_per_block),
        ("smem_per_sm", caps.smem_per_sm),
        ("warp_size", caps.warp_size),
    ] {
        if v == 0 {
            return Err(invalid(
                format!("`{field}` is 0"),
                "give the device's real figure",
            ));
        }
    }
    // Upper bounds a few times above any NVIDIA GPU so far: the model and its sweeps size
    // their work by these figures, so an absurd one (4294967295) must stop here rather than
    // make a sweep run for minutes or allocate gigabytes.
    for (field, v, max) in [
        ("sm_count", caps.sm_count, 4096),
        ("max_threads_per_block", caps.max_threads_per_block, 4096),
        ("max_threads_per_sm", caps.max_threads_per_sm, 8192),
        ("max_blocks_per_sm", caps.max_blocks_per_sm, 256),
        ("regs_per_sm", caps.regs_per_sm, 1 << 20),
        ("regs_per_block", caps.regs_per_block, 1 << 20),
        ("smem_per_block", caps.smem_per_block, 4 << 20),
        ("smem_per_sm", caps.smem_per_sm, 4 << 20),
        ("smem_per_block_optin", caps.smem_per_block_optin, 4 << 20),
        (
            "smem_reserved_per_block",
            caps.smem_reserved_per_block,
            1 << 20,
        ),
        ("max_block_dim[0]", caps.max_block_dim[0], 4096),
        ("max_block_dim[1]", caps.max_block_dim[1], 4096),
        ("max_block_dim[2]", caps.max_block_dim[2], 4096),
    ] {
        if v > max {
            return Err(invalid(
                format!("`{field}` is {v}, above the sane maximum {max}"),
                "give the device's real figure (`vyrescope probe` prints them)",
            ));
        }
    }
    if caps.warp_size != 32 {
        return Err(invalid(
            format!("warp_size is {}, NVIDIA GPUs have 32", caps.warp_size),
            "set warp_size to 32",
        ));
    }
    check_ranges(caps).map_err(|(reason, fix)| invalid(reason, &fix))?;
    if caps.source != "probed" && caps.source != "from tables" {
        return Err(invalid(
            format!("source is `{}`", caps.source),
            "set source to \"probed\" or \"from tables\"",
        ));
    }
    Ok(())
}

/// Sane ranges of a profile's fields, `(field, value, min, max)`: a few times beyond any
/// NVIDIA GPU of compute capability 7.0 to 9.x, so a real device always fits while an absurd
/// value (say `4294967295`) is refused on load instead of sizing a sweep or an allocation.
fn ranges(caps: &DeviceCaps) -> Vec<(&'static str, u64, u64, u64)> {
    let u = u64::from;
    let mut v = vec![
        ("sm_count", u(caps.sm_count), 1, 1024),
        (
            "max_threads_per_block",
            u(caps.max_threads_per_block),
            32,
            crate::shape::MAX_WORKGROUP_THREADS,
        ),
        ("max_threads_per_sm", u(caps.max_threads_per_sm), 32, 4096),
        ("max_blocks_per_sm", u(caps.max_blocks_per_sm), 1, 64),
        ("regs_per_sm", u(caps.regs_per_sm), 1024, 1 << 18),
        ("regs_per_block", u(caps.regs_per_block), 1024, 1 << 18),
        ("smem_per_block", u(caps.smem_per_block), 1, 1 << 20),
        ("smem_per_sm", u(caps.smem_per_sm), 1, 1 << 20),
        (
            "smem_per_block_optin",
            u(caps.smem_per_block_optin),
            0,
            1 << 20,
        ),
        (
            "smem_reserved_per_block",
            u(caps.smem_reserved_per_block),
            0,
            1 << 16,
        ),
        ("l2_bytes", caps.l2_bytes, 0, 1 << 31),
        ("clock_khz", u(caps.clock_khz), 0, 10_000_000),
        ("mem_clock_khz", u(caps.mem_clock_khz), 0, 100_000_000),
        ("bus_width_bits", u(caps.bus_width_bits), 0, 1 << 16),
        ("total_mem_bytes", caps.total_mem_bytes, 0, 1 << 44),
    ];
    for a in 0..3 {
        v.push((
            ["max_block_dim[0]", "max_block_dim[1]", "max_block_dim[2]"][a],
            u(caps.max_block_dim[a]),
            1,
            u(crate::shape::MAX_WORKGROUP_DIMS[a]),
        ));
        v.push((
            ["max_grid_dim[0]", "max_grid_dim[1]", "max_grid_dim[2]"][a],
            u(caps.max_grid_dim[a]),
            1,
            u(crate::shape::MAX_GRID_DIMS[a]),
        ));
    }
    v
}

/// Checks every field against [`ranges`] and the fields against each other; the error is
/// `(reason, fix)`.
fn check_ranges(caps: &DeviceCaps) -> Result<(), (String, String)> {
    for (field, v, min, max) in ranges(caps) {
        if v < min || v > max {
            return Err((
                format!("`{field}` is {v}, outside the sane range {min}..={max}"),
                format!("give the device's real figure for `{field}` (between {min} and {max})"),
            ));
        }
    }
    for (small, a, big, b) in [
        (
            "max_threads_per_block",
            caps.max_threads_per_block,
            "max_threads_per_sm",
            caps.max_threads_per_sm,
        ),
        (
            "regs_per_block",
            caps.regs_per_block,
            "regs_per_sm",
            caps.regs_per_sm,
        ),
        (
            "smem_per_block",
            caps.smem_per_block,
            "smem_per_sm",
            caps.smem_per_sm,
        ),
        (
            "smem_per_block_optin",
            caps.smem_per_block_optin,
            "smem_per_sm",
            caps.smem_per_sm,
        ),
    ] {
        if a > b {
            return Err((
                format!("`{small}` ({a}) is larger than `{big}` ({b})"),
                format!("`{small}` is at most `{big}` on every GPU: check both figures"),
            ));
        }
    }
    Ok(())
}

impl crate::util::HasFix for ProfileError {
    fn message(&self) -> String {
        match self {
            Self::Unknown(a0) => format!("no device profile named `{a0}` and no such file"),
            Self::Read { path, reason, .. } => {
                format!("cannot read device profile {path}: {reason}")
            }
            Self::Parse { origin, reason, .. } => {
                format!("device profile {origin} is not valid: {reason}")
            }
            Self::Invalid { origin, reason, .. } => format!("device profile {origin}: {reason}"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::Unknown(_) => format!(
                "use one of {names}, or the path of a DeviceCaps JSON file",
                names = names().join(", ")
            ),
            Self::Read { .. } => "check the path and permissions".to_string(),
            Self::Parse { .. } => {
                "compare it with fixtures/devices/h200.json (every field is required)".to_string()
            }
            Self::Invalid { fix, .. } => fix.to_string(),
        }
    }
}

crate::util::problem::into_problem!(ProfileError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_profile_loads_and_matches_its_architecture_table() {
        for n in names() {
            let caps = load(n).unwrap();
            let arch = ArchConstants::for_caps(&caps).unwrap();
            assert_eq!(caps.max_threads_per_sm / 32, arch.max_warps_per_sm, "{n}");
            assert_eq!(caps.max_blocks_per_sm, arch.max_blocks_per_sm, "{n}");
            assert_eq!(caps.smem_per_sm, arch.max_smem_per_sm, "{n}");
            assert_eq!(
                caps.smem_per_block_optin, arch.max_smem_per_block_optin,
                "{n}"
            );
            assert_eq!(
                caps.smem_reserved_per_block, arch.smem_reserved_per_block,
                "{n}"
            );
            assert!(!caps.provenance.is_empty());
        }
    }

    #[test]
    fn aliases_and_case_resolve() {
        assert_eq!(load("SM90").unwrap(), load("h100-sxm").unwrap());
        assert_eq!(load("sm80").unwrap().cc_major, 8);
    }

    #[test]
    fn unknown_name_lists_the_bundled_ones() {
        let e = load("no-such-gpu").unwrap_err().to_string();
        assert!(e.contains("h100-sxm") && e.contains("Fix:"), "{e}");
    }

    #[test]
    fn file_profiles_load_and_bad_ones_name_the_field() {
        let dir = std::env::temp_dir().join(format!("vyrescope-prof-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("g.json");
        std::fs::write(&good, BUNDLED[0].json).unwrap();
        assert_eq!(load(good.to_str().unwrap()).unwrap().sm_count, 108);
        let bad = dir.join("b.json");
        std::fs::write(
            &bad,
            BUNDLED[0]
                .json
                .replace("\"sm_count\": 108", "\"sm_count\": -1"),
        )
        .unwrap();
        let e = load(bad.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("sm_count"), "{e}");
        let old = dir.join("o.json");
        std::fs::write(
            &old,
            BUNDLED[0]
                .json
                .replace("\"cc_major\": 8", "\"cc_major\": 6"),
        )
        .unwrap();
        let e = load(old.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("6.0"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn absurd_profiles_are_refused_on_load() {
        // Regression (issue 13 item 3): every field at its maximum made `occupancy` run for
        // 25 s or abort allocating 4 GB.
        let good: serde_json::Value = serde_json::from_str(BUNDLED[4].json).unwrap();
        let fields: Vec<String> = good
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, v)| v.is_u64() || v.is_array())
            .map(|(k, _)| k.clone())
            .filter(|k| {
                ![
                    "cc_major",
                    "cc_minor",
                    "warp_size",
                    "driver_version",
                    // u64 field: 4 GiB of device memory is a real figure.
                    "total_mem_bytes",
                ]
                .contains(&k.as_str())
            })
            .collect();
        assert!(fields.len() >= 15, "{fields:?}");
        for field in &fields {
            let mut v = good.clone();
            v[field.as_str()] = if v[field.as_str()].is_array() {
                serde_json::json!([u32::MAX, u32::MAX, u32::MAX])
            } else {
                serde_json::json!(u32::MAX)
            };
            let e = parse(&v.to_string(), "absurd.json")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(field.as_str()) && e.contains("Fix:"),
                "{field}: {e}"
            );
        }
        // Every field at u32::MAX together.
        let mut all = good.clone();
        for field in &fields {
            all[field.as_str()] = if all[field.as_str()].is_array() {
                serde_json::json!([u32::MAX, u32::MAX, u32::MAX])
            } else {
                serde_json::json!(u32::MAX)
            };
        }
        assert!(parse(&all.to_string(), "absurd.json").is_err());
        // Inconsistent but individually sane figures.
        let mut v = good.clone();
        v["regs_per_block"] = serde_json::json!(131072);
        let e = parse(&v.to_string(), "x.json").unwrap_err().to_string();
        assert!(e.contains("regs_per_sm"), "{e}");
    }
}
