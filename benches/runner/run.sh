#!/usr/bin/env bash
# Runner-overhead scenario: start the 50 ms mock server, run benches/runner/suite.toml with the
# release binary under /usr/bin/time -v, print wall/CPU time, calls served, the ideal and the
# ratio. Usage: bash benches/runner/run.sh [path/to/ctxbench]   (default target/release/ctxbench)
# NEEDLE_SWEEP=1: run benches/needle-sweep.toml (issue 29's row 2) with its agent on the server.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/release/ctxbench}
shift || true  # further arguments go to `ctxbench run` (e.g. --jobs 48)
delay_ms=50
log=$(mktemp); tlog=$(mktemp)
python3 benches/runner/mock_openai.py --delay-ms $delay_ms >"$log.port" 2>"$log" &
mock=$!
trap 'kill $mock 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$log.port" ] && break; sleep 0.1; done
port=$(head -1 "$log.port")
# Runs are kept (each in its own directory under target/runner-overhead; remove it when done):
# on ext4, creating files right after deleting many scans the freshly freed inodes
# (`recently_deleted`), which would put the previous run's clean-up into this run's time.
suite=(benches/runner/suite.toml)
if [ -n "${NEEDLE_SWEEP:-}" ]; then
  suite=(benches/needle-sweep.toml -o target/runner-overhead --set 'providers.agent.kind="openai"'
         --set 'providers.agent.model="mock"' --set 'providers.agent.api_key_env="MOCK_OPENAI_KEY"'
         --set providers.agent.max_retries=0 --set providers.agent.concurrency=32)
fi
started=$(date +%s.%N)
MOCK_OPENAI_KEY=x ${WRAP:-} /usr/bin/time -v "$bin" run "${suite[@]}" --no-cache -q "$@" \
  --set "providers.agent.base_url=\"http://127.0.0.1:$port/v1\"" >/dev/null 2>"$tlog" || { cat "$tlog"; exit 1; }
ended=$(date +%s.%N)
# The mock's own CPU (it shares the cores): utime + stime of its process, in clock ticks.
mock_cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' /proc/$mock/stat)
kill $mock; wait $mock 2>/dev/null || true; trap - EXIT
calls=$(grep -o 'served [0-9]*' "$log" | cut -d' ' -f2)
conns=$(grep -o 'on [0-9]* connections' "$log" | cut -d' ' -f2)
load=$(cut -d' ' -f1-3 /proc/loadavg)
span=$(grep -o 'calls from [0-9.]* to [0-9.]*, mean in flight [0-9.]*' "$log" | awk '{sub(",", "", $5); print $3, $5, $9}' || true)
python3 - "$tlog" "$calls" "$delay_ms" "$load" "$conns" "$mock_cpu" "$started $ended $span" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
calls, delay, load = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def f(k): return re.search(re.escape(k) + r":\s*(.*)", t).group(1).strip()
w = f("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w)))
cpu = float(f("User time (seconds)")) + float(f("System time (seconds)"))
units, conc, per_unit = 1000, 32, calls / 1000
ideal = -(-units // conc) * per_unit * delay / 1000
# The reference question is asked at the same time as the compacted one: a unit waits on one
# round of calls, not two, so the floor is half the serial ideal.
rounds = -(-units // conc) * delay / 1000
print(f"units {units}  calls {calls} on {sys.argv[5]} connections  wall {wall:.2f} s  cpu {cpu:.2f} s ({cpu/units*1000:.2f} ms/unit)  "
      f"max RSS {int(f('Maximum resident set size (kbytes)'))/1024:.1f} MiB")
mock = float(sys.argv[6])
print(f"mock server cpu {mock:.2f} s ({mock/units*1000:.2f} ms/unit); both {cpu+mock:.2f} s")
print(f"ideal {ideal:.2f} s (ceil({units}/{conc}) x {per_unit:g} calls x {delay:g} ms)  ratio {wall/ideal:.2f}x  "
      f"(one round a unit: {rounds:.2f} s, {wall/rounds:.2f}x)  load {load}")
# Where the wall time went: before the first call reached the server (start-up, trace loading,
# the first replays), the calls (and how many of the call slots were busy on average), and after
# the last answer (the last units' scoring, run.json, the reports, the stores' pruning).
t = sys.argv[7].split()
if len(t) == 5:
    started, ended, first, last, busy = map(float, t)
    print(f"before the first call {first - started:.2f} s, calls {last - first:.2f} s "
          f"(mean {busy:.1f} of {conc} slots busy), after the last {ended - last:.2f} s")
PY
