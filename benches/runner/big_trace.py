#!/usr/bin/env python3
"""Write a big canonical JSONL trace for the replay-memory measurement (README, "Speed"): the
golden synthetic-s7 trace repeated N times (default 14, ~25 MB), tool-call ids made unique.
Usage: python3 benches/runner/big_trace.py OUT.jsonl [N]"""
import json, sys
src = "testdata/deepagents-golden/synthetic-s7/trace.jsonl"
out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 14
lines = [json.loads(l) for l in open(src)]
with open(out, "w") as f:
    for k in range(n):
        for m in lines:
            m = json.loads(json.dumps(m))
            for c in m.get("tool_calls", []):
                c["id"] += f"_r{k}"
            if "tool_call_id" in m:
                m["tool_call_id"] += f"_r{k}"
            f.write(json.dumps(m) + "\n")
