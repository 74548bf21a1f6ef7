#!/usr/bin/env python3
"""Write a big trace for the replay-memory measurement (README, "Speed"): the golden
synthetic-s7 trace repeated N times (default 14, ~27.6 MB), tool-call ids made unique.
Fixture-style JSONL by default; with --canonical, ctxbench's canonical JSONL (a header line,
then `{"type":"message",…}` lines with `arguments`), the format `ctxbench import` writes.
Usage: python3 benches/runner/big_trace.py OUT.jsonl [N] [--canonical]"""
import json, sys
args = [a for a in sys.argv[1:] if a != "--canonical"]
canonical = "--canonical" in sys.argv[1:]
src = "testdata/deepagents-golden/synthetic-s7/trace.jsonl"
out, n = args[0], int(args[1]) if len(args) > 1 else 14
lines = [json.loads(l) for l in open(src)]
with open(out, "w") as f:
    if canonical:
        meta = {"id": f"synthetic-s7-x{n}", "source_format": "openai"}
        f.write(json.dumps({"type": "header", "schema_version": 1, "meta": meta}) + "\n")
    for k in range(n):
        for m in lines:
            m = json.loads(json.dumps(m))
            for c in m.get("tool_calls", []):
                c["id"] += f"_r{k}"
                if canonical:
                    c["arguments"] = c.pop("args", {})
            if "tool_call_id" in m:
                m["tool_call_id"] += f"_r{k}"
            if canonical:
                m = {"type": "message", **m}
            f.write(json.dumps(m) + "\n")
