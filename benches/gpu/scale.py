"""Copies a pipeline file with every buffer length scaled so the longest is N (and explicit
`elements` set to N), renamed after the output file; the GPU scripts use it for their 2^20 and
2^26 copies of the fixtures.
Usage: python3 benches/gpu/scale.py SRC.json DST.json N"""
import json
import sys

src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = json.load(open(src))
old = max(b["len"] for b in p["buffers"].values())
for b in p["buffers"].values():
    b["len"] = max(1, b["len"] * n // old)
for s in p["steps"]:
    if "elements" in s:
        s["elements"] = n
p["pipeline"] = dst.rsplit("/", 1)[1][:-5]
json.dump(p, open(dst, "w"), indent=1)
