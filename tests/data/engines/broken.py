#!/usr/bin/env python3
"""Misbehaving external engines for ctxbench's error tests: `exit` (exits at once), `garbage`
(answers a call with a line that is not JSON), `hang` (never answers), `orphan` (a view with a
tool result whose call it dropped)."""
import json
import sys

mode = sys.argv[1]
if mode == "exit":
    print("engine: cannot load my model weights", file=sys.stderr)
    sys.exit(7)
msgs = []
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "message":
        msgs.append(m["message"])
    elif m["type"] == "call":
        if mode == "garbage":
            print("about to answer", file=sys.stderr)
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
        elif mode == "hang":
            print("thinking forever", file=sys.stderr)
            sys.stderr.flush()
            import time
            time.sleep(3600)
        elif mode == "orphan":
            view = [x for x in msgs if x["role"] != "assistant" or not x.get("tool_calls")]
            sys.stdout.write(json.dumps({"type": "view", "messages": view}) + "\n")
            sys.stdout.flush()
