#!/usr/bin/env python3
"""Misbehaving external engines for ctxbench's error tests: `exit` (exits at once), `garbage`
(answers a call with a line that is not JSON), `hang` (never answers), `orphan` (a view with a
tool result whose call it dropped), `two_views` (answers every call with two views),
`extra_after N` (two views at its N-th call only), `extra_late N` (the second view of its N-th
call written only when the next call arrives, before that call's view), `stale_after_end`
(answers each replay's first call with a view of the previous replay's last call first, then
its own), `no_seq` (views without `seq`, as a protocol-1 engine writes them), `empty` (empty
views), `duplicate` (every tool result twice, plus padding), `bigger` (every message kept, plus
padding: every view larger than the call without compression), `crash_at N` (exits at its N-th
call), `event_future` (an event after the call), `traversal` (a file path with `..`), `deaf`
(never reads its stdin: stuck before its loop), `own_seq` (answers with its own count of the
replay's calls as `seq` instead of echoing the call's), `latin1` (a 1 MB view in Latin-1, not
UTF-8), `bad_event` (an `evicted` event without its facts), `reminder` (every message kept,
then a reminder of its own after them, with `indexes`), `own_seq0` (answers with its own count
of the replay's calls from 0, as Python's `enumerate` counts, instead of echoing the call's),
`zero_at N` (answers its N-th call with `seq` 0, a call never sent). Calls are counted per replay (`begin` resets
them)."""
import json
import sys

mode = sys.argv[1]
if mode == "exit":
    print("engine: cannot load my model weights", file=sys.stderr)
    sys.exit(7)
if mode == "deaf":
    import time
    print("engine: waiting for a lock that never comes", file=sys.stderr, flush=True)
    time.sleep(3600)
arg = int(sys.argv[2]) if len(sys.argv) > 2 else 0


def view(seq, messages, **more):
    line = {"type": "view", "seq": seq, "messages": messages, **more}
    if seq is None:
        del line["seq"]
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


msgs = []
calls = 0
late = None  # (seq, messages) of a view still to write
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "begin":
        msgs, calls = [], 0
    elif m["type"] == "message":
        msgs.append(m["message"])
    elif m["type"] == "end" and mode == "stale_after_end":
        late = (last, list(msgs))
    elif m["type"] == "call":
        calls += 1
        seq = m.get("seq")  # none from a protocol-1 ctxbench: the views go without it
        last = seq
        if late is not None:
            view(*late)
            late = None
        if mode == "two_views" or (mode == "extra_after" and calls == arg):
            view(seq, msgs)
            view(seq, msgs)
        elif mode == "extra_late":
            view(seq, msgs)
            if calls == arg:
                late = (seq, list(msgs))
        elif mode in ("extra_after", "stale_after_end"):
            view(seq, msgs)
        elif mode == "no_seq":
            view(None, msgs)
        elif mode == "own_seq":
            view(calls, msgs)
        elif mode == "zero_at":
            view(0 if calls == arg else seq, msgs)
        elif mode == "own_seq0":
            view(calls - 1, msgs)
        elif mode == "reminder":
            view(seq, msgs + [{"role": "user", "content": "Reminder: stay on the task."}],
                 indexes=list(range(len(msgs))) + [None])
        elif mode == "bad_event":
            view(seq, msgs, events=[{"detail": {"type": "evicted", "path": "/x.txt"}}])
        elif mode == "latin1":
            line = {"type": "view", "seq": seq, "messages": msgs + [{"role": "user", "content": "caf\u00e9 " * 200000}]}
            sys.stdout.buffer.write((json.dumps(line, ensure_ascii=False) + "\n").encode("latin-1", errors="replace"))
            sys.stdout.flush()
        elif mode == "empty":
            view(seq, [])
        elif mode == "duplicate":
            out = []
            for x in msgs:
                out += [x, x] if x["role"] == "tool" else [x]
            view(seq, out + [{"role": "user", "content": "PADDING " * 2000}])
        elif mode == "bigger":
            view(seq, msgs + [{"role": "user", "content": "PAD " * 5000}])
        elif mode == "crash_at":
            if calls == arg:
                print("engine: crashed at this call", file=sys.stderr)
                sys.exit(3)
            view(seq, msgs)
        elif mode == "event_future":
            view(seq, msgs, events=[{"trace_index": 99999, "detail": {"type": "summarized"}}])
        elif mode == "traversal":
            view(seq, msgs, files={"/../../escape.txt": "x"})
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
            view(seq, [x for x in msgs if x["role"] != "assistant" or not x.get("tool_calls")])
