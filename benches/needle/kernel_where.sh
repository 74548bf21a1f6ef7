#!/usr/bin/env bash
# Where the kernel time of issue 29's offline needle sweep goes: perf samples each process at
# 4,999 Hz with kernel call chains, N runs of one binary; each kernel sample is put under the
# way it entered the kernel (a page fault, or the system call it is in: write, mkdir, read,
# futex, ...). Prints the mean per run in ms of CPU and as a share of all the run's samples
# (perf's own overhead makes a sampled run ~30% longer than an unsampled one: compare shares
# between builds, not these ms with `/usr/bin/time`). Runs go to $TMPDIR (on this VM's root, an
# ext4 without a journal, `mkdir`/`openat` after recent deletions cost many times more: run
# with TMPDIR on a fresh journaled file system to compare builds, as benches/README.md does).
# Needs `perf` and permission to sample (root, or kernel.perf_event_paranoid <= 2).
# Usage: bash benches/needle/kernel_where.sh [-n RUNS] BINARY
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=5
if [ "${1:-}" = "-n" ]; then runs=$2; shift 2; fi
bin=${1:-target/release/ctxbench}
out=$(mktemp -d)
# perf's own files away from the runs' file system (on tmpfs when there is one): writing them
# beside the runs slowed the runs' own writes several times over.
data=$(mktemp -d -p "$([ -d /dev/shm ] && echo /dev/shm || echo "$out")")
trap 'rm -rf "$out" "$data"' EXIT
for i in $(seq "$runs"); do
  perf record -q -F 4999 -g -o "$data/perf.data" -- "$bin" run benches/needle-sweep.toml -q \
    -o "$out/run-$i" >/dev/null 2>&1
  perf script -i "$data/perf.data" -F ip,sym 2>/dev/null >>"$data/stacks"
done
python3 - "$data/stacks" "$runs" "$bin" <<'PY'
import collections, re, sys
path, runs, binary = sys.argv[1], int(sys.argv[2]), sys.argv[3]
entry = collections.Counter()
total = 0
frames = []

def sample_done():
    global total
    if not frames:
        return
    total += 1
    if not frames[0][0]:  # a user-space sample
        return
    kernel = [s for k, s in frames if k]
    where = "other kernel work"
    for s in reversed(kernel):  # from the outermost frame in
        m = re.match(r"__(?:x64|se)_sys_(\w+)|ksys_(\w+)|__do_sys_(\w+)", s)
        if m:
            where = next(g for g in m.groups() if g)
            break
        if s in ("asm_exc_page_fault", "exc_page_fault"):
            where = "page faults"
            break
        if "sysvec" in s or "irq" in s:
            where = "interrupts"
            break
    entry[where] += 1

for line in open(path):
    if not line.startswith((" ", "\t")):
        sample_done()
        frames = []
        continue
    parts = line.strip().split(" ", 1)
    if len(parts) == 2:
        frames.append((parts[0].startswith("ffffffff"), re.sub(r"\+0x[0-9a-f]+$", "", parts[1])))
sample_done()
kernel = sum(entry.values())
ms = lambda n: n / runs / 4.999
print(f"{binary}: {runs} runs, {total / runs:.0f} samples a run, kernel {ms(kernel):.1f} ms "
      f"({100 * kernel / total:.1f}%)")
for where, n in entry.most_common(12):
    print(f"  {ms(n):5.1f} ms  {100 * n / total:4.1f}%  {where}")
PY
