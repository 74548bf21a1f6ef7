#!/usr/bin/env bash
# `ctxbench report` of a big run made of a real run's samples replicated (issue 29, row 3).
#
#   bash benches/report_big/run.sh [BINARY] [SAMPLES] [RUNS] [-- extra report args]
#
# Runs the quickstart once with BINARY (default ./target/release/ctxbench) into a temporary
# directory, replicates its 280 samples to SAMPLES lines (default 100000) with
# benches/report_big/replicate.py, then times RUNS (default 5) `ctxbench report RUN -o OUT`
# under /usr/bin/time and perf stat (instructions, when perf can count them). Prints each run
# (wall, user, sys, peak RSS, instructions) and the medians, with the load average before and
# after. Set WORK=DIR to keep (and reuse) the generated run; BIG=DIR to time an existing run;
# REF=BINARY to render the same run once with another binary (say main's) and check that every
# timed run's files are byte-identical to its (`diff -r`; the script fails if they differ).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-./target/release/ctxbench}
n=${2:-100000}
runs=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
[[ ${1:-} == -- ]] && shift
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
big=${BIG:-$work/big-$n}
if [[ ! -s $big/samples.jsonl ]]; then
  if [[ ! -d $work/qs ]]; then
    "$bin" run evals/quickstart.toml -q -o "$work/qs" >/dev/null
  fi
  python3 benches/report_big/replicate.py "$(ls -d "$work"/qs/*/ | head -1)" "$big" "$n"
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
perf_ok=0
# Virtual machines often have no hardware counters: perf then says "<not supported>".
perf stat -x, -e instructions true 2>&1 | grep -q "^[0-9]*,,instructions" && perf_ok=1
if [[ -n ${REF:-} ]]; then
  rm -rf "$work/ref"
  "$REF" report "$big" -o "$work/ref" "$@" >/dev/null
fi
rows=()
for i in $(seq "$runs"); do
  out=$work/out-$i
  rm -rf "$out"
  if (( perf_ok )); then
    ins=$(perf stat -x, -e instructions -o /dev/stdout \
      /usr/bin/time -f "%e %U %S %M" -o "$work/time-$i" "$bin" report "$big" -o "$out" "$@" 2>/dev/null \
      | awk -F, '/instructions/ {print $1}' | tail -1)
  else
    /usr/bin/time -f "%e %U %S %M" -o "$work/time-$i" "$bin" report "$big" -o "$out" "$@" >/dev/null
    ins=0
  fi
  [[ $ins =~ ^[0-9]+$ ]] || ins=0
  if [[ -n ${REF:-} ]]; then
    diff -r "$work/ref" "$out" >/dev/null || { echo "run $i: files differ from $REF's" >&2; exit 1; }
  fi
  read -r wall user sys rss < <(tail -1 "$work/time-$i")
  printf 'run %d: wall %ss user %ss sys %ss peak %s MiB instructions %s\n' \
    "$i" "$wall" "$user" "$sys" "$((rss / 1024))" "$ins"
  rows+=("$wall $user $sys $rss $ins")
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${rows[@]}" | python3 -c '
import sys, statistics as st
r = [list(map(float, l.split())) for l in sys.stdin]
m = lambda i: st.median(x[i] for x in r)
cpu = st.median(x[1] + x[2] for x in r)
ins = f", {m(4)/1e9:.2f} G instructions" if m(4) else " (no instruction counter)"
print(f"median of {len(r)}: wall {m(0):.2f} s, CPU {cpu:.2f} s (user {m(1):.2f} + sys {m(2):.2f}), "
      f"peak {m(3)/1024:.0f} MiB{ins}")'
