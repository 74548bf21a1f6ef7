#!/usr/bin/env bash
# Row 1 of issue 29: the 1,000-unit offline needle sweep (benches/needle-sweep.toml: 20 mini-swe
# traces x 5 variants x 10 needle samples, offline agent and summarizer), N runs of each binary
# given, interleaved (A B A B ...), under /usr/bin/time. Prints per run and the median: CPU ms
# per unit (user+sys), the system share (and, over all runs, the pooled share: system time summed
# over CPU time summed), wall, peak RSS, load average.
# Each run writes its own run directory, all removed at the end: on ext4, creating files right
# after deleting many (the previous run) scans the recently freed inodes, which puts the
# benchmark's own clean-up into the next run's system time.
# Usage: bash benches/needle/offline.sh [-n RUNS] BINARY [BINARY...]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=5
if [ "${1:-}" = "-n" ]; then runs=$2; shift 2; fi
[ $# -ge 1 ] || set -- target/release/ctxbench
out=$(mktemp -d)
n=0
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
  for bin in "$@"; do
    n=$((n + 1))
    /usr/bin/time -v "$bin" run benches/needle-sweep.toml -q -o "$out/run$n" >/dev/null 2>"$out/time"
    python3 - "$out/time" "$bin" "$(cut -d' ' -f1 /proc/loadavg)" >>"$out/rows" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def f(k): return re.search(re.escape(k) + r":\s*(.*)", t).group(1).strip()
w = f("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w)))
u, s = float(f("User time (seconds)")), float(f("System time (seconds)"))
rss = int(f("Maximum resident set size (kbytes)")) / 1024
print(f"{sys.argv[2]}\t{(u+s):.3f}\t{u:.3f}\t{s:.3f}\t{wall:.2f}\t{rss:.1f}\t{sys.argv[3]}")
PY
    tail -1 "$out/rows" | awk -F'\t' '{printf "%s  cpu %.2f ms/unit (user %.2f s, sys %.2f s = %.0f%%)  wall %.2f s  %.0f MiB  load %s\n", $1, $2, $3, $4, 100*$4/$2, $5, $6, $7}'
  done
done
python3 - "$out/rows" <<'PY'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
for b in dict.fromkeys(r[0] for r in rows):
    r = [x for x in rows if x[0] == b]
    cpu, u, s = (st.median(float(x[i]) for x in r) for i in (1, 2, 3))
    # The runs' system time over their CPU time, summed: each run's split counts whole ticks, so
    # the pooled share is the estimate (a run's own share moves by several points).
    pooled = 100 * sum(float(x[3]) for x in r) / sum(float(x[1]) for x in r)
    print(f"median {b}: {cpu:.2f} ms CPU/unit (user {u:.2f} s + sys {s:.2f} s; sys {100*s/cpu:.0f}%, "
          f"pooled {pooled:.1f}%), "
          f"wall {st.median(float(x[4]) for x in r):.2f} s, {st.median(float(x[5]) for x in r):.0f} MiB, "
          f"load {min(x[6] for x in r)}-{max(x[6] for x in r)}, {len(r)} runs")
PY
