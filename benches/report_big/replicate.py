#!/usr/bin/env python3
"""Replicate a saved run's samples into a big run for timing `ctxbench report`, e.g.

    ./target/release/ctxbench run evals/quickstart.toml -q -o /tmp/qs
    python3 benches/report_big/replicate.py /tmp/qs/quickstart-* /tmp/qs-100k 100000

Copy k of every line gets `-r<k>` appended to its unit id and its repeat shifted past the
source's repeats (so copies are distinct units of the same tasks: pairing, pass@k and the
duplicate check see a real run of many repeats), until N lines are written. run.json is copied;
summaries/ (the texts report.html shows) is linked. Lines are edited as text, so every other
byte of a sample (floats, key order) is the source's.
"""
import os
import re
import sys

UNIT = re.compile(rb'"unit_id":"([^"]*)"')
REPEAT = re.compile(rb'"repeat":(\d+)')


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(os.path.join(src, "samples.jsonl"), "rb") as f:
        lines = [l.rstrip(b"\n") for l in f if l.strip()]
    if not lines:
        sys.exit(f"{src}/samples.jsonl has no samples")
    span = 1 + max(int(REPEAT.search(l).group(1)) for l in lines)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(src, "run.json"), "rb") as f, open(os.path.join(out, "run.json"), "wb") as g:
        g.write(f.read())
    link = os.path.join(out, "summaries")
    if os.path.isdir(os.path.join(src, "summaries")) and not os.path.lexists(link):
        os.symlink(os.path.abspath(os.path.join(src, "summaries")), link)
    written = 0
    with open(os.path.join(out, "samples.jsonl"), "wb", buffering=1 << 20) as g:
        k = 0
        while written < n:
            for line in lines:
                if written == n:
                    break
                if k:
                    line = UNIT.sub(lambda m: b'"unit_id":"' + m.group(1) + b"-r%d\"" % k, line, count=1)
                    line = REPEAT.sub(lambda m: b'"repeat":%d' % (int(m.group(1)) + k * span), line, count=1)
                g.write(line)
                g.write(b"\n")
                written += 1
            k += 1
    print(f"{out}/samples.jsonl: {written} samples ({k} copies of {len(lines)})")


if __name__ == "__main__":
    main()
