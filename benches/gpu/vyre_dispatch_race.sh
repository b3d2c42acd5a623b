#!/usr/bin/env bash
# The dispatch race of issue 45: the same vyre Programs and pageable inputs through vyre's
# backend contract on vyrescope's backend (`vyrescope-cuda`) and on vyre's own
# (vyre-driver-cuda 0.7.2, id `cuda`), each acquired from vyre's registry by id, in two
# processes (their cudarc builds cannot share one), against the copy limit vyrescope's
# runtime measures (docs/vyre.md, "Dispatch speed").
#
# Usage, from the repository root, on the GPU machine (python3 needed, Rust not):
#   benches/gpu/vyre_dispatch_race.sh [VYRESCOPE_BIN] [RACE_BIN] [OUT_DIR]
# Defaults: target/release/vyrescope (built with `--features vyre`),
# benches/gpu/vyre-driver-race/target/release/vyre-driver-race, $OUT (or
# /tmp/vyrescope-dispatch-race). Writes OUT_DIR/vyrescope.json, OUT_DIR/vyre-driver.json and
# OUT_DIR/race.txt (the side-by-side table); exit status 1 when a run failed or a result was
# wrong.
set -euo pipefail
BIN=${1:-target/release/vyrescope}
RACE=${2:-benches/gpu/vyre-driver-race/target/release/vyre-driver-race}
DIR=${3:-${OUT:-/tmp/vyrescope-dispatch-race}}
mkdir -p "$DIR"
status=0
"$BIN" selftest --vyre-dispatch --backend cuda --json > "$DIR/vyrescope.json" || status=1
"$RACE" --json > "$DIR/vyre-driver.json" || status=1
python3 - "$DIR/vyrescope.json" "$DIR/vyre-driver.json" > "$DIR/race.txt" <<'PY' || status=1
import json, sys

def load(path):
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: no report ({e}); see the run's error above")
    if not isinstance(report, dict) or not isinstance(report.get("rows"), list):
        sys.exit(f"{path}: not a dispatch report (no `rows`); see the run's output")
    return report

ours, theirs = load(sys.argv[1]), load(sys.argv[2])
by_key = {(r["program"], r["elements"]): r for r in theirs["rows"]}
print("dispatch through vyre's backend contract, both backends acquired from vyre's registry by id")
if ours["h2d_gbps"] is not None and ours["d2h_gbps"] is not None:
    print(f"pinned copies (vyrescope's runtime, this run): host->device {ours['h2d_gbps']:.1f} GB/s, "
          f"device->host {ours['d2h_gbps']:.1f} GB/s")
else:
    print("no copy limit (vyrescope's run measured no pinned-copy bandwidth)")
print(f"A = {ours['backend']}, B = {theirs['backend']} (vyre-driver-cuda); median `dispatch` wall time; "
      "B/A > 1: vyrescope faster\n")
head = ("program", "elements", "A median us", "B median us", "B/A", "limit us",
        "A x limit", "B x limit", "A first ms", "B first ms", "A", "B")
fmt = "  {:<16} {:>10} {:>12} {:>12} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}  {:<8} {:<8}"
print(fmt.format(*head))
ok = ours["passed"] and theirs["passed"]
for a in ours["rows"]:
    b = by_key.get((a["program"], a["elements"]))
    if b is None:
        print(f"  {a['program']} {a['elements']}: missing from {theirs['backend']}'s report")
        ok = False
        continue
    limit = a["limit_us"]
    x = lambda r: f"{r['median_us'] / limit:.2f}" if limit else "-"
    flag = lambda r: "verified" if r["verified"] else "WRONG"
    print(fmt.format(a["program"], a["elements"], f"{a['median_us']:.1f}", f"{b['median_us']:.1f}",
                     f"{b['median_us'] / a['median_us']:.2f}", f"{limit:.2f}" if limit else "-",
                     x(a), x(b), f"{a['first_ms']:.2f}", f"{b['first_ms']:.2f}", flag(a), flag(b)))
print("\nresident (dispatch_resident_timed, medians, us): wall / device")
for a in ours["rows"]:
    b = by_key.get((a["program"], a["elements"]))
    if b is None:
        continue
    dev = lambda r: "-" if r["resident_device_us"] is None else f"{r['resident_device_us']:.1f}"
    print(f"  {a['program']:<16} {a['elements']:>10}  A {a['resident_wall_us']:.1f} / {dev(a)}"
          f"   B {b['resident_wall_us']:.1f} / {dev(b)}")
print(f"\nvyre dispatch race {'PASSED' if ok else 'FAILED'}")
sys.exit(0 if ok else 1)
PY
cat "$DIR/race.txt"
exit "$status"
