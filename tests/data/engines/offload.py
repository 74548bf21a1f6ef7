#!/usr/bin/env python3
"""An external engine that offloads old tool results (docs/engines.md): the last
`keep_results` tool results stay as they are; an older one of at least `min_chars` characters
is written to the offload store (`files`) and replaced by a stub naming its file, with an
`evicted` event of the tool result's message. No summary, nothing else changes: the view is
every message so far, in order."""
import json
import re
import sys


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    msgs, cfg, stubs = [], {}, {}
    for line in sys.stdin:
        m = json.loads(line)
        if m["type"] == "begin":
            msgs, cfg, stubs = [], m["config"], {}
        elif m["type"] == "message":
            msgs.append(m["message"])
        elif m["type"] == "call":
            keep, least = cfg.get("keep_results", 3), cfg.get("min_chars", 2000)
            results = [i for i, x in enumerate(msgs) if x["role"] == "tool"]
            events, files = [], {}
            for i in results[: max(0, len(results) - keep)]:
                t = msgs[i]
                if i in stubs or len(t["content"]) < least:
                    continue
                call_id = t.get("tool_call_id") or f"message-{i}"
                path = "/offloaded/" + re.sub(r"[^A-Za-z0-9_.-]", "_", call_id) + ".txt"
                stub = f"[{len(t['content'])} characters offloaded to {path}: read it there]"
                stubs[i] = dict(t, content=stub)
                files[path] = t["content"]
                events.append({"trace_index": i, "layer": "offload", "detail": {
                    "type": "evicted", "tool": t.get("name") or "", "tool_call_id": call_id,
                    "chars_before": len(t["content"]), "chars_after": len(stub),
                    "path": path, "replacement": stub}})
            view = [stubs.get(i, x) for i, x in enumerate(msgs)]
            send({"type": "view", "seq": m["seq"], "messages": view, "events": events,
                  "files": files})


if __name__ == "__main__":
    main()
