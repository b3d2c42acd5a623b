"""Prints the markdown table of benches/gpu/run.sh from its JSON files (argument: the dir)."""
import json
import sys
from pathlib import Path

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
