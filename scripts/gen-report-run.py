#!/usr/bin/env python3
"""Write a synthetic saved run (run.json + samples.jsonl) for measuring `ctxbench report` at
scale, e.g.

    python3 scripts/gen-report-run.py /tmp/big-100k 100000
    /usr/bin/time -v ./target/release/ctxbench report /tmp/big-100k --no-png

4 variants x 250 traces x needle/drift samples, each line with a timeline of TIMELINE points,
evidence and one summary record (about 8 KB a line at the default sizes, like a real needle
sweep; --light writes about 2 KB a line). Deterministic (seeded).
"""
import json
import random
import sys

VARIANTS = ["baseline", "evict", "clear-60", "summarize-15"]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    light = "--light" in sys.argv
    if len(args) != 2:
        sys.exit(__doc__)
    out, n = args[0], int(args[1])
    points = 8 if light else 40
    evidence_chars = 300 if light else 2500
    import os

    os.makedirs(out, exist_ok=True)
    info = {
        "schema_version": 1,
        "run_id": os.path.basename(out.rstrip("/")),
        "created": "2026-01-01T00:00:00Z",
        "ctxbench_version": "0.1.0",
        "variants": VARIANTS,
        "baseline": "baseline",
        "seed": 7,
    }
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(info, f)
    rnd = random.Random(7)
    filler = "".join(rnd.choice("abcdefghij klmnop") for _ in range(evidence_chars))
    with open(os.path.join(out, "samples.jsonl"), "w") as f:
        for i in range(n):
            v = i % 4
            unit = i // 4
            trace = unit % 250
            depth = [0.1, 0.3, 0.5, 0.7, 0.9][(unit // 250) % 5]
            trigger = [0.3, 0.5, 0.7, 0.85][(unit // 1250) % 4]
            repeat = unit // 5000
            needle = unit % 7 != 0
            agent_in = 20000 + rnd.randrange(10000)
            if needle:
                recall = 1.0 if rnd.randrange(100) < 95 - 10 * v else 0.0
                scores = {"recall": recall, "steps": float(rnd.randrange(8))}
            else:
                scores = {"score": float(rnd.randrange(6))}
            s = {
                "schema_version": 1,
                "unit_id": f"u{i}",
                "trace_id": f"trace-{trace:03}",
                "variant": VARIANTS[v],
                "eval": "needle" if needle else "drift",
                "sample": f"depth={depth}/trigger={trigger}",
                "params": {"depth": depth, "trigger": trigger, "fold": 1 + unit % 3},
                "repeat": repeat,
                "scores": scores,
                "tokens": {
                    "agent": {"input": agent_in, "cached": agent_in // 3, "cache_write": 0, "output": 400},
                    "summarizer": {"input": 3000 * v, "cached": 0, "cache_write": 0, "output": 300 * v},
                    "judge": {"input": 0, "cached": 0, "cache_write": 0, "output": 0},
                },
                "cost_usd": {"agent": agent_in * 2.5e-6, "summarizer": v * 1e-3, "judge": None},
                "compactions": {"evicted": v},
                "latency_ms": rnd.randrange(3000),
                "evidence": {"answer": filler[: evidence_chars // 2], "expected": "k-%d" % i,
                             "tool_calls": [{"name": "read_file", "input": filler[evidence_chars // 2:]}]},
                "timeline": [
                    {"trace_index": 2 * k + 1, "tokens": 1000 * (k + 1) // (v + 1),
                     "reference_tokens": 1000 * (k + 1),
                     **({"events": ["summarized"], "details": ["summarized messages 3..%d" % k]}
                        if v and k % 10 == 6 else {})}
                    for k in range(points)
                ],
            }
            if needle:
                s["passed"] = scores["recall"] == 1.0
            f.write(json.dumps(s, separators=(",", ":")))
            f.write("\n")


if __name__ == "__main__":
    main()
