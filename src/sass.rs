//! SASS, the machine code the GPU runs, correlated with the PTX and the IR, offline.
//!
//! NVIDIA's `ptxas -lineinfo` assembles the emitted PTX into a cubin (the `emit::ptxas`
//! runner: private temp folder, time limit) and `nvdisasm -c -g -gp` disassembles it,
//! annotating every instruction with the PTX line it came from; the emitter's source map
//! turns that line into the IR node. Per instruction: address, text, PTX line, IR line
//! (when the PTX has `.loc`), IR node and class; per statement the instruction mix; per
//! kernel registers and spills (`ptxas -v`).
//!
//! Instructions without a node (`node: None`) are the ones no statement owns: the kernel
//! entry (stack pointer and memory descriptor loads ptxas ties to the opening `{`), the
//! emitter's prologue (parameters, hoisted ids) and epilogue (`ret`), and the end-of-code
//! trap (a branch to itself after the last exit). ptxas's library subroutines (64-bit
//! division, slow paths of `sqrt`/`div` for f64) carry no line info; they are charged to
//! the PTX line and node of their first call. Docs: `docs/sass.md`.
//!
//! Tools: `VYRESCOPE_PTXAS` / `VYRESCOPE_NVDISASM`, else beside ptxas, else `PATH`
//! ([`tools`]). Results are cached in memory per (PTX hash, sm, tool versions).

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;

use crate::emit::ptxas::{
    assemble_cubin, find_ptxas, parse_verbose, ptxas_arch, run_limited, OfflineResources,
    PtxasError,
};
use crate::emit::EmittedKernel;
use crate::util::hash_parts;

pub mod classify;
pub mod control;
pub mod liveness;
pub mod parse;
pub mod pressure;
pub mod render;
pub mod tools;

pub use classify::{classify, Class, Mix};
pub use control::Control;
pub use liveness::Live;
pub use parse::{Disassembly, Label};
pub use tools::{find_nvdisasm, SassError, NVDISASM_MISSING};

/// One SASS instruction with its place in the PTX and the IR.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SassInstruction {
    /// Byte offset in the kernel's code.
    pub address: u32,
    /// The instruction text (`@!P0 LDG.E.CONSTANT R8, desc[UR4][R2.64]`).
    pub text: String,
    /// PTX line (1-based) of the kernel's PTX text.
    pub ptx_line: Option<u32>,
    /// IR printer line, when the PTX was emitted with line info.
    pub ir_line: Option<u32>,
    /// Owning IR node id; None for prologue, epilogue and entry code.
    pub node: Option<String>,
    /// Instruction class.
    pub class: Class,
    /// The ptxas subroutine it belongs to, if not the kernel body.
    pub routine: Option<String>,
    /// Its scheduling control bits (stall, yield, dependency barriers, reuse), decoded from
    /// the instruction word (`docs/sass.md`).
    pub control: Option<Control>,
    /// Registers live at it (`nvdisasm --print-life-ranges`).
    pub live: Option<Live>,
}

/// The instruction mix of one IR node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeCost {
    /// Node id.
    pub node: String,
    /// Counts per class.
    pub mix: Mix,
    /// All its instructions.
    pub total: u32,
    /// Most general registers live at any of its instructions (its register pressure).
    pub peak_live: Option<u32>,
}

/// Versions of the tools that made a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolVersions {
    /// ptxas (`13.0.88`).
    pub ptxas: String,
    /// nvdisasm (`13.2.78`).
    pub nvdisasm: String,
}

/// A kernel's SASS, correlated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SassListing {
    /// The target SM asked for (90).
    pub sm: u32,
    /// The architecture ptxas assembled for (`sm_90`; sm_70 PTX is assembled as `sm_75`).
    pub arch: String,
    /// Kernel name.
    pub kernel: String,
    /// Instructions in address order (trailing alignment NOPs removed).
    pub instructions: Vec<SassInstruction>,
    /// Labels and subroutine starts.
    pub labels: Vec<Label>,
    /// Alignment NOPs after the code, not listed.
    pub padding: u32,
    /// Per-node instruction mix, in order of first instruction.
    pub costs: Vec<NodeCost>,
    /// Most general registers live at any instruction of the kernel.
    pub peak_live: Option<u32>,
    /// Mix of the instructions no node owns.
    pub unowned: Mix,
    /// Registers, spills, shared memory (`ptxas -v`).
    pub resources: OfflineResources,
    /// Tool versions.
    pub tools: ToolVersions,
}

impl SassListing {
    /// The cost entry of `node`.
    pub fn cost_of(&self, node: &str) -> Option<&NodeCost> {
        self.costs.iter().find(|c| c.node == node)
    }

    /// `{"sm","kernel","instructions":[{"address","text","ptx_line","node",..}],..}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// What the cache keeps: the parse and the ptxas log, independent of the source map.
#[derive(Debug, Clone)]
struct Assembled {
    disassembly: Disassembly,
    /// Live registers per instruction address.
    live: HashMap<u32, Live>,
    resources: OfflineResources,
    tools: ToolVersions,
}

/// Listings kept in memory before the cache is cleared (a session rarely sees more).
const CACHE_CAPACITY: usize = 64;

fn cache() -> &'static Mutex<HashMap<u64, Arc<Assembled>>> {
    static CACHE: OnceLock<Mutex<HashMap<u64, Arc<Assembled>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Assembles `kernel`'s PTX for `sm` and disassembles it: the correlated listing. Cached
/// per (PTX hash, sm, ptxas and nvdisasm versions).
pub fn disassemble(kernel: &EmittedKernel, sm: u32) -> Result<SassListing, SassError> {
    let ptxas = find_ptxas().ok_or(SassError::Ptxas(PtxasError::NotFound))?;
    let nvdisasm = find_nvdisasm().ok_or(SassError::NvdisasmNotFound)?;
    let tools = ToolVersions {
        ptxas: tools::tool_version(&ptxas).map_err(|e| PtxasError::Io(e.to_string()))?,
        nvdisasm: tools::tool_version(&nvdisasm).map_err(|e| SassError::Nvdisasm(e.to_string()))?,
    };
    let key = hash_parts(&[
        kernel.ptx.as_bytes(),
        &sm.to_le_bytes(),
        tools.ptxas.as_bytes(),
        tools.nvdisasm.as_bytes(),
    ]);
    let hit = cache().lock().ok().and_then(|c| c.get(&key).cloned());
    let assembled = match hit {
        Some(a) => a,
        None => {
            let a = Arc::new(assemble(&ptxas, &nvdisasm, &kernel.ptx, sm, tools)?);
            if let Ok(mut c) = cache().lock() {
                if c.len() >= CACHE_CAPACITY {
                    c.clear();
                }
                c.insert(key, a.clone());
            }
            a
        }
    };
    Ok(correlate(&assembled, kernel, sm))
}

fn assemble(
    ptxas: &std::path::Path,
    nvdisasm: &std::path::Path,
    ptx: &str,
    sm: u32,
    tools: ToolVersions,
) -> Result<Assembled, SassError> {
    let (log, cubin) = assemble_cubin(ptxas, ptx, sm, true)?;
    let mut resources = parse_verbose(&log)?;
    resources.arch = ptxas_arch(sm);
    let dir = crate::emit::ptxas::ToolDir::new("vyrescope-sass-")
        .map_err(|e| SassError::Nvdisasm(e.to_string()))?;
    let res: Result<(String, String), SassError> = (|| {
        let path = dir.path().join("kernel.cubin");
        std::fs::write(&path, &cubin).map_err(|e| SassError::Nvdisasm(e.to_string()))?;
        // `-hex` adds the instruction words (the control bits); life ranges need a run of
        // their own, since `--print-life-ranges` drops the line annotations.
        let listing = run_nvdisasm(nvdisasm, &path, &["-c", "-g", "-gp", "-hex"], dir.path())?;
        let life = run_nvdisasm(
            nvdisasm,
            &path,
            &["-c", "-plr", "-lrm", "count"],
            dir.path(),
        )?;
        Ok((listing, life))
    })();
    drop(dir);
    let (listing, life) = res?;
    let disassembly = parse::parse(&listing);
    if disassembly.instructions.is_empty() {
        return Err(SassError::Parse("no instructions in the listing".into()));
    }
    let live = liveness::parse(&life);
    Ok(Assembled {
        disassembly,
        live,
        resources,
        tools,
    })
}

/// One nvdisasm run over `cubin` with `args`, its output through the time-limited runner.
fn run_nvdisasm(
    nvdisasm: &std::path::Path,
    cubin: &std::path::Path,
    args: &[&str],
    dir: &std::path::Path,
) -> Result<String, SassError> {
    let mut cmd = Command::new(nvdisasm);
    cmd.args(args).arg(cubin);
    let run = run_limited(
        &mut cmd,
        &dir.join("sass.txt"),
        tools::NVDISASM_TIMEOUT,
        "nvdisasm",
    )
    .map_err(|e| SassError::Nvdisasm(e.to_string()))?;
    if !run.success {
        let why = match run.signal {
            Some(sig) => format!(
                "killed by signal {sig} (limit {} MiB of address space: it may have run out of memory) | ",
                crate::emit::ptxas::tool_memory_limit() >> 20
            ),
            None => String::new(),
        };
        return Err(SassError::Nvdisasm(format!(
            "{why}{}",
            run.log.lines().take(5).collect::<Vec<_>>().join(" | ")
        )));
    }
    Ok(run.log)
}

/// Attributes every instruction to a PTX line and a node (see the module docs).
fn correlate(a: &Assembled, kernel: &EmittedKernel, sm: u32) -> SassListing {
    let d = &a.disassembly;
    let map = &kernel.source_map;
    let epilogue_line = map.lines_of("epilogue").first().map(|r| r[0]);
    // Indexed once, not searched per instruction (that was quadratic in a large kernel):
    // each PTX line's owner, each label's address, each subroutine's line (its first
    // caller's).
    let owners = map.owners();
    let mut labels_at: HashMap<u32, Vec<&str>> = HashMap::new();
    for l in &d.labels {
        labels_at.entry(l.address).or_default().push(&l.name);
    }
    let routines: std::collections::HashSet<&str> = d
        .instructions
        .iter()
        .filter_map(|i| i.routine.as_deref())
        .collect();
    let mut callers: HashMap<&str, Option<u32>> = HashMap::new();
    for i in d.instructions.iter().filter(|i| i.text.contains("CALL")) {
        for r in &routines {
            if !callers.contains_key(r) && i.text.contains(&format!("`({r})")) {
                callers.insert(r, i.ptx_line);
            }
        }
    }
    let caller_line = |routine: &str| callers.get(routine).copied().flatten();
    let is_trap = |i: &parse::RawInstr| {
        i.text.starts_with("BRA ")
            && labels_at
                .get(&i.address)
                .is_some_and(|names| names.iter().any(|n| i.text.contains(&format!("`({n})"))))
    };
    let mut cost_at: HashMap<String, usize> = HashMap::new();
    let mut instructions = Vec::with_capacity(d.instructions.len());
    let mut costs: Vec<NodeCost> = Vec::new();
    let mut unowned = Mix::default();
    for i in &d.instructions {
        let trap = i.routine.is_none() && is_trap(i);
        let ptx_line = match (&i.routine, trap) {
            (Some(r), _) => caller_line(r),
            (None, true) => epilogue_line.or(i.ptx_line),
            (None, false) => i.ptx_line,
        };
        let node = match trap {
            true => None,
            false => ptx_line
                .and_then(|l| owners.get((l as usize).checked_sub(1)?).copied().flatten())
                .filter(|n| *n != "prologue" && *n != "epilogue")
                .map(str::to_string),
        };
        let class = classify(&i.text);
        let live = a.live.get(&i.address).copied();
        match &node {
            Some(n) => {
                let at = match cost_at.get(n) {
                    Some(&at) => at,
                    None => {
                        cost_at.insert(n.clone(), costs.len());
                        costs.push(NodeCost {
                            node: n.clone(),
                            mix: Mix::default(),
                            total: 0,
                            peak_live: None,
                        });
                        costs.len() - 1
                    }
                };
                costs[at].mix.add(class);
                costs[at].total += 1;
                if let Some(l) = live {
                    let peak = &mut costs[at].peak_live;
                    *peak = Some(peak.map_or(l.gpr, |p| p.max(l.gpr)));
                }
            }
            None => unowned.add(class),
        }
        instructions.push(SassInstruction {
            address: i.address,
            text: i.text.clone(),
            ptx_line,
            ir_line: i.ir_line,
            node,
            class,
            routine: i.routine.clone(),
            control: i.words.map(|(_, high)| Control::from_high_word(high)),
            live,
        });
    }
    let peak_live = instructions
        .iter()
        .filter_map(|i| i.live.map(|l| l.gpr))
        .max();
    SassListing {
        sm,
        arch: ptxas_arch(sm),
        kernel: if d.kernel.is_empty() {
            kernel.kernel_name.clone()
        } else {
            d.kernel.clone()
        },
        instructions,
        labels: d.labels.clone(),
        padding: d.padding,
        peak_live,
        costs,
        unowned,
        resources: a.resources.clone(),
        tools: a.tools.clone(),
    }
}
