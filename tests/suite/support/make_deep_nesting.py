#!/usr/bin/env python3
"""Writes fixtures/invalid/deep_nesting_100000.json: a Program whose `let` value is 100 000
nested `neg` expressions. The parser must reject it (JSON nesting limit) with a clear error,
without a stack overflow. Run from the repository root."""
import json

N = 100_000
prog = {
    "format": 1,
    "name": "deep_nesting",
    "workgroup_size": [256, 1, 1],
    "buffers": [
        {"name": "a", "binding": 0, "access": "read", "type": "f32"},
        {"name": "out", "binding": 1, "access": "read_write", "type": "u32"},
    ],
    "body": [{"let": "x", "value": "DEEP"}],
}
text = json.dumps(prog, indent=2).replace('"DEEP"', '{"neg":' * N + "1" + "}" * N)
with open("fixtures/invalid/deep_nesting_100000.json", "w") as f:
    f.write(text + "\n")
