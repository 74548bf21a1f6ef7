#!/usr/bin/env bash
# `ctxbench report` of one big run with two binaries, interleaved (A B A B ...), for CPU
# figures on a shared machine (issue 29, row 3).
#
#   bash benches/report_big/ab.sh OLD NEW RUN_DIR [ROUNDS]
#
# RUN_DIR is a run to report, e.g. the big-100000 directory `WORK=DIR bash
# benches/report_big/run.sh` leaves in DIR. Each round reports RUN_DIR with OLD then NEW under
# /usr/bin/time and prints wall, user, sys, peak RSS and the load average before the run; then
# the medians of each. The files of the last round are compared (`diff -r`).
set -euo pipefail
old=$1 new=$2 run=$3 rounds=${4:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$rounds"); do
  for side in old new; do
    bin=$old
    [[ $side == new ]] && bin=$new
    rm -rf "${out:?}/$side"
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %U %S %M" -o "$out/time" "$bin" report "$run" -o "$out/$side" >/dev/null
    read -r wall user sys rss < "$out/time"
    echo "$side $wall $user $sys $rss $load"
    printf '%s round %d: wall %ss user %ss sys %ss peak %s MiB (load %s)\n' \
      "$side" "$i" "$wall" "$user" "$sys" "$((rss / 1024))" "$load" >&2
  done
done > "$out/rows"
diff -r "$out/old" "$out/new" >/dev/null && echo "files identical" || echo "FILES DIFFER"
python3 - "$out/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
for side in ("old", "new"):
    r = [list(map(float, x[1:])) for x in rows if x[0] == side]
    m = lambda i: st.median(x[i] for x in r)
    cpu = [x[1] + x[2] for x in r]
    print(f"{side}: median of {len(r)}: CPU {st.median(cpu):.2f} s ({min(cpu):.2f}-{max(cpu):.2f}), "
          f"wall {m(0):.2f} s, peak {m(3)/1024:.0f} MiB, load {min(x[4] for x in r):.1f}-{max(x[4] for x in r):.1f}")
PY
