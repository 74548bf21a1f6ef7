#!/usr/bin/env python3
"""Misbehaving external engines for ctxbench's error tests: `exit` (exits at once), `garbage`
(answers a call with a line that is not JSON), `hang` (never answers), `orphan` (a view with a
tool result whose call it dropped), `two_views` (answers every call with two views),
`extra_after N` (two views at its N-th call only), `empty` (empty views), `duplicate` (every
tool result twice, plus padding), `bigger` (every message kept, plus padding: every view larger
than the call without compression), `crash_at N` (exits at its N-th call), `event_future` (an
event after the call), `traversal` (a file path with `..`)."""
import json
import sys

mode = sys.argv[1]
if mode == "exit":
    print("engine: cannot load my model weights", file=sys.stderr)
    sys.exit(7)
arg = int(sys.argv[2]) if len(sys.argv) > 2 else 0


def view(messages, **more):
    sys.stdout.write(json.dumps({"type": "view", "messages": messages, **more}) + "\n")
    sys.stdout.flush()


msgs = []
calls = 0
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "message":
        msgs.append(m["message"])
    elif m["type"] == "call":
        calls += 1
        if mode == "two_views" or (mode == "extra_after" and calls == arg):
            view(msgs)
            view(msgs)
        elif mode == "extra_after":
            view(msgs)
        elif mode == "empty":
            view([])
        elif mode == "duplicate":
            out = []
            for x in msgs:
                out += [x, x] if x["role"] == "tool" else [x]
            view(out + [{"role": "user", "content": "PADDING " * 2000}])
        elif mode == "bigger":
            view(msgs + [{"role": "user", "content": "PAD " * 5000}])
        elif mode == "crash_at":
            if calls == arg:
                print("engine: crashed at this call", file=sys.stderr)
                sys.exit(3)
            view(msgs)
        elif mode == "event_future":
            view(msgs, events=[{"trace_index": 99999, "detail": {"type": "summarized"}}])
        elif mode == "traversal":
            view(msgs, files={"/../../escape.txt": "x"})
        elif mode == "garbage":
            print("about to answer", file=sys.stderr)
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
        elif mode == "hang":
            print("thinking forever", file=sys.stderr)
            sys.stderr.flush()
            import time
            time.sleep(3600)
        elif mode == "orphan":
            view([x for x in msgs if x["role"] != "assistant" or not x.get("tool_calls")])
