"""Prints the markdown table of benches/gpu/run.sh from its JSON files (argument: the dir),
or with `--kernels DIR ROUNDS` the table of benches/gpu/kernels.sh."""
import json
import re
import statistics
import sys
from pathlib import Path


def kernels_table(d, rounds):
    """Every fixture of kernels.sh: medians over rounds, registers, checks."""
    regs = {}
    res = d / "nvcc_resources.txt"
    if res.exists():
        fn = None
        for line in res.read_text().splitlines():
            m = re.search(r"Function (\w+):", line)
            if m:
                fn = m.group(1)
            m = re.search(r"\bREG:(\d+)", line)
            if m and fn:
                regs.setdefault(fn, int(m.group(1)))
    build = d / "nvcc_build.txt"
    if build.exists():  # -Xptxas -v, when cuobjdump gave nothing
        fn = None
        for line in build.read_text().splitlines():
            m = re.search(r"entry function '(\w+)'", line)
            if m:
                fn = m.group(1)
            m = re.search(r"Used (\d+) registers", line)
            if m and fn:
                regs.setdefault(fn, int(m.group(1)))

    def load(path):
        try:
            text = path.read_text().strip()
            return json.loads(text.splitlines()[-1] if path.name.startswith("nvcc") else text)
        except (OSError, ValueError, IndexError):
            return None

    names = []
    for p in sorted((d / "r1").glob("vs_*.json")) + sorted((d / "r1").glob("nvcc_*.json")):
        k = p.stem.split("_", 1)[1]
        if k not in names:
            names.append(k)
    order = ["histogram_u8", "histogram_u8_relaxed", "warp_scan_u32", "matmul_tiled_f32",
             "stencil5_f32", "atomics_mixed", "atomics_mixed_relaxed"]
    names.sort(key=lambda k: order.index(k) if k in order else len(order))
    print(f"| fixture | size | nvcc -O3 ms | vyrescope ms | vyrescope / nvcc | per-round ratios | regs nvcc | regs vyrescope | nvcc check (CPU) | vyrescope check (interpreter) |")
    print("|---|---|---:|---:|---:|---|---:|---:|---|---|")
    for k in names:
        nv, vs, size, ratios = [], [], "?", []
        nv_ok, vs_check, vs_regs = "missing", "missing", "?"
        for r in range(1, rounds + 1):
            n = load(d / f"r{r}" / f"nvcc_{k}.json")
            v = load(d / f"r{r}" / f"vs_{k}.json")
            if n:
                nv.append(n["median_ms"])
                size = n.get("size", size)
                if r == 1:
                    nv_ok = "ok" if n.get("verified") else f"FAILED: {n.get('problem', '')}"
            if v:
                kb = v["kernel"]
                vs.append(kb["device_ms"]["median_ms"])
                vs_regs = kb["regs"]
                if r == 1:
                    p = kb.get("parity")
                    if p is None:
                        vs_check = "not run"
                    else:
                        state = "ok" if p["passed"] else "FAILED"
                        vs_check = f"{state}: {kb.get('reference_run', 'full')}, {p['mismatches']} of {p['compared']} differ"
                        if p.get("order_bounded"):
                            vs_check += f" ({p['order_bounded']} float atomic sums within the order bound)"
            if n and v:
                ratios.append(kb["device_ms"]["median_ms"] / n["median_ms"])
        med = lambda xs: statistics.median(xs) if xs else float("nan")
        ratio = med(vs) / med(nv) if nv and vs else float("nan")
        rr = ", ".join(f"{x:.3f}" for x in ratios)
        print(f"| {k} | {size} | {med(nv):.4f} | {med(vs):.4f} | {ratio:.3f} | {rr} | {regs.get(k, '?')} | {vs_regs} | {nv_ok} | {vs_check} |")


if len(sys.argv) > 1 and sys.argv[1] == "--kernels":
    kernels_table(Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 3)
    sys.exit(0)

d = Path(sys.argv[1])
nvcc = {}
for line in (d / "nvcc.jsonl").read_text().splitlines():
    if line.strip():
        r = json.loads(line)
        nvcc[r["kernel"]] = r
# Bytes each kernel must move (inputs read once, outputs written once).
traffic = {"vadd_f32": 12, "saxpy_f32": 12, "reduce_sum_f32": 4 + 4 / 256}
print("| kernel | elements | nvcc -O3 ms | vyrescope ms | ratio (vyrescope/nvcc) | vyrescope GB/s | regs | parity (vs interpreter, same size) |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
full = None


def parity(p):
    if p is None:
        return "not checked"
    state = "ok" if p["passed"] else "FAILED"
    return f"{state}: {p['mode']}, {p['mismatches']} of {p['compared']} differ"


for k in ["vadd_f32", "saxpy_f32", "reduce_sum_f32"]:
    v = json.loads((d / f"vs_{k}.json").read_text())["kernel"]
    n = nvcc[k]
    ms = v["device_ms"]["median_ms"]
    gbps = traffic[k] * v["elements"] / ms / 1e6
    print(f"| {k} | 2^{v['elements'].bit_length() - 1} | {n['median_ms']:.4f} | {ms:.4f} | {ms / n['median_ms']:.3f} | {gbps:.0f} | {v['regs']} | {parity(v['parity'])} |")
    if k == "vadd_f32":
        full = v["full_dispatch_ms"]
o = json.loads((d / "overhead.json").read_text())["overhead"]
print()
print("| measurement | value |")
print("|---|---:|")
print(f"| full dispatch vadd_f32 2^26 (upload 512 MiB, launch, read back 256 MiB), median of {full['count']} | {full['median_ms']:.1f} ms (min {full['min_ms']:.1f}) |")
print(f"| vs vyre 0.7.2 full dispatch (815 ms) | {815 / full['median_ms']:.1f}x faster |")
n_u = o["vyrescope_untimed_us"]["count"]
print(f"| warm dispatch without device timing: vyrescope launch+wait (median of {n_u}) | {o['vyrescope_untimed_us']['median_ms']:.2f} us |")
print(f"| bare cudarc launch + cuStreamSynchronize, same PTX and buffers | {o['bare_cudarc_us']['median_ms']:.2f} us |")
print(f"| overhead ratio without device timing (target <= 1.5x) | {o['ratio_untimed']:.2f}x |")
print(f"| warm dispatch with CUDA-event device timing: vyrescope (median of {o['vyrescope_timed_us']['count']}) | {o['vyrescope_timed_us']['median_ms']:.2f} us |")
print(f"| bare cudarc event record, launch, event record, cuEventSynchronize, elapsed | {o['bare_cudarc_timed_us']['median_ms']:.2f} us |")
print(f"| overhead ratio with device timing (target <= 1.5x) | {o['ratio_timed']:.2f}x |")
