#!/usr/bin/env bash
# The system share of issue 29's offline needle sweep as sampled by perf (4,999 samples a
# second of each process, kernel frames against all), N runs of each binary given,
# interleaved; prints each run's share and the median a binary. The kernel's own user/system
# split (/usr/bin/time, offline.sh) counts whole 4 ms ticks (HZ=250 here), ~130 a run: its
# system share moves by several points between runs of one binary; this one by ~1.
# Needs `perf` and permission to sample (root, or kernel.perf_event_paranoid <= 2).
# Usage: bash benches/needle/kernel_share.sh [-n RUNS] BINARY [BINARY...]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=5
if [ "${1:-}" = "-n" ]; then runs=$2; shift 2; fi
[ $# -ge 1 ] || set -- target/release/ctxbench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
  for bin in "$@"; do
    perf record -q -F 4999 -o "$out/perf.data" -- "$bin" run benches/needle-sweep.toml -q \
      -o "$out/run-$i-$(basename "$bin")" >/dev/null 2>&1
    share=$(perf report -q -i "$out/perf.data" --sort dso --stdio 2>/dev/null \
      | awk '/\[kernel\.kallsyms\]/ { sub("%", "", $1); print $1 }')
    echo "$bin	${share:-0}" | tee -a "$out/rows"
  done
done
python3 - "$out/rows" <<'PY'
import sys, statistics as st
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
for b in dict.fromkeys(r[0] for r in rows):
    v = [float(r[1]) for r in rows if r[0] == b]
    print(f"median {b}: kernel {st.median(v):.1f}% of the samples ({min(v):.1f}-{max(v):.1f}, {len(v)} runs)")
PY
